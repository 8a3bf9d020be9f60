//! What an MCP server offers beside its tools: resources (fixed URIs and templates) and prompts, with the
//! completions of their arguments. This module owns [`ContextStore`], which holds them, the
//! `#[resource]` and `#[prompt]` registrations ([`register_all_resources`], [`register_all_prompts`]),
//! and the types both are built of.
//!
//! Why a store of its own rather than the [`ToolStore`](crate::store::ToolStore): a tool store is what
//! the *model* may call, and an agent hands all of it to the model each turn; resources and prompts are
//! chosen by the *application* or the person (MCP's "application-controlled" and "user-controlled"
//! primitives), never by the model, and an agent has no use for them. So an agent's store stays what it
//! is, and a server that offers more is given both (`McpServer::new(tools).context(store)`).

mod complete;
mod prompt;
mod resource;
mod template;

use std::sync::{Arc, Mutex, MutexGuard};

use indexmap::IndexMap;
use tokio::sync::{broadcast, watch};

pub(crate) use complete::Completer;
pub use prompt::{IntoPromptMessages, McpPrompt, PromptContext, PromptError};
pub use resource::{IntoResourceBody, McpResource, ResourceBody, ResourceError, ResourceRead};

/// Not public API: what `#[resource]` and `#[prompt]` generate code against.
#[doc(hidden)]
pub mod __private {
    use super::PromptError;
    pub use super::{
        IntoPromptMessages, IntoResourceBody, McpPrompt, McpResource, PromptContext,
        PromptRegistration, ResourceError, ResourceRead, ResourceRegistration,
    };
    use rmcp::model::JsonObject;
    use serde_json::Value;

    /// A template parameter's value, as the argument's type.
    pub fn template_param<T: TemplateParam>(
        read: &ResourceRead,
        name: &str,
    ) -> Result<T, ResourceError> {
        let value = read.param(name).unwrap_or_default();
        T::parse(value).map_err(|problem| {
            ResourceError::InvalidUri(format!(
                "the URI `{}` gives the parameter `{name}` the value `{value}`, which is not one it takes: {problem}",
                read.uri
            ))
        })
    }

    /// A type a URI template's parameter binds to: any `FromStr` whose error is `Display`.
    #[diagnostic::on_unimplemented(
        message = "a URI template parameter cannot be `{Self}`",
        note = "use `String` or any type that implements `FromStr` with a `Display` error (`u32`, `uuid::Uuid`, an enum with `FromStr`)"
    )]
    pub trait TemplateParam: Sized {
        /// The value, or what is wrong with it.
        fn parse(value: &str) -> Result<Self, String>;
    }

    impl<T> TemplateParam for T
    where
        T: std::str::FromStr,
        T::Err: std::fmt::Display,
    {
        fn parse(value: &str) -> Result<Self, String> {
            value.parse().map_err(|error: T::Err| error.to_string())
        }
    }

    /// The JSON Schema of a prompt's argument struct.
    pub fn prompt_schema<A: schemars::JsonSchema>() -> Value {
        serde_json::to_value(schemars::schema_for!(A)).unwrap_or(Value::Null)
    }

    /// The argument struct of the strings a client gave: a value whose property is not a string in
    /// the schema (a number, a flag) is read as JSON first.
    pub fn prompt_arguments<A>(arguments: JsonObject) -> Result<A, PromptError>
    where
        A: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        let schema = prompt_schema::<A>();
        let properties = schema.get("properties");
        let arguments: serde_json::Map<String, Value> = arguments
            .into_iter()
            .map(|(name, value)| {
                let typed = properties
                    .and_then(|properties| properties.get(&name))
                    .and_then(|property| property.get("type"))
                    .is_some_and(|kind| kind != "string");
                let value = match value {
                    Value::String(text) if typed => {
                        serde_json::from_str(&text).unwrap_or(Value::String(text))
                    }
                    other => other,
                };
                (name, value)
            })
            .collect();
        serde_json::from_value(Value::Object(arguments))
            .map_err(|error| PromptError::InvalidArguments(error.to_string()))
    }
}

/// Why a resource or prompt was not registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// The store has a resource (or template) at this URI already.
    #[error("the context store `{store}` has a resource at `{uri}` already")]
    DuplicateResource {
        /// The store's name.
        store: String,
        /// The URI or URI template.
        uri: String,
    },
    /// The store has a prompt of this name already.
    #[error("the context store `{store}` has a prompt named `{name}` already")]
    DuplicatePrompt {
        /// The store's name.
        store: String,
        /// The prompt's name.
        name: String,
    },
}

/// The resources and prompts an [`McpServer`](crate::mcp::McpServer) serves, in registration order; cheap
/// to clone (the copies share it). Changes reach the server's clients as `list_changed` notifications,
/// and [`updated`](Self::updated) tells the clients subscribed to a resource.
///
/// ```
/// use yiem_core::mcp::{ContextStore, McpPrompt, McpResource};
///
/// let store = ContextStore::new("docs");
/// store.add_resource(McpResource::new("docs://readme", "readme")).unwrap();
/// store.add_prompt(McpPrompt::new("summarize")).unwrap();
/// assert!(store.add_prompt(McpPrompt::new("summarize")).is_err());
/// assert_eq!(store.resources().len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct ContextStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    name: String,
    entries: Mutex<Entries>,
    /// Counts changes of the lists: resources and templates, prompts.
    changes: watch::Sender<(u64, u64)>,
    updates: broadcast::Sender<String>,
}

#[derive(Debug, Default)]
struct Entries {
    resources: IndexMap<String, McpResource>,
    prompts: IndexMap<String, McpPrompt>,
}

impl ContextStore {
    /// An empty store named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        ContextStore {
            inner: Arc::new(Inner {
                name: name.into(),
                entries: Mutex::default(),
                changes: watch::Sender::new((0, 0)),
                updates: broadcast::Sender::new(64),
            }),
        }
    }

    fn entries(&self) -> MutexGuard<'_, Entries> {
        self.inner
            .entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The store's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Adds a resource or template; refuses a second at the same URI.
    pub fn add_resource(&self, resource: McpResource) -> Result<(), ContextError> {
        let uri = resource.uri().to_owned();
        {
            let mut entries = self.entries();
            if entries.resources.contains_key(&uri) {
                return Err(ContextError::DuplicateResource {
                    store: self.inner.name.clone(),
                    uri,
                });
            }
            entries.resources.insert(uri, resource);
        }
        self.inner
            .changes
            .send_modify(|(resources, _)| *resources += 1);
        Ok(())
    }

    /// Adds a prompt; refuses a second of the same name.
    pub fn add_prompt(&self, prompt: McpPrompt) -> Result<(), ContextError> {
        let name = prompt.name().to_owned();
        {
            let mut entries = self.entries();
            if entries.prompts.contains_key(&name) {
                return Err(ContextError::DuplicatePrompt {
                    store: self.inner.name.clone(),
                    name,
                });
            }
            entries.prompts.insert(name, prompt);
        }
        self.inner.changes.send_modify(|(_, prompts)| *prompts += 1);
        Ok(())
    }

    /// Removes the resource or template at `uri`.
    pub fn remove_resource(&self, uri: &str) -> Option<McpResource> {
        let removed = self.entries().resources.shift_remove(uri);
        if removed.is_some() {
            self.inner
                .changes
                .send_modify(|(resources, _)| *resources += 1);
        }
        removed
    }

    /// Removes the prompt `name`.
    pub fn remove_prompt(&self, name: &str) -> Option<McpPrompt> {
        let removed = self.entries().prompts.shift_remove(name);
        if removed.is_some() {
            self.inner.changes.send_modify(|(_, prompts)| *prompts += 1);
        }
        removed
    }

    /// The resources and templates, in registration order.
    pub fn resources(&self) -> Vec<McpResource> {
        self.entries().resources.values().cloned().collect()
    }

    /// The prompts, in registration order.
    pub fn prompts(&self) -> Vec<McpPrompt> {
        self.entries().prompts.values().cloned().collect()
    }

    /// The prompt `name`.
    pub fn prompt(&self, name: &str) -> Option<McpPrompt> {
        self.entries().prompts.get(name).cloned()
    }

    /// The resource a read of `uri` goes to, with the template's parameters: a fixed URI first, then
    /// the first template (in registration order) that matches.
    pub(crate) fn resource_at(
        &self,
        uri: &str,
    ) -> Option<(McpResource, std::collections::BTreeMap<String, String>)> {
        let entries = self.entries();
        if let Some(fixed) = entries.resources.get(uri).filter(|r| !r.is_template()) {
            return Some((fixed.clone(), Default::default()));
        }
        entries
            .resources
            .values()
            .filter(|resource| resource.is_template())
            .find_map(|resource| Some((resource.clone(), resource.matches(uri)?)))
    }

    /// The template whose URI template is `uri_template`.
    pub(crate) fn template(&self, uri_template: &str) -> Option<McpResource> {
        self.entries()
            .resources
            .get(uri_template)
            .filter(|resource| resource.is_template())
            .cloned()
    }

    /// Tells the clients subscribed to `uri` (`resources/subscribe`) that it changed
    /// (`notifications/resources/updated`), so they read it again.
    pub fn updated(&self, uri: impl Into<String>) {
        // No receiver (no client subscribed yet) is not an error.
        let _ = self.inner.updates.send(uri.into());
    }

    /// Changes of the lists: the counts of changes of the resources (with templates) and prompts.
    pub(crate) fn changes(&self) -> watch::Receiver<(u64, u64)> {
        self.inner.changes.subscribe()
    }

    /// The URIs [`updated`](Self::updated) from now on.
    pub(crate) fn updates(&self) -> broadcast::Receiver<String> {
        self.inner.updates.subscribe()
    }
}

/// One `#[resource]` function, submitted to `inventory` by the macro.
#[doc(hidden)]
#[derive(Debug)]
pub struct ResourceRegistration {
    build: fn() -> McpResource,
}

impl ResourceRegistration {
    /// Not public API: used by `#[resource]`.
    #[doc(hidden)]
    pub const fn new(build: fn() -> McpResource) -> Self {
        ResourceRegistration { build }
    }
}

/// One `#[prompt]` function, submitted to `inventory` by the macro.
#[doc(hidden)]
#[derive(Debug)]
pub struct PromptRegistration {
    build: fn() -> McpPrompt,
}

impl PromptRegistration {
    /// Not public API: used by `#[prompt]`.
    #[doc(hidden)]
    pub const fn new(build: fn() -> McpPrompt) -> Self {
        PromptRegistration { build }
    }
}

inventory::collect!(ResourceRegistration);
inventory::collect!(PromptRegistration);

/// Adds every `#[resource]` linked into the binary to `store`, ordered by URI; returns their URIs.
/// Stops at the first that the store refuses (one at the same URI).
///
/// ```
/// use yiem_core::mcp::{ContextStore, register_all_resources};
///
/// let store = ContextStore::new("docs");
/// let added = register_all_resources(&store).unwrap();
/// assert_eq!(added.len(), store.resources().len());
/// ```
pub fn register_all_resources(store: &ContextStore) -> Result<Vec<String>, ContextError> {
    let mut resources: Vec<McpResource> = inventory::iter::<ResourceRegistration>
        .into_iter()
        .map(|registration| (registration.build)())
        .collect();
    resources.sort_by(|a, b| a.uri().cmp(b.uri()));
    let mut added = Vec::with_capacity(resources.len());
    for resource in resources {
        added.push(resource.uri().to_owned());
        store.add_resource(resource)?;
    }
    Ok(added)
}

/// Adds every `#[prompt]` linked into the binary to `store`, ordered by name; returns their names.
/// Stops at the first that the store refuses (one of the same name).
pub fn register_all_prompts(store: &ContextStore) -> Result<Vec<String>, ContextError> {
    let mut prompts: Vec<McpPrompt> = inventory::iter::<PromptRegistration>
        .into_iter()
        .map(|registration| (registration.build)())
        .collect();
    prompts.sort_by(|a, b| a.name().cmp(b.name()));
    let mut added = Vec::with_capacity(prompts.len());
    for prompt in prompts {
        added.push(prompt.name().to_owned());
        store.add_prompt(prompt)?;
    }
    Ok(added)
}
