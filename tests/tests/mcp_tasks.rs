//! MCP tasks (SEP-2663) on a real `McpServer`, driven by hand over JSON-RPC lines: a task tool's call
//! is answered with a task whose status and result are read by its id; a cancelled task's call stops;
//! approval is asked inside the task; bad ids and undeclared clients get the protocol's errors.
//! (The conformance suite's `tasks-*` scenarios drive the 2026-07-28 revision's rounds over HTTP, see
//! `.ci/mcp-conformance-server`.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use tokio::sync::{Notify, mpsc};
use yiem_core::mcp::McpServer;
use yiem_core::store::ToolStore;
use yiem_core::tool::{AgentTool, TaskSupport, ToolContext};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// One client connection to the server, by hand.
struct Connection {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    write: WriteHalf<DuplexStream>,
    next_id: u64,
    /// Notifications read while waiting for a response.
    notifications: Vec<Value>,
}

impl Connection {
    /// A connection that declares `capabilities` at `initialize` (2025-11-25).
    async fn open(server: &McpServer, capabilities: Value) -> Connection {
        let (client, serving) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(serving);
        tokio::spawn(server.clone().serve(server_read, server_write));
        let (read, write) = tokio::io::split(client);
        let mut connection = Connection {
            lines: BufReader::new(read).lines(),
            write,
            next_id: 1,
            notifications: Vec::new(),
        };
        let initialized = connection
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                       "clientInfo": {"name": "by-hand", "version": "1"}}),
            )
            .await;
        assert!(initialized.get("result").is_some(), "{initialized}");
        connection
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        connection
    }

    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.write.write_all(line.as_bytes()).await.unwrap();
    }

    /// The next message from the server (a bound against a hang, not an ordering).
    async fn receive(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("the server answers in time")
            .unwrap()
            .expect("the connection is open");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a request and reads up to its response (what else comes is kept or answered by `asked`).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let message = self.receive().await;
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
            assert!(
                message.get("id").is_none(),
                "a request from the server nobody expected: {message}"
            );
            self.notifications.push(message);
        }
    }

    /// Calls `tool` (no arguments): the server's answer, a task when it made one.
    async fn call(&mut self, tool: &str) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": {}}))
            .await
    }

    /// Reads until a `notifications/tasks` says task `id` has `status`.
    async fn status_notified(&mut self, id: &str, status: &str) -> Value {
        let said = |message: &Value| {
            message["method"] == "notifications/tasks"
                && message["params"]["taskId"] == id
                && message["params"]["status"] == status
        };
        if let Some(found) = self.notifications.iter().find(|message| said(message)) {
            return found.clone();
        }
        loop {
            let message = self.receive().await;
            if said(&message) {
                return message;
            }
        }
    }
}

/// A tool that opens the gate it was given a count of times, as a task.
fn gated(
    name: &str,
    support: TaskSupport,
    started: mpsc::UnboundedSender<()>,
    gate: Arc<Notify>,
) -> AgentTool {
    AgentTool::builder(name)
        .description("Wait for the gate, then answer.")
        .task(support)
        // A sequential tool's running task would hold every other call back.
        .parallel()
        .handler(move |_ctx: ToolContext, _args: Value| {
            let started = started.clone();
            let gate = Arc::clone(&gate);
            async move {
                let _ = started.send(());
                gate.notified().await;
                "done"
            }
        })
        .build()
        .unwrap()
}

fn with_tasks() -> Value {
    json!({"extensions": {TASKS: {}}, "elicitation": {}})
}

fn server_of(tools: Vec<AgentTool>) -> McpServer {
    let store = ToolStore::new("tasks");
    for tool in tools {
        store.register(tool).unwrap();
    }
    McpServer::new(store)
}

/// A server of one gated tool, `report`: its starts, and its gate.
fn one_gated(support: TaskSupport) -> (McpServer, mpsc::UnboundedReceiver<()>, Arc<Notify>) {
    let (started, starts) = mpsc::unbounded_channel();
    let gate = Arc::new(Notify::new());
    let server = server_of(vec![gated("report", support, started, Arc::clone(&gate))]);
    (server, starts, gate)
}

#[tokio::test]
async fn a_task_tools_call_is_a_task_whose_status_and_result_are_read_by_its_id() {
    let (server, mut starts, gate) = one_gated(TaskSupport::Optional);
    let mut client = Connection::open(&server, with_tasks()).await;

    let created = client.call("report").await;
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created}");
    assert_eq!(task["status"], "working");
    let id = task["taskId"].as_str().unwrap().to_owned();
    starts.recv().await.unwrap();

    // Before it ends: working, and no result yet.
    let working = client.request("tasks/get", json!({"taskId": id})).await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    assert!(working["result"].get("result").is_none(), "{working}");

    gate.notify_one();
    let notified = client.status_notified(&id, "completed").await;
    assert_eq!(notified["params"]["result"]["content"][0]["text"], "done");
    let done = client.request("tasks/get", json!({"taskId": id})).await;
    assert_eq!(done["result"]["status"], "completed");
    assert_eq!(done["result"]["result"]["content"][0]["text"], "done");
    assert_eq!(done["result"]["result"]["isError"], false);
}

#[tokio::test]
async fn a_cancelled_tasks_call_stops_and_its_side_effect_with_it() {
    let effects = Arc::new(AtomicUsize::new(0));
    let (started, mut starts) = mpsc::unbounded_channel();
    let (stopped, mut stops) = mpsc::unbounded_channel::<()>();
    let gate = Arc::new(Notify::new());
    let tool = {
        let effects = Arc::clone(&effects);
        let gate = Arc::clone(&gate);
        AgentTool::builder("copy")
            .description("Copy, one step per opening of the gate.")
            .task(TaskSupport::Optional)
            .handler(move |_ctx: ToolContext, _args: Value| {
                let (effects, gate, started) =
                    (Arc::clone(&effects), Arc::clone(&gate), started.clone());
                // Dropped with the call's future: says the call stopped.
                let stop = scopeguard(stopped.clone());
                async move {
                    let _stop = stop;
                    let _ = started.send(());
                    loop {
                        gate.notified().await;
                        if effects.fetch_add(1, Ordering::SeqCst) == usize::MAX {
                            return "never";
                        }
                    }
                }
            })
            .build()
            .unwrap()
    };
    let server = server_of(vec![tool]);
    let mut client = Connection::open(&server, with_tasks()).await;
    let created = client.call("copy").await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    starts.recv().await.unwrap();

    let ack = client.request("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    tokio::time::timeout(Duration::from_secs(20), stops.recv())
        .await
        .expect("the cancelled call stops")
        .expect("the call stopped");
    gate.notify_waiters();
    gate.notify_one();
    assert_eq!(
        effects.load(Ordering::SeqCst),
        0,
        "the copy went on after its cancel"
    );

    let cancelled = client.request("tasks/get", json!({"taskId": id})).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert!(
        cancelled["result"].get("result").is_none(),
        "a cancelled task has no result"
    );
    // Cancelling again is the same empty ack; the task stays cancelled.
    let again = client.request("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(again["result"], json!({"resultType": "complete"}));
}

/// Sends on `stopped` when dropped.
fn scopeguard(stopped: mpsc::UnboundedSender<()>) -> impl Send + 'static {
    struct Guard(mpsc::UnboundedSender<()>);
    impl Drop for Guard {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    Guard(stopped)
}

#[tokio::test]
async fn a_task_whose_tool_needs_approval_asks_the_client_and_runs_once_approved() {
    let runs = Arc::new(AtomicUsize::new(0));
    let tool = {
        let runs = Arc::clone(&runs);
        AgentTool::builder("deploy")
            .description("Deploy.")
            .task(TaskSupport::Required)
            .needs_approval()
            .handler(move |_ctx: ToolContext, _args: Value| {
                let runs = Arc::clone(&runs);
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    "deployed"
                }
            })
            .build()
            .unwrap()
    };
    let server = server_of(vec![tool]);
    let mut client = Connection::open(&server, with_tasks()).await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                     "params": {"name": "deploy", "arguments": {}}}))
        .await;
    // The task first, then the approval question from inside it.
    let mut id = None;
    let question = loop {
        let message = client.receive().await;
        if message["id"] == 50 {
            assert_eq!(message["result"]["resultType"], "task", "{message}");
            id = Some(message["result"]["taskId"].as_str().unwrap().to_owned());
        } else if message["method"] == "elicitation/create" {
            break message;
        }
    };
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "it ran before it was approved"
    );
    let id = match id {
        Some(id) => id,
        None => loop {
            let message = client.receive().await;
            if message["id"] == 50 {
                break message["result"]["taskId"].as_str().unwrap().to_owned();
            }
        },
    };
    let waiting = client.request("tasks/get", json!({"taskId": id})).await;
    assert_eq!(waiting["result"]["status"], "working", "{waiting}");
    client
        .send(json!({"jsonrpc": "2.0", "id": question["id"],
                     "result": {"action": "accept", "content": {"approve": true}}}))
        .await;
    let done = client.status_notified(&id, "completed").await;
    assert_eq!(done["params"]["result"]["content"][0]["text"], "deployed");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn bad_task_ids_and_undeclared_clients_get_the_protocols_errors() {
    let (started, mut starts) = mpsc::unbounded_channel();
    let (optional_started, mut optional_starts) = mpsc::unbounded_channel();
    let gate = Arc::new(Notify::new());
    let optional_gate = Arc::new(Notify::new());
    let server = server_of(vec![
        gated("report", TaskSupport::Required, started, Arc::clone(&gate)),
        gated(
            "optional",
            TaskSupport::Optional,
            optional_started,
            Arc::clone(&optional_gate),
        ),
    ]);
    let mut owner = Connection::open(&server, with_tasks()).await;
    let created = owner.call("report").await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    starts.recv().await.unwrap();

    // A task id that never existed.
    for method in ["tasks/get", "tasks/cancel"] {
        let unknown = owner
            .request(method, json!({"taskId": "no-such-task"}))
            .await;
        assert_eq!(unknown["error"]["code"], -32602, "{method}: {unknown}");
        assert!(
            unknown["error"]["message"]
                .as_str()
                .unwrap()
                .contains("no task `no-such-task`"),
            "{unknown}"
        );
    }
    // The task of another connection is unknown to this one, for reading, answering and cancelling.
    let mut other = Connection::open(&server, with_tasks()).await;
    for (method, params) in [
        ("tasks/get", json!({"taskId": id})),
        ("tasks/update", json!({"taskId": id, "inputResponses": {}})),
        ("tasks/cancel", json!({"taskId": id})),
    ] {
        let foreign = other.request(method, params).await;
        assert_eq!(foreign["error"]["code"], -32602, "{method}: {foreign}");
    }
    let still = owner.request("tasks/get", json!({"taskId": id})).await;
    assert_eq!(
        still["result"]["status"], "working",
        "another connection's cancel took"
    );

    // A client that did not declare the extension: a required task tool is -32021, naming it; an
    // optional one is an ordinary call; the task methods are -32021.
    let mut plain = Connection::open(&server, json!({})).await;
    let refused = plain.call("report").await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS],
        json!({})
    );
    let asked = plain.request("tasks/get", json!({"taskId": id})).await;
    assert_eq!(asked["error"]["code"], -32021, "{asked}");
    let (call, opened) = tokio::join!(
        plain.request("tools/call", json!({"name": "optional", "arguments": {}})),
        async {
            optional_starts.recv().await.unwrap();
            optional_gate.notify_one();
        }
    );
    let () = opened;
    assert_eq!(call["result"]["content"][0]["text"], "done", "{call}");
    assert!(call["result"].get("taskId").is_none());
}

/// A store that says which tasks it was given, over the default one; its clones share both.
#[derive(Clone, Default)]
struct Watched {
    tasks: Arc<yiem_core::mcp::MemoryTaskStore>,
    created: Arc<std::sync::Mutex<Vec<String>>>,
}

impl yiem_core::mcp::TaskStore for Watched {
    fn save(
        &self,
        task: yiem_core::mcp::StoredTask,
    ) -> futures::future::BoxFuture<'_, Result<(), yiem_core::mcp::TaskStoreError>> {
        let mut created = self.created.lock().unwrap();
        if !created.iter().any(|id| id == task.id()) {
            created.push(task.id().to_owned());
        }
        drop(created);
        self.tasks.save(task)
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Option<yiem_core::mcp::StoredTask>, yiem_core::mcp::TaskStoreError>,
    > {
        self.tasks.load(id)
    }
}

/// `server` over stateless HTTP on loopback: its URL, and what stops it when dropped.
async fn http(server: McpServer) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(
        yiem_core::mcp::McpHttpServer::new(server).serve(listener, async {
            let _ = stopped.await;
        }),
    );
    (url, stop)
}

async fn remote_tool(client: &yiem_core::mcp::McpClient, name: &str) -> AgentTool {
    client
        .tools()
        .await
        .unwrap()
        .into_iter()
        .find(|tool| tool.name() == name)
        .unwrap()
}

#[tokio::test]
async fn mcp_client_follows_a_task_the_server_made_of_its_call_to_the_result() {
    let store = Watched::default();
    let (server, mut starts, gate) = one_gated(TaskSupport::Required);
    let server = server.task_store(store.clone());
    let (url, _stop) = http(server).await;
    let client = yiem_core::mcp::McpClient::http(&url)
        .name("reports")
        .connect()
        .await
        .unwrap();
    let tool = remote_tool(&client, "report").await;

    let calling = tokio::spawn(async move { tool.execute("c1", json!({})).await });
    starts.recv().await.unwrap();
    assert_eq!(
        store.created.lock().unwrap().len(),
        1,
        "the call was not made a task"
    );
    gate.notify_one();
    let result = calling.await.unwrap();
    assert!(!result.is_error, "{}", result.text_content());
    assert_eq!(result.text_content(), "done");
}

#[tokio::test]
async fn a_client_out_of_time_names_the_task_and_another_client_picks_it_up_by_its_id() {
    let (server, mut starts, gate) = one_gated(TaskSupport::Optional);
    let (url, _stop) = http(server).await;
    let first = yiem_core::mcp::McpClient::http(&url)
        .name("reports")
        .call_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    let tool = remote_tool(&first, "report").await;
    // The gate stays shut until the call is over: it runs out of time, whatever the machine's speed.
    let given_up = tool.execute("c1", json!({})).await;
    starts.recv().await.unwrap();
    assert!(given_up.is_error);
    let text = given_up.text_content();
    let id = text
        .split("task `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no task named: {text}"))
        .to_owned();
    assert!(text.contains("McpClient::task_result"), "{text}");
    drop(first); // the client "restarts"

    let second = yiem_core::mcp::McpClient::http(&url)
        .name("reports")
        .connect()
        .await
        .unwrap();
    gate.notify_one();
    let result = second.task_result(&id).await;
    assert_eq!(result.text_content(), "done", "{}", result.text_content());
    let unknown = second.task_result("no-such-task").await;
    assert!(unknown.is_error);
    assert!(
        unknown.text_content().contains("no task `no-such-task`"),
        "{}",
        unknown.text_content()
    );
}
