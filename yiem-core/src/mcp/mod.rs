//! Serving a [`ToolStore`] over the Model Context Protocol (MCP), so any MCP client (Claude Desktop, Cursor,
//! IDEs) can call the tools. Needs the `mcp` feature.
//!
//! This module owns [`McpServer`], an rmcp [`ServerHandler`] written over a store, and [`serve_stdio`], the
//! shortest way to run one. A binary serves its own `#[tool]`s in three lines:
//!
//! ```no_run
//! use yiem_core::store::{ToolStore, register_all_tools};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let store = ToolStore::new("my-tools");
//!     register_all_tools(&store)?;
//!     yiem_core::mcp::serve_stdio(store).await?;
//!     Ok(())
//! }
//! ```
//!
//! # What the client sees
//!
//! - `tools/list`: every tool of the store, in the store's order, as [`Dialect::Mcp`] describes it
//!   (`name`, `title` = the label, `description`, `inputSchema`, `outputSchema` for tools that return
//!   [`Json<T>`](crate::tool::Json), `annotations`). The list is read at each request, so tools registered while
//!   the server runs show up.
//!   A store of more than [`DEFAULT_PAGE_SIZE`] tools is listed in pages ([`McpServer::with_page_size`]):
//!   each response but the last has a `nextCursor`, and the pages resume after the last tool sent, so a
//!   client that pages through a changing store sees every remaining tool once, in order.
//! - `notifications/tools/list_changed`: the server declares `tools.listChanged` and sends the notification
//!   whenever the store's tools change ([`ToolStore::changes`]), so a client re-lists: over stdio
//!   ([`McpServer::serve`]) on the connection, and to a client of the 2026-07-28 revision on its
//!   `subscriptions/listen` stream (stdio or HTTP). A client of an earlier revision of the HTTP server
//!   (`McpHttpServer`) has no standing stream to receive it on, and re-lists when it needs to.
//! - `tools/call`: runs through a [`ToolExecutor`] (the pipeline an agent uses, hooks included), so an MCP
//!   call and an agent call behave the same. Bad arguments, a blocking hook, an `Err`, a panic or a timeout
//!   come back as a result with `isError: true` and the text the model would see; a tool the store does not
//!   have is a JSON-RPC invalid-params error (`-32602`). Text and image content map to MCP text and image
//!   content; structured output becomes `structuredContent` beside its JSON text block.
//! - Progress: when the request carries a `progressToken`, each [`ToolContext::update`](crate::tool::ToolContext::update)
//!   of the tool becomes a `notifications/progress` with a progress count that goes up by one per update and
//!   the partial result's text as the message. All of them are sent before the call's result.
//! - Cancellation: `notifications/cancelled` cancels the call's token (the tool sees
//!   [`ToolContext::cancelled`](crate::tool::ToolContext::cancelled)); no result is sent for a cancelled call.
//! - Sequential tools run alone: calls arrive concurrently, so a tool marked `sequential` (the default)
//!   waits until every running call has finished and holds back new ones while it runs, as it would in an
//!   agent's batch; `parallel` tools run concurrently with each other.
//!
//! - Logging: the server declares `logging`; what a tool logs with
//!   [`ToolContext::log`](crate::tool::ToolContext::log) becomes a `notifications/message` (logger: the tool's
//!   name) when its level is at or above the one the client set with `logging/setLevel` (`info` until it
//!   sets one), sent before the call's result.
//! - Questions: a tool's [`ToolContext::elicit`](crate::tool::ToolContext::elicit) reaches the client when it
//!   declared the `elicitation` capability (form mode); otherwise the tool gets
//!   [`ElicitError::CannotAsk`](crate::ask::ElicitError) saying why. How depends on the client's revision:
//!   - **before 2026-07-28**: an `elicitation/create` request, on a connection that can carry its
//!     answer back — stdio, or HTTP with sessions (`McpHttpServer::with_sessions`);
//!   - **2026-07-28** (no requests from server to client, on any transport): the call is answered
//!     `input_required` with its unanswered questions (SEP-2322), and the client calls again with the
//!     answers. The call then runs again from the start, its questions answered in the order it asks
//!     them (keys `question-1`, `question-2`, ...), so a tool must ask the same questions in the same
//!     order each time, and what it does before a question is done again on every round. The answers of
//!     earlier rounds travel in the `requestState` the client echoes; that state is the client's own
//!     answers, so a client that forges it grants nothing it could not have answered itself.
//!
//!   Log messages go at or above the level the client set with `logging/setLevel` (before 2026-07-28)
//!   or the level its request carries in `_meta` (2026-07-28; none: no messages).
//!
//! # Approval
//!
//! A tool that needs approval ([`AgentTool::needs_approval`], `#[tool(needs_approval)]`) is listed with
//! `"_meta": {"yiem/needsApproval": true}` beside its annotations, and each of its calls first asks the
//! client's user, on the same path as a tool's own question: an `elicitation/create` whose message names
//! the tool and shows its arguments, with a form of one required boolean, `approve`. Only an `accept`
//! with `approve: true` runs the call; `approve: false`, `decline` and `cancel` answer it with an error
//! result (`isError: true`) telling the model the user declined and not to retry as it was. A client
//! that did not declare `elicitation` cannot be asked, and neither can a client of a revision before
//! 2026-07-28 of the HTTP server without sessions (its transport cannot carry the answer back): their
//! calls are refused with an error result that says so, and that the server's operator can let the
//! tool run without asking —
//! [`McpServer::with_allowed_tools`], [`McpServer::with_all_tools_allowed`] (`yiem mcp --allow TOOL`,
//! `--allow-all`). The server decides through the same approval gate as an agent, by the tool's own
//! flag ([`ApprovalPolicy::default`]) less those grants; an agent's own policy is not the server's.
//!
//! Nothing but protocol is written to stdout: yiem and rmcp log through `tracing`, and a subscriber that
//! prints must write to stderr (`tracing_subscriber::fmt().with_writer(std::io::stderr)`).

#[cfg(feature = "mcp-client")]
mod client;
#[cfg(feature = "mcp-client")]
mod client_error;
#[cfg(feature = "mcp-client")]
mod elicitation;
#[cfg(feature = "mcp-http")]
mod http;
mod lines;
#[cfg(feature = "mcp-oauth")]
pub mod oauth;

use crate::sample::{Sampling, SamplingAnswer};

#[cfg(feature = "mcp-client")]
pub use client::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_LIST_TIMEOUT, DEFAULT_MAX_PAGES,
    DEFAULT_MAX_SCHEMA_DEPTH, DEFAULT_MAX_TOOLS, LeftOutTool, McpClient, McpClientBuilder,
    McpClientError,
};
#[cfg(feature = "mcp-http")]
pub use http::{
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PEER, McpHttpServer,
};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestMethod, CallToolRequestParams, CallToolResponse, CallToolResult,
    ClientCapabilities, ConstString, ContentBlock, CustomRequest, CustomResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ErrorCode, Implementation, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, ListToolsRequestMethod, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion, Resource, ResourceContents,
    ServerCapabilities, ServerConfig, ServerNotification, SubscriptionFilter, Tool,
};
// MCP logging and sampling are deprecated by the 2026-07-28 revision (SEP-2577) only; the revisions
// this server speaks have them.
#[allow(deprecated)]
use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, LoggingMessageNotificationParam,
    SetLevelRequestParams,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, Peer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::approval::ApprovalPolicy;
use crate::call::{ToolCall, ToolResultMessage};
use crate::content::Content;
use crate::definition::AgentTool;
use crate::dialect::Dialect;
use crate::elicit::{Asker, ElicitError, Elicitation, ElicitationAnswer, LogLevel};
use crate::executor::ToolExecutor;
use crate::pipeline;
use crate::registry::{ToolList, ToolStore};
use crate::result::AgentToolResult;
use crate::telemetry;

/// Serves every tool of `store` over MCP on stdin and stdout until the client disconnects.
///
/// Shorthand for [`McpServer::new(store).serve_stdio()`](McpServer::serve_stdio): the server is named
/// after the store, calls run through a fresh [`ToolExecutor`] (no hooks, no time limit).
///
/// ```no_run
/// use yiem_core::store::{ToolStore, register_all_tools};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let store = ToolStore::new("my-tools");
/// register_all_tools(&store)?;
/// yiem_core::mcp::serve_stdio(store).await?;
/// # Ok(())
/// # }
/// ```
pub async fn serve_stdio(store: ToolStore) -> Result<(), McpServeError> {
    McpServer::new(store).serve_stdio().await
}

/// The revisions of MCP an [`McpServer`] speaks, oldest first: the ones its tests speak to it (a client
/// of each initializes and calls a tool; 2026-07-28 by `server/discover`, with the official Python SDK).
pub const PROTOCOL_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The largest tool result an [`McpServer`] sends by default, counted as the bytes of its content's text
/// and data: 16 MiB, the size of the largest message the server reads.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 16 * 1024 * 1024;

/// The most log messages one call sends; the ones after it are counted and said in one last message.
pub const MAX_LOG_MESSAGES_PER_CALL: usize = 1000;

/// The most bytes of log message data one call sends (its messages' data as JSON); past it, as past
/// [`MAX_LOG_MESSAGES_PER_CALL`].
pub const MAX_LOG_BYTES_PER_CALL: usize = 1024 * 1024;

/// The most tools one `tools/list` response carries unless [`McpServer::with_page_size`] says otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 500;

/// The lowest level of log messages sent to a client that has not sent `logging/setLevel`.
const DEFAULT_LOG_LEVEL: LogLevel = LogLevel::Info;

/// How long calls may still finish, and their responses be written, once the client's input has ended.
const GRACE_AFTER_INPUT_ENDS: std::time::Duration = std::time::Duration::from_millis(300);

/// Why an MCP server stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServeError {
    /// The connection ended, or the client sent something else, before the `initialize` handshake
    /// completed.
    #[error("the MCP handshake did not complete: {0}")]
    Handshake(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The task that runs the connection failed (it panicked or the runtime shut down).
    #[error("the MCP service task failed: {0}")]
    Service(#[source] tokio::task::JoinError),
}

/// An MCP server over a [`ToolStore`]: an rmcp [`ServerHandler`] that lists the store's tools and runs
/// calls through a [`ToolExecutor`]. See the [module docs](self) for what a client sees.
///
/// Serve it on stdio with [`serve_stdio`](Self::serve_stdio), on any byte stream with
/// [`serve`](Self::serve), or hand it to rmcp yourself (`rmcp::ServiceExt::serve`) for other transports.
///
/// ```
/// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
/// use yiem_core::{mcp::McpServer, store::ToolStore, tool::AgentTool};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let ping = AgentTool::builder("ping")
///     .description("Answer pong.")
///     .handler(|_, _| async { "pong" })
///     .build()
///     .unwrap();
/// let store = ToolStore::new("demo");
/// store.register(ping).unwrap();
///
/// // An in-memory pipe stands in for the client's stdin and stdout.
/// let (client, server) = tokio::io::duplex(4096);
/// let (server_read, server_write) = tokio::io::split(server);
/// let running = tokio::spawn(McpServer::new(store).serve(server_read, server_write));
///
/// let (client_read, mut client_write) = tokio::io::split(client);
/// let mut lines = BufReader::new(client_read).lines();
/// for message in [
///     r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"doc","version":"1"}}}"#,
///     r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
///     r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ping","arguments":{}}}"#,
/// ] {
///     client_write.write_all(format!("{message}\n").as_bytes()).await.unwrap();
/// }
/// let initialized: serde_json::Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
/// assert_eq!(initialized["result"]["serverInfo"]["name"], "demo");
/// let called: serde_json::Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
/// assert_eq!(
///     called,
///     serde_json::json!({
///         "jsonrpc": "2.0",
///         "id": 2,
///         "result": {"content": [{"type": "text", "text": "pong"}], "isError": false}
///     })
/// );
///
/// client_write.shutdown().await.unwrap(); // the client hangs up: the server stops
/// running.await.unwrap().unwrap();
/// # });
/// ```
#[derive(Clone)]
pub struct McpServer {
    /// What the server is, shared by its copies: a copy per connection or per request costs a count.
    config: Arc<Config>,
    /// The lowest level of the log messages the client wants (`logging/setLevel`), per connection.
    log_level: Arc<Mutex<LogLevel>>,
}

/// An [`McpServer`]'s settings, fixed once it serves.
#[derive(Clone)]
struct Config {
    store: ToolStore,
    executor: ToolExecutor,
    info: Implementation,
    instructions: Option<String>,
    listing: Arc<Listing>,
    /// Cancelled when a server that owns this handler shuts down: running calls are cancelled.
    shutdown: CancellationToken,
    page_size: usize,
    /// The largest result sent, in bytes of content.
    max_result_bytes: usize,
    /// How long a 2026-07-28 client may keep a `tools/list` answer (`ttlMs`); none: rmcp's 0.
    list_ttl: Option<std::time::Duration>,
    /// Whether the server declares `tools.listChanged`: over stdio it sends the notification, over HTTP
    /// on 2026-07-28 clients' `subscriptions/listen`.
    list_changed: bool,
    /// Which calls wait for the client's approval: the tools' own rule, less the operator's grants.
    approval: ApprovalPolicy,
    /// Why the client cannot be asked over this transport, if it cannot (the stateless HTTP server).
    cannot_ask: Option<&'static str>,
}

impl McpServer {
    /// The settings, for a builder method to change (copied first if a copy of the server shares them).
    fn config_mut(&mut self) -> &mut Config {
        Arc::make_mut(&mut self.config)
    }

    /// A server for `store`, named after it (version: this crate's), running calls through
    /// [`ToolExecutor::new`].
    pub fn new(store: ToolStore) -> Self {
        let info = Implementation::new(store.name(), env!("CARGO_PKG_VERSION"));
        McpServer {
            config: Arc::new(Config {
                store,
                executor: ToolExecutor::new(),
                info,
                instructions: None,
                listing: Arc::default(),
                shutdown: CancellationToken::new(),
                page_size: DEFAULT_PAGE_SIZE,
                max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
                list_ttl: None,
                list_changed: false,
                approval: ApprovalPolicy::default(),
                cannot_ask: None,
            }),
            log_level: Arc::new(Mutex::new(DEFAULT_LOG_LEVEL)),
        }
    }

    /// Lets calls of these tools run without asking the client, although the tools need approval
    /// ([`AgentTool::needs_approval`]). Without it, such a call is asked about (see the
    /// [module docs](self#approval)), or refused where the client cannot be asked.
    ///
    /// ```
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("files")).with_allowed_tools(["write"]);
    /// # let _ = server;
    /// ```
    pub fn with_allowed_tools(
        mut self,
        tools: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let approval = &mut self.config_mut().approval;
        *approval = approval.clone().allowing(tools);
        self
    }

    /// Lets the calls of every tool run without asking the client, as if no tool needed approval: for a
    /// server whose operator has decided for every call (the client side asks, or nobody needs to).
    ///
    /// ```
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("files")).with_all_tools_allowed();
    /// # let _ = server;
    /// ```
    pub fn with_all_tools_allowed(mut self) -> Self {
        self.config_mut().approval = ApprovalPolicy::allow_all();
        self
    }

    /// Runs calls through `executor`: its hooks, default time limit and event bus apply to MCP calls as
    /// they do to an agent's. The server adds one sink to the executor's bus, which turns the updates of
    /// its own calls (call ids `mcp-1`, `mcp-2`, ...) into progress notifications and ignores every other
    /// event.
    ///
    /// ```
    /// use yiem_core::{exec::{Block, ToolExecutor, ToolHooks}, mcp::McpServer, store::ToolStore};
    ///
    /// let hooks = ToolHooks::new().before_tool_call(|ctx| async move {
    ///     (ctx.call.name == "delete_file").then(|| Block::new("deleting files needs a human's approval"))
    /// });
    /// let server = McpServer::new(ToolStore::new("files"))
    ///     .with_executor(ToolExecutor::new().with_hooks(hooks));
    /// # let _ = server;
    /// ```
    pub fn with_executor(mut self, executor: ToolExecutor) -> Self {
        self.config_mut().executor = executor;
        self
    }

    /// The name and version the server reports to clients in `initialize` (default: the store's name and
    /// this crate's version).
    ///
    /// ```
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("x")).with_server_info("weather", "2.1.0");
    /// # let _ = server;
    /// ```
    pub fn with_server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.config_mut().info = Implementation::new(name, version);
        self
    }

    /// Instructions for the client's model about how to use the tools, sent in `initialize`.
    ///
    /// ```
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("x"))
    ///     .with_instructions("Call `forecast` before answering questions about the weather.");
    /// # let _ = server;
    /// ```
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.config_mut().instructions = Some(instructions.into());
        self
    }

    /// The most tools one `tools/list` response carries (default [`DEFAULT_PAGE_SIZE`], at least 1);
    /// a longer list comes in pages, in the store's order, each with a `nextCursor` for the next.
    ///
    /// ```
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("x")).with_page_size(100);
    /// # let _ = server;
    /// ```
    pub fn with_page_size(mut self, tools: usize) -> Self {
        self.config_mut().page_size = tools.max(1);
        self
    }

    /// The largest tool result sent, in bytes of its content's text and data (default
    /// [`DEFAULT_MAX_RESULT_BYTES`]): a larger one — a 50 MB audio clip, say — is not sent; the client gets
    /// an error result that says how large it was and what the limit is.
    ///
    /// ```
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("x")).with_max_result_bytes(1 << 20);
    /// # let _ = server;
    /// ```
    pub fn with_max_result_bytes(mut self, bytes: usize) -> Self {
        self.config_mut().max_result_bytes = bytes;
        self
    }

    /// How long a client of the 2026-07-28 revision may keep a `tools/list` answer before it lists again
    /// (`ttlMs`; without it, 0: list again each time). A client that listens for changes
    /// (`subscriptions/listen`) hears of them at once either way; this is for those that do not.
    ///
    /// ```
    /// use std::time::Duration;
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("x")).with_list_ttl(Duration::from_secs(60));
    /// # let _ = server;
    /// ```
    pub fn with_list_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.config_mut().list_ttl = Some(ttl);
        self
    }

    /// The store whose tools are served.
    pub fn store(&self) -> &ToolStore {
        &self.config.store
    }

    /// Serves on stdin and stdout until the client disconnects (see [`serve`](Self::serve)).
    ///
    /// ```no_run
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// # async fn run(store: ToolStore) -> Result<(), yiem_core::mcp::McpServeError> {
    /// McpServer::new(store).with_server_info("my-tools", "1.0.0").serve_stdio().await
    /// # }
    /// ```
    pub async fn serve_stdio(self) -> Result<(), McpServeError> {
        let (stdin, stdout) = rmcp::transport::stdio_pipes();
        self.serve(stdin, stdout).await
    }

    /// Serves MCP as newline-delimited JSON-RPC, reading requests from `reader` and writing responses to
    /// `writer`, until `reader` ends. Calls still running 300 ms after that are cancelled, so the server
    /// ends promptly when its client goes away. A line rmcp cannot read (not JSON, bad params, over 16 MiB)
    /// gets a JSON-RPC error response. See the example on [`McpServer`].
    pub async fn serve<R, W>(mut self, reader: R, writer: W) -> Result<(), McpServeError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        // This connection's own log level.
        self.log_level = Arc::new(Mutex::new(DEFAULT_LOG_LEVEL));
        // rmcp reads only what it can decode; the guard answers the rest (see `lines`).
        let guarded = lines::guard(reader, writer);
        // Watched from before the handshake, so a change while it runs is not missed.
        let mut changes = self.config.store.changes();
        self.config_mut().list_changed = true;
        let running = ServiceExt::serve(self, (guarded.to_rmcp, guarded.from_rmcp))
            .await
            .map_err(|error| McpServeError::Handshake(Box::new(error)))?;
        let peer = running.peer().clone();
        let notifying = tokio::spawn(async move {
            // Changes that come together (a batch of registrations) are one notification when the
            // client is slower than the store; the client re-lists the whole store anyway.
            while changes.changed().await.is_ok() {
                changes.mark_unchanged();
                if peer.notify_tool_list_changed().await.is_err() {
                    break; // the connection is gone
                }
            }
        });
        // The notifier ends with the connection.
        let _notifying = tokio_util::task::AbortOnDropHandle::new(notifying);
        // When the client's input ends, what is done still reaches it for a moment; calls running after
        // that are cancelled (their tokens, and so their processes), so the server ends promptly.
        let stop = running.cancellation_token();
        let waiting = running.waiting();
        tokio::pin!(waiting);
        let reason = tokio::select! {
            reason = &mut waiting => reason,
            () = guarded.input_ended.cancelled() => {
                match tokio::time::timeout(GRACE_AFTER_INPUT_ENDS, &mut waiting).await {
                    Ok(reason) => reason,
                    Err(_) => {
                        stop.cancel();
                        waiting.await
                    }
                }
            }
        }
        .map_err(McpServeError::Service)?;
        tracing::debug!(?reason, "the MCP connection ended");
        // Every response rmcp wrote reaches the client before the server returns.
        let _ = guarded.done.await;
        Ok(())
    }

    /// A copy for one stateless request: its own log level, so one HTTP client's `logging/setLevel`
    /// never changes what another's calls send.
    #[cfg(feature = "mcp-http")]
    fn for_request(&self) -> McpServer {
        McpServer {
            config: Arc::clone(&self.config),
            log_level: Arc::new(Mutex::new(DEFAULT_LOG_LEVEL)),
        }
    }

    /// Whether `call` of `tool` must be approved by the client before it runs (the approval gate).
    fn must_ask(&self, call: &ToolCall, tool: &AgentTool) -> bool {
        self.config.approval.check(call, tool).is_some()
    }

    /// Runs one `tools/call` of a tool the store has: asks the client first when the tool needs
    /// approval, then runs it with the client as the call's [`Asker`] (its questions and log messages).
    ///
    /// A client of the 2026-07-28 revision is asked by answering the call with its questions
    /// ([`Outcome::Ask`], `input_required`); it calls again with `answers`, and the call runs again
    /// from the start, its questions answered in the order they are asked.
    async fn call(
        &self,
        tool: &AgentTool,
        arguments: Value,
        answers: InputResponses,
        context: &RequestContext<RoleServer>,
    ) -> Outcome {
        let (asker, forwarding, rounds) = ClientAsker::open(self, context, answers);
        let Forwarding { forwarder, end } = forwarding;
        let call = ToolCall::new(next_call_id(), tool.name(), arguments);
        let asking = self.must_ask(&call, tool);
        let running = async {
            // Made here rather than captured, so that this future holds it once.
            let work = async {
                if asking
                    && let Err(refusal) = self.approve(tool, asker.as_ref(), &call, context).await
                {
                    return ToolResultMessage::new(&call, AgentToolResult::error(refusal));
                }
                self.run(call, context, Arc::clone(&asker)).await
            };
            let outcome = match &rounds {
                None => Outcome::Done(work.await),
                Some(rounds) => tokio::select! {
                    // A question without an answer yet: the call stops (dropping it cancels the tool,
                    // see `run`) and the client gets the questions.
                    biased;
                    () = rounds.unanswered.cancelled() => match rounds.missing() {
                        Some(capability) => Outcome::Missing(capability),
                        None => Outcome::Ask {
                            questions: rounds.questions(),
                            answers: rounds.answers.clone(),
                        },
                    },
                    message = work => Outcome::Done(message),
                },
            };
            // The forwarder sends what the call logged and stops: every log message of the call
            // reaches the client before its result (one logged later, by a task the tool left behind,
            // is dropped).
            let _ = end.send(Forward::End);
            outcome
        };
        // The call's log messages go to the client while it runs, from this task.
        let (outcome, ()) = futures::join!(running, forwarder);
        outcome
    }

    /// Asks the client whether `call` may run ([`approve`]), giving up when the client cancels the call,
    /// the server shuts down, or no answer comes within the call's time limit (the tool's, else the
    /// executor's default): a call that was waiting for its approval then does not run, whatever the
    /// answer.
    async fn approve(
        &self,
        tool: &AgentTool,
        asker: &dyn Asker,
        call: &ToolCall,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), String> {
        let limit = crate::approval::answer_limit(tool, self.config.executor.default_timeout());
        let tool = &call.name;
        let out_of_time = async {
            match limit {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        // Cancellation wins over an answer that arrives with it.
        tokio::select! {
            biased;
            () = context.ct.cancelled() => Err(format!(
                "the call of `{tool}` was cancelled while it waited for the user's approval; it did not run"
            )),
            () = self.config.shutdown.cancelled() => Err(format!(
                "the MCP server is shutting down: `{tool}` was waiting for the user's approval and did not \
                 run; call it again when the server is back"
            )),
            () = out_of_time => Err(format!(
                "nobody answered whether `{tool}` may run within {:?}, the call's time limit; it did \
                 not run",
                limit.unwrap_or_default()
            )),
            decided = approve(asker, &self.config.info.name, call) => decided,
        }
    }

    /// Runs `call` through the executor, with progress, cancellation and shutdown.
    async fn run(
        &self,
        call: ToolCall,
        context: &RequestContext<RoleServer>,
        asker: Arc<dyn Asker>,
    ) -> ToolResultMessage {
        // The call stops when the client cancels it (or goes away) and when the server shuts down.
        let cancel = context.ct.child_token();
        // Requests run concurrently; the executor keeps a sequential tool from overlapping other calls.
        // Boxed once here, so the request's future that rmcp and tokio move around stays small instead of
        // embedding the whole call's.
        let mut running = Box::pin(self.config.executor.execute_asking(
            &self.config.store,
            vec![call],
            &cancel,
            asker,
        ));
        // The call first: one that is done is answered as it ended, and a quick one never puts a
        // waiter on the shutdown token.
        let (batch, shut_down) = tokio::select! {
            biased;
            batch = &mut running => (batch, false),
            () = self.config.shutdown.cancelled() => {
                cancel.cancel();
                (running.await, true)
            }
        };
        let mut message = batch
            .messages
            .into_iter()
            .next()
            .expect("the executor answers every call");
        if shut_down && message.result.is_error {
            // The cancelled result says why it was cancelled, for the client to know to retry elsewhere.
            let reason = message.result.text_content();
            message.result = AgentToolResult::error(format!(
                "the MCP server is shutting down: {reason}; call it again when the server is back"
            ));
        }
        message
    }
}

/// How a `tools/call` ends: with the call's result, or with questions the client must answer before
/// the call can run (the 2026-07-28 revision's `input_required`).
enum Outcome {
    Done(ToolResultMessage),
    /// The questions without an answer, and the answers given so far (which go back to the client as
    /// the `requestState` its next call echoes, since it sends only the new answers).
    Ask {
        questions: InputRequests,
        answers: InputResponses,
    },
    /// The call needs to ask the client by a capability (`elicitation`, `sampling`) its request did not
    /// declare: the 2026-07-28 revision's `-32021` error.
    Missing(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::ToolContext;

    #[test]
    fn tools_list_leaves_out_the_code_only_tools() {
        let tool = |name: &str, code_only: bool| {
            let builder = AgentTool::builder(name).description("A tool.");
            let builder = if code_only {
                builder.code_only()
            } else {
                builder
            };
            builder
                .handler(|_ctx: ToolContext, _args: Value| async { "done" })
                .build()
                .unwrap()
        };
        let store = ToolStore::new("listed");
        store.register(tool("direct", false)).unwrap();
        store.register(tool("from_code", true)).unwrap();
        let names: Vec<String> = Listing::default()
            .tools(&store)
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect();
        assert_eq!(names, ["direct"]);
    }

    #[test]
    fn a_calls_answers_are_those_of_its_state_and_its_new_ones_and_a_foreign_state_is_refused() {
        let state = format!(r#"{STATE_PREFIX}{{"question-1": {{"action": "accept"}}}}"#);
        let new = InputResponses::from([(
            "question-2".to_owned(),
            serde_json::json!({"action": "decline"}),
        )]);
        let answers = answers_of(Some(&state), Some(new)).unwrap();
        assert_eq!(answers.len(), 2);
        assert_eq!(answers["question-1"]["action"], "accept");
        for foreign in ["", "{}", "yiem-answers:[1]", "other:{}"] {
            let refused = answers_of(Some(foreign), None).unwrap_err();
            assert_eq!(
                refused.message,
                "`requestState` is not one this server gave: call the tool again without it",
                "{foreign}"
            );
        }
        assert!(answers_of(None, None).unwrap().is_empty());
    }
}

/// The `-32021` error of a call of `tool` that needs the client's `capability`.
fn missing_capability(tool: &str, capability: &str) -> ErrorData {
    let what = match capability {
        "sampling" => "its model for a completion",
        _ => "its user a question",
    };
    let mut required = serde_json::Map::new();
    required.insert(capability.to_owned(), serde_json::json!({}));
    ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "`{tool}` needs to ask the client {what}, and this request did not declare the \
             `{capability}` capability in `io.modelcontextprotocol/clientCapabilities`; it did not \
             run. Declare the capability, or the server's operator can let the tool run without \
             asking (`yiem mcp --allow {tool}`, `McpServer::with_allowed_tools`)"
        ),
        Some(serde_json::json!({"requiredCapabilities": required})),
    )
}

/// What starts the `requestState` of this server's `input_required` answers: the answers given so far
/// as a JSON object.
const STATE_PREFIX: &str = "yiem-answers:";

/// Every answer a call carries: those of earlier rounds (its `requestState`) and the new ones.
///
/// The state is the client's own earlier answers, echoed: a client that forges it grants nothing it
/// could not have answered itself, so it is not sealed.
fn answers_of(
    state: Option<&str>,
    new: Option<InputResponses>,
) -> Result<InputResponses, ErrorData> {
    let mut answers = match state {
        None => InputResponses::new(),
        Some(state) => state
            .strip_prefix(STATE_PREFIX)
            .and_then(|answers| serde_json::from_str::<InputResponses>(answers).ok())
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    "`requestState` is not one this server gave: call the tool again without it",
                    None,
                )
            })?,
    };
    answers.extend(new.unwrap_or_default());
    Ok(answers)
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("store", &self.config.store)
            .field("server", &self.config.info.name)
            .finish_non_exhaustive()
    }
}

/// Call ids of MCP calls: unique in the process, so calls of several connections sharing one executor
/// never mix up their progress.
fn next_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("mcp-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

impl ServerHandler for McpServer {
    #[allow(deprecated)] // logging: see the `use` above
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools();
        let capabilities = match self.config.list_changed {
            true => capabilities.enable_tool_list_changed().build(),
            false => capabilities.build(),
        };
        let config = ServerConfig::new(capabilities).with_server_info(self.config.info.clone());
        match &self.config.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    /// The revisions in [`PROTOCOL_VERSIONS`], said deliberately rather than whatever rmcp knows.
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        static VERSIONS: std::sync::LazyLock<Vec<ProtocolVersion>> =
            std::sync::LazyLock::new(|| {
                PROTOCOL_VERSIONS
                    .iter()
                    .map(|version| {
                        serde_json::from_value(Value::String((*version).to_owned()))
                            .expect("a protocol version is a string")
                    })
                    .collect()
            });
        std::borrow::Cow::Borrowed(VERSIONS.as_slice())
    }

    /// `subscriptions/listen` (2026-07-28): the tool list's changes, the only ones this server has.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::default();
        accepted.tools_list_changed = requested.tools_list_changed;
        Some(accepted)
    }

    /// Sends `notifications/tools/list_changed` on the subscription whenever the store's tools change,
    /// until the client ends it or the server shuts down.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.config.store.changes();
        changes.mark_unchanged();
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                () = self.config.shutdown.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(()); // the store is gone
                    }
                    changes.mark_unchanged();
                    let notification = ServerNotification::ToolListChangedNotification(
                        rmcp::model::ToolListChangedNotification::default(),
                    );
                    if subscription.sink().send(notification).await.is_err() {
                        return Ok(()); // the subscription ended
                    }
                }
            }
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.config.listing.tools(&self.config.store);
        let cursor = request
            .as_ref()
            .and_then(|request| request.cursor.as_deref());
        let start = match cursor {
            None => 0,
            Some(cursor) => resume_at(&tools, cursor)?,
        };
        let end = start.saturating_add(self.config.page_size).min(tools.len());
        let next_cursor = (end < tools.len()).then(|| format!("{end}:{}", tools[end - 1].name));
        let mut page = ListToolsResult::with_all_items(tools[start..end].to_vec());
        page.next_cursor = next_cursor;
        if let Some(ttl) = self.config.list_ttl {
            page.ttl_ms = Some(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        }
        Ok(page)
    }

    /// `logging/setLevel`: the calls of this connection send log messages at `level` and above. Over
    /// the stateless HTTP server a request is a connection of its own, so the level holds for nothing
    /// after it; calls there send `info` and above.
    #[allow(deprecated)] // logging: see the `use` above
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = serde_json::to_value(request.level)
            .and_then(serde_json::from_value::<LogLevel>)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        *self
            .log_level
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = level;
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.config.store.get(name).as_ref().and_then(mcp_tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self.config.store.get(&request.name) else {
            return Err(ErrorData::invalid_params(
                pipeline::unknown_tool(&self.config.store, &request.name),
                None,
            ));
        };
        // No `arguments` is `null`, which the pipeline reads as `{}`.
        let arguments = request.arguments.map_or(Value::Null, Value::Object);
        let answers = answers_of(request.request_state.as_deref(), request.input_responses)?;
        let span = telemetry::mcp_tool_call(tool.name(), &context.id);
        // A client that sent its trace context (`_meta.traceparent`) gets this call in its trace.
        #[cfg(feature = "otel")]
        if let Some(parent) = context.meta.0.get_traceparent() {
            crate::otel::set_remote_parent(&span, parent, context.meta.0.get_tracestate());
        }
        let calling = self.call(&tool, arguments, answers, &context);
        let outcome = if span.is_disabled() {
            calling.await
        } else {
            calling.instrument(span).await
        };
        Ok(match outcome {
            Outcome::Done(message) => {
                call_tool_result(bounded(message, self.config.max_result_bytes)).into()
            }
            Outcome::Missing(capability) => {
                return Err(missing_capability(tool.name(), capability));
            }
            Outcome::Ask { questions, answers } => {
                let state = format!(
                    "{STATE_PREFIX}{}",
                    Value::Object(answers.into_iter().collect())
                );
                InputRequiredResult::new(Some(questions), Some(state)).into()
            }
        })
    }

    /// A request rmcp could not read as any request it knows. For a method the server serves, that is
    /// bad params (`-32602`, with what is wrong); only other methods are not found (`-32601`).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method.as_str();
        let problem = match method {
            CallToolRequestMethod::VALUE => match &request.params {
                None => "`params` with the tool's `name` are required".to_owned(),
                Some(params) => params_problem::<CallToolRequestParams>(params),
            },
            ListToolsRequestMethod::VALUE => match &request.params {
                None => "`params` must be an object".to_owned(),
                Some(params) => params_problem::<PaginatedRequestParams>(params),
            },
            _ => {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    method.to_owned(),
                    None,
                ));
            }
        };
        Err(ErrorData::invalid_params(
            format!("invalid params for `{method}`: {problem}"),
            None,
        ))
    }
}

/// Asks the client whether `call` may run (the same question path as a tool's
/// [`ToolContext::elicit`](crate::tool::ToolContext::elicit)): `Ok` when the person confirmed, else the
/// error text the model gets.
async fn approve(asker: &dyn Asker, server: &str, call: &ToolCall) -> Result<(), String> {
    let tool = &call.name;
    let arguments = serde_json::to_string_pretty(&call.arguments).unwrap_or_default();
    let question = Elicitation::new(
        server,
        format!("Allow the tool `{tool}` to run with these arguments?\n{arguments}"),
        serde_json::json!({
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": format!("Run `{tool}`"),
                    "description": format!("Yes: `{tool}` runs with the arguments shown. No: it does not run."),
                }
            },
            "required": ["approve"]
        }),
    );
    let declined = || {
        format!(
            "the user declined to run `{tool}` with these arguments; it did not run. Do not call it \
             again with the same arguments: ask the user what they want instead"
        )
    };
    match asker.elicit(question).await {
        Ok(ElicitationAnswer::Accept(answer))
            if answer.get("approve") == Some(&Value::Bool(true)) =>
        {
            Ok(())
        }
        Ok(_) => Err(declined()),
        Err(ElicitError::CannotAsk(why)) => Err(format!(
            "`{tool}` needs a person's approval before it runs, and nobody can be asked: {why}; it \
             did not run. Tell the user; the server's operator can let it run without asking \
             (`yiem mcp --allow {tool}`, or `McpServer::with_allowed_tools`)"
        )),
        Err(error) => Err(format!(
            "`{tool}` needs a person's approval before it runs, and asking failed: {error}; it did \
             not run"
        )),
    }
}

/// The client of one call, as the call's [`Asker`]: questions go out as `elicitation/create` requests
/// (or, to a client of the 2026-07-28 revision, as the call's `input_required` answer, see [`Rounds`]),
/// log messages as `notifications/message` (in order, through one forwarder, all sent before the
/// result).
#[allow(deprecated)] // logging: see the `use` above
struct ClientAsker {
    peer: Peer<RoleServer>,
    /// Why nobody can be asked, if nobody can.
    cannot_ask: Option<&'static str>,
    /// Why no model can be asked for a completion, if none can.
    cannot_sample: Option<&'static str>,
    /// Set for a client that is asked by `input_required` rather than by a request.
    rounds: Option<Arc<Rounds>>,
    level: Level,
    /// To the call's forwarder: its log messages and its progress.
    logs: mpsc::UnboundedSender<Forward>,
    /// What the call has logged so far, against its bounds.
    budget: Arc<LogBudget>,
    /// Whether the request asked for progress (it carries a `progressToken`).
    takes_progress: bool,
}

/// The lowest level of log message a call sends.
enum Level {
    /// The connection's, which `logging/setLevel` changes (revisions before 2026-07-28).
    Connection(Arc<Mutex<LogLevel>>),
    /// The request's own (`_meta` `io.modelcontextprotocol/logLevel`, 2026-07-28); none: no messages.
    Request(Option<LogLevel>),
}

/// The questions of one `tools/call` of a client of the 2026-07-28 revision, which has no requests
/// from server to client: the call is answered `input_required` with its questions, and the client
/// calls again with their answers (SEP-2322). The call then runs again from the start, so its
/// questions are keyed by the order in which it asks them (`question-1`, `question-2`, ...): a tool
/// must ask the same questions in the same order each time it runs, and what it does before a question
/// is done again on every round.
struct Rounds {
    /// The answers the client sent with this call, by question key.
    answers: InputResponses,
    /// How many questions the call has asked so far.
    asked: std::sync::atomic::AtomicUsize,
    /// Whether the request declares form elicitation, and sampling.
    forms: bool,
    samples: bool,
    /// The questions the call asked that have no answer yet.
    unanswered_questions: Mutex<InputRequests>,
    /// The capability a question needed that the request did not declare, if one did.
    missing: Mutex<Option<&'static str>>,
    /// Cancelled when the call asks a question that has no answer yet, or that it cannot ask.
    unanswered: CancellationToken,
}

impl Rounds {
    /// The answer to the next question of the call, by its key; a question without one yet is kept for
    /// the client and the call waits for ever (it is stopped, and asks again in the next round).
    async fn ask(&self, question: InputRequest) -> (String, Value) {
        let needs = match &question {
            InputRequest::Elicitation(_) => (!self.forms).then_some("elicitation"),
            InputRequest::CreateMessage(_) => (!self.samples).then_some("sampling"),
            _ => None,
        };
        if let Some(capability) = needs {
            *self
                .missing
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(capability);
            self.unanswered.cancel();
            return std::future::pending().await;
        }
        let number = self.asked.fetch_add(1, Ordering::Relaxed) + 1;
        let key = crate::elicit::question_key(number);
        if let Some(answer) = self.answers.get(&key) {
            return (key, answer.clone());
        }
        self.unanswered_questions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(key, question);
        self.unanswered.cancel();
        std::future::pending().await
    }

    /// The capability the call needed and the request did not declare.
    fn missing(&self) -> Option<&'static str> {
        *self
            .missing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The questions asked without an answer, for the client to answer.
    fn questions(&self) -> InputRequests {
        std::mem::take(
            &mut *self
                .unanswered_questions
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }
}

/// What one call has logged, against [`MAX_LOG_MESSAGES_PER_CALL`] and [`MAX_LOG_BYTES_PER_CALL`]: a tool
/// that logs in a loop cannot flood the client or fill the server's memory.
#[derive(Default)]
struct LogBudget {
    messages: std::sync::atomic::AtomicUsize,
    bytes: std::sync::atomic::AtomicUsize,
    dropped: std::sync::atomic::AtomicUsize,
}

impl LogBudget {
    /// Counts a message of `data`: whether it is within the bounds (else it is counted as dropped).
    fn take(&self, data: &Value) -> bool {
        let size = match data {
            Value::String(text) => text.len(),
            other => other.to_string().len(),
        };
        let messages = self.messages.fetch_add(1, Ordering::Relaxed) + 1;
        let bytes = self.bytes.fetch_add(size, Ordering::Relaxed) + size;
        let within = messages <= MAX_LOG_MESSAGES_PER_CALL && bytes <= MAX_LOG_BYTES_PER_CALL;
        if !within {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        within
    }
}

/// Whether a notification reached the client; one that did not is logged (the client went away), and
/// the call's forwarder stops sending.
fn delivered(outcome: Result<(), rmcp::service::ServiceError>) -> bool {
    match outcome {
        Ok(()) => true,
        Err(error) => {
            tracing::debug!(%error, "could not send a notification to the MCP client");
            false
        }
    }
}

/// The forwarder of one call's log messages, run beside the call in its task.
struct Forwarding {
    /// Sends the call's log messages and progress to the client, in order, until the [`Forward::End`]
    /// sent by `end`.
    forwarder: futures::future::BoxFuture<'static, ()>,
    end: mpsc::UnboundedSender<Forward>,
}

/// What a call's forwarder reads: the call's log messages and updates, then the call's end.
#[allow(deprecated)] // logging: see the `use` above
enum Forward {
    Log(LoggingMessageNotificationParam),
    /// An update of the call, for a request that carries a `progressToken`.
    Progress(Arc<AgentToolResult>),
    /// The call is over: what is logged after this is dropped.
    End,
}

/// Whether `capabilities` include form elicitation (a bare `elicitation: {}` means form, as the
/// specification keeps it compatible).
fn asks_forms(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

const NO_SAMPLING: &str = "the MCP client did not declare the `sampling` capability, so its model cannot be asked over this \
     connection";

const NO_ELICITATION: &str = "the MCP client did not declare the `elicitation` capability (form \
     mode), so no person can be asked over this connection";

impl ClientAsker {
    #[allow(deprecated)] // logging: see the `use` above
    fn open(
        server: &McpServer,
        context: &RequestContext<RoleServer>,
        answers: InputResponses,
    ) -> (Arc<dyn Asker>, Forwarding, Option<Arc<Rounds>>) {
        let (logs, mut receiver) = mpsc::unbounded_channel();
        let budget = Arc::new(LogBudget::default());
        let dropped = Arc::clone(&budget);
        let peer = context.peer.clone();
        let progress_token = context.meta.get_progress_token();
        let takes_progress = progress_token.is_some();
        // Run beside the call, in its task (see `McpServer::call`): a task of its own would cost every
        // call a spawn, and a hop to it and back at the end, though most calls log nothing.
        let forwarder = Box::pin(async move {
            let send = async |message| delivered(peer.notify_logging_message(message).await);
            let mut progress: u32 = 0;
            loop {
                let sent = match receiver.recv().await {
                    Some(Forward::Log(message)) => send(message).await,
                    // Only a request with a token takes progress (see `ClientAsker::takes_progress`).
                    Some(Forward::Progress(partial)) => match &progress_token {
                        Some(token) => {
                            // The count goes up by one per update; the message is the update's text.
                            progress += 1;
                            let mut notification =
                                ProgressNotificationParam::new(token.clone(), f64::from(progress));
                            let text = partial.text_content();
                            if !text.is_empty() {
                                notification = notification.with_message(text);
                            }
                            delivered(peer.notify_progress(notification).await)
                        }
                        None => true,
                    },
                    Some(Forward::End) | None => break,
                };
                if !sent {
                    return;
                }
            }
            let dropped = dropped.dropped.load(Ordering::Relaxed);
            if dropped > 0 {
                let mut note = LoggingMessageNotificationParam::new(
                    rmcp::model::LoggingLevel::Warning,
                    Value::String(format!(
                        "{dropped} more log messages of this call were dropped: a call sends at most \
                         {MAX_LOG_MESSAGES_PER_CALL} messages and {MAX_LOG_BYTES_PER_CALL} bytes of them"
                    )),
                );
                note.logger = Some("yiem".into());
                send(note).await;
            }
        });
        let modern = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let (cannot_ask, cannot_sample, rounds, level) = if modern {
            // No requests to the client: its questions go back as `input_required`, which any
            // transport carries, to a client that says in the request that it answers forms.
            // A question the request's declared capabilities do not allow ends the call with
            // `-32021` (see `Rounds::missing`): the revision forbids relying on undeclared ones.
            let capabilities = context.meta.client_capabilities().unwrap_or_default();
            let rounds = Arc::new(Rounds {
                answers,
                forms: asks_forms(&capabilities),
                samples: capabilities.sampling.is_some(),
                asked: Default::default(),
                unanswered_questions: Mutex::default(),
                missing: Mutex::default(),
                unanswered: CancellationToken::new(),
            });
            let level = context
                .meta
                .log_level()
                .and_then(|level| serde_json::to_value(level).ok())
                .and_then(|level| serde_json::from_value(level).ok());
            (None, None, Some(rounds), Level::Request(level))
        } else {
            // The transport decides first (the stateless HTTP server cannot carry an answer back),
            // then what the client declared when it connected.
            let (cannot_ask, cannot_sample) = match server.config.cannot_ask {
                Some(why) => (Some(why), Some(why)),
                None => {
                    let peer = &context.peer;
                    let forms = peer
                        .supported_elicitation_modes()
                        .contains(&rmcp::service::ElicitationMode::Form);
                    let samples = peer
                        .peer_info()
                        .is_some_and(|client| client.capabilities.sampling.is_some());
                    (
                        (!forms).then_some(NO_ELICITATION),
                        (!samples).then_some(NO_SAMPLING),
                    )
                }
            };
            let level = Level::Connection(Arc::clone(&server.log_level));
            (cannot_ask, cannot_sample, None, level)
        };
        let end = logs.clone();
        let asker = ClientAsker {
            peer: context.peer.clone(),
            cannot_ask,
            cannot_sample,
            rounds: rounds.clone(),
            level,
            logs,
            budget,
            takes_progress,
        };
        (Arc::new(asker), Forwarding { forwarder, end }, rounds)
    }
}

/// The `elicitation/create` parameters of `question` (form mode).
fn elicit_params(question: &Elicitation) -> Result<ElicitRequestParams, ElicitError> {
    serde_json::from_value::<ElicitRequestParams>(serde_json::json!({
        "mode": "form",
        "message": question.message,
        "requestedSchema": question.schema,
    }))
    .map_err(|error| ElicitError::InvalidQuestion(error.to_string()))
}

/// The `sampling/createMessage` parameters of `request`.
#[allow(deprecated)] // sampling: see the `use` above
fn sampling_params(request: &Sampling) -> Result<CreateMessageRequestParams, ElicitError> {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|message| {
            let role = if message.role == "assistant" {
                "assistant"
            } else {
                "user"
            };
            serde_json::json!({"role": role, "content": {"type": "text", "text": message.text}})
        })
        .collect();
    let mut params = serde_json::json!({"messages": messages, "maxTokens": request.max_tokens});
    if let Some(system) = &request.system_prompt {
        params["systemPrompt"] = Value::String(system.clone());
    }
    serde_json::from_value(params).map_err(|error| ElicitError::InvalidQuestion(error.to_string()))
}

/// The completion in a client's `sampling/createMessage` result (its text blocks, and the model), or
/// the refusal in an error it answered with.
fn sampled(what: &str, answer: Value) -> Result<SamplingAnswer, ElicitError> {
    if let Some(message) = answer.get("message").and_then(Value::as_str)
        && answer.get("code").is_some()
    {
        return Ok(SamplingAnswer::Refuse(message.to_owned()));
    }
    let blocks = match answer.get("content") {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(block @ Value::Object(_)) => vec![block.clone()],
        _ => {
            return Err(ElicitError::InvalidAnswer(format!(
                "{what} is not a sampling result (no `content`)"
            )));
        }
    };
    let text: Vec<&str> = blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    let model = answer
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Ok(SamplingAnswer::text(text.join("\n"), model))
}

/// The answer the client gave to a question.
fn answer_of(answer: ElicitResult) -> Result<ElicitationAnswer, ElicitError> {
    Ok(match answer.action {
        ElicitationAction::Accept => match answer.content {
            Some(Value::Object(content)) => ElicitationAnswer::Accept(content),
            None => ElicitationAnswer::Accept(serde_json::Map::new()),
            Some(other) => {
                return Err(ElicitError::InvalidAnswer(format!(
                    "the client answered with {other}, not an object of fields"
                )));
            }
        },
        ElicitationAction::Decline => ElicitationAnswer::Decline,
        _ => ElicitationAnswer::Cancel,
    })
}

impl Asker for ClientAsker {
    fn elicit(
        &self,
        question: Elicitation,
    ) -> futures::future::BoxFuture<'static, Result<ElicitationAnswer, ElicitError>> {
        let peer = self.peer.clone();
        let cannot_ask = self.cannot_ask;
        let rounds = self.rounds.clone();
        Box::pin(async move {
            if let Some(why) = cannot_ask {
                return Err(ElicitError::CannotAsk(why.to_owned()));
            }
            let params = elicit_params(&question)?;
            let Some(rounds) = rounds else {
                let answer = peer
                    .create_elicitation(params)
                    .await
                    .map_err(|error| ElicitError::Failed(error.to_string()))?;
                return answer_of(answer);
            };
            let (key, answer) = rounds
                .ask(InputRequest::Elicitation(ElicitRequest::new(params)))
                .await;
            let answer = serde_json::from_value::<ElicitResult>(answer).map_err(|error| {
                ElicitError::InvalidAnswer(format!(
                    "the client's answer `{key}` is not an elicitation result: {error}"
                ))
            })?;
            answer_of(answer)
        })
    }

    #[allow(deprecated)] // sampling: see the `use` above
    fn sample(
        &self,
        request: Sampling,
    ) -> futures::future::BoxFuture<'static, Result<SamplingAnswer, ElicitError>> {
        let peer = self.peer.clone();
        let cannot_sample = self.cannot_sample;
        let rounds = self.rounds.clone();
        Box::pin(async move {
            if let Some(why) = cannot_sample {
                return Err(ElicitError::CannotSample(why.to_owned()));
            }
            let params = sampling_params(&request)?;
            let Some(rounds) = rounds else {
                return match peer.create_message(params).await {
                    Ok(answer) => sampled(
                        "the client's answer",
                        serde_json::to_value(answer).unwrap_or_default(),
                    ),
                    Err(rmcp::service::ServiceError::McpError(error)) => {
                        Ok(SamplingAnswer::Refuse(error.message.into_owned()))
                    }
                    Err(error) => Err(ElicitError::Failed(error.to_string())),
                };
            };
            let (key, answer) = rounds
                .ask(InputRequest::CreateMessage(CreateMessageRequest::new(
                    params,
                )))
                .await;
            sampled(&format!("the client's answer `{key}`"), answer)
        })
    }

    fn takes_progress(&self) -> bool {
        self.takes_progress
    }

    fn progress(&self, partial: &Arc<AgentToolResult>) {
        // A send fails only once the call is over, when nobody reads its progress any more.
        let _ = self.logs.send(Forward::Progress(Arc::clone(partial)));
    }

    #[allow(deprecated)] // logging: see the `use` above
    fn log(&self, level: LogLevel, logger: &str, data: &Value) {
        let wanted = match &self.level {
            Level::Connection(wanted) => Some(
                *wanted
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()),
            ),
            Level::Request(wanted) => *wanted,
        };
        if wanted.is_none_or(|wanted| level < wanted) {
            return;
        }
        let Ok(level) = serde_json::to_value(level).and_then(serde_json::from_value) else {
            return;
        };
        if !self.budget.take(data) {
            return;
        }
        let mut message = LoggingMessageNotificationParam::new(level, data.clone());
        message.logger = Some(logger.to_owned());
        // A send fails only once the call is over, when nobody reads the log any more.
        let _ = self.logs.send(Forward::Log(message));
    }
}

/// What is wrong with `params` as a `P` (`arguments: [1, 2]`: "invalid type: sequence, expected a map").
fn params_problem<P: serde::de::DeserializeOwned>(params: &Value) -> String {
    match serde_json::from_value::<P>(params.clone()) {
        Err(error) => error.to_string(),
        Ok(_) => "they do not match the method".to_owned(),
    }
}

/// Where the page after `cursor` starts in `tools`. A cursor is `<offset>:<name of the last tool
/// sent>`: the page resumes after that tool even when tools before it were added or removed meanwhile,
/// so a client paging through a changing store sees each remaining tool once, in order.
fn resume_at(tools: &[Tool], cursor: &str) -> Result<usize, ErrorData> {
    let Some((offset, name)) = cursor
        .split_once(':')
        .and_then(|(offset, name)| Some((offset.parse::<usize>().ok()?, name)))
    else {
        return Err(ErrorData::invalid_params(
            format!(
                "`{cursor}` is not a tools/list cursor this server gave; list again without one"
            ),
            None,
        ));
    };
    if offset > 0 && tools.get(offset - 1).is_some_and(|tool| tool.name == name) {
        return Ok(offset);
    }
    match tools.iter().position(|tool| tool.name == name) {
        Some(at) => Ok(at + 1),
        None => Err(ErrorData::invalid_params(
            format!(
                "the tools/list cursor `{cursor}` continues after the tool `{name}`, which the server \
                 no longer has; list again without a cursor"
            ),
            None,
        )),
    }
}

/// The `tools/list` entries of the store's current tool list, made once per list: a request while the
/// store is unchanged clones the entries instead of describing every tool again.
#[derive(Default)]
struct Listing {
    cached: Mutex<Option<(ToolList, Vec<Tool>)>>,
}

impl Listing {
    fn tools(&self, store: &ToolStore) -> Vec<Tool> {
        let list = store.tool_list();
        let mut cached = self
            .cached
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match &*cached {
            Some((seen, tools)) if seen.is_same(&list) => tools.clone(),
            _ => {
                // A code-only tool is one no client can call: it runs only from a program.
                let tools: Vec<Tool> = list
                    .iter()
                    .filter(|tool| !tool.is_code_only())
                    .filter_map(mcp_tool)
                    .collect();
                *cached = Some((list, tools.clone()));
                tools
            }
        }
    }
}

/// The `tools/list` entry of `tool`: its MCP definition. A tool MCP cannot describe is left out (and
/// logged), so one bad tool does not hide the others.
fn mcp_tool(tool: &AgentTool) -> Option<Tool> {
    let described = tool.definition(Dialect::Mcp).map_err(|e| e.to_string());
    match described.and_then(|definition| {
        serde_json::from_value::<Tool>(definition.clone()).map_err(|e| e.to_string())
    }) {
        Ok(entry) => Some(entry),
        Err(error) => {
            tracing::error!(tool = tool.name(), %error, "left a tool out of tools/list");
            None
        }
    }
}

/// `message`, or in place of a result larger than `limit` bytes, an error result that says so.
fn bounded(mut message: ToolResultMessage, limit: usize) -> ToolResultMessage {
    let size: usize = message
        .result
        .content
        .iter()
        .map(|block| match block {
            Content::Text { text } => text.len(),
            Content::Image { data, .. } | Content::Audio { data, .. } => data.len(),
            Content::ResourceText { text, .. } => text.len(),
            Content::ResourceBlob { blob, .. } => blob.len(),
            _ => 0,
        })
        .sum();
    if size > limit {
        let tool = &message.tool_name;
        message.result = AgentToolResult::error(format!(
            "the result of `{tool}` is {size} bytes, more than this MCP server sends ({limit} bytes, \
             `McpServer::with_max_result_bytes`); it was not sent. Ask for less (a shorter clip, a \
             smaller page)"
        ));
    }
    message
}

/// The MCP result of a finished call.
fn call_tool_result(message: ToolResultMessage) -> CallToolResult {
    let mut result = message.result;
    let structured = result.take_structured_content();
    let content = result
        .content
        .into_iter()
        .map(|block| match block {
            Content::Text { text } => ContentBlock::text(text),
            Content::Image { data, mime_type } => ContentBlock::image(data, mime_type),
            Content::Audio { data, mime_type } => ContentBlock::audio(data, mime_type),
            Content::ResourceText { resource, text } => {
                ContentBlock::resource(ResourceContents::TextResourceContents {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    text,
                    meta: None,
                })
            }
            Content::ResourceBlob { resource, blob } => {
                ContentBlock::resource(ResourceContents::BlobResourceContents {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    blob,
                    meta: None,
                })
            }
            Content::ResourceLink { resource } => {
                // A link's name is required on the wire: the last part of its URI when none was given.
                let name = resource.name.clone().unwrap_or_else(|| {
                    let last = resource.uri.rsplit('/').next().unwrap_or_default();
                    last.to_owned()
                });
                let mut link = Resource::new(resource.uri, name);
                link.description = resource.description;
                link.mime_type = resource.mime_type;
                ContentBlock::resource_link(link)
            }
        })
        .collect();
    let mut answer = if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    answer.structured_content = structured;
    answer
}
