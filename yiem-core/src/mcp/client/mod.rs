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

mod builder;
mod calls;
mod connection;
mod context;
mod listing;
mod pins;
mod skills;
mod tasks;

pub use self::pins::{DriftHandler, DriftKind, DriftPolicy, ToolDrift, ToolPins};
pub use self::skills::{LoadedSkill, MAX_SKILL_BYTES};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, FormElicitationCapability, Implementation,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, ListToolsRequest,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    ServerNotification, ServerResult, SubscriptionFilter, Tool,
};
// Logging and sampling are deprecated by SEP-2577 (the 2026-07-28 revision), but servers of the
// earlier revisions use them.
#[allow(deprecated)]
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ErrorCode, LoggingLevel,
    LoggingMessageNotificationParam, SamplingCapability,
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

use super::error::McpClientError;

#[cfg(feature = "mcp-oauth")]
use super::oauth::{Authorizer, Tries};
use crate::ask::elicit::{Elicitation, ElicitationAnswer, ElicitationHandler};
use crate::ask::sample::SamplingHandler;
use crate::dialect::Dialect;
use crate::result::AgentToolResult;
use crate::store::registry::ToolStore;
use crate::tool::context::ToolContext;
use crate::tool::definition::{AgentTool, ToolAnnotations, ToolNamespace};

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
    pins: Option<ToolPins>,
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
    /// The pins a listing is checked against, if the client keeps any.
    pins: Option<ToolPins>,
    /// The calls waiting for the server: a question of an earlier revision's server, which is not tied
    /// to a call, is the call's own when exactly one waits ([`McpClientBuilder::ask_through_calls`]).
    waiting: Mutex<Vec<WaitingCall>>,
    /// Numbers the waiting calls.
    calls: AtomicU64,
    /// Woken by each `notifications/tasks`: the calls following tasks read theirs again.
    task_changes: tokio::sync::Notify,
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
            pins: None,
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
            pins: None,
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
        let mut left_out = Vec::new();
        let listed = match &self.inner.pins {
            None => listed,
            Some(pins) => {
                let (taken, drifted) =
                    pins.check(&self.inner.name, listed)
                        .await
                        .map_err(|error| McpClientError::Pins {
                            server: self.inner.name.clone(),
                            detail: error.to_string(),
                        })?;
                left_out.extend(drifted.iter().map(|(name, reason)| LeftOutTool {
                    name: cut(name, 64),
                    reason: cut(reason, 500),
                }));
                taken
            }
        };
        let mut tools = Vec::with_capacity(listed.len());
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
        let names = self.add_all(store, tools)?;
        self.inner
            .lock_stores()
            .push((store.clone(), names.clone()));
        Ok(names)
    }

    /// Adds `tools` of the server to `store`, all or nothing (on any error none is added), deferred if
    /// the client defers its tools; returns their names.
    fn add_all(
        &self,
        store: &ToolStore,
        tools: Vec<AgentTool>,
    ) -> Result<Vec<String>, McpClientError> {
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

/// Why a handshake did not complete.
enum Handshake {
    Failed(McpClientError),
    /// The server answered 401 or 403 with this `WWW-Authenticate` challenge.
    Refused(String),
}

/// How one round of a call ended.
enum Round {
    Done(AgentToolResult),
    /// The server asks questions first (2026-07-28's `input_required`).
    Ask(InputRequiredResult),
}

/// The most rounds of questions one call goes through, as rmcp's and the official SDKs' clients allow.
const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// A call's progress route, removed when the call ends.
struct Route {
    routes: Routes,
    token: ProgressToken,
}

/// Sends `notifications/cancelled` for a request whose answer nobody waits for any more (the call was
/// cancelled, ran out of time, or its future was dropped).
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
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
