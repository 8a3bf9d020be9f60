//! The error results of calls that did not run to their end — aborted, panicked, stopped at a question,
//! never run, of an unknown tool or a code-only one — in the words the model reads.

use crate::args::ArgumentError;
use crate::result::AgentToolResult;
use crate::store::registry::ToolStore;
use crate::suggest;

/// The result of a call in hand whose arguments did not fit.
pub(super) fn invalid(error: ArgumentError) -> AgentToolResult {
    AgentToolResult::error(error.to_string())
}

/// The result of a call that was aborted before its tool finished.
pub(super) fn aborted(name: &str) -> AgentToolResult {
    AgentToolResult::error(format!("tool `{name}` was aborted before it finished"))
}

/// The result of a call whose tool panicked while it ran.
pub(super) fn panicked(name: &str, panic: String) -> AgentToolResult {
    AgentToolResult::error(format!("tool `{name}` panicked: {panic}")).mark_panicked()
}

/// The result of a call stopped at a question without an answer (the run keeps the question, and the
/// call runs again from the start once it is answered).
pub(super) fn stopped_at_question(name: &str) -> AgentToolResult {
    AgentToolResult::error(format!(
        "tool `{name}` stopped at a question for the user; it runs again from the start once answered"
    ))
    .with_details(serde_json::json!({ crate::ask::questions::STOPPED_AT_QUESTION: true }))
}

/// The result of a call that never ran because the batch was aborted.
pub(super) fn not_run(name: &str) -> String {
    format!("tool `{name}` was not run: the batch was aborted")
}

/// What the model reads when it calls a code-only tool directly.
pub(super) fn code_only_refusal(name: &str) -> String {
    format!(
        "tool `{name}` can only be called from code, not directly: call it from a program (in \
         `run_code`, or in your code-execution tool)"
    )
}

/// The most tool names an unknown-tool result lists.
const LISTED_TOOLS: usize = 50;

/// The text for a call of a tool the store does not have: the name, the closest match (of every tool,
/// deferred ones included), and the names the model can see — at most [`LISTED_TOOLS`], deferred tools
/// only counted, so a catalog of thousands stays a short message.
pub(crate) fn unknown_tool(store: &ToolStore, name: &str) -> String {
    let names = store.names();
    if names.is_empty() {
        return format!("tool `{name}` not found: no tools are available");
    }
    let suggestion = suggest::did_you_mean(name, names.iter())
        .map(|closest| format!(" Did you mean `{closest}`?"))
        .unwrap_or_default();
    let (shown, deferred): (Vec<&String>, Vec<&String>) =
        names.iter().partition(|name| !store.is_deferred(name));
    let mut text = format!("tool `{name}` not found.{suggestion} Available tools: ");
    for (at, name) in shown.iter().take(LISTED_TOOLS).enumerate() {
        if at > 0 {
            text.push_str(", ");
        }
        text.push_str(name);
    }
    if shown.len() > LISTED_TOOLS {
        text.push_str(&format!(", and {} more", shown.len() - LISTED_TOOLS));
    }
    if !deferred.is_empty() {
        let how = if store.contains(crate::store::registry::SEARCH_TOOLS) {
            format!("find them with `{}`", crate::catalog::SEARCH_TOOLS)
        } else {
            "they are not listed".to_owned()
        };
        text.push_str(&format!(" ({} more not shown: {how})", deferred.len()));
    }
    text
}
