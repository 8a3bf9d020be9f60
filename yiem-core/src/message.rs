//! The conversation: [`UserMessage`], [`AssistantMessage`] (text, thinking and tool-call blocks) and
//! [`ToolResultMessage`], gathered in [`AgentMessage`], and the [`Usage`] a model reports.

use serde::{Deserialize, Serialize};

pub use crate::call::ToolResultMessage;
use crate::call::{ToolCall, now_millis};
use crate::content::Content;
pub use crate::result::Usage;

/// A message from the user.
///
/// ```
/// use yiem_core::message::UserMessage;
///
/// let message = UserMessage::text("what is in text.txt?");
/// assert_eq!(message.text_content(), "what is in text.txt?");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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
    /// The provider paused a long turn (Anthropic's `pause_turn`, while its server-side tools work): the
    /// reply is kept, and the agent sends the conversation back so the model goes on where it stopped.
    /// Each continuation is a turn (limits apply).
    Paused,
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
        /// The reasoning text (empty for a Gemini thought signature that came without text).
        thinking: String,
        /// The provider's opaque signature of this reasoning (Anthropic's `signature`, Gemini's
        /// `thoughtSignature`), sent back unchanged with the conversation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider sent encrypted (Anthropic's `redacted_thinking`), sent back unchanged.
    RedactedThinking {
        /// The encrypted reasoning.
        data: String,
    },
    /// A tool call.
    ToolCall(ToolCall),
    /// A block only its provider understands, kept and sent back unchanged to that provider (other
    /// providers never see it): Anthropic's server-side tool blocks (`server_tool_use`,
    /// `web_search_tool_result`, `code_execution_tool_result`, ...), which a paused turn
    /// ([`StopReason::Paused`]) must carry back for the model to go on.
    ProviderBlock {
        /// The provider that sent it, as [`ModelEvent::ProviderBlock`](crate::llm::ModelEvent) names it
        /// (`"anthropic"`).
        provider: String,
        /// The block as the provider sent it (a streamed block with its input assembled).
        block: serde_json::Value,
    },
}

/// A reply from the model.
///
/// ```
/// use serde_json::json;
/// use yiem_core::{exec::ToolCall, message::{AssistantContent, AssistantMessage}};
///
/// let mut message = AssistantMessage::text("let me look");
/// message.content.push(AssistantContent::ToolCall(ToolCall::new("c1", "read", json!({"path": "a.txt"}))));
/// assert_eq!(message.tool_calls().count(), 1);
/// assert_eq!(message.text_content(), "let me look");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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

    /// A finished reply of `content` with `stop_reason`, not stamped (`timestamp` 0).
    pub fn new(content: Vec<AssistantContent>, stop_reason: StopReason) -> Self {
        AssistantMessage {
            content,
            stop_reason,
            ..AssistantMessage::default()
        }
    }

    /// A reply that failed with `error` (stop reason [`StopReason::Error`], no content). Not stamped
    /// (`timestamp` 0), so a driver that replays makes the same message each time.
    pub fn failed(error: impl Into<String>) -> Self {
        AssistantMessage {
            stop_reason: StopReason::Error,
            error: Some(error.into()),
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

impl AgentMessage {
    /// The text of the last assistant message of `messages` (empty if there is none).
    ///
    /// ```
    /// use yiem_core::message::{AgentMessage, UserMessage};
    ///
    /// assert_eq!(AgentMessage::last_assistant_text(&[UserMessage::text("hi").into()]), "");
    /// ```
    pub fn last_assistant_text(messages: &[AgentMessage]) -> String {
        messages
            .iter()
            .rev()
            .find_map(|message| match message {
                AgentMessage::Assistant(reply) => Some(reply.text_content()),
                _ => None,
            })
            .unwrap_or_default()
    }
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
