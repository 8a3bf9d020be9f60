//! Tool calls as the model sends them ([`ToolCall`]) and the message each call's result becomes
//! ([`ToolResultMessage`]).

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::Content;
use crate::result::{AgentToolResult, Usage};

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

/// The result of one tool call, as it goes into the conversation.
///
/// ```
/// use serde_json::json;
/// use yiem_core::{AgentToolResult, ToolCall, ToolResultMessage};
///
/// let call = ToolCall::new("call_1", "echo", json!({}));
/// let message = ToolResultMessage::new(&call, AgentToolResult::text("hi"));
/// assert_eq!(message.tool_call_id, "call_1");
/// assert_eq!(message.text_content(), "hi");
/// assert!(!message.is_error);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The name of the tool that was called.
    pub tool_name: String,
    /// What the model sees.
    pub content: Vec<Content>,
    /// Tool-specific details for the application.
    #[serde(default)]
    pub details: Value,
    /// Structured output, when the tool returned [`Json`](crate::Json).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Tokens the tool spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Tools the call registered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_tool_names: Vec<String>,
    /// Whether the call failed.
    pub is_error: bool,
    /// When the result was made, in milliseconds since the Unix epoch.
    pub timestamp: u64,
}

impl ToolResultMessage {
    /// The message for `call`'s `result`, stamped now.
    pub fn new(call: &ToolCall, result: AgentToolResult) -> Self {
        ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: result.content,
            details: result.details,
            structured_content: result.structured_content,
            usage: result.usage,
            added_tool_names: result.added_tool_names,
            is_error: result.is_error,
            timestamp: now_millis(),
        }
    }

    /// All text blocks joined with newlines.
    pub fn text_content(&self) -> String {
        crate::content::joined_text(&self.content)
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
