//! `write`: create or overwrite a file, atomically.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::{
    tool,
    tool::{AgentToolResult, State},
};

use crate::confined::{is_escape, not_regular, special_kind, write_atomically_beneath};
use crate::root::ToolRoot;

/// Arguments of `write`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// The file to write, relative to the root directory. Missing parent directories are created.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// Write a file under the root directory, replacing it if it exists and creating missing parent
/// directories. The write is atomic: the file holds either its old or its new content, never a mix. To
/// change part of a file, use `edit` instead.
#[tool(
    label = "Write File",
    destructive,
    needs_approval,
    idempotent,
    open_world = false,
    timeout_ms = 30000
)]
pub fn write(State(root): State<ToolRoot>, args: WriteArgs) -> AgentToolResult {
    let root: &ToolRoot = &root;
    let located = match root.locate("write", &args.path) {
        Ok(located) => located,
        Err(message) => return AgentToolResult::error(message),
    };
    let shown = located.shown.clone();
    let existed = match root.dir().symlink_metadata(&located.rel) {
        Ok(metadata) if metadata.is_dir() => {
            return AgentToolResult::error(format!(
                "tool `write`: `{shown}` is a directory; give the path of a file inside it"
            ));
        }
        Ok(metadata) => {
            if let Some(kind) = special_kind(&metadata) {
                return AgentToolResult::error(not_regular("write", &shown, kind));
            }
            true
        }
        Err(_) => false,
    };
    if let Err(error) = write_atomically_beneath(root.dir(), &located.rel, args.content.as_bytes())
    {
        if is_escape(&error) {
            return AgentToolResult::error(root.escaped("write", &located));
        }
        return AgentToolResult::error(format!("tool `write`: cannot write `{shown}`: {error}"));
    }
    let verb = if existed { "Overwrote" } else { "Created" };
    let bytes = args.content.len();
    let unit = if bytes == 1 { "byte" } else { "bytes" };
    AgentToolResult::text(format!("{verb} `{shown}` ({bytes} {unit})."))
        .with_details(json!({"path": shown, "bytes": bytes, "created": !existed}))
}
