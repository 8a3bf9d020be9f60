//! [`AnthropicModel`]: a [`Model`](crate::llm::Model) over Anthropic's Messages API (`POST <base_url>/v1/messages`,
//! streamed), on the shared transport. This module holds the wire format only: the request body and the
//! reading of the stream's events (`message_start`, `content_block_start` / `_delta` / `_stop` with
//! `text_delta`, `input_json_delta`, `thinking_delta` and `signature_delta`, `message_delta`,
//! `message_stop`, `ping`, `error`).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::format::{CONTAINER_BLOCK, PROVIDER, container_to_reuse, to_anthropic_messages};
use crate::call::ToolCaller;
use crate::catalog::{self, ToolSearchMode};
use crate::dialect::{Dialect, DialectError};
use crate::llm::transport::config::{ClientConfig, ConfigError};
use crate::llm::transport::failure::{error_text, preview};
use crate::llm::transport::{self, StreamParser, client_setters, server_tool_setters};
use crate::llm::{ModelEvent, ModelRequest, ProgrammaticCalling};
use crate::message::StopReason;
use crate::result::Usage;

/// Anthropic's API base URL.
pub(crate) const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent by default.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The version of Anthropic's code-execution tool that programmatic calling adds to requests
/// ([`AnthropicConfig::code_execution()`]). Replies are read whichever version made them: a
/// `tool_use` block's `caller` names the version of the program that made the call.
///
/// ```
/// use yiem_core::llm::CodeExecutionVersion;
///
/// assert_eq!(CodeExecutionVersion::default(), CodeExecutionVersion::V20260120);
/// assert_eq!(CodeExecutionVersion::V20250825.tool_type(), "code_execution_20250825");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CodeExecutionVersion {
    /// `code_execution_20250825`, the first version with programmatic tool calling, for models and
    /// deployments that do not have the newer one.
    V20250825,
    /// `code_execution_20260120` (the default): the version Anthropic's programmatic tool calling
    /// documents, whose sandbox keeps its REPL state between runs.
    #[default]
    V20260120,
}

impl CodeExecutionVersion {
    /// The tool's `type`, which is also what `allowed_callers` and a call's `caller` name it by.
    pub fn tool_type(self) -> &'static str {
        match self {
            CodeExecutionVersion::V20250825 => "code_execution_20250825",
            CodeExecutionVersion::V20260120 => "code_execution_20260120",
        }
    }
}

/// Where and how an [`AnthropicModel`] sends its requests.
///
/// ```
/// use yiem_core::llm::AnthropicConfig;
///
/// let config = AnthropicConfig::new("sk-ant-test", "claude-sonnet-4-5")
///     .base_url("http://127.0.0.1:8080")
///     .max_tokens(1024)
///     .extra("thinking", serde_json::json!({"type": "enabled", "budget_tokens": 512}));
/// assert_eq!(config.version, "2023-06-01");
/// assert!(!format!("{config:?}").contains("sk-ant-test"));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AnthropicConfig {
    /// Where requests go (default `https://api.anthropic.com`; requests go to `<base_url>/v1/messages`,
    /// a URL that already ends in `/messages` is used as it is), the key (sent as `x-api-key`), the
    /// model, and the retries, timeouts and limits.
    pub client: ClientConfig,
    /// The `anthropic-version` header (default `ANTHROPIC_VERSION`, the version this client speaks).
    pub version: String,
    /// `max_tokens`, which the API requires (default 4096).
    pub max_tokens: u32,
    /// Prompt caching breakpoints (`cache_control`) on the tool list and the system prompt (default
    /// [`PromptCache::Off`]): see [`prompt_cache`](Self::prompt_cache()).
    pub prompt_cache: PromptCache,
    /// Whether Anthropic's own tool search finds deferred tools, or the local
    /// [`search_tools`](crate::catalog::SEARCH_TOOLS) tool (default
    /// [`ToolSearchMode::Auto`]: Anthropic's on Claude 4.5 models and later).
    pub tool_search: ToolSearchMode,
    /// Which of Anthropic's tool searches (default [`AnthropicToolSearch::Bm25`]).
    pub tool_search_kind: AnthropicToolSearch,
    /// Programmatic tool calling (default `None`, off): Claude calls tools from programs it runs in
    /// Anthropic's code-execution sandbox. Requests that carry tools add the code-execution tool
    /// (`{"type": "code_execution_20260120", "name": "code_execution"}`, the version
    /// [`code_execution`](field@Self::code_execution) names) and give each tool `calling` allows
    /// `allowed_callers: ["direct", "code_execution_20260120"]` (the model can still call it itself); a
    /// [code-only](crate::tool::AgentTool::is_code_only) tool gets `allowed_callers:
    /// ["code_execution_20260120"]`, the sandbox alone. Without programmatic calling, code-only tools are
    /// not sent. A call a program makes comes back as a `tool_use` block with its `caller`, becomes a
    /// [`ToolCall`](crate::exec::ToolCall) with that [`ToolCaller`](crate::exec::ToolCaller), runs through
    /// the pipeline like any other, and goes back with its caller. The program itself and its output
    /// (`server_tool_use`, `code_execution_tool_result`) are kept as provider blocks and go back
    /// unchanged. The reply's code-execution `container` is kept as a provider block of type `container`
    /// (not sent back as a block): a request that answers a program's calls names it in its `container`
    /// field, as the API requires. See [`ProgrammaticCalling`] for an example.
    pub programmatic_calling: Option<ProgrammaticCalling>,
    /// The code-execution tool programmatic calling adds (default the newest,
    /// [`CodeExecutionVersion::V20260120`]): see [`code_execution`](Self::code_execution()).
    pub code_execution: CodeExecutionVersion,
}

client_setters!(AnthropicConfig);
server_tool_setters!(AnthropicConfig);

/// Anthropic's prompt caching, as [`AnthropicConfig::prompt_cache`] sets it: a `cache_control`
/// breakpoint on the last tool (which caches the tool list) and on the system prompt (which caches the
/// tools and the system prompt), so requests that share them read them from the cache. Cache reads and
/// writes come back in [`Usage`](crate::message::Usage) (`cache_read_tokens`, `cache_write_tokens`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum PromptCache {
    /// No breakpoints (the default).
    #[default]
    Off,
    /// Breakpoints whose entries live five minutes (`{"type": "ephemeral"}`).
    FiveMinutes,
    /// Breakpoints whose entries live an hour (`{"type": "ephemeral", "ttl": "1h"}`).
    OneHour,
}

/// Anthropic's tool-search tool, which searches a request's deferred tools on Anthropic's side (see
/// [`catalog`](crate::catalog)): every deferred definition goes with `defer_loading: true`, and the
/// model's searches come back as `server_tool_use` and `tool_search_tool_result` blocks, whose
/// `tool_reference`s load the tools found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnthropicToolSearch {
    /// `tool_search_tool_bm25`: the model searches with words (the default).
    #[default]
    Bm25,
    /// `tool_search_tool_regex`: the model searches with regular expressions.
    Regex,
}

impl AnthropicToolSearch {
    /// The tool's entry in a request's `tools`.
    fn definition(self) -> Value {
        match self {
            AnthropicToolSearch::Bm25 => json!({
                "type": "tool_search_tool_bm25_20251119",
                "name": "tool_search_tool_bm25",
            }),
            AnthropicToolSearch::Regex => json!({
                "type": "tool_search_tool_regex_20251119",
                "name": "tool_search_tool_regex",
            }),
        }
    }
}

/// Whether the Claude model `model` has the tool-search tool, by its name: Claude 4.5 models and later
/// (`claude-sonnet-4-5`, `claude-opus-4-6-...`, `claude-haiku-5`).
fn has_tool_search(model: &str) -> bool {
    ["claude-opus-", "claude-sonnet-", "claude-haiku-"]
        .iter()
        .filter_map(|family| catalog::model_version(model, family))
        .any(|version| version >= (4, 5))
}

impl PromptCache {
    /// The `cache_control` object, or `None` when off.
    fn cache_control(self) -> Option<Value> {
        match self {
            PromptCache::Off => None,
            PromptCache::FiveMinutes => Some(json!({"type": "ephemeral"})),
            PromptCache::OneHour => Some(json!({"type": "ephemeral", "ttl": "1h"})),
        }
    }
}

impl AnthropicConfig {
    /// A configuration for `model` with `api_key` at Anthropic's API, with the default limits.
    pub fn new(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        let mut client = ClientConfig::new(ANTHROPIC_BASE_URL, model);
        client.api_key = Some(api_key.into());
        AnthropicConfig {
            client,
            version: ANTHROPIC_VERSION.to_owned(),
            max_tokens: 4096,
            prompt_cache: PromptCache::Off,
            tool_search: ToolSearchMode::Auto,
            tool_search_kind: AnthropicToolSearch::Bm25,
            programmatic_calling: None,
            code_execution: CodeExecutionVersion::default(),
        }
    }

    /// Sets `max_tokens`.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Chooses which of Anthropic's tool searches, when it is used.
    pub fn tool_search_kind(mut self, kind: AnthropicToolSearch) -> Self {
        self.tool_search_kind = kind;
        self
    }

    /// Caches the tool list and the system prompt (see [`PromptCache`]): the last tool and the system
    /// prompt (sent as one text block) get a `cache_control` breakpoint.
    ///
    /// ```
    /// use yiem_core::llm::PromptCache;
    /// use yiem_core::llm::{AnthropicConfig, AnthropicModel, ModelRequest};
    ///
    /// let config = AnthropicConfig::new("sk-ant-test", "claude-sonnet-4-5").prompt_cache(PromptCache::OneHour);
    /// let model = AnthropicModel::new(config).unwrap();
    /// let body = model.request_body(&ModelRequest::new("Be brief.", Vec::new())).unwrap();
    /// assert_eq!(body["system"], serde_json::json!([
    ///     {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    /// ]));
    /// ```
    pub fn prompt_cache(mut self, cache: PromptCache) -> Self {
        self.prompt_cache = cache;
        self
    }

    /// The version of the code-execution tool [programmatic calling](Self::programmatic_calling())
    /// adds (default [`CodeExecutionVersion::V20260120`], the newest): the older one for a model or a
    /// deployment that has only it.
    ///
    /// ```
    /// use yiem_core::llm::{CodeExecutionVersion, ProgrammaticCalling};
    /// use yiem_core::llm::{AnthropicConfig, AnthropicModel, ModelRequest};
    /// # fn lookup() -> yiem_core::tool::AgentTool {
    /// #     yiem_core::tool::AgentTool::builder("lookup").description("Looks a record up.")
    /// #         .handler(|_ctx: yiem_core::tool::ToolContext, _args: serde_json::Value| async move { "found" })
    /// #         .build().unwrap()
    /// # }
    ///
    /// let config = AnthropicConfig::new("sk-ant-test", "claude-sonnet-4-5")
    ///     .programmatic_calling(ProgrammaticCalling::new())
    ///     .code_execution(CodeExecutionVersion::V20250825);
    /// let model = AnthropicModel::new(config).unwrap();
    /// let request = ModelRequest::default().tools(vec![lookup()].into());
    /// let body = model.request_body(&request).unwrap();
    /// assert_eq!(body["tools"][1], serde_json::json!({"type": "code_execution_20250825", "name": "code_execution"}));
    /// ```
    pub fn code_execution(mut self, version: CodeExecutionVersion) -> Self {
        self.code_execution = version;
        self
    }
}

/// A [`Model`](crate::llm::Model) that streams replies from Anthropic's Messages API.
///
/// Each request is a `POST <base_url>/v1/messages` with `x-api-key`, `anthropic-version`, and a body of
/// `model`, `max_tokens`, `system` (when not empty), `messages` (see
/// [`to_anthropic_messages`](crate::llm::to_anthropic_messages): thinking blocks go back with their
/// signatures, tool results as `tool_result` blocks with `is_error`), `tools` in the
/// [`Dialect::Anthropic`] dialect, `stream: true` and the extra fields.
///
/// The stream becomes [`ModelEvent`]s: text, thinking (with `ThinkingSignature` when the block's
/// `signature_delta` arrives), `RedactedThinking`, the server's own blocks (`server_tool_use`,
/// `web_search_tool_result` and any other block type, their streamed input assembled) as whole
/// `ProviderBlock`s that go back unchanged, tool calls (`input_json_delta` pieces as
/// `ToolCallDelta`s, each followed by the partial arguments; a call a code-execution program made
/// with a `ToolCallCaller`, see [`AnthropicConfig::programmatic_calling()`]), usage (`input_tokens`, `output_tokens`,
/// cache reads and writes; `message_delta`'s counts are cumulative) and the stop reason: `end_turn` and
/// `stop_sequence` → `Stop`, `tool_use` → `ToolUse`, `max_tokens` and `model_context_window_exceeded` →
/// `Length`, `pause_turn` → [`StopReason::Paused`] (a server tool's long turn paused: the reply is kept,
/// and the agent sends the conversation again so the model goes on), `refusal` → an error `the model refused to answer
/// (stop_reason "refusal")`. `ping`s are skipped; an `error` event ends the stream with
/// `the server reported an error in the stream: <message>` (e.g. `Overloaded`). Retries and the other
/// failures are those of [`OpenAiModel`](crate::llm::OpenAiModel)'s table (features permitting), with 529
/// retried like any 5xx; every failure is one `Error` event starting `POST <url> failed: `.
///
/// ```
/// use yiem_core::{llm::{AnthropicConfig, AnthropicModel, ModelRequest}, message::UserMessage};
///
/// let model = AnthropicModel::new(AnthropicConfig::new("sk-ant-test", "claude-sonnet-4-5")).unwrap();
/// assert_eq!(model.endpoint(), "https://api.anthropic.com/v1/messages");
/// let body = model.request_body(&ModelRequest::new("Be brief.", vec![UserMessage::text("hi").into()])).unwrap();
/// assert_eq!(body["system"], "Be brief.");
/// assert_eq!(body["max_tokens"], 4096);
/// assert_eq!(body["stream"], true);
/// ```
#[derive(Clone, Debug)]
pub struct AnthropicModel {
    config: Arc<AnthropicConfig>,
    transport: transport::Client,
}

impl AnthropicModel {
    /// A client for `config`; fails on a base URL that is not http(s) or when the HTTP client cannot start.
    pub fn new(config: AnthropicConfig) -> Result<Self, ConfigError> {
        Ok(AnthropicModel {
            transport: transport::Client::new(&config.client, |base| {
                // `/v1/messages`, of which a base may have the version already, or the whole path.
                match base.ends_with("/messages") {
                    true => base.to_owned(),
                    false => format!("{}/messages", transport::joined(base, "/v1")),
                }
            })?,
            config: Arc::new(config),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        self.transport.endpoint()
    }

    /// The JSON body sent for `request`. Fails when a tool cannot be described in the Anthropic dialect.
    pub fn request_body(&self, request: &ModelRequest) -> Result<Value, DialectError> {
        // Code-only tools go only to a sandbox that can call them.
        let request = match &self.config.programmatic_calling {
            Some(_) => std::borrow::Cow::Borrowed(request),
            None => request.without_code_only(),
        };
        let request = &*request;
        let mut body = Map::new();
        body.insert("model".into(), json!(self.config.client.model));
        body.insert("max_tokens".into(), json!(self.config.max_tokens));
        let cache_control = self.config.prompt_cache.cache_control();
        if !request.system_prompt.is_empty() {
            let system = match &cache_control {
                Some(cache_control) => json!([{
                    "type": "text",
                    "text": request.system_prompt,
                    "cache_control": cache_control,
                }]),
                None => json!(request.system_prompt),
            };
            body.insert("system".into(), system);
        }
        body.insert(
            "messages".into(),
            Value::Array(to_anthropic_messages(&request.messages)),
        );
        let (choice, allowed) = request
            .tool_choice_or(&self.config.client.tool_choice)
            .anthropic();
        // With deferred tools and Anthropic's own search: the search tool, then the deferred tools.
        let native = self
            .config
            .tool_search
            .native(&self.config.client.model, has_tool_search);
        let (tools, mut searched) = match native {
            true => match crate::llm::provider_search(request, |tool| {
                tool.definition(Dialect::Anthropic).cloned()
            })? {
                Some((tools, deferred)) => (
                    tools,
                    [vec![self.config.tool_search_kind.definition()], deferred].concat(),
                ),
                None => (request.tools.clone(), Vec::new()),
            },
            false => (request.tools.clone(), Vec::new()),
        };
        let tools = match allowed {
            Some(allowed) => {
                let allowed = |name: &str| allowed.iter().any(|allowed| allowed == name);
                searched.retain(|definition| {
                    definition["defer_loading"] != true
                        || definition["name"].as_str().is_some_and(allowed)
                });
                tools
                    .iter()
                    .filter(|tool| allowed(tool.name()))
                    .cloned()
                    .collect()
            }
            None => tools,
        };
        if !tools.is_empty() || !searched.is_empty() {
            let mut tools = tools.definitions(Dialect::Anthropic)?;
            // The breakpoint goes on the last tool that is always sent (deferred ones are not part of
            // the cached prefix).
            if let (Some(cache_control), Some(Value::Object(last))) = (
                cache_control,
                tools.as_array_mut().and_then(|tools| tools.last_mut()),
            ) {
                last.insert("cache_control".into(), cache_control);
            }
            if let Value::Array(list) = &mut tools {
                list.extend(searched);
                if let Some(calling) = &self.config.programmatic_calling {
                    let sandbox = self.config.code_execution.tool_type();
                    calling.mark(
                        list.iter_mut(),
                        request,
                        &json!(["direct", sandbox]),
                        &json!([sandbox]),
                    );
                    list.push(json!({"type": sandbox, "name": "code_execution"}));
                }
            }
            body.insert("tools".into(), tools);
            if let Some(choice) = choice {
                body.insert("tool_choice".into(), choice);
            }
        }
        if let Some(container) = container_to_reuse(&request.messages) {
            body.insert("container".into(), json!(container));
        }
        body.insert("stream".into(), json!(true));
        self.config.client.add_extra(&mut body);
        Ok(Value::Object(body))
    }
}

impl transport::Provider for AnthropicModel {
    const NAME: &'static str = "anthropic";
    type Parser = EventParser;

    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", self.config.version.clone())];
        if let Some(key) = &self.config.client.api_key {
            headers.push(("x-api-key", key.clone()));
        }
        headers
    }

    fn body(&self, request: &ModelRequest) -> Result<impl transport::Body, DialectError> {
        self.request_body(request)
    }

    fn parser(&self) -> EventParser {
        EventParser::default()
    }

    fn connection(&self) -> (&ClientConfig, &transport::Client) {
        (&self.config.client, &self.transport)
    }
}

/// What a content block of the stream is, by the API's block index.
#[derive(Clone, Copy, PartialEq)]
enum Block {
    Text,
    Thinking,
    /// A tool call, with its position among the reply's calls.
    ToolUse(usize),
    /// A server-side block (`server_tool_use`, `web_search_tool_result`, ...), by its position in
    /// `EventParser::server`.
    Server(usize),
    Other,
}

/// A server-side block being streamed: the block `content_block_start` gave, and its input's pieces.
struct ServerBlock {
    block: Value,
    input: String,
    done: bool,
}

/// Turns Messages API stream events into [`ModelEvent`]s.
#[derive(Default)]
pub(crate) struct EventParser {
    blocks: Vec<(u64, Block)>,
    /// Calls started so far.
    calls: usize,
    /// Calls whose `ToolCallEnd` went out.
    closed: Vec<usize>,
    /// Server-side blocks, sent on as whole [`ModelEvent::ProviderBlock`]s when they stop.
    server: Vec<ServerBlock>,
    stop_reason: Option<String>,
    usage: Usage,
    /// The code-execution container the reply used (`message_start`'s or `message_delta`'s).
    container: Option<Value>,
    chunks: usize,
    stopped: bool,
}

impl EventParser {
    fn block(&self, index: u64) -> Block {
        self.blocks
            .iter()
            .rev()
            .find(|(i, _)| *i == index)
            .map_or(Block::Other, |(_, block)| *block)
    }

    fn read_usage(&mut self, usage: &Value) {
        let number = |key: &str| usage.get(key).and_then(Value::as_u64);
        if let Some(n) = number("input_tokens") {
            self.usage.input_tokens = n;
        }
        if let Some(n) = number("output_tokens") {
            self.usage.output_tokens = n;
        }
        if let Some(n) = number("cache_read_input_tokens") {
            self.usage.cache_read_tokens = n;
        }
        if let Some(n) = number("cache_creation_input_tokens") {
            self.usage.cache_write_tokens = n;
        }
    }

    fn read_container(&mut self, container: Option<&Value>) {
        if let Some(container) = container.filter(|container| container.is_object()) {
            self.container = Some(container.clone());
        }
    }

    /// The events that start content block `block` (a `content_block_start`'s `content_block`, or a
    /// whole block of a non-streaming body).
    fn start_block(&mut self, index: u64, block: &Value, events: &mut Vec<ModelEvent>) {
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
        let kind = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if !text("text").is_empty() {
                    events.push(ModelEvent::TextDelta(text("text").to_owned()));
                }
                Block::Text
            }
            Some("thinking") => {
                if !text("thinking").is_empty() {
                    events.push(ModelEvent::ThinkingDelta(text("thinking").to_owned()));
                }
                if !text("signature").is_empty() {
                    events.push(ModelEvent::ThinkingSignature(text("signature").to_owned()));
                }
                Block::Thinking
            }
            Some("redacted_thinking") => {
                events.push(ModelEvent::RedactedThinking(text("data").to_owned()));
                Block::Other
            }
            Some("tool_use") => {
                let slot = self.calls;
                self.calls += 1;
                events.push(ModelEvent::ToolCallStart {
                    index: slot,
                    id: text("id").to_owned(),
                    name: text("name").to_owned(),
                });
                // A call a program in the code-execution sandbox made names it (`direct` for the
                // model's own).
                if let Some(kind) = block
                    .pointer("/caller/type")
                    .and_then(Value::as_str)
                    .filter(|kind| *kind != "direct")
                {
                    let id = block.pointer("/caller/tool_id").and_then(Value::as_str);
                    events.push(ModelEvent::ToolCallCaller {
                        index: slot,
                        caller: ToolCaller::new(PROVIDER, kind, id.unwrap_or_default()),
                    });
                }
                // A streamed block starts with `input: {}` and sends its input as deltas; a whole block
                // carries it.
                if let Some(input) = block
                    .get("input")
                    .filter(|input| input.as_object().is_none_or(|object| !object.is_empty()))
                {
                    events.push(ModelEvent::ToolCallDelta {
                        index: slot,
                        arguments: input.to_string(),
                    });
                }
                Block::ToolUse(slot)
            }
            // Any other block is the server's own (its tools' calls and results, and types to come):
            // kept whole, so a paused turn can go back as it came.
            Some(_) => {
                self.server.push(ServerBlock {
                    block: block.clone(),
                    input: String::new(),
                    done: false,
                });
                Block::Server(self.server.len() - 1)
            }
            None => Block::Other,
        };
        self.blocks.push((index, kind));
    }

    /// Sends server block `slot` on, with its streamed input (if any) in place of the empty one.
    fn close_server_block(
        &mut self,
        slot: usize,
        events: &mut Vec<ModelEvent>,
    ) -> Result<(), String> {
        let chunks = self.chunks;
        let Some(server) = self.server.get_mut(slot).filter(|server| !server.done) else {
            return Ok(());
        };
        let input = match server.input.as_str() {
            "" => None,
            text => Some(serde_json::from_str::<Value>(text).map_err(|error| {
                format!(
                    "event {chunks}: the input of a `{}` block is not JSON ({error}): {}",
                    server.block["type"].as_str().unwrap_or_default(),
                    preview(text)
                )
            })?),
        };
        server.done = true;
        let mut block = std::mem::take(&mut server.block);
        if let Some(input) = input {
            block["input"] = input;
        }
        events.push(ModelEvent::ProviderBlock {
            provider: PROVIDER.into(),
            block,
        });
        Ok(())
    }

    fn close_call(&mut self, slot: usize, events: &mut Vec<ModelEvent>) {
        if !self.closed.contains(&slot) {
            self.closed.push(slot);
            events.push(ModelEvent::ToolCallEnd { index: slot });
        }
    }

    fn stream_event(&mut self, kind: &str, event: &mut Value) -> Result<Vec<ModelEvent>, String> {
        let mut events = Vec::new();
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(usage) = event.pointer("/message/usage") {
                    self.read_usage(usage);
                }
                self.read_container(event.pointer("/message/container"));
            }
            "content_block_start" => {
                let block = event.get("content_block").unwrap_or(&Value::Null);
                self.start_block(index, block, &mut events);
            }
            "content_block_delta" => {
                let mut none = Value::Null;
                let delta = event.get_mut("delta").unwrap_or(&mut none);
                let kind = delta.get("type").and_then(Value::as_str).map(str::to_owned);
                let mut text = |key: &str| transport::take_str(delta, key);
                match (kind.as_deref(), self.block(index)) {
                    (Some("text_delta"), _) => events.push(ModelEvent::TextDelta(text("text"))),
                    (Some("thinking_delta"), _) => {
                        events.push(ModelEvent::ThinkingDelta(text("thinking")))
                    }
                    (Some("signature_delta"), _) => {
                        events.push(ModelEvent::ThinkingSignature(text("signature")))
                    }
                    (Some("input_json_delta"), Block::ToolUse(slot)) => {
                        let piece = text("partial_json");
                        if !piece.is_empty() {
                            events.push(ModelEvent::ToolCallDelta {
                                index: slot,
                                arguments: piece,
                            });
                        }
                    }
                    (Some("input_json_delta"), Block::Server(slot)) => {
                        self.server[slot].input.push_str(&text("partial_json"));
                    }
                    (Some("input_json_delta"), _) => {
                        return Err(format!(
                            "event {}: an input_json_delta for block {index}, which is not a tool_use block",
                            self.chunks
                        ));
                    }
                    // Citations and other deltas carry nothing the reply keeps.
                    _ => {}
                }
            }
            "content_block_stop" => match self.block(index) {
                Block::ToolUse(slot) => self.close_call(slot, &mut events),
                Block::Server(slot) => self.close_server_block(slot, &mut events)?,
                _ => {}
            },
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(usage) = event.get("usage") {
                    self.read_usage(usage);
                }
                self.read_container(event.pointer("/delta/container"));
            }
            "message_stop" => self.stopped = true,
            "ping" => {}
            "error" => {
                return Err(format!(
                    "the server reported an error in the stream: {}",
                    error_text(event).unwrap_or_else(|| preview(&event.to_string()))
                ));
            }
            // New event types may be added (the API's versioning policy): skipped.
            _ => {}
        }
        Ok(events)
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
        let mut message: Value = serde_json::from_str(data)
            .map_err(|error| format!("the body is not JSON ({error}): {}", preview(data)))?;
        if message.get("type").and_then(Value::as_str) == Some("error") {
            return self.stream_event("error", &mut message);
        }
        let mut events = Vec::new();
        if let Some(Value::Array(blocks)) = message.get("content") {
            for (index, block) in blocks.iter().enumerate() {
                self.start_block(index as u64, block, &mut events);
                match self.block(index as u64) {
                    Block::ToolUse(slot) => self.close_call(slot, &mut events),
                    Block::Server(slot) => self.close_server_block(slot, &mut events)?,
                    _ => {}
                }
            }
        }
        if let Some(usage) = message.get("usage") {
            self.read_usage(usage);
        }
        self.read_container(message.get("container"));
        self.stop_reason = message
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| Some("end_turn".into()));
        self.stopped = true;
        Ok(events)
    }

    fn ended(&self) -> bool {
        self.stopped
    }

    fn complete(&self) -> bool {
        self.stop_reason.is_some()
    }

    fn chunks(&self) -> usize {
        self.chunks
    }

    fn finish(&mut self) -> Vec<ModelEvent> {
        let mut events = Vec::new();
        for slot in 0..self.calls {
            self.close_call(slot, &mut events);
        }
        // A server block whose stop never came: sent on as it is, or not at all if its input is cut.
        for slot in 0..self.server.len() {
            if self.close_server_block(slot, &mut events).is_err() {
                events.push(ModelEvent::Error(format!(
                    "the stream ended inside a `{}` block",
                    self.server[slot].block["type"].as_str().unwrap_or_default()
                )));
                return events;
            }
        }
        // The container goes in the reply, for the request that answers its programs' calls.
        if let Some(Value::Object(mut container)) = self.container.take() {
            container.insert("type".into(), json!(CONTAINER_BLOCK));
            events.push(ModelEvent::ProviderBlock {
                provider: PROVIDER.into(),
                block: Value::Object(container),
            });
        }
        let stop_reason = match self.stop_reason.as_deref() {
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") | Some("model_context_window_exceeded") => StopReason::Length,
            Some("refusal") => {
                events.push(ModelEvent::Error(
                    "the model refused to answer (stop_reason \"refusal\")".into(),
                ));
                return events;
            }
            None if !self.stopped => {
                events.push(ModelEvent::Error(
                    "the stream ended before the reply was complete (no stop_reason)".into(),
                ));
                return events;
            }
            // `end_turn`, `stop_sequence`, `pause_turn`, and a `message_stop` without a stop reason.
            _ if self.calls > 0 => StopReason::ToolUse,
            Some("pause_turn") => StopReason::Paused,
            _ => StopReason::Stop,
        };
        events.push(ModelEvent::Done {
            stop_reason,
            usage: self.usage,
        });
        events
    }
}

/// Parses a stream of Messages API events (each its `event:` name and data) as the client would; for the
/// fuzz harness.
#[doc(hidden)]
pub fn parse_events_for_fuzzing<'a>(
    events: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<ModelEvent> {
    transport::parse_all(EventParser::default(), events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(events: &[&str]) -> Vec<ModelEvent> {
        let mut parser = EventParser::default();
        let mut out = Vec::new();
        for event in events {
            out.extend(parser.event("", event).unwrap());
        }
        out.extend(parser.finish());
        out
    }

    #[test]
    fn stop_reasons_map() {
        let with = |reason: &str| {
            parse(&[&format!(
                r#"{{"type":"message_delta","delta":{{"stop_reason":"{reason}"}},"usage":{{"output_tokens":3}}}}"#
            )])
        };
        let done = |stop_reason| ModelEvent::Done {
            stop_reason,
            usage: Usage::new(0, 3),
        };
        assert_eq!(with("end_turn"), vec![done(StopReason::Stop)]);
        assert_eq!(with("stop_sequence"), vec![done(StopReason::Stop)]);
        assert_eq!(with("pause_turn"), vec![done(StopReason::Paused)]);
        assert_eq!(with("max_tokens"), vec![done(StopReason::Length)]);
        assert_eq!(with("tool_use"), vec![done(StopReason::ToolUse)]);
        assert_eq!(
            with("refusal"),
            vec![ModelEvent::Error(
                "the model refused to answer (stop_reason \"refusal\")".into()
            )]
        );
    }

    #[test]
    fn a_server_block_cut_inside_its_input_is_an_error_not_a_half_block() {
        let events = parse(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"Os"}}"#,
        ]);
        assert_eq!(
            events,
            vec![ModelEvent::Error(
                "the stream ended inside a `server_tool_use` block".into()
            )]
        );
    }

    #[test]
    fn a_delta_for_an_unknown_block_is_an_error_not_a_panic() {
        let mut parser = EventParser::default();
        let error = parser
            .event(
                "",
                r#"{"type":"content_block_delta","index":7,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
            )
            .unwrap_err();
        assert!(error.contains("block 7"), "{error}");
    }
}
