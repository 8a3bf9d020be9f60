//! [`GeminiModel`]: a [`Model`](crate::llm::Model) over Gemini's `streamGenerateContent` with server-sent events
//! (`POST <base_url>/models/<model>:streamGenerateContent?alt=sse`), on the shared transport. This module
//! holds the wire format only: the request body and the reading of each streamed
//! `GenerateContentResponse` (`candidates[0].content.parts`, `finishReason`, `usageMetadata`).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::format::to_gemini_contents;
use crate::dialect::{Dialect, DialectError};
use crate::llm::transport::config::{ClientConfig, ConfigError};
use crate::llm::transport::failure::{error_text, preview};
use crate::llm::transport::{self, EventData, StreamParser, client_setters};
use crate::llm::{ModelEvent, ModelRequest};
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
///     .base_url("http://127.0.0.1:8080/v1beta")
///     .generation("temperature", serde_json::json!(0.2));
/// assert_eq!(config.generation_config["temperature"], 0.2);
/// assert!(!format!("{config:?}").contains("AIza-test"));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GeminiConfig {
    /// Where requests go (default `https://generativelanguage.googleapis.com/v1beta`; requests go to
    /// `<base_url>/models/<model>:streamGenerateContent?alt=sse`), the key (sent as `x-goog-api-key`,
    /// never in the URL, so error texts do not show it), the model (`gemini-2.5-flash`; a leading
    /// `models/` is fine), and the retries, timeouts and limits. Its `extra_body` holds more top-level
    /// request fields (`toolConfig`, `safetySettings`, ...).
    pub client: ClientConfig,
    /// `generationConfig` fields (`temperature`, `maxOutputTokens`, `thinkingConfig`, ...).
    pub generation_config: Map<String, Value>,
}

client_setters!(GeminiConfig);

impl GeminiConfig {
    /// A configuration for `model` with `api_key` at Gemini's API, with the default limits.
    pub fn new(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        let mut client = ClientConfig::new(GEMINI_BASE_URL, model);
        client.api_key = Some(api_key.into());
        GeminiConfig {
            client,
            generation_config: Map::new(),
        }
    }

    /// Sets a `generationConfig` field.
    pub fn generation(mut self, key: impl Into<String>, value: Value) -> Self {
        self.generation_config.insert(key.into(), value);
        self
    }
}

/// A [`Model`](crate::llm::Model) that streams replies from Gemini's `streamGenerateContent`.
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
#[derive(Clone, Debug)]
pub struct GeminiModel {
    config: Arc<GeminiConfig>,
    transport: transport::Client,
}

impl GeminiModel {
    /// A client for `config`; fails on a base URL that is not http(s) or when the HTTP client cannot start.
    pub fn new(config: GeminiConfig) -> Result<Self, ConfigError> {
        let model = config.client.model.trim().trim_start_matches("models/");
        let endpoint = |base: &str| format!("{base}/models/{model}:streamGenerateContent?alt=sse");
        Ok(GeminiModel {
            transport: transport::Client::new(&config.client, endpoint)?,
            config: Arc::new(config),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &GeminiConfig {
        &self.config
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        self.transport.endpoint()
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
            if let Some(config) = request
                .tool_choice_or(&self.config.client.tool_choice)
                .gemini()
            {
                body.insert("toolConfig".into(), config);
            }
        }
        if !self.config.generation_config.is_empty() {
            body.insert(
                "generationConfig".into(),
                Value::Object(self.config.generation_config.clone()),
            );
        }
        self.config.client.add_extra(&mut body);
        Ok(Value::Object(body))
    }
}

impl transport::Provider for GeminiModel {
    const NAME: &'static str = "gcp.gemini";
    type Parser = ResponseParser;

    fn headers(&self) -> Vec<(&'static str, String)> {
        let key = self.config.client.api_key.iter();
        key.map(|key| ("x-goog-api-key", key.clone())).collect()
    }

    fn body(&self, request: &ModelRequest) -> Result<impl transport::Body, DialectError> {
        self.request_body(request)
    }

    fn parser(&self) -> ResponseParser {
        ResponseParser::default()
    }

    fn connection(&self) -> (&ClientConfig, &transport::Client) {
        (&self.config.client, &self.transport)
    }
}

/// Turns streamed `GenerateContentResponse`s into [`ModelEvent`]s.
#[derive(Default)]
pub(crate) struct ResponseParser {
    calls: usize,
    finish_reason: Option<String>,
    usage: Usage,
    chunks: usize,
}

impl ResponseParser {
    fn response(&mut self, response: &mut Value) -> Result<Vec<ModelEvent>, String> {
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
            .get_mut("candidates")
            .and_then(Value::as_array_mut)
            .and_then(|candidates| candidates.first_mut());
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
        if let Some(parts) = candidate
            .pointer_mut("/content/parts")
            .and_then(Value::as_array_mut)
        {
            for part in parts {
                self.part(part, &mut events);
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        Ok(events)
    }

    /// The events of one part, its text moved out of it.
    fn part(&mut self, part: &mut Value, events: &mut Vec<ModelEvent>) {
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
        let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
        let text = transport::take_str(part, "text");
        if !text.is_empty() {
            if thought {
                events.push(ModelEvent::ThinkingDelta(text));
            } else {
                events.push(ModelEvent::TextDelta(text));
            }
        }
        // A signature on a text part (or alone) follows it, where it is sent back on its own part.
        events.extend(signature);
    }
}

impl StreamParser for ResponseParser {
    fn event(&mut self, _name: &str, mut data: EventData) -> Result<Vec<ModelEvent>, String> {
        self.chunks += 1;
        let mut response = data.json().map_err(|error| {
            format!(
                "chunk {} is not JSON ({error}): {}",
                self.chunks,
                preview(&data)
            )
        })?;
        self.response(&mut response)
    }

    fn body(&mut self, mut data: EventData) -> Result<Vec<ModelEvent>, String> {
        // Without `alt=sse` the stream is one JSON array of responses; `generateContent` answers one.
        let value = data
            .json()
            .map_err(|error| format!("the body is not JSON ({error}): {}", preview(&data)))?;
        let mut responses = match value {
            Value::Array(items) => items,
            other => vec![other],
        };
        let mut events = Vec::new();
        for response in &mut responses {
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
