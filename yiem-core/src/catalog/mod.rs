//! Large catalogs: deferred tools and tool search.
//!
//! An agent connected to a few MCP servers holds hundreds of tools. Sending every definition with every
//! request makes the request grow with the catalog, breaks the provider's prompt cache whenever a server's
//! list changes, and makes the model pick worse. A **deferred** tool is registered, checked and callable
//! like any other, but its definition is not sent until the model has found it:
//!
//! - mark a tool deferred with `#[tool(defer_loading)]` or [`ToolBuilder::defer_loading`](crate::tool::ToolBuilder::defer_loading),
//!   a whole store with [`ToolStore::with_deferred_loading`](crate::store::ToolStore::with_deferred_loading), or some of a store's tools with
//!   [`ToolStore::defer_loading`](crate::store::ToolStore::defer_loading) (an MCP server's, say: [`defer_when_large`] does it when the catalog is
//!   large);
//! - the model finds deferred tools by searching. Where the provider has its own tool search
//!   (Anthropic's `tool_search_tool_bm25`, OpenAI Responses' `tool_search`), the provider searches: every
//!   deferred definition goes with `defer_loading: true`, and the provider sends back what it found
//!   (`tool_reference`s, `tool_search_output`). For every other model (Chat Completions servers, Gemini, the
//!   scripted model) the [`SEARCH_TOOLS`] tool made by [`ToolSearch::tool`] ranks the deferred tools for a
//!   query and loads the best `k`. A provider with its own search leaves that tool out and offers its own;
//! - a run remembers which tools the model has reached — found by a search, or called by name (a deferred
//!   tool called without a search runs like any other, its arguments checked, and counts as loaded) —
//!   in [`AgentRun::loaded_tools`](crate::agent::AgentRun::loaded_tools), part of the saved run, so a resumed run
//!   keeps them. A request sends the tools that are not deferred, in registration order, then the loaded
//!   deferred tools in the order they were loaded: each new request's list extends the last one's, so
//!   the provider's prompt cache stays valid.
//!
//! The lists a request carries are made once per store version and set of loaded tools
//! ([`RequestTools`]); the deferred part costs nothing per request. A provider with its own search sends
//! the same list every time (the tools not deferred, its search tool, every deferred tool marked
//! `defer_loading`), and its search loads what it finds from the conversation.
//!
//! ```
//! use yiem_core::{catalog, store::ToolStore, tool::AgentTool};
//!
//! let store = ToolStore::new("agent");
//! for name in ["read_file", "send_invoice", "cancel_invoice"] {
//!     let tool = AgentTool::builder(name)
//!         .description(format!("{name} does its job."))
//!         .handler(|_, _| async { "ok" });
//!     let tool = if name == "read_file" { tool } else { tool.defer_loading() };
//!     store.register(tool.build().unwrap()).unwrap();
//! }
//! assert!(store.is_deferred("send_invoice"));
//! // Nothing loaded: only `read_file` is sent; both invoice tools wait to be found.
//! let lists = catalog::RequestTools::of(&store, &[]);
//! assert_eq!(lists.tools.iter().map(|t| t.name()).collect::<Vec<_>>(), ["read_file"]);
//! assert_eq!(lists.deferred.len(), 2);
//! // Once the model found `cancel_invoice`, it is sent after the tools sent before (a provider with its
//! // own search still sends both deferred, as before).
//! let lists = catalog::RequestTools::of(&store, &["cancel_invoice".to_owned()]);
//! assert_eq!(
//!     lists.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
//!     ["read_file", "cancel_invoice"]
//! );
//! ```

#[cfg(feature = "embeddings")]
mod bert;
#[cfg(feature = "tool-search")]
mod cache;
#[cfg(feature = "tool-search")]
mod hybrid;
mod rank;
mod search;
#[cfg(feature = "embeddings")]
mod sentence;

use serde_json::Value;

use crate::message::{AssistantContent, AssistantMessage};

#[cfg(feature = "embeddings")]
pub use bert::Weights;
#[cfg(feature = "tool-search")]
pub use hybrid::{EmbedError, Embedder, Fallback, HybridRanker, embedding_text};
#[cfg(feature = "tool-search")]
pub use rank::Bm25Ranker;
pub use rank::{Ranker, ToolIndex, searchable_text};
pub use search::{ToolSearch, defer_when_large};
#[cfg(feature = "embeddings")]
pub use sentence::{Embedding, ModelError, SentenceEmbedder, Truncated};

pub use crate::store::registry::{RequestTools, SEARCH_TOOLS};

/// Above this many tools, [`defer_when_large`] defers the tools it is given (an MCP server's) and adds
/// the search tool; at or below it, nothing is deferred.
pub const DEFAULT_DEFER_THRESHOLD: usize = 30;

/// Whether a provider with its own tool search uses it for a request's deferred tools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolSearchMode {
    /// The provider's own search when the configured model has it (by its name: Anthropic's Claude 4.5
    /// models and later, OpenAI's GPT-5.4 and later), else the local [`SEARCH_TOOLS`] tool (the default).
    #[default]
    Auto,
    /// Always the provider's own search (a model or gateway whose name does not tell).
    Native,
    /// Always the local [`SEARCH_TOOLS`] tool.
    Local,
}

impl ToolSearchMode {
    /// Whether a request to `model` uses the provider's own search; `has_it` says whether the model has
    /// it, by its name.
    #[cfg_attr(
        not(any(feature = "anthropic", feature = "openai-responses")),
        allow(dead_code)
    )]
    pub(crate) fn native(self, model: &str, has_it: fn(&str) -> bool) -> bool {
        match self {
            ToolSearchMode::Auto => has_it(model),
            ToolSearchMode::Native => true,
            ToolSearchMode::Local => false,
        }
    }
}

/// The version after `family` in a model name (`"claude-sonnet-4-5-20250929"` after `"claude-sonnet-"`
/// is (4, 5); `"gpt-5.4-mini"` after `"gpt-"` is (5, 4); a missing minor is 0), if the name has one.
#[cfg_attr(
    not(any(feature = "anthropic", feature = "openai-responses")),
    allow(dead_code)
)]
pub(crate) fn model_version(model: &str, family: &str) -> Option<(u32, u32)> {
    let rest = model.strip_prefix(family)?;
    let mut parts = rest.split(['-', '.']);
    let major = parts.next()?.parse().ok()?;
    // A date (`-20250929`) is not a minor version.
    let minor = match parts.next() {
        Some(minor) if minor.len() <= 2 => minor.parse().unwrap_or(0),
        _ => 0,
    };
    Some((major, minor))
}

/// The names of the tools a reply reached: the tools it calls, and those a provider's own tool search
/// found (Anthropic's `tool_reference`s in a `tool_search_tool_result`, the tools of an OpenAI
/// `tool_search_output`), in order.
pub(crate) fn reached_by(reply: &AssistantMessage) -> Vec<String> {
    let mut names = Vec::new();
    for content in &reply.content {
        match content {
            AssistantContent::ToolCall(call) => names.push(call.name.clone()),
            AssistantContent::ProviderBlock { block, .. } => found_by_provider(block, &mut names),
            _ => {}
        }
    }
    names
}

/// The tools a provider's tool search found, from the block it sent.
fn found_by_provider(block: &Value, names: &mut Vec<String>) {
    match block["type"].as_str() {
        // Anthropic: {"type": "tool_search_tool_result", "content": {"type":
        // "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name"}]}}
        Some("tool_search_tool_result") => {
            if let Some(references) = block["content"]["tool_references"].as_array() {
                names.extend(
                    references
                        .iter()
                        .filter_map(|reference| reference["tool_name"].as_str())
                        .map(str::to_owned),
                );
            }
        }
        // OpenAI Responses: {"type": "tool_search_output", "tools": [{"type": "function", "name"}, {"type":
        // "namespace", "tools": [...]}]}
        Some("tool_search_output") => {
            if let Some(tools) = block["tools"].as_array() {
                for tool in tools {
                    match tool["type"].as_str() {
                        Some("namespace") => {
                            if let Some(inner) = tool["tools"].as_array() {
                                names.extend(
                                    inner
                                        .iter()
                                        .filter_map(|tool| tool["name"].as_str())
                                        .map(str::to_owned),
                                );
                            }
                        }
                        _ => names.extend(tool["name"].as_str().map(str::to_owned)),
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::model_version;

    #[test]
    fn model_versions_are_read_from_names() {
        assert_eq!(
            model_version("claude-sonnet-4-5-20250929", "claude-sonnet-"),
            Some((4, 5))
        );
        assert_eq!(
            model_version("claude-opus-4-20250514", "claude-opus-"),
            Some((4, 0))
        );
        assert_eq!(
            model_version("claude-haiku-5", "claude-haiku-"),
            Some((5, 0))
        );
        assert_eq!(model_version("gpt-5.4-mini", "gpt-"), Some((5, 4)));
        assert_eq!(model_version("gpt-4o", "gpt-"), None);
        assert_eq!(model_version("llama3", "gpt-"), None);
    }
}
