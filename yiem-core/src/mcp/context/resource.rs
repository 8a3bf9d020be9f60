//! A resource an MCP server serves: a fixed URI or a URI template (RFC 6570 level 1, `{name}`), what it
//! is, and the function that reads it.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use base64::Engine;
use futures::future::BoxFuture;
use rmcp::model::{Resource, ResourceContents, ResourceTemplate};

use super::complete::Completer;
use super::template::UriTemplate;

/// A resource's URI: fixed, or a template whose `{parameters}` a read's URI fills in.
#[derive(Clone, Debug)]
pub(crate) enum Address {
    Fixed(String),
    Template(UriTemplate),
}

type ReadFn =
    dyn Fn(ResourceRead) -> BoxFuture<'static, Result<ResourceBody, ResourceError>> + Send + Sync;

/// Why a read of a resource failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// The URI matched the template, but a parameter's value is not what the resource takes (`-32602`).
    #[error("{0}")]
    InvalidUri(String),
    /// The read failed: its message (`-32603`).
    #[error("{0}")]
    Failed(String),
}

/// A resource an [`McpServer`](crate::mcp::McpServer) serves from a [`ContextStore`](super::ContextStore):
/// `#[resource]` builds one, or build one at run time.
///
/// ```
/// use yiem_core::mcp::{McpResource, ResourceBody};
///
/// let greeting = McpResource::new("memo://greeting", "greeting")
///     .description("A friendly greeting.")
///     .read(|_read| async { Ok(ResourceBody::text("Hello!")) });
/// assert_eq!(greeting.uri(), "memo://greeting");
/// assert!(!greeting.is_template());
///
/// let user = McpResource::template("memo://users/{id}", "user")
///     .unwrap()
///     .mime_type("application/json")
///     .read(|read| async move { Ok(ResourceBody::text(format!("{{\"id\":\"{}\"}}", read.param("id").unwrap()))) });
/// assert!(user.is_template());
/// ```
#[derive(Clone)]
pub struct McpResource {
    pub(crate) address: Address,
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: Option<String>,
    pub(crate) reader: Arc<ReadFn>,
    pub(crate) completers: BTreeMap<String, Completer>,
}

impl fmt::Debug for McpResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpResource")
            .field("uri", &self.uri())
            .field("name", &self.name)
            .field("mime_type", &self.mime_type)
            .finish_non_exhaustive()
    }
}

/// What a read of a resource gets: the URI asked for and, for a template, its parameters' values.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ResourceRead {
    /// The URI the client read.
    pub uri: String,
    /// The values of the template's parameters in `uri` (empty for a fixed URI), percent-decoded.
    pub params: BTreeMap<String, String>,
}

impl ResourceRead {
    /// The value of the template parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }
}

impl McpResource {
    /// A resource at the fixed `uri`, named `name`; it reads as empty text until [`read`](Self::read)
    /// says how to read it.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::at(Address::Fixed(uri.into()), name.into())
    }

    /// A resource template: every URI that matches `uri_template` (`{name}` parameters, each one or more
    /// characters up to the next literal part, no `/`). Errs, saying why, on a template that is not of
    /// that form.
    pub fn template(uri_template: &str, name: impl Into<String>) -> Result<Self, String> {
        Ok(Self::at(
            Address::Template(UriTemplate::parse(uri_template)?),
            name.into(),
        ))
    }

    fn at(address: Address, name: String) -> Self {
        McpResource {
            address,
            name,
            title: None,
            description: None,
            mime_type: None,
            reader: Arc::new(
                |_| -> BoxFuture<'static, Result<ResourceBody, ResourceError>> {
                    Box::pin(async { Ok(ResourceBody::text("")) })
                },
            ),
            completers: BTreeMap::new(),
        }
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What the resource is, for the client and its model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The MIME type of what a read returns (unless the [`ResourceBody`] says its own); without it,
    /// `text/plain` for text and `application/octet-stream` for bytes.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// How a read is answered; an error is the client's (see [`ResourceError`]).
    pub fn read<F, Fut>(mut self, read: F) -> Self
    where
        F: Fn(ResourceRead) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceBody, ResourceError>> + Send + 'static,
    {
        self.reader = Arc::new(
            move |request| -> BoxFuture<'static, Result<ResourceBody, ResourceError>> {
                Box::pin(read(request))
            },
        );
        self
    }

    /// Completions of the template parameter `param` (`completion/complete`): `complete` gets what the
    /// client typed so far and returns candidates; the server keeps those that start with it.
    pub fn complete(
        mut self,
        param: impl Into<String>,
        complete: impl Fn(&str) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.completers
            .insert(param.into(), Completer::function(complete));
        self
    }

    /// The fixed URI, or the template.
    pub fn uri(&self) -> &str {
        match &self.address {
            Address::Fixed(uri) => uri,
            Address::Template(template) => template.as_str(),
        }
    }

    /// The resource's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this is a template.
    pub fn is_template(&self) -> bool {
        matches!(self.address, Address::Template(_))
    }

    /// The parameters `uri` gives this resource, if it is this resource's.
    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        match &self.address {
            Address::Fixed(fixed) => (fixed == uri).then(BTreeMap::new),
            Address::Template(template) => template.matches(uri),
        }
    }

    /// Its `resources/list` entry, for a resource at a fixed URI.
    pub(crate) fn as_resource(&self) -> Option<Resource> {
        let Address::Fixed(uri) = &self.address else {
            return None;
        };
        let mut resource = Resource::new(uri, &self.name);
        resource.title.clone_from(&self.title);
        resource.description.clone_from(&self.description);
        resource.mime_type.clone_from(&self.mime_type);
        Some(resource)
    }

    /// Its `resources/templates/list` entry, for a resource template.
    pub(crate) fn as_template(&self) -> Option<ResourceTemplate> {
        let Address::Template(template) = &self.address else {
            return None;
        };
        let mut listed = ResourceTemplate::new(template.as_str(), &self.name);
        listed.title.clone_from(&self.title);
        listed.description.clone_from(&self.description);
        listed.mime_type.clone_from(&self.mime_type);
        Some(listed)
    }

    /// Reads the resource at `uri`, which matched it with `params`.
    pub(crate) async fn read_at(
        &self,
        uri: &str,
        params: BTreeMap<String, String>,
    ) -> Result<ResourceBody, ResourceError> {
        let read = ResourceRead {
            uri: uri.to_owned(),
            params,
        };
        (self.reader)(read).await
    }

    /// The MCP contents of `body` read at `uri`.
    pub(crate) fn contents(&self, uri: &str, body: ResourceBody) -> ResourceContents {
        let mime_type = body.mime_type.or_else(|| self.mime_type.clone());
        match body.data {
            Data::Text(text) => ResourceContents::text(text, uri)
                .with_mime_type(mime_type.unwrap_or_else(|| "text/plain".to_owned())),
            Data::Bytes(bytes) => {
                ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(bytes), uri)
                    .with_mime_type(
                        mime_type.unwrap_or_else(|| "application/octet-stream".to_owned()),
                    )
            }
        }
    }
}

/// What a read of a resource returns: text or bytes, and its MIME type when it is not the resource's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceBody {
    data: Data,
    mime_type: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Data {
    Text(String),
    Bytes(Vec<u8>),
}

impl ResourceBody {
    /// Text.
    pub fn text(text: impl Into<String>) -> Self {
        ResourceBody {
            data: Data::Text(text.into()),
            mime_type: None,
        }
    }

    /// Bytes, sent base64-encoded.
    pub fn bytes(bytes: impl Into<Vec<u8>>) -> Self {
        ResourceBody {
            data: Data::Bytes(bytes.into()),
            mime_type: None,
        }
    }

    /// This body's MIME type, over the resource's.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The bytes the body holds (text as UTF-8), as counted against the server's size bound.
    pub fn len(&self) -> usize {
        match &self.data {
            Data::Text(text) => text.len(),
            Data::Bytes(bytes) => bytes.len(),
        }
    }

    /// Whether the body is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a `#[resource]` function may return: `String`, `&'static str` (text), `Vec<u8>` (bytes),
/// [`ResourceBody`], or `Result<T, E>` of one of them with `E: Display` (an `Err` is an error the
/// client gets).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not something a #[resource] function can return",
    note = "return `String` or `&'static str` (text), `Vec<u8>` (bytes), `ResourceBody`, or a `Result` of one of them whose error is `Display`"
)]
pub trait IntoResourceBody {
    /// The body, or the error message.
    fn into_resource_body(self) -> Result<ResourceBody, String>;
}

impl IntoResourceBody for ResourceBody {
    fn into_resource_body(self) -> Result<ResourceBody, String> {
        Ok(self)
    }
}

impl IntoResourceBody for String {
    fn into_resource_body(self) -> Result<ResourceBody, String> {
        Ok(ResourceBody::text(self))
    }
}

impl IntoResourceBody for &'static str {
    fn into_resource_body(self) -> Result<ResourceBody, String> {
        Ok(ResourceBody::text(self))
    }
}

impl IntoResourceBody for Vec<u8> {
    fn into_resource_body(self) -> Result<ResourceBody, String> {
        Ok(ResourceBody::bytes(self))
    }
}

impl<T: IntoResourceBody, E: fmt::Display> IntoResourceBody for Result<T, E> {
    fn into_resource_body(self) -> Result<ResourceBody, String> {
        self.map_err(|error| error.to_string())
            .and_then(IntoResourceBody::into_resource_body)
    }
}
