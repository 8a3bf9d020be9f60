//! What a tool returns: [`AgentToolResult`], the [`IntoToolResult`] conversion that lets a `#[tool]`
//! function return ordinary Rust types, and [`Json`] for structured output.

use std::fmt::{self, Display};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::{Content, Contents};

/// Token usage that a tool (or a model) reports.
///
/// ```
/// use yiem_core::message::Usage;
///
/// let usage = Usage::new(10, 5);
/// assert_eq!(usage.total(), 15);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
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
    /// Adds `more` to these counts, saturating: a provider that reports absurd counts must not make a
    /// run panic.
    pub(crate) fn add(&mut self, more: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(more.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(more.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(more.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(more.cache_write_tokens);
    }

    /// `input` tokens read and `output` tokens written, nothing cached.
    pub fn new(input: u64, output: u64) -> Self {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    /// With `read` input tokens read from the provider's prompt cache and `written` written to it.
    #[must_use]
    pub fn cache(mut self, read: u64, written: u64) -> Self {
        self.cache_read_tokens = read;
        self.cache_write_tokens = written;
        self
    }

    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// The outcome of one tool execution.
///
/// A tool that fails still produces a result (with `is_error` set), so every call the model makes gets an
/// answer it can read. What the model sees ([`content`](Self::content)) and the two flags are fields; the
/// parts most results do not have — [details](Self::details), [structured
/// content](Self::structured_content), [usage](Self::usage) and [added tools](Self::added_tool_names) —
/// are kept out of line and read with methods, so a plain text result is small and costs one allocation
/// (its text).
///
/// ```
/// use serde_json::json;
/// use yiem_core::{message::Usage, tool::AgentToolResult};
///
/// let ok = AgentToolResult::text("done").with_terminate(true);
/// assert_eq!(ok.text_content(), "done");
/// assert!(ok.terminate && !ok.is_error);
/// assert!(ok.details().is_null());
///
/// let measured = AgentToolResult::text("3 rows")
///     .with_details(json!({"rows": 3}))
///     .with_usage(Usage::new(7, 0));
/// assert_eq!(measured.details()["rows"], 3);
/// assert_eq!(measured.usage().map(|usage| usage.input_tokens), Some(7));
///
/// let err = AgentToolResult::error("file not found: a.txt");
/// assert!(err.is_error);
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct AgentToolResult {
    /// What the model sees.
    pub content: Contents,
    /// Ask the agent loop to stop after this batch (it stops only when every result in the batch asks).
    pub terminate: bool,
    /// Whether this result reports a failure.
    pub is_error: bool,
    /// Details, structured content, usage and added tools; `None` when the result has none of them.
    extras: Option<Box<Extras>>,
}

/// The parts of a result most results do not have.
#[derive(Clone, Debug, Default, PartialEq)]
struct Extras {
    details: Value,
    structured_content: Option<Value>,
    usage: Option<Usage>,
    added_tool_names: Vec<String>,
    loaded_tool_names: Vec<String>,
    /// The tool panicked: the result is the pipeline's, not the tool's (an MCP task then fails).
    panicked: bool,
}

static NO_DETAILS: Value = Value::Null;

impl AgentToolResult {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        // Every field written out: `..Self::default()` would build (and drop) a default content first.
        AgentToolResult {
            content: Contents::from(Content::text(text)),
            terminate: false,
            is_error: false,
            extras: None,
        }
    }

    /// An error result with one text block, written for the model that must recover.
    pub fn error(text: impl Into<String>) -> Self {
        AgentToolResult {
            content: Contents::from(Content::text(text)),
            terminate: false,
            is_error: true,
            extras: None,
        }
    }

    /// A successful result with the given content blocks.
    pub fn with_content(content: impl Into<Contents>) -> Self {
        AgentToolResult {
            content: content.into(),
            ..Self::default()
        }
    }

    fn extras_mut(&mut self) -> &mut Extras {
        self.extras.get_or_insert_with(Box::default)
    }

    /// Marks the result as the pipeline's answer for a tool that panicked.
    pub(crate) fn mark_panicked(mut self) -> Self {
        self.extras_mut().panicked = true;
        self
    }

    /// Whether the tool panicked (see [`mark_panicked`](Self::mark_panicked)): an MCP task then fails.
    #[cfg(feature = "mcp")]
    pub(crate) fn panicked(&self) -> bool {
        self.extras.as_ref().is_some_and(|extras| extras.panicked)
    }

    /// Tool-specific details for the application (not sent to the model); `null` when there are none.
    pub fn details(&self) -> &Value {
        self.extras
            .as_ref()
            .map_or(&NO_DETAILS, |extras| &extras.details)
    }

    /// Sets [`details`](Self::details).
    pub fn with_details(mut self, details: Value) -> Self {
        self.set_details(details);
        self
    }

    /// The [`details`](Self::details), to change in place.
    pub fn details_mut(&mut self) -> &mut Value {
        &mut self.extras_mut().details
    }

    /// Replaces [`details`](Self::details).
    pub fn set_details(&mut self, details: Value) {
        if details.is_null() && self.extras.is_none() {
            return;
        }
        self.extras_mut().details = details;
    }

    /// Structured output (from [`Json`]); sent to MCP clients as `structuredContent`.
    pub fn structured_content(&self) -> Option<&Value> {
        self.extras.as_ref()?.structured_content.as_ref()
    }

    /// Sets [`structured_content`](Self::structured_content).
    pub fn with_structured_content(mut self, value: Value) -> Self {
        self.extras_mut().structured_content = Some(value);
        self
    }

    /// Takes [`structured_content`](Self::structured_content) out of the result.
    pub fn take_structured_content(&mut self) -> Option<Value> {
        self.extras.as_mut()?.structured_content.take()
    }

    /// Tokens the tool itself spent, if it called a model.
    pub fn usage(&self) -> Option<Usage> {
        self.extras.as_ref()?.usage
    }

    /// Sets [`usage`](Self::usage).
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.extras_mut().usage = Some(usage);
        self
    }

    /// Sets [`terminate`](Self::terminate).
    pub fn with_terminate(mut self, terminate: bool) -> Self {
        self.terminate = terminate;
        self
    }

    /// Names of tools this call registered, so the agent can offer them from the next turn on.
    pub fn added_tool_names(&self) -> &[String] {
        self.extras
            .as_ref()
            .map_or(&[], |extras| extras.added_tool_names.as_slice())
    }

    /// Sets [`added_tool_names`](Self::added_tool_names).
    pub fn with_added_tools(mut self, names: Vec<String>) -> Self {
        if names.is_empty() && self.extras.is_none() {
            return self;
        }
        self.extras_mut().added_tool_names = names;
        self
    }

    /// Names of deferred tools this call found (a tool search's result), so the agent sends their
    /// definitions from the next request on (see [`catalog`](crate::catalog)).
    pub fn loaded_tool_names(&self) -> &[String] {
        self.extras
            .as_ref()
            .map_or(&[], |extras| extras.loaded_tool_names.as_slice())
    }

    /// Sets [`loaded_tool_names`](Self::loaded_tool_names).
    pub fn with_loaded_tools(mut self, names: Vec<String>) -> Self {
        if names.is_empty() && self.extras.is_none() {
            return self;
        }
        self.extras_mut().loaded_tool_names = names;
        self
    }

    /// All text blocks joined with newlines (images are left out).
    pub fn text_content(&self) -> String {
        crate::content::joined_text(&self.content)
    }
}

impl PartialEq for AgentToolResult {
    fn eq(&self, other: &Self) -> bool {
        self.content == other.content
            && self.terminate == other.terminate
            && self.is_error == other.is_error
            && self.details() == other.details()
            && self.structured_content() == other.structured_content()
            && self.usage() == other.usage()
            && self.added_tool_names() == other.added_tool_names()
            && self.loaded_tool_names() == other.loaded_tool_names()
    }
}

impl fmt::Debug for AgentToolResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("AgentToolResult");
        out.field("content", &self.content);
        if !self.details().is_null() {
            out.field("details", self.details());
        }
        if let Some(structured) = self.structured_content() {
            out.field("structured_content", structured);
        }
        if let Some(usage) = self.usage() {
            out.field("usage", &usage);
        }
        if !self.added_tool_names().is_empty() {
            out.field("added_tool_names", &self.added_tool_names());
        }
        if !self.loaded_tool_names().is_empty() {
            out.field("loaded_tool_names", &self.loaded_tool_names());
        }
        out.field("terminate", &self.terminate)
            .field("is_error", &self.is_error)
            .finish()
    }
}

/// A result as it is written: every part flat, in one object.
#[derive(Serialize)]
#[serde(rename = "AgentToolResult")]
struct WireRef<'a> {
    content: &'a [Content],
    details: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
    terminate: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    added_tool_names: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    loaded_tool_names: &'a [String],
    is_error: bool,
}

/// A result as it is read.
#[derive(Deserialize)]
#[serde(rename = "AgentToolResult")]
struct Wire {
    content: Contents,
    #[serde(default)]
    details: Value,
    #[serde(default)]
    structured_content: Option<Value>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    terminate: bool,
    #[serde(default)]
    added_tool_names: Vec<String>,
    #[serde(default)]
    loaded_tool_names: Vec<String>,
    #[serde(default)]
    is_error: bool,
}

impl Serialize for AgentToolResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireRef {
            content: &self.content,
            details: self.details(),
            structured_content: self.structured_content(),
            usage: self.usage(),
            terminate: self.terminate,
            added_tool_names: self.added_tool_names(),
            loaded_tool_names: self.loaded_tool_names(),
            is_error: self.is_error,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for AgentToolResult {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(deserializer)?;
        let extras = Extras {
            details: wire.details,
            structured_content: wire.structured_content,
            usage: wire.usage,
            added_tool_names: wire.added_tool_names,
            loaded_tool_names: wire.loaded_tool_names,
            panicked: false,
        };
        Ok(AgentToolResult {
            content: wire.content,
            terminate: wire.terminate,
            is_error: wire.is_error,
            extras: (extras != Extras::default()).then(|| Box::new(extras)),
        })
    }
}

/// Converts what a tool function returns into an [`AgentToolResult`].
///
/// Implemented for `String`, `&'static str`, `()`, [`AgentToolResult`], [`Json<T>`] and `Result<T, E>` where
/// `T: IntoToolResult` and `E: Display` (an `Err` becomes an error result whose text is the error's `Display`).
///
/// ```
/// use yiem_core::tool::IntoToolResult;
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
        AgentToolResult::with_content(self)
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
/// use yiem_core::tool::{IntoToolResult, Json};
///
/// #[derive(Serialize, JsonSchema)]
/// struct Sum {
///     total: i64,
/// }
///
/// let result = Json(Sum { total: 3 }).into_tool_result();
/// assert_eq!(result.text_content(), r#"{"total":3}"#);
/// assert_eq!(result.structured_content(), Some(&serde_json::json!({"total": 3})));
/// assert!(<Json<Sum> as IntoToolResult>::output_schema().is_some());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: Serialize + JsonSchema> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> AgentToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => AgentToolResult::text(value.to_string()).with_structured_content(value),
            Err(error) => AgentToolResult::error(format!(
                "the tool's output could not be serialized to JSON: {error}"
            )),
        }
    }

    fn output_schema() -> Option<Value> {
        Some(schemars::schema_for!(T).to_value())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_result_is_written_flat_as_before_and_read_back_whole() {
        let plain = AgentToolResult::text("done");
        assert_eq!(
            serde_json::to_value(&plain).unwrap(),
            json!({"content": [{"type": "text", "text": "done"}], "details": null, "terminate": false, "is_error": false})
        );
        let full = AgentToolResult::text("{\"n\":1}")
            .with_details(json!({"rows": 1}))
            .with_structured_content(json!({"n": 1}))
            .with_usage(Usage::new(2, 0))
            .with_added_tools(vec!["late".into()])
            .with_terminate(true);
        let written = serde_json::to_value(&full).unwrap();
        assert_eq!(
            written,
            json!({
                "content": [{"type": "text", "text": "{\"n\":1}"}],
                "details": {"rows": 1},
                "structured_content": {"n": 1},
                "usage": {"input_tokens": 2, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0},
                "terminate": true,
                "added_tool_names": ["late"],
                "is_error": false
            })
        );
        assert_eq!(
            serde_json::from_value::<AgentToolResult>(written).unwrap(),
            full
        );
        let read: AgentToolResult =
            serde_json::from_value(json!({"content": [], "is_error": true})).unwrap();
        let mut expected = AgentToolResult::with_content(Vec::<Content>::new());
        expected.is_error = true;
        assert_eq!(read, expected);
        assert!(serde_json::from_value::<AgentToolResult>(json!({"details": 1})).is_err());
    }

    #[test]
    fn parts_set_to_nothing_compare_equal_to_parts_never_set() {
        let mut result = AgentToolResult::text("x").with_details(json!({"a": 1}));
        assert_ne!(result, AgentToolResult::text("x"));
        result.set_details(Value::Null);
        assert_eq!(result, AgentToolResult::text("x"));
        assert_eq!(result.take_structured_content(), None);
        result.details_mut()["b"] = json!(2);
        assert_eq!(result.details(), &json!({"b": 2}));
        let debug = format!("{result:?}");
        assert!(
            debug.contains("details") && !debug.contains("usage"),
            "{debug}"
        );
    }

    #[test]
    fn a_result_is_small() {
        // One inline block, two flags and a pointer to the rarely used parts: a result moves cheaply
        // through the futures that carry it.
        assert!(std::mem::size_of::<AgentToolResult>() <= 64);
    }
}
