//! What a tool is and what its author names: [`AgentTool`] and
//! [`ToolBuilder`], the call's [`ToolContext`] and the store's
//! [`State`], what a tool returns ([`AgentToolResult`],
//! [`IntoToolResult`], [`Json`], [`Content`]), and
//! free-text tools ([`TextFormat`], [`Grammar`]).
//!
//! The [`#[tool]`](macro@crate::tool) attribute that makes one from an `async fn` is at the crate root.

pub(crate) mod context;
pub(crate) mod definition;
pub(crate) mod handler;

pub use self::context::ToolContext;
pub use self::definition::{
    AgentTool, ExecutionMode, ProviderOptions, SourceLocation, TaskSupport, ToolAnnotations,
    ToolBuilder, ToolDefinitionError, ToolFuture, ToolNamespace, is_valid_tool_name,
};
pub use crate::content::{Content, Contents, ContentsIntoIter, ResourceInfo};
pub use crate::grammar::{Grammar, GrammarSyntax, MAX_GRAMMAR_IN_DESCRIPTION, TextFormat};
pub use crate::result::{AgentToolResult, IntoToolResult, Json};
pub use crate::state::{MissingState, State, StateKey, ToolState};
