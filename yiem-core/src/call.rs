//! Tool calls as the model sends them ([`ToolCall`]) and the message each call's result becomes
//! ([`ToolResultMessage`]).

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::Content;
use crate::result::AgentToolResult;

/// The name of code mode's tool, whose results may carry a paused program.
pub(crate) const RUN_CODE: &str = "run_code";

/// The member of a `run_code` result's details that holds a paused program.
pub(crate) const PAUSE_KEY: &str = "code_mode_paused";

/// One tool call requested by the model.
///
/// `arguments` is what the model sent: usually a JSON object, sometimes a JSON string that holds one
/// (the OpenAI wire format); the executor accepts both.
///
/// ```
/// use serde_json::json;
/// use yiem_core::exec::ToolCall;
///
/// let call = ToolCall::new("call_1", "get_weather", json!({"city": "Tokyo"}));
/// assert_eq!(call.name, "get_weather");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The id the model gave the call; its result refers back to it.
    pub id: String,
    /// The name of the tool to run.
    pub name: String,
    /// The arguments, as sent.
    pub arguments: Value,
    /// What made the call when the model did not make it itself: a program in the provider's own
    /// sandbox ([`ToolCaller`]). `None` for the model's own calls (left out of the JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<ToolCaller>,
}

impl ToolCall {
    /// A tool call.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            caller: None,
        }
    }

    /// The call, made by `caller`.
    pub fn caller(mut self, caller: ToolCaller) -> Self {
        self.caller = Some(caller);
        self
    }
}

/// A program that made a [`ToolCall`]: one running in the model provider's own sandbox (provider-native
/// programmatic calling: Anthropic's code-execution tool with `allowed_callers`, OpenAI's
/// `programmatic_tool_calling` on the Responses API; see `AnthropicConfig::programmatic_calling`
/// and `OpenAiResponsesConfig::programmatic_calling`), or a program of code mode's `run_code`
/// (provider `yiem`, kind `run_code`, the `run_code` call's id; see `yiem_core::code`). A call
/// without a caller is the model's own.
///
/// Such a call runs like any other (hooks, approvals, events) and its caller goes back with it in later
/// requests, as the provider requires; a provider is sent only the callers it made.
///
/// ```
/// use serde_json::json;
/// use yiem_core::exec::{ToolCall, ToolCaller};
///
/// let caller = ToolCaller::new("anthropic", "code_execution_20250825", "srvtoolu_1");
/// let call = ToolCall::new("toolu_1", "get_weather", json!({"city": "Tokyo"})).caller(caller);
/// assert_eq!(serde_json::to_value(&call).unwrap()["caller"], json!({
///     "provider": "anthropic", "kind": "code_execution_20250825", "id": "srvtoolu_1"
/// }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCaller {
    /// The provider whose sandbox made the call, as [`AssistantContent::ProviderBlock`](crate::message::AssistantContent)
    /// names providers (`anthropic`, `openai-responses`); `yiem` for code mode.
    pub provider: String,
    /// The caller's type as the provider names it: Anthropic's code-execution tool version
    /// (`code_execution_20250825`, `code_execution_20260120`), OpenAI's `program`.
    pub kind: String,
    /// The id of the provider's item that runs the program: Anthropic's `tool_id` (its
    /// `server_tool_use` block), OpenAI's `caller_id` (its `program` item).
    pub id: String,
}

impl ToolCaller {
    /// A caller of `provider`, of type `kind`, the item `id`.
    pub fn new(
        provider: impl Into<String>,
        kind: impl Into<String>,
        id: impl Into<String>,
    ) -> Self {
        ToolCaller {
            provider: provider.into(),
            kind: kind.into(),
            id: id.into(),
        }
    }
}

/// The result of one tool call, as it goes into the conversation: which call it answers, and the
/// [`AgentToolResult`] itself (serialized flat, beside the call's id and tool name).
///
/// ```
/// use serde_json::json;
/// use yiem_core::{exec::ToolCall, message::ToolResultMessage, tool::AgentToolResult};
///
/// let call = ToolCall::new("call_1", "echo", json!({}));
/// let message = ToolResultMessage::new(&call, AgentToolResult::text("hi"));
/// assert_eq!(message.tool_call_id, "call_1");
/// assert_eq!(message.text_content(), "hi");
/// assert!(!message.is_error());
/// assert_eq!(serde_json::to_value(&message).unwrap()["content"], json!([{"type": "text", "text": "hi"}]));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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
