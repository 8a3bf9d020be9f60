//! [`ToolBuilder`]: a tool defined at run time (from configuration, another process or an MCP server),
//! its definition checked when built ([`ToolDefinitionError`]), its arguments checked against the JSON
//! Schema it was given.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{
    AgentTool, ErasedHandler, ExecutionMode, PrepareFn, ProviderOptions, Refusal, SchemaSource,
    SourceLocation, TaskSupport, ToolAnnotations, ToolDefinition, ToolFuture, ToolNamespace,
    is_valid_tool_name, title_case,
};
use crate::args::{ArgumentCache, ArgumentCheck};
use crate::dialect::Dialect;
use crate::grammar::{Grammar, GrammarSyntax, TextFormat, free_text_schema};
use crate::result::IntoToolResult;
use crate::tool::context::{ContextSlot, ToolContext};

impl AgentTool {
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

impl std::fmt::Debug for ToolBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolBuilder").finish_non_exhaustive()
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
