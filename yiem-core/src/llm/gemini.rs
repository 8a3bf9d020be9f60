//! [`GeminiModel`]: a [`Model`] over Gemini's `streamGenerateContent` with server-sent events
//! (`POST <base_url>/models/<model>:streamGenerateContent?alt=sse`), on the shared transport. This module
//! holds the wire format only: the request body and the reading of each streamed
//! `GenerateContentResponse` (`candidates[0].content.parts`, `finishReason`, `usageMetadata`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::config::ConfigError;
use super::failure::{error_text, preview};
use super::gemini_format::to_gemini_contents;
use super::retry::RetryPolicy;
use super::transport::{self, StreamParser, http_config};
use super::{Model, ModelEvent, ModelRequest, ModelStream};
use crate::dialect::{Dialect, DialectError};
use crate::message::StopReason;
use crate::result::Usage;

/// Gemini's API base URL.
pub(crate) const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// Where and how a [`GeminiModel`] sends its requests.
///
/// ```
/// use yiem_core::llm::GeminiConfig;
///
/// let config = GeminiConfig::new("AIza-test", "gemini-2.5-flash")
///     .with_base_url("http://127.0.0.1:8080/v1beta")
///     .with_generation("temperature", serde_json::json!(0.2));
/// assert_eq!(config.generation_config["temperature"], 0.2);
/// assert!(!format!("{config:?}").contains("AIza-test"));
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct GeminiConfig {
    /// The base URL (default `https://generativelanguage.googleapis.com/v1beta`); requests go to
    /// `<base_url>/models/<model>:streamGenerateContent?alt=sse`.
    pub base_url: String,
    /// The API key, sent as `x-goog-api-key` (never in the URL, so error texts do not show it).
    pub api_key: String,
    /// The model name (`gemini-2.5-flash`; a leading `models/` is fine).
    pub model: String,
    /// `generationConfig` fields (`temperature`, `maxOutputTokens`, `thinkingConfig`, ...).
    pub generation_config: Map<String, Value>,
    /// More top-level request fields (`toolConfig`, `safetySettings`, ...); they override the client's
    /// own fields of the same name.
    pub extra_body: Map<String, Value>,
    /// Which tools the model may or must call, in requests that carry tools (default
    /// [`ToolChoice::Auto`](crate::llm::ToolChoice::Auto): nothing is sent).
    pub tool_choice: super::ToolChoice,
    /// Retries on 429, 5xx and connection failures.
    pub retry: RetryPolicy,
    /// The longest wait for a TCP (and TLS) connection (default 30 s).
    pub connect_timeout: Duration,
    /// The longest wait for the response headers (default 300 s).
    pub response_timeout: Duration,
    /// The longest silence between two pieces of the stream (default 300 s).
    pub idle_timeout: Duration,
    /// The longest time to read one whole reply, from its response headers to its end (default 30
    /// minutes).
    pub reply_timeout: Duration,
    /// The largest event of a stream, or body of a server that does not stream, in bytes (default
    /// 64 MiB).
    pub max_event_bytes: usize,
}

impl fmt::Debug for GeminiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeminiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("model", &self.model)
            .field("generation_config", &self.generation_config)
            .field("extra_body", &self.extra_body)
            .field("tool_choice", &self.tool_choice)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

http_config!(GeminiConfig);

impl GeminiConfig {
    /// A configuration for `model` with `api_key` at Gemini's API, with the default limits.
    pub fn new(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        GeminiConfig {
            base_url: GEMINI_BASE_URL.to_owned(),
            api_key: api_key.into(),
            model: model.into(),
            generation_config: Map::new(),
            extra_body: Map::new(),
            tool_choice: super::ToolChoice::Auto,
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(30),
            response_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(300),
            reply_timeout: transport::DEFAULT_REPLY_TIMEOUT,
            max_event_bytes: transport::DEFAULT_MAX_EVENT_BYTES,
        }
    }

    /// Sends requests to `base_url` instead (a proxy, a gateway, a test server).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Sets a `generationConfig` field.
    pub fn with_generation(mut self, key: impl Into<String>, value: Value) -> Self {
        self.generation_config.insert(key.into(), value);
        self
    }

    fn endpoint(&self) -> Result<String, ConfigError> {
        let base = transport::checked_base(&self.base_url)?;
        let model = self.model.trim().trim_start_matches("models/");
        Ok(format!(
            "{base}/models/{model}:streamGenerateContent?alt=sse"
        ))
    }
}

/// A [`Model`] that streams replies from Gemini's `streamGenerateContent`.
///
/// Each request is a `POST` with `x-goog-api-key` and a body of `contents` (see
/// [`to_gemini_contents`](crate::llm::to_gemini_contents): calls and results as `functionCall` /
/// `functionResponse` parts, thought signatures carried back), `systemInstruction` (when the prompt is
/// not empty), `tools: [{"functionDeclarations": [...]}]` in the [`Dialect::Gemini`] dialect,
/// `generationConfig` (when set) and the extra fields.
///
/// Each streamed response becomes [`ModelEvent`]s: `text` parts as text (or thinking when `thought` is
/// true), a `thoughtSignature` as `ThinkingSignature` (before the call it signs; after the text it came
/// with), each `functionCall` part as a whole call (`ToolCallStart`, one `ToolCallDelta` with its `args`,
/// the partial arguments, `ToolCallEnd`) with Gemini's `id`, or an empty id (a fresh one is made) where
/// Gemini gives none. (The Gemini API always sends a call whole: `partialArgs` and
/// `streamFunctionCallArguments` exist only on Vertex AI.) `finishReason` maps `STOP` → `Stop` (`ToolUse` with calls), `MAX_TOKENS` →
/// `Length`, and every other reason (`SAFETY`, `RECITATION`, `MALFORMED_FUNCTION_CALL`, ...) to an error
/// `the server stopped the reply with finishReason "SAFETY"`; a prompt blocked by `promptFeedback` is an
/// error naming its `blockReason`. Usage: `promptTokenCount` → input, `candidatesTokenCount` +
/// `thoughtsTokenCount` → output, `cachedContentTokenCount` → cache reads. A stream that ends without a
/// `finishReason` is an error; an `{"error": ...}` object in the stream ends it with its message.
/// Retries and the other failures are those of the shared transport (see
/// [`RetryPolicy`](crate::llm::RetryPolicy)); every failure is one `Error` starting `POST <url> failed: `.
///
/// ```
/// use yiem_core::llm::{GeminiConfig, GeminiModel};
///
/// let model = GeminiModel::new(GeminiConfig::new("key", "models/gemini-2.5-flash")).unwrap();
/// assert_eq!(
///     model.endpoint(),
///     "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
/// );
/// ```
#[derive(Clone)]
pub struct GeminiModel {
    config: Arc<GeminiConfig>,
    endpoint: Arc<str>,
    client: reqwest::Client,
}

impl fmt::Debug for GeminiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeminiModel")
            .field("endpoint", &self.endpoint)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl GeminiModel {
    /// A client for `config`; fails on a base URL that is not http(s) or when the HTTP client cannot start.
    pub fn new(config: GeminiConfig) -> Result<Self, ConfigError> {
        let endpoint = config.endpoint()?;
        let client = transport::client(config.connect_timeout).map_err(ConfigError::Client)?;
        Ok(GeminiModel {
            config: Arc::new(config),
            endpoint: endpoint.into(),
            client,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &GeminiConfig {
        &self.config
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The JSON body sent for `request`. Fails when a tool cannot be described in the Gemini dialect.
    pub fn request_body(&self, request: &ModelRequest) -> Result<Value, DialectError> {
        let request = &*request.without_code_only();
        let mut body = Map::new();
        body.insert(
            "contents".into(),
            Value::Array(to_gemini_contents(&request.messages)),
        );
        if !request.system_prompt.is_empty() {
            body.insert(
                "systemInstruction".into(),
                json!({"parts": [{"text": request.system_prompt}]}),
            );
        }
        if !request.tools.is_empty() {
            body.insert("tools".into(), request.tools.definitions(Dialect::Gemini)?);
            if let Some(config) = request.tool_choice_or(&self.config.tool_choice).gemini() {
                body.insert("toolConfig".into(), config);
            }
        }
        if !self.config.generation_config.is_empty() {
            body.insert(
                "generationConfig".into(),
                Value::Object(self.config.generation_config.clone()),
            );
        }
        for (key, value) in &self.config.extra_body {
            body.insert(key.clone(), value.clone());
        }
        Ok(Value::Object(body))
    }
}

impl Model for GeminiModel {
    fn name(&self) -> &str {
        &self.config.model
    }

    fn provider_name(&self) -> &str {
        "gcp.gemini"
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let body = match self.request_body(&request) {
            Ok(body) => serde_json::to_vec(&body).unwrap_or_default(),
            Err(error) => return transport::refused(self.config.model.clone(), error.to_string()),
        };
        let request = transport::Request {
            client: self.client.clone(),
            url: Arc::clone(&self.endpoint),
            headers: vec![("x-goog-api-key", self.config.api_key.clone())],
            body,
            settings: self.config.settings(),
            model: self.config.model.clone(),
        };
        transport::stream(request, ResponseParser::default(), cancel)
    }
}

/// Turns streamed `GenerateContentResponse`s into [`ModelEvent`]s.
#[derive(Default)]
struct ResponseParser {
    calls: usize,
    finish_reason: Option<String>,
    usage: Usage,
    chunks: usize,
    finished: bool,
}

impl ResponseParser {
    fn response(&mut self, response: &Value) -> Result<Vec<ModelEvent>, String> {
        if let Some(error) = response.get("error").filter(|e| !e.is_null()) {
            return Err(format!(
                "the server reported an error in the stream: {}",
                error_text(response).unwrap_or_else(|| preview(&error.to_string()))
            ));
        }
        if let Some(usage) = response.get("usageMetadata") {
            let number = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Usage::new(
                number("promptTokenCount"),
                number("candidatesTokenCount") + number("thoughtsTokenCount"),
            )
            .cache(number("cachedContentTokenCount"), 0);
        }
        let candidate = response
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|candidates| candidates.first());
        let Some(candidate) = candidate else {
            if let Some(reason) = response
                .pointer("/promptFeedback/blockReason")
                .and_then(Value::as_str)
            {
                return Err(format!(
                    "the server blocked the prompt with blockReason {reason:?}"
                ));
            }
            return Ok(Vec::new());
        };
        let mut events = Vec::new();
        let parts = candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for part in parts {
            self.part(part, &mut events);
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        Ok(events)
    }

    fn part(&mut self, part: &Value, events: &mut Vec<ModelEvent>) {
        let signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(|s| ModelEvent::ThinkingSignature(s.to_owned()));
        if let Some(call) = part.get("functionCall").filter(|c| c.is_object()) {
            // The signature belongs to the call: it goes before it, so it is sent back on it.
            events.extend(signature);
            let slot = self.calls;
            self.calls += 1;
            let text = |key: &str| call.get(key).and_then(Value::as_str).unwrap_or_default();
            events.push(ModelEvent::ToolCallStart {
                index: slot,
                id: text("id").to_owned(),
                name: text("name").to_owned(),
            });
            let arguments = call
                .get("args")
                .filter(|args| !args.is_null())
                .map_or_else(|| "{}".to_owned(), Value::to_string);
            events.push(ModelEvent::ToolCallDelta {
                index: slot,
                arguments,
            });
            events.push(ModelEvent::ToolCallEnd { index: slot });
            return;
        }
        if let Some(text) = part.get("text").and_then(Value::as_str)
            && !text.is_empty()
        {
            if part.get("thought").and_then(Value::as_bool) == Some(true) {
                events.push(ModelEvent::ThinkingDelta(text.to_owned()));
            } else {
                events.push(ModelEvent::TextDelta(text.to_owned()));
            }
        }
        // A signature on a text part (or alone) follows it, where it is sent back on its own part.
        events.extend(signature);
    }
}

impl StreamParser for ResponseParser {
    fn event(&mut self, _name: &str, data: &str) -> Result<Vec<ModelEvent>, String> {
        self.chunks += 1;
        let response: Value = serde_json::from_str(data).map_err(|error| {
            format!(
                "chunk {} is not JSON ({error}): {}",
                self.chunks,
                preview(data)
            )
        })?;
        self.response(&response)
    }

    fn body(&mut self, data: &str) -> Result<Vec<ModelEvent>, String> {
        // Without `alt=sse` the stream is one JSON array of responses; `generateContent` answers one.
        let value: Value = serde_json::from_str(data)
            .map_err(|error| format!("the body is not JSON ({error}): {}", preview(data)))?;
        let responses = match value {
            Value::Array(items) => items,
            other => vec![other],
        };
        let mut events = Vec::new();
        for response in &responses {
            self.chunks += 1;
            events.extend(self.response(response)?);
        }
        Ok(events)
    }

    fn ended(&self) -> bool {
        false
    }

    fn complete(&self) -> bool {
        self.finish_reason.is_some()
    }

    fn chunks(&self) -> usize {
        self.chunks
    }

    fn finish(&mut self) -> Vec<ModelEvent> {
        if self.finished {
            return Vec::new();
        }
        self.finished = true;
        let stop_reason = match self.finish_reason.as_deref() {
            Some("MAX_TOKENS") => StopReason::Length,
            Some("STOP") | Some("FINISH_REASON_UNSPECIFIED") if self.calls > 0 => {
                StopReason::ToolUse
            }
            Some("STOP") | Some("FINISH_REASON_UNSPECIFIED") => StopReason::Stop,
            Some(other) => {
                return vec![ModelEvent::Error(format!(
                    "the server stopped the reply with finishReason {other:?}"
                ))];
            }
            None => {
                return vec![ModelEvent::Error(
                    "the stream ended before the reply was complete (no finishReason)".into(),
                )];
            }
        };
        vec![ModelEvent::Done {
            stop_reason,
            usage: self.usage,
        }]
    }
}

/// Parses a stream of `streamGenerateContent` responses as the client would; for the fuzz harness.
#[doc(hidden)]
pub fn parse_responses_for_fuzzing<'a>(
    responses: impl IntoIterator<Item = &'a str>,
) -> Vec<ModelEvent> {
    transport::parse_all(
        ResponseParser::default(),
        responses.into_iter().map(|data| ("", data)),
    )
}
