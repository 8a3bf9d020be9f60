//! [`OpenAiResponsesModel`]: a [`Model`](crate::llm::Model) over OpenAI's Responses API (`POST <base_url>/responses`,
//! streamed), on the shared transport. This module holds the configuration and the request body;
//! `stream.rs` reads the stream's events, and [`to_responses_input`](crate::llm::to_responses_input) renders the conversation.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::format::{render, response_id};
use super::stream::EventParser;
use crate::catalog::{self, ToolSearchMode};
use crate::dialect::{Dialect, DialectError};
use crate::llm::openai::{API_KEY_ENV, BASE_URL_ENV, MODEL_ENV};
use crate::llm::transport::config::{ClientConfig, ConfigError};
use crate::llm::transport::{self, client_setters, server_tool_setters};
use crate::llm::{ModelRequest, ProgrammaticCalling};
use crate::message::AgentMessage;
use crate::tool::definition::AgentTool;

/// OpenAI's API base URL, where requests go when no other is given.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The model used when `YIEM_MODEL` is not set.
pub const DEFAULT_RESPONSES_MODEL: &str = "gpt-5-mini";

/// Where and how an [`OpenAiResponsesModel`] sends its requests.
///
/// Stateless by default: every request carries the whole conversation with `store: false`, and asks
/// for reasoning items' `encrypted_content` so they can go back with it.
///
/// ```
/// use yiem_core::llm::OpenAiResponsesConfig;
///
/// let config = OpenAiResponsesConfig::new("gpt-5-mini")
///     .api_key("sk-test")
///     .extra("reasoning", serde_json::json!({"effort": "low", "summary": "auto"}));
/// assert_eq!(config.client.base_url, "https://api.openai.com/v1");
/// assert!(!config.store && !config.previous_response_id && config.encrypted_reasoning);
/// assert!(!format!("{config:?}").contains("sk-test"));
///
/// // Let the server keep the conversation: each request names the last reply's response.
/// let chained = OpenAiResponsesConfig::new("gpt-5-mini").chain_responses();
/// assert!(chained.store && chained.previous_response_id);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OpenAiResponsesConfig {
    /// Where requests go (default `https://api.openai.com/v1`; requests go to `<base_url>/responses`, a
    /// URL that already ends in `/responses` is used as it is), the key (sent as `Authorization: Bearer
    /// <key>`; local servers need none), the model, and the retries, timeouts and limits.
    pub client: ClientConfig,
    /// `store`: whether the server keeps the responses (default false).
    pub store: bool,
    /// Send `previous_response_id` (the last reply's response) and only the messages after that reply,
    /// instead of the whole conversation (default false; needs `store`).
    pub previous_response_id: bool,
    /// Ask for reasoning items' `encrypted_content` (`include: ["reasoning.encrypted_content"]`, default
    /// true), which a request that is not stored needs to carry a reasoning model's reasoning from one
    /// turn to the next. Turn off for models or servers that refuse the field.
    pub encrypted_reasoning: bool,
    /// Describe tools in strict mode ([`Dialect::OpenAiStrict`], `strict: true`; default false, tools
    /// go in [`Dialect::OpenAi`] with `strict: false`).
    pub strict_tools: bool,
    /// Whether OpenAI's own tool search (`{"type": "tool_search"}`) finds deferred tools — every deferred
    /// definition goes with `defer_loading: true`, and the model's searches come back as
    /// `tool_search_call` and `tool_search_output` items, whose tools are loaded — or the local
    /// [`search_tools`](crate::catalog::SEARCH_TOOLS) tool (default [`ToolSearchMode::Auto`]: OpenAI's
    /// on GPT-5.4 and later; see [`catalog`](crate::catalog)).
    pub tool_search: ToolSearchMode,
    /// Programmatic tool calling (default `None`, off): the model calls tools from programs it runs on
    /// OpenAI's side. Requests that carry tools add `{"type": "programmatic_tool_calling"}` and give
    /// each function tool `calling` allows `allowed_callers: ["direct", "programmatic"]` (the model can
    /// still call it itself). A call a program makes comes back as a `function_call` item with its
    /// `caller` (`{"type": "program", "caller_id"}`), becomes a [`ToolCall`](crate::exec::ToolCall) with
    /// that [`ToolCaller`](crate::exec::ToolCaller), runs through the pipeline like any other, and goes
    /// back with its caller. The `program` item itself is kept as a provider block and goes back
    /// unchanged. See [`ProgrammaticCalling`] for an example.
    pub programmatic_calling: Option<ProgrammaticCalling>,
}

client_setters!(OpenAiResponsesConfig);
server_tool_setters!(OpenAiResponsesConfig);

/// Whether the OpenAI model `model` has the `tool_search` tool, by its name: GPT-5.4 and later
/// (`gpt-5.4`, `gpt-5.5-mini`, `gpt-6`).
fn has_tool_search(model: &str) -> bool {
    catalog::model_version(model, "gpt-").is_some_and(|version| version >= (5, 4))
}

impl OpenAiResponsesConfig {
    /// A stateless configuration for `model` at OpenAI's API, without an API key, with the default
    /// retries and timeouts.
    pub fn new(model: impl Into<String>) -> Self {
        OpenAiResponsesConfig {
            client: ClientConfig::new(OPENAI_BASE_URL, model),
            store: false,
            previous_response_id: false,
            encrypted_reasoning: true,
            strict_tools: false,
            tool_search: ToolSearchMode::Auto,
            programmatic_calling: None,
        }
    }

    /// Reads `YIEM_BASE_URL` (default OpenAI's API), `OPENAI_API_KEY` (required at OpenAI's API,
    /// optional elsewhere) and `YIEM_MODEL` (default [`DEFAULT_RESPONSES_MODEL`]) from the environment;
    /// an empty variable counts as unset.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), reading the variables through `lookup`.
    ///
    /// ```
    /// use yiem_core::llm::{ConfigError, OpenAiResponsesConfig};
    ///
    /// let local = OpenAiResponsesConfig::from_lookup(|name| {
    ///     (name == "YIEM_BASE_URL").then(|| "http://localhost:8000/v1".to_owned())
    /// })
    /// .unwrap();
    /// assert_eq!(local.client.model, "gpt-5-mini");
    /// assert_eq!(local.client.api_key, None);
    ///
    /// let error = OpenAiResponsesConfig::from_lookup(|_| None).unwrap_err();
    /// assert_eq!(error.to_string(), "`OPENAI_API_KEY` is not set: set it to your API key");
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let var = |name: &str| {
            lookup(name)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
        };
        let model = var(MODEL_ENV).unwrap_or_else(|| DEFAULT_RESPONSES_MODEL.to_owned());
        let mut config = OpenAiResponsesConfig::new(model);
        config.client.api_key = var(API_KEY_ENV);
        match var(BASE_URL_ENV) {
            Some(url) => config.client.base_url = url,
            None if config.client.api_key.is_none() => {
                return Err(ConfigError::MissingApiKey {
                    variable: API_KEY_ENV,
                });
            }
            None => {}
        }
        Ok(config)
    }

    /// Stores the responses and chains the requests with `previous_response_id` (see
    /// [`previous_response_id`](Self::previous_response_id)).
    pub fn chain_responses(mut self) -> Self {
        self.store = true;
        self.previous_response_id = true;
        self
    }

    /// Sets [`encrypted_reasoning`](field@Self::encrypted_reasoning).
    pub fn encrypted_reasoning(mut self, on: bool) -> Self {
        self.encrypted_reasoning = on;
        self
    }

    /// Sets [`strict_tools`](field@Self::strict_tools).
    pub fn strict_tools(mut self, on: bool) -> Self {
        self.strict_tools = on;
        self
    }
}

/// A [`Model`](crate::llm::Model) that streams replies from OpenAI's Responses API.
///
/// Each request is a `POST <base_url>/responses` with `Authorization: Bearer <key>` (when there is a
/// key) and a body of `model`, `instructions` (the system prompt, when not empty), `input` (see
/// [`to_responses_input`](crate::llm::to_responses_input)), `tools` (function tools, `strict: false`
/// unless [`strict_tools`](OpenAiResponsesConfig::strict_tools); free-text tools as custom tools with
/// their `format`), `stream: true`, `store`, `include:
/// ["reasoning.encrypted_content"]` (unless turned off), `previous_response_id` (when chaining) and the
/// extra fields.
///
/// The stream's events become [`ModelEvent`](crate::llm::ModelEvent)s:
///
/// - `response.output_text.delta` → text; `response.reasoning_summary_text.delta` and
///   `response.reasoning_text.delta` → thinking (summary parts apart by a blank line);
/// - a `function_call` item (`response.output_item.added`) → `ToolCallStart` with its `call_id` (and a
///   `ToolCallCaller` when a program made it, see
///   [`OpenAiResponsesConfig::programmatic_calling`]), its
///   `response.function_call_arguments.delta`s → `ToolCallDelta`s (each followed by the partial
///   arguments), its `response.output_item.done` → `ToolCallEnd`; a call whose deltas never came gets
///   its arguments from `.done`;
/// - a `custom_tool_call` item (the call of a free-text tool, sent as a custom tool: see
///   [`TextFormat`](crate::tool::TextFormat)) → the same events, its `input` as the arguments `{"input":
///   "<text>"}`: its `response.custom_tool_call_input.delta`s stream that object's text (each piece escaped
///   as JSON string content, so the partial arguments show the text so far), `"}` closes it;
/// - a finished reasoning item, the item ids of messages and calls, and any other output item (a hosted
///   tool's) → [`ModelEvent::ProviderBlock`](crate::llm::ModelEvent::ProviderBlock)s named `"openai-responses"`, which go back unchanged with
///   the conversation;
/// - `response.completed` → `Done` (`ToolUse` when the reply has calls, else `Stop`) with the usage
///   (`input_tokens` with the cached ones, `output_tokens`, `input_tokens_details.cached_tokens`);
///   `response.incomplete` for `max_output_tokens` → `Done` with `Length`, for another reason → an error;
/// - a refusal (`response.refusal.delta`, or a `refusal` part) → an error `the model refused to answer:
///   <its text>`; `response.failed` → `the response failed: <message>`; an `error` event → `the server
///   reported an error in the stream: <message>`;
/// - event types this client does not know are skipped; an output item without an id is followed by its
///   `output_index`, and a call without a `call_id` gets a fresh id.
///
/// Retries and the other failures are those of [`OpenAiModel`](crate::llm::OpenAiModel)'s table; every
/// failure is one `Error` event starting `POST <url> failed: `.
///
/// ```
/// use yiem_core::{
///     llm::{ModelRequest, OpenAiResponsesConfig, OpenAiResponsesModel}, message::UserMessage,
/// };
///
/// let model = OpenAiResponsesModel::new(OpenAiResponsesConfig::new("gpt-5-mini")).unwrap();
/// assert_eq!(model.endpoint(), "https://api.openai.com/v1/responses");
/// let body = model.request_body(&ModelRequest::new("Be brief.", vec![UserMessage::text("hi").into()])).unwrap();
/// assert_eq!(body, serde_json::json!({
///     "model": "gpt-5-mini",
///     "instructions": "Be brief.",
///     "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
///     "stream": true,
///     "store": false,
///     "include": ["reasoning.encrypted_content"]
/// }));
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiResponsesModel {
    config: Arc<OpenAiResponsesConfig>,
    transport: transport::Client,
}

impl OpenAiResponsesModel {
    /// A client for `config`; fails on a base URL that is not http(s) or when the HTTP client cannot start.
    pub fn new(config: OpenAiResponsesConfig) -> Result<Self, ConfigError> {
        Ok(OpenAiResponsesModel {
            transport: transport::Client::new(&config.client, |base| {
                transport::joined(base, "/responses")
            })?,
            config: Arc::new(config),
        })
    }

    /// A client configured from the environment: see [`OpenAiResponsesConfig::from_env`].
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::new(OpenAiResponsesConfig::from_env()?)
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiResponsesConfig {
        &self.config
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        self.transport.endpoint()
    }

    /// The JSON body sent for `request`. Fails when a tool cannot be described in the tools' dialect.
    pub fn request_body(&self, request: &ModelRequest) -> Result<Value, DialectError> {
        // Code-only tools go only to a sandbox that can call them.
        let request = match &self.config.programmatic_calling {
            Some(_) => std::borrow::Cow::Borrowed(request),
            None => request.without_code_only(),
        };
        let request = &*request;
        let config = &self.config;
        let mut body = Map::new();
        body.insert("model".into(), json!(config.client.model));
        if !request.system_prompt.is_empty() {
            body.insert("instructions".into(), json!(request.system_prompt));
        }
        // With `previous_response_id`, the server has the conversation up to the last reply it made.
        let chained = config
            .previous_response_id
            .then(|| {
                request
                    .messages
                    .iter()
                    .enumerate()
                    .rev()
                    .find_map(|(index, message)| match message {
                        AgentMessage::Assistant(reply) => response_id(reply).map(|id| (index, id)),
                        _ => None,
                    })
            })
            .flatten();
        let from = chained.map_or(0, |(index, _)| index + 1);
        // A call of a tool this request sends as a custom tool goes back as a custom tool's call.
        let custom_tool = |name: &str| {
            request
                .tools
                .iter()
                .chain(request.deferred.iter())
                .any(|tool| tool.name() == name && tool.provider_options().free_text.is_some())
        };
        let rendered = render(&request.messages, from, config.store, &custom_tool);
        for note in &rendered.notes {
            tracing::warn!(model = %config.client.model, "{note}");
        }
        body.insert("input".into(), Value::Array(rendered.items));
        if let Some((_, id)) = chained {
            body.insert("previous_response_id".into(), json!(id));
        }
        if !request.tools.is_empty() || !request.deferred.is_empty() {
            body.insert("tools".into(), self.tools(request)?);
            if let Some(choice) = request
                .tool_choice_or(&config.client.tool_choice)
                .openai_responses(&custom_tool)
            {
                body.insert("tool_choice".into(), choice);
            }
        }
        body.insert("stream".into(), json!(true));
        body.insert("store".into(), json!(config.store));
        if config.encrypted_reasoning {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
        config.client.add_extra(&mut body);
        Ok(Value::Object(body))
    }

    /// The tools: function tools, the chat-completions definitions flattened (`{"type": "function",
    /// "name", "description", "parameters", "strict"}`), and free-text tools as custom tools (`{"type":
    /// "custom", "name", "description", "format"}`).
    fn tools(&self, request: &ModelRequest) -> Result<Value, DialectError> {
        let dialect = if self.config.strict_tools {
            Dialect::OpenAiStrict
        } else {
            Dialect::OpenAi
        };
        let entry = |tool: &AgentTool| -> Result<Value, DialectError> {
            let mut entry = Map::new();
            if let Some(format) = &tool.provider_options().free_text {
                entry.insert("type".into(), json!("custom"));
                entry.insert("name".into(), json!(tool.name()));
                entry.insert("description".into(), json!(tool.description()));
                entry.insert("format".into(), format.openai_format());
                return Ok(Value::Object(entry));
            }
            entry.insert("type".into(), json!("function"));
            if let Some(Value::Object(function)) = tool.definition(dialect)?.get("function") {
                entry.extend(function.clone());
            }
            entry
                .entry("strict")
                .or_insert(json!(self.config.strict_tools));
            Ok(Value::Object(entry))
        };
        // With deferred tools and OpenAI's own search: the search tool, then the deferred tools.
        let native = self
            .config
            .tool_search
            .native(&self.config.client.model, has_tool_search);
        let searched = match native {
            true => crate::llm::provider_search(request, entry)?,
            false => None,
        };
        let (tools, deferred) = match searched {
            Some((tools, deferred)) => (tools, Some(deferred)),
            None => (request.tools.clone(), None),
        };
        let mut tools = tools.iter().map(entry).collect::<Result<Vec<_>, _>>()?;
        if let Some(deferred) = deferred {
            tools.push(json!({"type": "tool_search"}));
            tools.extend(namespaced(&request.deferred, deferred));
        }
        if let Some(calling) = &self.config.programmatic_calling {
            calling.mark(
                tools.iter_mut(),
                request,
                &json!(["direct", "programmatic"]),
                &json!(["programmatic"]),
            );
            tools.push(json!({"type": "programmatic_tool_calling"}));
        }
        Ok(Value::Array(tools))
    }
}

/// The deferred tools' entries, those of a namespace ([`ProviderOptions::namespace`](crate::tool::ProviderOptions),
/// an MCP server's tools) grouped in one `{"type": "namespace", "name", "description", "tools"}` entry
/// where its first tool is, the others as they are.
fn namespaced(tools: &crate::store::registry::ToolList, entries: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(entries.len());
    let mut groups: Vec<(String, usize)> = Vec::new();
    for (tool, entry) in tools.iter().zip(entries) {
        let Some(namespace) = &tool.provider_options().namespace else {
            out.push(entry);
            continue;
        };
        match groups.iter().find(|(name, _)| *name == namespace.name) {
            Some((_, at)) => {
                if let Some(Value::Array(members)) = out[*at].get_mut("tools") {
                    members.push(entry);
                }
            }
            None => {
                groups.push((namespace.name.clone(), out.len()));
                out.push(json!({
                    "type": "namespace",
                    "name": namespace.name,
                    "description": namespace.description,
                    "tools": [entry],
                }));
            }
        }
    }
    out
}

impl transport::Provider for OpenAiResponsesModel {
    const NAME: &'static str = "openai";
    type Parser = EventParser;

    fn headers(&self) -> Vec<(&'static str, String)> {
        transport::bearer(self.config.client.api_key.as_deref())
    }

    fn body(&self, request: &ModelRequest) -> Result<impl transport::Body, DialectError> {
        self.request_body(request)
    }

    fn parser(&self) -> EventParser {
        EventParser::new(self.config.previous_response_id)
    }

    fn connection(&self) -> (&ClientConfig, &transport::Client) {
        (&self.config.client, &self.transport)
    }
}
