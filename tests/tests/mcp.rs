//! Serving tools over MCP: the `mcp-test-server` binary (src/bin) runs as a subprocess and is driven over
//! stdio, by rmcp's client and by hand-written JSON-RPC lines, with every response asserted exactly.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    Implementation, ProgressNotificationParam, ProtocolVersion, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceError, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdout, Command};
use tokio::sync::mpsc;

const SERVER: &str = env!("CARGO_BIN_EXE_mcp-test-server");

/// A client that hands every progress notification to the test.
struct Client {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("yiem-tests", "0.0.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

type Connected = (
    RunningService<RoleClient, Client>,
    mpsc::UnboundedReceiver<ProgressNotificationParam>,
);

/// Starts the server and completes the `initialize` handshake.
async fn connect() -> Connected {
    let (progress, received) = mpsc::unbounded_channel();
    let (transport, _stderr) = TokioChildProcess::builder(Command::new(SERVER))
        .stderr(Stdio::null())
        .spawn()
        .expect("the test server starts");
    let client = Client { progress }
        .serve(transport)
        .await
        .expect("the handshake completes");
    (client, received)
}

fn params(name: &'static str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object");
    };
    CallToolRequestParams::new(name).with_arguments(arguments)
}

/// Calls `name` and returns the result as it was on the wire.
async fn call(
    client: &RunningService<RoleClient, Client>,
    name: &'static str,
    args: Value,
) -> Value {
    let result = client
        .call_tool(params(name, args))
        .await
        .expect("the call gets a result");
    serde_json::to_value(result).unwrap()
}

#[tokio::test]
async fn initialize_names_the_server_and_offers_tools() {
    let (client, _) = connect().await;
    let info = client.peer_info().expect("the server answered initialize");
    assert_eq!(
        serde_json::to_value(&*info).unwrap(),
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"logging": {}, "tools": {"listChanged": true}},
            "serverInfo": {"name": "yiem-test", "version": "0.0.1"}
        })
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn tools_list_gives_every_tool_in_the_mcp_dialect_sorted_by_name() {
    let (client, _) = connect().await;
    let listed = client.list_tools(None).await.unwrap();
    assert_eq!(listed.next_cursor, None);
    let tools = serde_json::to_value(&listed.tools).unwrap();
    assert_eq!(
        tools,
        json!([
            {
                "name": "add",
                "title": "Add",
                "description": "Add two integers.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "a": {"type": "integer", "format": "int64", "description": "The first addend."},
                        "b": {"type": "integer", "format": "int64", "description": "The second addend."}
                    },
                    "required": ["a", "b"]
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {"sum": {"type": "integer", "format": "int64", "description": "`a + b`."}},
                    "required": ["sum"]
                },
                "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
            },
            {
                "name": "count_up",
                "title": "Count Up",
                "description": "Count up, reporting each step as progress.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "steps": {
                            "type": "integer",
                            "format": "uint32",
                            "minimum": 0,
                            "description": "How many steps to count."
                        }
                    },
                    "required": ["steps"]
                }
            },
            {
                "name": "echo",
                "title": "Echo Text",
                "description": "Send the text back unchanged.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "The text to send back."}},
                    "required": ["text"]
                }
            },
            {
                "name": "exclusive_step",
                "title": "Exclusive Step",
                "description": "Hold a directory alone for a while; sequential, so no other call runs meanwhile.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "markers": {
                            "type": "string",
                            "description": "A directory shared by the calls that must not overlap."
                        },
                        "millis": {
                            "type": "integer",
                            "format": "uint64",
                            "minimum": 0,
                            "description": "How long to hold it."
                        }
                    },
                    "required": ["markers", "millis"]
                }
            },
            {
                "name": "forbidden",
                "title": "Forbidden",
                "description": "Always refused by the server's `before_tool_call` hook.",
                "inputSchema": {"type": "object", "properties": {}}
            },
            {
                "name": "learn",
                "title": "Learn",
                "description": "Add the tool `greet` to this server; the client is told that the list changed.",
                "inputSchema": {"type": "object", "properties": {}}
            },
            {
                "name": "list_tools",
                "title": "List Tools",
                "description": "List the tools available to you, with their labels and descriptions. Call it to \
                                discover tools and to check a name is free before creating a new tool.",
                "inputSchema": {"type": "object", "properties": {}},
                "annotations": {
                    "readOnlyHint": true,
                    "destructiveHint": false,
                    "idempotentHint": true,
                    "openWorldHint": false
                }
            },
            {
                "name": "media",
                "title": "Media",
                "description": "A sound, a file and a link, with a caption: every kind of block beside text and images.",
                "inputSchema": {"type": "object", "properties": {}}
            },
            {
                "name": "pixel",
                "title": "Pixel",
                "description": "A one-pixel PNG, with a caption.",
                "inputSchema": {"type": "object", "properties": {}}
            },
            {
                "name": "slow_job",
                "title": "Slow Job",
                "description": "Work for a while, leaving marker files that show how the call ended.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "markers": {
                            "type": "string",
                            "description": "A directory for marker files: `started` when the call begins, \
                                            `finished` if it runs to its end,\n`cancelled` if it is stopped \
                                            after its token was cancelled."
                        },
                        "millis": {
                            "type": "integer",
                            "format": "uint64",
                            "minimum": 0,
                            "description": "How long to work before finishing."
                        }
                    },
                    "required": ["markers", "millis"]
                },
                "annotations": {"destructiveHint": false}
            }
        ])
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_call_returns_the_tools_text() {
    let (client, _) = connect().await;
    assert_eq!(
        call(&client, "echo", json!({"text": "grüß dich"})).await,
        json!({"content": [{"type": "text", "text": "grüß dich"}], "isError": false})
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_json_result_is_structured_content_plus_its_json_text() {
    let (client, _) = connect().await;
    assert_eq!(
        call(&client, "add", json!({"a": 2, "b": 40})).await,
        json!({
            "content": [{"type": "text", "text": "{\"sum\":42}"}],
            "structuredContent": {"sum": 42},
            "isError": false
        })
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn images_become_mcp_image_content() {
    let (client, _) = connect().await;
    assert_eq!(
        call(&client, "pixel", json!({})).await,
        json!({
            "content": [
                {"type": "text", "text": "a 1x1 PNG"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
            ],
            "isError": false
        })
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn audio_resources_and_links_become_their_mcp_content() {
    let (client, _) = connect().await;
    assert_eq!(
        call(&client, "media", json!({})).await,
        json!({
            "content": [
                {"type": "text", "text": "a sound, a note and a link"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///notes/today.md", "text": "# Today"}},
                {"type": "resource", "resource": {
                    "uri": "file:///notes/today.pdf", "mimeType": "application/pdf", "blob": "JVBERg=="
                }},
                {"type": "resource_link", "uri": "file:///notes/yesterday.md", "name": "yesterday.md"}
            ],
            "isError": false
        })
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn bad_arguments_are_an_error_result_with_the_text_the_model_would_see() {
    let (client, _) = connect().await;
    assert_eq!(
        call(&client, "add", json!({"a": "two", "b": 3})).await,
        json!({
            "content": [{
                "type": "text",
                "text": "invalid arguments for tool `add`: at `/a`: expected an integer, got the string \"two\"\n\
                         valid properties: `a`, `b`"
            }],
            "isError": true
        })
    );
    assert_eq!(
        call(&client, "echo", json!({})).await,
        json!({
            "content": [{
                "type": "text",
                "text": "invalid arguments for tool `echo`: missing required property `text` (expected a \
                         string)\nvalid properties: `text`"
            }],
            "isError": true
        })
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_unknown_tool_is_an_invalid_params_error() {
    let (client, _) = connect().await;
    let error = client
        .call_tool(params("ad", json!({"a": 1, "b": 2})))
        .await
        .unwrap_err();
    let ServiceError::McpError(error) = error else {
        panic!("expected a JSON-RPC error, got {error:?}");
    };
    assert_eq!(
        serde_json::to_value(&error).unwrap(),
        json!({
            "code": -32602,
            "message": "tool `ad` not found. Did you mean `add`? Available tools: add, count_up, echo, \
                        exclusive_step, forbidden, learn, list_tools, media, pixel, slow_job"
        })
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn calls_go_through_the_servers_hooks() {
    let (client, _) = connect().await;
    assert_eq!(
        call(&client, "forbidden", json!({})).await,
        json!({
            "content": [{"type": "text", "text": "`forbidden` is refused by the server's policy"}],
            "isError": true
        })
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn each_update_is_a_progress_notification_before_the_result() {
    let (client, mut progress) = connect().await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params(
        "count_up",
        json!({"steps": 3}),
    )));
    let handle = client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let token = serde_json::to_value(&handle.progress_token).unwrap();
    let ServerResult::CallToolResult(result) = handle.await_response().await.unwrap() else {
        panic!("expected a tools/call result");
    };
    assert_eq!(
        serde_json::to_value(result).unwrap(),
        json!({"content": [{"type": "text", "text": "counted to 3"}], "isError": false})
    );
    let mut notifications = Vec::new();
    for _ in 0..3 {
        let notification = tokio::time::timeout(Duration::from_secs(10), progress.recv())
            .await
            .expect("a progress notification arrives")
            .unwrap();
        notifications.push(serde_json::to_value(notification).unwrap());
    }
    assert_eq!(
        notifications,
        [
            json!({"progressToken": token, "progress": 1.0, "message": "step 1 of 3"}),
            json!({"progressToken": token, "progress": 2.0, "message": "step 2 of 3"}),
            json!({"progressToken": token, "progress": 3.0, "message": "step 3 of 3"}),
        ]
    );
    // Hung up, the client's handler is dropped and its channel closes: whatever arrived after the
    // result is left in it, and there is nothing. (The order on the wire is checked raw, in
    // `stdout_carries_only_protocol_in_order_and_a_cancelled_call_gets_no_response`.)
    client.cancel().await.unwrap();
    let after = tokio::time::timeout(Duration::from_secs(10), progress.recv())
        .await
        .expect("the client's handler is dropped once it hangs up");
    assert!(after.is_none(), "progress after the result: {after:?}");
}

#[tokio::test]
async fn sequential_tools_never_overlap_other_calls() {
    let markers = marker_dir("sequential");
    let (client, _) = connect().await;
    let step = || {
        call(
            &client,
            "exclusive_step",
            json!({"markers": markers, "millis": 150}),
        )
    };
    // Sent at once, each step holds the marker directory alone: a step that found it held (a call
    // running beside another) answers "overlapped another call" instead.
    let results = tokio::join!(step(), step(), step());
    let ran_alone = json!({"content": [{"type": "text", "text": "ran alone"}], "isError": false});
    assert_eq!(results, (ran_alone.clone(), ran_alone.clone(), ran_alone));
    client.cancel().await.unwrap();
    std::fs::remove_dir_all(&markers).unwrap();
}

/// A fresh, empty directory for one test's marker files.
fn marker_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("yiem-mcp-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Waits up to ten seconds for `path` to exist.
async fn appears(path: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// How long `slow_job` works in the cancellation tests: far past any wait of theirs, so the job ends
/// only by being cancelled.
const JOB_MILLIS: u64 = 600_000;

#[tokio::test]
async fn a_cancelled_call_stops_and_the_server_keeps_serving() {
    let markers = marker_dir("rmcp-cancel");
    let (client, _) = connect().await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params(
        "slow_job",
        json!({"markers": markers, "millis": JOB_MILLIS}),
    )));
    let handle = client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    assert!(appears(&markers.join("started")).await, "the job started");
    handle
        .cancel(Some("the user pressed stop".into()))
        .await
        .unwrap();
    assert!(
        appears(&markers.join("cancelled")).await,
        "the job was stopped with its token cancelled"
    );

    // The server still answers, and the job never runs to its end.
    assert_eq!(
        call(&client, "echo", json!({"text": "still here"})).await,
        json!({"content": [{"type": "text", "text": "still here"}], "isError": false})
    );
    // `cancelled` is written when the job is dropped unfinished with its token cancelled, so it can no
    // longer finish: no need to wait out its time.
    assert!(!markers.join("finished").exists(), "the job did not finish");
    client.cancel().await.unwrap();
    std::fs::remove_dir_all(&markers).unwrap();
}

/// The server driven by hand: JSON-RPC lines in, every stdout line read back.
struct RawServer {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl RawServer {
    fn start() -> Self {
        let mut child = Command::new(SERVER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the test server starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        RawServer {
            child,
            stdin,
            stdout,
        }
    }

    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The next stdout line, which must be a JSON-RPC message.
    async fn receive(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.stdout.next_line())
            .await
            .expect("the server answers in time")
            .unwrap()
            .expect("stdout is still open");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|error| panic!("stdout carried a non-JSON line ({error}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC: {line}");
        message
    }
}

#[tokio::test]
async fn stdout_carries_only_protocol_in_order_and_a_cancelled_call_gets_no_response() {
    let markers = marker_dir("raw-cancel");
    let mut server = RawServer::start();
    server
        .send(json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "by-hand", "version": "1"}
            }
        }))
        .await;
    assert_eq!(
        server.receive().await,
        json!({
            "jsonrpc": "2.0", "id": 1,
            "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"logging": {}, "tools": {"listChanged": true}},
                "serverInfo": {"name": "yiem-test", "version": "0.0.1"}
            }
        })
    );
    server
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;

    server
        .send(json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "slow_job", "arguments": {"markers": markers, "millis": JOB_MILLIS}}
        }))
        .await;
    assert!(appears(&markers.join("started")).await, "the job started");
    server
        .send(json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 2, "reason": "changed my mind"}
        }))
        .await;
    assert!(appears(&markers.join("cancelled")).await, "the job stopped");

    // Progress for a string token, all of it before the result.
    server
        .send(json!({
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "count_up", "arguments": {"steps": 2}, "_meta": {"progressToken": "count"}}
        }))
        .await;
    let mut messages = Vec::new();
    for _ in 0..3 {
        messages.push(server.receive().await);
    }
    assert_eq!(
        messages,
        [
            json!({
                "jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": "count", "progress": 1.0, "message": "step 1 of 2"}
            }),
            json!({
                "jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": "count", "progress": 2.0, "message": "step 2 of 2"}
            }),
            json!({
                "jsonrpc": "2.0", "id": 3,
                "result": {"content": [{"type": "text", "text": "counted to 2"}], "isError": false}
            }),
        ]
    );

    // Without a progress token, updates stay inside the server.
    server
        .send(json!({
            "jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "count_up", "arguments": {"steps": 2}}
        }))
        .await;
    assert_eq!(
        server.receive().await,
        json!({
            "jsonrpc": "2.0", "id": 4,
            "result": {"content": [{"type": "text", "text": "counted to 2"}], "isError": false}
        })
    );

    // Hang up and read what is left: nothing, not even a result for call 2 (its job was dropped
    // unfinished, as its `cancelled` marker says, so it has none to give).
    let RawServer {
        mut child,
        stdin,
        mut stdout,
    } = server;
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server exits when its client hangs up")
        .unwrap();
    assert!(status.success(), "the server exits cleanly: {status}");
    assert_eq!(stdout.next_line().await.unwrap(), None, "no more output");
    assert!(!markers.join("finished").exists(), "the job did not finish");

    // Logs went to stderr.
    let mut logs = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut logs)
        .await
        .unwrap();
    assert!(logs.contains("client initialized"), "logs: {logs}");
    std::fs::remove_dir_all(&markers).unwrap();
}

impl RawServer {
    async fn send_line(&mut self, line: &[u8]) {
        self.stdin.write_all(line).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn initialized() -> Self {
        let mut server = RawServer::start();
        server
            .send(json!({
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "by-hand", "version": "1"}}
            }))
            .await;
        assert_eq!(server.receive().await["id"], 1);
        server
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        server
    }
}

#[tokio::test]
async fn requests_rmcp_cannot_read_get_a_json_rpc_error_instead_of_silence() {
    let mut server = RawServer::initialized().await;
    server.send_line(b"{this is not json").await;
    assert_eq!(
        server.receive().await["error"]["code"],
        -32700,
        "not JSON: a parse error"
    );
    server
        .send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": [1, 2]}))
        .await;
    let answer = server.receive().await;
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid params for `tools/list`: "),
        "{answer}"
    );
    server
        .send(json!({"jsonrpc": "2.0", "id": "s", "params": {}}))
        .await;
    let answer = server.receive().await;
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!("s"), json!(-32600))
    );
    // An unreadable notification gets no answer; the next request is answered as usual.
    server
        .send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 5}))
        .await;
    server
        .send(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}))
        .await;
    assert_eq!(
        server.receive().await,
        json!({"jsonrpc": "2.0", "id": 8, "result": {}})
    );
}

#[tokio::test]
async fn a_tools_call_without_params_or_with_arguments_not_an_object_is_invalid_params() {
    let mut server = RawServer::initialized().await;
    server
        .send(json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call"}))
        .await;
    let answer = server.receive().await;
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": 11, "error": {"code": -32602, "message":
            "invalid params for `tools/call`: `params` with the tool's `name` are required"}})
    );
    server
        .send(json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call",
                     "params": {"name": "echo", "arguments": [1, 2]}}))
        .await;
    let answer = server.receive().await;
    assert_eq!(answer["id"], 12);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
}

#[tokio::test]
async fn a_request_over_the_size_limit_gets_an_error_with_its_id_and_the_server_keeps_serving() {
    let mut server = RawServer::initialized().await;
    // Just over the 16 MiB limit of one line, with the id first (as rmcp writes it) and last (as the
    // TypeScript SDK does), and 20 MB; then a notification, which has no id.
    let arguments = |size: usize| {
        format!(
            "\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"{}\",\"id\":0}}}}",
            "x".repeat(size)
        )
    };
    let lines = [
        (
            format!("{{\"jsonrpc\":\"2.0\",\"id\":9,{}}}", arguments(16 << 20)),
            json!(9),
        ),
        (
            format!(
                "{{\"jsonrpc\":\"2.0\",{},\"id\":\"last\"}}",
                arguments(20_000_000)
            ),
            json!("last"),
        ),
        (
            format!("{{\"jsonrpc\":\"2.0\",{}}}", arguments(17 << 20)),
            Value::Null,
        ),
    ];
    for (line, id) in lines {
        server.send_line(line.as_bytes()).await;
        let answer = server.receive().await;
        assert_eq!(answer["id"], id);
        assert_eq!(answer["error"]["code"], -32600);
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .ends_with("the limit is 16777216 bytes"),
            "{answer}"
        );
    }
    server
        .send(json!({"jsonrpc": "2.0", "id": 10, "method": "ping"}))
        .await;
    assert_eq!(server.receive().await["id"], 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_clients_input_ends_running_calls_are_cancelled_and_serve_returns() {
    use yiem_core::{
        mcp::McpServer,
        store::ToolStore,
        tool::{AgentTool, ToolContext},
    };
    let (cancelled_tx, cancelled_rx) = tokio::sync::oneshot::channel::<()>();
    let cancelled_tx = std::sync::Mutex::new(Some(cancelled_tx));
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = std::sync::Mutex::new(Some(started_tx));
    let waits = AgentTool::builder("waits")
        .description("Waits until it is cancelled.")
        .parallel()
        .handler(move |ctx: ToolContext, _args: Value| {
            let cancelled = cancelled_tx.lock().unwrap().take();
            let started = started_tx.lock().unwrap().take();
            async move {
                // Says the call ended, whether it saw its token cancelled or the server dropped it
                // while shutting down (which way wins is rmcp's scheduling; both end the call).
                struct Ended(Option<tokio::sync::oneshot::Sender<()>>);
                impl Drop for Ended {
                    fn drop(&mut self) {
                        if let Some(ended) = self.0.take() {
                            let _ = ended.send(());
                        }
                    }
                }
                let _ended = Ended(cancelled);
                if let Some(started) = started {
                    let _ = started.send(());
                }
                ctx.cancelled().await;
                "cancelled"
            }
        })
        .build()
        .unwrap();
    let store = ToolStore::new("in-process");
    store.register(waits).unwrap();
    let (client, server) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server);
    let serving = tokio::spawn(McpServer::new(store).serve(server_read, server_write));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let send = |message: Value| format!("{message}\n");
    client_write
        .write_all(
            send(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}}}),
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    lines.next_line().await.unwrap().unwrap();
    for message in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "waits"}}),
    ] {
        client_write
            .write_all(send(message).as_bytes())
            .await
            .unwrap();
    }
    // The client hangs up once the call is running.
    tokio::time::timeout(Duration::from_secs(10), started_rx)
        .await
        .expect("the call started")
        .unwrap();
    client_write.shutdown().await.unwrap();
    drop(client_write);
    // The time limits only keep a server that waits for the call (it never ends by itself) from
    // hanging the suite.
    tokio::time::timeout(Duration::from_secs(10), cancelled_rx)
        .await
        .expect("the running call was cancelled")
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serve returned")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn the_server_says_the_revisions_it_speaks_and_a_client_of_each_earlier_one_calls_a_tool() {
    let mut server = RawServer::start();
    server
        .send(json!({
            "jsonrpc": "2.0", "id": 1, "method": "server/discover",
            "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }},
        }))
        .await;
    let discovered = server.receive().await;
    assert_eq!(
        discovered["result"]["supportedVersions"],
        json!(yiem_core::mcp::PROTOCOL_VERSIONS)
    );
    // 2026-07-28 is spoken by the Python SDK in mcp_asking.rs; each earlier one here, by hand.
    for version in &yiem_core::mcp::PROTOCOL_VERSIONS[..4] {
        let mut server = RawServer::start();
        server
            .send(json!({
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {},
                           "clientInfo": {"name": "by-hand", "version": "1"}},
            }))
            .await;
        let initialized = server.receive().await;
        assert_eq!(initialized["result"]["protocolVersion"], *version);
        server
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        server
            .send(json!({
                "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": version}},
            }))
            .await;
        let called = server.receive().await;
        assert_eq!(
            called["result"]["content"][0]["text"], *version,
            "{version}"
        );
    }
}

#[tokio::test]
async fn an_rmcp_client_whose_call_is_over_the_size_limit_sees_it_fail_instead_of_waiting() {
    let (client, _) = connect().await;
    let huge = json!({"text": "x".repeat(16 << 20)});
    let failed = tokio::time::timeout(
        Duration::from_secs(120),
        client.call_tool(params("echo", huge)),
    )
    .await
    .expect("the call is answered (a hang guard, not a measure)");
    let error = failed.expect_err("the call fails").to_string();
    assert!(error.contains("the limit is 16777216 bytes"), "{error}");
    // The connection still serves.
    assert_eq!(
        call(&client, "echo", json!({"text": "hi"})).await["content"][0]["text"],
        "hi"
    );
}
