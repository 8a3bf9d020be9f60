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
#[derive(Clone)]
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
    run_python("mcp_asking_client.py", spec, transport).await
}

/// Runs the Python client `script` (in `tests/python`) with `spec` over `transport` and returns what it
/// printed.
async fn run_python(script: &str, spec: Value, transport: Transport) -> Value {
    let mut command = Command::new(python());
    command
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("python")
                .join(script),
        )
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

const NO_CAPABILITY: &str = "`remove` needs a person's approval before it runs, and nobody can be asked: the MCP client did not declare the `elicitation` capability (form mode), so no person can be asked over this connection; it did not run. Tell the user; the server's operator can let it run without asking (`yiem mcp --allow remove`, or `McpServer::allowed_tools`)";

/// The one denial an agent's model reads too (`approval::planned`).
const DECLINED: &str = "the user denied this call";

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
    each_refusal_is_declined("stdio", Transport::Stdio(vec![]), |spec| spec).await;
}

/// Declines, cancels and answers no to `remove`'s approval over `transport`, with the client's spec
/// shaped by `revision`: each is asked once, answered with the declined result, and the file stays.
async fn each_refusal_is_declined(test: &str, transport: Transport, revision: fn(Value) -> Value) {
    for (answer, how) in [
        (json!({"action": "decline"}), "decline"),
        (json!({"action": "cancel"}), "cancel"),
        (approve(false), "no"),
    ] {
        let test = format!("{test}-{how}");
        let file = victim(&test);
        let spec = revision(json!({"answer": answer, "calls": remove_call(&file)}));
        let seen = python_client(spec, transport.clone()).await;
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
async fn an_answer_that_does_not_fit_the_tools_form_never_reaches_the_tool() {
    let refused = [
        (
            json!({"cups": "three"}),
            "`cups` of the answer does not fit the form: expected an integer, got the string \"three\"",
        ),
        (
            json!({}),
            "`cups` of the answer does not fit the form: it is required and was not given",
        ),
        (
            json!({"cups": 11}),
            "`cups` of the answer does not fit the form: 11 is not within the form's maximum 10",
        ),
        (
            json!({"cups": 2, "saucers": 2}),
            "`saucers` of the answer does not fit the form: it is not a field of the form (its fields: cups)",
        ),
    ];
    for (content, why) in refused {
        let spec = json!({
            "answer": {"action": "accept", "content": content},
            "calls": [["count_cups", {}]],
        });
        let seen = python_client(spec, Transport::Stdio(vec![])).await;
        assert_eq!(
            seen["results"],
            json!([{"isError": true, "text": format!("the user's answer does not fit the question: the field {why}")}]),
            "{content}"
        );
    }
    // A modern client's answer goes through the same check, and is refused with the protocol's error:
    // it came in the request.
    let spec = modern(json!({
        "answer": {"action": "accept", "content": {"cups": 0}},
        "calls": [["count_cups", {}]],
    }));
    let seen = python_client(spec, Transport::Stdio(vec![])).await;
    assert_eq!(seen["results"][0]["error"]["code"], -32602, "{seen}");
    assert!(
        seen["results"][0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the field `cups` of the answer `question-1` does not fit the form: 0 is not within the form's minimum 1"),
        "{seen}"
    );
    let spec = json!({
        "answer": {"action": "accept", "content": {"cups": 3}},
        "calls": [["count_cups", {}]],
    });
    let seen = python_client(spec, Transport::Stdio(vec![])).await;
    assert_eq!(
        seen["results"],
        json!([{"isError": false, "text": "poured {\"cups\":3}"}])
    );
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

const STATELESS: &str = "this MCP server speaks stateless streamable HTTP, which cannot carry the answer of a client of a revision before 2026-07-28 back to the call that asked (a client of 2026-07-28 is asked; the server's operator can also turn on sessions: `yiem mcp --http ADDR --sessions`, `McpHttpServer::sessions`)";

#[tokio::test]
async fn over_stateless_http_a_client_of_an_earlier_revision_is_refused_even_when_it_can_answer() {
    let server = HttpServer::start(&[]).await;
    let file = victim("http-refused");
    let spec = json!({"answer": approve(true), "calls": remove_call(&file)});
    let seen = python_client(spec, Transport::Http(server.url.clone())).await;
    assert_eq!(
        seen["results"],
        json!([{"isError": true, "text": format!("`remove` needs a person's approval before it runs, and nobody can be asked: {STATELESS}; it did not run. Tell the user; the server's operator can let it run without asking (`yiem mcp --allow remove`, or `McpServer::allowed_tools`)")}])
    );
    assert_eq!(seen["questions"], json!([]));
    assert!(file.exists(), "`remove` ran without approval");
}

#[tokio::test]
async fn over_http_with_sessions_a_client_of_an_earlier_revision_is_asked_and_its_answer_holds() {
    let server = HttpServer::start(&["--sessions"]).await;
    let file = victim("http-sessions-accept");
    let spec = json!({"answer": approve(true), "calls": remove_call(&file)});
    let seen = python_client(spec, Transport::Http(server.url.clone())).await;
    assert_eq!(seen["results"][0]["isError"], false, "{seen}");
    assert_eq!(seen["questions"].as_array().unwrap().len(), 1);
    assert!(!file.exists());
    each_refusal_is_declined(
        "http-sessions",
        Transport::Http(server.url.clone()),
        |spec| spec,
    )
    .await;
    // Without the capability: refused, as over stdio.
    let file = victim("http-sessions-no-elicitation");
    let seen = python_client(
        json!({"calls": remove_call(&file)}),
        Transport::Http(server.url.clone()),
    )
    .await;
    assert_eq!(
        seen["results"],
        json!([{"isError": true, "text": NO_CAPABILITY}])
    );
    assert!(file.exists());
    // The session's log level holds for its later calls.
    let seen = python_client(
        json!({"log_level": "debug", "calls": [["chatty", {}]]}),
        Transport::Http(server.url.clone()),
    )
    .await;
    assert_eq!(seen["logs"].as_array().unwrap().len(), 3, "{seen}");
}

/// Opens a session: an `initialize` that is never ended.
async fn initialize(url: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}},
        }))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn over_http_with_sessions_a_new_session_past_the_limit_is_refused_with_503() {
    // The test server holds at most 2 sessions.
    let server = HttpServer::start(&["--sessions"]).await;
    for _ in 0..2 {
        let opened = initialize(&server.url).await;
        assert_eq!(opened.status(), 200);
        assert!(opened.headers().contains_key("mcp-session-id"));
    }
    let refused = initialize(&server.url).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "the server holds 2 sessions, its limit; try again shortly, or end a session you no longer use (HTTP DELETE with its Mcp-Session-Id)"
    );
    // A client of 2026-07-28 has no session: it is still served.
    let file = victim("sessions-full-modern");
    let spec = modern(json!({"answer": approve(true), "calls": remove_call(&file)}));
    let seen = python_client(spec, Transport::Http(server.url.clone())).await;
    assert_eq!(seen["results"][0]["isError"], false, "{seen}");
    assert!(!file.exists());
}

fn modern(spec: Value) -> Value {
    let mut spec = spec;
    spec["revision"] = json!("2026-07-28");
    spec
}

#[tokio::test]
async fn a_client_of_2026_07_28_is_asked_by_input_required_over_stateless_http_and_stdio() {
    let server = HttpServer::start(&[]).await;
    for (transport, test) in [
        (Transport::Http(server.url.clone()), "modern-http"),
        (Transport::Stdio(vec![]), "modern-stdio"),
    ] {
        let file = victim(test);
        let spec = modern(json!({"answer": approve(true), "calls": remove_call(&file)}));
        let seen = python_client(spec, transport).await;
        let path = file.display().to_string();
        assert_eq!(
            seen["results"],
            json!([{"isError": false, "text": format!("removed {path}")}]),
            "{test}"
        );
        assert_eq!(seen["questions"].as_array().unwrap().len(), 1, "{test}");
        assert!(
            seen["questions"][0]["message"]
                .as_str()
                .unwrap()
                .starts_with("Allow the tool `remove` to run"),
            "{test}"
        );
        assert!(!file.exists(), "{test}");
    }
}

#[tokio::test]
async fn a_client_of_2026_07_28_that_declines_or_cannot_answer_is_refused_and_the_tool_does_not_run()
 {
    let server = HttpServer::start(&[]).await;
    each_refusal_is_declined("modern", Transport::Http(server.url.clone()), modern).await;
    // Without the capability the call is refused as the revision says: `-32021`, not a result.
    let file = victim("modern-no-elicitation");
    let seen = python_client(
        modern(json!({"calls": remove_call(&file), "answer": null})),
        Transport::Http(server.url.clone()),
    )
    .await;
    assert_eq!(
        seen["results"],
        json!([{"error": {"code": -32021, "message": "`remove` needs to ask the client its user a question, and this request did not declare the `elicitation` capability in `io.modelcontextprotocol/clientCapabilities`; it did not run. Declare the capability, or the server's operator can let the tool run without asking (`yiem mcp --allow remove`, `McpServer::allowed_tools`)"}}])
    );
    assert_eq!(seen["questions"], json!([]));
    assert!(file.exists());
}

#[tokio::test]
async fn a_client_of_2026_07_28_answers_an_approval_and_then_the_tools_own_question_in_two_rounds()
{
    let server = HttpServer::start(&[]).await;
    let answer =
        json!({"action": "accept", "content": {"approve": true, "color": "blue", "bright": false}});
    let spec = modern(json!({"answer": answer, "calls": [["repaint", {}]], "fit_each_form": true}));
    let seen = python_client(spec, Transport::Http(server.url.clone())).await;
    assert_eq!(
        seen["results"],
        json!([{"isError": false, "text": "repainted in blue (bright: false)"}])
    );
    let messages: Vec<&str> = seen["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|question| question["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].starts_with("Allow the tool `repaint` to run"));
    assert_eq!(messages[1], "Which color for the wall?");
}

#[tokio::test]
async fn a_client_of_2026_07_28_gets_log_messages_only_at_the_level_its_request_asks() {
    let server = HttpServer::start(&[]).await;
    let seen = python_client(
        modern(json!({"calls": [["chatty", {}]]})),
        Transport::Http(server.url.clone()),
    )
    .await;
    assert_eq!(seen["logs"], json!([]));
    let seen = python_client(
        modern(json!({"log_level": "warning", "calls": [["chatty", {}]]})),
        Transport::Http(server.url.clone()),
    )
    .await;
    assert_eq!(
        seen["logs"],
        json!([{"level": "warning", "logger": "chatty", "data": {"disk": "low"}}])
    );
}

#[tokio::test]
async fn yiems_own_client_answers_a_servers_input_required_with_its_handler() {
    use yiem_core::{
        ask::ElicitationAnswer,
        exec::{ToolCall, ToolExecutor},
        mcp::McpClient,
        store::ToolStore,
    };
    let server = HttpServer::start(&[]).await;
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = std::sync::Arc::clone(&asked);
    let client = McpClient::http(server.url.clone())
        .name("asking")
        .elicitation(move |question: yiem_core::ask::Elicitation| {
            record.lock().unwrap().push(question.message);
            // One answer for both questions, cut to each form's fields.
            let mut answer = json!({"approve": true, "color": "red", "bright": true})
                .as_object()
                .cloned()
                .unwrap();
            answer.retain(|field, _| question.schema["properties"].get(field).is_some());
            async { ElicitationAnswer::Accept(answer) }
        })
        .connect()
        .await
        .unwrap();
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let batch = ToolExecutor::new()
        .execute(
            &store,
            vec![ToolCall::new("c1", "repaint", json!({}))],
            &yiem_core::exec::CancellationToken::new(),
        )
        .await;
    let result = &batch.messages[0].result;
    assert_eq!(result.text_content(), "repainted in red (bright: true)");
    assert_eq!(asked.lock().unwrap().len(), 2);
    // Without a handler the client declines: the tool does not run.
    let client = McpClient::http(server.url.clone())
        .name("asking")
        .connect()
        .await
        .unwrap();
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let file = victim("yiem-client-no-handler");
    let batch = ToolExecutor::new()
        .execute(
            &store,
            vec![ToolCall::new(
                "c1",
                "remove",
                json!({"path": file.display().to_string()}),
            )],
            &yiem_core::exec::CancellationToken::new(),
        )
        .await;
    assert!(batch.messages[0].result.is_error);
    assert_eq!(
        batch.messages[0].result.text_content(),
        "MCP server `asking` refused `remove` (error -32021): `remove` needs to ask the client its user a question, and this request did not declare the `elicitation` capability in `io.modelcontextprotocol/clientCapabilities`; it did not run. Declare the capability, or the server's operator can let the tool run without asking (`yiem mcp --allow remove`, `McpServer::allowed_tools`)"
    );
    assert!(file.exists());
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
    assert_eq!(
        seen["results"][1]["text"],
        format!("the user cannot be asked: {STATELESS}")
    );
}

#[tokio::test]
async fn a_tool_asks_the_clients_model_over_stdio_http_sessions_and_2026_07_28_rounds() {
    let sessions = HttpServer::start(&["--sessions"]).await;
    let stateless = HttpServer::start(&[]).await;
    let sample = json!({"text": "all good", "model": "python-model"});
    for (spec, transport, test) in [
        (
            json!({"sample": sample, "calls": [["summarise", {}]]}),
            Transport::Stdio(vec![]),
            "stdio",
        ),
        (
            json!({"sample": sample, "calls": [["summarise", {}]]}),
            Transport::Http(sessions.url.clone()),
            "http-sessions",
        ),
        (
            modern(json!({"sample": sample, "calls": [["summarise", {}]]})),
            Transport::Http(stateless.url.clone()),
            "modern-http",
        ),
    ] {
        let seen = python_client(spec, transport).await;
        assert_eq!(
            seen["results"],
            json!([{"isError": false, "text": "summary by python-model: all good"}]),
            "{test}"
        );
        assert_eq!(
            seen["samples"],
            json!([{"messages": [{"role": "user", "text": "Summarise: the build is green."}], "maxTokens": 40}]),
            "{test}"
        );
    }
    // A refusal reaches the tool as a refusal.
    let seen = python_client(
        json!({"sample": {"refuse": "not today"}, "calls": [["summarise", {}]]}),
        Transport::Stdio(vec![]),
    )
    .await;
    assert_eq!(
        seen["results"],
        json!([{"isError": false, "text": "no summary: not today"}])
    );
    // Without the capability the tool cannot ask (a 2026-07-28 client gets -32021).
    let seen = python_client(
        json!({"calls": [["summarise", {}]]}),
        Transport::Stdio(vec![]),
    )
    .await;
    assert_eq!(
        seen["results"],
        json!([{"isError": true, "text": "no model can be asked for a completion: the MCP client did not declare the `sampling` capability, so its model cannot be asked over this connection"}])
    );
    let seen = python_client(
        modern(json!({"calls": [["summarise", {}]]})),
        Transport::Http(stateless.url.clone()),
    )
    .await;
    assert_eq!(seen["results"][0]["error"]["code"], -32021);
}

#[tokio::test]
async fn a_log_flood_is_cut_at_the_calls_bound_and_said_in_one_last_message() {
    let seen = python_client(json!({"calls": [["flood", {}]]}), Transport::Stdio(vec![])).await;
    assert_eq!(
        seen["results"],
        json!([{"isError": false, "text": "flooded"}])
    );
    let logs = seen["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 1001, "1000 messages and the note");
    assert_eq!(logs[999]["data"], "line 999");
    assert_eq!(
        logs[1000],
        json!({"level": "warning", "logger": "yiem", "data": "4000 more log messages of this call were dropped: a call sends at most 1000 messages and 1048576 bytes of them"})
    );
}

#[tokio::test]
async fn a_50_mb_result_is_not_sent_and_the_client_is_told_why() {
    let seen = python_client(
        json!({"calls": [["big_audio", {}]]}),
        Transport::Stdio(vec![]),
    )
    .await;
    assert_eq!(
        seen["results"],
        json!([{"isError": true, "text": "the result of `big_audio` is 50000000 bytes, more than this MCP server sends (16777216 bytes, `McpServer::max_result_bytes`); it was not sent. Ask for less (a shorter clip, a smaller page)"}])
    );
}

#[tokio::test]
async fn a_client_of_2026_07_28_hears_of_a_new_tool_on_its_subscription_over_http_and_stdio() {
    let server = HttpServer::start(&[]).await;
    for (transport, test) in [
        (Transport::Http(server.url.clone()), "http"),
        (Transport::Stdio(vec![]), "stdio"),
    ] {
        let seen = python_client(
            modern(json!({"listen": true, "calls": [["grow", {}]]})),
            transport,
        )
        .await;
        assert_eq!(seen["honored"], json!({"toolsListChanged": true}), "{test}");
        assert_eq!(
            seen["events"].as_array().unwrap().len(),
            1,
            "{test}: {seen}"
        );
        assert!(
            seen["tools"].as_array().unwrap().contains(&json!("grown")),
            "{test}: {seen}"
        );
    }
}

#[tokio::test]
async fn yiems_own_client_listens_to_a_2026_07_28_server_and_registers_a_tool_added_later() {
    use yiem_core::{
        exec::{ToolCall, ToolExecutor},
        mcp::McpClient,
        store::ToolStore,
    };
    let server = HttpServer::start(&[]).await;
    let client = McpClient::http(server.url.clone())
        .name("asking")
        .connect()
        .await
        .unwrap();
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    assert!(store.get("grown").is_none());
    // The server's tools are one namespace, for a provider's own tool search.
    let namespace = store
        .get("grow")
        .unwrap()
        .provider_options()
        .namespace
        .clone()
        .unwrap();
    assert_eq!(namespace.name, "asking");
    assert_eq!(
        namespace.description,
        "The tools of the MCP server `asking`."
    );
    let mut changes = store.changes();
    changes.mark_unchanged();
    let batch = ToolExecutor::new()
        .execute(
            &store,
            vec![ToolCall::new("c1", "grow", json!({}))],
            &yiem_core::exec::CancellationToken::new(),
        )
        .await;
    assert_eq!(
        batch.messages[0].result.text_content(),
        "registered `grown`"
    );
    // The server says so on the subscription; the client re-lists and registers the new tool.
    let registered = async {
        while store.get("grown").is_none() {
            changes.changed().await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(60), registered)
        .await
        .expect("the new tool is registered after the server's tools/list_changed");
}

#[tokio::test]
async fn a_client_that_never_answers_an_approval_is_given_up_at_the_calls_time_limit() {
    let file = victim("never-answers");
    let spec = json!({"answer": {"action": "hang"}, "calls": remove_call(&file)});
    let seen = python_client(spec, Transport::Stdio(vec!["--timeout-ms", "300"])).await;
    assert_eq!(
        seen["results"],
        json!([{"isError": true, "text": "nobody answered whether `remove` may run within 300ms, the call's time limit; it did not run"}])
    );
    assert!(file.exists(), "`remove` ran without an answer");
}

#[tokio::test]
async fn tools_list_tells_a_2026_07_28_client_how_long_to_keep_it() {
    let list = |version: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
        }}})
    };
    for (flags, ttl) in [
        (vec![], json!(0)),
        (vec!["--list-ttl-ms", "60000"], json!(60000)),
    ] {
        let mut child = Command::new(SERVER)
            .args(&flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let line = format!("{}\n", list("2026-07-28"));
        tokio::io::AsyncWriteExt::write_all(&mut stdin, line.as_bytes())
            .await
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let answer: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(answer["result"]["ttlMs"], ttl, "{flags:?}");
    }
}

#[tokio::test]
async fn a_servers_question_pauses_the_agent_whose_call_waits_for_it_and_the_answer_goes_back() {
    use yiem_core::mcp::McpClient;
    use yiem_core::{
        agent::{Agent, AgentSettings, RunStop},
        ask::ElicitationAnswer,
        llm::{ScriptedModel, ScriptedTurn},
        store::ToolStore,
    };
    let server = HttpServer::start(&[]).await;
    let client = McpClient::http(server.url.clone())
        .name("asking")
        .ask_through_calls()
        .connect()
        .await
        .unwrap();
    let store = ToolStore::new("agent");
    client.register(&store).await.unwrap();
    let file = victim("through-the-call");
    let path = file.display().to_string();
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::tool_call("remove", json!({"path": path})),
            ScriptedTurn::text("Removed."),
        ]))
        .tools(store)
        .build();
    // The server's approval question is the call's own: the run pauses on it.
    let outcome = agent.prompt("Remove it.").await;
    let RunStop::AwaitingAnswer { questions } = &outcome.stop else {
        panic!(
            "the run pauses on the server's question: {:?}",
            outcome.stop
        );
    };
    assert_eq!(questions.len(), 1);
    assert!(
        questions[0]
            .message
            .starts_with("Allow the tool `remove` to run"),
        "{}",
        questions[0].message
    );
    assert!(file.exists(), "nothing ran before the answer");
    let yes = json!({"approve": true}).as_object().cloned().unwrap();
    let outcome = agent
        .answer(
            &questions[0].call_id,
            &questions[0].key,
            ElicitationAnswer::Accept(yes),
        )
        .await
        .unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    assert!(!file.exists(), "the call ran again with the answer");
}

/// Runs the hand-driven 2026-07-28 client (`tests/python/mcp_rounds_client.py`) over stdio with `spec`
/// and returns what each step got.
async fn rounds_client(spec: Value) -> Vec<Value> {
    let seen = run_python("mcp_rounds_client.py", spec, Transport::Stdio(vec![])).await;
    serde_json::from_value(seen).expect("the client prints a list")
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

fn sampled(text: &str) -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": "m", "stopReason": "endTurn"})
}

fn listed_roots() -> Value {
    json!({"roots": [{"uri": "file:///src", "name": "src"}]})
}

/// The text of a tool's result.
fn text_of(step: &Value) -> &str {
    step["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test]
async fn several_keyed_questions_go_out_in_one_round_and_are_answered_in_any_order_across_rounds() {
    let steps = rounds_client(json!({"steps": [
        {"tool": "greet_all"},
        // Two of the four, the last asked first: the other two are asked again.
        {"tool": "greet_all", "responses": {"client_roots": listed_roots(), "greeting": sampled("Hi")}},
        {"tool": "greet_all", "responses": {"cups": accept(json!({"cups": 3})), "user_name": accept(json!({"name": "Alice"}))}},
    ]}))
    .await;
    assert_eq!(
        steps[0],
        json!({"input_required": {
            "user_name": "elicitation/create", "cups": "elicitation/create",
            "greeting": "sampling/createMessage", "client_roots": "roots/list",
        }, "state": true})
    );
    assert_eq!(
        steps[1],
        json!({"input_required": {"user_name": "elicitation/create", "cups": "elicitation/create"}, "state": true})
    );
    assert_eq!(
        text_of(&steps[2]),
        "name=Alice cups=3 greeting=Hi roots=file:///src",
        "{steps:?}"
    );
}

#[tokio::test]
async fn a_question_the_request_cannot_answer_is_not_sent_and_its_answer_says_why() {
    let steps = rounds_client(json!({"declare": ["elicitation"], "steps": [
        {"tool": "greet_all"},
        {"tool": "greet_all", "responses": {"cups": accept(json!({"cups": 1})), "user_name": accept(json!({"name": "Bo"}))}},
    ]}))
    .await;
    assert_eq!(
        steps[0]["input_required"],
        json!({"user_name": "elicitation/create", "cups": "elicitation/create"})
    );
    assert_eq!(
        text_of(&steps[1]),
        "name=Bo cups=1 greeting=not asked (no model can be asked for a completion: the request did not \
         declare the `sampling` capability (`io.modelcontextprotocol/clientCapabilities`), so the question \
         was not sent) roots=not asked (the client's roots cannot be listed: the request did not declare the `roots` \
         capability (`io.modelcontextprotocol/clientCapabilities`), so the question was not sent)"
    );
}

#[tokio::test]
async fn a_changed_or_misplaced_request_state_is_refused_with_invalid_params() {
    let all = json!({
        "client_roots": listed_roots(), "greeting": sampled("Hi"),
        "cups": accept(json!({"cups": 3})), "user_name": accept(json!({"name": "Alice"})),
    });
    let steps = rounds_client(json!({"steps": [
        {"tool": "greet_all"},
        {"tool": "greet_all", "responses": all, "state": "tamper"},
        {"tool": "greet_all"},
        // The state of `greet_all`'s round, sent with a call of another tool.
        {"tool": "pick_color", "responses": {"question-1": accept(json!({"color": "red", "bright": true}))}},
        {"tool": "greet_all", "responses": all, "state": "none"},
    ]}))
    .await;
    assert_eq!(steps[1]["error"]["code"], -32602, "{steps:?}");
    assert_eq!(
        steps[1]["error"]["message"],
        "`requestState` was changed, or made by another server: its signature does not match: call \
         again without `requestState` and `inputResponses`, and answer the questions asked then"
    );
    assert_eq!(steps[3]["error"]["code"], -32602, "{steps:?}");
    assert!(
        steps[3]["error"]["message"].as_str().unwrap().starts_with(
            "`requestState` was given for another request, not `tools/call` of `pick_color`"
        ),
        "{steps:?}"
    );
    // Without the state, the same answers are taken as given.
    assert_eq!(
        text_of(&steps[4]),
        "name=Alice cups=3 greeting=Hi roots=file:///src"
    );
}

#[tokio::test]
async fn an_answer_outside_its_question_is_refused_with_invalid_params_and_never_reaches_the_tool()
{
    let fine = |key: &str, answer: Value| {
        let mut all = json!({
            "client_roots": listed_roots(), "greeting": sampled("Hi"),
            "cups": accept(json!({"cups": 3})), "user_name": accept(json!({"name": "Alice"})),
        });
        all[key] = answer;
        all
    };
    let refused = [
        (
            fine("cups", accept(json!({"cups": 11}))),
            "the field `cups` of the answer `cups` does not fit the form: 11 is not within the form's maximum 10",
        ),
        (
            fine("user_name", accept(json!({"name": "Alice", "age": 3}))),
            "the field `age` of the answer `user_name` does not fit the form: it is not a field of the form (its fields: name)",
        ),
        (
            fine(
                "user_name",
                json!({"action": "accept", "content": {"name": 7}}),
            ),
            "the field `name` of the answer `user_name` does not fit the form: expected a string, got the number 7",
        ),
    ];
    // (A roots list or sampling result of the wrong shape the SDK refuses to send; the conformance
    // suite's `input-required-result-validate-input` sends one, and the unit tests of `asker` read them.)
    for (responses, why) in refused {
        let steps = rounds_client(json!({"steps": [
            {"tool": "greet_all"},
            {"tool": "greet_all", "responses": responses},
        ]}))
        .await;
        assert_eq!(steps[1]["error"]["code"], -32602, "{why}: {steps:?}");
        let message = steps[1]["error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{why}: {message}");
    }
}

#[tokio::test]
async fn a_prompt_asks_in_rounds_and_makes_its_messages_from_the_answer() {
    let steps = rounds_client(json!({"steps": [
        {"prompt": "focus"},
        {"prompt": "focus", "responses": {"focus": accept(json!({"topic": "security"}))}},
    ]}))
    .await;
    assert_eq!(
        steps[0],
        json!({"input_required": {"focus": "elicitation/create"}, "state": true})
    );
    assert_eq!(
        steps[1]["result"]["messages"][0]["content"]["text"],
        "Review the change, focusing on security.",
        "{steps:?}"
    );
}
