//! Serving an [`McpServer`] over MCP's streamable HTTP transport: rmcp's [`StreamableHttpService`],
//! stateless or with sessions, on a hyper HTTP/1.1 server, behind the checks a deployed server needs (a bearer token,
//! `Origin` and `Host`, a body size limit, time limits on reading a request, a bound on connections) and
//! a graceful shutdown that answers running calls with their cancelled results.
//!
//! This module owns [`McpHttpServer`]; what a call does once it passes the checks is [`McpServer`]'s.

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use subtle::ConstantTimeEq;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::{McpServer, lines};

/// The largest request body accepted by default: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How long a client has by default to send a request's head (its request line and headers), counted
/// from when the connection opens or the previous response ends.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client has by default to send a request's body once its head has arrived.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The most connections served at once by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// Why a tool cannot ask a client of a revision before 2026-07-28 anything over this server without
/// sessions.
const CANNOT_ASK_OVER_STATELESS_HTTP: &str = "this MCP server speaks stateless streamable HTTP, which \
     cannot carry the answer of a client of a revision before 2026-07-28 back to the call that asked \
     (a client of 2026-07-28 is asked; the server's operator can also turn on sessions: `yiem mcp \
     --http ADDR --sessions`, `McpHttpServer::sessions`)";

/// The most sessions held at once by default (with [`McpHttpServer::sessions`]).
pub const DEFAULT_MAX_SESSIONS: usize = 1024;

/// The most sessions one client address holds at once by default (with
/// [`McpHttpServer::sessions`]; see [`McpHttpServer::max_sessions_per_peer`]).
pub const DEFAULT_MAX_SESSIONS_PER_PEER: usize = 64;

/// How long connections may take to finish once shutdown has begun (running calls are cancelled at its
/// start, so this only bounds writing their last responses).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

/// Serves an [`McpServer`] over MCP's streamable HTTP transport (one endpoint, any path), needs the
/// `mcp-http` feature.
///
/// - **Stateless** by default: no `Mcp-Session-Id`, every request stands alone, so any replica behind a
///   load balancer can answer any request. A call's progress notifications stream back as server-sent
///   events on the response of its own request; a call without them is answered with plain JSON. A
///   client of the 2026-07-28 revision is asked its questions (a tool's approval,
///   [`ToolContext::elicit`](crate::tool::ToolContext::elicit)) by `input_required` answers; one of an earlier
///   revision can be asked only with sessions ([`sessions`](Self::sessions)), and is refused
///   otherwise.
/// - **Bearer token** ([`bearer_token`](Self::bearer_token)): a request without
///   `Authorization: Bearer <token>`, or with another token, gets `401` (compared in constant time).
/// - **`Origin`**: a request whose `Origin` header is not allowed gets `403`, as the MCP specification
///   requires against DNS rebinding. Bound to a loopback address, the server allows `http://localhost`,
///   `http://127.0.0.1` and `http://[::1]` on any port, and `Host` must be one of those hosts; add
///   others with [`allowed_origins`](Self::allowed_origins) and
///   [`allowed_hosts`](Self::allowed_hosts). Bound to any other address, only the origins
///   given are allowed and `Host` is checked only against the hosts given. Requests without `Origin`
///   (non-browser clients) pass.
/// - **Body limit** ([`max_body_bytes`](Self::max_body_bytes), default
///   [`DEFAULT_MAX_BODY_BYTES`]): a larger body gets `413` with a JSON-RPC error (`-32600`) naming the
///   limit, whether it announced its length or not; a body rmcp cannot read gets `400` with the
///   JSON-RPC error stdio gives it (`-32700` for a body that is not JSON, `-32602` or `-32600` for a
///   request that does not decode), unless rmcp refused the request's headers first.
/// - **Time limits on the client** ([`header_read_timeout`](Self::header_read_timeout),
///   default [`DEFAULT_HEADER_READ_TIMEOUT`]; [`body_read_timeout`](Self::body_read_timeout),
///   default [`DEFAULT_BODY_READ_TIMEOUT`]): a connection whose client does not send a request's whole
///   head in time is closed — whether it sends nothing, trickles bytes, or stays idle after a response
///   (hyper counts the wait for the next head from the end of the last response, so this is also the
///   idle limit of a kept-alive connection); a body that does not arrive in time gets `408` with a
///   JSON-RPC error (`-32600`). The time a call takes is the call's (the executor's time limit), not
///   these.
/// - **Connections** ([`max_connections`](Self::max_connections), default
///   [`DEFAULT_MAX_CONNECTIONS`]): past the limit, a new connection is answered `503` with a JSON-RPC
///   error (`-32000`) and `Retry-After: 1`, then closed; while as many connections again are being
///   refused, further ones are closed unanswered.
/// - **Shutdown**: when the `shutdown` future given to [`serve`](Self::serve) completes, the server
///   stops accepting connections and cancels running calls: each answers with its cancelled result, an
///   error that says the server is shutting down. It returns once open connections have finished (at
///   most 5 s later; event streams still open then are ended).
/// - A client that disconnects cancels its running call.
///
/// ```no_run
/// use yiem_core::{mcp::{McpHttpServer, McpServer}, store::{ToolStore, register_all_tools}};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let store = ToolStore::new("my-tools");
/// register_all_tools(&store)?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// # drop(stop);
/// McpHttpServer::new(McpServer::new(store))
///     .bearer_token(std::env::var("MCP_TOKEN")?)
///     .serve(listener, async { stopped.await.unwrap_or(()) }) // `stop.send(())` shuts it down
///     .await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct McpHttpServer {
    server: McpServer,
    token: Option<String>,
    max_body_bytes: usize,
    allowed_origins: Vec<String>,
    allowed_hosts: Vec<String>,
    header_read_timeout: Duration,
    body_read_timeout: Duration,
    max_connections: usize,
    /// The most sessions held at once, when clients of revisions before 2026-07-28 get sessions.
    sessions: Option<usize>,
    /// The most sessions one client address holds at once.
    sessions_per_peer: usize,
}

impl McpHttpServer {
    /// Serves `server`'s tools, with no token, the default body limit and the default `Origin` rules.
    pub fn new(server: McpServer) -> Self {
        McpHttpServer {
            server,
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            sessions: None,
            sessions_per_peer: DEFAULT_MAX_SESSIONS_PER_PEER,
        }
    }

    /// Gives each client of a revision before 2026-07-28 a session (`Mcp-Session-Id`), so that the
    /// server can ask it questions mid-call — a tool's approval and [`ToolContext::elicit`] — and
    /// `logging/setLevel` holds for the session's later calls. At most `max` sessions
    /// ([`DEFAULT_MAX_SESSIONS`] is a sane value) are held at once, and at most
    /// [`DEFAULT_MAX_SESSIONS_PER_PEER`] by one client address
    /// ([`max_sessions_per_peer`](Self::max_sessions_per_peer)): past either, a new
    /// client's `initialize` gets `503`, so one address opening sessions in a loop cannot lock the
    /// others out. A session ends when its client deletes it or after 5 minutes without a request.
    ///
    /// The price: a session lives in this process, so every request of a session must reach the
    /// replica that holds it. Clients of the 2026-07-28 revision have no sessions and are asked
    /// questions either way (the call answers `input_required`).
    ///
    /// [`ToolContext::elicit`]: crate::tool::ToolContext::elicit
    ///
    /// ```
    /// use yiem_core::{mcp::{DEFAULT_MAX_SESSIONS, McpHttpServer, McpServer}, store::ToolStore};
    ///
    /// let http = McpHttpServer::new(McpServer::new(ToolStore::new("x")))
    ///     .sessions(DEFAULT_MAX_SESSIONS);
    /// # let _ = http;
    /// ```
    pub fn sessions(mut self, max: usize) -> Self {
        self.sessions = Some(max.max(1));
        self
    }

    /// The most sessions one client address (the TCP peer's IP) holds at once, with
    /// [`sessions`](Self::sessions) (default: [`DEFAULT_MAX_SESSIONS_PER_PEER`], at least
    /// 1). Behind a reverse proxy every client has the proxy's address: raise it to the total there.
    ///
    /// ```
    /// use yiem_core::{mcp::{DEFAULT_MAX_SESSIONS, McpHttpServer, McpServer}, store::ToolStore};
    ///
    /// let http = McpHttpServer::new(McpServer::new(ToolStore::new("x")))
    ///     .sessions(DEFAULT_MAX_SESSIONS)
    ///     .max_sessions_per_peer(16);
    /// # let _ = http;
    /// ```
    pub fn max_sessions_per_peer(mut self, max: usize) -> Self {
        self.sessions_per_peer = max.max(1);
        self
    }

    /// Requires `Authorization: Bearer <token>` on every request.
    ///
    /// ```
    /// use yiem_core::{mcp::{McpHttpServer, McpServer}, store::ToolStore};
    ///
    /// let http = McpHttpServer::new(McpServer::new(ToolStore::new("x"))).bearer_token("s3cret");
    /// # let _ = http;
    /// ```
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The largest request body accepted, in bytes (default [`DEFAULT_MAX_BODY_BYTES`]).
    ///
    /// ```
    /// use yiem_core::{mcp::{McpHttpServer, McpServer}, store::ToolStore};
    ///
    /// let http = McpHttpServer::new(McpServer::new(ToolStore::new("x"))).max_body_bytes(64 * 1024);
    /// # let _ = http;
    /// ```
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// How long a client has to send a request's head, from when its connection opens or its previous
    /// response ends (default [`DEFAULT_HEADER_READ_TIMEOUT`]); then the connection is closed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use yiem_core::{mcp::{McpHttpServer, McpServer}, store::ToolStore};
    ///
    /// let http = McpHttpServer::new(McpServer::new(ToolStore::new("x")))
    ///     .header_read_timeout(Duration::from_secs(5));
    /// # let _ = http;
    /// ```
    pub fn header_read_timeout(mut self, limit: Duration) -> Self {
        self.header_read_timeout = limit;
        self
    }

    /// How long a client has to send a request's body once its head has arrived (default
    /// [`DEFAULT_BODY_READ_TIMEOUT`]); then it gets `408`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use yiem_core::{mcp::{McpHttpServer, McpServer}, store::ToolStore};
    ///
    /// let http = McpHttpServer::new(McpServer::new(ToolStore::new("x")))
    ///     .body_read_timeout(Duration::from_secs(10));
    /// # let _ = http;
    /// ```
    pub fn body_read_timeout(mut self, limit: Duration) -> Self {
        self.body_read_timeout = limit;
        self
    }

    /// The most connections served at once (default [`DEFAULT_MAX_CONNECTIONS`], at least 1); past it,
    /// new connections are refused with `503`.
    ///
    /// ```
    /// use yiem_core::{mcp::{McpHttpServer, McpServer}, store::ToolStore};
    ///
    /// let http = McpHttpServer::new(McpServer::new(ToolStore::new("x"))).max_connections(64);
    /// # let _ = http;
    /// ```
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// Browser origins allowed besides the loopback ones, with their scheme and port (`:*` for any
    /// port), such as `https://app.example.com:443`.
    ///
    /// ```
    /// use yiem_core::{mcp::{McpHttpServer, McpServer}, store::ToolStore};
    ///
    /// let http = McpHttpServer::new(McpServer::new(ToolStore::new("x")))
    ///     .allowed_origins(["https://app.example.com:443"]);
    /// # let _ = http;
    /// ```
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_origins
            .extend(origins.into_iter().map(Into::into));
        self
    }

    /// `Host` values allowed (`example.com` or `example.com:8080`). Bound to a loopback address the
    /// loopback hosts are always allowed; bound elsewhere, `Host` is checked only when this is set.
    ///
    /// ```
    /// use yiem_core::{mcp::{McpHttpServer, McpServer}, store::ToolStore};
    ///
    /// let http = McpHttpServer::new(McpServer::new(ToolStore::new("x")))
    ///     .allowed_hosts(["tools.example.com"]);
    /// # let _ = http;
    /// ```
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts.extend(hosts.into_iter().map(Into::into));
        self
    }

    /// Serves on `listener` until `shutdown` completes, then shuts down gracefully (see the type's
    /// docs). Fails only when the listener has no local address.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> std::io::Result<()> {
        let local = listener.local_addr()?;
        let McpHttpServer {
            mut server,
            token,
            max_body_bytes,
            allowed_origins,
            allowed_hosts,
            header_read_timeout,
            body_read_timeout,
            max_connections,
            sessions,
            sessions_per_peer,
        } = self;
        // This serve's own token: a server handler reused after an earlier shutdown starts afresh.
        let cancel_calls = CancellationToken::new();
        server.config_mut().shutdown = cancel_calls.clone();
        // Announced on 2026-07-28 clients' `subscriptions/listen` streams.
        server.config_mut().list_changed = true;
        if sessions.is_none() {
            server.config_mut().cannot_ask = Some(CANNOT_ASK_OVER_STATELESS_HTTP);
        }
        let end_streams = CancellationToken::new();
        let config = http_config(local, allowed_origins, allowed_hosts, max_body_bytes)
            .with_cancellation_token(end_streams.clone());
        // Each session (or, stateless, each request) gets its own handler: its own log level.
        let handler = move || Ok(server.for_request());
        let (service, held) = match sessions {
            None => {
                let manager = Arc::new(NeverSessionManager::default());
                let service = StreamableHttpService::new(handler, manager, config);
                (Service::Stateless(service), None)
            }
            Some(max) => {
                let manager = Arc::new(LocalSessionManager::default());
                let config = config.with_legacy_session_mode(true);
                let service = StreamableHttpService::new(handler, Arc::clone(&manager), config);
                let held = Held {
                    manager,
                    max,
                    per_peer: sessions_per_peer,
                    peers: std::sync::Mutex::default(),
                };
                (Service::Sessions(service), Some(held))
            }
        };
        let checks = Arc::new(Checks {
            service,
            token,
            max_body_bytes,
            body_read_timeout,
            max_connections,
            sessions: held,
        });
        let mut http1 = hyper::server::conn::http1::Builder::new();
        http1
            .timer(TokioTimer::new())
            .header_read_timeout(header_read_timeout);
        let served = Arc::new(Semaphore::new(max_connections));
        let refusing = Arc::new(Semaphore::new(max_connections));
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors, say: wait a moment rather than spin.
                        tracing::warn!(%error, "could not accept an MCP HTTP connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let Ok(permit) = Arc::clone(&served).try_acquire_owned() else {
                match Arc::clone(&refusing).try_acquire_owned() {
                    Ok(permit) => {
                        let refusal = refuse(&http1, stream, Arc::clone(&checks));
                        tokio::spawn(async move {
                            let _ = refusal.await;
                            drop(permit);
                        });
                    }
                    Err(_) => drop(stream),
                }
                continue;
            };
            let checks = Arc::clone(&checks);
            let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
                let checks = Arc::clone(&checks);
                async move { Ok::<_, Infallible>(checks.handle(request, peer_of(peer)).await) }
            });
            let connection = http1.serve_connection(TokioIo::new(stream), handler);
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "an MCP HTTP connection ended with an error");
                }
                drop(permit);
            });
        }
        drop(listener);
        // Calls first: each answers with its cancelled result on its own connection, which then ends.
        // Ending rmcp's streams at once would drop those answers (a `500` instead).
        cancel_calls.cancel();
        if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!("MCP HTTP connections still open after the shutdown grace period");
        }
        end_streams.cancel();
        Ok(())
    }
}

/// Answers the one request of a connection past the limit with `503` and closes it.
fn refuse(
    http1: &hyper::server::conn::http1::Builder,
    stream: TcpStream,
    checks: Arc<Checks>,
) -> impl Future<Output = hyper::Result<()>> + Send + 'static {
    let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
        let checks = Arc::clone(&checks);
        async move {
            // Read (and drop) the body first: closing on unread bytes resets the connection, and
            // the client would lose the answer.
            let body = Limited::new(request.into_body(), checks.max_body_bytes).collect();
            let _ = tokio::time::timeout(checks.body_read_timeout, body).await;
            Ok::<_, Infallible>(busy(&format!(
                "the server is serving {} connections, its limit; try again shortly",
                checks.max_connections
            )))
        }
    });
    let mut http1 = http1.clone();
    http1
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), handler)
}

/// rmcp's configuration: stateless, JSON answers where no notification comes first, and the `Origin`
/// and `Host` rules for the address the server is bound to.
fn http_config(
    local: SocketAddr,
    mut origins: Vec<String>,
    mut hosts: Vec<String>,
    max_body_bytes: usize,
) -> StreamableHttpServerConfig {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(max_body_bytes);
    if local.ip().is_loopback() {
        origins.extend(
            ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"].map(String::from),
        );
        hosts.extend(["localhost", "127.0.0.1", "::1"].map(String::from));
    }
    // An empty host list means any host: only a server bound elsewhere without hosts configured.
    config
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
}

/// The checks made before rmcp sees a request, and rmcp's service that it then goes to (one for the
/// server, shared by every connection and request).
struct Checks {
    service: Service,
    token: Option<String>,
    max_body_bytes: usize,
    body_read_timeout: Duration,
    max_connections: usize,
    /// The sessions held and their bounds, with sessions on.
    sessions: Option<Held>,
}

/// The address whose sessions are counted together: an IPv4 address, or an IPv6 host's /64 (one
/// host may take any address of it).
fn peer_of(address: SocketAddr) -> IpAddr {
    match address.ip().to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(std::net::Ipv6Addr::from(bits))
        }
        v4 => v4,
    }
}

/// The sessions held, the most that may be, in all and per client address, and which address opened
/// each session.
struct Held {
    manager: Arc<LocalSessionManager>,
    max: usize,
    per_peer: usize,
    peers: std::sync::Mutex<std::collections::HashMap<String, IpAddr>>,
}

impl Held {
    /// Why a new session from `peer` is refused, if it is: the server holds its most, or `peer` does.
    async fn refusal(&self, peer: IpAddr) -> Option<String> {
        let open = self.manager.sessions.read().await;
        if open.len() >= self.max {
            return Some(format!(
                "the server holds {} sessions, its limit; try again shortly, or end a session you \
                 no longer use (HTTP DELETE with its Mcp-Session-Id)",
                self.max
            ));
        }
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        // Sessions ended (deleted, idled out) since: forget who opened them.
        peers.retain(|id, _| open.contains_key(id.as_str()));
        let held = peers.values().filter(|address| **address == peer).count();
        (held >= self.per_peer).then(|| {
            format!(
                "your address holds {held} sessions, the most one address may; end a session you no \
                 longer use (HTTP DELETE with its Mcp-Session-Id), or let it idle out"
            )
        })
    }

    /// Notes that `peer` opened the session `response` names, if it names one.
    fn opened(&self, peer: IpAddr, response: &HttpResponse) {
        if let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|id| id.to_str().ok())
        {
            self.peers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id.to_owned(), peer);
        }
    }
}

/// rmcp's service, stateless or with sessions.
enum Service {
    Stateless(StreamableHttpService<McpServer, NeverSessionManager>),
    Sessions(StreamableHttpService<McpServer, LocalSessionManager>),
}

impl Service {
    async fn handle(&self, request: Request<Full<Bytes>>) -> HttpResponse {
        match self {
            Service::Stateless(service) => service.handle(request).await,
            Service::Sessions(service) => service.handle(request).await,
        }
    }
}

impl Checks {
    async fn handle(&self, request: Request<Incoming>, peer: IpAddr) -> HttpResponse {
        if let Some(expected) = &self.token
            && !bearer_matches(&request, expected)
        {
            let mut response = json_rpc_error(
                StatusCode::UNAUTHORIZED,
                -32001,
                "missing or wrong bearer token: send `Authorization: Bearer <token>`",
            );
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
        let too_large = || {
            json_rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                &format!(
                    "the request body is larger than {} bytes, this server's limit",
                    self.max_body_bytes
                ),
            )
        };
        let announced = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|length| length.to_str().ok()?.parse::<u64>().ok());
        if announced.is_some_and(|length| length > self.max_body_bytes as u64) {
            return too_large();
        }
        let (parts, body) = request.into_parts();
        let body = Limited::new(body, self.max_body_bytes).collect();
        let Ok(body) = tokio::time::timeout(self.body_read_timeout, body).await else {
            return json_rpc_error(
                StatusCode::REQUEST_TIMEOUT,
                -32600,
                &format!(
                    "the request body did not arrive within {:?}, this server's limit",
                    self.body_read_timeout
                ),
            );
        };
        let body = match body {
            Ok(collected) => collected.to_bytes(),
            Err(error) if error.is::<LengthLimitError>() => return too_large(),
            Err(error) => {
                return json_rpc_error(
                    StatusCode::BAD_REQUEST,
                    -32600,
                    &format!("could not read the request body: {error}"),
                );
            }
        };
        let post = parts.method == Method::POST;
        let delete = parts.method == Method::DELETE;
        // A new session: an `initialize` (a 2026-07-28 request has no session and passes).
        // Concurrent `initialize`s may pass together: the bound is the limit plus the connections open.
        let opening = self.sessions.as_ref().filter(|_| {
            post && !parts.headers.contains_key("mcp-session-id") && opens_session(&body)
        });
        if let Some(held) = opening
            && let Some(refusal) = held.refusal(peer).await
        {
            return busy(&refusal);
        }
        let response = self
            .service
            .handle(Request::from_parts(parts, Full::new(body.clone())))
            .await;
        if let Some(held) = opening {
            held.opened(peer, &response);
        }
        // A session ended: `204`, which clients expect (rmcp says `202`; the official Python SDK warns).
        if delete && response.status() == StatusCode::ACCEPTED {
            let (mut head, body) = response.into_parts();
            head.status = StatusCode::NO_CONTENT;
            return Response::from_parts(head, body);
        }
        // What rmcp refuses without a JSON-RPC answer (a body it cannot read: `415`) is answered as over
        // stdio (see `lines`). Checked only then, so a readable request is parsed once, by rmcp.
        if post
            && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE
            && let lines::Check::Answer(error) = lines::check(&body)
        {
            return json_response(StatusCode::BAD_REQUEST, error);
        }
        response
    }
}

/// Whether `body` is an `initialize` request, which opens a session.
fn opens_session(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(body)
        .is_ok_and(|request| request.method.as_deref() == Some("initialize"))
}

/// Whether `request` carries `Authorization: Bearer <expected>`, compared in constant time.
fn bearer_matches(request: &Request<Incoming>, expected: &str) -> bool {
    let Some(sent) = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
    else {
        return false;
    };
    let Some((scheme, token)) = sent.split_once(' ') else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer")
        && bool::from(token.trim().as_bytes().ct_eq(expected.as_bytes()))
}

/// `503` with a JSON-RPC error (`-32000`) saying which limit was reached, and `Retry-After: 1`.
fn busy(message: &str) -> HttpResponse {
    let mut response = json_rpc_error(StatusCode::SERVICE_UNAVAILABLE, -32000, message);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    response
}

/// A response carrying a JSON-RPC error with id `null` (the request was not read).
fn json_rpc_error(status: StatusCode, code: i64, message: &str) -> HttpResponse {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    json_response(status, body.to_string())
}

fn json_response(status: StatusCode, body: String) -> HttpResponse {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)).boxed())
        .expect("a status, a known header and a body make a valid response")
}
