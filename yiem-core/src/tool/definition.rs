//! [`AgentTool`]: a tool the model can call — its name, label, description, JSON Schema and the code that
//! runs it — and [`ToolBuilder`] for tools defined at run time.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::args::{self, ArgumentCache, ArgumentCheck, ArgumentChecking, ArgumentError};
use crate::dialect::{Dialect, DialectCache, DialectError, ToolFacts, definition};
use crate::grammar::{Grammar, GrammarSyntax, TextFormat, free_text_schema};
use crate::result::{AgentToolResult, IntoToolResult};
use crate::state::{MissingState, StateKey};
use crate::tool::context::{ContextSlot, ToolContext};

/// The future of one bound tool call: arguments already parsed and validated, not yet running.
pub type ToolFuture = Pin<Box<dyn Future<Output = AgentToolResult> + Send + 'static>>;

/// Whether a tool may run at the same time as other tools of the same batch.
///
/// ```
/// use yiem_core::tool::ExecutionMode;
///
/// assert_eq!(ExecutionMode::default(), ExecutionMode::Sequential);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExecutionMode {
    /// Runs alone; a batch containing one sequential tool runs every call in order. The safe default.
    #[default]
    Sequential,
    /// May run concurrently with the other parallel calls of its batch.
    Parallel,
}

impl fmt::Display for ExecutionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ExecutionMode::Sequential => "sequential",
            ExecutionMode::Parallel => "parallel",
        })
    }
}

/// Hints about a tool's behaviour, published to MCP clients (`readOnlyHint`, `destructiveHint`,
/// `idempotentHint`, `openWorldHint`); `None` leaves a hint unsaid.
///
/// ```
/// use yiem_core::tool::ToolAnnotations;
///
/// let hints = ToolAnnotations::new().read_only(true);
/// assert_eq!((hints.read_only, hints.destructive), (Some(true), None));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// The tool does not change its environment.
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data.
    pub destructive: Option<bool>,
    /// Calling the tool twice with the same arguments has no further effect.
    pub idempotent: Option<bool>,
    /// The tool reaches an open world (the internet, other people).
    pub open_world: Option<bool>,
}

impl ToolAnnotations {
    /// No hints (each unknown).
    pub const fn new() -> ToolAnnotations {
        ToolAnnotations {
            read_only: None,
            destructive: None,
            idempotent: None,
            open_world: None,
        }
    }

    /// Whether the tool does not change its environment.
    #[must_use]
    pub const fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = Some(read_only);
        self
    }

    /// Whether the tool may destroy or overwrite data.
    #[must_use]
    pub const fn destructive(mut self, destructive: bool) -> Self {
        self.destructive = Some(destructive);
        self
    }

    /// Whether calling the tool twice with the same arguments has no further effect.
    #[must_use]
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = Some(idempotent);
        self
    }

    /// Whether the tool reaches an open world (the internet, other people).
    #[must_use]
    pub const fn open_world(mut self, open_world: bool) -> Self {
        self.open_world = Some(open_world);
        self
    }

    /// A tool that only looks something up in the agent's own tools: read-only, idempotent, closed
    /// world, not destructive (`list_tools`, `search_tools`).
    pub(crate) const LOOKUP: ToolAnnotations = ToolAnnotations {
        read_only: Some(true),
        destructive: Some(false),
        idempotent: Some(true),
        open_world: Some(false),
    };
}

/// The options of a tool's definition that only some providers read, each sent where the provider takes
/// it and left out elsewhere (a `tracing` debug note says so):
///
/// | option | OpenAI Chat Completions and Responses | Anthropic | Gemini | MCP |
/// |---|---|---|---|---|
/// | `examples` | left out | `input_examples` | left out | left out |
/// | `strict` | `strict: true`, the schema made strict ([`Dialect::OpenAiStrict`]) | `strict: true`, every object closed (`additionalProperties: false`) | left out | left out |
/// | `eager_input_streaming` | left out | `eager_input_streaming: true` | left out | left out |
/// | `free_text` | Responses: a `custom` tool with its `format`; Chat Completions: the grammar in the description | the grammar in the description | the grammar in the description | the grammar in the description |
///
/// Set them with `#[tool(example = "...", strict, eager_input_streaming, grammar(lark = "..."))]` or the
/// builder ([`ToolBuilder::example`], [`ToolBuilder::strict`], [`ToolBuilder::eager_input_streaming`],
/// [`ToolBuilder::grammar`]).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ProviderOptions {
    /// Examples of good arguments, each an object that fits the input schema (checked by
    /// [`ToolBuilder::build`], [`check_tools`](crate::store::check_tools()) and [`AgentTool::check_examples`]).
    pub examples: Vec<Value>,
    /// The provider guarantees the arguments fit the schema (structured outputs); the schema must be one
    /// strict mode can express ([`Dialect::OpenAiStrict`]).
    pub strict: bool,
    /// Anthropic streams the arguments without buffering them to check them as JSON first.
    pub eager_input_streaming: bool,
    /// The definition is not sent until the model finds the tool (see [`catalog`](crate::catalog)): the
    /// tool is registered, checked and callable like any other.
    pub defer_loading: bool,
    /// The tool takes free text, `{"input": "<text>"}`, maybe in a grammar's language (OpenAI's custom
    /// tools; a string parameter elsewhere): see [`TextFormat`].
    pub free_text: Option<TextFormat>,
    /// The group the tool belongs to, for a provider's own tool search: OpenAI's Responses API sends the
    /// deferred tools of one namespace together (`{"type": "namespace", "name", "description",
    /// "tools"}`), so the model sees the group's description until it searches it. An `McpClient` puts
    /// each server's tools in a namespace of their own.
    pub namespace: Option<ToolNamespace>,
}

/// A group of tools, with what the model is told of it (see [`ProviderOptions::namespace`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolNamespace {
    /// The group's name: letters, digits, `_` and `-`.
    pub name: String,
    /// What the group's tools are for, in a sentence or two.
    pub description: String,
}

impl ToolNamespace {
    /// The group `name` (anything but letters, digits, `_` and `-` becomes `_`), described as
    /// `description`.
    ///
    /// ```
    /// let crm = yiem_core::tool::ToolNamespace::new("crm tools", "Customers and their invoices.");
    /// assert_eq!(crm.name, "crm_tools");
    /// ```
    pub fn new(name: &str, description: impl Into<String>) -> Self {
        let name = name
            .chars()
            .map(
                |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    true => c,
                    false => '_',
                },
            )
            .collect();
        ToolNamespace {
            name,
            description: description.into(),
        }
    }
}

/// Where a tool was defined, for error messages such as a duplicate registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SourceLocation {
    /// The source file.
    pub file: &'static str,
    /// The line in that file.
    pub line: u32,
}

impl SourceLocation {
    /// The location of the caller (for `#[track_caller]` constructors).
    #[track_caller]
    pub fn caller() -> Self {
        let location = Location::caller();
        SourceLocation {
            file: location.file(),
            line: location.line(),
        }
    }
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

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

/// Whether an MCP server runs a call of the tool as a task (the 2026-07-28 revision's tasks
/// extension, SEP-2663): the server answers the call with a task at once, runs the call in the
/// background through the same pipeline, and the client reads its status and result by the task's id
/// (see the [MCP chapter](crate::guide::mcp#tasks)). `#[tool(task)]` or
/// `#[tool(task = "required")]`; [`ToolBuilder::task`]. Outside MCP nothing changes: an agent calls the
/// tool as any other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Calls are answered when they end (the default).
    #[default]
    Forbidden,
    /// A call from a client that declares the tasks extension is a task; from other clients, a call
    /// answered when it ends.
    Optional,
    /// Every call is a task: a client that does not declare the tasks extension gets `-32021`.
    Required,
    /// Like [`Required`](Self::Required), but the call's first questions come as the call's own
    /// `input_required` rounds (SEP-2322) before the task exists: the first round runs in the request
    /// until the tool asks, and the round that brings answers becomes the task, which runs the call
    /// again from the start with them (its later questions are the task's).
    RequiredAfterQuestions,
}

impl TaskSupport {
    /// Whether a call may be a task.
    pub fn allows_tasks(self) -> bool {
        self != TaskSupport::Forbidden
    }
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

    /// Starts a tool defined at run time (from configuration, another process or an MCP server). Its
    /// arguments are checked against the JSON Schema you give it: with the `schema-validation` feature
    /// against all of it, without it the top level (unknown properties, `required`, each property's `type`).
    #[track_caller]
    pub fn builder(name: impl Into<String>) -> ToolBuilder {
        ToolBuilder {
            name: name.into(),
            label: None,
            description: None,
            input_schema: None,
            output_schema: None,
            handler: None,
            prepare_arguments: None,
            mode: ExecutionMode::Sequential,
            timeout: None,
            annotations: ToolAnnotations::default(),
            needs_approval: false,
            code_only: false,
            options: ProviderOptions::default(),
            source: SourceLocation::caller(),
            task: TaskSupport::Forbidden,
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

    /// Checks each of the tool's [examples](ProviderOptions::examples) against its input schema (the
    /// check a call's arguments go through, in full: [`ArgumentChecking::Full`](crate::store::ArgumentChecking::Full)):
    /// the first that does not fit, by its position, with what is wrong with it.
    ///
    /// ```
    /// use serde_json::json;
    /// use yiem_core::tool::{AgentTool, ToolContext};
    ///
    /// let tool = AgentTool::builder("echo")
    ///     .description("Repeat the text.")
    ///     .input_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
    ///     .example(json!({"text": "hello"}))
    ///     .handler(|_ctx: ToolContext, _args: serde_json::Value| async move { "" })
    ///     .build()
    ///     .unwrap();
    /// assert!(tool.check_examples().is_ok());
    /// ```
    pub fn check_examples(&self) -> Result<(), (usize, ArgumentError)> {
        for (index, example) in self.inner.definition.options.examples.iter().enumerate() {
            let refused = self
                .with_argument_check(ArgumentChecking::Full, |check| {
                    (!example.is_object() || !check.is_valid(example))
                        .then(|| check.explain(example, None))
                })
                .or_else(|| self.grammar_mismatch(example).err());
            if let Some(error) = refused {
                return Err((index, error));
            }
        }
        Ok(())
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

    /// Brings raw arguments into shape: a JSON string is parsed, `null` means `{}`, anything but an object
    /// is refused; then the tool's own prepare step (if any) rewrites them.
    ///
    /// An arguments object is borrowed as it is when the tool has no prepare step.
    pub(crate) fn prepare_arguments<'a>(
        &self,
        raw: &'a Value,
    ) -> Result<Cow<'a, Value>, ArgumentError> {
        let args = args::normalize(&self.inner.definition.name, raw)?;
        Ok(match &self.inner.prepare_arguments {
            Some(prepare) => Cow::Owned(prepare(args.into_owned())),
            None => args,
        })
    }

    /// Whether the tool has a [prepare step](ToolBuilder::prepare_arguments).
    pub(crate) fn has_prepare_step(&self) -> bool {
        self.inner.prepare_arguments.is_some()
    }

    /// Runs `f` with what checking this tool's arguments needs: its name, canonical schema (looked up
    /// only if needed) and caches.
    #[inline]
    fn with_argument_check<R>(
        &self,
        checking: ArgumentChecking,
        f: impl FnOnce(&ArgumentCheck<'_>) -> R,
    ) -> R {
        let schema = || self.input_schema();
        f(&ArgumentCheck {
            tool: &self.inner.definition.name,
            schema: &schema,
            cache: &self.inner.arguments,
            checking,
        })
    }

    /// The one-pass path for arguments sent as JSON text, for a tool without a prepare step: `None` when
    /// the text must be parsed into a `Value` first (see `args::text`).
    pub(crate) fn bind_text(
        &self,
        text: &str,
        ctx: &mut ContextSlot<'_>,
        checking: ArgumentChecking,
    ) -> Option<Result<ToolFuture, Refusal>> {
        // A grammar is checked on the parsed arguments, on the `Value` path.
        if self.has_prepare_step() || self.has_grammar() {
            return None;
        }
        self.with_argument_check(checking, |check| {
            self.inner.handler.bind_text(check, text, ctx)
        })
    }

    /// Parses and validates prepared arguments and returns the call, ready to run but not started.
    #[inline]
    pub(crate) fn bind(
        &self,
        args: &Value,
        ctx: &mut ContextSlot<'_>,
        checking: ArgumentChecking,
    ) -> Result<ToolFuture, Refusal> {
        self.grammar_mismatch(args)?;
        self.with_argument_check(checking, |check| self.inner.handler.bind(check, args, ctx))
    }

    /// Whether every type the tool asks the person for (`ctx.elicit::<T>` in a `#[tool]` body) is a form
    /// MCP can show; the first that is not, with why.
    pub(crate) fn check_questions(&self) -> Result<(), String> {
        self.inner
            .definition
            .questions
            .iter()
            .try_for_each(|fits| fits())
    }

    /// Whether the tool's input is text in a grammar's language.
    fn has_grammar(&self) -> bool {
        matches!(
            self.inner.definition.options.free_text,
            Some(TextFormat::Grammar(_))
        )
    }

    /// Refuses arguments whose text is not in the language of the tool's grammar (as far as yiem checks
    /// it: see [`TextFormat`]); arguments without a string `input` go on, for the schema check to refuse.
    fn grammar_mismatch(&self, args: &Value) -> Result<(), ArgumentError> {
        match self
            .inner
            .definition
            .options
            .free_text
            .as_ref()
            .and_then(|format| format.mismatch(args))
        {
            Some(problem) => Err(ArgumentError::invalid(self.name(), "/input", problem)),
            None => Ok(()),
        }
    }
}

/// Why a call could not be bound: its arguments do not fit, or user code panicked while binding.
#[doc(hidden)]
#[derive(Debug)]
#[non_exhaustive]
pub enum Refusal {
    /// The arguments do not fit the tool. (Boxed, like the state below: a refusal is rare, and a small
    /// one keeps the `Result` every call passes along small.)
    Arguments(Box<ArgumentError>),
    /// User code panicked; the text names the tool and what panicked.
    Panicked(String),
    /// The tool needs state the call does not have.
    MissingState(Box<MissingState>),
}

impl From<ArgumentError> for Refusal {
    fn from(error: ArgumentError) -> Self {
        Refusal::Arguments(Box::new(error))
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Arguments(error) => error.fmt(f),
            Refusal::Panicked(text) => f.write_str(text),
            Refusal::MissingState(missing) => missing.fmt(f),
        }
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

/// Why a run-time tool definition was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolDefinitionError {
    /// The name does not match `^[a-zA-Z0-9_-]{1,64}$`.
    #[error(
        "tool name `{0}` is invalid: use 1 to 64 ASCII letters, digits, `_` or `-` (the limit LLM providers share)"
    )]
    InvalidName(String),
    /// No description was given.
    #[error("tool `{0}` has no description: the model needs one to know when to call it")]
    MissingDescription(String),
    /// No handler was given.
    #[error("tool `{0}` has no handler: call `.handler(...)` on the builder")]
    MissingHandler(String),
    /// An example does not fit the input schema.
    #[error(
        "example {index} (counting from 0) of tool `{name}` does not fit its input schema; fix the example or the schema: {detail}"
    )]
    InvalidExample {
        /// The tool.
        name: String,
        /// The example's position among the tool's examples, from 0.
        index: usize,
        /// What is wrong with it.
        detail: String,
    },
    /// The tool asks for strict mode and strict mode cannot express its schema.
    #[error("tool `{name}` asks for strict mode, which cannot express its schema: {detail}")]
    NotStrict {
        /// The tool.
        name: String,
        /// Why not (the strict dialect's refusal).
        detail: String,
    },
    /// The tool's regex grammar does not compile.
    #[error("the grammar of tool `{name}` is not usable: {detail}")]
    InvalidGrammar {
        /// The tool.
        name: String,
        /// Why not (the regex engine's error).
        detail: String,
    },
    /// The input schema is not a valid JSON Schema, or does not describe an object.
    #[error("the input schema of tool `{name}` is not usable: {detail}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What is wrong with the schema.
        detail: String,
    },
}

/// Builds an [`AgentTool`] at run time. Start with [`AgentTool::builder`].
#[must_use]
pub struct ToolBuilder {
    name: String,
    label: Option<String>,
    description: Option<String>,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    handler: Option<Arc<DynHandler>>,
    prepare_arguments: Option<Box<PrepareFn>>,
    mode: ExecutionMode,
    timeout: Option<Duration>,
    annotations: ToolAnnotations,
    needs_approval: bool,
    code_only: bool,
    options: ProviderOptions,
    source: SourceLocation,
    task: TaskSupport,
}

type DynHandler = dyn Fn(ToolContext, Value) -> ToolFuture + Send + Sync;

impl ToolBuilder {
    /// The human-readable name (default: the name in title case).
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// What the tool does, for the model. Required.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The JSON Schema of the arguments (default: an object with no properties). Arguments are validated
    /// against it before the handler runs.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// The JSON Schema of the structured output.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Lets the tool run concurrently with other parallel tools.
    pub fn parallel(mut self) -> Self {
        self.mode = ExecutionMode::Parallel;
        self
    }

    /// Sets the execution mode.
    pub fn execution_mode(mut self, mode: ExecutionMode) -> Self {
        self.mode = mode;
        self
    }

    /// The tool's time limit.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// The MCP behaviour hints.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Makes an agent wait for a person's approval before it runs a call of this tool.
    pub fn needs_approval(mut self) -> Self {
        self.needs_approval = true;
        self
    }

    /// Whether an MCP server runs calls of the tool as tasks (see [`TaskSupport`]; `#[tool(task)]`).
    ///
    /// ```
    /// use yiem_core::tool::{AgentTool, TaskSupport};
    ///
    /// let report = AgentTool::builder("build_report")
    ///     .description("Build the quarterly report (takes minutes).")
    ///     .task(TaskSupport::Optional)
    ///     .handler(|_, _| async { "done" })
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(report.task_support(), TaskSupport::Optional);
    /// ```
    pub fn task(mut self, support: TaskSupport) -> Self {
        self.task = support;
        self
    }

    /// Lets the model call the tool only from a program (code mode's `run_code`, or a provider's
    /// sandbox), not directly: see [`AgentTool::is_code_only`].
    pub fn code_only(mut self) -> Self {
        self.code_only = true;
        self
    }

    /// Adds an example of good arguments (Anthropic's `input_examples`; see [`ProviderOptions`]). `build`
    /// refuses an example that does not fit the input schema.
    pub fn example(mut self, arguments: Value) -> Self {
        self.options.examples.push(arguments);
        self
    }

    /// Asks the providers that have it for strict mode (see [`ProviderOptions`]). `build` refuses a
    /// schema strict mode cannot express.
    pub fn strict(mut self) -> Self {
        self.options.strict = true;
        self
    }

    /// Asks Anthropic to stream the arguments without buffering them (see [`ProviderOptions`]).
    pub fn eager_input_streaming(mut self) -> Self {
        self.options.eager_input_streaming = true;
        self
    }

    /// Defers the tool's definition until the model finds it (see [`catalog`](crate::catalog)).
    pub fn defer_loading(mut self) -> Self {
        self.options.defer_loading = true;
        self
    }

    /// Puts the tool in a group for a provider's own tool search ([`ProviderOptions::namespace`]).
    pub fn namespace(mut self, namespace: ToolNamespace) -> Self {
        self.options.namespace = Some(namespace);
        self
    }

    /// Makes the tool take free text: its arguments are `{"input": "<text>"}` (the input schema is set
    /// for you; `build` refuses an [`input_schema`](Self::input_schema) beside it), and OpenAI's Responses
    /// API sends it as a custom tool. See [`TextFormat`].
    pub fn free_text(mut self) -> Self {
        self.options.free_text = Some(TextFormat::Text);
        self
    }

    /// Makes the tool take free text in the language of a grammar written in `syntax`, as
    /// [`free_text`](Self::free_text) does; OpenAI's Responses API constrains the model's text to the
    /// grammar, other providers read it in the description, and yiem checks a regex grammar itself (see
    /// [`TextFormat`]). `build` refuses a regex that does not compile.
    ///
    /// ```
    /// use yiem_core::{store::Dialect, tool::{AgentTool, GrammarSyntax, ToolContext}};
    ///
    /// let sql = AgentTool::builder("run_sql")
    ///     .description("Run a read-only SQL query.")
    ///     .grammar(GrammarSyntax::Lark, "start: \"SELECT \" /[a-z_, ]+/ \" FROM \" /[a-z_]+/")
    ///     .handler(|_ctx: ToolContext, args: serde_json::Value| async move {
    ///         format!("ran {}", args["input"])
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let definition = sql.definition(Dialect::Anthropic).unwrap();
    /// assert_eq!(definition["input_schema"]["required"], serde_json::json!(["input"]));
    /// assert!(definition["description"].as_str().unwrap().contains("lark grammar"));
    /// ```
    pub fn grammar(mut self, syntax: GrammarSyntax, definition: impl Into<String>) -> Self {
        let grammar = Grammar::new(syntax, definition.into());
        self.options.free_text = Some(TextFormat::Grammar(grammar));
        self
    }

    /// Rewrites the raw JSON arguments before validation (e.g. to accept a legacy shape).
    pub fn prepare_arguments(
        mut self,
        prepare: impl Fn(Value) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.prepare_arguments = Some(Box::new(prepare));
        self
    }

    /// The code that runs the tool, given the context and the validated JSON arguments.
    pub fn handler<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ToolContext, Value) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoToolResult,
    {
        self.handler = Some(Arc::new(move |ctx, args| {
            let call = handler(ctx, args);
            Box::pin(async move { call.await.into_tool_result() })
        }));
        self
    }

    /// Checks the definition and builds the tool.
    pub fn build(self) -> Result<AgentTool, ToolDefinitionError> {
        let name = self.name;
        if !is_valid_tool_name(&name) {
            return Err(ToolDefinitionError::InvalidName(name));
        }
        let description = match self.description {
            Some(text) if !text.trim().is_empty() => text,
            _ => return Err(ToolDefinitionError::MissingDescription(name)),
        };
        let Some(handler) = self.handler else {
            return Err(ToolDefinitionError::MissingHandler(name));
        };
        let schema_error = |detail: String| ToolDefinitionError::InvalidSchema {
            name: name.clone(),
            detail,
        };
        let schema = match (self.input_schema, &self.options.free_text) {
            (Some(_), Some(_)) => {
                return Err(schema_error(
                    "a free-text tool's arguments are `{\"input\": \"<text>\"}`, and its schema is set for \
                     you: leave out `.input_schema(...)`, or `.free_text()` and `.grammar(...)`"
                        .into(),
                ));
            }
            (None, Some(_)) => free_text_schema(),
            (Some(schema), None) => schema,
            (None, None) => serde_json::json!({"type": "object", "properties": {}}),
        };
        if let Some(error) = self
            .options
            .free_text
            .as_ref()
            .and_then(TextFormat::grammar)
            .and_then(Grammar::compile_error)
        {
            return Err(ToolDefinitionError::InvalidGrammar {
                name,
                detail: format!("the regex does not compile: {error}"),
            });
        }
        if !describes_object(&schema) {
            return Err(schema_error(
                "tool arguments are a JSON object: the schema needs `\"type\": \"object\"`".into(),
            ));
        }
        #[cfg(feature = "schema-validation")]
        let arguments = ArgumentCache::with_validator(
            jsonschema::validator_for(&schema).map_err(|e| schema_error(e.to_string()))?,
        );
        #[cfg(not(feature = "schema-validation"))]
        let arguments = ArgumentCache::default();
        let label = self.label.unwrap_or_else(|| title_case(&name));
        let definition = ToolDefinition {
            label: label.into(),
            description: description.into(),
            input_schema: SchemaSource::Ready(Some(schema)),
            output_schema: SchemaSource::Ready(self.output_schema),
            mode: self.mode,
            timeout: self.timeout,
            annotations: self.annotations,
            needs_approval: self.needs_approval,
            code_only: self.code_only,
            options: self.options,
            source: self.source,
            questions: &[],
            task: self.task,
            name: name.into(),
        };
        let tool = AgentTool::from_parts(
            definition,
            Box::new(SchemaHandler { handler }),
            self.prepare_arguments,
            arguments,
        );
        if let Err((index, error)) = tool.check_examples() {
            return Err(ToolDefinitionError::InvalidExample {
                name: tool.name().to_owned(),
                index,
                detail: error.to_string(),
            });
        }
        if tool.inner.definition.options.strict
            && let Err(error) = tool.definition(Dialect::OpenAiStrict)
        {
            return Err(ToolDefinitionError::NotStrict {
                name: tool.name().to_owned(),
                detail: error.to_string(),
            });
        }
        Ok(tool)
    }
}

fn describes_object(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(_) => false,
        None => schema.get("properties").is_some(),
    }
}

/// A run-time tool's handler: validates the arguments against the tool's JSON Schema first.
struct SchemaHandler {
    handler: Arc<DynHandler>,
}

impl ErasedHandler for SchemaHandler {
    fn bind(
        &self,
        check: &ArgumentCheck<'_>,
        args: &Value,
        ctx: &mut ContextSlot<'_>,
    ) -> Result<ToolFuture, Refusal> {
        if !check.is_valid(args) {
            return Err(check.explain(args, None).into());
        }
        let args = args.clone();
        let ctx = ctx.get().clone();
        crate::guard::catch(|| (self.handler)(ctx, args)).map_err(|panic| {
            Refusal::Panicked(format!(
                "the handler of tool `{}` panicked before it returned its future: {panic}",
                check.tool()
            ))
        })
    }
}

impl std::fmt::Debug for SchemaCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaCell").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for ToolBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolBuilder").finish_non_exhaustive()
    }
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
