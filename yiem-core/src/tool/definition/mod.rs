//! [`AgentTool`]: a tool the model can call — its name, label, description, JSON Schema and the code that
//! runs it. This file holds the tool's parts ([`ToolDefinition`], the type-erased handler, the schema
//! cells) and what is read from them, including each dialect's definition; its parts: `options` (what
//! a definition says besides its schema: execution mode, hints, provider options, task support, source),
//! `arguments` (checking and binding a call's arguments, and why a call could not be bound) and `builder`
//! ([`ToolBuilder`](crate::tool::ToolBuilder), for tools defined at run time).

mod arguments;
mod builder;
mod options;

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

pub(crate) use self::arguments::Refusal;
pub use self::builder::{ToolBuilder, ToolDefinitionError};
pub use self::options::{
    ExecutionMode, ProviderOptions, SourceLocation, TaskSupport, ToolAnnotations, ToolNamespace,
};
use crate::args::{ArgumentCache, ArgumentCheck};
use crate::dialect::{Dialect, DialectCache, DialectError, ToolFacts, definition};
use crate::result::AgentToolResult;
use crate::state::StateKey;
use crate::tool::context::ContextSlot;

/// The future of one bound tool call: arguments already parsed and validated, not yet running.
pub type ToolFuture = Pin<Box<dyn Future<Output = AgentToolResult> + Send + 'static>>;

/// A schema computed once, on first use, and shared by every copy of the tool.
#[doc(hidden)]
pub struct SchemaCell(OnceLock<Option<Value>>);

impl SchemaCell {
    /// An empty cell, for a `static`.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        SchemaCell(OnceLock::new())
    }
}

impl std::fmt::Debug for SchemaCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaCell").finish_non_exhaustive()
    }
}

/// Where a tool's schema comes from: a generator run once (macro tools) or a value given at run time.
pub(crate) enum SchemaSource {
    Lazy {
        cell: &'static SchemaCell,
        make: fn() -> Option<Value>,
    },
    Ready(Option<Value>),
}

impl SchemaSource {
    fn get(&self) -> Option<&Value> {
        match self {
            SchemaSource::Lazy { cell, make } => cell.0.get_or_init(make).as_ref(),
            SchemaSource::Ready(value) => value.as_ref(),
        }
    }
}

/// The type-erased code of a tool: parses and validates the arguments, then hands back the future that
/// runs the call.
#[doc(hidden)]
pub trait ErasedHandler: Send + Sync + 'static {
    /// Parses and validates `args` (with `check`, which knows the tool's name, schema and caches) and
    /// returns the call, not yet started.
    fn bind(
        &self,
        check: &ArgumentCheck<'_>,
        args: &Value,
        ctx: &mut ContextSlot<'_>,
    ) -> Result<ToolFuture, Refusal>;

    /// Parses JSON `text` in one pass and returns the call; `None` sends it down the `Value` path.
    fn bind_text(
        &self,
        check: &ArgumentCheck<'_>,
        text: &str,
        ctx: &mut ContextSlot<'_>,
    ) -> Option<Result<ToolFuture, Refusal>> {
        let _ = (check, text, ctx);
        None
    }

    /// Whether the calls run on tokio's blocking pool (plain-`fn` tools).
    fn runs_on_blocking_pool(&self) -> bool {
        false
    }

    /// The state types a call needs from its store.
    fn required_state(&self) -> Vec<StateKey> {
        Vec::new()
    }
}

pub(crate) type PrepareFn = dyn Fn(Value) -> Value + Send + Sync;

/// What a tool is, apart from the code that runs it: fixed once the tool is built, whichever way it was
/// defined (`#[tool]` or [`AgentTool::builder`]).
pub(crate) struct ToolDefinition {
    pub(crate) name: Cow<'static, str>,
    pub(crate) label: Cow<'static, str>,
    pub(crate) description: Cow<'static, str>,
    pub(crate) input_schema: SchemaSource,
    pub(crate) output_schema: SchemaSource,
    pub(crate) mode: ExecutionMode,
    pub(crate) timeout: Option<Duration>,
    pub(crate) annotations: ToolAnnotations,
    pub(crate) needs_approval: bool,
    /// Callable only from a program (see [`AgentTool::is_code_only`]).
    pub(crate) code_only: bool,
    pub(crate) options: ProviderOptions,
    pub(crate) source: SourceLocation,
    /// The checks of the types the tool asks the person for (`#[tool]`'s `ctx.elicit::<T>` calls).
    pub(crate) questions: &'static [fn() -> Result<(), String>],
    /// Whether an MCP server may run a call as a task (see [`TaskSupport`]).
    pub(crate) task: TaskSupport,
}

/// A tool: its definition, the code that runs a call, and what is worked out from the definition once
/// and kept (the argument checker, each dialect's definition).
pub(crate) struct ToolInner {
    pub(crate) definition: ToolDefinition,
    pub(crate) handler: Box<dyn ErasedHandler>,
    pub(crate) prepare_arguments: Option<Box<PrepareFn>>,
    /// The state types a call needs from its store (see [`State`](crate::tool::State)), from the handler.
    pub(crate) needs: Box<[StateKey]>,
    pub(crate) arguments: ArgumentCache,
    pub(crate) dialects: DialectCache<Value>,
}

/// A tool the model can call.
///
/// Cheap to clone (the definition is shared) and `Send + Sync`, so one tool can serve many calls at once.
/// Get one from a `#[tool]` function's generated `<fn>_tool()` constructor, or build one at run time with
/// [`AgentTool::builder`].
///
/// ```
/// use serde_json::json;
/// use yiem_core::tool::{AgentTool, ToolContext};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let echo = AgentTool::builder("echo")
///     .description("Repeat the given text.")
///     .input_schema(json!({
///         "type": "object",
///         "properties": {"text": {"type": "string"}},
///         "required": ["text"]
///     }))
///     .handler(|_ctx: ToolContext, args: serde_json::Value| async move {
///         args["text"].as_str().unwrap_or_default().to_owned()
///     })
///     .build()
///     .unwrap();
///
/// let result = echo.execute("call-1", json!({"text": "hi"})).await;
/// assert_eq!(result.text_content(), "hi");
///
/// let refused = echo.execute("call-2", json!({"text": 5})).await;
/// assert!(refused.is_error);
/// # });
/// ```
#[derive(Clone)]
pub struct AgentTool {
    pub(crate) inner: Arc<ToolInner>,
}

impl AgentTool {
    /// The one way a tool is made, from `#[tool]` and from [`AgentTool::builder`] alike: its definition,
    /// the handler that runs its calls, the step that prepares its arguments, and its argument checker.
    pub(crate) fn from_parts(
        definition: ToolDefinition,
        handler: Box<dyn ErasedHandler>,
        prepare_arguments: Option<Box<PrepareFn>>,
        arguments: ArgumentCache,
    ) -> AgentTool {
        AgentTool {
            inner: Arc::new(ToolInner {
                definition,
                needs: handler.required_state().into(),
                handler,
                prepare_arguments,
                arguments,
                dialects: DialectCache::default(),
            }),
        }
    }

    /// The name the model calls the tool by.
    pub fn name(&self) -> &str {
        &self.inner.definition.name
    }

    /// The human-readable name.
    pub fn label(&self) -> &str {
        &self.inner.definition.label
    }

    /// What the tool does, for the model.
    pub fn description(&self) -> &str {
        &self.inner.definition.description
    }

    /// The canonical JSON Schema (2020-12) of the arguments, computed once per tool.
    pub fn input_schema(&self) -> &Value {
        static EMPTY: OnceLock<Value> = OnceLock::new();
        match self.inner.definition.input_schema.get() {
            Some(schema) => schema,
            None => EMPTY.get_or_init(|| serde_json::json!({"type": "object", "properties": {}})),
        }
    }

    /// The JSON Schema of the structured output, for tools that return [`Json<T>`](crate::tool::Json).
    pub fn output_schema(&self) -> Option<&Value> {
        self.inner.definition.output_schema.get()
    }

    /// Whether the tool may run concurrently with others.
    pub fn execution_mode(&self) -> ExecutionMode {
        self.inner.definition.mode
    }

    /// Whether the tool must run alone ([`ExecutionMode::Sequential`]).
    pub(crate) fn is_sequential(&self) -> bool {
        self.execution_mode() == ExecutionMode::Sequential
    }

    /// The tool's own time limit, if it has one.
    pub fn timeout(&self) -> Option<Duration> {
        self.inner.definition.timeout
    }

    /// Whether a call waits for a person's approval before an agent runs it (see
    /// [`ApprovalPolicy`](crate::agent::ApprovalPolicy)).
    pub fn needs_approval(&self) -> bool {
        self.inner.definition.needs_approval
    }

    /// Whether an MCP server runs calls of the tool as tasks (`#[tool(task)]`, [`ToolBuilder::task`]).
    pub fn task_support(&self) -> TaskSupport {
        self.inner.definition.task
    }

    /// Whether the model may call the tool only from a program — code mode's `run_code` (see
    /// `yiem_core::code`) or a provider's sandbox (see `llm::ProgrammaticCalling`) — and not directly: `#[tool(code_only)]`
    /// or [`ToolBuilder::code_only`]. A direct call of it is refused in the pipeline, with an error that
    /// tells the model to call it from a program; its definition is not sent as a direct tool, but
    /// declared in `run_code`'s API, or sent with `allowed_callers` naming only the provider's sandbox.
    /// A program may call it whatever `CodeMode::callable_tools` or `ProgrammaticCalling::callable_tools`
    /// name. A call in hand ([`AgentTool::execute`]) is your
    /// program's, and runs.
    ///
    /// ```
    /// use yiem_core::{
    ///     exec::{ToolCall, ToolExecutor, CancellationToken}, store::ToolStore,
    ///     tool::{AgentTool, ToolContext},
    /// };
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let lookup = AgentTool::builder("lookup")
    ///     .description("Look a record up.")
    ///     .code_only()
    ///     .handler(|_ctx: ToolContext, _args: serde_json::Value| async { "found" })
    ///     .build()
    ///     .unwrap();
    /// assert!(lookup.is_code_only());
    /// let store = ToolStore::new("records");
    /// store.register(lookup).unwrap();
    /// let direct = ToolCall::new("c1", "lookup", serde_json::json!({}));
    /// let batch = ToolExecutor::new().execute(&store, vec![direct], &CancellationToken::new()).await;
    /// assert!(batch.messages[0].is_error());
    /// assert!(batch.messages[0].text_content().contains("call it from a program"));
    /// # });
    /// ```
    pub fn is_code_only(&self) -> bool {
        self.inner.definition.code_only
    }

    /// The MCP behaviour hints.
    pub fn annotations(&self) -> &ToolAnnotations {
        &self.inner.definition.annotations
    }

    /// The options of the tool's definition that only some providers read: examples of good arguments,
    /// strict mode, eager input streaming.
    pub fn provider_options(&self) -> &ProviderOptions {
        &self.inner.definition.options
    }

    /// Where the tool was defined.
    pub fn source(&self) -> SourceLocation {
        self.inner.definition.source
    }

    /// The state types the tool takes as [`State<T>`](crate::tool::State): a store must hold each before it
    /// registers the tool.
    ///
    /// ```
    /// use yiem_core::prelude::*;
    ///
    /// struct Db;
    ///
    /// /// Count the rows.
    /// #[tool]
    /// async fn rows(State(_db): State<Db>) -> String {
    ///     "0".into()
    /// }
    ///
    /// let tool = rows_tool();
    /// let needs = tool.required_state();
    /// assert_eq!(needs.len(), 1);
    /// assert!(needs[0].type_name().ends_with("::Db"));
    /// ```
    pub fn required_state(&self) -> &[StateKey] {
        &self.inner.needs
    }

    /// The tool's definition in `dialect`, ready to put in a request (computed on first use, then
    /// cached): an MCP `tools/list` entry, an OpenAI `function` tool (with `"strict": true` for strict
    /// mode), an Anthropic tool or a Gemini function declaration. What the target cannot express is a
    /// [`DialectError`] naming the tool and the type. See [`Dialect`] for what each rewrite does.
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use serde_json::json;
    /// use yiem_core::{store::Dialect, tool};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct WeatherArgs {
    ///     /// City name.
    ///     city: String,
    /// }
    ///
    /// /// Fetch the weather.
    /// #[tool]
    /// async fn weather(args: WeatherArgs) -> String {
    ///     args.city
    /// }
    ///
    /// assert_eq!(
    ///     weather_tool().definition(Dialect::Anthropic).unwrap(),
    ///     &json!({
    ///         "name": "weather",
    ///         "description": "Fetch the weather.",
    ///         "input_schema": {
    ///             "type": "object",
    ///             "properties": {"city": {"description": "City name.", "type": "string"}},
    ///             "required": ["city"]
    ///         }
    ///     })
    /// );
    /// ```
    pub fn definition(&self, dialect: Dialect) -> Result<&Value, DialectError> {
        self.inner.dialects.get_or_init(dialect, || {
            let hints = self.annotations();
            let options = &self.inner.definition.options;
            let facts = ToolFacts {
                examples: &options.examples,
                strict: options.strict,
                eager_input_streaming: options.eager_input_streaming,
                free_text: options.free_text.as_ref(),
                name: self.name(),
                label: self.label(),
                description: self.description(),
                input_schema: self.input_schema(),
                output_schema: self.output_schema(),
                hints: [
                    ("readOnlyHint", hints.read_only),
                    ("destructiveHint", hints.destructive),
                    ("idempotentHint", hints.idempotent),
                    ("openWorldHint", hints.open_world),
                ],
                needs_approval: self.needs_approval(),
                schemas_as_written: matches!(
                    self.inner.definition.input_schema,
                    SchemaSource::Ready(_)
                ),
            };
            definition::definition(&facts, dialect)
        })
    }

    /// Brings the arguments a model sent in `dialect` back to what this tool's schema and serde expect:
    /// see [`Dialect::normalize_arguments`].
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use serde_json::json;
    /// use yiem_core::{store::Dialect, tool};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct SearchArgs {
    ///     query: String,
    ///     #[serde(default = "ten")]
    ///     limit: u32,
    /// }
    /// fn ten() -> u32 { 10 }
    ///
    /// /// Search the notes.
    /// #[tool]
    /// async fn search(args: SearchArgs) -> String {
    ///     format!("{} x{}", args.query, args.limit)
    /// }
    ///
    /// let tool = search_tool();
    /// let sent = json!({"query": "rust", "limit": null}); // strict mode's way to say "no limit"
    /// let args = tool.normalize_arguments(Dialect::OpenAiStrict, sent);
    /// assert_eq!(args, json!({"query": "rust"}));
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// assert_eq!(tool.execute("c1", args).await.text_content(), "rust x10");
    /// # });
    /// ```
    pub fn normalize_arguments(&self, dialect: Dialect, args: Value) -> Value {
        dialect.normalize_arguments(self.input_schema(), args)
    }

    /// Whether the tool's code runs on tokio's blocking pool (a plain-`fn` tool): then it never holds an
    /// async thread, and the pipeline need not give it a task of its own.
    pub(crate) fn runs_on_blocking_pool(&self) -> bool {
        self.inner.handler.runs_on_blocking_pool()
    }
}

impl fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.inner.definition.name)
            .field("label", &self.inner.definition.label)
            .field("mode", &self.inner.definition.mode)
            .field("source", &self.inner.definition.source)
            .finish_non_exhaustive()
    }
}

/// Whether `name` is a valid tool name: `^[a-zA-Z0-9_-]{1,64}$`, the limit common to LLM providers.
///
/// ```
/// assert!(yiem_core::tool::is_valid_tool_name("get_weather"));
/// assert!(!yiem_core::tool::is_valid_tool_name("get weather"));
/// ```
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Words written in capitals in a default label: `export_csv` → `Export CSV`.
const ACRONYMS: &[&str] = &[
    "api", "aws", "cpu", "csv", "db", "dns", "gpu", "html", "http", "https", "id", "io", "ip",
    "json", "jwt", "llm", "mcp", "pdf", "sql", "ssh", "tcp", "toml", "udp", "ui", "uri", "url",
    "utc", "uuid", "xml", "yaml",
];

/// `get_weather` → `Get Weather`, `readFile` → `Read File`, `export_csv` → `Export CSV`: the default
/// label. Words split at `_`, `-`, spaces and lower-to-upper case changes; each is capitalised, and a
/// well-known acronym ([`ACRONYMS`]: CSV, JSON, URL, ID, ...) is written in capitals.
pub(crate) fn title_case(name: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut previous_lower = false;
    for ch in name.chars() {
        if ch == '_' || ch == '-' || ch == ' ' {
            words.push(String::new());
            previous_lower = false;
            continue;
        }
        if words.is_empty() || (ch.is_uppercase() && previous_lower) {
            words.push(String::new());
        }
        let word = words.last_mut().expect("a word was pushed above");
        if word.is_empty() {
            word.extend(ch.to_uppercase());
        } else {
            word.push(ch);
        }
        previous_lower = ch.is_lowercase() || ch.is_ascii_digit();
    }
    words.retain(|w| !w.is_empty());
    for word in &mut words {
        if ACRONYMS.contains(&word.to_lowercase().as_str()) {
            *word = word.to_uppercase();
        }
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_case_splits_snake_kebab_and_camel_case() {
        assert_eq!(title_case("get_weather"), "Get Weather");
        assert_eq!(title_case("read-file"), "Read File");
        assert_eq!(title_case("readFile"), "Read File");
        assert_eq!(title_case("list_tools"), "List Tools");
        assert_eq!(title_case("x"), "X");
        assert_eq!(title_case("get_utc2_time"), "Get Utc2 Time");
        assert_eq!(title_case("export_csv"), "Export CSV");
        assert_eq!(title_case("fetchUrl"), "Fetch URL");
        assert_eq!(title_case("get_user_id"), "Get User ID");
        assert_eq!(title_case("identify"), "Identify");
    }

    #[test]
    fn tool_names_follow_the_provider_limit() {
        assert!(is_valid_tool_name("a"));
        assert!(is_valid_tool_name(&"a".repeat(64)));
        assert!(!is_valid_tool_name(&"a".repeat(65)));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("名前"));
        assert!(!is_valid_tool_name("a.b"));
    }
}
