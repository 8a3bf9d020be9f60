//! [`OpenAiResponsesModel`]: a [`Model`](crate::llm::Model) over OpenAI's Responses API (`POST <base_url>/responses`,
//! streamed), on the shared transport. This module holds the wire format's request body and the reading
//! of the stream's events; [`to_responses_input`](crate::llm::to_responses_input) renders the conversation.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::format::{PROVIDER, render, response_id, usage_from_responses};
use crate::call::ToolCaller;
use crate::catalog::{self, ToolSearchMode};
use crate::dialect::{Dialect, DialectError};
use crate::llm::openai::{API_KEY_ENV, BASE_URL_ENV, MODEL_ENV};
use crate::llm::transport::config::{ClientConfig, ConfigError};
use crate::llm::transport::failure::{error_text, preview};
use crate::llm::transport::{self, StreamParser, client_setters, server_tool_setters};
use crate::llm::{ModelEvent, ModelRequest, ProgrammaticCalling};
use crate::message::{AgentMessage, StopReason};
use crate::result::Usage;
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
/// The stream's events become [`ModelEvent`]s:
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
///   tool's) → [`ModelEvent::ProviderBlock`]s named `"openai-responses"`, which go back unchanged with
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
        EventParser {
            keep_response_id: self.config.previous_response_id,
            ..EventParser::default()
        }
    }

    fn connection(&self) -> (&ClientConfig, &transport::Client) {
        (&self.config.client, &self.transport)
    }
}

/// What an output item of the stream is.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Message,
    /// A function call (or, `custom`, a custom tool's call), with its position among the reply's calls.
    Call {
        slot: usize,
        custom: bool,
    },
    Reasoning,
    Other,
}

/// One output item of the reply, as far as the stream has told.
struct Item {
    output_index: Option<u64>,
    /// Its id (empty when the server sent none: it is then found by `output_index`).
    id: String,
    kind: Kind,
    /// Whether text, thinking or argument deltas came for it (then its `.done` event repeats them).
    streamed: bool,
    /// The summary part the last thinking delta belonged to.
    summary_index: Option<u64>,
    done: bool,
}

/// How the response ended.
#[derive(Clone, PartialEq)]
enum End {
    Completed,
    Incomplete(String),
}

/// Turns Responses API stream events into [`ModelEvent`]s.
#[derive(Default)]
pub(crate) struct EventParser {
    items: Vec<Item>,
    /// Calls started so far.
    calls: usize,
    /// Calls whose `ToolCallEnd` went out.
    closed: Vec<usize>,
    /// Custom tools' calls, whose text goes out as the arguments `{"input": "<text>"}`: the calls, and
    /// those whose `{"input":"` went out.
    custom: Vec<usize>,
    opened: Vec<usize>,
    refusal: String,
    response_id: String,
    keep_response_id: bool,
    end: Option<End>,
    usage: Usage,
    chunks: usize,
}

impl EventParser {
    /// The item an event names by `item_id`, else by `output_index`.
    fn find(&self, event: &Value) -> Option<usize> {
        let id = event.get("item_id").and_then(Value::as_str).unwrap_or("");
        if !id.is_empty()
            && let Some(found) = self.items.iter().rposition(|item| item.id == id)
        {
            return Some(found);
        }
        let index = event.get("output_index").and_then(Value::as_u64)?;
        self.items
            .iter()
            .rposition(|item| item.output_index == Some(index))
    }

    /// The item `item` (at `output_index`) starts, with its events.
    fn added(
        &mut self,
        output_index: Option<u64>,
        item: &Value,
        events: &mut Vec<ModelEvent>,
    ) -> usize {
        let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
        let id = text("id").to_owned();
        let kind = match text("type") {
            "message" => {
                if !id.is_empty() {
                    let mut marker = json!({"type": "message", "id": id});
                    if let Some(phase) = item.get("phase").filter(|p| !p.is_null()) {
                        marker["phase"] = phase.clone();
                    }
                    events.push(self.block(marker));
                }
                Kind::Message
            }
            kind @ ("function_call" | "custom_tool_call") => {
                let slot = self.calls;
                self.calls += 1;
                let custom = kind == "custom_tool_call";
                // A custom tool's call is marked even without an id: it goes back as a
                // `custom_tool_call`, not a `function_call`.
                // A call of a namespaced tool keeps its namespace, which goes back with it.
                let namespace = item
                    .get("namespace")
                    .filter(|namespace| namespace.is_string());
                if !id.is_empty() || custom || namespace.is_some() {
                    let mut marker = json!({"type": kind, "call_id": text("call_id")});
                    if !id.is_empty() {
                        marker["id"] = json!(id);
                    }
                    if let Some(namespace) = namespace {
                        marker["namespace"] = namespace.clone();
                    }
                    events.push(self.block(marker));
                }
                if custom {
                    self.custom.push(slot);
                }
                events.push(ModelEvent::ToolCallStart {
                    index: slot,
                    id: text("call_id").to_owned(),
                    name: text("name").to_owned(),
                });
                // A call a program made names it (`direct` for the model's own).
                if let Some(kind) = item
                    .pointer("/caller/type")
                    .and_then(Value::as_str)
                    .filter(|kind| *kind != "direct")
                {
                    let id = item.pointer("/caller/caller_id").and_then(Value::as_str);
                    events.push(ModelEvent::ToolCallCaller {
                        index: slot,
                        caller: ToolCaller::new(PROVIDER, kind, id.unwrap_or_default()),
                    });
                }
                Kind::Call { slot, custom }
            }
            "reasoning" => Kind::Reasoning,
            _ => Kind::Other,
        };
        let mut entry = Item {
            output_index,
            id,
            kind,
            streamed: false,
            summary_index: None,
            done: false,
        };
        if let Kind::Call { slot, custom } = kind {
            let arguments = text(if custom { "input" } else { "arguments" });
            if !arguments.is_empty() {
                entry.streamed = true;
                self.call_piece(slot, arguments.to_owned(), events);
            }
        }
        self.items.push(entry);
        self.items.len() - 1
    }

    /// The events of a finished item (`response.output_item.done`, or an item of a whole response).
    fn item_done(&mut self, output_index: Option<u64>, item: &Value, events: &mut Vec<ModelEvent>) {
        let by = json!({"item_id": item.get("id"), "output_index": output_index});
        let slot = match self.find(&by).filter(|&found| !self.items[found].done) {
            Some(found) => found,
            None => self.added(output_index, item, events),
        };
        let entry = &mut self.items[slot];
        entry.done = true;
        let (kind, streamed) = (entry.kind, entry.streamed);
        match kind {
            Kind::Message => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") if !streamed => {
                            if let Some(text) = part.get("text").and_then(Value::as_str)
                                && !text.is_empty()
                            {
                                events.push(ModelEvent::TextDelta(text.to_owned()));
                            }
                        }
                        Some("refusal") if self.refusal.is_empty() => {
                            self.refusal = part
                                .get("refusal")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned();
                        }
                        _ => {}
                    }
                }
            }
            Kind::Call { slot, custom } => {
                let field = if custom { "input" } else { "arguments" };
                if !streamed
                    && let Some(arguments) = item.get(field).and_then(Value::as_str)
                    && !arguments.is_empty()
                {
                    self.call_piece(slot, arguments.to_owned(), events);
                }
                self.close_call(slot, events);
            }
            Kind::Reasoning => {
                if !streamed {
                    let summary: Vec<&str> = item
                        .get("summary")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|part| part.get("text").and_then(Value::as_str))
                        .filter(|text| !text.is_empty())
                        .collect();
                    if !summary.is_empty() {
                        events.push(ModelEvent::ThinkingDelta(summary.join("\n\n")));
                    }
                }
                events.push(self.block(item.clone()));
            }
            Kind::Other if item.get("type").and_then(Value::as_str).is_some() => {
                events.push(self.block(item.clone()));
            }
            Kind::Other => {}
        }
    }

    fn block(&self, block: Value) -> ModelEvent {
        ModelEvent::ProviderBlock {
            provider: PROVIDER.into(),
            block,
        }
    }

    fn close_call(&mut self, slot: usize, events: &mut Vec<ModelEvent>) {
        if !self.closed.contains(&slot) {
            if self.custom.contains(&slot) {
                // The text's end closes the arguments `{"input": "<text>"}`.
                self.call_piece(slot, String::new(), events);
                events.push(ModelEvent::ToolCallDelta {
                    index: slot,
                    arguments: "\"}".into(),
                });
            }
            self.closed.push(slot);
            events.push(ModelEvent::ToolCallEnd { index: slot });
        }
    }

    /// The next piece of call `slot`'s arguments: JSON text for a function call, the text itself for a
    /// custom tool's call, whose arguments are `{"input": "<text>"}` (each piece escaped as JSON string
    /// content, so the arguments parse as they grow, and partial-argument events show the text so far).
    fn call_piece(&mut self, slot: usize, piece: String, events: &mut Vec<ModelEvent>) {
        if !self.custom.contains(&slot) {
            if !piece.is_empty() {
                events.push(ModelEvent::ToolCallDelta {
                    index: slot,
                    arguments: piece,
                });
            }
            return;
        }
        let mut arguments = String::new();
        if !self.opened.contains(&slot) {
            self.opened.push(slot);
            arguments.push_str("{\"input\":\"");
        }
        if !piece.is_empty() {
            let quoted = Value::from(piece).to_string();
            arguments.push_str(&quoted[1..quoted.len() - 1]);
        }
        if !arguments.is_empty() {
            events.push(ModelEvent::ToolCallDelta {
                index: slot,
                arguments,
            });
        }
    }

    /// The item a delta event belongs to, marked as streamed.
    fn streamed(&mut self, event: &Value) -> Option<&mut Item> {
        let found = self.find(event)?;
        let item = &mut self.items[found];
        item.streamed = true;
        Some(item)
    }

    /// The end of the response (`response.completed`, `.incomplete`, or a whole response body): its
    /// usage and status, and any output item the stream did not show.
    fn ended(&mut self, response: &Value, events: &mut Vec<ModelEvent>) -> Result<(), String> {
        if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
            self.usage = usage_from_responses(usage);
        }
        if let Some(id) = response.get("id").and_then(Value::as_str) {
            self.response_id = id.to_owned();
        }
        // A server that sends only the final response (or a whole body): its items now.
        if self.items.is_empty()
            && let Some(Value::Array(output)) = response.get("output")
        {
            for (index, item) in output.iter().enumerate() {
                self.item_done(Some(index as u64), item, events);
            }
        }
        match response.get("status").and_then(Value::as_str) {
            Some("failed") => return Err(failure(response)),
            Some("incomplete") => {
                let reason = response
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown");
                self.end = Some(End::Incomplete(reason.to_owned()));
            }
            _ => self.end = Some(End::Completed),
        }
        Ok(())
    }

    fn stream_event(&mut self, kind: &str, event: &mut Value) -> Result<Vec<ModelEvent>, String> {
        let mut events = Vec::new();
        let output_index = event.get("output_index").and_then(Value::as_u64);
        match kind {
            "response.created" | "response.in_progress" | "response.queued" => {
                if let Some(id) = event.pointer("/response/id").and_then(Value::as_str) {
                    self.response_id = id.to_owned();
                }
            }
            "response.output_item.added" => {
                let item = event.get("item").unwrap_or(&Value::Null);
                self.added(output_index, item, &mut events);
            }
            "response.output_item.done" => {
                let item = event.get("item").unwrap_or(&Value::Null);
                self.item_done(output_index, item, &mut events);
            }
            "response.output_text.delta" => {
                self.streamed(event);
                let delta = transport::take_str(event, "delta");
                if !delta.is_empty() {
                    events.push(ModelEvent::TextDelta(delta));
                }
            }
            "response.refusal.delta" => {
                if let Some(delta) = event.get("delta").and_then(Value::as_str) {
                    self.refusal.push_str(delta);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let part = event
                    .get("summary_index")
                    .or_else(|| event.get("content_index"))
                    .and_then(Value::as_u64);
                let delta = event.get("delta").and_then(Value::as_str).unwrap_or("");
                let new_part = match self.streamed(event) {
                    Some(item) => {
                        let before = item.summary_index.replace(part.unwrap_or(0));
                        before.is_some_and(|before| Some(before) != part)
                    }
                    None => false,
                };
                if new_part {
                    events.push(ModelEvent::ThinkingDelta("\n\n".into()));
                }
                if !delta.is_empty() {
                    events.push(ModelEvent::ThinkingDelta(delta.to_owned()));
                }
            }
            "response.function_call_arguments.delta"
            | "response.function_call_arguments.done"
            | "response.custom_tool_call_input.delta"
            | "response.custom_tool_call_input.done" => {
                let chunks = self.chunks;
                let for_custom = kind.starts_with("response.custom_tool_call_input.");
                let Some(found) = self.find(event) else {
                    return Err(format!(
                        "event {chunks}: `{kind}` for output item {}, which the stream never started",
                        describe(event)
                    ));
                };
                let slot = match self.items[found].kind {
                    Kind::Call { slot, custom } if custom == for_custom => slot,
                    _ => {
                        return Err(format!(
                            "event {chunks}: `{kind}` for output item {}, which is not a {}",
                            describe(event),
                            if for_custom {
                                "custom tool call"
                            } else {
                                "function call"
                            }
                        ));
                    }
                };
                let item = &mut self.items[found];
                let whole = if for_custom { "input" } else { "arguments" };
                let piece = if kind.ends_with(".delta") {
                    item.streamed = true;
                    transport::take_str(event, "delta")
                } else if !item.streamed {
                    // Sent whole, without deltas.
                    item.streamed = true;
                    transport::take_str(event, whole)
                } else {
                    String::new()
                };
                if !piece.is_empty() {
                    self.call_piece(slot, piece, &mut events);
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let mut response = event.get_mut("response").map_or(Value::Null, Value::take);
                if kind == "response.failed" {
                    return Err(failure(&response));
                }
                if kind == "response.incomplete"
                    && let Value::Object(object) = &mut response
                {
                    object.insert("status".into(), json!("incomplete"));
                }
                self.ended(&response, &mut events)?;
            }
            "error" => {
                return Err(format!(
                    "the server reported an error in the stream: {}",
                    error_text(event).unwrap_or_else(|| preview(&event.to_string()))
                ));
            }
            // Events this client does not use (content parts, annotations, hosted tools' progress) and
            // types to come: skipped.
            other => tracing::trace!(event = other, "skipping a Responses API event"),
        }
        Ok(events)
    }
}

/// How an event names its output item, for error texts.
fn describe(event: &Value) -> String {
    match (
        event.get("item_id").and_then(Value::as_str),
        event.get("output_index").and_then(Value::as_u64),
    ) {
        (Some(id), _) if !id.is_empty() => format!("`{id}`"),
        (_, Some(index)) => format!("at output_index {index}"),
        _ => "(no id, no output_index)".into(),
    }
}

/// The text of a failed response: `the response failed: <message> (<code>)`.
fn failure(response: &Value) -> String {
    let error = response.get("error").unwrap_or(&Value::Null);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| preview(&error.to_string()));
    match error.get("code").and_then(Value::as_str) {
        Some(code) => format!("the response failed: {message} ({code})"),
        None => format!("the response failed: {message}"),
    }
}

impl StreamParser for EventParser {
    fn event(&mut self, name: &str, data: &str) -> Result<Vec<ModelEvent>, String> {
        self.chunks += 1;
        let mut event: Value = serde_json::from_str(data).map_err(|error| {
            format!(
                "event {} is not JSON ({error}): {}",
                self.chunks,
                preview(data)
            )
        })?;
        // The `type` field names the event; the `event:` line is the same name when present.
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(name)
            .to_owned();
        self.stream_event(&kind, &mut event)
    }

    fn body(&mut self, data: &str) -> Result<Vec<ModelEvent>, String> {
        self.chunks += 1;
        let response: Value = serde_json::from_str(data)
            .map_err(|error| format!("the body is not JSON ({error}): {}", preview(data)))?;
        if let Some(error) = response.get("error").filter(|e| !e.is_null())
            && response.get("status").is_none()
        {
            return Err(format!(
                "the server reported an error: {}",
                error_text(error).unwrap_or_else(|| preview(&error.to_string()))
            ));
        }
        let mut events = Vec::new();
        self.ended(&response, &mut events)?;
        Ok(events)
    }

    fn ended(&self) -> bool {
        self.end.is_some()
    }

    fn complete(&self) -> bool {
        self.end.is_some()
    }

    fn chunks(&self) -> usize {
        self.chunks
    }

    fn finish(&mut self) -> Vec<ModelEvent> {
        let mut events = Vec::new();
        for slot in 0..self.calls {
            self.close_call(slot, &mut events);
        }
        if !self.refusal.is_empty() {
            events.push(ModelEvent::Error(format!(
                "the model refused to answer: {}",
                self.refusal
            )));
            return events;
        }
        let stop_reason = match &self.end {
            None => {
                events.push(ModelEvent::Error(
                    "the stream ended before the reply was complete (no response.completed)".into(),
                ));
                return events;
            }
            Some(End::Incomplete(reason)) if reason == "max_output_tokens" => StopReason::Length,
            Some(End::Incomplete(reason)) => {
                events.push(ModelEvent::Error(format!(
                    "the server stopped the reply: response.incomplete ({reason})"
                )));
                return events;
            }
            Some(End::Completed) if self.calls > 0 => StopReason::ToolUse,
            Some(End::Completed) => StopReason::Stop,
        };
        if self.keep_response_id && !self.response_id.is_empty() {
            events.push(self.block(json!({"type": "response", "id": self.response_id})));
        }
        events.push(ModelEvent::Done {
            stop_reason,
            usage: self.usage,
        });
        events
    }
}

/// Parses a stream of Responses API events (each its `event:` name and data) as the client would; for
/// the fuzz harness.
#[doc(hidden)]
pub fn parse_events_for_fuzzing<'a>(
    events: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<ModelEvent> {
    transport::parse_all(EventParser::default(), events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(events: &[Value]) -> Vec<ModelEvent> {
        let data: Vec<String> = events.iter().map(Value::to_string).collect();
        transport::parse_all(
            EventParser::default(),
            data.iter().map(|data| ("", data.as_str())),
        )
    }

    #[test]
    fn incomplete_replies_map_to_length_or_an_error() {
        let incomplete = |reason: &str| {
            parse(&[json!({"type": "response.incomplete", "response": {
                "status": "incomplete", "incomplete_details": {"reason": reason},
                "usage": {"input_tokens": 5, "output_tokens": 7}}})])
        };
        assert_eq!(
            incomplete("max_output_tokens"),
            vec![ModelEvent::Done {
                stop_reason: StopReason::Length,
                usage: Usage::new(5, 7)
            }]
        );
        assert_eq!(
            incomplete("content_filter"),
            vec![ModelEvent::Error(
                "the server stopped the reply: response.incomplete (content_filter)".into()
            )]
        );
    }

    #[test]
    fn arguments_for_an_item_never_started_are_an_error_not_a_panic() {
        let events = parse(&[json!({"type": "response.function_call_arguments.delta",
            "item_id": "fc_9", "output_index": 3, "delta": "{"})]);
        assert_eq!(
            events,
            vec![ModelEvent::Error(
                "event 1: `response.function_call_arguments.delta` for output item `fc_9`, which the \
                 stream never started"
                    .into()
            )]
        );
    }

    #[test]
    fn a_final_response_alone_gives_its_items() {
        let events = parse(&[json!({"type": "response.completed", "response": {
        "id": "resp_1", "status": "completed",
        "output": [
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Hi.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f",
             "arguments": "{}", "status": "completed"}
        ]}})]);
        assert_eq!(
            events,
            vec![
                ModelEvent::ProviderBlock {
                    provider: PROVIDER.into(),
                    block: json!({"type": "message", "id": "msg_1"})
                },
                ModelEvent::TextDelta("Hi.".into()),
                ModelEvent::ProviderBlock {
                    provider: PROVIDER.into(),
                    block: json!({"type": "function_call", "id": "fc_1", "call_id": "call_1"})
                },
                ModelEvent::ToolCallStart {
                    index: 0,
                    id: "call_1".into(),
                    name: "f".into()
                },
                ModelEvent::ToolCallDelta {
                    index: 0,
                    arguments: "{}".into()
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
