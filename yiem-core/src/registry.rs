//! Registration: [`ToolStore`], a per-agent ordered map of tools, and [`register_all_tools`], which finds
//! every `#[tool]` linked into the binary through `inventory`.

use std::fmt;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use indexmap::IndexMap;
use serde_json::json;

use crate::context::ToolContext;
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
    tools: Arc<RwLock<ToolMap>>,
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

    fn read(&self) -> RwLockReadGuard<'_, ToolMap> {
        read_map(&self.tools)
    }

    fn write(&self) -> RwLockWriteGuard<'_, ToolMap> {
        // A panic while the lock was held cannot leave the map half-written: every write is one call.
        self.tools
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds `tool`; refuses a name that is already taken, naming both definitions.
    pub fn register(&mut self, tool: AgentTool) -> Result<(), RegistrationError> {
        let mut tools = self.write();
        if let Some(existing) = tools.get(tool.name()) {
            return Err(self.duplicate(existing, &tool));
        }
        tools.insert(tool.name().to_owned(), tool);
        Ok(())
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
        self.read().get(name).cloned()
    }

    /// Whether a tool called `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.read().contains_key(name)
    }

    /// Every tool, in registration order.
    pub fn tools(&self) -> Vec<AgentTool> {
        self.read().values().cloned().collect()
    }

    /// Every tool's name, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Removes the tool called `name`, keeping the order of the others.
    pub fn remove(&mut self, name: &str) -> Option<AgentTool> {
        self.write().shift_remove(name)
    }

    /// Removes every tool.
    pub fn clear(&mut self) {
        self.write().clear();
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

fn read_map(tools: &RwLock<ToolMap>) -> RwLockReadGuard<'_, ToolMap> {
    tools
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn list(store: &Weak<RwLock<ToolMap>>, store_name: &str) -> Result<String, String> {
    let Some(tools) = store.upgrade() else {
        return Err(format!("the tool store `{store_name}` no longer exists"));
    };
    let tools = read_map(&tools);
    let mut text = String::from("Available tools:");
    for tool in tools.values() {
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
            let earlier = existing.get(tool.name()).or_else(|| {
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
    let mut map = store.write();
    for tool in tools {
        map.insert(tool.name().to_owned(), tool);
    }
    Ok(names)
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
