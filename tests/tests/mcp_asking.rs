//! A tool that needs approval, a tool that asks the user (`ToolContext::elicit`) and one that logs
//! (`ToolContext::log`), served by `mcp-asking-server` over stdio and over streamable HTTP and driven by the
//! official Python SDK (`tests/python/mcp_asking_client.py`), which answers the server's questions the way
//! each test says and reports what it saw.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use yiem_tests::installed::python;

const SERVER: &str = env!("CARGO_BIN_EXE_mcp-asking-server");

/// How the Python client reaches the server.
enum Transport {
    Stdio(Vec<&'static str>),
    Http(String),
}

/// `mcp-asking-server --http 127.0.0.1:0 [FLAGS]`, killed when dropped.
struct HttpServer {
    _child: Child,
    url: String,
}

impl HttpServer {
    async fn start(flags: &[&str]) -> HttpServer {
        let mut child = Command::new(SERVER)
            .args(["--http", "127.0.0.1:0"])
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("mcp-asking-server starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("the server prints its address first");
            if let Some(url) = line.strip_prefix("listening on ") {
                break url.to_owned();
            }
        };
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        HttpServer { _child: child, url }
    }
}

/// A fresh directory with the file `victim` in it, for `remove` to delete.
fn victim(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("yiem-asking-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("victim");
    std::fs::write(&file, "keep me?").unwrap();
    file
}

/// Runs the Python client with `spec` and returns what it saw.
async fn python_client(spec: Value, transport: Transport) -> Value {
    let mut command = Command::new(python());
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("python/mcp_asking_client.py"))
        .arg(spec.to_string());
    match transport {
        Transport::Stdio(flags) => command.args(["stdio", SERVER]).args(flags),
        Transport::Http(url) => command.args(["http", &url]),
    };
    let output = tokio::time::timeout(Duration::from_secs(300), command.output())
        .await
        .expect("the Python client finishes")
        .expect("the Python client starts");
    assert!(
        output.status.success(),
        "the Python client failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the client prints JSON")
}

fn remove_call(file: &Path) -> Value {
    json!([["remove", {"path": file.display().to_string()}]])
}

fn approve(yes: bool) -> Value {
    json!({"action": "accept", "content": {"approve": yes}})
}

const NO_CAPABILITY: &str = "`remove` needs a person's approval before it runs, and nobody can be asked: the MCP client did not declare the `elicitation` capability (form mode), so no person can be asked over this connection; it did not run. Tell the user; the server's operator can let it run without asking (`yiem mcp --allow remove`, or `McpServer::with_allowed_tools`)";

const DECLINED: &str = "the user declined to run `remove` with these arguments; it did not run. Do not call it again with the same arguments: ask the user what they want instead";

#[tokio::test]
async fn a_tool_that_needs_approval_is_marked_in_tools_list() {
    let seen = python_client(json!({"calls": []}), Transport::Stdio(vec![])).await;
    let remove = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "remove")
        .unwrap();
    assert_eq!(remove["_meta"], json!({"yiem/needsApproval": true}));
    assert_eq!(remove["annotations"]["destructiveHint"], true);
    let chatty = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "chatty")
        .unwrap();
    assert_eq!(chatty.get("_meta"), None);
}

#[tokio::test]
async fn over_stdio_a_client_without_elicitation_is_refused_and_the_tool_does_not_run() {
    let file = victim("stdio-no-elicitation");
    let seen = python_client(
        json!({"calls": remove_call(&file)}),
        Transport::Stdio(vec![]),
    )
    .await;
    assert_eq!(
        seen["results"],
        json!([{"isError": true, "text": NO_CAPABILITY}])
    );
    assert!(file.exists(), "`remove` ran without approval");
}

#[tokio::test]
async fn over_stdio_the_client_is_asked_and_an_approval_runs_the_tool() {
    let file = victim("stdio-accept");
    let spec = json!({"answer": approve(true), "calls": remove_call(&file)});
    let seen = python_client(spec, Transport::Stdio(vec![])).await;
    let path = file.display().to_string();
    assert_eq!(
        seen["results"],
        json!([{"isError": false, "text": format!("removed {path}")}])
    );
    assert!(!file.exists());
    let arguments = serde_json::to_string_pretty(&json!({"path": path})).unwrap();
    assert_eq!(
        seen["questions"],
        json!([{
            "message": format!("Allow the tool `remove` to run with these arguments?\n{arguments}"),
            "schema": {
                "type": "object",
                "properties": {"approve": {
                    "type": "boolean",
                    "title": "Run `remove`",
                    "description": "Yes: `remove` runs with the arguments shown. No: it does not run.",
                }},
                "required": ["approve"],
            },
        }])
    );
}

#[tokio::test]
async fn over_stdio_a_declined_approval_is_an_error_result_and_the_tool_does_not_run() {
    for (answer, test) in [
        (json!({"action": "decline"}), "stdio-decline"),
        (json!({"action": "cancel"}), "stdio-cancel"),
        (approve(false), "stdio-no"),
    ] {
        let file = victim(test);
        let spec = json!({"answer": answer, "calls": remove_call(&file)});
        let seen = python_client(spec, Transport::Stdio(vec![])).await;
        assert_eq!(
            seen["results"],
            json!([{"isError": true, "text": DECLINED}]),
            "{test}"
        );
        assert_eq!(seen["questions"].as_array().unwrap().len(), 1, "{test}");
        assert!(file.exists(), "{test}: `remove` ran although declined");
    }
}

#[tokio::test]
async fn over_stdio_an_allowed_tool_runs_without_asking() {
    let file = victim("stdio-allowed");
    let spec = json!({"answer": approve(false), "calls": remove_call(&file)});
    let seen = python_client(spec, Transport::Stdio(vec!["--allow", "remove"])).await;
    assert_eq!(seen["results"][0]["isError"], false);
    assert_eq!(seen["questions"], json!([]));
    assert!(!file.exists());
}

#[tokio::test]
async fn over_stdio_a_tool_asks_the_user_with_a_typed_form_and_reads_the_answer() {
    let spec = json!({
        "answer": {"action": "accept", "content": {"color": "green", "bright": true}},
        "calls": [["pick_color", {}]],
    });
    let seen = python_client(spec, Transport::Stdio(vec![])).await;
    assert_eq!(
        seen["results"],
        json!([{"isError": false, "text": "painted in green (bright: true)"}])
    );
    let question = &seen["questions"][0];
    assert_eq!(question["message"], "Which color should I paint with?");
    assert_eq!(
        question["schema"]["properties"]["color"]["enum"],
        json!(["red", "green", "blue"])
    );
    assert_eq!(
        question["schema"]["properties"]["bright"]["type"],
        "boolean"
    );
    assert_eq!(question["schema"]["required"], json!(["color", "bright"]));
}

#[tokio::test]
async fn over_stdio_a_tool_whose_question_cannot_be_asked_gets_an_error_it_can_report() {
    let seen = python_client(
        json!({"calls": [["pick_color", {}]]}),
        Transport::Stdio(vec![]),
    )
    .await;
    let text = "the user cannot be asked: the MCP client did not declare the `elicitation` capability (form mode), so no person can be asked over this connection";
    assert_eq!(seen["results"], json!([{"isError": true, "text": text}]));
}

#[tokio::test]
async fn over_stdio_log_messages_reach_the_client_from_info_up_until_it_sets_a_level() {
    let seen = python_client(json!({"calls": [["chatty", {}]]}), Transport::Stdio(vec![])).await;
    assert_eq!(
        seen["logs"],
        json!([
            {"level": "info", "logger": "chatty", "data": "starting"},
            {"level": "warning", "logger": "chatty", "data": {"disk": "low"}},
        ])
    );
    let seen = python_client(
        json!({"log_level": "debug", "calls": [["chatty", {}]]}),
        Transport::Stdio(vec![]),
    )
    .await;
    assert_eq!(
        seen["logs"][0],
        json!({"level": "debug", "logger": "chatty", "data": "looking closely"})
    );
    assert_eq!(seen["logs"].as_array().unwrap().len(), 3);
    let seen = python_client(
        json!({"log_level": "error", "calls": [["chatty", {}]]}),
        Transport::Stdio(vec![]),
    )
    .await;
    assert_eq!(seen["logs"], json!([]));
}

#[tokio::test]
async fn over_http_a_tool_that_needs_approval_is_refused_even_for_a_client_that_can_answer() {
    let server = HttpServer::start(&[]).await;
    let file = victim("http-refused");
    let spec = json!({"answer": approve(true), "calls": remove_call(&file)});
    let seen = python_client(spec, Transport::Http(server.url.clone())).await;
    assert_eq!(
        seen["results"],
        json!([{"isError": true, "text": "`remove` needs a person's approval before it runs, and nobody can be asked: this MCP server speaks stateless streamable HTTP, which cannot carry the client's answer to a question back to the call that asked it; it did not run. Tell the user; the server's operator can let it run without asking (`yiem mcp --allow remove`, or `McpServer::with_allowed_tools`)"}])
    );
    assert_eq!(seen["questions"], json!([]));
    assert!(file.exists(), "`remove` ran without approval");
}

#[tokio::test]
async fn over_http_an_allowed_tool_runs() {
    let server = HttpServer::start(&["--allow", "remove"]).await;
    let file = victim("http-allowed");
    let seen = python_client(
        json!({"calls": remove_call(&file)}),
        Transport::Http(server.url.clone()),
    )
    .await;
    assert_eq!(seen["results"][0]["isError"], false);
    assert!(!file.exists());
}

#[tokio::test]
async fn over_http_log_messages_stream_on_the_calls_response() {
    let server = HttpServer::start(&[]).await;
    let seen = python_client(
        json!({"calls": [["chatty", {}], ["pick_color", {}]]}),
        Transport::Http(server.url.clone()),
    )
    .await;
    assert_eq!(
        seen["logs"],
        json!([
            {"level": "info", "logger": "chatty", "data": "starting"},
            {"level": "warning", "logger": "chatty", "data": {"disk": "low"}},
        ])
    );
    assert_eq!(
        seen["results"][0],
        json!({"isError": false, "text": "done"})
    );
    assert_eq!(seen["results"][1]["isError"], true);
    assert!(
        seen["results"][1]["text"].as_str().unwrap().starts_with(
            "the user cannot be asked: this MCP server speaks stateless streamable HTTP"
        )
    );
}
