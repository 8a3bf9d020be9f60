//! The local tool search: [`ToolSearch`] ranks a store's deferred tools for a query and makes the
//! [`SEARCH_TOOLS`] tool that loads the best of them; [`defer_when_large`] is the policy that needs no
//! thought.

use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::rank::{Ranker, ToolIndex};
use super::{DEFAULT_DEFER_THRESHOLD, SEARCH_TOOLS};
use crate::guard;
use crate::result::AgentToolResult;
use crate::store::registry::{RegistrationError, ToolStore, WeakStore};
use crate::tool::context::ToolContext;
use crate::tool::definition::{AgentTool, ToolAnnotations};

/// How many tools a search loads when the model does not say.
const DEFAULT_RESULTS: usize = 5;
/// The most a search loads: more would defeat deferring.
const MAX_RESULTS: u64 = 20;
/// The longest query taken, in characters.
const MAX_QUERY: u64 = 1000;
/// The most of a found tool's description a search's answer quotes, in characters: its first line,
/// cut here (the model reads the whole definition once the tool is loaded).
const MAX_EXCERPT: usize = 200;

/// Searches a store's deferred tools with a [`Ranker`], and makes the [`SEARCH_TOOLS`] tool that lets a
/// model do it. The index is built on the first search and again after the store changes.
///
/// ```
/// # #[cfg(feature = "tool-search")] {
/// use yiem_core::{store::ToolStore, tool::AgentTool};
/// use yiem_core::catalog::ToolSearch;
///
/// let store = ToolStore::new("agent").with_deferred_loading();
/// for (name, description) in [
///     ("send_invoice", "Send an invoice to a customer by e-mail."),
///     ("get_weather", "Current weather for a city."),
/// ] {
///     store.register(
///         AgentTool::builder(name).description(description).handler(|_, _| async { "" }).build().unwrap(),
///     ).unwrap();
/// }
/// let search = ToolSearch::bm25();
/// let found = search.search(&store, "is it raining in Paris? weather", 1);
/// assert_eq!(found[0].0.name(), "get_weather");
/// # }
/// ```
#[derive(Clone)]
pub struct ToolSearch {
    ranker: Arc<dyn Ranker>,
    results: usize,
    index: Arc<Mutex<Option<Arc<Indexed>>>>,
}

/// An index and what it was made from: which store, at which version, and its tools in index order.
struct Indexed {
    store: WeakStore,
    version: u64,
    tools: Vec<AgentTool>,
    index: Box<dyn ToolIndex>,
}

impl ToolSearch {
    /// A search with `ranker`.
    pub fn new(ranker: impl Ranker) -> Self {
        ToolSearch {
            ranker: Arc::new(ranker),
            results: DEFAULT_RESULTS,
            index: Arc::default(),
        }
    }

    /// A search with the tuned [`Bm25Ranker`](super::Bm25Ranker).
    #[cfg(feature = "tool-search")]
    pub fn bm25() -> Self {
        Self::new(super::Bm25Ranker::new())
    }

    /// How many tools a search loads when the model does not say (5 by default; at most 20).
    pub fn results(mut self, k: usize) -> Self {
        self.results = k.clamp(1, MAX_RESULTS as usize);
        self
    }

    /// The best `k` of `store`'s deferred tools for `query` (of all its tools, if none is deferred),
    /// with their scores, best first.
    pub fn search(&self, store: &ToolStore, query: &str, k: usize) -> Vec<(AgentTool, f32)> {
        let indexed = self.indexed(store);
        indexed
            .index
            .search(query, k)
            .into_iter()
            .filter_map(|(at, score)| Some((indexed.tools.get(at)?.clone(), score)))
            .collect()
    }

    /// The index of `store`'s tools as they are now: the one made last, unless it was made for another
    /// store or before the store changed.
    fn indexed(&self, store: &ToolStore) -> Arc<Indexed> {
        let version = *store.changes().borrow();
        let mut cached = self
            .index
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(indexed) = cached.as_ref()
            && indexed.version == version
            && indexed.store.is(store)
        {
            return Arc::clone(indexed);
        }
        let mut tools = store.deferred_tools();
        if tools.is_empty() {
            tools = store.tools();
            tools.retain(|tool| tool.name() != SEARCH_TOOLS);
        }
        let indexed = Arc::new(Indexed {
            store: store.downgrade(),
            version,
            index: self.ranker.index(&tools),
            tools,
        });
        *cached = Some(Arc::clone(&indexed));
        indexed
    }

    /// The [`SEARCH_TOOLS`] tool over `store`: it takes a `query` (what the task needs, in words) and an
    /// optional `k`, answers with one line per tool found (its name and what it does), and loads them, so
    /// their definitions go with the next request.
    pub fn tool(&self, store: &ToolStore) -> AgentTool {
        let store = store.downgrade();
        let search = self.clone();
        AgentTool::builder(SEARCH_TOOLS)
            .label("Search Tools")
            .description(
                "Find tools for a task among the many that are available but not shown to you yet. \
                 Describe what you want to do in a few words (for example \"send an invoice by e-mail\"); \
                 the best matches are loaded and can be called from your next step.",
            )
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What the tool should do, in words.",
                        "minLength": 1,
                        "maxLength": MAX_QUERY,
                    },
                    "k": {
                        "type": "integer",
                        "description": format!("How many tools to load (default {}).", search.results),
                        "minimum": 1,
                        "maximum": MAX_RESULTS,
                    }
                },
                "required": ["query"],
                "additionalProperties": false,
            }))
            .parallel()
            .annotations(ToolAnnotations::LOOKUP)
            .handler(move |_ctx: ToolContext, args: serde_json::Value| {
                let (search, store) = (search.clone(), store.clone());
                // Off the async threads: building an index, or a ranker that asks an embedding model,
                // may take a while.
                let searched = guard::off_async_threads(move || search.answer(&store, &args));
                async move {
                    searched
                        .await
                        .unwrap_or_else(|| AgentToolResult::error("the search was cancelled"))
                }
            })
            .build()
            .expect("the search_tools definition is valid")
    }

    fn answer(&self, store: &WeakStore, args: &serde_json::Value) -> AgentToolResult {
        let store = match store.upgrade() {
            Ok(store) => store,
            Err(gone) => return AgentToolResult::error(gone),
        };
        let query = args["query"].as_str().unwrap_or_default().trim();
        if query.is_empty() {
            return AgentToolResult::error(
                "`query` is empty: describe what the tool should do in a few words, for example \
                 {\"query\": \"send an invoice by e-mail\"}",
            );
        }
        let k = args["k"]
            .as_u64()
            .map_or(self.results, |k| k.clamp(1, MAX_RESULTS) as usize);
        let found = self.search(&store, query, k);
        if found.is_empty() {
            return AgentToolResult::text(format!(
                "No tool matches \"{query}\". Try other words for what the tool does (not its name)."
            ));
        }
        let mut text = format!(
            "Found {} tool{} (loaded: call them directly):",
            found.len(),
            if found.len() == 1 { "" } else { "s" }
        );
        for (tool, _) in &found {
            text.push_str(&format!(
                "\n- {}: {}",
                tool.name(),
                excerpt(tool.description())
            ));
        }
        let names = found
            .iter()
            .map(|(tool, _)| tool.name().to_owned())
            .collect();
        AgentToolResult::text(text).with_loaded_tools(names)
    }
}

/// The first line of `description`, at most [`MAX_EXCERPT`] characters (cut with "…").
fn excerpt(description: &str) -> String {
    let line = description.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(MAX_EXCERPT) {
        Some((cut, _)) => format!("{}…", line[..cut].trim_end()),
        None => line.to_owned(),
    }
}

impl fmt::Debug for ToolSearch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSearch")
            .field("results", &self.results)
            .finish_non_exhaustive()
    }
}

/// The policy that needs no thought: when `store` holds more than `threshold` tools
/// ([`DEFAULT_DEFER_THRESHOLD`] is 30), defers `candidates` (an MCP server's tools, say) and registers
/// `search`'s [`SEARCH_TOOLS`] tool (unless the store has one); at or below it, changes nothing. Returns
/// how many tools became deferred.
pub fn defer_when_large<S: AsRef<str>>(
    store: &ToolStore,
    candidates: impl IntoIterator<Item = S>,
    threshold: Option<usize>,
    search: &ToolSearch,
) -> Result<usize, RegistrationError> {
    if store.len() <= threshold.unwrap_or(DEFAULT_DEFER_THRESHOLD) {
        return Ok(0);
    }
    let deferred = store.defer_loading(candidates);
    if deferred > 0 && !store.contains(SEARCH_TOOLS) {
        store.register(search.tool(store))?;
    }
    Ok(deferred)
}
