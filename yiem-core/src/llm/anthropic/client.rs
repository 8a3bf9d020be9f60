//! [`AnthropicModel`]: a [`Model`](crate::llm::Model) over Anthropic's Messages API (`POST <base_url>/v1/messages`,
//! streamed), on the shared transport. This module holds the configuration and the request body;
//! `stream.rs` reads the stream's events (`message_start`, `content_block_start` / `_delta` / `_stop`
//! with `text_delta`, `input_json_delta`, `thinking_delta` and `signature_delta`, `message_delta`,
//! `message_stop`, `ping`, `error`).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::format::{container_to_reuse, to_anthropic_messages};
use super::stream::EventParser;
use crate::catalog::{self, ToolSearchMode};
use crate::dialect::{Dialect, DialectError};
use crate::llm::transport::config::{ClientConfig, ConfigError};
use crate::llm::transport::{self, client_setters, server_tool_setters};
use crate::llm::{ModelRequest, ProgrammaticCalling};

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
/// The stream becomes [`ModelEvent`](crate::llm::ModelEvent)s: text, thinking (with `ThinkingSignature` when the block's
/// `signature_delta` arrives), `RedactedThinking`, the server's own blocks (`server_tool_use`,
/// `web_search_tool_result` and any other block type, their streamed input assembled) as whole
/// `ProviderBlock`s that go back unchanged, tool calls (`input_json_delta` pieces as
/// `ToolCallDelta`s, each followed by the partial arguments; a call a code-execution program made
/// with a `ToolCallCaller`, see [`AnthropicConfig::programmatic_calling()`]), usage (`input_tokens`, `output_tokens`,
/// cache reads and writes; `message_delta`'s counts are cumulative) and the stop reason: `end_turn` and
/// `stop_sequence` → `Stop`, `tool_use` → `ToolUse`, `max_tokens` and `model_context_window_exceeded` →
/// `Length`, `pause_turn` → [`StopReason::Paused`](crate::message::StopReason::Paused) (a server tool's long turn paused: the reply is kept,
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
