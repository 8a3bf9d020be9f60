//! Tool calls as the model sends them ([`ToolCall`]) and the message each call's result becomes
//! ([`ToolResultMessage`]).

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::Content;
use crate::result::AgentToolResult;

/// One tool call requested by the model.
///
/// `arguments` is what the model sent: usually a JSON object, sometimes a JSON string that holds one
/// (the OpenAI wire format); the executor accepts both.
///
/// ```
/// use serde_json::json;
/// use yiem_core::ToolCall;
///
/// let call = ToolCall::new("call_1", "get_weather", json!({"city": "Tokyo"}));
/// assert_eq!(call.name, "get_weather");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the model gave the call; its result refers back to it.
    pub id: String,
    /// The name of the tool to run.
    pub name: String,
    /// The arguments, as sent.
    pub arguments: Value,
}

impl ToolCall {
    /// A tool call.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// The result of one tool call, as it goes into the conversation: which call it answers, and the
/// [`AgentToolResult`] itself (serialized flat, beside the call's id and tool name).
///
/// ```
/// use serde_json::json;
/// use yiem_core::{AgentToolResult, ToolCall, ToolResultMessage};
///
/// let call = ToolCall::new("call_1", "echo", json!({}));
/// let message = ToolResultMessage::new(&call, AgentToolResult::text("hi"));
/// assert_eq!(message.tool_call_id, "call_1");
/// assert_eq!(message.text_content(), "hi");
/// assert!(!message.is_error());
/// assert_eq!(serde_json::to_value(&message).unwrap()["content"], json!([{"type": "text", "text": "hi"}]));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The name of the tool that was called.
    pub tool_name: String,
    /// The result: what the model sees, details for the application, structured output, usage.
    #[serde(flatten)]
    pub result: AgentToolResult,
    /// When the result was made, in milliseconds since the Unix epoch.
    pub timestamp: u64,
}

impl ToolResultMessage {
    /// The message for `call`'s `result`, stamped now.
    pub fn new(call: &ToolCall, result: AgentToolResult) -> Self {
        ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            result,
            timestamp: now_millis(),
        }
    }

    /// What the model sees.
    pub fn content(&self) -> &[Content] {
        &self.result.content
    }

    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        self.result.is_error
    }

    /// All text blocks joined with newlines.
    pub fn text_content(&self) -> String {
        self.result.text_content()
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
