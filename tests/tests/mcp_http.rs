//! yiem's streamable HTTP MCP server (`McpHttpServer`, in `mcp-test-server --http`), started as a real
//! process on loopback and driven by clients nobody here wrote — the official Python SDK
//! (`tests/python/mcp_http_client.py`) and the official TypeScript SDK (`tests/node/mcp_http_client.mjs`)
//! — and by yiem's own `McpClient`, plus raw HTTP for what SDKs never send: a foreign `Origin`, a chunked
//! over-sized body, a body that is not JSON. Each SDK client checks auth refused and accepted, a progress
//! stream, an over-sized request and a call cancelled by its disconnect; shutdown cancels running calls.
//!
//! The clients are installed on first use under the target directory, as `.ci/run` does.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use yiem_core::mcp::{McpClient, McpHttpServer, McpServer};
use yiem_core::{
    exec::{CancellationToken, ToolCall, ToolExecutor},
    store::ToolStore,
};
use yiem_tests::installed::{TS_SDK_VERSION, npm_package, python};
use yiem_tests::poll::wait_until;
use yiem_tests::updates::recording_updates;

const TOKEN: &str = "test-token-3f9a";
const MAX_BODY: usize = 65536;

/// `mcp-test-server --http 127.0.0.1:0`, stopped when its stdin closes (dropped: killed).
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    url: String,
    address: String,
}

impl Server {
    async fn start(token: Option<&str>) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-test-server"));
        command
            .args(["--http", "127.0.0.1:0", "--max-body"])
            .arg(MAX_BODY.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(token) = token {
            command.env("MCP_TEST_TOKEN", token);
        }
        let mut child = command.spawn().expect("mcp-test-server starts");
        let stdin = child.stdin.take();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("the server prints its address before anything can end it");
            if let Some(url) = line.strip_prefix("listening on ") {
                break url.to_owned();
            }
        };
        // The rest of stderr is drained so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let address = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        Server {
            child,
            stdin,
            url,
            address,
        }
    }
}

fn markers() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "yiem-mcp-http-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn script(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

async fn assert_client_passes(mut command: Command, what: &str) {
    let output = tokio::time::timeout(Duration::from_secs(300), command.output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish in 300 s"))
        .unwrap_or_else(|e| panic!("{what} did not start: {e}"));
    assert!(
        output.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "ok");
}

#[tokio::test]
async fn the_python_sdk_client_is_refused_without_the_token_and_served_with_progress_limits_and_disconnect()
 {
    let server = Server::start(Some(TOKEN)).await;
    let markers = markers();
    let mut command = Command::new(python());
    command
        .arg(script("python/mcp_http_client.py"))
        .args([&server.url, TOKEN])
        .arg(&markers);
    assert_client_passes(command, "the Python SDK client").await;
    assert!(
        wait_until(
            || markers.join("cancelled").exists(),
            Duration::from_secs(30)
        )
        .await,
        "the call the Python client left was cancelled on the server"
    );
    assert!(!markers.join("finished").exists());
}

#[tokio::test]
async fn the_typescript_sdk_client_is_refused_without_the_token_and_served_with_progress_limits_and_disconnect()
 {
    let npm = npm_package("@modelcontextprotocol/sdk", TS_SDK_VERSION);
    let server = Server::start(Some(TOKEN)).await;
    let markers = markers();
    let mut command = Command::new("node");
    command
        .arg(script("node/mcp_http_client.mjs"))
        .arg(&npm)
        .args([&server.url, TOKEN])
        .arg(&markers);
    assert_client_passes(command, "the TypeScript SDK client").await;
    assert!(
        wait_until(
            || markers.join("cancelled").exists(),
            Duration::from_secs(30)
        )
        .await,
        "the call the TypeScript client left was cancelled on the server"
    );
    assert!(!markers.join("finished").exists());
}

async fn run_one(
    store: &ToolStore,
    name: &str,
    arguments: Value,
) -> yiem_core::message::ToolResultMessage {
    ToolExecutor::new()
        .execute(
            store,
            vec![ToolCall::new("c1", name, arguments)],
            &CancellationToken::new(),
        )
        .await
        .messages
        .remove(0)
}

#[tokio::test]
async fn yiem_own_client_lists_calls_and_streams_progress_with_the_token() {
    let server = Server::start(Some(TOKEN)).await;
    let client = McpClient::http(&server.url)
        .name("yiem-http")
        .bearer_token(TOKEN)
        .connect()
        .await
        .expect("the handshake completes with the token");
    let store = ToolStore::new("agent");
    let names = client.register(&store).await.unwrap();
    for name in ["add", "count_up", "echo", "slow_job"] {
        assert!(names.contains(&name.to_owned()), "{names:?}");
    }
    let sum = run_one(&store, "add", json!({"a": 20, "b": 22})).await;
    assert_eq!(sum.result.structured_content(), Some(&json!({"sum": 42})));

    let (executor, updates) = recording_updates();
    let counted = executor
        .execute(
            &store,
            vec![ToolCall::new("c2", "count_up", json!({"steps": 3}))],
            &CancellationToken::new(),
        )
        .await
        .messages
        .remove(0);
    assert_eq!(counted.text_content(), "counted to 3");
    assert_eq!(
        *updates.lock().unwrap(),
        ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    );
}

#[tokio::test]
async fn yiem_own_client_with_a_wrong_token_is_refused() {
    let server = Server::start(Some(TOKEN)).await;
    let Err(refused) = McpClient::http(&server.url)
        .name("yiem-http")
        .bearer_token("not-the-token")
        .connect()
        .await
    else {
        panic!("a wrong token is refused");
    };
    let text = refused.to_string();
    assert!(text.contains("yiem-http"), "{text}");
}

/// One raw HTTP/1.1 exchange on a fresh connection: the status and the body.
async fn raw(address: &str, head: &str, body: &[u8]) -> (u16, String, String) {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    // The server may answer (and close) before the whole body is sent: a failed write is fine.
    let _ = stream.write_all(body).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (headers, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP response: {answer:?}"));
    let status = headers[9..12].parse().unwrap();
    (status, headers.to_owned(), body.to_owned())
}

fn post_head(address: &str, extra: &str, length: usize) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMCP-Protocol-Version: 2025-06-18\r\nConnection: close\r\n\
         {extra}Content-Length: {length}\r\n\r\n"
    )
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

#[tokio::test]
async fn a_request_without_a_token_gets_401_with_a_json_rpc_error_and_www_authenticate() {
    let server = Server::start(Some(TOKEN)).await;
    let (status, headers, body) = raw(
        &server.address,
        &post_head(&server.address, "", LIST.len()),
        LIST.as_bytes(),
    )
    .await;
    assert_eq!(status, 401);
    assert!(
        headers.to_lowercase().contains("www-authenticate: bearer"),
        "{headers}"
    );
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], -32001);
    let bearer = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, _, body) = raw(
        &server.address,
        &post_head(&server.address, &bearer, LIST.len()),
        LIST.as_bytes(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let listed: Value = serde_json::from_str(&body).unwrap();
    assert!(listed["result"]["tools"].as_array().unwrap().len() > 3);
}

#[tokio::test]
async fn a_foreign_origin_is_refused_with_403_and_a_loopback_origin_is_served() {
    let server = Server::start(None).await;
    let foreign = "Origin: http://evil.example\r\n";
    let (status, _, _) = raw(
        &server.address,
        &post_head(&server.address, foreign, LIST.len()),
        LIST.as_bytes(),
    )
    .await;
    assert_eq!(status, 403);
    let local = "Origin: http://localhost:3000\r\n";
    let (status, _, body) = raw(
        &server.address,
        &post_head(&server.address, local, LIST.len()),
        LIST.as_bytes(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // A `Host` that is not loopback (DNS rebinding) is refused too.
    let (status, _, _) = raw(
        &server.address,
        &post_head("evil.example", "", LIST.len()),
        LIST.as_bytes(),
    )
    .await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn an_over_sized_body_gets_413_and_a_json_rpc_error_naming_the_limit_even_when_chunked() {
    let server = Server::start(None).await;
    let text = "x".repeat(MAX_BODY * 4);
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": text}}})
    .to_string();
    let (status, _, body) = raw(
        &server.address,
        &post_head(&server.address, "", call.len()),
        call.as_bytes(),
    )
    .await;
    assert_eq!(status, 413);
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], -32600);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&MAX_BODY.to_string()),
        "{error}"
    );

    // Without a length up front: the limit holds while the body streams in.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n",
        server.address
    );
    let mut chunked = Vec::new();
    for piece in call.as_bytes().chunks(8192) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let (status, _, body) = raw(&server.address, &head, &chunked).await;
    assert_eq!(status, 413, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], -32600);
}

#[tokio::test]
async fn a_body_that_is_not_json_gets_a_json_rpc_parse_error() {
    let server = Server::start(None).await;
    let (status, _, body) = raw(
        &server.address,
        &post_head(&server.address, "", 5),
        b"{bad!",
    )
    .await;
    assert_eq!(status, 400);
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], -32700);
}

#[tokio::test]
async fn shutdown_cancels_running_calls_answers_them_and_exits() {
    let mut server = Server::start(None).await;
    let client = McpClient::http(&server.url)
        .name("yiem-http")
        .connect()
        .await
        .unwrap();
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let markers = markers();
    let running = {
        let store = store.clone();
        let markers = markers.clone();
        tokio::spawn(async move {
            run_one(
                &store,
                "slow_job",
                json!({"markers": markers, "millis": 600_000}),
            )
            .await
        })
    };
    assert!(wait_until(|| markers.join("started").exists(), Duration::from_secs(30)).await);
    drop(server.stdin.take()); // the server's shutdown signal
    let status = tokio::time::timeout(Duration::from_secs(30), server.child.wait())
        .await
        .expect("the server exits once its calls are cancelled")
        .unwrap();
    assert!(status.success(), "{status}");
    assert!(markers.join("cancelled").exists());
    assert!(!markers.join("finished").exists());
    let answered = tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("the client's call ends")
        .unwrap();
    // The call's own cancelled result, not an HTTP failure.
    assert!(answered.is_error(), "{answered:?}");
    assert_eq!(
        answered.text_content(),
        "the MCP server is shutting down: tool `slow_job` was aborted before it finished; call it \
         again when the server is back"
    );
}

/// A store of `count` tools `t0000`, `t0001`, ... served in this process on loopback; its address and
/// the store (a handle: tools removed from it leave the served list).
async fn large_store_served(count: usize) -> (String, ToolStore) {
    let store = ToolStore::new("large");
    for i in 0..count {
        let tool = yiem_core::tool::AgentTool::builder(format!("t{i:04}"))
            .description("Answer its own name.")
            .handler(move |_, _| async move { format!("t{i:04}") })
            .build()
            .unwrap();
        store.register(tool).unwrap();
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let server = yiem_core::mcp::McpHttpServer::new(yiem_core::mcp::McpServer::new(store.clone()));
    tokio::spawn(server.serve(listener, std::future::pending()));
    (address, store)
}

async fn list_page(address: &str, cursor: Option<&str>) -> Value {
    let params = match cursor {
        Some(cursor) => json!({"cursor": cursor}),
        None => json!({}),
    };
    let request =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}).to_string();
    let (status, _, body) = raw(
        address,
        &post_head(address, "", request.len()),
        request.as_bytes(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

fn page_names(page: &Value) -> Vec<String> {
    page["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_large_store_is_listed_in_pages_that_a_client_follows_to_every_tool_in_order() {
    let (address, _store) = large_store_served(1203).await;
    let client = McpClient::http(format!("http://{address}/mcp"))
        .name("large")
        .connect()
        .await
        .unwrap();
    let agent = ToolStore::new("agent");
    let names = client.register(&agent).await.unwrap();
    let expected: Vec<String> = (0..1203).map(|i| format!("t{i:04}")).collect();
    assert_eq!(names, expected);

    let first = list_page(&address, None).await;
    assert_eq!(page_names(&first).len(), yiem_core::mcp::DEFAULT_PAGE_SIZE);
    assert_eq!(first["result"]["nextCursor"], "500:t0499");
    let second = list_page(&address, Some("500:t0499")).await;
    assert_eq!(page_names(&second)[0], "t0500");
    let last = list_page(&address, second["result"]["nextCursor"].as_str()).await;
    assert_eq!(page_names(&last).len(), 203);
    assert!(last["result"].get("nextCursor").is_none(), "{last}");
}

#[tokio::test]
async fn pages_resume_after_the_last_tool_sent_when_the_store_changes_and_a_stale_cursor_is_refused()
 {
    let (address, store) = large_store_served(1000).await;
    let first = list_page(&address, None).await;
    let cursor = first["result"]["nextCursor"].as_str().unwrap().to_owned();
    // Tools before the cursor go away: the next page still starts right after the last tool sent.
    for i in 0..10 {
        store.remove(&format!("t{i:04}"));
    }
    let second = list_page(&address, Some(&cursor)).await;
    assert_eq!(page_names(&second)[0], "t0500");
    assert_eq!(page_names(&second).len(), 500, "t0500 to t0999");
    assert!(second["result"].get("nextCursor").is_none(), "{second}");

    // The tool the cursor names is gone: the client is told to list again.
    store.remove("t0499");
    let stale = list_page(&address, Some(&cursor)).await;
    assert_eq!(stale["error"]["code"], -32602, "{stale}");
    assert!(
        stale["error"]["message"]
            .as_str()
            .unwrap()
            .contains("t0499"),
        "{stale}"
    );
    let garbage = list_page(&address, Some("not a cursor")).await;
    assert_eq!(garbage["error"]["code"], -32602, "{garbage}");
}

/// `server`'s tools (the test server's, with `echo`) served in this process on loopback with the
/// settings `configure` makes; its address.
async fn served(configure: impl FnOnce(McpHttpServer) -> McpHttpServer) -> String {
    let store = ToolStore::new("limits");
    store
        .register(
            yiem_core::tool::AgentTool::builder("echo")
                .description("Answer the text.")
                .parallel()
                .handler(|_, args: Value| async move { args["text"].to_string() })
                .build()
                .unwrap(),
        )
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let server = configure(McpHttpServer::new(McpServer::new(store)));
    tokio::spawn(server.serve(listener, std::future::pending()));
    address
}

/// Everything the server sends on `stream` until it closes the connection; on a server without the
/// limit it never does, and this turns that into a failure (the limits under test are far below it).
async fn until_closed(stream: &mut tokio::net::TcpStream) -> String {
    let mut answer = Vec::new();
    let read = stream.read_to_end(&mut answer);
    let _ = tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the server closed the connection");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_client_that_sends_nothing_or_trickles_its_head_or_idles_is_closed_by_the_header_limit() {
    let address = served(|http| http.header_read_timeout(Duration::from_millis(200))).await;
    // Nothing at all.
    let mut silent = tokio::net::TcpStream::connect(&address).await.unwrap();
    until_closed(&mut silent).await;
    // A head that never ends (a byte, and no more).
    let mut trickle = tokio::net::TcpStream::connect(&address).await.unwrap();
    trickle.write_all(b"P").await.unwrap();
    until_closed(&mut trickle).await;
    // Kept alive after an answer, and then idle.
    let mut idle = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = post_head(&address, "", LIST.len()).replace("Connection: close\r\n", "");
    idle.write_all(head.as_bytes()).await.unwrap();
    idle.write_all(LIST.as_bytes()).await.unwrap();
    let answered = until_closed(&mut idle).await;
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
}

#[tokio::test]
async fn a_body_that_does_not_arrive_gets_408_and_a_json_rpc_error() {
    let address = served(|http| http.body_read_timeout(Duration::from_millis(200))).await;
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    stream
        .write_all(post_head(&address, "", 100).as_bytes())
        .await
        .unwrap();
    stream.write_all(&LIST.as_bytes()[..10]).await.unwrap();
    let answer = until_closed(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let body: Value = serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["error"]["code"], -32600, "{body}");
}

#[tokio::test]
async fn past_the_connection_limit_a_new_connection_gets_503_with_a_json_rpc_error() {
    let address = served(|http| http.max_connections(1)).await;
    // Connected first, so accepted first: it holds the one place while it stays open.
    let _holder = tokio::net::TcpStream::connect(&address).await.unwrap();
    let (status, headers, body) = raw(
        &address,
        &post_head(&address, "", LIST.len()),
        LIST.as_bytes(),
    )
    .await;
    assert_eq!(status, 503, "{body}");
    assert!(
        headers.to_lowercase().contains("retry-after: 1"),
        "{headers}"
    );
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        error["error"],
        json!({"code": -32000, "message": "the server is serving 1 connections, its limit; try again shortly"})
    );
}

/// One JSON-RPC request over raw HTTP to `address`: the status and the answer.
async fn post(address: &str, request: Value) -> (u16, Value) {
    let request = request.to_string();
    let (status, _, body) = raw(
        address,
        &post_head(address, "", request.len()),
        request.as_bytes(),
    )
    .await;
    (status, serde_json::from_str(&body).unwrap())
}

#[tokio::test]
async fn a_tools_call_without_params_or_with_arguments_not_an_object_is_invalid_params() {
    let address = served(|http| http).await;
    let (_, answer) = post(
        &address,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}),
    )
    .await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "invalid params for `tools/call`: `params` with the tool's `name` are required"
    );
    let (_, answer) = post(
        &address,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "echo", "arguments": [1, 2]}}),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "invalid params for `tools/call`: invalid type: sequence, expected a map"
    );
    // Params that are not an object at all: the same error as over stdio.
    let (status, answer) = post(
        &address,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": [1, 2]}),
    )
    .await;
    assert_eq!((status, answer["id"].clone()), (400, json!(3)), "{answer}");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // A method the server does not have is still not found.
    let (_, answer) = post(
        &address,
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/frobnicate", "params": {}}),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
}

/// Sends a bare `initialize` (no session, no token) from `from`; its status.
async fn initialize_from(address: &str, from: std::net::IpAddr) -> u16 {
    let client = reqwest::Client::builder()
        .local_address(from)
        .build()
        .unwrap();
    client
        .post(format!("http://{address}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "flood", "version": "1"}},
        }))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_flood_of_sessions_from_one_address_does_not_lock_out_another() {
    let address = served(|http| http.sessions(8).max_sessions_per_peer(3)).await;
    let flooder: std::net::IpAddr = [127, 0, 0, 1].into();
    let mut statuses = Vec::new();
    for _ in 0..8 {
        statuses.push(initialize_from(&address, flooder).await);
    }
    assert_eq!(statuses, [200, 200, 200, 503, 503, 503, 503, 503]);
    // Another address (all of 127/8 is loopback on Linux) still gets sessions, up to its own bound.
    let other: std::net::IpAddr = [127, 0, 0, 2].into();
    for _ in 0..3 {
        assert_eq!(initialize_from(&address, other).await, 200);
    }
    assert_eq!(initialize_from(&address, other).await, 503);
}
