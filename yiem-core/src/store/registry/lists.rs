//! The tools a model request carries: the store's [`ToolList`] (with each dialect's serialized list
//! cached), the deferred tools a tool search finds, and [`RequestTools`], the lists of one request.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde_json::Value;

use super::ToolStore;
use crate::dialect::{Dialect, DialectCache, DialectError, definition};
use crate::tool::definition::AgentTool;

impl ToolStore {
    /// The tools as a [`ToolList`], the form a model request carries: made once, shared by every request
    /// until the store changes, with each dialect's serialized list cached inside.
    ///
    /// ```
    /// use yiem_core::{store::{Dialect, ToolStore}, tool::AgentTool};
    ///
    /// let ping = AgentTool::builder("ping")
    ///     .description("Answer pong.")
    ///     .handler(|_, _| async { "pong" })
    ///     .build()
    ///     .unwrap();
    /// let store = ToolStore::new("agent");
    /// store.register(ping).unwrap();
    /// let list = store.tool_list();
    /// assert_eq!(list.len(), 1);
    /// assert_eq!(
    ///     list.definitions_json(Dialect::Gemini).unwrap(),
    ///     r#"[{"functionDeclarations":[{"name":"ping","description":"Answer pong."}]}]"#
    /// );
    /// ```
    pub fn tool_list(&self) -> ToolList {
        self.read().list().clone()
    }

    /// The store's tools as a request carries them, in registration order: the `tools` array of an OpenAI
    /// chat request or an Anthropic request, the `tools` of an MCP `tools/list` result, or for Gemini
    /// `[{"functionDeclarations": [...]}]`. The first tool that cannot be described is the error.
    ///
    /// ```
    /// use serde_json::json;
    /// use yiem_core::{store::{Dialect, ToolStore}, tool::AgentTool};
    ///
    /// let ping = AgentTool::builder("ping")
    ///     .description("Answer pong.")
    ///     .handler(|_, _| async { "pong" })
    ///     .build()
    ///     .unwrap();
    /// let store = ToolStore::new("agent");
    /// store.register(ping).unwrap();
    ///
    /// assert_eq!(
    ///     store.definitions(Dialect::Anthropic).unwrap(),
    ///     json!([{
    ///         "name": "ping",
    ///         "description": "Answer pong.",
    ///         "input_schema": {"type": "object", "properties": {}}
    ///     }])
    /// );
    /// ```
    pub fn definitions(&self, dialect: Dialect) -> Result<Value, DialectError> {
        self.tool_list().definitions(dialect)
    }

    /// Defers every tool registered from now on (an MCP server's, say): its definition is sent only once
    /// the model has found it (see [`catalog`](crate::catalog)).
    #[must_use]
    pub fn with_deferred_loading(self) -> Self {
        self.write().defer_all = true;
        self
    }

    /// Defers the registered tools among `names` (see [`catalog`](crate::catalog)); names the store does
    /// not have, and [`SEARCH_TOOLS`](SEARCH_TOOLS), are left alone. Returns how many
    /// tools became deferred.
    pub fn defer_loading<S: AsRef<str>>(&self, names: impl IntoIterator<Item = S>) -> usize {
        let mut tools = self.write();
        let mut deferred = 0;
        for name in names {
            let name = name.as_ref();
            if tools.map.contains_key(name) && tools.defer(name) {
                deferred += 1;
            }
        }
        if deferred > 0 {
            tools.changed();
        }
        deferred
    }

    /// Whether the tool called `name` is deferred (see [`catalog`](crate::catalog)).
    pub fn is_deferred(&self, name: &str) -> bool {
        self.read().deferred.contains(name)
    }

    /// The deferred tools, in registration order.
    pub fn deferred_tools(&self) -> Vec<AgentTool> {
        let tools = self.read();
        tools
            .map
            .values()
            .filter(|tool| tools.deferred.contains(tool.name()))
            .cloned()
            .collect()
    }

    /// The lists a model request carries when the model has found `loaded` (see
    /// [`RequestTools`]): made once per store version and set of loaded tools, so asking again costs a
    /// comparison.
    pub(crate) fn request_tools(&self, loaded: &[String]) -> RequestTools {
        let tools = self.read();
        if tools.deferred.is_empty() {
            return RequestTools {
                tools: tools.list().clone(),
                deferred: ToolList::default(),
            };
        }
        let mut last = tools
            .requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((made_for, lists)) = last.as_ref()
            && made_for.as_slice() == loaded
        {
            return lists.clone();
        }
        let all: Vec<&AgentTool> = tools.map.values().collect();
        let lists = RequestTools::split(
            &all,
            |name| tools.deferred.contains(name),
            loaded,
            |name| tools.map.get(name),
        );
        *last = Some((loaded.to_vec(), lists.clone()));
        lists
    }
}

/// The tools a request offers, in order, with each dialect's request-ready list made once and shared:
/// [`definitions_json`](Self::definitions_json) is the exact text a request carries, serialized once per
/// list and dialect, so sending the same tools again costs nothing. Cheap to clone. A store hands out its
/// own with [`ToolStore::tool_list`]; any `Vec<AgentTool>` converts into one.
///
/// ```
/// use yiem_core::{store::{Dialect, ToolList}, tool::AgentTool};
///
/// let ping = AgentTool::builder("ping")
///     .description("Answer pong.")
///     .handler(|_, _| async { "pong" })
///     .build()
///     .unwrap();
/// let list = ToolList::from(vec![ping]);
/// let text = list.definitions_json(Dialect::OpenAi).unwrap();
/// assert!(text.starts_with(r#"[{"type":"function","function":{"name":"ping""#));
/// assert_eq!(list[0].name(), "ping");
/// ```
#[derive(Clone, Default)]
pub struct ToolList {
    inner: Arc<ListInner>,
}

#[derive(Default)]
struct ListInner {
    tools: Vec<AgentTool>,
    text: DialectCache<String>,
}

impl ToolList {
    /// A list of `tools`, in that order.
    pub fn new(tools: Vec<AgentTool>) -> Self {
        ToolList {
            inner: Arc::new(ListInner {
                tools,
                text: DialectCache::default(),
            }),
        }
    }

    /// Whether `other` is this very list (a clone of it), not merely an equal one.
    #[cfg_attr(not(any(feature = "mcp", feature = "code-mode")), allow(dead_code))]
    pub(crate) fn is_same(&self, other: &ToolList) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The tools' definitions in `dialect` as the list a request carries (see
    /// [`ToolStore::definitions`]). The first tool that cannot be described is the error.
    pub fn definitions(&self, dialect: Dialect) -> Result<Value, DialectError> {
        let definitions = self
            .inner
            .tools
            .iter()
            .map(|tool| tool.definition(dialect).cloned())
            .collect::<Result<Vec<Value>, DialectError>>()?;
        Ok(definition::list(dialect, definitions))
    }

    /// The same list as JSON text, serialized once per list and dialect.
    pub fn definitions_json(&self, dialect: Dialect) -> Result<&str, DialectError> {
        self.inner
            .text
            .get_or_init(dialect, || {
                let definitions = self
                    .inner
                    .tools
                    .iter()
                    .map(|tool| tool.definition(dialect))
                    .collect::<Result<Vec<&Value>, DialectError>>()?;
                Ok(definition::list_text(dialect, definitions))
            })
            .map(String::as_str)
    }
}

impl Deref for ToolList {
    type Target = [AgentTool];

    fn deref(&self) -> &[AgentTool] {
        &self.inner.tools
    }
}

impl From<Vec<AgentTool>> for ToolList {
    fn from(tools: Vec<AgentTool>) -> Self {
        ToolList::new(tools)
    }
}

impl FromIterator<AgentTool> for ToolList {
    fn from_iter<I: IntoIterator<Item = AgentTool>>(tools: I) -> Self {
        ToolList::new(tools.into_iter().collect())
    }
}

impl fmt::Debug for ToolList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.inner.tools.iter().map(AgentTool::name))
            .finish()
    }
}

/// The name of the local tool-search tool ([`ToolSearch::tool`](crate::catalog::ToolSearch::tool)); a
/// store never defers it.
pub const SEARCH_TOOLS: &str = "search_tools";

/// The tool lists of one model request.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct RequestTools {
    /// What every provider sends as its tools: the tools that are not deferred, in registration order,
    /// then the loaded deferred ones, in the order they were loaded.
    pub tools: ToolList,
    /// Every deferred tool, found or not, in registration order: a provider with its own tool search
    /// sends them all with `defer_loading: true`, always the same list (and leaves them and
    /// [`SEARCH_TOOLS`] out of `tools`: its own search and its `tool_reference`s load them); the others do
    /// not send them.
    pub deferred: ToolList,
}

impl RequestTools {
    /// The lists for a request from `store`'s tools when the model has reached `loaded` (names that are
    /// not deferred tools of the store are passed over): made once per store version and `loaded`.
    pub fn of(store: &ToolStore, loaded: &[String]) -> RequestTools {
        store.request_tools(loaded)
    }

    /// Splits `tools` (in registration order) as [`of`](Self::of) does, for any list: `deferred` says
    /// which names are deferred, `find` finds a tool of the list by name.
    pub(crate) fn split<'a>(
        tools: &[&'a AgentTool],
        deferred: impl Fn(&str) -> bool,
        loaded: &[String],
        find: impl Fn(&str) -> Option<&'a AgentTool>,
    ) -> RequestTools {
        let mut sent: Vec<AgentTool> = tools
            .iter()
            .filter(|tool| !deferred(tool.name()))
            .map(|tool| (*tool).clone())
            .collect();
        let mut loaded_set: std::collections::HashSet<&str> =
            std::collections::HashSet::with_capacity(loaded.len());
        for name in loaded {
            if deferred(name)
                && loaded_set.insert(name.as_str())
                && let Some(tool) = find(name)
            {
                sent.push(tool.clone());
            }
        }
        let every_deferred = tools
            .iter()
            .filter(|tool| deferred(tool.name()))
            .map(|tool| (*tool).clone())
            .collect();
        RequestTools {
            tools: ToolList::new(sent),
            deferred: ToolList::new(every_deferred),
        }
    }

    /// The lists for a request offering only `offered` (the tools a `prepare_context` hook kept) of
    /// `store`.
    pub(crate) fn of_offered(
        store: &ToolStore,
        offered: &[AgentTool],
        loaded: &[String],
    ) -> RequestTools {
        let all: Vec<&AgentTool> = offered.iter().collect();
        RequestTools::split(
            &all,
            |name| store.is_deferred(name),
            loaded,
            |name| offered.iter().find(|tool| tool.name() == name),
        )
    }
}
