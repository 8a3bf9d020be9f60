//! `grep`: search file contents under the root with a regular expression.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;

use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::{
    tool,
    tool::{AgentToolResult, State},
};

use crate::confined::{OpenError, is_escape, open_regular};
use crate::root::ToolRoot;
use crate::truncate::{GREP_MAX_LINE_CHARS, shorten_line};

/// Matches `grep` returns when no `limit` is given.
pub const GREP_DEFAULT_LIMIT: usize = 100;
/// Directories `grep` does not descend into (it still searches them when given as `path`).
pub const GREP_SKIPPED_DIRS: [&str; 3] = [".git", "target", "node_modules"];
/// Files larger than this are skipped.
pub const GREP_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Arguments of `grep`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// A regular expression (Rust `regex` syntax), e.g. `fn \w+_tool`.
    pub pattern: String,
    /// The file or directory to search, relative to the root directory. Default: the root.
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files whose name matches this glob, e.g. `*.rs` or `*.{js,ts}`; a glob with `/` is
    /// matched against the path relative to the searched directory (`**` spans directories).
    #[serde(default)]
    pub glob: Option<String>,
    /// Match without regard to case. Default: false.
    #[serde(default)]
    pub ignore_case: bool,
    /// How many matching lines to return at most. Default: 100.
    #[serde(default)]
    pub limit: Option<usize>,
}

struct Search {
    regex: Regex,
    glob: Option<(Regex, bool)>,
    limit: usize,
    matches: Vec<String>,
    files_searched: usize,
    stopped: bool,
}

/// Search the contents of files under the root directory for a regular expression. Prints
/// `path:line: text` for each matching line, files in name order. Skips binary files, symlinks, files over
/// 10 MB, and the `.git`, `target` and `node_modules` directories (search inside them by giving them as
/// `path`).
#[tool(
    label = "Search Files",
    parallel,
    read_only,
    idempotent,
    open_world = false,
    timeout_ms = 60000
)]
pub fn grep(State(root): State<ToolRoot>, args: GrepArgs) -> Result<AgentToolResult, String> {
    let (root, args): (&ToolRoot, &GrepArgs) = (&root, &args);
    let regex = RegexBuilder::new(&args.pattern)
        .case_insensitive(args.ignore_case)
        .build()
        .map_err(|error| {
            let detail = error.to_string().replace('\n', " ");
            format!(
                "tool `grep`: `pattern` is not a valid regular expression: {detail}; escape special characters such as `(` or `.` with `\\`"
            )
        })?;
    let glob = match &args.glob {
        Some(glob) => Some((glob_regex(glob)?, glob.contains('/'))),
        None => None,
    };
    let limit = args.limit.unwrap_or(GREP_DEFAULT_LIMIT);
    if limit == 0 {
        return Err("tool `grep`: `limit` must be at least 1".into());
    }
    let requested = args.path.as_deref().unwrap_or(".");
    let located = root.locate("grep", requested)?;
    let shown = located.shown.clone();
    let metadata = root.dir().metadata(&located.rel).map_err(|error| {
        if is_escape(&error) {
            root.escaped("grep", &located)
        } else {
            format!("tool `grep`: `{shown}` does not exist; use `ls` to see what is there")
        }
    })?;
    let mut search = Search {
        regex,
        glob,
        limit,
        matches: Vec::new(),
        files_searched: 0,
        stopped: false,
    };
    if metadata.is_dir() {
        let dir = if located.rel == Path::new(".") {
            root.dir().try_clone()
        } else {
            root.dir().open_dir(&located.rel)
        };
        let dir = dir.map_err(|error| {
            if is_escape(&error) {
                root.escaped("grep", &located)
            } else {
                format!("tool `grep`: cannot search `{shown}`: {error}")
            }
        })?;
        let prefix = if located.rel == Path::new(".") {
            PathBuf::new()
        } else {
            located.rel.clone()
        };
        search.directory(&dir, &prefix, Path::new(""));
    } else {
        let (file, _) = open_regular(root.dir(), &located.rel).map_err(|error| match error {
            OpenError::NotFound => {
                format!("tool `grep`: `{shown}` does not exist; use `ls` to see what is there")
            }
            other => other.message(root, "grep", &located),
        })?;
        search.file(file, &shown);
    }
    let count = search.matches.len();
    let mut text = if count == 0 {
        format!(
            "No matches for `{}` in `{shown}` ({} files searched).",
            args.pattern, search.files_searched
        )
    } else {
        search.matches.join("\n")
    };
    if search.stopped {
        text.push_str(&format!(
            "\n\n[Stopped at {limit} matches. Narrow the pattern, the path or the glob, or raise `limit`.]"
        ));
    }
    Ok(AgentToolResult::text(text).with_details(json!({
        "matches": count,
        "files_searched": search.files_searched,
        "truncated": search.stopped,
    })))
}

impl Search {
    /// Searches `dir` (opened beneath the root), which is `prefix` relative to the root and `below`
    /// relative to the searched directory. Symlinks are not followed; FIFOs, sockets and devices are
    /// skipped.
    fn directory(&mut self, dir: &Dir, prefix: &Path, below: &Path) {
        let Ok(entries) = dir.entries() else {
            return;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|entry| entry.file_name());
        for entry in entries {
            if self.stopped {
                return;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            let relative = below.join(&name);
            if kind.is_dir() {
                if !GREP_SKIPPED_DIRS.iter().any(|skip| name == **skip)
                    && let Ok(sub) = dir.open_dir(&name)
                {
                    self.directory(&sub, &prefix.join(&name), &relative);
                }
            } else if kind.is_file()
                && self.glob_admits(&relative)
                && let Ok((file, _)) = open_regular(dir, Path::new(&name))
            {
                let shown = prefix.join(&name).display().to_string();
                self.file(file, &shown);
            }
        }
    }

    fn glob_admits(&self, relative: &Path) -> bool {
        let Some((glob, whole_path)) = &self.glob else {
            return true;
        };
        let subject = if *whole_path {
            relative.to_string_lossy().into_owned()
        } else {
            relative
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        glob.is_match(&subject)
    }

    fn file(&mut self, file: std::fs::File, shown: &str) {
        let mut bytes = Vec::new();
        if file
            .take(GREP_MAX_FILE_BYTES.saturating_add(1))
            .read_to_end(&mut bytes)
            .is_err()
            || u64::try_from(bytes.len()).map_or(true, |len| len > GREP_MAX_FILE_BYTES)
        {
            return;
        }
        if bytes[..bytes.len().min(8192)].contains(&0) {
            return;
        }
        self.files_searched += 1;
        let text = String::from_utf8_lossy(&bytes);
        for (index, line) in text.lines().enumerate() {
            if self.regex.is_match(line) {
                if self.matches.len() == self.limit {
                    self.stopped = true;
                    return;
                }
                self.matches.push(format!(
                    "{shown}:{}: {}",
                    index.saturating_add(1),
                    shorten_line(line, GREP_MAX_LINE_CHARS)
                ));
            }
        }
    }
}

/// A glob (`*`, `?`, `**`, `{a,b}`, `[abc]`) as an anchored regular expression.
fn glob_regex(glob: &str) -> Result<Regex, String> {
    let mut pattern = String::from("^");
    let mut chars = glob.chars().peekable();
    let mut in_braces = false;
    while let Some(ch) = chars.next() {
        match ch {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                if chars.peek() == Some(&'/') {
                    chars.next();
                    pattern.push_str("(?:.*/)?");
                } else {
                    pattern.push_str(".*");
                }
            }
            '*' => pattern.push_str("[^/]*"),
            '?' => pattern.push_str("[^/]"),
            '{' if !in_braces => {
                in_braces = true;
                pattern.push_str("(?:");
            }
            '}' if in_braces => {
                in_braces = false;
                pattern.push(')');
            }
            ',' if in_braces => pattern.push('|'),
            '[' => {
                pattern.push('[');
                for inner in chars.by_ref() {
                    if inner == ']' {
                        break;
                    }
                    if inner == '\\' || inner == '[' {
                        pattern.push('\\');
                    }
                    pattern.push(inner);
                }
                pattern.push(']');
            }
            other => pattern.push_str(&regex::escape(&other.to_string())),
        }
    }
    pattern.push('$');
    Regex::new(&pattern).map_err(|_| {
        format!("tool `grep`: `glob` `{glob}` is not a valid glob; use forms like `*.rs`, `src/**/*.rs` or `*.{{js,ts}}`")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names_and_paths() {
        let rs = glob_regex("*.rs").unwrap();
        assert!(rs.is_match("main.rs") && !rs.is_match("main.rsx") && !rs.is_match("a/main.rs"));
        let either = glob_regex("*.{js,ts}").unwrap();
        assert!(either.is_match("a.js") && either.is_match("b.ts") && !either.is_match("c.py"));
        let deep = glob_regex("src/**/*.rs").unwrap();
        assert!(deep.is_match("src/lib.rs") && deep.is_match("src/a/b/c.rs"));
        assert!(!deep.is_match("tests/a.rs"));
        let class = glob_regex("file[12].txt").unwrap();
        assert!(class.is_match("file1.txt") && !class.is_match("file3.txt"));
    }
}
