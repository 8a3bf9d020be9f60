//! The MCP server over a store: [`McpServer`] and its settings, serving on stdio or any byte stream,
//! and one `tools/call` from the approval gate to the bounded result. What a client sees is in the
//! `mcp` module's docs.

mod asker;
mod context;
mod handler;
#[cfg(feature = "mcp-http")]
pub(super) mod http;
pub(super) mod lines;
mod listing;
#[cfg(feature = "mcp-skills")]
mod skills;
mod state;
mod tasks;

use crate::ask::sample::{Sampling, SamplingAnswer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestMethod, CallToolRequestParams, CallToolResponse, ClientCapabilities,
    ConstString, CustomRequest, CustomResult, ElicitRequest, ElicitResult, ErrorCode,
    Implementation, InputRequest, InputRequests, InputRequiredResult, ListToolsRequestMethod,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ServerCapabilities, ServerConfig, ServerNotification, SubscriptionFilter, Tool,
};
// MCP logging and sampling are deprecated by the 2026-07-28 revision (SEP-2577) only; the revisions
// this server speaks have them.
#[allow(deprecated)]
use rmcp::model::{CreateMessageRequest, LoggingMessageNotificationParam, SetLevelRequestParams};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, Peer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::approval::{ApprovalPolicy, Decision};
use crate::ask::elicit::{Asker, ElicitError, Elicitation, ElicitationAnswer, LogLevel};
use crate::ask::round::Given;
use crate::call::{ToolCall, ToolResultMessage};
use crate::content::Content;
use crate::decision::PlannedCall;
use crate::dialect::Dialect;
use crate::exec::executor::ToolExecutor;
use crate::exec::pipeline;
use crate::result::AgentToolResult;
use crate::store::registry::{ToolList, ToolStore};
use crate::telemetry;
use crate::tool::definition::AgentTool;

use self::asker::{ClientAsker, Forward, Forwarding};
use self::listing::Listing;
pub use self::tasks::{
    DEFAULT_MAX_TASKS, DEFAULT_TASK_TTL, MemoryTaskStore, StoredTask, TaskRequest, TaskStore,
    TaskStoreError,
};
use super::context::ContextStore;
use super::convert::call_tool_result;

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

/// The most tools one `tools/list` response carries unless [`McpServer::page_size`] says otherwise.
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
/// calls through a [`ToolExecutor`]. See the [module docs](crate::mcp) for what a client sees.
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
    /// The resources the client subscribed to (`resources/subscribe`), per connection.
    subscribed: Arc<context::Subscribed>,
    /// This connection's id, when it is one (stdio, a byte stream): the owner of its tasks.
    connection: Option<Arc<str>>,
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
    /// How long a 2026-07-28 client may keep a list or a read (`ttlMs`); none: 0.
    list_ttl: Option<std::time::Duration>,
    /// Whether the server declares `tools.listChanged`: over stdio it sends the notification, over HTTP
    /// on 2026-07-28 clients' `subscriptions/listen`.
    list_changed: bool,
    /// Which calls wait for the client's approval: the tools' own rule, less the operator's grants.
    approval: ApprovalPolicy,
    /// Why the client cannot be asked over this transport, if it cannot (the stateless HTTP server).
    cannot_ask: Option<&'static str>,
    /// The resources and prompts served beside the tools, if any.
    context: Option<ContextStore>,
    /// The Agent Skills served beside the tools, if any (SEP-2640).
    #[cfg(feature = "mcp-skills")]
    skills: Option<Arc<rmcp::handler::server::skill_catalog::SkillCatalog>>,
    /// The tasks' store and their runs in this process.
    tasks: Arc<tasks::Tasks>,
    /// The key of the `requestState` of `input_required` answers.
    state_key: state::StateKey,
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
                context: None,
                #[cfg(feature = "mcp-skills")]
                skills: None,
                tasks: Arc::default(),
                state_key: state::StateKey::random(),
            }),
            log_level: Arc::new(Mutex::new(DEFAULT_LOG_LEVEL)),
            subscribed: Arc::default(),
            connection: None,
        }
    }

    /// Lets calls of these tools run without asking the client, although the tools need approval
    /// ([`AgentTool::needs_approval`]). Without it, such a call is asked about (see the
    /// [module docs](crate::mcp#approval)), or refused where the client cannot be asked.
    ///
    /// ```
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("files")).allowed_tools(["write"]);
    /// # let _ = server;
    /// ```
    pub fn allowed_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
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
    /// let server = McpServer::new(ToolStore::new("files")).all_tools_allowed();
    /// # let _ = server;
    /// ```
    pub fn all_tools_allowed(mut self) -> Self {
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
    ///     .executor(ToolExecutor::new().with_hooks(hooks));
    /// # let _ = server;
    /// ```
    pub fn executor(mut self, executor: ToolExecutor) -> Self {
        self.config_mut().executor = executor;
        self
    }

    /// The name and version the server reports to clients in `initialize` (default: the store's name and
    /// this crate's version).
    ///
    /// ```
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("x")).server_info("weather", "2.1.0");
    /// # let _ = server;
    /// ```
    pub fn server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.config_mut().info = Implementation::new(name, version);
        self
    }

    /// Instructions for the client's model about how to use the tools, sent in `initialize`.
    ///
    /// ```
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("x"))
    ///     .instructions("Call `forecast` before answering questions about the weather.");
    /// # let _ = server;
    /// ```
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.config_mut().instructions = Some(instructions.into());
        self
    }

    /// The most tools one `tools/list` response carries (default [`DEFAULT_PAGE_SIZE`], at least 1);
    /// a longer list comes in pages, in the store's order, each with a `nextCursor` for the next.
    ///
    /// ```
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("x")).page_size(100);
    /// # let _ = server;
    /// ```
    pub fn page_size(mut self, tools: usize) -> Self {
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
    /// let server = McpServer::new(ToolStore::new("x")).max_result_bytes(1 << 20);
    /// # let _ = server;
    /// ```
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.config_mut().max_result_bytes = bytes;
        self
    }

    /// How long a client of the 2026-07-28 revision may keep a `tools/list` answer (and, with a
    /// [`context`](Self::context), the resources', templates' and prompts' lists and resource reads)
    /// before it asks again (`ttlMs`, sent with `cacheScope: public`; without it, 0: ask again each
    /// time). A client that listens for changes
    /// (`subscriptions/listen`) hears of them at once either way; this is for those that do not.
    ///
    /// ```
    /// use std::time::Duration;
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("x")).list_ttl(Duration::from_secs(60));
    /// # let _ = server;
    /// ```
    pub fn list_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.config_mut().list_ttl = Some(ttl);
        self
    }

    /// Serves the resources, resource templates and prompts of `store` beside the tools, with the
    /// completions of their arguments: the server then declares `resources` (with `subscribe` and
    /// `listChanged`), `prompts` (with `listChanged`) and `completions`. See the
    /// [MCP chapter](crate::guide::mcp#resources-prompts-and-completions).
    ///
    /// ```
    /// use yiem_core::mcp::{ContextStore, McpServer, register_all_prompts, register_all_resources};
    /// use yiem_core::store::ToolStore;
    ///
    /// let context = ContextStore::new("docs");
    /// register_all_resources(&context).unwrap();
    /// register_all_prompts(&context).unwrap();
    /// let server = McpServer::new(ToolStore::new("docs")).context(context);
    /// # let _ = server;
    /// ```
    pub fn context(mut self, store: ContextStore) -> Self {
        self.config_mut().context = Some(store);
        self
    }

    /// The key this server signs the `requestState` of its `input_required` answers with (HMAC-SHA256;
    /// default: a random key of its own). Servers that share a key accept one another's state: give
    /// the same key to every instance behind one address, so that a client's next round may reach
    /// another. A state that was changed, or signed with another key, is refused (`-32602`).
    ///
    /// ```
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let key = [7u8; 32]; // read it from where the operator keeps secrets
    /// let server = McpServer::new(ToolStore::new("x")).state_key(key);
    /// # let _ = server;
    /// ```
    pub fn state_key(mut self, key: [u8; 32]) -> Self {
        self.config_mut().state_key = state::StateKey::new(key);
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
    /// McpServer::new(store).server_info("my-tools", "1.0.0").serve_stdio().await
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
        // This connection's own log level and subscriptions.
        self.log_level = Arc::new(Mutex::new(DEFAULT_LOG_LEVEL));
        self.subscribed = Arc::default();
        self.connection = Some(uuid::Uuid::new_v4().to_string().into());
        // rmcp reads only what it can decode; the guard answers the rest (see `lines`).
        let guarded = lines::guard(reader, writer);
        // Watched from before the handshake, so a change while it runs is not missed.
        let mut changes = self.config.store.changes();
        let context_changes = self.config.context.as_ref().map(ContextStore::changes);
        self.config_mut().list_changed = true;
        let running = ServiceExt::serve(self, (guarded.to_rmcp, guarded.from_rmcp))
            .await
            .map_err(|error| McpServeError::Handshake(Box::new(error)))?;
        let peer = running.peer().clone();
        let context_peer = peer.clone();
        let notifying = tokio::spawn(async move {
            // Changes that come together (a batch of registrations) are one notification when the
            // client is slower than the store; the client re-lists the whole store anyway.
            let tools = async {
                while changes.changed().await.is_ok() {
                    changes.mark_unchanged();
                    if peer.notify_tool_list_changed().await.is_err() {
                        break; // the connection is gone
                    }
                }
            };
            let context = async {
                if let Some(changes) = context_changes {
                    context::notify_list_changes(changes, &context_peer).await;
                }
            };
            tokio::join!(tools, context);
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
            subscribed: Arc::default(),
            connection: None,
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
    /// from the start (see [`Rounds`](asker::Rounds)).
    async fn call(
        &self,
        tool: &AgentTool,
        arguments: Value,
        answers: std::collections::BTreeMap<String, Given<String, Value>>,
        context: &RequestContext<RoleServer>,
    ) -> Outcome<ToolResultMessage> {
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
            let outcome = self
                .in_round(rounds.as_deref(), "tools/call", tool.name(), work)
                .await;
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

    /// Runs `work` (a request's, `method` of `name`) in its round, if it has one: its output, or, once
    /// it stops at questions without answers (dropping it cancels what it runs), the questions for the
    /// client, the capability it needed, or the answer refused.
    async fn in_round<T>(
        &self,
        rounds: Option<&asker::Rounds>,
        method: &str,
        name: &str,
        work: impl std::future::Future<Output = T>,
    ) -> Outcome<T> {
        let Some(rounds) = rounds else {
            return Outcome::Done(work.await);
        };
        tokio::select! {
            biased;
            () = rounds.round.stop().cancelled() => {
                if let Some(capability) = rounds.missing() {
                    Outcome::Missing(capability)
                } else if let Some(why) = rounds.round.refused() {
                    Outcome::Refused(why)
                } else {
                    let (questions, state) = rounds.questions(&self.config.state_key, method, name);
                    Outcome::Ask { questions, state }
                }
            },
            done = work => Outcome::Done(done),
        }
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

/// How a request that may ask (`tools/call`, `prompts/get`) ends: with its result, or with questions
/// the client must answer first (the 2026-07-28 revision's `input_required`).
enum Outcome<T> {
    Done(T),
    /// The questions without an answer, and the signed state the client's next request echoes (the
    /// answers so far, since it sends only the new ones).
    Ask {
        questions: InputRequests,
        state: String,
    },
    /// The request needs to ask the client by a capability (`elicitation`, `sampling`) it did not
    /// declare: the 2026-07-28 revision's `-32021` error.
    Missing(&'static str),
    /// An answer the client gave does not fit its question: `-32602`, saying why.
    Refused(String),
}

impl<T> Outcome<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Outcome<U> {
        match self {
            Outcome::Done(done) => Outcome::Done(f(done)),
            Outcome::Ask { questions, state } => Outcome::Ask { questions, state },
            Outcome::Missing(capability) => Outcome::Missing(capability),
            Outcome::Refused(why) => Outcome::Refused(why),
        }
    }

    /// The response of a request of `name` that ended so: its result, or the `input_required` answer,
    /// or the error.
    fn response<R: From<T> + From<InputRequiredResult>>(self, name: &str) -> Result<R, ErrorData> {
        match self {
            Outcome::Done(done) => Ok(done.into()),
            Outcome::Ask { questions, state } => {
                Ok(InputRequiredResult::new(Some(questions), Some(state)).into())
            }
            Outcome::Missing(capability) => Err(missing_capability(name, capability)),
            Outcome::Refused(why) => Err(refused(&why)),
        }
    }
}

/// The `-32602` error of a request whose answer (`why`) does not fit its question.
fn refused(why: &str) -> ErrorData {
    ErrorData::invalid_params(format!("{why}; answer the question again as asked"), None)
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
             asking (`yiem mcp --allow {tool}`, `McpServer::allowed_tools`)"
        ),
        Some(serde_json::json!({"requiredCapabilities": required})),
    )
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
    // The person's answer is a decision like any other: the one gate turns it into the call's plan,
    // and a denial into the words every surface gives the model.
    let decision = match asker.elicit(question).await {
        Ok(ElicitationAnswer::Accept(answer))
            if answer.get("approve") == Some(&Value::Bool(true)) =>
        {
            Decision::Approve
        }
        Ok(_) => Decision::deny(""),
        Err(ElicitError::CannotAsk(why)) => {
            return Err(format!(
                "`{tool}` needs a person's approval before it runs, and nobody can be asked: {why}; it \
             did not run. Tell the user; the server's operator can let it run without asking \
             (`yiem mcp --allow {tool}`, or `McpServer::allowed_tools`)"
            ));
        }
        Err(error) => {
            return Err(format!(
                "`{tool}` needs a person's approval before it runs, and asking failed: {error}; it \
                 did not run"
            ));
        }
    };
    match crate::approval::planned(call.clone(), Some(&decision)) {
        PlannedCall::Run { .. } => Ok(()),
        PlannedCall::Refuse { reason, .. } => Err(reason),
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
             `McpServer::max_result_bytes`); it was not sent. Ask for less (a shorter clip, a \
             smaller page)"
        ));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::context::ToolContext;

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
}
