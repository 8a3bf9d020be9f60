//! An MCP client of the durable tasks tests: rmcp's own, over streamable HTTP, declaring tasks and
//! forms; and the task requests the tests make with it.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, GetTaskParams,
    GetTaskResult, Implementation, ProtocolVersion, UpdateTaskParams,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{Value, json};

use crate::server::PATIENCE;

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// An MCP client of the 2026-07-28 revision that declares tasks and forms.
pub async fn client(url: &str) -> RunningService<RoleClient, ClientConfig> {
    connect(
        url,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
}

/// A client of 2025-11-25 (a session, where the server keeps them) that declares tasks and forms.
pub async fn session(url: &str) -> RunningService<RoleClient, ClientConfig> {
    connect(url, ClientLifecycleMode::Initialize).await
}

/// A client of `lifecycle` at `url` that declares tasks and forms.
pub async fn connect(
    url: &str,
    lifecycle: ClientLifecycleMode,
) -> RunningService<RoleClient, ClientConfig> {
    let capabilities: ClientCapabilities =
        serde_json::from_value(json!({"extensions": {TASKS: {}}, "elicitation": {"form": {}}}))
            .unwrap();
    let info = ClientConfig::new(capabilities, Implementation::new("durable-tasks-test", "1"));
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.allow_stateless = true;
    let transport = StreamableHttpClientTransport::from_config(config);
    tokio::time::timeout(PATIENCE, info.serve_with_lifecycle(transport, lifecycle))
        .await
        .expect("the client connects in time")
        .expect("the client connects")
}

/// Calls `tool` with `arguments` (an object): the id of the task the server made of the call.
pub async fn start(
    client: &RunningService<RoleClient, ClientConfig>,
    tool: &str,
    arguments: Value,
) -> String {
    let mut call = CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(arguments) = arguments {
        call = call.with_arguments(arguments);
    }
    let response = client
        .peer()
        .call_tool_once(call)
        .await
        .expect("the call is answered");
    match response {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("`{tool}` was not made a task: {other:?}"),
    }
}

/// `tasks/get` of `id`, as JSON.
pub async fn get(client: &RunningService<RoleClient, ClientConfig>, id: &str) -> Value {
    let read: GetTaskResult = client
        .peer()
        .get_task(GetTaskParams::new(id.to_owned()))
        .await
        .unwrap_or_else(|error| panic!("tasks/get {id}: {error}"));
    serde_json::to_value(read).unwrap()
}

/// Reads `id` until its status is `status` (polled, within the hang guard): the last read.
pub async fn until_status(
    client: &RunningService<RoleClient, ClientConfig>,
    id: &str,
    status: &str,
) -> Value {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let read = get(client, id).await;
        if read["status"] == status || tokio::time::Instant::now() > deadline {
            assert_eq!(read["status"], status, "{read}");
            return read;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The key of the one question the task `read` (`tasks/get` in `input_required`) asks.
pub fn only_question(read: &Value) -> String {
    let questions = read["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("no questions: {read}"));
    assert_eq!(questions.len(), 1, "{read}");
    questions.keys().next().unwrap().clone()
}

/// Approves the call of task `id` (its question `key`) with `tasks/update`.
pub async fn approve(client: &RunningService<RoleClient, ClientConfig>, id: &str, key: &str) {
    let answers = serde_json::from_value(json!({
        key: {"action": "accept", "content": {"approve": true}}
    }))
    .unwrap();
    client
        .peer()
        .update_task(UpdateTaskParams::new(id.to_owned(), answers))
        .await
        .expect("the approval is taken");
}
