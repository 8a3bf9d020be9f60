//! Using the tools of any MCP server: [`McpClient`] connects to a server — a command spoken to over stdio,
//! or a streamable-HTTP URL — lists its tools, and registers each as an [`AgentTool`] in a [`ToolStore`],
//! so an agent calls them like its own. Needs the `mcp-client` feature.
//!
//! ```no_run
//! use yiem_core::store::ToolStore;
//! use yiem_core::mcp::McpClient;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = ToolStore::new("agent");
//! let everything = McpClient::command("npx", ["-y", "@modelcontextprotocol/server-everything"])
//!     .name("everything")
//!     .prefix("ev_")
//!     .connect()
//!     .await?;
//! let names = everything.register(&store).await?;
//! println!("{names:?}"); // ["ev_echo", "ev_add", ...]
//! # Ok(()) }
//! ```
//!
//! # What a call does
//!
//! - The arguments go to the server as they are (each tool's schema is the server's, rewritten per dialect
//!   like any other tool's when the model sees it; the server validates).
//! - The server's `notifications/progress` for the call become [`ToolContext::update`]s (the message, or
//!   `progress/total`, as text).
//! - Cancelling the call (an abort, the call's time limit, a dropped batch) sends `notifications/cancelled`.
//! - The result maps back: `isError`, text and image content, `structuredContent`; other content kinds
//!   (audio, resources) arrive as their JSON text.
//! - A server that exits or hangs gives an error result naming the server and the tool — never a hang
//!   (each call has a time limit, [`McpClientBuilder::call_timeout`]) or a panic — and the next call
//!   starts it again (or reconnects), waiting a bounded, growing delay after repeated failures.
//! - `notifications/tools/list_changed` from the server re-lists its tools into every store they were
//!   registered in; [`McpClient::refresh`] does the same on demand.
//! - A tool list the server says stays fresh for a time (`ttlMs`, SEP-2549; at most a day is believed)
//!   is a cache: [`McpClient::tools`] reuses it until then, and the first call after that lists the
//!   tools again first (into every store), so a change the server does not announce still reaches the
//!   model. A list without a time (or 0) is never reused, and calls do not list again by themselves.
//!
//! Every wait on a server is bounded, and so is what it may list: see [`McpClientBuilder`].
//!
//! # Connecting over HTTP
//!
//! - The client speaks the 2026-07-28 revision (`server/discover`, no session) to servers that offer it,
//!   and the `initialize` handshake at 2025-11-25 to those that do not, decided at each connection.
//! - Over stdio it speaks 2025-11-25 to every server. A local server's tools are commonly written
//!   against that revision's requests to the client (the official Python SDK's `elicit_form` and
//!   `create_message`), which a server of both revisions refuses to send to a 2026-07-28 client on
//!   stdio ("no back-channel"), so those tools would fail; under 2025-11-25 they work, and yiem's own
//!   server asks its questions either way.
//! - A server that answers `401` or `403` is authorized with OAuth 2.1 when the client has an
//!   `OAuth` configuration (`McpClientBuilder::oauth`, feature `mcp-oauth`, module `mcp::oauth`);
//!   each request is retried at most once after an authorization and once after a step-up. Without one,
//!   the refusal is an [`McpClientError::Authorization`] that says what to configure.
//!
//! # Requests from the server
//!
//! - Elicitation goes to the [`ElicitationHandler`] given to [`McpClientBuilder::elicitation`], with the
//!   schema's defaults filled into the answer; sampling to the [`SamplingHandler`] given to
//!   [`McpClientBuilder::sampling`]. With [`McpClientBuilder::ask_through_calls`] they are the waiting
//!   call's own questions instead. Without either the capability is not declared and such requests
//!   are declined or refused.
//! - Log messages become `tracing` events (target `yiem_core::mcp::client`, the server named, the data
//!   escaped).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest, ContentBlock,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, Implementation, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, ListToolsRequest, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, ServerNotification, ServerResult, SubscriptionFilter, Tool,
};
// Logging and sampling are deprecated by SEP-2577 (the 2026-07-28 revision), but servers of the
// earlier revisions use them.
#[allow(deprecated)]
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ErrorCode, LoggingLevel,
    LoggingMessageNotificationParam, ResourceContents, Role, SamplingCapability, SamplingContent,
    SamplingMessage, SamplingMessageContentBlock,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RoleClient, RunningService,
    ServiceError,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, Peer, ServiceExt};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use super::client_error::McpClientError;
use super::elicitation::with_defaults;
#[cfg(feature = "mcp-oauth")]
use super::oauth::{Authorizer, Tries};
use crate::content::{Content, ResourceInfo};
use crate::context::ToolContext;
use crate::definition::{AgentTool, ToolAnnotations, ToolNamespace};
use crate::dialect::Dialect;
use crate::elicit::{Elicitation, ElicitationAnswer, ElicitationHandler};
use crate::registry::ToolStore;
use crate::result::AgentToolResult;
use crate::sample::{SampledMessage, Sampling, SamplingAnswer, SamplingHandler};

/// The time limit of one call to a server unless set otherwise.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// How long starting (or reaching) a server and its `initialize` handshake may take unless set otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the server may take to answer one `tools/list` page unless set otherwise.
pub const DEFAULT_LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// The most `tools/list` pages one listing follows unless set otherwise.
pub const DEFAULT_MAX_PAGES: usize = 100;

/// The most tools one listing takes unless set otherwise.
pub const DEFAULT_MAX_TOOLS: usize = 10_000;

/// The deepest nesting of a tool's input or output schema taken unless set otherwise (objects and
/// arrays, the schema itself counting as 1).
pub const DEFAULT_MAX_SCHEMA_DEPTH: usize = 64;

#[derive(Clone, Debug)]
enum Target {
    Command {
        program: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        url: String,
        bearer: Option<String>,
        #[cfg(feature = "mcp-oauth")]
        oauth: Option<super::oauth::OAuth>,
    },
}

/// Configures an [`McpClient`]. Start with [`McpClient::command`] or [`McpClient::http`].
///
/// # Every wait is bounded
///
/// A server is a peer yiem does not control: each wait on it has a limit, set on the
/// [`McpClientBuilder`], and going past one is an [`McpClientError::Limit`] that names the server, the
/// limit and the setting that raises it.
///
/// | What | Setting | Default |
/// |---|---|---|
/// | starting or reaching the server and the `initialize` handshake | [`connect_timeout`](McpClientBuilder::connect_timeout) | [`DEFAULT_CONNECT_TIMEOUT`] (30 s) |
/// | the answer to each `tools/list` page | [`list_timeout`](McpClientBuilder::list_timeout) | [`DEFAULT_LIST_TIMEOUT`] (30 s) |
/// | `tools/list` pages in one listing | [`max_pages`](McpClientBuilder::max_pages) | [`DEFAULT_MAX_PAGES`] (100) |
/// | tools in one listing | [`max_tools`](McpClientBuilder::max_tools) | [`DEFAULT_MAX_TOOLS`] (10 000) |
/// | nesting of a tool's input or output schema | [`max_schema_depth`](McpClientBuilder::max_schema_depth) | [`DEFAULT_MAX_SCHEMA_DEPTH`] (64) |
/// | one call | [`call_timeout`](McpClientBuilder::call_timeout) | [`DEFAULT_CALL_TIMEOUT`] (300 s) |
///
/// A message from the server that is not JSON, or nests deeper than serde_json's recursion limit (128
/// levels), is dropped by rmcp's transport unread, so an answer like that counts as no answer and ends in
/// the time limit. A listing is all or nothing: a server that lists two tools under one name, or
/// exceeds a limit on any page, registers none. One tool yiem cannot offer is left out, with a warning
/// ([`McpClient::left_out`]).
#[must_use]
pub struct McpClientBuilder {
    name: Option<String>,
    prefix: String,
    target: Target,
    call_timeout: Duration,
    limits: Limits,
    elicitation: Option<Arc<dyn ElicitationHandler>>,
    sampling: Option<Arc<dyn SamplingHandler>>,
    defer_loading: bool,
    ask_through_calls: bool,
}

/// The bounds on waiting for a server and on what it lists (see the module docs).
#[derive(Clone, Copy, Debug)]
struct Limits {
    connect_timeout: Duration,
    list_timeout: Duration,
    max_pages: usize,
    max_tools: usize,
    max_schema_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            list_timeout: DEFAULT_LIST_TIMEOUT,
            max_pages: DEFAULT_MAX_PAGES,
            max_tools: DEFAULT_MAX_TOOLS,
            max_schema_depth: DEFAULT_MAX_SCHEMA_DEPTH,
        }
    }
}

impl McpClientBuilder {
    /// The server's name in error messages (default: the program, or the URL's host).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Put `prefix` before every tool name, so two servers' tools cannot collide (`fs_` + `read`).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// An environment variable for the server's process (commands only).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Target::Command { env, .. } = &mut self.target {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// A bearer token sent with every HTTP request (URLs only).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        if let Target::Http { bearer, .. } = &mut self.target {
            *bearer = Some(token.into());
        }
        self
    }

    /// Authorize with OAuth 2.1 when the server asks (URLs only; see [`oauth`](super::oauth)).
    #[cfg(feature = "mcp-oauth")]
    pub fn oauth(mut self, config: super::oauth::OAuth) -> Self {
        if let Target::Http { oauth, .. } = &mut self.target {
            *oauth = Some(config);
        }
        self
    }

    /// Answer the server's elicitation requests (questions for the user, in a form the server
    /// describes with a schema) with `handler`, and declare the capability. The fields the answer
    /// leaves out that the schema gives a `default` are filled with it (SEP-1034). Without a handler
    /// the client does not declare elicitation, and servers do not ask.
    pub fn elicitation(mut self, handler: impl ElicitationHandler) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// Pass the server's questions to the call that is waiting for them: an elicitation (a tool's
    /// approval, say) becomes the calling tool's own [`ToolContext::elicit`](crate::tool::ToolContext::elicit)
    /// question, a sampling request its [`ToolContext::sample`](crate::tool::ToolContext::sample) — so in an
    /// `Agent` without handlers the run pauses on it ([`RunStop::AwaitingAnswer`](crate::agent::RunStop)) and
    /// the call is made again with the answer, and behind an `McpServer` it goes on to that server's
    /// client. The client declares both capabilities. A server of the 2026-07-28 revision asks by
    /// answering the call `input_required`, so its question is the call's. A server of an earlier
    /// revision asks by a request of its own, which names no call: it goes to the one call of this
    /// client waiting for that server, and is declined while none or several wait. A handler given
    /// with [`elicitation`](Self::elicitation) or [`sampling`](Self::sampling) answers instead.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = yiem_core::mcp::McpClient::http("http://127.0.0.1:8000/mcp")
    ///     .ask_through_calls()
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn ask_through_calls(mut self) -> Self {
        self.ask_through_calls = true;
        self
    }

    /// Answer the server's sampling requests (a completion from the client's model) with `handler`,
    /// and declare the capability; see [`Sampling`]. Without a handler the client does not declare
    /// sampling and refuses such requests.
    pub fn sampling(mut self, handler: impl SamplingHandler) -> Self {
        self.sampling = Some(Arc::new(handler));
        self
    }

    /// How long one call may take before it is cancelled with an error result (default:
    /// [`DEFAULT_CALL_TIMEOUT`]).
    pub fn call_timeout(mut self, limit: Duration) -> Self {
        self.call_timeout = limit;
        self
    }

    /// How long starting (or reaching) the server and the `initialize` handshake may take, at the first
    /// connection and at each reconnection (default: [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.limits.connect_timeout = limit;
        self
    }

    /// How long the server may take to answer one `tools/list` page (default: [`DEFAULT_LIST_TIMEOUT`]).
    pub fn list_timeout(mut self, limit: Duration) -> Self {
        self.limits.list_timeout = limit;
        self
    }

    /// The most `tools/list` pages one listing follows (default: [`DEFAULT_MAX_PAGES`]).
    pub fn max_pages(mut self, pages: usize) -> Self {
        self.limits.max_pages = pages;
        self
    }

    /// The most tools one listing takes (default: [`DEFAULT_MAX_TOOLS`]).
    pub fn max_tools(mut self, tools: usize) -> Self {
        self.limits.max_tools = tools;
        self
    }

    /// The deepest nesting of objects and arrays taken in a tool's input or output schema, the schema
    /// itself counting as 1 (default: [`DEFAULT_MAX_SCHEMA_DEPTH`]).
    pub fn max_schema_depth(mut self, levels: usize) -> Self {
        self.limits.max_schema_depth = levels;
        self
    }

    /// Defers the server's tools in every store they are registered in (see [`crate::catalog`]): their
    /// definitions are sent once the model has found them. [`McpClient::set_defer_loading`] changes it
    /// later.
    pub fn defer_loading(mut self) -> Self {
        self.defer_loading = true;
        self
    }

    /// Starts (or reaches) the server and completes the MCP handshake.
    pub async fn connect(self) -> Result<McpClient, McpClientError> {
        let name = self.name.unwrap_or_else(|| match &self.target {
            Target::Command { program, .. } => program.clone(),
            Target::Http { url, .. } => url.clone(),
        });
        #[cfg(feature = "mcp-oauth")]
        let authorizer = match &self.target {
            Target::Http {
                url,
                oauth: Some(config),
                ..
            } => Some(Arc::new(
                super::oauth::Authorizer::new(&name, url, config.clone()).await?,
            )),
            _ => None,
        };
        #[cfg(not(feature = "mcp-oauth"))]
        let authorizer = None;
        let inner = Arc::new(Inner {
            authorizer,
            elicitation: self.elicitation,
            sampling: self.sampling,
            ask_through_calls: self.ask_through_calls,
            name,
            prefix: self.prefix,
            target: self.target,
            call_timeout: self.call_timeout,
            limits: self.limits,
            connection: tokio::sync::Mutex::new(None),
            failures: Mutex::new(0),
            routes: Arc::default(),
            stores: Mutex::new(Vec::new()),
            defer: AtomicBool::new(self.defer_loading),
            listing: Mutex::new(None),
            left_out: Mutex::new(Vec::new()),
            waiting: Mutex::new(Vec::new()),
            calls: AtomicU64::new(0),
        });
        let connection = inner.open().await?;
        *inner.connection.lock().await = Some(connection);
        Ok(McpClient { inner })
    }
}

/// A connection to one MCP server whose tools can be registered into stores. Cloning gives another
/// handle to the same connection. See the docs of the `mcp::client` module in the source.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

type Routes = Arc<Mutex<HashMap<ProgressToken, mpsc::UnboundedSender<ProgressNotificationParam>>>>;

struct Inner {
    /// The server's OAuth, when configured.
    authorizer: Option<Arc<Authorizer>>,
    elicitation: Option<Arc<dyn ElicitationHandler>>,
    sampling: Option<Arc<dyn SamplingHandler>>,
    /// Questions without a handler go to the waiting call's context.
    ask_through_calls: bool,
    name: String,
    prefix: String,
    target: Target,
    call_timeout: Duration,
    limits: Limits,
    connection: tokio::sync::Mutex<Option<Connection>>,
    /// Connection failures in a row, for the backoff.
    failures: Mutex<u32>,
    routes: Routes,
    /// The stores the tools were registered in, with the names registered there, kept up to date when
    /// the server's list changes.
    stores: Mutex<Vec<(ToolStore, Vec<String>)>>,
    /// The server's tools are deferred in the stores they are registered in (see [`crate::catalog`]).
    defer: AtomicBool,
    /// The last `tools/list`, while the server's `ttlMs` says it is fresh.
    listing: Mutex<Option<Listing>>,
    /// The tools the last listing left out, each with why.
    left_out: Mutex<Vec<LeftOutTool>>,
    /// The calls waiting for the server: a question of an earlier revision's server, which is not tied
    /// to a call, is the call's own when exactly one waits ([`McpClientBuilder::ask_through_calls`]).
    waiting: Mutex<Vec<WaitingCall>>,
    /// Numbers the waiting calls.
    calls: AtomicU64,
}

/// A tool a server listed that the client left out (see [`McpClient::tools`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeftOutTool {
    /// The tool's name as the server listed it, cut to 64 characters.
    pub name: String,
    /// Why it was left out, cut to 500 characters.
    pub reason: String,
}

impl LeftOutTool {
    fn new(name: &str, error: &McpClientError) -> Self {
        let detail = match error {
            McpClientError::Tool { detail, .. } => detail.as_str(),
            _ => "it could not be built",
        };
        LeftOutTool {
            name: cut(name, 64),
            reason: cut(detail, 500),
        }
    }
}

/// `text` cut to `limit` characters, with `…` where it was cut.
fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// A `tools/list` answer kept as a cache (SEP-2549).
struct Listing {
    tools: Vec<Tool>,
    /// Until when the server said it is fresh (its `ttlMs`, at most a day); `None` once it is being
    /// listed again, and for a server that gave no time (or 0), whose list is never reused.
    fresh_until: Option<Instant>,
}

/// The longest a listing is taken as fresh, whatever the server says (as the official SDKs do).
const MAX_LIST_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// A call waiting for the server's answer.
struct WaitingCall {
    number: u64,
    ctx: ToolContext,
    /// Cancelled when the call ends, so a question it was asked stops waiting for the person.
    ended: CancellationToken,
}

/// A call's place among the waiting ones, given up when the call ends (or its future is dropped).
struct Waits {
    client: Arc<Inner>,
    number: u64,
}

impl Drop for Waits {
    fn drop(&mut self) {
        let mut waiting = self
            .client
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(at) = waiting.iter().position(|call| call.number == self.number) {
            waiting.remove(at).ended.cancel();
        }
    }
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
    alive: Arc<AtomicBool>,
    /// The `subscriptions/listen` stream of a 2026-07-28 server's tool-list changes, ended with the
    /// connection.
    _listening: Option<tokio_util::task::AbortOnDropHandle<()>>,
}

/// Without the `mcp-oauth` feature there is never an authorizer: the type has no values.
#[cfg(not(feature = "mcp-oauth"))]
enum Authorizer {}

#[cfg(not(feature = "mcp-oauth"))]
#[derive(Default)]
struct Tries(());

#[cfg(not(feature = "mcp-oauth"))]
impl Authorizer {
    fn generation(&self) -> u64 {
        match *self {}
    }

    async fn recover(&self, _: &str, _: u64, _: &mut Tries) -> Result<(), McpClientError> {
        match *self {}
    }
}

/// The client side of one connection: routes progress to calls, reacts to list changes, answers
/// elicitations, and logs the server's log messages.
struct Handler {
    routes: Routes,
    client: Weak<Inner>,
    server: String,
    elicitation: Option<Arc<dyn ElicitationHandler>>,
    sampling: Option<Arc<dyn SamplingHandler>>,
    ask_through_calls: bool,
}

impl Handler {
    /// The call a question without a handler goes to ([`McpClientBuilder::ask_through_calls`]): a
    /// request of an earlier revision's server names no call, so it is the one waiting call's, if
    /// exactly one waits. (2026-07-28 servers ask in the call's own answer instead.)
    fn through_call(&self, handled: bool) -> Option<(ToolContext, CancellationToken)> {
        if !self.ask_through_calls || handled {
            return None;
        }
        self.client.upgrade()?.only_waiting_call()
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicitation.is_some() || self.ask_through_calls {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        if self.sampling.is_some() || self.ask_through_calls {
            #[allow(deprecated)]
            let sampling = SamplingCapability::default();
            capabilities.sampling = Some(sampling);
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("yiem", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let Some((ctx, ended)) = self.through_call(self.elicitation.is_some()) {
            return tokio::select! {
                answer = elicit_through(&ctx, request) => answer,
                () = ended.cancelled() => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            };
        }
        answer_elicitation(self.elicitation.as_ref(), &self.server, request).await
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        if let Some((ctx, ended)) = self.through_call(self.sampling.is_some()) {
            return tokio::select! {
                answer = sample_through(&ctx, params) => answer,
                () = ended.cancelled() => Err(ErrorData::new(
                    ErrorCode(-1),
                    "the call that was waiting for this ended",
                    None,
                )),
            };
        }
        answer_sampling(self.sampling.as_ref(), &self.server, params).await
    }

    // Logging is deprecated by SEP-2577 (the 2026-07-28 revision), but servers of the earlier
    // revisions send it.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // What the server wrote goes out escaped (`?`), never raw into a terminal.
        let server = self.server.as_str();
        let logger = params.logger.as_deref().unwrap_or("");
        let data = &params.data;
        match params.level {
            LoggingLevel::Debug => tracing::debug!(server, logger, ?data, "MCP server log"),
            LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::info!(server, logger, ?data, "MCP server log")
            }
            LoggingLevel::Warning => tracing::warn!(server, logger, ?data, "MCP server log"),
            _ => tracing::error!(server, logger, ?data, "MCP server log"),
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(route) = routes.get(&params.progress_token) {
            let _ = route.send(params);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(client) = self.client.upgrade() {
            let client = McpClient { inner: client };
            tokio::spawn(async move {
                if let Err(error) = client.refresh().await {
                    tracing::warn!(%error, "could not re-list the tools after tools/list_changed");
                }
            });
        }
    }
}

impl McpClient {
    /// A server started as `program args…`, spoken to over its stdin and stdout.
    pub fn command(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> McpClientBuilder {
        McpClientBuilder {
            name: None,
            prefix: String::new(),
            target: Target::Command {
                program: program.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: Vec::new(),
            },
            call_timeout: DEFAULT_CALL_TIMEOUT,
            limits: Limits::default(),
            elicitation: None,
            sampling: None,
            defer_loading: false,
            ask_through_calls: false,
        }
    }

    /// A server reached over streamable HTTP at `url` (e.g. `http://127.0.0.1:8000/mcp`).
    pub fn http(url: impl Into<String>) -> McpClientBuilder {
        McpClientBuilder {
            name: None,
            prefix: String::new(),
            target: Target::Http {
                url: url.into(),
                bearer: None,
                #[cfg(feature = "mcp-oauth")]
                oauth: None,
            },
            call_timeout: DEFAULT_CALL_TIMEOUT,
            limits: Limits::default(),
            elicitation: None,
            sampling: None,
            defer_loading: false,
            ask_through_calls: false,
        }
    }

    /// The server's name, as errors give it.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Defers the server's tools (`on`) in the stores they are registered in, now and after every
    /// refresh, or stops deferring those registered from now on (see [`crate::catalog`]).
    pub fn set_defer_loading(&self, on: bool) {
        self.inner.defer.store(on, Ordering::Relaxed);
        if on {
            for (store, names) in self.inner.lock_stores().iter() {
                store.defer_loading(names);
            }
        }
    }

    /// Every tool the server lists (all pages), as tools that call it; an error if the server goes past a
    /// limit or lists two tools under one name.
    ///
    /// A listed tool yiem cannot offer — a name no provider takes, or a schema it cannot check (a `$ref`
    /// to a network address, which the client never fetches: SEP-2106) — is left out with a warning
    /// naming it and why, and the server's other tools are taken, as the MCP spec asks of a malformed
    /// tool definition (SEP-2243); [`left_out`](Self::left_out) lists them. A tool nobody can check is
    /// never offered: the model would send it arguments that no one checked against what it promised.
    ///
    /// A list the server said stays fresh for a while (its `ttlMs`, SEP-2549) is reused until then
    /// without asking again; [`refresh`](Self::refresh) always asks.
    pub async fn tools(&self) -> Result<Vec<AgentTool>, McpClientError> {
        self.listed(true).await
    }

    /// The server's tools, from the last listing while it is fresh and `reuse` allows it.
    async fn listed(&self, reuse: bool) -> Result<Vec<AgentTool>, McpClientError> {
        let peer = self.inner.peer().await?;
        let listed = match self.inner.fresh_listing().filter(|_| reuse) {
            Some(tools) => tools,
            None => self.inner.list_all(&peer).await?,
        };
        let instructions = peer
            .peer_info()
            .and_then(|server| server.instructions.clone());
        let namespace = self.inner.namespace(instructions.as_deref());
        let mut tools = Vec::with_capacity(listed.len());
        let mut left_out = Vec::new();
        for tool in &listed {
            match self.inner.agent_tool(tool, &namespace) {
                Ok(tool) => tools.push(tool),
                Err(error) => {
                    let left = LeftOutTool::new(&tool.name, &error);
                    tracing::warn!(server = %self.inner.name, tool = %left.name, "{}", left.reason);
                    left_out.push(left);
                }
            }
        }
        *self
            .inner
            .left_out
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = left_out;
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = tools.iter().find(|tool| !seen.insert(tool.name())) {
            return Err(McpClientError::Tool {
                server: self.inner.name.clone(),
                detail: format!(
                    "it lists two tools named `{}`; none of its tools were taken",
                    twice.name()
                ),
            });
        }
        Ok(tools)
    }

    /// The tools the last listing left out, each with why (see [`tools`](Self::tools)).
    pub fn left_out(&self) -> Vec<LeftOutTool> {
        self.inner
            .left_out
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Registers every tool of the server into `store` (all or nothing: on any error, no tool of the
    /// server is added) and keeps them up to date there when the server's list changes; returns their
    /// names.
    pub async fn register(&self, store: &ToolStore) -> Result<Vec<String>, McpClientError> {
        let tools = self.tools().await?;
        let names: Vec<String> = tools.iter().map(|tool| tool.name().to_owned()).collect();
        let refused = |detail: String| McpClientError::Register {
            server: self.inner.name.clone(),
            detail,
        };
        if let Some(taken) = names.iter().find(|name| store.contains(name)) {
            return Err(refused(format!(
                "the store already has a tool named `{taken}`; give the server a prefix"
            )));
        }
        for (added, tool) in tools.into_iter().enumerate() {
            if let Err(error) = store.register(tool) {
                // Another handle of the store took a name meanwhile: take back what was added.
                for name in &names[..added] {
                    store.remove(name);
                }
                return Err(refused(format!("{error}; none of its tools were added")));
            }
        }
        if self.inner.defer.load(Ordering::Relaxed) {
            store.defer_loading(&names);
        }
        self.inner
            .lock_stores()
            .push((store.clone(), names.clone()));
        Ok(names)
    }

    /// Lists the server's tools again and updates every store they were registered in: new tools are
    /// added, gone ones removed, changed ones replaced.
    pub async fn refresh(&self) -> Result<(), McpClientError> {
        let tools = self.listed(false).await?;
        let mut stores = self.inner.lock_stores();
        for (store, ours) in stores.iter_mut() {
            for name in ours.iter() {
                store.remove(name);
            }
            ours.clear();
            for tool in &tools {
                // A name another tool took meanwhile stays with that tool.
                if store.register(tool.clone()).is_ok() {
                    ours.push(tool.name().to_owned());
                }
            }
            if self.inner.defer.load(Ordering::Relaxed) {
                store.defer_loading(ours.iter());
            }
        }
        Ok(())
    }
}

/// Over HTTP the client speaks the 2026-07-28 revision (`server/discover`, no session) to servers
/// that offer it and falls back to `initialize` at 2025-11-25 for those that answer it as unknown
/// (or not within 10 s).
fn both_revisions() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

/// Why a handshake did not complete.
enum Handshake {
    Failed(McpClientError),
    /// The server answered 401 or 403 with this `WWW-Authenticate` challenge.
    Refused(String),
}

impl Inner {
    /// The count of authorizations completed so far, read before a request goes out.
    fn generation(&self) -> u64 {
        self.authorizer
            .as_ref()
            .map_or(0, |authorizer| authorizer.generation())
    }

    /// Gets a request refused with `challenge` (sent at `generation`) through: authorizes or steps up
    /// once per request, after which the caller retries it; an error when that is not possible.
    async fn get_through(
        &self,
        challenge: &str,
        generation: u64,
        tries: &mut Tries,
    ) -> Result<(), McpClientError> {
        match &self.authorizer {
            Some(authorizer) => authorizer.recover(challenge, generation, tries).await,
            None => Err(McpClientError::Authorization {
                server: self.name.clone(),
                detail: format!(
                    "it asks for authorization (`WWW-Authenticate: {}`); configure OAuth with \
                     `McpClientBuilder::oauth` (feature `mcp-oauth`) or give a token with \
                     `McpClientBuilder::bearer_token`",
                    challenge.escape_debug()
                ),
            }),
        }
    }

    fn lock_stores(&self) -> std::sync::MutexGuard<'_, Vec<(ToolStore, Vec<String>)>> {
        self.stores.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the server (or opens the HTTP session) and completes the handshake.
    async fn open(self: &Arc<Self>) -> Result<Connection, McpClientError> {
        // A new connection (a restarted server, say) lists anew.
        *self.listing.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let connect_error = |detail: String| McpClientError::Connect {
            server: self.name.clone(),
            detail,
        };
        let handler = || Handler {
            routes: Arc::clone(&self.routes),
            client: Arc::downgrade(self),
            server: self.name.clone(),
            elicitation: self.elicitation.clone(),
            sampling: self.sampling.clone(),
            ask_through_calls: self.ask_through_calls,
        };
        let handshake = || async {
            match &self.target {
                Target::Command { program, args, env } => {
                    let mut command = tokio::process::Command::new(program);
                    command.args(args).kill_on_drop(true);
                    for (key, value) in env {
                        command.env(key, value);
                    }
                    let (transport, _stderr) = TokioChildProcess::builder(command)
                        .stderr(std::process::Stdio::inherit())
                        .spawn()
                        .map_err(|error| {
                            Handshake::Failed(connect_error(format!(
                                "cannot start `{program}`: {error}"
                            )))
                        })?;
                    handler()
                        .serve(transport)
                        .await
                        .map_err(|error| Handshake::Failed(connect_error(error.to_string())))
                }
                Target::Http { url, bearer, .. } => {
                    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    config.allow_stateless = true;
                    config.reinit_on_expired_session = true;
                    if let Some(token) = bearer {
                        config = config.auth_header(token.clone());
                    }
                    let serve = |lifecycle: ClientLifecycleMode| {
                        let config = config.clone();
                        async move {
                            match &self.authorizer {
                                #[cfg(feature = "mcp-oauth")]
                                Some(authorizer) => {
                                    let transport = StreamableHttpClientTransport::with_client(
                                        authorizer.http_client(),
                                        config,
                                    );
                                    handler().serve_with_lifecycle(transport, lifecycle).await
                                }
                                _ => {
                                    let transport =
                                        StreamableHttpClientTransport::from_config(config);
                                    handler().serve_with_lifecycle(transport, lifecycle).await
                                }
                            }
                        }
                    };
                    let served = match serve(both_revisions()).await {
                        // A server that answers `server/discover` with something else than a
                        // discovery result or an error (some answer every request with `{}`) gets
                        // the `initialize` handshake of the earlier revisions.
                        Err(error) if error.auth_challenge().is_none() => {
                            tracing::debug!(server = %self.name, %error, "discovery failed; trying `initialize`");
                            serve(ClientLifecycleMode::Initialize).await
                        }
                        served => served,
                    };
                    served.map_err(|error| match error.auth_challenge() {
                        Some(challenge) => Handshake::Refused(challenge.to_owned()),
                        None => Handshake::Failed(connect_error(error.to_string())),
                    })
                }
            }
        };
        let limit = self.limits.connect_timeout;
        let mut tries = Tries::default();
        let service = loop {
            let generation = self.generation();
            // Out of time, the handshake's future is dropped, and with it the transport and its
            // process.
            let outcome =
                tokio::time::timeout(limit, handshake())
                    .await
                    .map_err(|_| McpClientError::Limit {
                        server: self.name.clone(),
                        limit: "connect_timeout",
                        detail: format!(
                            "it did not complete the `initialize` handshake within {limit:?}; if it is \
                             only slow to start, raise the limit with `McpClientBuilder::connect_timeout`"
                        ),
                    })?;
            match outcome {
                Ok(service) => break service,
                Err(Handshake::Failed(error)) => return Err(error),
                Err(Handshake::Refused(challenge)) => {
                    self.get_through(&challenge, generation, &mut tries).await?;
                }
            }
        };
        let listening = self.listen(service.peer());
        Ok(Connection {
            service,
            alive: Arc::new(AtomicBool::new(true)),
            _listening: listening,
        })
    }

    /// For a server of the 2026-07-28 revision that announces tool-list changes, which it sends only
    /// on a `subscriptions/listen` stream: opens one and re-lists the tools at each change (the
    /// earlier revisions' notification is handled by `Handler::on_tool_list_changed`).
    fn listen(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
    ) -> Option<tokio_util::task::AbortOnDropHandle<()>> {
        let server = peer.peer_info()?;
        let announces = server
            .capabilities
            .tools
            .as_ref()
            .is_some_and(|tools| tools.list_changed == Some(true));
        if server.protocol_version < ProtocolVersion::V_2026_07_28 || !announces {
            return None;
        }
        let peer = peer.clone();
        let client = Arc::downgrade(self);
        let name = self.name.clone();
        let listening = tokio::spawn(async move {
            let mut filter = SubscriptionFilter::default();
            filter.tools_list_changed = Some(true);
            let mut subscription = match peer.listen(filter).await {
                Ok(subscription) => subscription,
                Err(error) => {
                    tracing::debug!(server = name, %error, "could not listen for tool-list changes");
                    return;
                }
            };
            while let Ok(Some(notification)) = subscription.next().await {
                if !matches!(
                    notification,
                    ServerNotification::ToolListChangedNotification(_)
                ) {
                    continue;
                }
                let Some(inner) = client.upgrade() else {
                    return;
                };
                if let Err(error) = (McpClient { inner }).refresh().await {
                    tracing::warn!(%error, "could not re-list the tools after tools/list_changed");
                }
            }
        });
        Some(tokio_util::task::AbortOnDropHandle::new(listening))
    }

    /// The live connection's peer, reconnecting (after a bounded backoff) if the last one died.
    async fn peer(self: &Arc<Self>) -> Result<Peer<RoleClient>, McpClientError> {
        self.peer_and_flag().await.map(|(peer, _)| peer)
    }

    async fn peer_and_flag(
        self: &Arc<Self>,
    ) -> Result<(Peer<RoleClient>, Arc<AtomicBool>), McpClientError> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref()
            && connection.alive.load(Ordering::SeqCst)
            && !connection.service.is_transport_closed()
        {
            return Ok((
                connection.service.peer().clone(),
                Arc::clone(&connection.alive),
            ));
        }
        // A dead connection is dropped here, which ends its process.
        slot.take();
        let failures = *self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if failures > 0 {
            // 100 ms, 200 ms, 400 ms … at most 5 s between attempts after failures in a row.
            let delay =
                Duration::from_millis(100u64 << failures.min(6)).min(Duration::from_secs(5));
            tokio::time::sleep(delay).await;
        }
        match self.open().await {
            Ok(connection) => {
                *self.failures.lock().unwrap_or_else(|p| p.into_inner()) = 0;
                let peer = connection.service.peer().clone();
                let alive = Arc::clone(&connection.alive);
                *slot = Some(connection);
                Ok((peer, alive))
            }
            Err(error) => {
                *self.failures.lock().unwrap_or_else(|p| p.into_inner()) += 1;
                Err(error)
            }
        }
    }

    /// The last listing's tools, if the server said they are still fresh.
    fn fresh_listing(&self) -> Option<Vec<Tool>> {
        let listing = self.listing.lock().unwrap_or_else(|p| p.into_inner());
        let listing = listing.as_ref()?;
        let fresh = listing.fresh_until? > Instant::now();
        fresh.then(|| listing.tools.clone())
    }

    /// Every page of the server's `tools/list`, within the limits: each page answered in time, at most
    /// so many pages and tools, no schema nested too deep. Kept as the listing, fresh for the shortest
    /// `ttlMs` of its pages.
    async fn list_all(&self, peer: &Peer<RoleClient>) -> Result<Vec<Tool>, McpClientError> {
        let asked = Instant::now();
        let (tools, ttl) = self.list_pages(peer).await?;
        let fresh_until = (ttl > 0).then(|| asked + Duration::from_millis(ttl).min(MAX_LIST_TTL));
        *self.listing.lock().unwrap_or_else(|p| p.into_inner()) = Some(Listing {
            tools: tools.clone(),
            fresh_until,
        });
        Ok(tools)
    }

    /// Every page of the server's `tools/list` (see [`list_all`](Self::list_all)), with the shortest
    /// `ttlMs` of the pages (a page without one counts as 0).
    async fn list_pages(
        &self,
        peer: &Peer<RoleClient>,
    ) -> Result<(Vec<Tool>, u64), McpClientError> {
        let Limits {
            list_timeout,
            max_pages,
            max_tools,
            max_schema_depth,
            ..
        } = self.limits;
        let limit = |limit: &'static str, detail: String| McpClientError::Limit {
            server: self.name.clone(),
            limit,
            detail,
        };
        let mut tools = Vec::new();
        let mut ttl = u64::MAX;
        let mut cursor = None;
        for page in 1.. {
            if page > max_pages {
                return Err(limit(
                    "max_pages",
                    format!(
                        "its `tools/list` still had a `nextCursor` after {max_pages} pages; raise the \
                         limit with `McpClientBuilder::max_pages` if it really lists that many"
                    ),
                ));
            }
            let mut tries = Tries::default();
            let answer = loop {
                let generation = self.generation();
                let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(
                    PaginatedRequestParams::default().with_cursor(cursor.clone()),
                ));
                // rmcp's own time limit, which also tells the server the request was cancelled.
                let answer = match peer
                    .send_request_with_option(
                        request,
                        PeerRequestOptions::with_timeout(list_timeout),
                    )
                    .await
                {
                    Ok(handle) => handle.await_response().await,
                    Err(error) => Err(error),
                };
                match answer.as_ref().err().and_then(ServiceError::auth_challenge) {
                    Some(challenge) => {
                        self.get_through(challenge, generation, &mut tries).await?;
                    }
                    None => break answer,
                }
            };
            let listed = match answer {
                Ok(ServerResult::ListToolsResult(listed)) => listed,
                Ok(other) => {
                    return Err(self.request_error(
                        "tools/list",
                        format!(
                            "the answer is not a tool list: {}",
                            serde_json::to_string(&other).unwrap_or_default()
                        ),
                    ));
                }
                Err(ServiceError::Timeout { .. }) => {
                    return Err(limit(
                        "list_timeout",
                        format!(
                            "it did not answer page {page} of `tools/list` within {list_timeout:?} (an \
                             answer that is not JSON or nests deeper than 128 levels counts as none); \
                             raise the limit with `McpClientBuilder::list_timeout` if it is only slow"
                        ),
                    ));
                }
                Err(error) => return Err(self.request_error("tools/list", error)),
            };
            if tools.len() + listed.tools.len() > max_tools {
                return Err(limit(
                    "max_tools",
                    format!(
                        "it lists more than {max_tools} tools; raise the limit with \
                         `McpClientBuilder::max_tools` if an agent should see them all"
                    ),
                ));
            }
            for tool in &listed.tools {
                let mut schemas = std::iter::once(&tool.input_schema).chain(&tool.output_schema);
                if schemas.any(|schema| nests_deeper(schema, max_schema_depth)) {
                    return Err(limit(
                        "max_schema_depth",
                        format!(
                            "the schema of its tool `{}` nests deeper than {max_schema_depth} levels; \
                             raise the limit with `McpClientBuilder::max_schema_depth` if the schema \
                             is meant to",
                            tool.name
                        ),
                    ));
                }
            }
            tools.extend(listed.tools);
            ttl = ttl.min(listed.ttl_ms.unwrap_or(0));
            match listed.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Ok((tools, ttl))
    }

    fn request_error(&self, request: &str, error: impl std::fmt::Display) -> McpClientError {
        McpClientError::Request {
            server: self.name.clone(),
            request: request.to_owned(),
            detail: error.to_string(),
        }
    }

    /// The group of this server's tools, for a provider's tool search: named after the server, described
    /// by its instructions (their first 300 characters) when it gave some.
    fn namespace(&self, instructions: Option<&str>) -> ToolNamespace {
        let mut description = format!("The tools of the MCP server `{}`.", self.name);
        if let Some(instructions) = instructions.map(str::trim).filter(|text| !text.is_empty()) {
            description.push(' ');
            description.extend(instructions.chars().take(300));
        }
        ToolNamespace::new(&self.name, description)
    }

    /// The tool that forwards calls of `tool` to this server.
    fn agent_tool(
        self: &Arc<Self>,
        tool: &Tool,
        namespace: &ToolNamespace,
    ) -> Result<AgentTool, McpClientError> {
        let listed = serde_json::to_value(tool).unwrap_or_default();
        let remote = tool.name.to_string();
        let name = format!("{}{}", self.prefix, remote);
        let description = tool
            .description
            .as_deref()
            .filter(|text| !text.trim().is_empty())
            .map(str::to_owned)
            .unwrap_or_else(|| format!("The `{remote}` tool of MCP server `{}`.", self.name));
        let schema = Value::Object((*tool.input_schema).clone());
        // A `null` for a property the server does not require means "not given", as SEP-2243 reads it
        // ("null or not provided") and as OpenAI strict mode writes every optional property: it is taken
        // out before the check, so the call goes out without it instead of being refused for a type the
        // server never asked for.
        let optional = schema.clone();
        let mut builder = AgentTool::builder(name)
            .description(description)
            .input_schema(schema)
            .prepare_arguments(move |args| Dialect::Mcp.normalize_arguments(&optional, args))
            .namespace(namespace.clone())
            .parallel()
            .annotations(annotations(&listed["annotations"]));
        if let Some(title) = tool.title.as_deref().filter(|title| !title.is_empty()) {
            builder = builder.label(title);
        }
        if let Some(output) = &tool.output_schema {
            builder = builder.output_schema(Value::Object((**output).clone()));
        }
        let client = Arc::downgrade(self);
        builder = builder.handler(move |ctx: ToolContext, args: Value| {
            let client = client.clone();
            let remote = remote.clone();
            async move {
                match client.upgrade() {
                    Some(client) => client.call(&remote, ctx, args).await,
                    None => AgentToolResult::error(format!(
                        "the MCP client for tool `{remote}` was closed; connect it again"
                    )),
                }
            }
        });
        builder.build().map_err(|error| McpClientError::Tool {
            server: self.name.clone(),
            detail: error.to_string(),
        })
    }

    /// One call of `remote` on the server: progress, cancellation, time limit and failures as the module
    /// docs say.
    async fn call(self: Arc<Self>, remote: &str, ctx: ToolContext, args: Value) -> AgentToolResult {
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return AgentToolResult::error(format!(
                    "tool `{remote}` takes a JSON object of arguments, not {other}"
                ));
            }
        };
        // A listing past the time the server said it is fresh is renewed first, so the next request
        // to the model sees what the server offers now.
        if self.take_stale_listing() {
            let client = McpClient {
                inner: Arc::clone(&self),
            };
            if let Err(error) = client.refresh().await {
                tracing::warn!(%error, "could not list the tools again after their `ttlMs`");
            }
        }
        let _waits = self.ask_through_calls.then(|| self.waits(&ctx));
        // A call refused for authorization is retried once it has been obtained (once per call).
        let mut tries = Tries::default();
        loop {
            let generation = self.generation();
            let challenge = match self.call_once(remote, &ctx, arguments.clone()).await {
                Ok(result) => return result,
                Err(challenge) => challenge,
            };
            if let Err(error) = self.get_through(&challenge, generation, &mut tries).await {
                return AgentToolResult::error(format!("{error}; `{remote}` was not run"));
            }
        }
    }

    /// Whether the last listing was fresh for a time the server gave, which is over; if so it is marked
    /// as being listed again, so one caller lists it.
    fn take_stale_listing(&self) -> bool {
        let mut listing = self.listing.lock().unwrap_or_else(|p| p.into_inner());
        let Some(listing) = listing.as_mut() else {
            return false;
        };
        match listing.fresh_until {
            Some(until) if Instant::now() >= until => {
                listing.fresh_until = None;
                true
            }
            _ => false,
        }
    }

    /// Counts `ctx`'s call among those waiting for the server until the returned guard drops.
    fn waits(self: &Arc<Self>, ctx: &ToolContext) -> Waits {
        let number = self.calls.fetch_add(1, Ordering::Relaxed);
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(WaitingCall {
                number,
                ctx: ctx.clone(),
                ended: CancellationToken::new(),
            });
        Waits {
            client: Arc::clone(self),
            number,
        }
    }

    /// The context of the one call waiting for the server, with its end; none when no call or several
    /// wait, as a question of an earlier revision's server cannot say which call it is for.
    fn only_waiting_call(&self) -> Option<(ToolContext, CancellationToken)> {
        match self
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_slice()
        {
            [call] => Some((call.ctx.clone(), call.ended.clone())),
            _ => None,
        }
    }

    /// One try of a call: its result, or the challenge of a server that refused it (401, 403).
    async fn call_once(
        self: &Arc<Self>,
        remote: &str,
        ctx: &ToolContext,
        arguments: Option<serde_json::Map<String, Value>>,
    ) -> Result<AgentToolResult, String> {
        let server = &self.name;
        let (peer, alive) = match self.peer_and_flag().await {
            Ok(connected) => connected,
            Err(error) => {
                return Ok(AgentToolResult::error(format!(
                    "{error}; `{remote}` was not run"
                )));
            }
        };
        let mut params = CallToolRequestParams::new(remote.to_owned());
        params.arguments = arguments;
        // The call's trace goes on in the server: the context of the span this runs in (the pipeline's
        // `execute_tool`), in `_meta` as the protocol's 2026-07-28 revision carries it.
        #[cfg(feature = "otel")]
        if let Some((parent, state)) = crate::otel::traceparent(&tracing::Span::current()) {
            let mut meta = rmcp::model::RequestMetaObject::new();
            meta.0.set_traceparent(parent);
            if let Some(state) = state {
                meta.0.set_tracestate(state);
            }
            params.meta = Some(meta);
        }
        // The call's time limit covers every round, the person's answers included.
        let limit = tokio::time::sleep(self.call_timeout);
        tokio::pin!(limit);
        let mut rounds = 0;
        loop {
            let answer = match self
                .call_round(remote, ctx, &peer, &alive, params.clone(), limit.as_mut())
                .await?
            {
                Round::Done(result) => return Ok(result),
                Round::Ask(asked) => asked,
            };
            // A server of the 2026-07-28 revision asks its questions by answering `input_required`;
            // the call is made again with the answers and the state it gave.
            rounds += 1;
            if rounds > MAX_INPUT_ROUNDS {
                return Ok(AgentToolResult::error(format!(
                    "MCP server `{server}` asked for input more than {MAX_INPUT_ROUNDS} times during \
                     `{remote}`; the call was given up"
                )));
            }
            let answers = tokio::select! {
                biased;
                () = ctx.cancelled() => return Ok(AgentToolResult::error(format!(
                    "the call of `{remote}` on MCP server `{server}` was cancelled"
                ))),
                () = &mut limit => return Ok(AgentToolResult::error(format!(
                    "MCP server `{server}` did not answer `{remote}` within {:?}; the call was cancelled",
                    self.call_timeout
                ))),
                answers = self.answer_inputs(ctx, answer.input_requests.unwrap_or_default()) => answers,
            };
            match answers {
                Ok(answers) => params.input_responses = Some(answers),
                Err(refusal) => {
                    return Ok(AgentToolResult::error(format!(
                        "MCP server `{server}` asked for input during `{remote}` that this client cannot \
                     give: {refusal}; the call was given up"
                    )));
                }
            }
            params.request_state = answer.request_state;
        }
    }

    /// One round of a call: the request, its progress, cancellation and time limit, and the server's
    /// answer — the result, or questions to answer before the call can go on.
    async fn call_round(
        self: &Arc<Self>,
        remote: &str,
        ctx: &ToolContext,
        peer: &Peer<RoleClient>,
        alive: &AtomicBool,
        params: CallToolRequestParams,
        mut limit: std::pin::Pin<&mut tokio::time::Sleep>,
    ) -> Result<Round, String> {
        let server = &self.name;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(error) => {
                if let Some(challenge) = error.auth_challenge() {
                    return Err(challenge.to_owned());
                }
                alive.store(false, Ordering::SeqCst);
                return Ok(Round::Done(AgentToolResult::error(format!(
                    "MCP server `{server}` is not reachable ({error}); `{remote}` was not run, and the \
                     server is started again on the next call"
                ))));
            }
        };
        let (progress, mut updates) = mpsc::unbounded_channel();
        let route = Route::open(&self.routes, handle.progress_token.clone(), progress);
        let mut abandoned = Abandoned {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        let response = handle.await_response();
        tokio::pin!(response);
        let outcome = loop {
            tokio::select! {
                biased;
                () = ctx.cancelled() => break Err(format!("the call of `{remote}` on MCP server `{server}` was cancelled")),
                () = &mut limit => break Err(format!(
                    "MCP server `{server}` did not answer `{remote}` within {:?}; the call was cancelled",
                    self.call_timeout
                )),
                Some(update) = updates.recv() => ctx.update(AgentToolResult::text(progress_text(&update))),
                answer = &mut response => break Ok(answer),
            }
        };
        drop(route);
        Ok(Round::Done(match outcome {
            // The server answered: nothing to cancel.
            Ok(Ok(ServerResult::CallToolResult(result))) => {
                abandoned.id = None;
                from_mcp(result)
            }
            Ok(Ok(ServerResult::InputRequiredResult(asked))) => {
                abandoned.id = None;
                return Ok(Round::Ask(asked));
            }
            Ok(Ok(other)) => {
                abandoned.id = None;
                AgentToolResult::error(format!(
                    "MCP server `{server}` answered `{remote}` with something other than a tool result: {}",
                    serde_json::to_string(&other).unwrap_or_default()
                ))
            }
            Ok(Err(error)) => {
                abandoned.id = None;
                // Refused for authorization: the connection is fine, the caller gets through and
                // retries.
                if let Some(challenge) = error.auth_challenge() {
                    return Err(challenge.to_owned());
                }
                // The server answered with an error: the connection is fine.
                if let ServiceError::McpError(refusal) = &error {
                    return Ok(Round::Done(AgentToolResult::error(format!(
                        "MCP server `{server}` refused `{remote}` (error {}): {}",
                        refusal.code.0, refusal.message
                    ))));
                }
                alive.store(false, Ordering::SeqCst);
                AgentToolResult::error(format!(
                    "MCP server `{server}` failed during `{remote}` ({error}); the server is started \
                     again on the next call"
                ))
            }
            // Cancelled or out of time: `abandoned` tells the server on drop.
            Err(reason) => AgentToolResult::error(reason),
        }))
    }

    /// The answers to a server's questions (elicitations and sampling requests), each from the handler
    /// the application gave; `Err` names a question this client cannot answer.
    async fn answer_inputs(
        &self,
        ctx: &ToolContext,
        asked: InputRequests,
    ) -> Result<InputResponses, String> {
        let mut answers = InputResponses::new();
        for (key, request) in asked {
            let through_call = self.ask_through_calls.then_some(ctx);
            let answer = match request {
                InputRequest::Elicitation(request) => match (&self.elicitation, through_call) {
                    (None, Some(ctx)) => elicit_through(ctx, request.params).await,
                    _ => {
                        answer_elicitation(self.elicitation.as_ref(), &self.name, request.params)
                            .await
                    }
                }
                .and_then(|answer| serde_json::to_value(answer).map_err(internal)),
                InputRequest::CreateMessage(request) => match (&self.sampling, through_call) {
                    (None, Some(ctx)) => sample_through(ctx, request.params).await,
                    _ => answer_sampling(self.sampling.as_ref(), &self.name, request.params).await,
                }
                .and_then(|answer| serde_json::to_value(answer).map_err(internal)),
                _ => Err(ErrorData::invalid_params(
                    "this client offers no roots",
                    None,
                )),
            };
            match answer {
                Ok(answer) => answers.insert(key, answer),
                Err(error) => return Err(format!("`{key}`: {}", error.message)),
            };
        }
        Ok(answers)
    }
}

/// The message and the form's schema of a form elicitation; this client answers no other kind.
fn form_of(request: ElicitRequestParams) -> Result<(String, Value), ErrorData> {
    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema,
        ..
    } = request
    else {
        return Err(ErrorData::invalid_params(
            "this client answers form elicitations only",
            None,
        ));
    };
    let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
    Ok((message, schema))
}

/// A server's question asked as the waiting call's own ([`McpClientBuilder::ask_through_calls`]); the
/// answer as MCP's elicitation result.
async fn elicit_through(
    ctx: &ToolContext,
    request: ElicitRequestParams,
) -> Result<ElicitResult, ErrorData> {
    let (message, schema) = form_of(request)?;
    let answer = match ctx.elicit_with_schema(message, schema.clone()).await {
        Ok(answer) => answer,
        // Nobody to ask where the call runs: declined, as a client without a handler does.
        Err(error) => {
            tracing::debug!(%error, "a server's question could not be asked through the call");
            ElicitationAnswer::Decline
        }
    };
    Ok(elicit_result(answer, &schema))
}

/// A server's sampling request made as the waiting call's own ([`McpClientBuilder::ask_through_calls`]).
#[allow(deprecated)]
async fn sample_through(
    ctx: &ToolContext,
    params: CreateMessageRequestParams,
) -> Result<CreateMessageResult, ErrorData> {
    // The call's context names who asks (its store).
    let request = sampling_of(String::new(), params);
    match ctx.sample(request).await {
        Ok(answer) => message_result(answer),
        Err(error) => Err(ErrorData::new(ErrorCode(-1), error.to_string(), None)),
    }
}

/// The messages of a sampling request, as text (content that is not text as its JSON).
#[allow(deprecated)]
fn sampled_messages(params: &CreateMessageRequestParams) -> Vec<SampledMessage> {
    params
        .messages
        .iter()
        .map(|message| {
            let blocks = match &message.content {
                SamplingContent::Single(block) => std::slice::from_ref(block),
                SamplingContent::Multiple(blocks) => blocks.as_slice(),
            };
            let text = blocks
                .iter()
                .map(|block| match block {
                    SamplingMessageContentBlock::Text(text) => text.text.clone(),
                    other => serde_json::to_string(other).unwrap_or_default(),
                })
                .collect::<Vec<_>>()
                .join("\n");
            let role = match message.role {
                Role::Assistant => "assistant",
                _ => "user",
            };
            SampledMessage::new(role, text)
        })
        .collect()
}

/// How one round of a call ended.
enum Round {
    Done(AgentToolResult),
    /// The server asks questions first (2026-07-28's `input_required`).
    Ask(InputRequiredResult),
}

/// The most rounds of questions one call goes through, as rmcp's and the official SDKs' clients allow.
const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

fn internal(error: serde_json::Error) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

/// The answer of `handler` (none: declined) to a server's question, asked by a request of the server's
/// or in a call's `input_required` answer.
async fn answer_elicitation(
    handler: Option<&Arc<dyn ElicitationHandler>>,
    server: &str,
    request: ElicitRequestParams,
) -> Result<ElicitResult, ErrorData> {
    let Some(handler) = handler else {
        return Ok(ElicitResult::new(ElicitationAction::Decline));
    };
    let (message, schema) = form_of(request)?;
    let question = Elicitation {
        server: server.to_owned(),
        message,
        schema: schema.clone(),
    };
    Ok(elicit_result(handler.elicit(question).await, &schema))
}

/// The elicitation result of `answer` to the form `schema`: an accepted answer's fields with the
/// schema's defaults filled in where it leaves them out (SEP-1034).
fn elicit_result(answer: ElicitationAnswer, schema: &Value) -> ElicitResult {
    match answer {
        ElicitationAnswer::Accept(content) => ElicitResult::new(ElicitationAction::Accept)
            .with_content(Value::Object(with_defaults(content, schema))),
        ElicitationAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
        _ => ElicitResult::new(ElicitationAction::Cancel),
    }
}

/// The answer of `handler` to a server's sampling request (none: refused as not offered).
#[allow(deprecated)]
async fn answer_sampling(
    handler: Option<&Arc<dyn SamplingHandler>>,
    server: &str,
    params: CreateMessageRequestParams,
) -> Result<CreateMessageResult, ErrorData> {
    let Some(handler) = handler else {
        return Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "this client does not offer sampling",
            None,
        ));
    };
    message_result(handler.sample(sampling_of(server.to_owned(), params)).await)
}

/// A server's sampling request, as the [`Sampling`] a handler or a call answers, from `server`.
#[allow(deprecated)]
fn sampling_of(server: String, params: CreateMessageRequestParams) -> Sampling {
    Sampling {
        server,
        messages: sampled_messages(&params),
        system_prompt: params.system_prompt,
        max_tokens: params.max_tokens,
    }
}

/// The `sampling/createMessage` result of `answer`: the completion, or the refusal as an error.
#[allow(deprecated)]
fn message_result(answer: SamplingAnswer) -> Result<CreateMessageResult, ErrorData> {
    match answer {
        SamplingAnswer::Text { text, model } => Ok(CreateMessageResult::new(
            SamplingMessage::new(Role::Assistant, SamplingMessageContentBlock::text(text)),
            model,
        )
        .with_stop_reason(CreateMessageResult::STOP_REASON_END_TURN)),
        // -1: the user rejected the request, as the spec's example has it.
        SamplingAnswer::Refuse(reason) => Err(ErrorData::new(ErrorCode(-1), reason, None)),
    }
}

/// A call's progress route, removed when the call ends.
struct Route {
    routes: Routes,
    token: ProgressToken,
}

impl Route {
    fn open(
        routes: &Routes,
        token: ProgressToken,
        sender: mpsc::UnboundedSender<ProgressNotificationParam>,
    ) -> Route {
        routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.clone(), sender);
        Route {
            routes: Arc::clone(routes),
            token,
        }
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.token);
    }
}

/// Sends `notifications/cancelled` for a request whose answer nobody waits for any more (the call was
/// cancelled, ran out of time, or its future was dropped).
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        let notification = CancelledNotification::new(CancelledNotificationParam::new(
            Some(id),
            Some("the caller cancelled the tool call".into()),
        ));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.send_notification(notification.into()).await;
            });
        }
    }
}

/// Whether `schema` nests objects and arrays deeper than `levels` (the schema itself is level 1), found
/// without recursion.
fn nests_deeper(schema: &serde_json::Map<String, Value>, levels: usize) -> bool {
    if levels == 0 {
        return true;
    }
    let mut stack: Vec<(&Value, usize)> = schema.values().map(|value| (value, 2)).collect();
    while let Some((value, depth)) = stack.pop() {
        let is_container = matches!(value, Value::Object(_) | Value::Array(_));
        if is_container && depth > levels {
            return true;
        }
        match value {
            Value::Object(map) => stack.extend(map.values().map(|child| (child, depth + 1))),
            Value::Array(items) => stack.extend(items.iter().map(|child| (child, depth + 1))),
            _ => {}
        }
    }
    false
}

fn progress_text(update: &ProgressNotificationParam) -> String {
    match (&update.message, update.total) {
        (Some(message), _) => message.clone(),
        (None, Some(total)) => format!("{}/{}", update.progress, total),
        (None, None) => update.progress.to_string(),
    }
}

fn annotations(listed: &Value) -> ToolAnnotations {
    let hint = |key: &str| listed.get(key).and_then(Value::as_bool);
    ToolAnnotations {
        read_only: hint("readOnlyHint"),
        destructive: hint("destructiveHint"),
        idempotent: hint("idempotentHint"),
        open_world: hint("openWorldHint"),
    }
}

/// A tool result from the server's.
fn from_mcp(result: CallToolResult) -> AgentToolResult {
    let mut content: Vec<Content> = result
        .content
        .into_iter()
        .map(|block| match block {
            ContentBlock::Text(text) => Content::text(text.text),
            ContentBlock::Image(image) => Content::image(image.data, image.mime_type),
            ContentBlock::Audio(audio) => Content::audio(audio.data, audio.mime_type),
            ContentBlock::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => Content::ResourceText {
                    resource: Box::new(ResourceInfo {
                        mime_type,
                        ..ResourceInfo::new(uri)
                    }),
                    text,
                },
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => Content::ResourceBlob {
                    resource: Box::new(ResourceInfo {
                        mime_type,
                        ..ResourceInfo::new(uri)
                    }),
                    blob,
                },
                other => Content::text(serde_json::to_string(&other).unwrap_or_default()),
            },
            ContentBlock::ResourceLink(link) => Content::ResourceLink {
                resource: Box::new(ResourceInfo {
                    name: Some(link.name),
                    description: link.description,
                    mime_type: link.mime_type,
                    ..ResourceInfo::new(link.uri)
                }),
            },
            other => Content::text(serde_json::to_string(&other).unwrap_or_default()),
        })
        .collect();
    if content.is_empty()
        && let Some(structured) = &result.structured_content
    {
        content.push(Content::text(structured.to_string()));
    }
    let mut answer = AgentToolResult::with_content(content);
    answer.is_error = result.is_error.unwrap_or(false);
    match result.structured_content {
        Some(structured) => answer.with_structured_content(structured),
        None => answer,
    }
}

impl std::fmt::Debug for McpClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClientBuilder").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient").finish_non_exhaustive()
    }
}
