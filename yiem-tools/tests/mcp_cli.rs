//! `yiem mcp`, spawned and driven over stdio as an MCP client speaking newline-delimited JSON-RPC:
//! initialize, list, call, bad arguments, unknown tool, progress, cancellation.

mod common;

use common::{died, host_pid};

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use yiem_core::store::Dialect;
use yiem_tests::installed::{TS_SDK_VERSION, npm_package};

struct Client {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// Notifications seen while waiting for responses.
    notifications: Vec<Value>,
}

impl Client {
    /// Starts `yiem mcp --root <root> --allow bash` and completes the handshake (the client declares no
    /// elicitation, so `bash`, which needs approval, runs only because it is allowed).
    async fn start(root: &Path) -> (Self, Value) {
        Self::start_with(root, &["--allow", "bash"]).await
    }

    /// Starts `yiem mcp --root <root> <flags>` and completes the handshake.
    async fn start_with(root: &Path, flags: &[&str]) -> (Self, Value) {
        Self::start_declaring(root, flags, json!({})).await
    }

    /// Starts `yiem mcp --root <root> <flags>` and completes the handshake, declaring `capabilities`.
    async fn start_declaring(root: &Path, flags: &[&str], capabilities: Value) -> (Self, Value) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_yiem"))
            .args(["mcp", "--root"])
            .arg(root)
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("yiem mcp starts");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut client = Client {
            child,
            stdin,
            lines,
            notifications: Vec::new(),
        };
        let init = client
            .request(
                1,
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": capabilities,
                    "clientInfo": {"name": "yiem-test", "version": "0"}
                }),
            )
            .await;
        client.notify("notifications/initialized", json!({})).await;
        (client, init)
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next message on stdout; every line must be JSON-RPC.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("the server answers in time")
            .unwrap()
            .expect("the server is still running");
        let message: Value = serde_json::from_str(&line).expect("stdout carries only JSON-RPC");
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        message
    }

    /// Sends a request and returns its response, keeping notifications that arrive meanwhile.
    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.response(id).await
    }

    async fn response(&mut self, id: u64) -> Value {
        loop {
            let message = self.next().await;
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
            assert!(
                message.get("method").is_some(),
                "an unexpected response: {message}"
            );
            self.notifications.push(message);
        }
    }

    async fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .await
    }
}

fn text(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test]
async fn initialize_and_list_every_built_in_tool_in_the_mcp_dialect() {
    let root = tempfile::tempdir().unwrap();
    let (mut client, init) = Client::start(root.path()).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "yiem");
    assert_eq!(
        init["result"]["capabilities"]["tools"],
        json!({"listChanged": true})
    );

    let listing = client.request(2, "tools/list", json!({})).await;
    let tools = listing["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "bash",
            "edit",
            "get_time",
            "grep",
            "list_tools",
            "ls",
            "read",
            "write",
            "write_tool"
        ]
    );
    let read = tools.iter().find(|t| t["name"] == "read").unwrap();
    let expected = yiem_tools::read::read_tool()
        .definition(Dialect::Mcp)
        .unwrap()
        .clone();
    assert_eq!(read["inputSchema"], expected["inputSchema"]);
    assert_eq!(read["title"], "Read File");
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    let bash = tools.iter().find(|t| t["name"] == "bash").unwrap();
    assert_eq!(bash["annotations"]["destructiveHint"], true);
}

#[tokio::test]
async fn a_call_returns_the_tools_content() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "first line\nsecond line\n").unwrap();
    let (mut client, _) = Client::start(root.path()).await;
    let response = client.call(2, "read", json!({"path": "notes.txt"})).await;
    assert_eq!(response["result"]["isError"], false);
    let direct = std::process::Command::new(env!("CARGO_BIN_EXE_yiem"))
        .args([
            "tools",
            "call",
            "read",
            "--args",
            r#"{"path": "notes.txt"}"#,
            "--root",
        ])
        .arg(root.path())
        .output()
        .unwrap();
    assert_eq!(
        format!("{}\n", text(&response)),
        String::from_utf8(direct.stdout).unwrap()
    );
    assert!(text(&response).contains("first line"));
}

#[tokio::test]
async fn bad_arguments_are_an_error_result_with_the_model_facing_text() {
    let root = tempfile::tempdir().unwrap();
    let (mut client, _) = Client::start(root.path()).await;
    let response = client.call(2, "read", json!({"path": 7})).await;
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(
        text(&response),
        "invalid arguments for tool `read`: at `/path`: expected a string, got the number 7\nvalid properties: `path`, `offset`, `limit`"
    );
}

#[tokio::test]
async fn an_unknown_tool_is_an_invalid_params_error() {
    let root = tempfile::tempdir().unwrap();
    let (mut client, _) = Client::start(root.path()).await;
    let response = client.call(2, "reed", json!({})).await;
    assert_eq!(response["error"]["code"], -32602);
    let message = response["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("tool `reed` not found. Did you mean `read`? Available tools: bash, "),
        "{message}"
    );
}

#[tokio::test]
async fn a_call_with_a_progress_token_receives_progress() {
    let root = tempfile::tempdir().unwrap();
    let (mut client, _) = Client::start(root.path()).await;
    let response = client
        .request(
            2,
            "tools/call",
            json!({
                "name": "bash",
                "arguments": {"command": "for i in 1 2 3; do echo line$i; sleep 0.3; done"},
                "_meta": {"progressToken": "job-1"}
            }),
        )
        .await;
    assert_eq!(text(&response), "line1\nline2\nline3\n");
    let progress: Vec<&Value> = client
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert!(progress.len() >= 2, "{progress:?}");
    for (index, note) in progress.iter().enumerate() {
        assert_eq!(note["params"]["progressToken"], "job-1");
        assert_eq!(
            note["params"]["progress"].as_f64(),
            Some((index + 1) as f64),
            "progress counts up"
        );
    }
    assert!(
        progress[0]["params"]["message"]
            .as_str()
            .unwrap()
            .starts_with("line1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_stopped_and_the_server_stays_responsive() {
    let name = format!("yiem-mcp-cancelled-{}", std::process::id());
    let (_root, mut client, blocked) = with_a_blocked_call(&[], &name).await;
    client
        .notify(
            "notifications/cancelled",
            json!({"requestId": 7, "reason": "user pressed stop"}),
        )
        .await;
    let listing = client.request(8, "tools/list", json!({})).await;
    assert!(
        listing["result"]["tools"].is_array(),
        "the server still answers"
    );
    assert!(
        died(blocked).await,
        "the cancelled call's process {blocked} was killed"
    );
    // No response for the cancelled request: the next message answers a new request.
    let ping = client.request(9, "ping", json!({})).await;
    assert_eq!(ping["id"], 9);
    drop(client.stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), client.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(
        status.success(),
        "yiem mcp exits cleanly when the client hangs up"
    );
}

/// Starts `yiem mcp --root <a new root> <flags>` with a `bash` call blocked for good (on a FIFO nobody
/// writes to), in a process named `name`; returns the root, the client and that process's host pid.
async fn with_a_blocked_call(flags: &[&str], name: &str) -> (tempfile::TempDir, Client, u32) {
    let root = root_with_a_pipe();
    let flags = [&["--allow", "bash"], flags].concat();
    let (mut client, _) = Client::start_with(root.path(), &flags).await;
    client
        .send(json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": blocked_command(name)}}
        }))
        .await;
    let blocked = host_pid(name).await;
    (root, client, blocked)
}

/// A new root holding a FIFO named `pipe` that nobody writes to.
fn root_with_a_pipe() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let fifo = std::ffi::CString::new(root.path().join("pipe").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    root
}

/// A `bash` command that blocks for good on the root's `pipe`, in a process named `name`.
fn blocked_command(name: &str) -> String {
    format!("(exec -a {name} cat pipe) & wait")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_the_server_has_exited_after_its_client_hung_up_no_process_of_its_calls_runs() {
    // What the official TypeScript SDK's `close()` does: end stdin, then wait for the server to exit.
    // The promise is about that moment: no process of a call outlives the server's exit, not even for
    // the time the kernel takes to tear a killed process down (checked once, at once: no waiting).
    for round in 0..5 {
        let name = format!("yiem-mcp-hangup-{round}-{}", std::process::id());
        let (_root, client, blocked) = with_a_blocked_call(&[], &name).await;
        let Client {
            mut child, stdin, ..
        } = client;
        drop(stdin);
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("the server exits when its stdin closes (a hang guard)")
            .unwrap();
        assert!(status.success(), "{status:?}");
        assert!(
            common::is_dead(blocked),
            "round {round}: the call's process {blocked} still ran when the server had exited: {}",
            std::fs::read_to_string(format!("/proc/{blocked}/stat")).unwrap_or_default()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_leaves_no_command_running() {
    // SIGKILL gives yiem no chance to cancel anything: the command dies with it all the same, under
    // bubblewrap (which dies with its parent) and under Landlock (where the shell is yiem's own child).
    for sandbox in ["bubblewrap", "landlock"] {
        let name = format!("yiem-mcp-killed-{sandbox}-{}", std::process::id());
        let (_root, mut client, blocked) =
            with_a_blocked_call(&["--sandbox", sandbox], &name).await;
        client.child.start_kill().unwrap();
        client.child.wait().await.unwrap();
        assert!(
            died(blocked).await,
            "{sandbox}: the call's process {blocked} outlived the killed server"
        );
    }
}

#[tokio::test]
async fn a_tool_that_needs_approval_is_marked_and_refused_for_a_client_that_cannot_be_asked() {
    let root = tempfile::tempdir().unwrap();
    let (mut client, _) = Client::start_with(root.path(), &[]).await;
    let listed = client.request(2, "tools/list", json!({})).await;
    let write = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "write")
        .unwrap()
        .clone();
    assert_eq!(write["_meta"], json!({"yiem/needsApproval": true}));
    let refused = client
        .call(3, "write", json!({"path": "made.txt", "content": "x"}))
        .await;
    assert_eq!(refused["result"]["isError"], true);
    assert_eq!(
        text(&refused),
        "`write` needs a person's approval before it runs, and nobody can be asked: the MCP client did not declare the `elicitation` capability (form mode), so no person can be asked over this connection; it did not run. Tell the user; the server's operator can let it run without asking (`yiem mcp --allow write`, or `McpServer::allowed_tools`)"
    );
    assert!(!root.path().join("made.txt").exists(), "`write` ran");
}

#[tokio::test]
async fn a_call_cancelled_while_it_waits_for_approval_does_not_run_even_if_approved_after() {
    let root = tempfile::tempdir().unwrap();
    let (mut client, _) =
        Client::start_declaring(root.path(), &[], json!({"elicitation": {}})).await;
    client
        .send(json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "write", "arguments": {"path": "made.txt", "content": "x"}}
        }))
        .await;
    let question = client.next().await;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    client
        .notify(
            "notifications/cancelled",
            json!({"requestId": 7, "reason": "user pressed stop"}),
        )
        .await;
    client
        .send(json!({
            "jsonrpc": "2.0", "id": question["id"],
            "result": {"action": "accept", "content": {"approve": true}}
        }))
        .await;
    // No response for the cancelled call: the next message answers the ping.
    let ping = client.request(9, "ping", json!({})).await;
    assert_eq!(ping["id"], 9);
    // Once the server has exited, every call it started has ended.
    drop(client.stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), client.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    assert!(
        !root.path().join("made.txt").exists(),
        "`write` ran after its call was cancelled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdks_close_ends_the_server_and_every_process_of_its_calls() {
    // The official TypeScript SDK's `StdioClientTransport.close()` on a server with a call running: the
    // server exits by itself once its stdin ends (before the SDK's SIGTERM), and the call's process is gone
    // by then (checked once, at once).
    let npm = npm_package("@modelcontextprotocol/sdk", TS_SDK_VERSION);
    let root = root_with_a_pipe();
    let name = format!("yiem-mcp-ts-close-{}", std::process::id());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/node/mcp_stdio_close.mjs");
    let mut node = Command::new("node")
        .arg(script)
        .arg(npm)
        .arg(env!("CARGO_BIN_EXE_yiem"))
        .arg(root.path())
        .arg(blocked_command(&name))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let mut stdin = node.stdin.take().unwrap();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let said = |line: Option<String>| line.expect("the script says what happened");
    let hang_guard = Duration::from_secs(60);
    let started = tokio::time::timeout(hang_guard, lines.next_line()).await;
    assert_eq!(said(started.unwrap().unwrap()), "started");
    let blocked = host_pid(&name).await;
    stdin.write_all(b"close\n").await.unwrap();
    let ended = tokio::time::timeout(hang_guard, lines.next_line()).await;
    let ended: Value = serde_json::from_str(&said(ended.unwrap().unwrap())).unwrap();
    assert_eq!(
        ended,
        json!({"exitCode": 0, "signal": null}),
        "yiem mcp exits by itself when the SDK closes its stdin"
    );
    assert!(
        common::is_dead(blocked),
        "the call's process {blocked} still ran when the SDK's close() returned"
    );
    assert!(node.wait().await.unwrap().success());
}
