//! Resources, templates, prompts and completions of yiem's MCP server (`mcp-context-server`, built with
//! `#[resource]` and `#[prompt]`), read by the official Python SDK (`tests/python/mcp_context_client.py`)
//! and TypeScript SDK (`tests/node/mcp_context_client.mjs`) over stdio, each of which checks every answer and every error exactly and exits
//! non-zero on the first that is not as it should be.

use std::path::Path;
use std::time::Duration;

use tokio::process::Command;
use yiem_tests::installed::{TS_SDK_VERSION, npm_package, python};

const SERVER: &str = env!("CARGO_BIN_EXE_mcp-context-server");

#[tokio::test]
async fn the_python_sdk_reads_resources_gets_prompts_and_completes_arguments() {
    let output = tokio::time::timeout(
        Duration::from_secs(300),
        Command::new(python())
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("python/mcp_context_client.py"))
            .arg(SERVER)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the Python client finishes")
    .expect("the Python client starts");
    assert!(
        output.status.success(),
        "the Python client failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "ok");
}

#[tokio::test]
async fn the_typescript_sdk_reads_resources_gets_prompts_and_completes_arguments() {
    let npm = npm_package("@modelcontextprotocol/sdk", TS_SDK_VERSION);
    let output = tokio::time::timeout(
        Duration::from_secs(300),
        Command::new("node")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("node/mcp_context_client.mjs"))
            .arg(npm)
            .arg(SERVER)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the TypeScript client finishes")
    .expect("the TypeScript client starts");
    assert!(
        output.status.success(),
        "the TypeScript client failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "ok");
}

#[tokio::test]
async fn mcp_client_reads_a_servers_resources_and_prompts_into_the_application() {
    use yiem_core::mcp::{McpClient, ResourceContents};
    let client = McpClient::command(SERVER, Vec::<String>::new())
        .name("notes")
        .connect()
        .await
        .expect("the server starts");
    let uris: Vec<String> = client
        .resources()
        .await
        .unwrap()
        .into_iter()
        .map(|resource| resource.uri)
        .collect();
    assert_eq!(
        uris,
        [
            "notes://broken",
            "notes://huge",
            "notes://logo",
            "notes://readme"
        ]
    );
    let templates = client.resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "notes://notes/{id}");
    let read = client.read_resource("notes://notes/7").await.unwrap();
    assert!(
        matches!(&read[..], [ResourceContents::TextResourceContents { text, .. }] if text == "note 7"),
        "{read:?}"
    );
    let unknown = client.read_resource("notes://nothing").await.unwrap_err();
    assert!(
        unknown
            .to_string()
            .contains("no resource at `notes://nothing`"),
        "{unknown}"
    );
    let prompts: Vec<String> = client
        .prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|prompt| prompt.name)
        .collect();
    assert_eq!(prompts, ["greet", "review"]);
    let mut arguments = serde_json::Map::new();
    arguments.insert("name".into(), "Ada".into());
    let messages = client.prompt("greet", arguments).await.unwrap();
    assert_eq!(
        serde_json::to_value(&messages).unwrap(),
        serde_json::json!([{"role": "user", "content": {"type": "text", "text": "Say hello to Ada."}}])
    );
}
