//! What a tool returns: [`AgentToolResult`], the [`IntoToolResult`] conversion that lets a `#[tool]`
//! function return ordinary Rust types, and [`Json`] for structured output.

use std::fmt::Display;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::Content;

/// Token usage that a tool (or a model) reports.
///
/// ```
/// use yiem_core::Usage;
///
/// let usage = Usage { input_tokens: 10, output_tokens: 5, ..Usage::default() };
/// assert_eq!(usage.total(), 15);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Tokens read.
    pub input_tokens: u64,
    /// Tokens written.
    pub output_tokens: u64,
    /// Input tokens served from a cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to a cache.
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// The outcome of one tool execution.
///
/// A tool that fails still produces a result (with `is_error` set), so every call the model makes gets an
/// answer it can read.
///
/// ```
/// use yiem_core::AgentToolResult;
///
/// let ok = AgentToolResult::text("done").with_terminate(true);
/// assert_eq!(ok.text_content(), "done");
/// assert!(ok.terminate && !ok.is_error);
///
/// let err = AgentToolResult::error("file not found: a.txt");
/// assert!(err.is_error);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentToolResult {
    /// What the model sees.
    pub content: Vec<Content>,
    /// Tool-specific details for the application (not sent to the model); `null` when there are none.
    #[serde(default)]
    pub details: Value,
    /// Structured output (from [`Json`]); sent to MCP clients as `structuredContent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Tokens the tool itself spent, if it called a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Ask the agent loop to stop after this batch (it stops only when every result in the batch asks).
    #[serde(default)]
    pub terminate: bool,
    /// Names of tools this call registered, so the agent can offer them from the next turn on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_tool_names: Vec<String>,
    /// Whether this result reports a failure.
    #[serde(default)]
    pub is_error: bool,
}

impl AgentToolResult {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        AgentToolResult {
            content: vec![Content::text(text)],
            ..Self::default()
        }
    }

    /// An error result with one text block, written for the model that must recover.
    pub fn error(text: impl Into<String>) -> Self {
        AgentToolResult {
            content: vec![Content::text(text)],
            is_error: true,
            ..Self::default()
        }
    }

    /// A successful result with the given content blocks.
    pub fn with_content(content: Vec<Content>) -> Self {
        AgentToolResult {
            content,
            ..Self::default()
        }
    }

    /// Sets [`details`](Self::details).
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// Sets [`usage`](Self::usage).
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets [`terminate`](Self::terminate).
    pub fn with_terminate(mut self, terminate: bool) -> Self {
        self.terminate = terminate;
        self
    }

    /// Sets [`added_tool_names`](Self::added_tool_names).
    pub fn with_added_tools(mut self, names: Vec<String>) -> Self {
        self.added_tool_names = names;
        self
    }

    /// All text blocks joined with newlines (images are left out).
    pub fn text_content(&self) -> String {
        crate::content::joined_text(&self.content)
    }
}

/// Converts what a tool function returns into an [`AgentToolResult`].
///
/// Implemented for `String`, `&'static str`, `()`, [`AgentToolResult`], [`Json<T>`] and `Result<T, E>` where
/// `T: IntoToolResult` and `E: Display` (an `Err` becomes an error result whose text is the error's `Display`).
///
/// ```
/// use yiem_core::IntoToolResult;
///
/// let ok: Result<String, std::io::Error> = Ok("fine".into());
/// assert!(!ok.into_tool_result().is_error);
///
/// let err: Result<String, String> = Err("disk full".into());
/// let result = err.into_tool_result();
/// assert!(result.is_error);
/// assert_eq!(result.text_content(), "disk full");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    label = "this type does not implement `IntoToolResult`",
    note = "return `String`, `&'static str`, `()`, `AgentToolResult`, `Json<T>` (T: Serialize + JsonSchema) or `Result<T, E>` where T is one of these and E: Display"
)]
pub trait IntoToolResult {
    /// Performs the conversion.
    fn into_tool_result(self) -> AgentToolResult;

    /// The JSON Schema of the structured output, for types that have one ([`Json<T>`]).
    fn output_schema() -> Option<Value>
    where
        Self: Sized,
    {
        None
    }
}

impl IntoToolResult for AgentToolResult {
    fn into_tool_result(self) -> AgentToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> AgentToolResult {
        AgentToolResult::text(self)
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> AgentToolResult {
        AgentToolResult::text(self)
    }
}

impl IntoToolResult for () {
    fn into_tool_result(self) -> AgentToolResult {
        AgentToolResult::default()
    }
}

impl IntoToolResult for Content {
    fn into_tool_result(self) -> AgentToolResult {
        AgentToolResult::with_content(vec![self])
    }
}

impl IntoToolResult for Vec<Content> {
    fn into_tool_result(self) -> AgentToolResult {
        AgentToolResult::with_content(self)
    }
}

impl<T: IntoToolResult, E: Display> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> AgentToolResult {
        match self {
            Ok(value) => value.into_tool_result(),
            Err(error) => AgentToolResult::error(error.to_string()),
        }
    }

    fn output_schema() -> Option<Value> {
        T::output_schema()
    }
}

/// Structured tool output: the value is sent as JSON text to the model and as structured content (with an
/// output schema) to clients that understand it, such as MCP clients.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Serialize;
/// use yiem_core::{IntoToolResult, Json};
///
/// #[derive(Serialize, JsonSchema)]
/// struct Sum {
///     total: i64,
/// }
///
/// let result = Json(Sum { total: 3 }).into_tool_result();
/// assert_eq!(result.text_content(), r#"{"total":3}"#);
/// assert_eq!(result.structured_content, Some(serde_json::json!({"total": 3})));
/// assert!(<Json<Sum> as IntoToolResult>::output_schema().is_some());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: Serialize + JsonSchema> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> AgentToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => AgentToolResult {
                content: vec![Content::text(value.to_string())],
                structured_content: Some(value),
                ..AgentToolResult::default()
            },
            Err(error) => AgentToolResult::error(format!(
                "the tool's output could not be serialized to JSON: {error}"
            )),
        }
    }

    fn output_schema() -> Option<Value> {
        Some(schemars::schema_for!(T).to_value())
    }
}
