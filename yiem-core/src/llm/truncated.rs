//! Replies cut off by the model's output limit: their tool calls must not run, because their arguments
//! may be incomplete. [`truncated_tool_results`] gives the error result each such call gets instead.

use crate::call::ToolResultMessage;
use crate::decision::truncated_reason;
use crate::message::{AssistantMessage, StopReason};
use crate::result::AgentToolResult;

/// The error results for the tool calls of a reply that stopped at the output limit
/// ([`StopReason::Length`]): one per call, in call order, each saying the call was not run because its
/// arguments may be truncated. `None` when the reply did not stop at the limit or has no calls, so the
/// calls (if any) run as usual.
///
/// The agent checks every finished reply with this before executing its calls: on `Some`, it records these
/// results instead of running the calls (with the usual tool events) and goes on to the next turn, so the
/// model sees why and can try again with shorter arguments.
///
/// ```
/// use serde_json::json;
/// use yiem_core::{
///     exec::ToolCall, llm::truncated_tool_results,
///     message::{AssistantContent, AssistantMessage, StopReason},
/// };
///
/// let mut reply = AssistantMessage::default();
/// reply.content.push(AssistantContent::ToolCall(ToolCall::new("c1", "write", json!("{\"text\": \"abc"))));
/// reply.stop_reason = StopReason::Length;
///
/// let results = truncated_tool_results(&reply).unwrap();
/// assert_eq!(results.len(), 1);
/// assert!(results[0].is_error());
/// assert_eq!(results[0].tool_call_id, "c1");
/// assert_eq!(
///     results[0].text_content(),
///     "tool call `write` was not run: the reply hit the model's output limit (finish_reason \"length\"), \
///      so its arguments may be truncated; call the tool again with shorter arguments"
/// );
///
/// reply.stop_reason = StopReason::ToolUse;
/// assert!(truncated_tool_results(&reply).is_none());
/// ```
pub fn truncated_tool_results(reply: &AssistantMessage) -> Option<Vec<ToolResultMessage>> {
    if reply.stop_reason != StopReason::Length {
        return None;
    }
    let results: Vec<ToolResultMessage> = reply
        .tool_calls()
        .map(|call| {
            ToolResultMessage::new(call, AgentToolResult::error(truncated_reason(&call.name)))
        })
        .collect();
    (!results.is_empty()).then_some(results)
}
