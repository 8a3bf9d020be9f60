//! Serving an [`McpServer`] over MCP's streamable HTTP transport: rmcp's [`StreamableHttpService`] in
//! stateless mode on a hyper HTTP/1.1 server, behind the checks a deployed server needs (a bearer token,
//! `Origin` and `Host`, a body size limit) and a graceful shutdown that cancels running calls.
//!
//! This module owns [`McpHttpServer`]; what a call does once it passes the checks is [`McpServer`]'s.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::McpServer;

/// The largest request body accepted by default: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How long connections may take to finish once shutdown has begun (running calls are cancelled at its
/// start, so this only bounds writing their last responses).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

/// Serves an [`McpServer`] over MCP's streamable HTTP transport (one endpoint, any path), needs the
/// `mcp-http` feature.
///
/// - **Stateless**: no `Mcp-Session-Id`, every request stands alone, so any replica behind a load
///   balancer can answer any request. A call's progress notifications stream back as server-sent events
///   on the response of its own request; a call without them is answered with plain JSON.
/// - **Bearer token** ([`with_bearer_token`](Self::with_bearer_token)): a request without
///   `Authorization: Bearer <token>`, or with another token, gets `401` (compared in constant time).
/// - **`Origin`**: a request whose `Origin` header is not allowed gets `403`, as the MCP specification
///   requires against DNS rebinding. Bound to a loopback address, the server allows `http://localhost`,
///   `http://127.0.0.1` and `http://[::1]` on any port, and `Host` must be one of those hosts; add
///   others with [`with_allowed_origins`](Self::with_allowed_origins) and
///   [`with_allowed_hosts`](Self::with_allowed_hosts). Bound to any other address, only the origins
///   given are allowed and `Host` is checked only against the hosts given. Requests without `Origin`
///   (non-browser clients) pass.
/// - **Body limit** ([`with_max_body_bytes`](Self::with_max_body_bytes), default
///   [`DEFAULT_MAX_BODY_BYTES`]): a larger body gets `413` with a JSON-RPC error (`-32600`) naming the
///   limit, whether it announced its length or not; a body that is not JSON gets `400` with a parse
///   error (`-32700`).
/// - **Shutdown**: when the `shutdown` future given to [`serve`](Self::serve) completes, the server
///   stops accepting connections, cancels running calls (each answers with its cancelled result), ends
///   event streams, and returns once open connections have finished (at most 5 s later).
/// - A client that disconnects cancels its running call.
///
/// ```no_run
/// use yiem_core::{ToolStore, register_all_tools, mcp::{McpHttpServer, McpServer}};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let mut store = ToolStore::new("my-tools");
/// register_all_tools(&mut store)?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// # drop(stop);
/// McpHttpServer::new(McpServer::new(store))
///     .with_bearer_token(std::env::var("MCP_TOKEN")?)
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
        }
    }

    /// Requires `Authorization: Bearer <token>` on every request.
    ///
    /// ```
    /// use yiem_core::{ToolStore, mcp::{McpHttpServer, McpServer}};
    ///
    /// let http = McpHttpServer::new(McpServer::new(ToolStore::new("x"))).with_bearer_token("s3cret");
    /// # let _ = http;
    /// ```
    pub fn with_bearer_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The largest request body accepted, in bytes (default [`DEFAULT_MAX_BODY_BYTES`]).
    ///
    /// ```
    /// use yiem_core::{ToolStore, mcp::{McpHttpServer, McpServer}};
    ///
    /// let http = McpHttpServer::new(McpServer::new(ToolStore::new("x"))).with_max_body_bytes(64 * 1024);
    /// # let _ = http;
    /// ```
    pub fn with_max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Browser origins allowed besides the loopback ones, with their scheme and port (`:*` for any
    /// port), such as `https://app.example.com:443`.
    ///
    /// ```
    /// use yiem_core::{ToolStore, mcp::{McpHttpServer, McpServer}};
    ///
    /// let http = McpHttpServer::new(McpServer::new(ToolStore::new("x")))
    ///     .with_allowed_origins(["https://app.example.com:443"]);
    /// # let _ = http;
    /// ```
    pub fn with_allowed_origins(
        mut self,
        origins: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allowed_origins
            .extend(origins.into_iter().map(Into::into));
        self
    }

    /// `Host` values allowed (`example.com` or `example.com:8080`). Bound to a loopback address the
    /// loopback hosts are always allowed; bound elsewhere, `Host` is checked only when this is set.
    ///
    /// ```
    /// use yiem_core::{ToolStore, mcp::{McpHttpServer, McpServer}};
    ///
    /// let http = McpHttpServer::new(McpServer::new(ToolStore::new("x")))
    ///     .with_allowed_hosts(["tools.example.com"]);
    /// # let _ = http;
    /// ```
    pub fn with_allowed_hosts(
        mut self,
        hosts: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
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
        } = self;
        // This serve's own token: a server handler reused after an earlier shutdown starts afresh.
        let cancel_calls = CancellationToken::new();
        server.shutdown = cancel_calls.clone();
        let end_streams = CancellationToken::new();
        let config = http_config(local, allowed_origins, allowed_hosts, max_body_bytes)
            .with_cancellation_token(end_streams.clone());
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        let checks = Arc::new(Checks {
            token,
            max_body_bytes,
        });
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        tokio::pin!(shutdown);
        loop {
            let (stream, _peer) = tokio::select! {
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
            let service = service.clone();
            let checks = Arc::clone(&checks);
            let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
                let service = service.clone();
                let checks = Arc::clone(&checks);
                async move { Ok::<_, Infallible>(checks.handle(request, service).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), handler);
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "an MCP HTTP connection ended with an error");
                }
            });
        }
        drop(listener);
        cancel_calls.cancel();
        end_streams.cancel();
        if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!("MCP HTTP connections still open after the shutdown grace period");
        }
        Ok(())
    }
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

/// The checks made before rmcp sees a request.
struct Checks {
    token: Option<String>,
    max_body_bytes: usize,
}

impl Checks {
    async fn handle<S>(&self, request: Request<Incoming>, mut service: S) -> HttpResponse
    where
        S: tower_service::Service<
                Request<Full<Bytes>>,
                Response = HttpResponse,
                Error = Infallible,
            >,
    {
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
        let body = match Limited::new(body, self.max_body_bytes).collect().await {
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
        if parts.method == Method::POST
            && let Err(error) = serde_json::from_slice::<serde_json::Value>(&body)
        {
            return json_rpc_error(
                StatusCode::BAD_REQUEST,
                -32700,
                &format!("the request body is not JSON: {error}"),
            );
        }
        match service
            .call(Request::from_parts(parts, Full::new(body)))
            .await
        {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
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

/// A response carrying a JSON-RPC error with id `null` (the request was not read).
fn json_rpc_error(status: StatusCode, code: i64, message: &str) -> HttpResponse {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .expect("a status, a known header and a body make a valid response")
}
