//! yiem as an MCP client, against servers nobody here wrote, started as real processes: the reference
//! server `@modelcontextprotocol/server-everything` (npm) over stdio, and a server written with the
//! official Python SDK (`tests/python/mcp_server.py`) over stdio and over streamable HTTP. Listed tools
//! with their schemas, a call with progress, an error result, a cancelled call, a server killed mid-call
//! (an error result, then the next call works after the restart), a server that is not there, and a
//! server's `notifications/tools/list_changed` re-listed into the store; over HTTP too: progress, a
//! cancelled call, a server that goes away and comes back.
//!
//! The components are installed on first use under the target directory, as `.ci/run` does: a Python
//! virtualenv with `mcp>=2.3,<3` and an npm folder with the reference server.

use std::path::{Path, PathBuf};

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use yiem_core::mcp::McpClient;
use yiem_core::{
    event::AgentEvent,
    exec::{CancellationToken, ToolCall, ToolExecutor},
    store::ToolStore,
};
use yiem_tests::installed::{npm_package, python, python_listening};
use yiem_tests::poll::{free_port, wait_until};
use yiem_tests::updates::recording_updates;

const EVERYTHING_VERSION: &str = "2026.8.31";

/// The reference server's entry point, installed once.
fn everything() -> PathBuf {
    npm_package(
        "@modelcontextprotocol/server-everything",
        EVERYTHING_VERSION,
    )
    .join("node_modules/.bin/mcp-server-everything")
}

fn python_server() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("python/mcp_server.py")
        .display()
        .to_string()
}

async fn python_stdio(prefix: &str) -> McpClient {
    McpClient::command(
        python().display().to_string(),
        [python_server(), "stdio".into()],
    )
    .name("python-tools")
    .prefix(prefix)
    .connect()
    .await
    .expect("the Python server starts")
}

fn call(name: &str, arguments: Value) -> Vec<ToolCall> {
    vec![ToolCall::new("c1", name, arguments)]
}

async fn run_one(
    store: &ToolStore,
    name: &str,
    arguments: Value,
) -> yiem_core::message::ToolResultMessage {
    let batch = ToolExecutor::new()
        .execute(store, call(name, arguments), &CancellationToken::new())
        .await;
    batch.messages.into_iter().next().unwrap()
}

#[tokio::test]
async fn the_reference_server_lists_its_tools_with_their_schemas_and_answers_calls() {
    let client = McpClient::command(everything().display().to_string(), ["stdio"])
        .name("everything")
        .prefix("ev_")
        .connect()
        .await
        .expect("server-everything starts");
    let store = ToolStore::new("agent");
    let names = client.register(&store).await.unwrap();
    for expected in [
        "ev_echo",
        "ev_get-sum",
        "ev_get-tiny-image",
        "ev_trigger-long-running-operation",
    ] {
        assert!(
            names.iter().any(|name| name == expected),
            "{expected} in {names:?}"
        );
    }
    let sum = store.get("ev_get-sum").unwrap();
    assert_eq!(sum.description(), "Returns the sum of two numbers");
    let schema = sum.input_schema();
    assert_eq!(schema["type"], "object");
    assert!(schema["properties"]["a"].is_object() && schema["properties"]["b"].is_object());
    // Every listed tool has a definition in every dialect the model may speak.
    for tool in store.tools() {
        for dialect in yiem_core::store::Dialect::ALL {
            assert!(
                tool.definition(dialect).is_ok(),
                "{} in {dialect:?}",
                tool.name()
            );
        }
    }

    let echoed = run_one(&store, "ev_echo", json!({"message": "hi there"})).await;
    assert!(!echoed.is_error(), "{echoed:?}");
    assert_eq!(echoed.text_content(), "Echo: hi there");
    let added = run_one(&store, "ev_get-sum", json!({"a": 2, "b": 40})).await;
    assert!(added.text_content().contains("42"), "{added:?}");
    let image = run_one(&store, "ev_get-tiny-image", json!({})).await;
    assert!(
        image
            .content()
            .iter()
            .any(|block| matches!(block, yiem_core::tool::Content::Image { mime_type, .. } if mime_type == "image/png")),
        "{image:?}"
    );
    // Resource links and embedded resources arrive as their own blocks, not as JSON text.
    let links = run_one(&store, "ev_get-resource-links", json!({"count": 2})).await;
    let links: Vec<&yiem_core::tool::ResourceInfo> = links
        .content()
        .iter()
        .filter_map(|block| match block {
            yiem_core::tool::Content::ResourceLink { resource } => Some(&**resource),
            _ => None,
        })
        .collect();
    assert_eq!(links.len(), 2, "{links:?}");
    assert!(
        links
            .iter()
            .all(|link| link.name.is_some() && !link.uri.is_empty()),
        "{links:?}"
    );
    for (kind, expected) in [("Text", "text"), ("Blob", "blob")] {
        let embedded = run_one(
            &store,
            "ev_get-resource-reference",
            json!({"resourceType": kind, "resourceId": 1}),
        )
        .await;
        let found = embedded.content().iter().find_map(|block| match block {
            yiem_core::tool::Content::ResourceText { resource, .. } => {
                Some(("text", &resource.uri))
            }
            yiem_core::tool::Content::ResourceBlob { resource, .. } => {
                Some(("blob", &resource.uri))
            }
            _ => None,
        });
        assert!(
            found.is_some_and(|(found, uri)| found == expected && !uri.is_empty()),
            "{kind}: {embedded:?}"
        );
    }
}

#[tokio::test]
async fn progress_from_the_reference_server_becomes_tool_updates() {
    let client = McpClient::command(everything().display().to_string(), ["stdio"])
        .name("everything")
        .connect()
        .await
        .unwrap();
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let (executor, updates) = recording_updates();
    let batch = executor
        .execute(
            &store,
            call(
                "trigger-long-running-operation",
                json!({"duration": 1, "steps": 3}),
            ),
            &CancellationToken::new(),
        )
        .await;
    assert!(!batch.messages[0].is_error(), "{:?}", batch.messages[0]);
    assert_eq!(
        updates.lock().unwrap().len(),
        3,
        "{:?}",
        updates.lock().unwrap()
    );
}

/// Calls `name` (the Python server's `count`) to 3 and checks its progress became the call's updates.
async fn count_to_three_with_progress(store: &ToolStore, name: &str) {
    let (executor, updates) = recording_updates();
    let counted = executor
        .execute(
            store,
            call(name, json!({"to": 3})),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(counted.messages[0].text_content(), "counted to 3");
    assert_eq!(
        *updates.lock().unwrap(),
        ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    );
}

#[tokio::test]
async fn a_python_server_over_stdio_lists_calls_reports_progress_and_errors() {
    let client = python_stdio("py_").await;
    let store = ToolStore::new("agent");
    let names = client.register(&store).await.unwrap();
    assert_eq!(
        names,
        [
            "py_add",
            "py_count",
            "py_fail",
            "py_wait",
            "py_crash",
            "py_pid",
            "py_grow",
            "py_grow_quietly",
            "py_lists",
            "py_note",
            "py_ask",
            "py_summarize"
        ]
    );
    let add = store.get("py_add").unwrap();
    assert_eq!(add.label(), "Add Numbers");
    assert_eq!(add.description(), "Add two integers.");
    assert_eq!(add.input_schema()["required"], json!(["a", "b"]));
    assert!(
        add.output_schema().is_some(),
        "the SDK lists an output schema for a model result"
    );

    let sum = run_one(&store, "py_add", json!({"a": 2, "b": 3})).await;
    assert!(!sum.is_error());
    assert_eq!(sum.result.structured_content(), Some(&json!({"sum": 5})));

    let failed = run_one(&store, "py_fail", json!({"reason": "testing"})).await;
    assert!(failed.is_error());
    assert!(
        failed.text_content().contains("failed on purpose: testing"),
        "{failed:?}"
    );

    count_to_three_with_progress(&store, "py_count").await;
}

/// Registers `client`'s tools, runs `wait` until the server reports it runs, cancels it, and checks that
/// the call ends with one error result, that the server's tool saw the cancellation (it writes `marker`),
/// and that the connection still serves calls.
async fn cancel_a_waiting_call(client: &McpClient, marker: &Path) {
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let cancel = CancellationToken::new();
    let executor = ToolExecutor::new();
    // The tool reports progress once it runs on the server: then the cancellation has a call to cancel.
    let waiting = Arc::new(tokio::sync::Notify::new());
    let on_update = Arc::clone(&waiting);
    executor.events().on_event(move |event| {
        if matches!(event, AgentEvent::ToolExecutionUpdate { .. }) {
            on_update.notify_one();
        }
    });
    let running = {
        let (store, cancel) = (store.clone(), cancel.clone());
        tokio::spawn(async move {
            executor
                .execute(&store, call("wait", json!({})), &cancel)
                .await
        })
    };
    waiting.notified().await;
    cancel.cancel();
    let batch = running.await.unwrap();
    assert_eq!(batch.messages.len(), 1);
    assert!(batch.messages[0].is_error());
    // The server saw `notifications/cancelled`: its tool was cancelled and wrote the marker.
    assert!(
        wait_until(|| marker.exists(), Duration::from_secs(20)).await,
        "the server's tool was cancelled"
    );
    let sum = run_one(&store, "add", json!({"a": 1, "b": 1})).await;
    assert_eq!(sum.result.structured_content(), Some(&json!({"sum": 2})));
}

#[tokio::test]
async fn a_cancelled_call_tells_the_server_and_ends_with_one_result() {
    let marker = tempfile_path("cancelled");
    let client = McpClient::command(
        python().display().to_string(),
        [python_server(), "stdio".into()],
    )
    .name("python-tools")
    .env("YIEM_TEST_CANCELLED_FILE", marker.display().to_string())
    .connect()
    .await
    .unwrap();
    cancel_a_waiting_call(&client, &marker).await;
}

#[tokio::test]
async fn a_server_killed_mid_call_gives_an_error_naming_it_and_the_next_call_restarts_it() {
    let client = python_stdio("").await;
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let first_pid = run_one(&store, "pid", json!({})).await.text_content();

    let crashed = run_one(&store, "crash", json!({})).await;
    assert!(crashed.is_error());
    assert!(
        crashed.text_content().contains("MCP server `python-tools`"),
        "{crashed:?}"
    );
    let again = run_one(&store, "pid", json!({})).await;
    assert!(!again.is_error(), "{again:?}");
    assert_ne!(again.text_content(), first_pid, "a new process answered");
}

#[tokio::test]
async fn a_server_that_hangs_is_cut_off_by_the_call_time_limit() {
    let client = McpClient::command(
        python().display().to_string(),
        [python_server(), "stdio".into()],
    )
    .name("python-tools")
    .call_timeout(Duration::from_millis(500))
    .connect()
    .await
    .unwrap();
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let hung = run_one(&store, "wait", json!({})).await;
    assert!(hung.is_error());
    assert_eq!(
        hung.text_content(),
        "MCP server `python-tools` did not answer `wait` within 500ms; the call was cancelled"
    );
}

#[tokio::test]
async fn a_command_that_does_not_exist_is_a_clear_connect_error() {
    let error = McpClient::command("/nonexistent/mcp-server", Vec::<String>::new())
        .name("ghost")
        .connect()
        .await
        .err()
        .unwrap();
    assert!(
        error.to_string().starts_with(
            "MCP server `ghost` could not be connected: cannot start `/nonexistent/mcp-server`"
        ),
        "{error}"
    );
}

#[tokio::test]
async fn two_servers_without_prefixes_that_clash_are_refused_with_the_name() {
    let store = ToolStore::new("agent");
    python_stdio("").await.register(&store).await.unwrap();
    let error = python_stdio("").await.register(&store).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP server `python-tools`: the store already has a tool named `add`; give the server a prefix"
    );
    assert_eq!(
        store.len(),
        12,
        "nothing of the second server was registered"
    );
}

/// A Python server over streamable HTTP on a free loopback port; killed when dropped.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Python server over streamable HTTP on `port`, with `env` set.
async fn python_http_on(port: u16, env: &[(&str, String)]) -> HttpServer {
    let child = python_listening(
        [python_server(), "http".into(), port.to_string()],
        env.iter()
            .map(|(key, value)| ((*key).to_owned(), value.clone())),
        port,
    )
    .await;
    HttpServer {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

/// The Python server over streamable HTTP with `env` set, a client of it, and a store holding its tools.
async fn python_http_registered(env: &[(&str, String)]) -> (HttpServer, McpClient, ToolStore) {
    let server = python_http_on(free_port(), env).await;
    let client = McpClient::http(&server.url)
        .name("python-http")
        .connect()
        .await
        .expect("the HTTP handshake completes");
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    (server, client, store)
}

#[tokio::test]
async fn a_python_server_over_streamable_http_lists_and_answers() {
    let (_server, _client, store) = python_http_registered(&[]).await;
    assert!(store.get("add").is_some(), "{:?}", store.names());
    let sum = run_one(&store, "add", json!({"a": 20, "b": 22})).await;
    assert_eq!(sum.result.structured_content(), Some(&json!({"sum": 42})));
    let failed = run_one(&store, "fail", json!({"reason": "over http"})).await;
    assert!(failed.is_error() && failed.text_content().contains("over http"));
}

#[tokio::test]
async fn an_http_server_that_goes_away_gives_an_error_and_a_new_one_is_reached_again() {
    let port = free_port();
    let mut server = python_http_on(port, &[]).await;
    let client = McpClient::http(&server.url)
        .name("python-http")
        .connect()
        .await
        .unwrap();
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let first_pid = run_one(&store, "pid", json!({})).await.text_content();
    let _ = server.child.kill();
    let _ = server.child.wait();
    let down = run_one(&store, "add", json!({"a": 1, "b": 2})).await;
    assert!(down.is_error());
    assert!(
        down.text_content().contains("MCP server `python-http`"),
        "{down:?}"
    );
    // A new server on the same address: the next call reaches it.
    let _server = python_http_on(port, &[]).await;
    let again = run_one(&store, "pid", json!({})).await;
    assert!(!again.is_error(), "{again:?}");
    assert_ne!(again.text_content(), first_pid, "the new process answered");
}

#[tokio::test]
async fn progress_over_http_becomes_tool_updates() {
    let (_server, _client, store) = python_http_registered(&[]).await;
    count_to_three_with_progress(&store, "count").await;
}

#[tokio::test]
async fn a_cancelled_call_over_http_ends_with_one_result_and_the_server_stops_it() {
    let marker = tempfile_path("cancelled-http");
    let server = python_http_on(
        free_port(),
        &[("YIEM_TEST_CANCELLED_FILE", marker.display().to_string())],
    )
    .await;
    let client = McpClient::http(&server.url)
        .name("python-http")
        .connect()
        .await
        .unwrap();
    cancel_a_waiting_call(&client, &marker).await;
}

#[tokio::test]
async fn a_servers_list_changed_re_lists_its_tools_into_the_store() {
    let client = python_stdio("py_").await;
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    assert!(store.get("py_late").is_none());
    let grown = run_one(&store, "py_grow", json!({})).await;
    assert_eq!(grown.text_content(), "added late");
    assert!(
        wait_until(|| store.get("py_late").is_some(), Duration::from_secs(20)).await,
        "the server's notifications/tools/list_changed brought `late` into the store: {:?}",
        store.names()
    );
    let late = run_one(&store, "py_late", json!({})).await;
    assert_eq!(late.text_content(), "late, but here");
}

#[tokio::test]
async fn yiems_own_server_announces_a_tool_it_learns_and_the_client_re_lists() {
    let client = McpClient::command(env!("CARGO_BIN_EXE_mcp-test-server"), Vec::<String>::new())
        .name("yiem-test")
        .connect()
        .await
        .unwrap();
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    assert!(store.get("greet").is_none());
    let learned = run_one(&store, "learn", json!({})).await;
    assert_eq!(learned.text_content(), "learned `greet`");
    assert!(
        wait_until(|| store.get("greet").is_some(), Duration::from_secs(20)).await,
        "`greet` reached the store: {:?}",
        store.names()
    );
    let greeted = run_one(&store, "greet", json!({"name": "Ada"})).await;
    assert_eq!(greeted.text_content(), "hello, Ada");
}

fn tempfile_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("yiem-mcp-client-{}-{}", std::process::id(), name));
    let _ = std::fs::remove_file(&dir);
    dir
}

/// `mcp-bad-server MODE…` (see that binary): a server that misbehaves on purpose, named `bad`.
fn bad_server(mode: &[&str]) -> yiem_core::mcp::McpClientBuilder {
    McpClient::command(env!("CARGO_BIN_EXE_mcp-bad-server"), mode.iter().copied()).name("bad")
}

/// The outcome of `future`, which must come: on code without the limits it never does, and this turns
/// the hang into a failure (the limits under test are far below it, so the outcome never depends on it).
async fn returns<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), future)
        .await
        .expect("the client returned")
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_is_cut_off_by_the_connect_limit() {
    let error = returns(
        bad_server(&["silent"])
            .connect_timeout(Duration::from_millis(200))
            .connect(),
    )
    .await
    .err()
    .unwrap();
    assert_eq!(
        error.to_string(),
        "MCP server `bad` went past the `connect_timeout` limit: it did not complete the `initialize` \
         handshake within 200ms; if it is only slow to start, raise the limit with \
         `McpClientBuilder::connect_timeout`"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_tools_list_is_cut_off_by_the_list_limit() {
    let client = bad_server(&["no-list"])
        .list_timeout(Duration::from_millis(200))
        .connect()
        .await
        .unwrap();
    let store = ToolStore::new("agent");
    let error = returns(client.register(&store)).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP server `bad` went past the `list_timeout` limit: it did not answer page 1 of `tools/list` \
         within 200ms (an answer that is not JSON or nests deeper than 128 levels counts as none); raise \
         the limit with `McpClientBuilder::list_timeout` if it is only slow"
    );
    assert!(store.is_empty());
}

#[tokio::test]
async fn a_tools_list_nested_5000_deep_is_dropped_unread_and_ends_in_the_list_limit() {
    let client = bad_server(&["deep", "5000"])
        .list_timeout(Duration::from_millis(200))
        .connect()
        .await
        .unwrap();
    let error = returns(client.tools()).await.err().unwrap();
    assert!(
        matches!(
            error,
            yiem_core::mcp::McpClientError::Limit {
                limit: "list_timeout",
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test]
async fn a_schema_nested_past_the_depth_limit_is_refused_with_the_tool_named() {
    // 40 properties deep, 79 levels of objects: within serde_json's recursion limit (128), so rmcp
    // reads it, and past the client's 64.
    let client = bad_server(&["deep", "40"]).connect().await.unwrap();
    let store = ToolStore::new("agent");
    let error = returns(client.register(&store)).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP server `bad` went past the `max_schema_depth` limit: the schema of its tool `deep` nests \
         deeper than 64 levels; raise the limit with `McpClientBuilder::max_schema_depth` if the schema \
         is meant to"
    );
    assert!(store.is_empty());
    // Within a raised limit, the same schema is taken.
    let client = bad_server(&["deep", "40"])
        .max_schema_depth(79)
        .connect()
        .await
        .unwrap();
    assert_eq!(client.register(&store).await.unwrap(), ["deep"]);
}

#[tokio::test]
async fn a_server_whose_every_page_has_a_next_cursor_is_cut_off_by_the_page_limit() {
    let client = bad_server(&["endless"])
        .max_pages(5)
        .connect()
        .await
        .unwrap();
    let store = ToolStore::new("agent");
    let error = returns(client.register(&store)).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP server `bad` went past the `max_pages` limit: its `tools/list` still had a `nextCursor` \
         after 5 pages; raise the limit with `McpClientBuilder::max_pages` if it really lists that many"
    );
    assert!(
        store.is_empty(),
        "no tool of an unfinished listing is added"
    );
}

#[tokio::test]
async fn a_server_listing_more_tools_than_the_limit_is_refused() {
    let client = bad_server(&["endless"])
        .max_pages(1000)
        .max_tools(3)
        .connect()
        .await
        .unwrap();
    let error = returns(client.tools()).await.err().unwrap();
    assert_eq!(
        error.to_string(),
        "MCP server `bad` went past the `max_tools` limit: it lists more than 3 tools; raise the limit \
         with `McpClientBuilder::max_tools` if an agent should see them all"
    );
}

#[tokio::test]
async fn a_server_listing_one_name_twice_registers_none_of_its_tools() {
    let client = bad_server(&["duplicate"]).connect().await.unwrap();
    let store = ToolStore::new("agent");
    let error = client.register(&store).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP server `bad` lists a tool yiem cannot offer: it lists two tools named `echo`; none of its \
         tools were taken"
    );
    assert!(store.is_empty(), "{:?}", store.names());
}

#[tokio::test]
async fn a_tool_yiem_cannot_offer_is_left_out_by_name_and_the_servers_other_tools_are_taken() {
    let client = bad_server(&["mixed"]).connect().await.unwrap();
    let store = ToolStore::new("agent");
    let names = returns(client.register(&store)).await.unwrap();
    assert_eq!(names, ["echo"]);
    assert_eq!(store.names(), ["echo"]);
    let left_out = client.left_out();
    let left: Vec<&str> = left_out.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(left, ["lookup_user", "bad name!"]);
    assert!(
        left_out[0].reason.contains("profile-schema.json"),
        "{}",
        left_out[0].reason
    );
    assert!(
        left_out[1].reason.contains("bad name!"),
        "{}",
        left_out[1].reason
    );
}

#[tokio::test]
async fn a_null_for_a_property_the_server_does_not_require_goes_out_as_not_given() {
    let client = bad_server(&["mixed"]).connect().await.unwrap();
    let store = ToolStore::new("agent");
    returns(client.register(&store)).await.unwrap();
    let echo = store.get("echo").unwrap();
    let sent = returns(echo.execute("c1", json!({"query": "x", "verbose": null}))).await;
    assert!(!sent.is_error, "{}", sent.text_content());
    assert_eq!(sent.text_content(), r#"{"query":"x"}"#);
    // A required property is no less required for being `null`.
    let refused = returns(echo.execute("c2", json!({"query": null}))).await;
    assert!(refused.is_error);
    assert!(
        refused.text_content().contains("query"),
        "{}",
        refused.text_content()
    );
}

/// Everything logged at `DEBUG` and above in this test binary, captured once.
fn captured_logs() -> Arc<std::sync::Mutex<Vec<u8>>> {
    static LOGS: std::sync::OnceLock<Arc<std::sync::Mutex<Vec<u8>>>> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = Arc::clone(&logs);
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || Sink(Arc::clone(&sink)))
            .init();
        logs
    })
    .clone()
}

struct Sink(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_servers_log_message_goes_to_tracing_with_the_server_named_and_escaped() {
    let logs = captured_logs();
    let client = python_stdio("").await;
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let result = run_one(&store, "note", json!({})).await;
    assert_eq!(result.text_content(), "noted");
    let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    let line = logs
        .lines()
        .find(|line| line.contains("MCP server log"))
        .unwrap_or_else(|| panic!("the log message reached tracing: {logs}"));
    assert!(line.contains(" WARN "), "{line}");
    assert!(line.contains("server=\"python-tools\""), "{line}");
    assert!(line.contains("python-tools.disk"), "{line}");
    assert!(
        !line.contains('\x1b') && line.contains("\\u{1b}"),
        "escaped: {line}"
    );
}

#[tokio::test]
async fn an_elicitation_is_answered_by_the_handler_with_the_schemas_defaults_filled_in() {
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&asked);
    let client = McpClient::command(
        python().display().to_string(),
        [python_server(), "stdio".into()],
    )
    .name("python-tools")
    .elicitation(move |question: yiem_core::ask::Elicitation| {
        record
            .lock()
            .unwrap()
            .push((question.server, question.message, question.schema));
        async {
            let answer = json!({"name": "Ada"}).as_object().cloned().unwrap();
            yiem_core::ask::ElicitationAnswer::Accept(answer)
        }
    })
    .connect()
    .await
    .unwrap();
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let result = run_one(&store, "ask", json!({})).await;
    assert_eq!(
        result.text_content(),
        r#"{"action": "accept", "content": {"age": 30, "name": "Ada"}}"#
    );
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].0, "python-tools");
    assert_eq!(asked[0].1, "Who are you?");
    assert_eq!(asked[0].2["properties"]["age"]["default"], 30);
}

#[tokio::test]
async fn without_an_elicitation_handler_a_servers_question_is_declined() {
    let client = python_stdio("").await;
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let result = run_one(&store, "ask", json!({})).await;
    assert_eq!(
        result.text_content(),
        r#"{"action": "decline", "content": null}"#
    );
}

#[tokio::test]
async fn a_sampling_request_is_answered_by_the_handler_with_the_conversation_it_sent() {
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&asked);
    let client = McpClient::command(
        python().display().to_string(),
        [python_server(), "stdio".into()],
    )
    .name("python-tools")
    .sampling(move |request: yiem_core::ask::Sampling| {
        record.lock().unwrap().push(request);
        async { yiem_core::ask::SamplingAnswer::text("rain, then sun", "test-model") }
    })
    .connect()
    .await
    .unwrap();
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let result = run_one(&store, "summarize", json!({"text": "the forecast"})).await;
    assert_eq!(result.text_content(), "test-model: rain, then sun");
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].server, "python-tools");
    assert_eq!(asked[0].max_tokens, 50);
    assert_eq!(
        asked[0].system_prompt.as_deref(),
        Some("Summarize in five words.")
    );
    assert_eq!(asked[0].messages.len(), 1);
    assert_eq!(
        (
            asked[0].messages[0].role.as_str(),
            asked[0].messages[0].text.as_str()
        ),
        ("user", "the forecast")
    );
}

#[tokio::test]
async fn without_a_sampling_handler_a_servers_request_is_refused() {
    let client = python_stdio("").await;
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let result = run_one(&store, "summarize", json!({"text": "the forecast"})).await;
    assert!(result.is_error(), "{}", result.text_content());
}

/// How many `tools/list` requests the Python server has answered, asked through `store`.
async fn lists_answered(store: &ToolStore) -> u32 {
    let answer = run_one(store, "lists", json!({})).await;
    answer.text_content().parse().expect("a count")
}

#[tokio::test]
async fn a_tool_list_the_server_says_is_fresh_is_reused_until_its_ttl_and_only_then_listed_again() {
    let hour = 3_600_000.to_string();
    let (_server, client, store) = python_http_registered(&[("YIEM_TEST_LIST_TTL_MS", hour)]).await;
    assert_eq!(lists_answered(&store).await, 1);
    // Fresh for an hour: asking for the tools again does not ask the server.
    let tools = client.tools().await.unwrap();
    assert!(tools.iter().any(|tool| tool.name() == "add"));
    assert_eq!(lists_answered(&store).await, 1, "the fresh list was reused");
    // A change the server does not announce stays unseen while the list is fresh...
    run_one(&store, "grow_quietly", json!({})).await;
    assert_eq!(lists_answered(&store).await, 1);
    assert!(store.get("late").is_none());
    // ...and `refresh` always asks.
    client.refresh().await.unwrap();
    assert_eq!(lists_answered(&store).await, 2);
    assert!(store.get("late").is_some(), "{:?}", store.names());
}

#[tokio::test]
async fn a_stale_tool_list_is_listed_again_before_the_next_call_and_brings_an_unannounced_tool() {
    let ttl = Duration::from_millis(50);
    let (_server, _client, store) =
        python_http_registered(&[("YIEM_TEST_LIST_TTL_MS", ttl.as_millis().to_string())]).await;
    // Past the list's time to live (a sleep can only make it more stale, never fresh again).
    tokio::time::sleep(ttl * 2).await;
    // Listed again before this call (the second listing), which then adds `late` unannounced.
    run_one(&store, "grow_quietly", json!({})).await;
    assert!(store.get("late").is_none());
    tokio::time::sleep(ttl * 2).await;
    // Listed again before this call too: the third listing, which has `late`.
    assert_eq!(lists_answered(&store).await, 3);
    let late = run_one(&store, "late", json!({})).await;
    assert_eq!(late.text_content(), "late, but here");
}

#[tokio::test]
async fn a_tool_list_without_a_ttl_is_never_reused() {
    let (_server, client, store) = python_http_registered(&[]).await;
    client.tools().await.unwrap();
    client.tools().await.unwrap();
    assert_eq!(lists_answered(&store).await, 3, "each asked the server");
    // No time to live: a call does not list again by itself.
    assert_eq!(lists_answered(&store).await, 3);
}

/// A client of the Python server over stdio (the 2025-11-25 revision, whose questions are requests of
/// their own, tied to no call) that passes the server's questions to the waiting call.
async fn asking_through_calls() -> McpClient {
    McpClient::command(
        python().display().to_string(),
        [python_server(), "stdio".into()],
    )
    .name("python-tools")
    .ask_through_calls()
    .connect()
    .await
    .unwrap()
}

#[tokio::test]
async fn an_earlier_servers_question_pauses_the_agent_whose_one_call_waits_and_the_answer_goes_back()
 {
    use yiem_core::{
        agent::{Agent, AgentSettings, RunStop},
        ask::ElicitationAnswer,
        llm::{ScriptedModel, ScriptedTurn},
        message::{AgentMessage, ToolResultMessage},
    };
    let client = asking_through_calls().await;
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::tool_call("ask", json!({})),
            ScriptedTurn::text("Done."),
        ]))
        .tools(store)
        .build();
    let outcome = agent.prompt("Who am I?").await;
    let RunStop::AwaitingAnswer { questions } = &outcome.stop else {
        panic!(
            "the run pauses on the server's question: {:?}",
            outcome.stop
        );
    };
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0].message, "Who are you?");
    assert_eq!(questions[0].schema["properties"]["age"]["default"], 30);
    let ada = json!({"name": "Ada"}).as_object().cloned().unwrap();
    let outcome = agent
        .answer(
            &questions[0].call_id,
            &questions[0].key,
            ElicitationAnswer::Accept(ada),
        )
        .await
        .unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    let results: Vec<&ToolResultMessage> = outcome
        .messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1, "one result for the one call");
    assert_eq!(
        results[0].text_content(),
        r#"{"action": "accept", "content": {"age": 30, "name": "Ada"}}"#,
        "the call ran again and the server got the answer, its default filled in"
    );
}

#[tokio::test]
async fn an_earlier_servers_question_while_two_calls_wait_is_declined_as_it_names_neither() {
    let client = asking_through_calls().await;
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let answer = |_question: yiem_core::ask::Elicitation| async {
        let ada = json!({"name": "Ada"}).as_object().cloned().unwrap();
        yiem_core::ask::ElicitationAnswer::Accept(ada)
    };
    // Alone, the call's own handler answers.
    let executor = ToolExecutor::new().with_elicitation(answer);
    let alone = executor
        .execute(&store, call("ask", json!({})), &CancellationToken::new())
        .await;
    assert_eq!(
        alone.messages[0].text_content(),
        r#"{"action": "accept", "content": {"age": 30, "name": "Ada"}}"#
    );
    // With `wait` running on the server (it reported so), the question could be either call's; each
    // of the two could answer it.
    let (waiting, updates) = recording_updates();
    let waiting = waiting.with_elicitation(answer);
    let stop = CancellationToken::new();
    let running = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            waiting
                .execute(&store, call("wait", json!({})), &stop)
                .await
        })
    };
    assert!(
        wait_until(
            || !updates.lock().unwrap().is_empty(),
            Duration::from_secs(20)
        )
        .await,
        "`wait` runs"
    );
    let both = executor
        .execute(&store, call("ask", json!({})), &CancellationToken::new())
        .await;
    assert_eq!(
        both.messages[0].text_content(),
        r#"{"action": "decline", "content": null}"#
    );
    stop.cancel();
    running.await.unwrap();
}
