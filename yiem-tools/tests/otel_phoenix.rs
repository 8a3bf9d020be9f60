//! yiem's OpenTelemetry GenAI traces in a tracing backend nobody here wrote: Arize Phoenix
//! (`arize-phoenix` on PyPI, pinned below), started with its embedded SQLite in a temporary folder and
//! fed over OTLP HTTP/protobuf. A scripted agent in this process calls `grep`, a tool of a second
//! process (`yiem mcp --http`, exporting on its own through `OTEL_EXPORTER_OTLP_ENDPOINT`) over MCP
//! HTTP; the spans are read back through Phoenix's REST API.
//!
//! Phoenix is `$YIEM_PHOENIX`, else `<target dir>/python-phoenix/bin/phoenix`, installed there on first
//! use (as `.ci/run` installs it); the test fails when it can be neither found nor installed.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use yiem_core::mcp::McpClient;
use yiem_core::otel::Otlp;
use yiem_core::{
    agent::{Agent, AgentSettings, RunStop},
    llm::{ScriptedModel, ScriptedTurn},
    message::AgentMessage,
    store::ToolStore,
};

/// The Phoenix release the test runs against.
const PHOENIX: &str = "arize-phoenix==20.26.1";

/// What the agent searches for: it must not reach Phoenix, content capture being off.
const SECRET: &str = "sk-yiem-otel-secret-7f3a9c";

/// How long Phoenix may take to start and to show what it was sent.
const DEADLINE: Duration = Duration::from_secs(120);

fn phoenix_program() -> PathBuf {
    if let Some(path) = std::env::var_os("YIEM_PHOENIX") {
        return PathBuf::from(path);
    }
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::current_exe()
            .unwrap()
            .ancestors()
            .nth(3)
            .expect("a test runs from target/<profile>/deps")
            .to_owned(),
    };
    let venv = target.join("python-phoenix");
    let program = venv.join("bin/phoenix");
    if !program.exists() {
        let made = std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status();
        assert!(
            made.is_ok_and(|s| s.success()),
            "python3 -m venv {}",
            venv.display()
        );
        let installed = std::process::Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", PHOENIX])
            .status();
        assert!(
            installed.is_ok_and(|s| s.success()),
            "pip install {PHOENIX} into {} failed: run .ci/run, or install it there, or set YIEM_PHOENIX",
            venv.display()
        );
    }
    program
}

/// A port free on loopback now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `phoenix serve` on loopback with its data in `dir`, once it answers `/healthz`.
async fn phoenix(dir: &std::path::Path) -> (Child, String) {
    let port = free_port();
    let child = Command::new(phoenix_program())
        .arg("serve")
        .env("PHOENIX_WORKING_DIR", dir)
        .env("PHOENIX_HOST", "127.0.0.1")
        .env("PHOENIX_PORT", port.to_string())
        .env("PHOENIX_GRPC_PORT", free_port().to_string())
        .env("PHOENIX_TELEMETRY_ENABLED", "false")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("phoenix serve starts");
    let url = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let started = Instant::now();
    loop {
        let healthy = client.get(format!("{url}/healthz")).send().await;
        if healthy.is_ok_and(|answer| answer.status().is_success()) {
            break;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "Phoenix did not start within {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (child, url)
}

/// `yiem mcp --http` exporting to `collector`, and its MCP URL.
async fn yiem_mcp(root: &std::path::Path, collector: &str) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_yiem"))
        .args(["mcp", "--http", "127.0.0.1:0", "--root"])
        .arg(root)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector)
        .env("OTEL_METRICS_EXPORTER", "none")
        .env_remove("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("yiem mcp --http starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("yiem prints its address before anything can end it");
        if let Some(url) = line.strip_prefix("listening on ") {
            break url.to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// Phoenix's spans of `trace_id`, once at least `count` are there.
async fn spans_of(phoenix: &str, trace_id: &str, count: usize) -> Vec<Value> {
    let client = reqwest::Client::new();
    let started = Instant::now();
    loop {
        let answer = client
            .get(format!("{phoenix}/v1/projects/default/spans?limit=1000"))
            .send()
            .await
            .unwrap();
        let body: Value = if answer.status().is_success() {
            answer.json().await.unwrap()
        } else {
            json!({"data": []})
        };
        let spans: Vec<Value> = body["data"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|span| span["context"]["trace_id"] == trace_id)
            .collect();
        if spans.len() >= count {
            return spans;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "Phoenix has {} spans of trace {trace_id}, not {count}, after {DEADLINE:?}: {body:#}",
            spans.len()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn by_name<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|span| span["name"] == name).collect()
}

fn attribute<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_tool_is_on_an_mcp_server_is_one_trace_in_phoenix_without_its_arguments() {
    let data = tempfile::tempdir().unwrap();
    let (mut phoenix_process, phoenix) = phoenix(data.path()).await;
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "nothing to find here\n").unwrap();
    let (mut server, mcp_url) = yiem_mcp(root.path(), &phoenix).await;

    yiem_core::telemetry::set_content_capture(false);
    // Phoenix takes traces only.
    let otlp = Otlp::traces_only(&phoenix, "yiem-otel-test").unwrap();
    tracing_subscriber::registry().with(otlp.layer()).init();

    let client = McpClient::http(&mcp_url)
        .name("remote")
        .connect()
        .await
        .unwrap();
    let tools = ToolStore::new("agent");
    client.register(&tools).await.unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::tool_call("grep", json!({"pattern": SECRET})),
            ScriptedTurn::text("Nothing matches."),
        ]))
        .tools(tools)
        .conversation_id("conversation-36")
        .build();
    let outcome = agent.prompt("look for the key").await;
    assert_eq!(outcome.stop, RunStop::Finished, "{:?}", outcome.messages);
    otlp.flush().unwrap();
    // The server sends its spans on the way out (SIGTERM is its graceful stop).
    let pid = server.id().unwrap() as i32;
    // SAFETY: `pid` is our own child, still running (it was not waited for).
    unsafe { libc::kill(pid, libc::SIGTERM) };
    assert!(server.wait().await.unwrap().success());

    // The agent's own spans first, to learn the trace id.
    let client = reqwest::Client::new();
    let started = Instant::now();
    let trace_id = loop {
        let body: Value = client
            .get(format!("{phoenix}/v1/projects/default/spans?limit=1000"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap_or(json!({}));
        let roots: Vec<&Value> = body["data"]
            .as_array()
            .map(|spans| {
                spans
                    .iter()
                    .filter(|s| s["name"] == "invoke_agent")
                    .collect()
            })
            .unwrap_or_default();
        if let Some(root) = roots.first() {
            assert_eq!(roots.len(), 1, "{body:#}");
            break root["context"]["trace_id"].as_str().unwrap().to_owned();
        }
        assert!(
            started.elapsed() < DEADLINE,
            "no invoke_agent span in Phoenix: {body:#}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    // invoke_agent, two chats, the local execute_tool, the server's tools/call and execute_tool.
    let spans = spans_of(&phoenix, &trace_id, 6).await;
    let ids: HashMap<&str, &Value> = spans
        .iter()
        .map(|span| (span["context"]["span_id"].as_str().unwrap(), span))
        .collect();
    let parent = |span: &Value| -> Option<&Value> {
        span["parent_id"]
            .as_str()
            .and_then(|id| ids.get(id).copied())
    };

    let root = by_name(&spans, "invoke_agent")[0];
    assert!(root["parent_id"].is_null(), "{root:#}");
    assert_eq!(attribute(root, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(attribute(root, "gen_ai.conversation.id"), "conversation-36");
    assert_eq!(attribute(root, "yiem.run.stop"), "finished");

    let chats = by_name(&spans, "chat scripted");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    for chat in &chats {
        assert_eq!(parent(chat), Some(root));
        // Phoenix reads the GenAI attributes as an LLM call.
        assert_eq!(chat["span_kind"], "LLM");
        assert_eq!(attribute(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(attribute(chat, "gen_ai.provider.name"), "yiem.scripted");
        assert_eq!(attribute(chat, "gen_ai.request.model"), "scripted");
        assert!(
            attribute(chat, "gen_ai.usage.input_tokens").is_number(),
            "{chat:#}"
        );
        assert!(
            attribute(chat, "gen_ai.usage.output_tokens").is_number(),
            "{chat:#}"
        );
        assert!(
            attribute(chat, "gen_ai.usage.cache_read.input_tokens").is_number(),
            "{chat:#}"
        );
    }
    let reasons: Vec<&Value> = chats
        .iter()
        .map(|chat| attribute(chat, "gen_ai.response.finish_reasons"))
        .collect();
    assert!(reasons.contains(&&json!(["tool_call"])), "{reasons:?}");
    assert!(reasons.contains(&&json!(["stop"])), "{reasons:?}");

    let executions = by_name(&spans, "execute_tool grep");
    assert_eq!(
        executions.len(),
        2,
        "the local call and the server's: {spans:#?}"
    );
    let local = executions
        .iter()
        .find(|span| parent(span) == Some(root))
        .expect("the local execute_tool is the run's child");
    assert_eq!(attribute(local, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(attribute(local, "gen_ai.tool.name"), "grep");
    assert_eq!(attribute(local, "gen_ai.tool.type"), "function");
    let call_id = outcome
        .messages
        .iter()
        .find_map(|message| match message {
            AgentMessage::Assistant(reply) => reply.tool_calls().next().map(|call| call.id.clone()),
            _ => None,
        })
        .expect("the run made one call");
    assert_eq!(attribute(local, "gen_ai.tool.call.id"), call_id.as_str());
    assert!(attribute(local, "error.type").is_null(), "{local:#}");

    let served = by_name(&spans, "tools/call grep");
    assert_eq!(served.len(), 1, "{spans:#?}");
    assert_eq!(
        parent(served[0]),
        Some(*local),
        "the server's span continues the local call"
    );
    let remote = executions
        .iter()
        .find(|span| parent(span) == Some(served[0]))
        .expect("the server's execute_tool is its tools/call's child");
    assert_eq!(attribute(remote, "gen_ai.tool.name"), "grep");

    // Content capture is off: the arguments never left either process.
    let everything = client
        .get(format!("{phoenix}/v1/projects/default/spans?limit=1000"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(everything.contains(&trace_id));
    assert!(
        !everything.contains(SECRET),
        "the secret argument was exported: {everything}"
    );

    otlp.shutdown().unwrap();
    phoenix_process.kill().await.unwrap();
}
