//! `yiem mcp`: the built-in tools served over MCP stdio or streamable HTTP, with their approvals,
//! skills and tasks, and tasks kept and run on Restate (the `restate` feature).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use yiem_core::store::ToolStore;

use crate::{Failure, bad_input, find, runtime, telemetry};

/// How long the runtime waits at most, once the server has ended, for tasks still finishing: dropping a
/// call's task kills its processes and waits for them to be gone (`bash`'s guard waits up to 5 s for the
/// pipe and 5 s for the processes; a loaded machine can take seconds to tear a sandbox down), so this is
/// longer than that. It is only a bound: the runtime stops as soon as every task is dropped.
const MCP_SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(12);

/// `yiem mcp --http` and the flags that go with it.
#[derive(Args)]
pub(super) struct HttpFlags {
    /// Serve over MCP's streamable HTTP transport (stateless: any replica answers any request) on this
    /// address, e.g. 127.0.0.1:8080 (port 0 picks a free one). The address is printed on stderr as
    /// `listening on http://ADDR/mcp`. Stops on Ctrl-C or SIGTERM, cancelling running calls.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// With --http: give each client of an MCP revision before 2026-07-28 a session, so that it can be
    /// asked to approve a call (at most 1024 at once; a session's requests must reach this process).
    /// Clients of 2026-07-28 are asked either way.
    #[arg(long, requires = "http")]
    sessions: bool,
    /// With --http: require `Authorization: Bearer <token>`, the token read from this environment
    /// variable.
    #[arg(long, value_name = "VAR", requires = "http")]
    token_env: Option<String>,
    /// With --http: a browser origin allowed besides loopback ones, e.g. https://app.example.com:443
    /// (repeatable).
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// With --http: a `Host` allowed besides loopback ones, e.g. tools.example.com (repeatable).
    #[arg(long, value_name = "HOST", requires = "http")]
    allow_host: Vec<String>,
}

/// `yiem mcp`'s tasks (MCP's tasks extension): which tools' calls become tasks, the key that signs
/// what a call or task holds between rounds of questions, and Restate, where tasks can live and run.
#[derive(Args)]
pub(super) struct TaskFlags {
    /// Calls of this tool from a client that declares MCP's tasks extension become tasks: answered at
    /// once with a task the client reads (`tasks/get`), answers (`tasks/update`) and cancels
    /// (`tasks/cancel`), e.g. `--task bash` (repeatable).
    #[arg(long = "task", value_name = "TOOL")]
    tasks: Vec<String>,
    /// Sign the answers a call or task holds between rounds of questions with the key in this
    /// environment variable (64 hex digits). Give every replica of an --http server and the
    /// --restate-serve service the same key; without it each process makes up its own, and an answer
    /// reaches only the process that asked.
    #[arg(long, value_name = "VAR")]
    state_key_env: Option<String>,
    /// With --http: keep tasks in the Restate server whose ingress is at this URL, e.g.
    /// http://127.0.0.1:8080, so that any replica answers for any task and a task outlives the
    /// replica that started it. The tasks run in `yiem mcp --restate-serve` (needs a yiem built with
    /// `--features restate`).
    #[arg(long, value_name = "URL", requires = "http")]
    restate_ingress: Option<String>,
    /// Run the tasks kept in Restate: serve them as a Restate service on this address, e.g.
    /// 127.0.0.1:9080, to register with Restate (`restate deployments register http://ADDR`). Give it
    /// the replicas' tools and flags (--task, --allow, --root, shell flags) and --state-key-env
    /// (needs a yiem built with `--features restate`).
    #[arg(long, value_name = "ADDR", conflicts_with = "http")]
    restate_serve: Option<std::net::SocketAddr>,
}

/// The key of `--state-key-env VAR`: 64 hex digits in the variable.
fn state_key(variable: &str) -> Result<[u8; 32], Failure> {
    let text = std::env::var(variable).unwrap_or_default();
    let text = text.trim();
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut key = [0u8; 32];
    let fits = text.len() == 64
        && text
            .as_bytes()
            .chunks(2)
            .zip(key.iter_mut())
            .all(|(pair, byte)| match (digit(pair[0]), digit(pair[1])) {
                (Some(high), Some(low)) => {
                    *byte = high << 4 | low;
                    true
                }
                _ => false,
            });
    if fits {
        Ok(key)
    } else {
        Err(bad_input(format!(
            "--state-key-env {variable}: the environment variable `{variable}` must hold 64 hex \
             digits (32 bytes), e.g. from `openssl rand -hex 32`; it holds {} characters",
            text.chars().count()
        )))
    }
}

/// `yiem mcp --allow TOOL... --allow-all`: the calls that run without asking the client; and
/// `--skills DIR`, the skills served beside the tools.
pub(super) struct McpApproval {
    pub(super) allow: Vec<String>,
    pub(super) allow_all: bool,
    pub(super) skills: Option<PathBuf>,
}

/// `yiem mcp`: the store over MCP stdio until the client hangs up, or over HTTP until a signal. When
/// stdin closes (or the signal comes), the server ends within a second: calls still running are
/// cancelled (the library does it), and `bash`'s processes die with them.
pub(super) fn serve_mcp(
    store: ToolStore,
    approval: McpApproval,
    http: HttpFlags,
    tasks: TaskFlags,
) -> Result<(), Failure> {
    // Logs go to stderr: stdout carries the protocol. Spans go to `OTEL_EXPORTER_OTLP_ENDPOINT` if set.
    telemetry::init(telemetry::Telemetry {
        otlp: None,
        logs: true,
    })?;
    let runtime = runtime()?;
    for name in &tasks.tasks {
        find(&store, name)?;
    }
    let mut server = yiem_core::mcp::McpServer::new(store)
        .server_info("yiem", env!("CARGO_PKG_VERSION"))
        .allowed_tools(approval.allow)
        .task_tools(tasks.tasks.iter().cloned());
    if approval.allow_all {
        server = server.all_tools_allowed();
    }
    if let Some(dir) = approval.skills {
        let catalog = yiem_core::mcp::SkillCatalog::from_dir(&dir)
            .map_err(|error| bad_input(format!("--skills {}: {error}", dir.display())))?;
        server = server.skills(catalog);
    }
    let key = match &tasks.state_key_env {
        Some(variable) => Some(state_key(variable)?),
        None => None,
    };
    if let Some(key) = key {
        server = server.state_key(key);
    }
    let outcome = match (http.http, tasks.restate_serve) {
        (None, None) => runtime
            .block_on(server.serve_stdio())
            .map_err(|error| Failure::Internal(error.to_string())),
        (Some(address), _) => {
            if let Some(ingress) = &tasks.restate_ingress {
                server = durable::kept_in(server, ingress)?;
            }
            runtime.block_on(serve_http(server, address, http))
        }
        (None, Some(address)) => {
            let key = key.ok_or_else(|| {
                bad_input(
                    "--restate-serve needs --state-key-env VAR: the tasks' answers are signed with \
                     a key every process that runs them, and each after a restart, must share",
                )
            })?;
            runtime.block_on(durable::serve(server, key, address))
        }
    };
    // Dropping the runtime's tasks drops any call still winding down, which kills its processes.
    runtime.shutdown_timeout(MCP_SHUTDOWN_GRACE);
    outcome
}

/// `yiem mcp --restate-ingress` and `--restate-serve`: tasks kept and run on Restate.
#[cfg(feature = "restate")]
mod durable {
    use super::{Failure, bad_input, stopped};
    use yiem_core::mcp::McpServer;
    use yiem_restate::mcp::{DurableTasks, RestateTaskStore};

    /// `server` with its tasks kept in the Restate of `ingress`.
    pub(super) fn kept_in(server: McpServer, ingress: &str) -> Result<McpServer, Failure> {
        let store = RestateTaskStore::new(ingress)
            .map_err(|error| bad_input(format!("--restate-ingress {ingress}: {error}")))?;
        Ok(server.task_store(store))
    }

    /// Serves the tasks of `server`'s tools as a Restate service on `address` until Ctrl-C or
    /// SIGTERM.
    pub(super) async fn serve(
        server: McpServer,
        key: [u8; 32],
        address: std::net::SocketAddr,
    ) -> Result<(), Failure> {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|error| {
                bad_input(format!(
                    "--restate-serve {address}: cannot listen there: {error}"
                ))
            })?;
        let bound = listener
            .local_addr()
            .map_err(|error| Failure::Internal(error.to_string()))?;
        super::announce(&format!("serving tasks to Restate on http://{bound}"));
        let stop = stopped()?;
        yiem_restate::restate_sdk::http_server::HttpServer::new(
            DurableTasks::new(server, key).endpoint(),
        )
        .serve_with_cancel(listener, stop)
        .await;
        Ok(())
    }
}

/// Without the `restate` feature: the flags are known, and say how to get them.
#[cfg(not(feature = "restate"))]
mod durable {
    use super::{Failure, bad_input};
    use yiem_core::mcp::McpServer;

    const REBUILD: &str = "this yiem was built without Restate; build it with \
                           `cargo install yiem-tools --features restate`";

    pub(super) fn kept_in(_: McpServer, _: &str) -> Result<McpServer, Failure> {
        Err(bad_input(format!("--restate-ingress: {REBUILD}")))
    }

    pub(super) async fn serve(
        _: McpServer,
        _: [u8; 32],
        _: std::net::SocketAddr,
    ) -> Result<(), Failure> {
        Err(bad_input(format!("--restate-serve: {REBUILD}")))
    }
}

/// Says on stderr what the server does now, where a test or a person reads it.
fn announce(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// A future that ends on Ctrl-C or SIGTERM.
fn stopped() -> Result<impl Future<Output = ()> + Send + 'static, Failure> {
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|error| Failure::Internal(format!("cannot listen for SIGTERM: {error}")))?;
    Ok(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// `yiem mcp --http ADDR`: serves until Ctrl-C or SIGTERM.
async fn serve_http(
    server: yiem_core::mcp::McpServer,
    address: std::net::SocketAddr,
    flags: HttpFlags,
) -> Result<(), Failure> {
    let mut http = yiem_core::mcp::McpHttpServer::new(server)
        .allowed_origins(flags.allow_origin)
        .allowed_hosts(flags.allow_host);
    if flags.sessions {
        http = http.sessions(yiem_core::mcp::DEFAULT_MAX_SESSIONS);
    }
    if let Some(variable) = flags.token_env {
        let token = std::env::var(&variable)
            .ok()
            .filter(|token| !token.trim().is_empty())
            .ok_or_else(|| {
                bad_input(format!(
                    "--token-env {variable}: the environment variable `{variable}` is not set or empty"
                ))
            })?;
        http = http.bearer_token(token.trim());
    }
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| bad_input(format!("--http {address}: cannot listen there: {error}")))?;
    let bound = listener
        .local_addr()
        .map_err(|error| Failure::Internal(error.to_string()))?;
    announce(&format!("listening on http://{bound}/mcp"));
    http.serve(listener, stopped()?)
        .await
        .map_err(|error| Failure::Internal(error.to_string()))
}
