//! Models: the [`Model`] trait every LLM provider implements, the events a model streams
//! ([`ModelEvent`]), and the [`MessageAssembler`] that turns those events into an [`AssistantMessage`].
//!
//! Two models ship: [`ScriptedModel`] (offline and deterministic: the default of the examples and tests)
//! and, with the `openai` feature, `OpenAiModel`, an OpenAI-compatible chat-completions client. The wire
//! format it speaks needs no HTTP and is always here: [`to_openai_messages`] and [`assistant_from_openai`]
//! convert the conversation to and from it. With the `openai-responses` feature, `OpenAiResponsesModel`
//! speaks OpenAI's Responses API (`to_responses_input` renders its input).
//!
//! Each provider is a folder (`openai/`, `openai_responses/`, `anthropic/`, `gemini/`) holding its client
//! and its wire format; `transport/` is what they share: the one request loop (send, retry on 429 and 5xx
//! as `Retry-After` allows, stream, error text), server-sent events, and the `ClientConfig` (base URL, key,
//! model, retries, timeouts, limits) that every provider's configuration holds as `client`.
//!
//! Builders follow one rule, tokio's: a setter is the bare name of what it sets and returns the builder
//! (`.retry(policy)`, `.reply_timeout(d)`, `.tools(list)`); what was set is read back from the public field
//! of that name (`config.client.retry`) or from the model's `config()`.

#[cfg(feature = "anthropic")]
mod anthropic;
#[cfg(feature = "gemini")]
mod gemini;
mod openai;
#[cfg(feature = "openai-responses")]
mod openai_responses;
#[cfg(any(feature = "anthropic", feature = "openai-responses"))]
mod programmatic;
mod replay;
mod reply;
mod sampler;
mod scripted;
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod select;
mod tool_choice;
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod transport;
pub(crate) mod truncated;

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::call::{ToolCall, ToolCaller};
use crate::message::{AgentMessage, AssistantContent, AssistantMessage, StopReason};
use crate::result::Usage;
use crate::store::registry::ToolList;

#[doc(hidden)]
#[cfg(feature = "anthropic")]
pub use anthropic::parse_anthropic_events_for_fuzzing;
#[cfg(feature = "anthropic")]
pub use anthropic::{
    AnthropicConfig, AnthropicModel, AnthropicToolSearch, CodeExecutionVersion, PromptCache,
    to_anthropic_messages,
};
#[doc(hidden)]
#[cfg(feature = "gemini")]
pub use gemini::parse_gemini_responses_for_fuzzing;
#[cfg(feature = "gemini")]
pub use gemini::{GeminiConfig, GeminiModel, to_gemini_contents};
#[doc(hidden)]
#[cfg(feature = "openai")]
pub use openai::parse_chunks_for_fuzzing;
#[cfg(feature = "openai")]
pub use openai::{API_KEY_ENV, BASE_URL_ENV, DEFAULT_MODEL, MODEL_ENV, OpenAiConfig, OpenAiModel};
pub use openai::{
    MessageFormat, OpenAiFormat, assistant_from_openai, extract_tool_calls, to_openai_messages,
};
#[doc(hidden)]
#[cfg(feature = "openai-responses")]
pub use openai_responses::parse_responses_events_for_fuzzing;
#[cfg(feature = "openai-responses")]
pub use openai_responses::{
    DEFAULT_RESPONSES_MODEL, OPENAI_BASE_URL, OpenAiResponsesConfig, OpenAiResponsesModel,
    to_responses_input,
};
#[cfg(any(feature = "anthropic", feature = "openai-responses"))]
pub use programmatic::ProgrammaticCalling;
pub use reply::stream_reply;
pub use sampler::model_sampler;
pub(crate) use sampler::sample;
pub use scripted::{ScriptedModel, ScriptedTurn};
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
pub use select::{PROVIDER_ENV, PROVIDERS, SelectedModel, model_from_env, model_from_lookup};
pub use tool_choice::ToolChoice;
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
pub use transport::config::{ClientConfig, ConfigError};
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
pub use transport::partial::partial_arguments;
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
pub use transport::retry::RetryPolicy;
pub use truncated::truncated_tool_results;

/// What the agent asks a model: the system prompt, the conversation and the tools it may call.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The system prompt.
    pub system_prompt: String,
    /// The conversation so far.
    pub messages: Vec<AgentMessage>,
    /// The tools the model may call; the model sends them in its provider's dialect, as the list's
    /// cached text.
    pub tools: ToolList,
    /// Every deferred tool, found or not (see [`catalog`](crate::catalog)): a provider with its own tool
    /// search sends them marked `defer_loading` beside its search tool, in place of
    /// [`SEARCH_TOOLS`](crate::catalog::SEARCH_TOOLS) and of the found ones in `tools`; the others do not
    /// send them.
    pub deferred: ToolList,
    /// Which of the tools the model may or must call in this request; `None` leaves it to the provider
    /// configuration's [`ToolChoice`] (`.tool_choice(..)`). An agent sets it from
    /// [`AgentSettings::tool_choice`](crate::agent::AgentSettings::tool_choice).
    pub tool_choice: Option<ToolChoice>,
}

impl ModelRequest {
    /// A request with `system_prompt` and the conversation `messages`, no tools.
    pub fn new(system_prompt: impl Into<String>, messages: Vec<AgentMessage>) -> Self {
        ModelRequest {
            system_prompt: system_prompt.into(),
            messages,
            ..ModelRequest::default()
        }
    }

    /// The tools the model may call.
    #[must_use]
    pub fn tools(mut self, tools: ToolList) -> Self {
        self.tools = tools;
        self
    }

    /// Every deferred tool (see [`deferred`](field@Self::deferred)).
    #[must_use]
    pub fn deferred(mut self, deferred: ToolList) -> Self {
        self.deferred = deferred;
        self
    }

    /// Which of the tools the model may or must call in this request.
    #[must_use]
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }
}

/// What the providers' clients ask of a request.
#[cfg_attr(
    not(any(
        feature = "openai",
        feature = "openai-responses",
        feature = "anthropic",
        feature = "gemini"
    )),
    allow(dead_code)
)]
impl ModelRequest {
    /// The tool choice in force: the request's own, else `configured` (the provider configuration's).
    pub(crate) fn tool_choice_or<'a>(&'a self, configured: &'a ToolChoice) -> &'a ToolChoice {
        self.tool_choice.as_ref().unwrap_or(configured)
    }

    /// The request without its [code-only](crate::tool::AgentTool::is_code_only) tools, for a provider that
    /// runs no program of the model's here (no programmatic calling): the model could only call them
    /// directly, which is refused. The request itself when it has none.
    pub(crate) fn without_code_only(&self) -> std::borrow::Cow<'_, ModelRequest> {
        let code_only = |tools: &ToolList| {
            tools
                .iter()
                .any(crate::tool::definition::AgentTool::is_code_only)
        };
        if !code_only(&self.tools) && !code_only(&self.deferred) {
            return std::borrow::Cow::Borrowed(self);
        }
        let direct = |tools: &ToolList| {
            ToolList::new(
                tools
                    .iter()
                    .filter(|tool| !tool.is_code_only())
                    .cloned()
                    .collect(),
            )
        };
        std::borrow::Cow::Owned(ModelRequest {
            tools: direct(&self.tools),
            deferred: direct(&self.deferred),
            ..self.clone()
        })
    }
}

/// One step of a streamed assistant reply.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ModelEvent {
    /// The reply started.
    Start {
        /// The model that answers.
        model: String,
    },
    /// More answer text.
    TextDelta(String),
    /// More reasoning text.
    ThinkingDelta(String),
    /// The opaque signature of the reasoning: Anthropic's `signature_delta` closes the thinking block it
    /// signs; Gemini's `thoughtSignature` comes on the part it belongs to and is kept as a thinking block
    /// (empty when Gemini showed no thought text) just before that part. Either way it is sent back
    /// unchanged in the next request, as both providers require.
    ThinkingSignature(String),
    /// Reasoning the provider sent encrypted (Anthropic's `redacted_thinking`): kept and sent back as is.
    RedactedThinking(String),
    /// A whole block only this provider understands (see [`AssistantContent::ProviderBlock`]).
    ProviderBlock {
        /// The provider, e.g. `"anthropic"`.
        provider: String,
        /// The block, to send back unchanged.
        block: Value,
    },
    /// A tool call started. `index` identifies it in the deltas that follow.
    ToolCallStart {
        /// The call's position in the reply.
        index: usize,
        /// Its id; an empty id gets a fresh one.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// What made tool call `index`, sent after its `ToolCallStart` when a program in the provider's
    /// sandbox made it (provider-native programmatic calling); the model's own calls have none.
    ToolCallCaller {
        /// The call's position in the reply.
        index: usize,
        /// The program that made it.
        caller: ToolCaller,
    },
    /// More of a tool call's arguments, as partial JSON text.
    ToolCallDelta {
        /// The call's position in the reply.
        index: usize,
        /// The next piece of the arguments.
        arguments: String,
    },
    /// What the arguments of a streaming tool call hold so far, parsed leniently (see
    /// `partial_arguments`, features `openai`, `anthropic`, `gemini`):
    /// every complete member and the string being written. Every provider sends one after each
    /// `ToolCallDelta` that makes the text parse, so a UI can show a path or a command before the call
    /// runs. Informational: the call's arguments are the text of its deltas, parsed at `ToolCallEnd`.
    ToolCallArguments {
        /// The call's position in the reply.
        index: usize,
        /// The arguments so far.
        arguments: Value,
    },
    /// A tool call's arguments are complete.
    ToolCallEnd {
        /// The call's position in the reply.
        index: usize,
    },
    /// The reply is complete.
    Done {
        /// Why the model stopped.
        stop_reason: StopReason,
        /// Tokens used.
        usage: Usage,
    },
    /// The request failed; the reply ends with stop reason `error` and this text.
    Error(String),
}

/// A stream of [`ModelEvent`]s.
pub type ModelStream = Pin<Box<dyn Stream<Item = ModelEvent> + Send>>;

/// An LLM: takes a [`ModelRequest`], streams the reply. Implementations never panic on bad input from the
/// network: failures arrive as [`ModelEvent::Error`].
///
/// ```
/// use futures::StreamExt;
/// use yiem_core::{
///     exec::CancellationToken,
///     llm::{Model, ModelEvent, ModelRequest, ScriptedModel, ScriptedTurn},
/// };
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let model = ScriptedModel::new([ScriptedTurn::text("hello there")]);
/// let events: Vec<ModelEvent> = model.stream(ModelRequest::default(), CancellationToken::new()).collect().await;
/// assert!(matches!(events.first(), Some(ModelEvent::Start { .. })));
/// assert!(matches!(events.last(), Some(ModelEvent::Done { .. })));
/// # });
/// ```
pub trait Model: Send + Sync {
    /// The model's name, for messages and logs.
    fn name(&self) -> &str;

    /// Who serves the model, as the OpenTelemetry GenAI conventions name providers
    /// (`gen_ai.provider.name`: `openai`, `anthropic`, `gcp.gemini`, ...) on the spans of its
    /// requests. Override it; the default is `unknown`.
    fn provider_name(&self) -> &str {
        "unknown"
    }

    /// Streams the reply to `request`. Cancelling `cancel` ends the stream early.
    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream;
}

/// A shared model is a model: one `Arc<dyn Model>` can serve an agent and, say, its tools' requests for
/// a completion ([`model_sampler`]).
impl<M: Model + ?Sized> Model for Arc<M> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn provider_name(&self) -> &str {
        (**self).provider_name()
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        (**self).stream(request, cancel)
    }
}

/// Builds an [`AssistantMessage`] from [`ModelEvent`]s as they arrive; after each event the partial
/// message is complete enough to show.
///
/// ```
/// use yiem_core::{llm::{MessageAssembler, ModelEvent}, message::{StopReason, Usage}};
///
/// let mut assembler = MessageAssembler::new();
/// assembler.apply(ModelEvent::TextDelta("Hel".into()));
/// assembler.apply(ModelEvent::TextDelta("lo".into()));
/// assembler.apply(ModelEvent::ToolCallStart { index: 0, id: "c1".into(), name: "read".into() });
/// assembler.apply(ModelEvent::ToolCallDelta { index: 0, arguments: "{\"path\":".into() });
/// assembler.apply(ModelEvent::ToolCallDelta { index: 0, arguments: "\"a.txt\"}".into() });
/// assembler.apply(ModelEvent::ToolCallEnd { index: 0 });
/// assembler.apply(ModelEvent::Done { stop_reason: StopReason::ToolUse, usage: Usage::default() });
/// let message = assembler.finish();
/// assert_eq!(message.text_content(), "Hello");
/// assert_eq!(message.tool_calls().next().unwrap().arguments, serde_json::json!({"path": "a.txt"}));
/// ```
///
/// Two calls a model gave one id get two ids: the second is `ID_2` (then `ID_3`, ...).
///
/// ```
/// use yiem_core::llm::{MessageAssembler, ModelEvent};
///
/// let mut assembler = MessageAssembler::new();
/// for index in 0..3 {
///     assembler.apply(ModelEvent::ToolCallStart { index, id: "x".into(), name: "shell".into() });
///     assembler.apply(ModelEvent::ToolCallEnd { index });
/// }
/// let ids: Vec<String> = assembler.message().tool_calls().map(|call| call.id.clone()).collect();
/// assert_eq!(ids, ["x", "x_2", "x_3"]);
/// ```
#[derive(Debug)]
pub struct MessageAssembler {
    /// The reply so far, always an [`AgentMessage::Assistant`], shared with the last snapshot handed out
    /// ([`snapshot`](Self::snapshot)) and changed in place once no one else holds it: an observer that
    /// drops each event costs no copy of the message per delta.
    message: Arc<AgentMessage>,
    /// The tool calls of the reply, keyed by the model's index, with their block positions.
    pending: Vec<PendingCall>,
    done: bool,
}

/// A call whose arguments are streaming: they grow in place, as the text so far, in the message's own
/// `ToolCall` (a `Value::String`) at `block`, parsed once when the call closes.
#[derive(Debug)]
struct PendingCall {
    index: usize,
    block: usize,
    closed: bool,
}

impl Default for MessageAssembler {
    fn default() -> Self {
        MessageAssembler {
            message: Arc::new(AgentMessage::Assistant(AssistantMessage::default())),
            pending: Vec::new(),
            done: false,
        }
    }
}

impl MessageAssembler {
    /// An empty reply.
    pub fn new() -> Self {
        MessageAssembler {
            message: Arc::new(AgentMessage::Assistant(AssistantMessage {
                timestamp: crate::call::now_millis(),
                ..AssistantMessage::default()
            })),
            ..Self::default()
        }
    }

    /// The reply so far.
    pub fn message(&self) -> &AssistantMessage {
        assistant(&self.message)
    }

    /// The reply so far as a shared message, for an event: cheap (a reference count), and the next
    /// event changes the reply in place if every holder of this one has dropped it by then.
    pub fn snapshot(&self) -> Arc<AgentMessage> {
        Arc::clone(&self.message)
    }

    /// The reply, to change: in place unless a snapshot of it is still held elsewhere.
    fn reply(&mut self) -> &mut AssistantMessage {
        match Arc::make_mut(&mut self.message) {
            AgentMessage::Assistant(reply) => reply,
            _ => unreachable!("the assembler holds an assistant message only"),
        }
    }

    /// Whether a `Done` or `Error` event arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Applies one event; returns the delta to report in a `MessageUpdate` event (`None` for `Start`, `Done`
    /// and `Error`).
    pub fn apply(&mut self, event: ModelEvent) -> Option<Value> {
        match event {
            ModelEvent::Start { model } => {
                self.reply().model = model;
                None
            }
            ModelEvent::TextDelta(text) => {
                let delta = serde_json::json!({"type": "text_delta", "text": text});
                match self.reply().content.last_mut() {
                    Some(AssistantContent::Text { text: existing }) => existing.push_str(&text),
                    _ => self.reply().content.push(AssistantContent::Text { text }),
                }
                Some(delta)
            }
            ModelEvent::ThinkingDelta(thinking) => {
                let delta = serde_json::json!({"type": "thinking_delta", "thinking": thinking});
                match self.reply().content.last_mut() {
                    // A signed block is finished: more thinking is a new block.
                    Some(AssistantContent::Thinking {
                        thinking: existing,
                        signature: None,
                    }) => existing.push_str(&thinking),
                    _ => self.reply().content.push(AssistantContent::Thinking {
                        thinking,
                        signature: None,
                    }),
                }
                Some(delta)
            }
            ModelEvent::ThinkingSignature(text) => {
                let delta = serde_json::json!({"type": "thinking_signature", "signature": text});
                match self.reply().content.last_mut() {
                    Some(AssistantContent::Thinking {
                        signature: signature @ None,
                        ..
                    }) => *signature = Some(text),
                    _ => self.reply().content.push(AssistantContent::Thinking {
                        thinking: String::new(),
                        signature: Some(text),
                    }),
                }
                Some(delta)
            }
            ModelEvent::RedactedThinking(data) => {
                self.reply()
                    .content
                    .push(AssistantContent::RedactedThinking { data });
                Some(serde_json::json!({"type": "redacted_thinking"}))
            }
            ModelEvent::ProviderBlock { provider, block } => {
                let delta = serde_json::json!({"type": "provider_block", "block": block});
                self.reply()
                    .content
                    .push(AssistantContent::ProviderBlock { provider, block });
                Some(delta)
            }
            ModelEvent::ToolCallArguments { index, arguments } => Some(
                serde_json::json!({"type": "tool_call_arguments", "index": index, "arguments": arguments}),
            ),
            ModelEvent::ToolCallStart { index, id, name } => {
                let id = if id.is_empty() {
                    crate::id::fresh_uuid()
                } else {
                    self.unused_id(id)
                };
                let delta = serde_json::json!({"type": "tool_call_start", "index": index, "id": id, "name": name});
                let block = self.message().content.len();
                self.pending.push(PendingCall {
                    index,
                    block,
                    closed: false,
                });
                self.reply()
                    .content
                    .push(AssistantContent::ToolCall(ToolCall::new(
                        id,
                        name,
                        Value::String(String::new()),
                    )));
                Some(delta)
            }
            ModelEvent::ToolCallCaller { index, caller } => {
                let delta = serde_json::json!({"type": "tool_call_caller", "index": index, "caller": caller});
                if let Some(block) = self.open_block(index)
                    && let Some(AssistantContent::ToolCall(tool_call)) =
                        self.reply().content.get_mut(block)
                {
                    tool_call.caller = Some(caller);
                }
                Some(delta)
            }
            ModelEvent::ToolCallDelta { index, arguments } => {
                let delta = serde_json::json!({"type": "tool_call_delta", "index": index, "arguments": arguments});
                if let Some(block) = self.open_block(index)
                    && let Some(AssistantContent::ToolCall(tool_call)) =
                        self.reply().content.get_mut(block)
                    && let Value::String(text) = &mut tool_call.arguments
                {
                    // Appended where it lives: no copy of the text so far per delta.
                    text.push_str(&arguments);
                }
                Some(delta)
            }
            ModelEvent::ToolCallEnd { index } => {
                self.close(index);
                Some(serde_json::json!({"type": "tool_call_end", "index": index}))
            }
            ModelEvent::Done { stop_reason, usage } => {
                let reply = self.reply();
                reply.stop_reason = stop_reason;
                reply.usage = usage;
                self.done = true;
                None
            }
            ModelEvent::Error(text) => {
                let reply = self.reply();
                reply.stop_reason = StopReason::Error;
                reply.error = Some(text);
                self.done = true;
                None
            }
        }
    }

    /// The block of call `index`, while its arguments are still coming.
    fn open_block(&self, index: usize) -> Option<usize> {
        self.pending
            .iter()
            .rev()
            .find(|c| c.index == index && !c.closed)
            .map(|c| c.block)
    }

    /// `id`, or, when a call of this reply already has it (a model that sent one id twice), `id_2`,
    /// `id_3`, ...: every call of a reply gets its own id, so each gets its own result and its own decision.
    fn unused_id(&self, id: String) -> String {
        let taken = |candidate: &str| self.message().tool_calls().any(|call| call.id == candidate);
        if !taken(&id) {
            return id;
        }
        (2..)
            .map(|n| format!("{id}_{n}"))
            .find(|candidate| !taken(candidate))
            .expect("an unused id exists")
    }

    /// Parses the finished arguments of call `index`: a JSON value when they parse, else the raw text (the
    /// call then fails with a clear error when it runs).
    fn close(&mut self, index: usize) {
        let Some(call) = self
            .pending
            .iter_mut()
            .rev()
            .find(|c| c.index == index && !c.closed)
        else {
            return;
        };
        call.closed = true;
        let block = call.block;
        if let Some(AssistantContent::ToolCall(tool_call)) = self.reply().content.get_mut(block)
            && let Value::String(text) = &tool_call.arguments
        {
            tool_call.arguments = parse_arguments(text);
        }
    }

    /// The finished message. Calls that never got their end event are closed now; a stream that ended
    /// without `Done` or `Error` is reported as an error.
    pub fn finish(mut self) -> AssistantMessage {
        let open: Vec<usize> = self
            .pending
            .iter()
            .filter(|c| !c.closed)
            .map(|c| c.index)
            .collect();
        for index in open {
            self.close(index);
        }
        let done = self.done;
        let reply = self.reply();
        if !done {
            reply.stop_reason = StopReason::Error;
            reply.error = Some("the model's stream ended before the reply was complete".into());
        }
        if reply.stop_reason == StopReason::Stop && reply.tool_calls().next().is_some() {
            reply.stop_reason = StopReason::ToolUse;
        }
        match Arc::unwrap_or_clone(self.message) {
            AgentMessage::Assistant(reply) => reply,
            _ => unreachable!("the assembler holds an assistant message only"),
        }
    }
}

/// The assistant message an assembler holds.
fn assistant(message: &AgentMessage) -> &AssistantMessage {
    match message {
        AgentMessage::Assistant(reply) => reply,
        _ => unreachable!("the assembler holds an assistant message only"),
    }
}

fn parse_arguments(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// For a provider with its own tool search, when `request` has deferred tools: its tools without
/// [`SEARCH_TOOLS`](crate::catalog::SEARCH_TOOLS) (the provider's search takes its place) and without the deferred ones, and every
/// deferred tool's entry in the request (`describe`, e.g. its definition in a dialect), marked
/// `"defer_loading": true`. `None` when the request has no deferred tools: send its tools as they are.
#[cfg_attr(
    not(any(feature = "anthropic", feature = "openai-responses")),
    allow(dead_code)
)]
pub(crate) fn provider_search(
    request: &ModelRequest,
    describe: impl Fn(
        &crate::tool::definition::AgentTool,
    ) -> Result<Value, crate::dialect::DialectError>,
) -> Result<Option<(ToolList, Vec<Value>)>, crate::dialect::DialectError> {
    if request.deferred.is_empty() {
        return Ok(None);
    }
    let deferred_names: std::collections::HashSet<&str> = request
        .deferred
        .iter()
        .map(crate::tool::definition::AgentTool::name)
        .collect();
    let tools = request
        .tools
        .iter()
        .filter(|tool| {
            tool.name() != crate::catalog::SEARCH_TOOLS && !deferred_names.contains(tool.name())
        })
        .cloned()
        .collect();
    let deferred = request
        .deferred
        .iter()
        .map(|tool| {
            let mut definition = describe(tool)?;
            if let Value::Object(fields) = &mut definition {
                fields.insert("defer_loading".into(), Value::Bool(true));
            }
            Ok(definition)
        })
        .collect::<Result<Vec<Value>, crate::dialect::DialectError>>()?;
    Ok(Some((tools, deferred)))
}
