//! Two `yiem mcp --http` replicas behind a round-robin proxy on loopback (a small hyper proxy written
//! here, one backend per request, alternating): a client makes 200 calls through it, every one is
//! answered, and both replicas answered calls. Each replica serves its own root directory, whose
//! `replica.txt` names it, so a `read` answer says which replica wrote it. No session is shared:
//! the server is stateless, so the replica that saw `initialize` need not be the one that sees a call.
//! Also `--token-env`: the token it names is required, and a variable that is not set is bad input.

use std::convert::Infallible;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use yiem_core::mcp::McpClient;
use yiem_core::{
    exec::{CancellationToken, ToolCall, ToolExecutor},
    store::ToolStore,
};

/// `yiem mcp --http 127.0.0.1:0 --root <root>`: the process and its address.
async fn replica(root: &Path) -> (Child, String) {
    replica_with(root, &[], &[]).await
}

/// `yiem mcp --http 127.0.0.1:0 --root <root> <flags>` with `env` set.
async fn replica_with(root: &Path, flags: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_yiem"))
        .args(["mcp", "--http", "127.0.0.1:0", "--root"])
        .arg(root)
        .args(flags)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("yiem mcp --http starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let address = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("yiem prints its address before anything can end it");
        if let Some(url) = line.strip_prefix("listening on http://") {
            break url.trim_end_matches("/mcp").to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, address)
}

/// A proxy that sends each HTTP request to the next backend in turn, over a fresh connection, and
/// streams the answer back. Returns its address and how many requests each backend got.
async fn round_robin(backends: Vec<String>) -> (String, Arc<Vec<AtomicUsize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let counts: Arc<Vec<AtomicUsize>> =
        Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
    let next = Arc::new(AtomicUsize::new(0));
    let backends = Arc::new(backends);
    let shared = Arc::clone(&counts);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let (backends, counts, next) = (
                Arc::clone(&backends),
                Arc::clone(&shared),
                Arc::clone(&next),
            );
            let forward = hyper::service::service_fn(move |request: Request<Incoming>| {
                let turn = next.fetch_add(1, Ordering::Relaxed) % backends.len();
                counts[turn].fetch_add(1, Ordering::Relaxed);
                let backend = backends[turn].clone();
                async move { Ok::<_, Infallible>(forward(&backend, request).await) }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), forward),
            );
        }
    });
    (address, counts)
}

async fn forward(backend: &str, request: Request<Incoming>) -> Response<ProxyBody> {
    let sent = async {
        let stream = TcpStream::connect(backend)
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())
    };
    match sent.await {
        Ok(response) => response.map(ProxyBody::Backend),
        Err(error) => {
            let mut response = Response::new(ProxyBody::Failed(Some(error.into())));
            *response.status_mut() = StatusCode::BAD_GATEWAY;
            response
        }
    }
}

/// The backend's body, streamed, or the proxy's own error text.
enum ProxyBody {
    Backend(Incoming),
    Failed(Option<hyper::body::Bytes>),
}

impl hyper::body::Body for ProxyBody {
    type Data = hyper::body::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        match self.get_mut() {
            ProxyBody::Backend(body) => std::pin::Pin::new(body).poll_frame(cx),
            ProxyBody::Failed(text) => {
                std::task::Poll::Ready(text.take().map(|text| Ok(hyper::body::Frame::data(text))))
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_behind_a_round_robin_proxy_answer_all_200_calls_and_both_answer() {
    let roots = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut replicas = Vec::new();
    for (root, name) in roots.iter().zip(["replica-a", "replica-b"]) {
        std::fs::write(root.path().join("replica.txt"), name).unwrap();
        replicas.push(replica(root.path()).await);
    }
    let (proxy, per_backend) = round_robin(
        replicas
            .iter()
            .map(|(_, address)| address.clone())
            .collect(),
    )
    .await;

    let client = McpClient::http(format!("http://{proxy}/mcp"))
        .name("replicas")
        .connect()
        .await
        .expect("the handshake completes through the proxy");
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    assert!(store.get("read").is_some(), "{:?}", store.names());

    // All 200 at once: one batch of parallel calls, each its own HTTP request.
    let calls = (0..200)
        .map(|i| ToolCall::new(format!("c{i}"), "read", json!({"path": "replica.txt"})))
        .collect();
    let batch = ToolExecutor::new()
        .execute(&store, calls, &CancellationToken::new())
        .await;
    assert_eq!(batch.messages.len(), 200);
    let (mut a, mut b) = (0, 0);
    for (i, message) in batch.messages.iter().enumerate() {
        assert_eq!(
            message.tool_call_id,
            format!("c{i}"),
            "results in call order"
        );
        let text = message.text_content();
        assert!(!message.is_error(), "call {i} failed: {text}");
        match (text.contains("replica-a"), text.contains("replica-b")) {
            (true, false) => a += 1,
            (false, true) => b += 1,
            _ => panic!("call {i}: no replica named in {text:?}"),
        }
    }
    assert_eq!(a + b, 200);
    eprintln!("replica-a answered {a} calls, replica-b {b}");
    // Requests alternate, so each replica gets half of them, give or take the handshake's few.
    assert!(a >= 90 && b >= 90, "replica-a answered {a}, replica-b {b}");
    let forwarded: Vec<usize> = per_backend
        .iter()
        .map(|count| count.load(Ordering::Relaxed))
        .collect();
    assert!(forwarded.iter().sum::<usize>() >= 200, "{forwarded:?}");
}

#[tokio::test]
async fn token_env_makes_yiem_mcp_http_refuse_clients_without_that_token() {
    let root = tempfile::tempdir().unwrap();
    let (_child, address) = replica_with(
        root.path(),
        &["--token-env", "YIEM_TEST_MCP_TOKEN"],
        &[("YIEM_TEST_MCP_TOKEN", "cli-token")],
    )
    .await;
    let url = format!("http://{address}/mcp");
    assert!(
        McpClient::http(&url).name("cli").connect().await.is_err(),
        "a client without the token is refused"
    );
    let client = McpClient::http(&url)
        .name("cli")
        .bearer_token("cli-token")
        .connect()
        .await
        .expect("a client with the token is served");
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    assert!(store.get("read").is_some());
}

#[tokio::test]
async fn token_env_naming_an_unset_variable_is_bad_input_naming_it() {
    let output = Command::new(env!("CARGO_BIN_EXE_yiem"))
        .args([
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--token-env",
            "YIEM_TEST_SURELY_UNSET",
        ])
        .env_remove("YIEM_TEST_SURELY_UNSET")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("YIEM_TEST_SURELY_UNSET"), "{stderr}");
}

/// POSTs an `initialize` of the 2025-11-25 revision to `yiem mcp --http` at `address`.
async fn initialize(address: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("http://{address}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}},
        }))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn yiem_mcp_http_gives_sessions_only_when_asked_to() {
    let root = tempfile::tempdir().unwrap();
    let (_stateless, address) = replica(root.path()).await;
    let answer = initialize(&address).await;
    assert_eq!(answer.status(), 200);
    assert!(!answer.headers().contains_key("mcp-session-id"));
    let (_sessions, address) = replica_with(root.path(), &["--sessions"], &[]).await;
    let answer = initialize(&address).await;
    assert_eq!(answer.status(), 200);
    assert!(answer.headers().contains_key("mcp-session-id"));
}
