//! What a tool's definition says besides its schema and its code: whether its calls may run at once
//! ([`ExecutionMode`]), its hints to MCP clients ([`ToolAnnotations`]), the options only some providers
//! read ([`ProviderOptions`], [`ToolNamespace`]), whether MCP runs its calls as tasks ([`TaskSupport`]),
//! and where it was defined ([`SourceLocation`]).

use std::fmt;
use std::panic::Location;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::grammar::TextFormat;

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
/// | `strict` | `strict: true`, the schema made strict ([`Dialect::OpenAiStrict`](crate::store::Dialect::OpenAiStrict)) | `strict: true`, every object closed (`additionalProperties: false`) | left out | left out |
/// | `eager_input_streaming` | left out | `eager_input_streaming: true` | left out | left out |
/// | `free_text` | Responses: a `custom` tool with its `format`; Chat Completions: the grammar in the description | the grammar in the description | the grammar in the description | the grammar in the description |
///
/// Set them with `#[tool(example = "...", strict, eager_input_streaming, grammar(lark = "..."))]` or the
/// builder ([`ToolBuilder::example`](crate::tool::ToolBuilder::example), [`ToolBuilder::strict`](crate::tool::ToolBuilder::strict), [`ToolBuilder::eager_input_streaming`](crate::tool::ToolBuilder::eager_input_streaming),
/// [`ToolBuilder::grammar`](crate::tool::ToolBuilder::grammar)).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ProviderOptions {
    /// Examples of good arguments, each an object that fits the input schema (checked by
    /// [`ToolBuilder::build`](crate::tool::ToolBuilder::build), [`check_tools`](crate::store::check_tools()) and [`AgentTool::check_examples`](crate::tool::AgentTool::check_examples)).
    pub examples: Vec<Value>,
    /// The provider guarantees the arguments fit the schema (structured outputs); the schema must be one
    /// strict mode can express ([`Dialect::OpenAiStrict`](crate::store::Dialect::OpenAiStrict)).
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

/// Whether an MCP server runs a call of the tool as a task (the 2026-07-28 revision's tasks
/// extension, SEP-2663): the server answers the call with a task at once, runs the call in the
/// background through the same pipeline, and the client reads its status and result by the task's id
/// (see the [MCP chapter](crate::guide::mcp#tasks)). `#[tool(task)]` or
/// `#[tool(task = "required")]`; [`ToolBuilder::task`](crate::tool::ToolBuilder::task). Outside MCP nothing changes: an agent calls the
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
