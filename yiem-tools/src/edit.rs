//! `edit`: replace an exact piece of text in a file, and report the change as a unified diff.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use similar::{Algorithm, DiffTag, TextDiff};
use yiem_core::{
    tool,
    tool::{AgentToolResult, State},
};

use std::io::Read as _;

use crate::confined::{OpenError, is_escape, open_regular, write_atomically_beneath};
use crate::root::ToolRoot;

/// Arguments of `edit`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct EditArgs {
    /// The file to edit, relative to the root directory.
    pub path: String,
    /// The exact text to replace, including whitespace and indentation. It must occur exactly once
    /// unless `replace_all` is true; include surrounding lines to make it unique.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of exactly one. Default: false.
    #[serde(default)]
    pub replace_all: bool,
}

/// Edit a file under the root directory by exact string replacement: `old_string` must occur exactly once
/// (or set `replace_all`). Read the file first and copy the text exactly. The file is rewritten
/// atomically; the details hold a unified diff and the first changed line.
#[tool(
    label = "Edit File",
    destructive,
    needs_approval,
    open_world = false,
    timeout_ms = 30000
)]
pub fn edit(State(root): State<ToolRoot>, args: EditArgs) -> Result<AgentToolResult, String> {
    let (root, args): (&ToolRoot, &EditArgs) = (&root, &args);
    let located = root.locate("edit", &args.path)?;
    let shown = located.shown.clone();
    if args.old_string.is_empty() {
        return Err(format!(
            "tool `edit`: `old_string` is empty; give the exact text to replace (to create or overwrite `{shown}` whole, use `write`)"
        ));
    }
    if args.old_string == args.new_string {
        return Err(
            "tool `edit`: `old_string` and `new_string` are the same, so nothing would change"
                .into(),
        );
    }
    let (file, _) = open_regular(root.dir(), &located.rel).map_err(|error| match error {
        OpenError::NotFound => {
            format!("tool `edit`: file `{shown}` does not exist; create it with `write`")
        }
        OpenError::Directory => format!("tool `edit`: `{shown}` is a directory, not a file"),
        other => other.message(root, "edit", &located),
    })?;
    let mut bytes = Vec::new();
    (&file)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("tool `edit`: cannot read `{shown}`: {error}"))?;
    let old = String::from_utf8(bytes).map_err(|_| {
        format!("tool `edit`: `{shown}` is not UTF-8 text; `edit` changes text files only")
    })?;
    let positions: Vec<usize> = old
        .match_indices(&args.old_string)
        .map(|(at, _)| at)
        .collect();
    match positions.len() {
        0 => {
            return Err(format!(
                "tool `edit`: `old_string` was not found in `{shown}`; `read` the file and copy the text exactly, including whitespace and indentation"
            ));
        }
        1 => {}
        n if !args.replace_all => {
            let lines: Vec<String> = positions
                .iter()
                .map(|&at| line_of(&old, at).to_string())
                .collect();
            return Err(format!(
                "tool `edit`: `old_string` occurs {n} times in `{shown}` (at lines {}); include more surrounding text to make it unique, or set `replace_all` to true",
                lines.join(", ")
            ));
        }
        _ => {}
    }
    let new = old.replace(&args.old_string, &args.new_string);
    write_atomically_beneath(root.dir(), &located.rel, new.as_bytes()).map_err(|error| {
        if is_escape(&error) {
            root.escaped("edit", &located)
        } else {
            format!("tool `edit`: cannot write `{shown}`: {error}")
        }
    })?;

    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .diff_lines(&old, &new);
    let first_changed_line = diff
        .ops()
        .iter()
        .find(|op| op.tag() != DiffTag::Equal)
        .map(|op| op.new_range().start + 1);
    let unified = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string();
    let count = positions.len();
    let noun = if count == 1 {
        "occurrence"
    } else {
        "occurrences"
    };
    let at = first_changed_line.map_or(String::new(), |line| {
        format!("; first change at line {line}")
    });
    Ok(
        AgentToolResult::text(format!("Replaced {count} {noun} in `{shown}`{at}.")).with_details(
            json!({
                "path": shown,
                "replacements": count,
                "first_changed_line": first_changed_line,
                "diff": unified,
            }),
        ),
    )
}

/// The 1-based line number of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}
