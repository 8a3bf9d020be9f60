//! Typed state for tools: [`State<T>`], the extractor a `#[tool]` fn takes to reach a database pool, a
//! client, a root directory; the per-store map that holds one value per type; and [`MissingState`], the
//! error when a tool asks for a type its store does not hold.
//!
//! State belongs to a [`ToolStore`](crate::store::ToolStore) (`ToolStore::new("a").with_state(db)`), so two agents
//! in one process can give the same tool different state. A call's [`ToolContext`](crate::tool::ToolContext)
//! carries its store's state to the tool.

use std::any::{Any, TypeId};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use indexmap::IndexMap;

/// Shared state a tool takes as a parameter: `State(db): State<Db>`, before the argument struct.
///
/// The value comes from the store the call runs in ([`ToolStore::with_state`](crate::store::ToolStore::with_state)),
/// shared as an `Arc`, so `T` needs no `Clone`. A store that lacks the type refuses to register the tool,
/// and a call made without it is an error result naming the tool and the type.
///
/// ```
/// use std::sync::Mutex;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use yiem_core::prelude::*;
///
/// /// A counter shared by the calls of one store.
/// #[derive(Default)]
/// struct Counter(Mutex<u64>);
///
/// #[derive(Deserialize, JsonSchema)]
/// struct BumpArgs {
///     /// How much to add.
///     by: u64,
/// }
///
/// /// Add to the counter and return its new value.
/// #[tool]
/// async fn bump(State(counter): State<Counter>, args: BumpArgs) -> String {
///     let mut value = counter.0.lock().unwrap();
///     *value += args.by;
///     value.to_string()
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = ToolStore::new("agent").with_state(Counter::default());
/// store.register(bump_tool()).unwrap();
/// let result = store.execute("c1", "bump", serde_json::json!({"by": 2})).await;
/// assert_eq!(result.text_content(), "2");
/// assert_eq!(*store.state::<Counter>().unwrap().0.lock().unwrap(), 2);
/// # });
/// ```
pub struct State<T: ?Sized>(pub Arc<T>);

impl<T: ?Sized> Deref for State<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized> Clone for State<T> {
    fn clone(&self) -> Self {
        State(Arc::clone(&self.0))
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("State").field(&&*self.0).finish()
    }
}

/// A type a store can hold as tool state: shared between the calls of any thread, so `Send + Sync`, and
/// owned, so `'static`. Implemented for every such type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be tool state",
    label = "tool state is shared by calls on many threads",
    note = "tool state must be `Send + Sync + 'static`: wrap a type that is not `Sync` (a database connection, a `RefCell`) in a `Mutex<T>` or `RwLock<T>` (`State<Mutex<Connection>>`), use `Arc` instead of `Rc`, and own the data instead of borrowing it"
)]
pub trait ToolState: Send + Sync + 'static {}

impl<T: Send + Sync + 'static> ToolState for T {}

/// One state type a tool needs: its `TypeId`, and its name for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StateKey {
    id: TypeId,
    name: &'static str,
}

impl StateKey {
    /// The key of `T`.
    pub fn of<T: ToolState>() -> Self {
        StateKey {
            id: TypeId::of::<T>(),
            name: std::any::type_name::<T>(),
        }
    }

    /// The type's name, as `std::any::type_name` spells it.
    pub fn type_name(&self) -> &'static str {
        self.name
    }
}

impl fmt::Display for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// The state of one store: at most one value per type, plus the store's name for error messages.
#[derive(Clone, Default)]
pub(crate) struct StateMap {
    store: Arc<str>,
    values: IndexMap<TypeId, (StateKey, Arc<dyn Any + Send + Sync>), foldhash::fast::RandomState>,
}

impl StateMap {
    pub(crate) fn new(store: &str) -> Self {
        StateMap {
            store: store.into(),
            values: IndexMap::default(),
        }
    }

    pub(crate) fn store(&self) -> &str {
        &self.store
    }

    pub(crate) fn insert<T: ToolState>(&mut self, value: Arc<T>) {
        let key = StateKey::of::<T>();
        self.values.insert(key.id, (key, value));
    }

    pub(crate) fn get<T: ToolState>(&self) -> Option<Arc<T>> {
        let (_, value) = self.values.get(&TypeId::of::<T>())?;
        Arc::clone(value).downcast::<T>().ok()
    }

    pub(crate) fn contains(&self, key: &StateKey) -> bool {
        self.values.contains_key(&key.id)
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &StateKey> {
        self.values.values().map(|(key, _)| key)
    }
}

/// A tool needs state its store does not hold.
///
/// ```
/// use yiem_core::prelude::*;
///
/// struct Db;
///
/// /// Count the rows.
/// #[tool]
/// async fn rows(State(_db): State<Db>) -> String {
///     "0".into()
/// }
///
/// let store = ToolStore::new("agent");
/// let refused = store.register(rows_tool()).unwrap_err().to_string();
/// // The type is named in full, as `std::any::type_name` spells it: `my_crate::Db`.
/// assert!(refused.starts_with("tool `rows` needs state of type `"));
/// assert!(refused.ends_with(
///     "::Db`, which store `agent` does not hold: \
///      give the store one before registering the tool, `ToolStore::new(\"agent\").with_state(value)`"
/// ));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.text())]
#[non_exhaustive]
pub struct MissingState {
    /// The tool.
    pub tool: String,
    /// The missing type, as `std::any::type_name` spells it.
    pub type_name: &'static str,
    /// The store, if the tool was registered into or called through one.
    pub store: Option<String>,
    /// Whether this was found when the tool was called (rather than registered).
    pub at_call: bool,
}

impl MissingState {
    fn text(&self) -> String {
        let (tool, ty) = (&self.tool, self.type_name);
        match (&self.store, self.at_call) {
            (Some(store), false) => format!(
                "tool `{tool}` needs state of type `{ty}`, which store `{store}` does not hold: give the store one before registering the tool, `ToolStore::new(\"{store}\").with_state(value)`"
            ),
            (Some(store), true) => format!(
                "tool `{tool}` needs state of type `{ty}`, which store `{store}` does not hold: add it to the store with `ToolStore::new(\"{store}\").with_state(value)`"
            ),
            (None, _) => format!(
                "tool `{tool}` needs state of type `{ty}`, which this call was not given: call the tool through a store that holds it (`ToolStore::with_state`, then `ToolStore::execute`), or give the context one with `ToolContext::with_state`"
            ),
        }
    }
}
