//! Registration: [`ToolStore`], a per-agent ordered map of tools, and [`register_all_tools`], which finds
//! every `#[tool]` linked into the binary through `inventory`.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use indexmap::IndexMap;
use serde_json::{Value, json};

use crate::context::ToolContext;
use crate::dialect::{Dialect, DialectCache, DialectError, definition};
use crate::tool::{AgentTool, SourceLocation, ToolAnnotations};

/// One `#[tool]` function, submitted to `inventory` by the macro.
#[doc(hidden)]
pub struct ToolRegistration {
    build: fn() -> AgentTool,
}

impl ToolRegistration {
    /// A registration for the tool `build` makes.
    pub const fn new(build: fn() -> AgentTool) -> Self {
        ToolRegistration { build }
    }
}

inventory::collect!(ToolRegistration);

/// Every `#[tool]` linked into this binary, sorted by name.
///
/// Tools in a library crate count only when the binary links that crate: see [`link_tools!`](crate::link_tools).
pub fn static_tools() -> Vec<AgentTool> {
    let mut tools: Vec<AgentTool> = inventory::iter::<ToolRegistration>
        .into_iter()
        .map(|registration| (registration.build)())
        .collect();
    tools.sort_by(|a, b| a.name().cmp(b.name()));
    tools
}

/// Why a tool could not be registered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// A tool of the same name is already in the store.
    #[error(
        "tool `{name}` is already registered in store `{store}` (defined at {existing}); refused the definition at {refused}: give one of them another name, e.g. #[tool(name = \"...\")]"
    )]
    Duplicate {
        /// The store.
        store: String,
        /// The contested name.
        name: String,
        /// Where the registered tool was defined.
        existing: SourceLocation,
        /// Where the refused tool was defined.
        refused: SourceLocation,
    },
}

/// Seeded per process; names are short, so a fast hash keeps lookups cheap.
type ToolMap = IndexMap<String, AgentTool, foldhash::fast::RandomState>;

/// What a store holds: its tools, and their list as requests carry it, made on first use and dropped by
/// every change.
#[derive(Default)]
struct Tools {
    map: ToolMap,
    list: OnceLock<ToolList>,
}

impl Tools {
    fn list(&self) -> &ToolList {
        self.list
            .get_or_init(|| ToolList::new(self.map.values().cloned().collect()))
    }
}

/// A per-agent set of tools: an ordered map from name to [`AgentTool`], with O(1) lookup and registration
/// order kept. Stores are isolated from each other; a clone is another handle to the same store (an agent
/// and its owner share one that way), so tools registered through either are seen by both.
///
/// ```
/// use yiem_core::{AgentTool, ToolStore};
///
/// let tool = AgentTool::builder("ping")
///     .description("Answer pong.")
///     .handler(|_, _| async { "pong" })
///     .build()
///     .unwrap();
///
/// let mut store = ToolStore::new("agent-a");
/// store.register(tool.clone()).unwrap();
/// assert!(store.get("ping").is_some());
///
/// let duplicate = store.register(tool).unwrap_err();
/// assert!(duplicate.to_string().contains("already registered"));
/// ```
#[derive(Clone)]
pub struct ToolStore {
    name: String,
    tools: Arc<RwLock<Tools>>,
}

impl ToolStore {
    /// An empty store.
    pub fn new(name: impl Into<String>) -> Self {
        ToolStore {
            name: name.into(),
            tools: Arc::default(),
        }
    }

    /// The store's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn read(&self) -> RwLockReadGuard<'_, Tools> {
        read_tools(&self.tools)
    }

    /// Changes the tools; the cached list goes with any change.
    fn change<R>(&self, change: impl FnOnce(&mut ToolMap) -> R) -> R {
        // A panic while the lock was held cannot leave the map half-written: every change is one call.
        let mut tools: RwLockWriteGuard<'_, Tools> = self
            .tools
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        tools.list = OnceLock::new();
        change(&mut tools.map)
    }

    /// Adds `tool`; refuses a name that is already taken, naming both definitions.
    pub fn register(&mut self, tool: AgentTool) -> Result<(), RegistrationError> {
        if let Some(existing) = self.read().map.get(tool.name()) {
            return Err(self.duplicate(existing, &tool));
        }
        self.change(|map| match map.get(tool.name()) {
            // Registered through another handle meanwhile.
            Some(existing) => Err(self.duplicate(existing, &tool)),
            None => {
                map.insert(tool.name().to_owned(), tool);
                Ok(())
            }
        })
    }

    fn duplicate(&self, existing: &AgentTool, refused: &AgentTool) -> RegistrationError {
        RegistrationError::Duplicate {
            store: self.name.clone(),
            name: refused.name().to_owned(),
            existing: existing.source(),
            refused: refused.source(),
        }
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<AgentTool> {
        self.read().map.get(name).cloned()
    }

    /// Whether a tool called `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.read().map.contains_key(name)
    }

    /// Every tool, in registration order.
    pub fn tools(&self) -> Vec<AgentTool> {
        self.read().map.values().cloned().collect()
    }

    /// The tools as a [`ToolList`], the form a model request carries: made once, shared by every request
    /// until the store changes, with each dialect's serialized list cached inside.
    ///
    /// ```
    /// use yiem_core::{AgentTool, Dialect, ToolStore};
    ///
    /// let ping = AgentTool::builder("ping")
    ///     .description("Answer pong.")
    ///     .handler(|_, _| async { "pong" })
    ///     .build()
    ///     .unwrap();
    /// let mut store = ToolStore::new("agent");
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
    /// use yiem_core::{AgentTool, Dialect, ToolStore};
    ///
    /// let ping = AgentTool::builder("ping")
    ///     .description("Answer pong.")
    ///     .handler(|_, _| async { "pong" })
    ///     .build()
    ///     .unwrap();
    /// let mut store = ToolStore::new("agent");
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

    /// Every tool's name, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.read().map.keys().cloned().collect()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.read().map.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.read().map.is_empty()
    }

    /// Removes the tool called `name`, keeping the order of the others.
    pub fn remove(&mut self, name: &str) -> Option<AgentTool> {
        self.change(|map| map.shift_remove(name))
    }

    /// Removes every tool.
    pub fn clear(&mut self) {
        self.change(|map| map.clear());
    }

    /// The `list_tools` tool for this store: it lists what is in the store when it is called, so tools
    /// registered later show up too.
    pub fn list_tools_tool(&self) -> AgentTool {
        let store = Arc::downgrade(&self.tools);
        let name = self.name.clone();
        AgentTool::builder(LIST_TOOLS)
            .label("List Tools")
            .description(
                "List the tools available to you, with their labels and descriptions. Call it to discover \
                 tools and to check a name is free before creating a new tool.",
            )
            .input_schema(json!({"type": "object", "properties": {}}))
            .parallel()
            .annotations(ToolAnnotations {
                read_only: Some(true),
                idempotent: Some(true),
                open_world: Some(false),
                destructive: Some(false),
            })
            .handler(move |_ctx: ToolContext, _args| {
                let listing = list(&store, &name);
                async move { listing }
            })
            .build()
            .expect("the list_tools definition is valid")
    }
}

/// The name of the tool that lists a store's tools.
pub const LIST_TOOLS: &str = "list_tools";

fn read_tools(tools: &RwLock<Tools>) -> RwLockReadGuard<'_, Tools> {
    tools
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn list(store: &Weak<RwLock<Tools>>, store_name: &str) -> Result<String, String> {
    let Some(tools) = store.upgrade() else {
        return Err(format!("the tool store `{store_name}` no longer exists"));
    };
    let tools = read_tools(&tools);
    let mut text = String::from("Available tools:");
    for tool in tools.map.values() {
        let summary = tool.description().lines().next().unwrap_or_default().trim();
        text.push_str(&format!(
            "\n- {}: {} — {}",
            tool.name(),
            tool.label(),
            summary
        ));
    }
    Ok(text)
}

impl fmt::Debug for ToolStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolStore")
            .field("name", &self.name)
            .field("tools", &self.names())
            .finish()
    }
}

/// Registers every `#[tool]` linked into the binary, sorted by name, plus [`list_tools`](ToolStore::list_tools_tool)
/// bound to `store`. Returns the names registered, in order.
///
/// All or nothing: if any name is already taken (in the store, or by two `#[tool]`s), nothing is registered
/// and the error names both definitions.
///
/// Every `#[tool]` in the binary counts, so a test binary (or a merged doctest) that defines tools in
/// several places sees all of them.
///
/// ```standalone_crate
/// use yiem_core::{ToolStore, register_all_tools, tool};
///
/// /// Say hello.
/// #[tool]
/// async fn hello() -> &'static str {
///     "hello"
/// }
///
/// let mut store = ToolStore::new("agent");
/// let names = register_all_tools(&mut store).unwrap();
/// assert_eq!(names, ["hello", "list_tools"]);
/// ```
pub fn register_all_tools(store: &mut ToolStore) -> Result<Vec<String>, RegistrationError> {
    let mut tools = static_tools();
    if !tools.iter().any(|tool| tool.name() == LIST_TOOLS) {
        tools.push(store.list_tools_tool());
        tools.sort_by(|a, b| a.name().cmp(b.name()));
    }
    {
        let existing = store.read();
        for (index, tool) in tools.iter().enumerate() {
            let earlier = existing.map.get(tool.name()).or_else(|| {
                index
                    .checked_sub(1)
                    .map(|i| &tools[i])
                    .filter(|t| t.name() == tool.name())
            });
            if let Some(earlier) = earlier {
                return Err(store.duplicate(earlier, tool));
            }
        }
    }
    let names = tools.iter().map(|t| t.name().to_owned()).collect();
    store.change(|map| {
        for tool in tools {
            map.insert(tool.name().to_owned(), tool);
        }
    });
    Ok(names)
}

/// The tools a request offers, in order, with each dialect's request-ready list made once and shared:
/// [`definitions_json`](Self::definitions_json) is the exact text a request carries, serialized once per
/// list and dialect, so sending the same tools again costs nothing. Cheap to clone. A store hands out its
/// own with [`ToolStore::tool_list`]; any `Vec<AgentTool>` converts into one.
///
/// ```
/// use yiem_core::{AgentTool, Dialect, ToolList};
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
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
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

/// Keeps library crates of tools linked into a binary.
///
/// `#[tool]` registers through `inventory`, and the linker only keeps a library crate that the binary
/// uses. A crate that holds nothing but tools is never used by name, so its tools would silently be missing
/// from [`register_all_tools`]. Name such crates once, at the top level of the binary (usually `main.rs`):
///
/// ```text
/// yiem_core::link_tools!(weather_tools, file_tools);
/// ```
///
/// It expands to `use weather_tools as _;` for each crate, which is all the linker needs.
#[macro_export]
macro_rules! link_tools {
    ($($krate:ident),+ $(,)?) => {
        $(
            #[allow(unused_imports)]
            use $krate as _;
        )+
    };
}
