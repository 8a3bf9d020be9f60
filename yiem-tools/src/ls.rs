//! `ls`: the entries of a directory.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::{
    tool,
    tool::{AgentToolResult, State},
};

use crate::confined::is_escape;
use crate::root::ToolRoot;

/// Entries `ls` shows when no `limit` is given.
pub const LS_DEFAULT_LIMIT: usize = 500;

/// Arguments of `ls`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct LsArgs {
    /// The directory to list, relative to the root directory. Default: the root itself.
    #[serde(default)]
    pub path: Option<String>,
    /// How many entries to show at most. Default: 500.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// List a directory under the root directory, sorted by name, hidden entries included. Directories end
/// in `/`, symlinks in `@`.
#[tool(
    label = "List Directory",
    parallel,
    read_only,
    idempotent,
    open_world = false,
    timeout_ms = 30000
)]
pub fn ls(State(root): State<ToolRoot>, args: LsArgs) -> Result<AgentToolResult, String> {
    let (root, args): (&ToolRoot, &LsArgs) = (&root, &args);
    let requested = args.path.as_deref().unwrap_or(".");
    let located = root.locate("ls", requested)?;
    let shown = located.shown.clone();
    let limit = args.limit.unwrap_or(LS_DEFAULT_LIMIT);
    if limit == 0 {
        return Err("tool `ls`: `limit` must be at least 1".into());
    }
    let dir = root.dir();
    let opened = if located.rel == std::path::Path::new(".") {
        dir.try_clone()
    } else {
        dir.open_dir(&located.rel)
    };
    let entries = opened
        .and_then(|opened| opened.entries())
        .map_err(|error| match error.kind() {
            _ if is_escape(&error) => root.escaped("ls", &located),
            std::io::ErrorKind::NotFound => format!(
                "tool `ls`: directory `{shown}` does not exist; list its parent to see what is there"
            ),
            _ if dir.is_file(&located.rel) => {
                format!("tool `ls`: `{shown}` is a file, not a directory; use `read` to see it")
            }
            _ => format!("tool `ls`: cannot list `{shown}`: {error}"),
        })?;
    let mut names: Vec<String> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|error| format!("tool `ls`: cannot list `{shown}`: {error}"))?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        match entry.file_type() {
            Ok(kind) if kind.is_symlink() => name.push('@'),
            Ok(kind) if kind.is_dir() => name.push('/'),
            _ => {}
        }
        names.push(name);
    }
    names.sort();
    let total = names.len();
    if total == 0 {
        return Ok(AgentToolResult::text(format!("[`{shown}` is empty]"))
            .with_details(json!({"path": shown, "entries": 0})));
    }
    let mut text = names
        .iter()
        .take(limit)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n");
    if total > limit {
        text.push_str(&format!(
            "\n\n[Showing {limit} of {total} entries. Raise `limit` to see more.]"
        ));
    }
    Ok(AgentToolResult::text(text).with_details(json!({
        "path": shown,
        "entries": total,
        "truncated": total > limit,
    })))
}
