//! The HTTP MCP server example as a user runs it: it prints its address, refuses a client without the
//! token, and answers one with it, progress included.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use yiem_core::mcp::McpClient;
use yiem_core::{
    event::AgentEvent,
    exec::{CancellationToken, ToolCall, ToolExecutor},
    store::ToolStore,
};

/// The example binary, which `cargo test` builds beside this test (target/<profile>/examples/...).
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    profile_dir.join("examples").join("mcp_http_server")
}

#[tokio::test]
async fn it_serves_its_tools_over_http_to_a_client_with_the_token() {
    let mut child = tokio::process::Command::new(example())
        .arg("127.0.0.1:0")
        .env("MCP_TOKEN", "example-token")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the example prints its address");
        if let Some(url) = line.strip_prefix("listening on ") {
            break url.to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    assert!(
        McpClient::http(&url)
            .name("example")
            .connect()
            .await
            .is_err(),
        "a client without the token is refused"
    );
    let client = McpClient::http(&url)
        .name("example")
        .bearer_token("example-token")
        .connect()
        .await
        .expect("a client with the token is served");
    let store = ToolStore::new("agent");
    let mut names = client.register(&store).await.unwrap();
    names.sort();
    assert_eq!(names, ["collatz_steps", "list_tools", "slugify"]);

    let updates = Arc::new(Mutex::new(Vec::new()));
    let executor = ToolExecutor::new();
    let seen = Arc::clone(&updates);
    executor.events().on_event(move |event| {
        if let AgentEvent::ToolExecutionUpdate { partial, .. } = event {
            seen.lock().unwrap().push(partial.text_content());
        }
    });
    let batch = executor
        .execute(
            &store,
            vec![
                ToolCall::new("a", "slugify", json!({"title": "Hello, World!"})),
                ToolCall::new("b", "collatz_steps", json!({"start": 27})),
            ],
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(batch.messages[0].text_content(), "hello-world");
    assert_eq!(
        batch.messages[1].text_content(),
        "27 reaches 1 after 111 steps"
    );
    assert_eq!(updates.lock().unwrap().len(), 11, "{updates:?}");
}
