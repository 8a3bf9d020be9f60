//! [`ToolStore`], a per-agent ordered map of tools, with the state its calls share and how it checks
//! their arguments. This file holds the store and its lookups; its parts: `registration` (adding tools,
//! one by one, an instance's, and every `#[tool]` linked into the binary through `inventory`, with the
//! `list_tools` tool) and `lists` (the deferred tools, and the tool lists a model request carries).

mod lists;
mod registration;

use std::fmt;
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use indexmap::IndexMap;

pub use self::lists::{RequestTools, SEARCH_TOOLS, ToolList};
pub use self::registration::{
    LIST_TOOLS, RegistrationError, ToolMethods, ToolRegistration, register_all_tools, static_tools,
};
use crate::args::ArgumentChecking;
use crate::state::{MissingState, StateMap, ToolState};
use crate::tool::definition::AgentTool;

/// Seeded per process; names are short, so a fast hash keeps lookups cheap.
type ToolMap = IndexMap<String, AgentTool, foldhash::fast::RandomState>;

type DeferredSet = std::collections::HashSet<String, foldhash::fast::RandomState>;

/// What a call finds in its store: its tool (if the store has it), the store's state and how the store
/// checks arguments.
pub(crate) struct Found {
    pub(crate) tool: Option<AgentTool>,
    pub(crate) state: Arc<StateMap>,
    pub(crate) checking: ArgumentChecking,
}

/// What a store holds: its tools, and their list as requests carry it, made on first use and dropped by
/// every change.
struct Tools {
    map: ToolMap,
    list: OnceLock<ToolList>,
    /// The names of the deferred tools (see [`catalog`](crate::catalog)), a subset of the map's.
    deferred: DeferredSet,
    /// Every tool registered from now on is deferred.
    defer_all: bool,
    /// The last request lists made, for the loaded tools they were made for.
    requests: std::sync::Mutex<Option<(Vec<String>, RequestTools)>>,
    /// The version of the tools, up by one on every change (see [`ToolStore::changes`]).
    version: tokio::sync::watch::Sender<u64>,
    /// The store's state, shared with every call (copied on change, which is rare).
    state: Arc<StateMap>,
    /// How the arguments of its calls are checked.
    checking: ArgumentChecking,
}

impl Tools {
    /// The tools changed: the cached list goes, and whoever watches the store hears of it.
    fn changed(&mut self) {
        self.list = OnceLock::new();
        *self
            .requests
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = None;
        self.version.send_modify(|version| *version += 1);
    }

    /// Defers the tool called `name` (never [`SEARCH_TOOLS`](SEARCH_TOOLS), which is how
    /// deferred tools are found); whether it was not deferred before.
    fn defer(&mut self, name: &str) -> bool {
        name != SEARCH_TOOLS && self.deferred.insert(name.to_owned())
    }

    fn list(&self) -> &ToolList {
        self.list
            .get_or_init(|| ToolList::new(self.map.values().cloned().collect()))
    }
}

/// A per-agent set of tools: an ordered map from name to [`AgentTool`], with O(1) lookup and registration
/// order kept. Stores are isolated from each other.
///
/// A `ToolStore` is a shared handle: a clone is another handle to the same store (an agent and its owner
/// share one that way), tools registered or removed through any handle are seen through all of them, and
/// so every method takes `&self`. The store's [state](ToolStore::with_state) is set while it is built.
///
/// ```
/// use yiem_core::{store::ToolStore, tool::AgentTool};
///
/// let tool = AgentTool::builder("ping")
///     .description("Answer pong.")
///     .handler(|_, _| async { "pong" })
///     .build()
///     .unwrap();
///
/// let store = ToolStore::new("agent-a");
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
        let name = name.into();
        ToolStore {
            tools: Arc::new(RwLock::new(Tools {
                map: ToolMap::default(),
                list: OnceLock::new(),
                deferred: DeferredSet::default(),
                defer_all: false,
                requests: std::sync::Mutex::new(None),
                version: tokio::sync::watch::Sender::new(0),
                state: Arc::new(StateMap::new(&name)),
                checking: ArgumentChecking::default(),
            })),
            name,
        }
    }

    /// Gives the store `value` as state of type `T` (replacing any earlier value of that type): every
    /// tool that takes [`State<T>`](crate::tool::State) gets it when called through this store. Give a store its
    /// state before registering tools that need it.
    ///
    /// ```
    /// use yiem_core::prelude::*;
    ///
    /// struct Greeting(&'static str);
    ///
    /// /// Greet.
    /// #[tool]
    /// async fn greet(State(greeting): State<Greeting>) -> &'static str {
    ///     greeting.0
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let mut english = ToolStore::new("english").with_state(Greeting("hello"));
    /// let mut french = ToolStore::new("french").with_state(Greeting("bonjour"));
    /// english.register(greet_tool()).unwrap();
    /// french.register(greet_tool()).unwrap();
    /// let args = serde_json::json!({});
    /// assert_eq!(english.execute("c1", "greet", args.clone()).await.text_content(), "hello");
    /// assert_eq!(french.execute("c2", "greet", args).await.text_content(), "bonjour");
    /// # });
    /// ```
    #[must_use]
    pub fn with_state<T: ToolState>(self, value: T) -> Self {
        self.with_shared_state(Arc::new(value))
    }

    /// Checks the arguments of this store's calls as `checking` says (the default: [`ArgumentChecking::Full`]
    /// with the `schema-validation` feature, [`ArgumentChecking::Walk`] without). Calls of a store's tool
    /// run by hand through the tool itself ([`AgentTool::execute`](crate::tool::AgentTool::execute)) use the
    /// default.
    #[must_use]
    pub fn with_argument_checking(self, checking: ArgumentChecking) -> Self {
        self.write().checking = checking;
        self
    }

    /// How this store checks the arguments of its calls.
    pub fn argument_checking(&self) -> ArgumentChecking {
        self.read().checking
    }

    /// Like [`with_state`](Self::with_state), with a value you keep a handle on (or share between stores).
    #[must_use]
    pub fn with_shared_state<T: ToolState>(self, value: Arc<T>) -> Self {
        {
            let mut tools = self.write();
            Arc::make_mut(&mut tools.state).insert(value);
        }
        self
    }

    /// A new store holding only `tools` (those of this store an agent offers in one turn), with this
    /// store's name, state and argument checking, so a tool that takes state still finds it.
    pub(crate) fn offering(&self, tools: &[AgentTool]) -> ToolStore {
        let offered = ToolStore::new(self.name());
        {
            let (mut into, from) = (offered.write(), self.read());
            into.state = Arc::clone(&from.state);
            into.checking = from.checking;
        }
        for tool in tools {
            // The tools came from this store: no duplicates, and their state is there.
            let _ = offered.register(tool.clone());
        }
        offered
    }

    /// A handle that does not keep the store alive (for a tool of the store that refers to it).
    pub(crate) fn downgrade(&self) -> WeakStore {
        WeakStore {
            name: self.name.clone(),
            tools: Arc::downgrade(&self.tools),
        }
    }

    /// The store's state of type `T`, if it holds one.
    pub fn state<T: ToolState>(&self) -> Option<Arc<T>> {
        self.read().state.get::<T>()
    }

    /// The tool called `name`, the state its call runs with and how its arguments are checked, under one
    /// lock.
    pub(crate) fn lookup(&self, name: &str) -> Found {
        let tools = self.read();
        Found {
            tool: tools.map.get(name).cloned(),
            state: Arc::clone(&tools.state),
            checking: tools.checking,
        }
    }

    /// Whether the tool called `name` must run alone ([`ExecutionMode::Sequential`]); `false` for a name
    /// the store does not have.
    pub(crate) fn is_sequential(&self, name: &str) -> bool {
        self.read()
            .map
            .get(name)
            .is_some_and(AgentTool::is_sequential)
    }

    /// For each of `tools`, the first state it needs that the store lacks.
    pub(crate) fn missing_states(&self, tools: &[AgentTool]) -> Vec<MissingState> {
        let state = Arc::clone(&self.read().state);
        tools
            .iter()
            .filter_map(|tool| self.missing_state(&state, tool))
            .collect()
    }

    /// The first state `tool` needs that the store lacks.
    fn missing_state(&self, state: &StateMap, tool: &AgentTool) -> Option<MissingState> {
        let key = tool
            .required_state()
            .iter()
            .find(|key| !state.contains(key))?;
        Some(MissingState {
            tool: tool.name().to_owned(),
            type_name: key.type_name(),
            store: Some(self.name.clone()),
            at_call: false,
        })
    }

    /// The store's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn read(&self) -> RwLockReadGuard<'_, Tools> {
        self.tools
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Tools> {
        // A panic while the lock was held cannot leave the store half-written: every change is one call.
        self.tools
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Watches the store's tools: the receiver's value is a version that goes up by one on every change
    /// ([`register`](Self::register), [`register_all_tools`], [`register_methods`](Self::register_methods),
    /// [`remove`](Self::remove), [`clear`](Self::clear); not on state), and `changed().await` wakes when
    /// it does. Clones of a store share it. The stdio MCP server sends `notifications/tools/list_changed`
    /// from it.
    ///
    /// ```
    /// use yiem_core::{store::ToolStore, tool::AgentTool};
    ///
    /// let store = ToolStore::new("demo");
    /// let mut changes = store.changes();
    /// assert!(!changes.has_changed().unwrap());
    /// let echo = AgentTool::builder("echo")
    ///     .description("Repeat the text.")
    ///     .handler(|_, args: serde_json::Value| async move { args.to_string() })
    ///     .build()
    ///     .unwrap();
    /// store.register(echo).unwrap();
    /// assert!(changes.has_changed().unwrap());
    /// assert_eq!(*changes.borrow_and_update(), 1);
    /// store.remove("not-there");
    /// assert!(!changes.has_changed().unwrap(), "nothing was removed");
    /// ```
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.read().version.subscribe()
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
    pub fn remove(&self, name: &str) -> Option<AgentTool> {
        let mut tools = self.write();
        let removed = tools.map.shift_remove(name);
        if removed.is_some() {
            tools.deferred.remove(name);
            tools.changed();
        }
        removed
    }

    /// Removes every tool.
    pub fn clear(&self) {
        let mut tools = self.write();
        if !tools.map.is_empty() {
            tools.map.clear();
            tools.deferred.clear();
            tools.changed();
        }
    }
}

/// A [`ToolStore`] handle that does not keep it alive.
#[derive(Clone)]
pub(crate) struct WeakStore {
    name: String,
    tools: Weak<RwLock<Tools>>,
}

impl WeakStore {
    /// The store, or (for the model that called a tool of a store dropped since) why not.
    pub(crate) fn upgrade(&self) -> Result<ToolStore, String> {
        match self.tools.upgrade() {
            Some(tools) => Ok(ToolStore {
                name: self.name.clone(),
                tools,
            }),
            None => Err(format!("the tool store `{}` no longer exists", self.name)),
        }
    }

    /// Whether this is a handle to `store`.
    pub(crate) fn is(&self, store: &ToolStore) -> bool {
        Weak::ptr_eq(&self.tools, &Arc::downgrade(&store.tools))
    }
}

impl fmt::Debug for ToolStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools = self.read();
        let state: Vec<&str> = tools.state.keys().map(|key| key.type_name()).collect();
        f.debug_struct("ToolStore")
            .field("name", &self.name)
            .field("tools", &tools.map.keys().collect::<Vec<_>>())
            .field("state", &state)
            .finish()
    }
}
