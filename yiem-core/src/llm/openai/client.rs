//! [`OpenAiModel`]: a [`Model`](crate::llm::Model) over any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM,
//! llama.cpp, OpenRouter, ...), streamed with server-sent events.
//!
//! The client is lenient about what servers leave out and strict about what it cannot trust:
//!
//! - Tool-call deltas are assembled by `index`. A delta without `index` (Ollama and other simple servers
//!   send whole calls) starts a new call when it carries a name or an id not seen yet, and continues the
//!   latest call otherwise. A missing id is sent as an empty id, which the [`MessageAssembler`] replaces
//!   with a fresh UUID; arguments sent whole as a JSON object are passed on as their JSON text.
//! - `reasoning_content` / `reasoning` fields become thinking deltas.
//! - A missing `finish_reason` before `[DONE]` is fine (the stop reason is `ToolUse` when the reply has
//!   calls, else `Stop`), and so is a stream that ends after its `finish_reason` without `[DONE]`. Missing
//!   usage is zero.
//! - A server that ignores `stream: true` and answers with one JSON body is read as one chunk.
//!
//! Every failure ends the stream with [`ModelEvent::Error`] and a text that starts with the request
//! (`POST <url> failed: `) and names what happened; nothing panics. Retries (see [`RetryPolicy`](crate::llm::RetryPolicy)) happen only before anything but `Start` was streamed. A
//! chunk that is not JSON is **fatal**:
//! skipping it could silently drop part of the answer or of a tool call's arguments. See
//! [`OpenAiModel`] for the list.
//!
//! [`MessageAssembler`]: crate::llm::MessageAssembler

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::format::{MessageFormat, OpenAiFormat, usage_from_openai};
use crate::dialect::{Dialect, DialectError};
use crate::llm::transport::config::{ClientConfig, ConfigError};
use crate::llm::transport::failure::{error_text, preview};
use crate::llm::transport::{self, EventData, StreamParser, client_setters};
use crate::llm::{ModelEvent, ModelRequest};
use crate::message::StopReason;
use crate::result::Usage;

/// The environment variable with the base URL (`https://api.openai.com/v1`, `http://localhost:11434/v1`).
pub const BASE_URL_ENV: &str = "YIEM_BASE_URL";
/// The environment variable with the API key (sent as `Authorization: Bearer <key>`).
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";
/// The environment variable with the model name.
pub const MODEL_ENV: &str = "YIEM_MODEL";
/// The model used when [`MODEL_ENV`] is not set.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// Where and how an [`OpenAiModel`] sends its requests: the [`ClientConfig`] every provider shares, and
/// whether to ask for a usage chunk.
///
/// ```
/// use std::time::Duration;
/// use yiem_core::llm::{OpenAiConfig, RetryPolicy};
///
/// let config = OpenAiConfig::new("http://localhost:11434/v1", "llama3.2")
///     .retry(RetryPolicy::none())
///     .extra("temperature", serde_json::json!(0.2));
/// assert_eq!(config.client.api_key, None);
/// assert_eq!(config.client.extra_body["temperature"], 0.2);
///
/// let from_env = OpenAiConfig::from_lookup(|name| match name {
///     "YIEM_BASE_URL" => Some("https://api.openai.com/v1".into()),
///     "OPENAI_API_KEY" => Some("sk-test".into()),
///     _ => None,
/// })
/// .unwrap();
/// assert_eq!(from_env.client.model, "gpt-4o-mini");
/// assert_eq!(from_env.client.api_key.as_deref(), Some("sk-test"));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OpenAiConfig {
    /// Where requests go (`<base_url>/chat/completions`; a URL that already ends in
    /// `/chat/completions` is used as it is), the key (sent as `Authorization: Bearer <key>`; local
    /// servers need none), the model, and the retries, timeouts and limits.
    pub client: ClientConfig,
    /// Ask for a usage chunk (`stream_options.include_usage`, default true); turn off for servers that
    /// refuse the field.
    pub include_usage: bool,
}

client_setters!(OpenAiConfig);

impl OpenAiConfig {
    /// A configuration for `model` at `base_url`, without an API key, with the default retries and timeouts.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            client: ClientConfig::new(base_url, model),
            include_usage: true,
        }
    }

    /// Reads [`BASE_URL_ENV`] (required), [`API_KEY_ENV`] (optional) and [`MODEL_ENV`] (default
    /// [`DEFAULT_MODEL`]) from the environment; an empty variable counts as unset.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), reading the variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let var = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let base_url = var(BASE_URL_ENV).ok_or(ConfigError::MissingBaseUrl {
            variable: BASE_URL_ENV,
            expected: "the chat-completions base URL, e.g. https://api.openai.com/v1 or \
                       http://localhost:11434/v1",
        })?;
        let model = var(MODEL_ENV).unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        let mut config = OpenAiConfig::new(base_url.trim(), model.trim());
        config.client.api_key = var(API_KEY_ENV).map(|key| key.trim().to_owned());
        Ok(config)
    }

    /// Sets [`include_usage`](field@Self::include_usage).
    pub fn include_usage(mut self, on: bool) -> Self {
        self.include_usage = on;
        self
    }
}

/// A [`Model`](crate::llm::Model) that streams replies from an OpenAI-compatible chat-completions endpoint.
///
/// Each request is a `POST <base_url>/chat/completions` with `model`, `messages` (from the
/// [`MessageFormat`], [`OpenAiFormat`] by default), `tools` (when there are any), `stream: true`,
/// `stream_options: {"include_usage": true}` and the configured extra fields. The reply streams as
/// [`ModelEvent`]s: `Start` once the server accepted the request, then text, thinking and tool-call
/// events as they arrive, `ToolCallEnd` for every call when the `finish_reason` (or the end of the stream)
/// arrives, and `Done` with the stop reason (`stop` → `Stop`, `tool_calls`/`function_call` → `ToolUse`,
/// `length` → `Length`) and usage (`prompt_tokens`, `completion_tokens`, cached tokens).
///
/// Failures end the stream with `Start` (if not yet sent) and one `Error`, whose text starts with
/// `POST <url> failed: ` followed by:
///
/// | what happened | text after the prefix | retried |
/// |---|---|---|
/// | HTTP 429 or 5xx | `HTTP 500 Internal Server Error: <server message> (4 attempts)` | yes |
/// | a 5xx whose body is a validation error | `HTTP 500 ...: <message> (a validation error of the request: not retried, ...)` | no |
/// | other HTTP error | `HTTP 401 Unauthorized: <server message>` | no |
/// | `Retry-After` longer than `max_delay` | `HTTP 429 ...: <message> (not retried: the server asked to retry after 120 s, more than the 30 s allowed)` | no |
/// | no connection | `could not connect: <cause> (4 attempts)` | yes |
/// | no response headers in time | `no response within 300 s` | no |
/// | stream silent too long | `no data for 300 s after 12 chunks` | no |
/// | stream longer than `reply_timeout` | `the reply went on for longer than the 1800 s allowed for a whole reply, after 12 chunks` | no |
/// | an event larger than `max_event_bytes` | `an event of the stream is larger than the 67108864 bytes allowed, after 12 chunks` | no |
/// | stream broken by the network | `the stream broke off after 12 chunks: <cause>` | only before its first chunk |
/// | stream ended without `finish_reason` or `[DONE]` | `the stream ended after 12 chunks before the reply was complete` | only before its first chunk |
/// | a chunk that is not JSON | `chunk 3 is not JSON (<parse error>): <the chunk>` | no |
/// | an error object or `event: error` in the stream | `the server reported an error in the stream: <message>` | no |
/// | `finish_reason: "content_filter"` | `the server stopped the reply with finish_reason "content_filter"` | no |
///
/// The server message is `error.message` (OpenAI, vLLM, llama.cpp), `error` as a string (Ollama),
/// `message` or `detail` from a JSON body, else the body itself (cut at 300 characters). "(N attempts)"
/// appears only when there was more than one. The whole text is at most 2 000 characters, with the API key
/// redacted wherever the server echoed it. Cancelling the token ends the stream at once, without an
/// `Error`, also while waiting for a retry.
///
/// A reply cut at the output limit ends with `Done { stop_reason: Length, .. }` after its calls'
/// `ToolCallEnd`s; their arguments may be incomplete, so the agent must not run them: see
/// [`truncated_tool_results`](crate::llm::truncated_tool_results).
///
/// ```no_run
/// use futures::StreamExt;
/// use yiem_core::{
///     exec::CancellationToken, llm::{MessageAssembler, Model, ModelRequest, OpenAiModel},
///     message::UserMessage,
/// };
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// // YIEM_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... YIEM_MODEL=gpt-4o-mini
/// let model = OpenAiModel::from_env().expect("configured");
/// let request = ModelRequest::new("Answer in one word.", vec![UserMessage::text("Capital of Japan?").into()]);
/// let mut assembler = MessageAssembler::new();
/// let mut events = model.stream(request, CancellationToken::new());
/// while let Some(event) = events.next().await {
///     assembler.apply(event);
/// }
/// println!("{}", assembler.finish().text_content());
/// # });
/// ```
#[derive(Clone)]
pub struct OpenAiModel {
    config: Arc<OpenAiConfig>,
    transport: transport::Client,
    format: Arc<dyn MessageFormat>,
}

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("config", &self.config)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl OpenAiModel {
    /// A client for `config`; fails on a base URL that is not http(s) or when the HTTP client cannot start.
    ///
    /// ```
    /// use yiem_core::llm::{OpenAiConfig, OpenAiModel};
    ///
    /// let model = OpenAiModel::new(OpenAiConfig::new("http://localhost:8080/v1/", "qwen3")).unwrap();
    /// assert_eq!(model.endpoint(), "http://localhost:8080/v1/chat/completions");
    ///
    /// let error = OpenAiModel::new(OpenAiConfig::new("localhost:8080", "qwen3")).unwrap_err();
    /// assert_eq!(error.to_string(), "the base URL `localhost:8080` must start with http:// or https://");
    /// ```
    pub fn new(config: OpenAiConfig) -> Result<Self, ConfigError> {
        Ok(OpenAiModel {
            transport: transport::Client::new(&config.client, |base| {
                transport::joined(base, "/chat/completions")
            })?,
            config: Arc::new(config),
            format: Arc::new(OpenAiFormat),
        })
    }

    /// A client configured from the environment: see [`OpenAiConfig::from_env`].
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::new(OpenAiConfig::from_env()?)
    }

    /// Renders messages with `format` instead of [`OpenAiFormat`].
    ///
    /// ```
    /// use serde_json::Value;
    /// use yiem_core::llm::to_openai_messages;
    /// use yiem_core::{
    ///     llm::{ModelRequest, OpenAiConfig, OpenAiModel}, message::{AgentMessage, UserMessage},
    /// };
    ///
    /// // Keep only the last 10 messages.
    /// let model = OpenAiModel::new(OpenAiConfig::new("http://localhost:11434/v1", "llama3.2"))
    ///     .unwrap()
    ///     .format(|system: &str, messages: &[AgentMessage]| -> Vec<Value> {
    ///         to_openai_messages(system, &messages[messages.len().saturating_sub(10)..])
    ///     });
    /// let request = ModelRequest::new(String::new(), (0..12).map(|i| UserMessage::text(i.to_string()).into()).collect());
    /// assert_eq!(model.request_body(&request).unwrap()["messages"][0]["content"], "2");
    /// ```
    pub fn format(mut self, format: impl MessageFormat + 'static) -> Self {
        self.format = Arc::new(format);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        self.transport.endpoint()
    }

    /// The JSON body sent for `request`. Fails when a tool cannot be described in the OpenAI dialect.
    ///
    /// ```
    /// use serde_json::json;
    /// use yiem_core::{llm::{ModelRequest, OpenAiConfig, OpenAiModel}, message::UserMessage};
    ///
    /// let model = OpenAiModel::new(OpenAiConfig::new("http://localhost:11434/v1", "llama3.2")).unwrap();
    /// let body = model.request_body(&ModelRequest::new("Be brief.", vec![UserMessage::text("hi").into()])).unwrap();
    /// assert_eq!(body, json!({
    ///     "model": "llama3.2",
    ///     "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
    ///     "stream": true,
    ///     "stream_options": {"include_usage": true}
    /// }));
    /// ```
    pub fn request_body(&self, request: &ModelRequest) -> Result<Value, DialectError> {
        let request = &*request.without_code_only();
        let mut body = self.body_without_tools(request);
        if self.sends_tools(request) {
            body.insert("tools".into(), request.tools.definitions(Dialect::OpenAi)?);
        }
        Ok(Value::Object(body))
    }

    /// The bytes of the request body: [`request_body`](Self::request_body) as JSON, with the tool list's
    /// cached text spliced in rather than serialized again.
    fn request_bytes(&self, request: &ModelRequest) -> Result<Vec<u8>, DialectError> {
        let request = &*request.without_code_only();
        let body = self.body_without_tools(request);
        let mut bytes = serde_json::to_vec(&Value::Object(body)).unwrap_or_default();
        if self.sends_tools(request) {
            let tools = request.tools.definitions_json(Dialect::OpenAi)?;
            // `bytes` is a JSON object with at least `model`: replace its closing brace.
            bytes.pop();
            bytes.extend_from_slice(b",\"tools\":");
            bytes.extend_from_slice(tools.as_bytes());
            bytes.push(b'}');
        }
        Ok(bytes)
    }

    /// Whether the request carries the tool list (an `extra_body` entry `tools` replaces it).
    fn sends_tools(&self, request: &ModelRequest) -> bool {
        !request.tools.is_empty() && !self.config.client.extra_body.contains_key("tools")
    }

    fn body_without_tools(&self, request: &ModelRequest) -> Map<String, Value> {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.config.client.model));
        body.insert(
            "messages".into(),
            Value::Array(
                self.format
                    .messages(&request.system_prompt, &request.messages),
            ),
        );
        if !request.tools.is_empty()
            && let Some(choice) = request
                .tool_choice_or(&self.config.client.tool_choice)
                .openai_chat()
        {
            body.insert("tool_choice".into(), choice);
        }
        body.insert("stream".into(), json!(true));
        if self.config.include_usage {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        self.config.client.add_extra(&mut body);
        body
    }
}

impl transport::Provider for OpenAiModel {
    const NAME: &'static str = "openai";
    type Parser = ChunkParser;

    fn headers(&self) -> Vec<(&'static str, String)> {
        transport::bearer(self.config.client.api_key.as_deref())
    }

    fn body(&self, request: &ModelRequest) -> Result<impl transport::Body, DialectError> {
        self.request_bytes(request)
    }

    fn parser(&self) -> ChunkParser {
        ChunkParser::default()
    }

    fn connection(&self) -> (&ClientConfig, &transport::Client) {
        (&self.config.client, &self.transport)
    }
}

/// Turns chat-completion chunks into [`ModelEvent`]s, keeping the state of the tool calls.
#[derive(Default)]
pub(crate) struct ChunkParser {
    calls: Vec<CallState>,
    finish_reason: Option<String>,
    usage: Usage,
    /// Chunks read so far.
    chunks: usize,
    /// Whether the stream has used `tool_calls`: servers that mirror each piece into the legacy
    /// `function_call` as well (llama-cpp-python) are then read from `tool_calls` alone.
    saw_tool_calls: bool,
    /// Whether `[DONE]` arrived.
    done: bool,
}

impl StreamParser for ChunkParser {
    fn event(&mut self, _name: &str, data: EventData) -> Result<Vec<ModelEvent>, String> {
        if &*data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        self.chunk(data)
    }

    fn body(&mut self, data: EventData) -> Result<Vec<ModelEvent>, String> {
        self.chunk(data)
    }

    fn ended(&self) -> bool {
        self.done
    }

    fn complete(&self) -> bool {
        self.finish_reason.is_some()
    }

    fn chunks(&self) -> usize {
        self.chunks
    }

    fn finish(&mut self) -> Vec<ModelEvent> {
        ChunkParser::finish(self)
    }
}

/// One tool call being assembled.
struct CallState {
    /// The server's `index`, when it sent one.
    key: Option<u64>,
    id: String,
    name: String,
    /// The arguments so far, kept only where they decide something: while the call waits for its
    /// name, and for an index-less call (a piece that repeats its name continues it only while they
    /// are not yet whole). A call with an index passes its pieces straight on, so a long one is not
    /// copied; it counts as never whole (only its index, or an index-less piece, continues it).
    arguments: String,
    /// Whether `ToolCallStart` went out (it waits for the name).
    started: bool,
    closed: bool,
}

impl ChunkParser {
    /// The events of one chunk (a `data:` payload), or the error that ends the stream.
    fn chunk(&mut self, mut data: EventData) -> Result<Vec<ModelEvent>, String> {
        self.chunks += 1;
        let mut chunk = data.json().map_err(|error| {
            format!(
                "chunk {} is not JSON ({error}): {}",
                self.chunks,
                preview(&data)
            )
        })?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(format!(
                "the server reported an error in the stream: {}",
                error_text(error).unwrap_or_else(|| preview(&error.to_string()))
            ));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = usage_from_openai(usage);
        }
        let mut events = Vec::new();
        let choice = chunk
            .get_mut("choices")
            .and_then(Value::as_array_mut)
            .and_then(|choices| {
                choices
                    .iter_mut()
                    .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
            });
        let Some(choice) = choice else {
            return Ok(events);
        };
        // Streaming chunks carry `delta`; a non-streaming body (read as one chunk) carries `message`.
        let key = if choice.get("delta").is_some() {
            "delta"
        } else {
            "message"
        };
        if let Some(delta) = choice.get_mut(key) {
            self.delta(delta, &mut events);
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
            self.close_calls(&mut events);
        }
        Ok(events)
    }

    /// The events of a delta, its texts moved out of it.
    fn delta(&mut self, delta: &mut Value, events: &mut Vec<ModelEvent>) {
        for key in ["reasoning_content", "reasoning"] {
            let thinking = transport::take_str(delta, key);
            if !thinking.is_empty() {
                events.push(ModelEvent::ThinkingDelta(thinking));
                break;
            }
        }
        match delta.get_mut("content") {
            Some(Value::String(text)) if !text.is_empty() => {
                events.push(ModelEvent::TextDelta(std::mem::take(text)))
            }
            Some(Value::Array(parts)) => {
                for part in parts {
                    let text = transport::take_str(part, "text");
                    if !text.is_empty() {
                        events.push(ModelEvent::TextDelta(text));
                    }
                }
            }
            _ => {}
        }
        if let Some(Value::Array(calls)) = delta.get_mut("tool_calls")
            && !calls.is_empty()
        {
            self.saw_tool_calls = true;
            for call in calls {
                self.tool_call(call, events);
            }
        }
        // The legacy `function_call` counts only in a stream that never used `tool_calls`: some servers
        // send every piece in both fields, and reading both doubles the arguments or the call.
        if !self.saw_tool_calls
            && let Some(function) = delta.get_mut("function_call").filter(|f| f.is_object())
        {
            let function = function.take();
            self.tool_call(&mut json!({"index": 0, "function": function}), events);
        }
    }

    /// One entry of a delta's `tool_calls`.
    fn tool_call(&mut self, entry: &mut Value, events: &mut Vec<ModelEvent>) {
        let function = match entry.get("function") {
            Some(_) => &mut entry["function"],
            None => &mut *entry,
        };
        let arguments = match function.get_mut("arguments") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(piece)) => std::mem::take(piece),
            Some(whole) => whole.to_string(),
        };
        let function = entry.get("function").unwrap_or(entry);
        let text = |value: Option<&Value>| {
            value
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let id = text(entry.get("id"));
        let name = text(function.get("name"));
        let key = entry.get("index").and_then(Value::as_u64);
        let slot = match self.find_call(key, id.as_deref(), name.as_deref()) {
            Some(slot) => slot,
            None => {
                self.calls.push(CallState {
                    key,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                    started: false,
                    closed: false,
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[slot];
        if call.closed {
            return;
        }
        if !call.started {
            if let Some(id) = id {
                call.id = id;
            }
            if let Some(name) = name {
                call.name = name;
            }
        }
        if !call.started || call.key.is_none() {
            call.arguments.push_str(&arguments);
        }
        if !call.started && !call.name.is_empty() {
            call.started = true;
            events.push(ModelEvent::ToolCallStart {
                index: slot,
                id: call.id.clone(),
                name: call.name.clone(),
            });
            if !call.arguments.is_empty() {
                let arguments = if call.key.is_some() {
                    std::mem::take(&mut call.arguments)
                } else {
                    call.arguments.clone()
                };
                events.push(ModelEvent::ToolCallDelta {
                    index: slot,
                    arguments,
                });
            }
        } else if call.started && !arguments.is_empty() {
            events.push(ModelEvent::ToolCallDelta {
                index: slot,
                arguments,
            });
        }
    }

    /// The call a delta belongs to, or `None` for a new call.
    fn find_call(&self, key: Option<u64>, id: Option<&str>, name: Option<&str>) -> Option<usize> {
        if key.is_some() {
            let slot = self.calls.iter().rposition(|c| c.key == key && !c.closed)?;
            // Some servers reuse one index for every call; a different id means a new call.
            let other_id =
                id.is_some_and(|id| !self.calls[slot].id.is_empty() && self.calls[slot].id != id);
            return (!other_id).then_some(slot);
        }
        if let Some(id) = id {
            return self
                .calls
                .iter()
                .rposition(|c| c.id == id && !c.closed)
                .or_else(|| {
                    // An id that arrives after the name, for the latest nameless-id call.
                    let last = self.calls.len().checked_sub(1)?;
                    let call = &self.calls[last];
                    (call.id.is_empty()
                        && !call.closed
                        && name.is_none_or(|n| n == call.name)
                        && !call.complete())
                    .then_some(last)
                });
        }
        let last = self.calls.len().checked_sub(1)?;
        let call = &self.calls[last];
        if call.closed {
            return None;
        }
        match name {
            // A name starts a new call, unless it repeats the name of an unfinished one.
            Some(name) => (call.name == name && !call.complete()).then_some(last),
            None => Some(last),
        }
    }

    /// `ToolCallEnd` for every open call (starting any that never got a name).
    fn close_calls(&mut self, events: &mut Vec<ModelEvent>) {
        for (index, call) in self.calls.iter_mut().enumerate() {
            if call.closed {
                continue;
            }
            if !call.started {
                call.started = true;
                events.push(ModelEvent::ToolCallStart {
                    index,
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
                if !call.arguments.is_empty() {
                    events.push(ModelEvent::ToolCallDelta {
                        index,
                        arguments: std::mem::take(&mut call.arguments),
                    });
                }
            }
            call.closed = true;
            events.push(ModelEvent::ToolCallEnd { index });
        }
    }

    /// The last events: open calls closed, then `Done` (or `Error` for a filtered reply). Empty when called
    /// twice.
    fn finish(&mut self) -> Vec<ModelEvent> {
        let mut events = Vec::new();
        self.close_calls(&mut events);
        let has_calls = !self.calls.is_empty();
        let stop_reason = match self.finish_reason.as_deref() {
            Some("length") => StopReason::Length,
            Some("content_filter") => {
                events.push(ModelEvent::Error(
                    "the server stopped the reply with finish_reason \"content_filter\"".into(),
                ));
                return events;
            }
            _ if has_calls => StopReason::ToolUse,
            _ => StopReason::Stop,
        };
        events.push(ModelEvent::Done {
            stop_reason,
            usage: self.usage,
        });
        events
    }
}

impl CallState {
    /// Whether the arguments so far are a whole JSON value (never, for a call with an index: its
    /// arguments are not kept).
    fn complete(&self) -> bool {
        self.key.is_none()
            && !self.arguments.trim().is_empty()
            && serde_json::from_str::<serde::de::IgnoredAny>(&self.arguments).is_ok()
    }
}

/// Feeds `chunks` (the `data:` payloads of one stream, in order) to the streaming parser and returns
/// every event it made, the error that ended the stream included. For the fuzz harness; not public API.
#[doc(hidden)]
pub fn parse_chunks_for_fuzzing<'a>(chunks: impl IntoIterator<Item = &'a str>) -> Vec<ModelEvent> {
    transport::parse_all(
        ChunkParser::default(),
        chunks.into_iter().map(|data| ("", data)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&str]) -> Vec<ModelEvent> {
        let mut parser = ChunkParser::default();
        let mut events = Vec::new();
        for chunk in chunks {
            events.extend(parser.chunk((*chunk).into()).unwrap());
        }
        events.extend(parser.finish());
        events
    }

    #[test]
    fn a_repeated_name_without_index_continues_an_unfinished_call() {
        let events = parse(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"read","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"read","arguments":"th\":1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"read","arguments":"{}"}}]}}]}"#,
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::ToolCallStart {
                    index: 0,
                    id: String::new(),
                    name: "read".into()
                },
                ModelEvent::ToolCallDelta {
                    index: 0,
                    arguments: "{\"pa".into()
                },
                ModelEvent::ToolCallDelta {
                    index: 0,
                    arguments: "th\":1}".into()
                },
                ModelEvent::ToolCallStart {
                    index: 1,
                    id: String::new(),
                    name: "read".into()
                },
                ModelEvent::ToolCallDelta {
                    index: 1,
                    arguments: "{}".into()
                },
                ModelEvent::ToolCallEnd { index: 0 },
                ModelEvent::ToolCallEnd { index: 1 },
                ModelEvent::Done {
                    stop_reason: StopReason::ToolUse,
                    usage: Usage::default()
                },
            ]
        );
    }

    #[test]
    fn a_call_with_an_index_is_continued_by_an_index_less_piece_that_repeats_its_name() {
        // Its arguments are not kept, so whether they are whole is not asked: the piece continues it.
        let events = parse(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"{\"a\""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"x","arguments":":1}"}}]}}]}"#,
        ]);
        let starts = events
            .iter()
            .filter(|event| matches!(event, ModelEvent::ToolCallStart { .. }))
            .count();
        let arguments: String = events
            .iter()
            .filter_map(|event| match event {
                ModelEvent::ToolCallDelta {
                    index: 0,
                    arguments,
                } => Some(arguments.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!((starts, arguments.as_str()), (1, r#"{"a":1}"#));
    }

    #[test]
    fn a_reused_index_with_a_new_id_is_a_new_call() {
        let events = parse(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"y","arguments":"{}"}}]}}]}"#,
        ]);
        assert_eq!(
            events[..4],
            [
                ModelEvent::ToolCallStart {
                    index: 0,
                    id: "a".into(),
                    name: "x".into()
                },
                ModelEvent::ToolCallDelta {
                    index: 0,
                    arguments: "{}".into()
                },
                ModelEvent::ToolCallStart {
                    index: 1,
                    id: "b".into(),
                    name: "y".into()
                },
                ModelEvent::ToolCallDelta {
                    index: 1,
                    arguments: "{}".into()
                },
            ]
        );
    }

    #[test]
    fn a_call_whose_name_comes_late_starts_when_it_comes() {
        let events = parse(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"arguments":"{\"a\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"add","arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(
            events,
            vec![
                ModelEvent::ToolCallStart {
                    index: 0,
                    id: "c1".into(),
                    name: "add".into()
                },
                ModelEvent::ToolCallDelta {
                    index: 0,
                    arguments: "{\"a\":1}".into()
                },
                ModelEvent::ToolCallEnd { index: 0 },
                ModelEvent::Done {
                    stop_reason: StopReason::ToolUse,
                    usage: Usage::default()
                },
            ]
        );
    }
}
