//! The conversation: [`UserMessage`], [`AssistantMessage`] (text, thinking and tool-call blocks) and
//! [`ToolResultMessage`](crate::ToolResultMessage), gathered in [`AgentMessage`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::{ToolCall, ToolResultMessage, now_millis};
use crate::content::Content;
use crate::result::Usage;

/// A message from the user.
///
/// ```
/// use yiem_core::UserMessage;
///
/// let message = UserMessage::text("what is in text.txt?");
/// assert_eq!(message.text_content(), "what is in text.txt?");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// What the user said.
    pub content: Vec<Content>,
    /// When, in milliseconds since the Unix epoch.
    pub timestamp: u64,
}

impl UserMessage {
    /// A user message with one text block, stamped now.
    pub fn text(text: impl Into<String>) -> Self {
        UserMessage {
            content: vec![Content::text(text)],
            timestamp: now_millis(),
        }
    }

    /// All text blocks joined with newlines.
    pub fn text_content(&self) -> String {
        crate::content::joined_text(&self.content)
    }
}

/// Why the model stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// The model finished its answer.
    #[default]
    Stop,
    /// The model hit its output limit.
    Length,
    /// The model asked for tool calls.
    ToolUse,
    /// The request failed; see [`AssistantMessage::error`].
    Error,
    /// The run was aborted.
    Aborted,
    /// A tool batch asked the loop to stop; the message is built from the tool results.
    ToolUseTerminated,
}

/// One block of an assistant message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AssistantContent {
    /// Answer text.
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning the model exposed.
    Thinking {
        /// The reasoning text.
        thinking: String,
    },
    /// A tool call.
    ToolCall(ToolCall),
}

/// A reply from the model.
///
/// ```
/// use serde_json::json;
/// use yiem_core::{AssistantContent, AssistantMessage, ToolCall};
///
/// let mut message = AssistantMessage::text("let me look");
/// message.content.push(AssistantContent::ToolCall(ToolCall::new("c1", "read", json!({"path": "a.txt"}))));
/// assert_eq!(message.tool_calls().count(), 1);
/// assert_eq!(message.text_content(), "let me look");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Text, thinking and tool-call blocks, in the order the model produced them.
    pub content: Vec<AssistantContent>,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// Tokens used by the request.
    #[serde(default)]
    pub usage: Usage,
    /// The model that answered.
    #[serde(default)]
    pub model: String,
    /// What went wrong, when `stop_reason` is `Error` (or a tool failed in a terminated batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When, in milliseconds since the Unix epoch.
    pub timestamp: u64,
}

impl AssistantMessage {
    /// A finished answer with one text block, stamped now.
    pub fn text(text: impl Into<String>) -> Self {
        AssistantMessage {
            content: vec![AssistantContent::Text { text: text.into() }],
            timestamp: now_millis(),
            ..AssistantMessage::default()
        }
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|block| match block {
            AssistantContent::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// All text blocks joined with newlines.
    pub fn text_content(&self) -> String {
        self.content
            .iter()
            .filter_map(|block| match block {
                AssistantContent::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Any message of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentMessage {
    /// From the user.
    User(UserMessage),
    /// From the model.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    ToolResult(ToolResultMessage),
}

impl From<UserMessage> for AgentMessage {
    fn from(message: UserMessage) -> Self {
        AgentMessage::User(message)
    }
}

impl From<AssistantMessage> for AgentMessage {
    fn from(message: AssistantMessage) -> Self {
        AgentMessage::Assistant(message)
    }
}

impl From<ToolResultMessage> for AgentMessage {
    fn from(message: ToolResultMessage) -> Self {
        AgentMessage::ToolResult(message)
    }
}

/// Reads the tool calls out of an assistant message in OpenAI's wire shapes, as the seeds do: a
/// `{"type": "tool_calls", "tool_calls": [...]}` block (each call `{"id", "function": {"name",
/// "arguments"}}`), a single `{"type": "tool_call", "id", "name", "arguments"}` block, or a whole chat
/// message `{"role": "assistant", "tool_calls": [...]}`. `value` is such a message or an array of blocks.
///
/// Arguments are kept as sent (object or JSON string): a string that is not JSON becomes an error result for
/// that call when it runs, not a failure here. A call without an id gets a fresh UUID.
///
/// ```
/// use serde_json::json;
/// use yiem_core::extract_tool_calls;
///
/// let blocks = json!([
///     {"type": "text", "text": "checking"},
///     {"type": "tool_calls", "tool_calls": [
///         {"id": "call_1", "function": {"name": "get_weather", "arguments": "{\"city\":\"Tokyo\"}"}}
///     ]},
///     {"type": "tool_call", "name": "get_time", "arguments": {"zone": "Asia/Tokyo"}}
/// ]);
/// let calls = extract_tool_calls(&blocks);
/// assert_eq!(calls.len(), 2);
/// assert_eq!(calls[0].id, "call_1");
/// assert_eq!(calls[1].name, "get_time");
/// assert_eq!(calls[1].id.len(), 36); // a fresh UUID
/// ```
pub fn extract_tool_calls(value: &Value) -> Vec<ToolCall> {
    let mut calls = Vec::new();
    match value {
        Value::Array(blocks) => {
            for block in blocks {
                extract_block(block, &mut calls);
            }
        }
        Value::Object(message) => match message.get("tool_calls") {
            Some(Value::Array(list)) if message.get("type").is_none() => {
                calls.extend(list.iter().map(openai_call));
            }
            _ => extract_block(value, &mut calls),
        },
        _ => {}
    }
    calls
}

fn extract_block(block: &Value, calls: &mut Vec<ToolCall>) {
    match block.get("type").and_then(Value::as_str) {
        Some("tool_calls") => {
            if let Some(Value::Array(list)) = block.get("tool_calls") {
                calls.extend(list.iter().map(openai_call));
            }
        }
        Some("tool_call") | Some("function") if block.get("function").is_some() => {
            calls.push(openai_call(block))
        }
        Some("tool_call") => calls.push(ToolCall {
            id: call_id(block),
            name: block
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            arguments: block.get("arguments").cloned().unwrap_or(Value::Null),
        }),
        _ => {}
    }
}

/// `{"id", "type": "function", "function": {"name", "arguments"}}`.
fn openai_call(entry: &Value) -> ToolCall {
    let function = entry.get("function").unwrap_or(entry);
    ToolCall {
        id: call_id(entry),
        name: function
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        arguments: function.get("arguments").cloned().unwrap_or(Value::Null),
    }
}

fn call_id(entry: &Value) -> String {
    match entry.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => crate::id::fresh_uuid(),
    }
}
