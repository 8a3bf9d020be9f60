//! The four clients against llmock (PyPI `llmock==0.2.2`, installed by `.ci/run`), an independently
//! written mock server that speaks OpenAI's chat completions and Responses API (its `openai_responses`
//! router, whose items and events follow the `openai` SDK's types), Anthropic's Messages API and Gemini's
//! `streamGenerateContent?alt=sse`, with tool calling and fault injection. Each test starts its own
//! llmock on a free loopback port and stops it when done.
//!
//! The `llmock` program is `$YIEM_LLMOCK`, else `<target dir>/python-llmock/bin/llmock` (where `.ci/run`
//! installs it); when it is not there, the first test installs it (a virtualenv and `pip install
//! llmock==0.2.2`), so `cargo test` on a fresh machine needs only Python 3 and the network.

mod common;

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::weather_tool;
use futures::StreamExt;
use yiem_core::{
    agent::{Agent, AgentSettings},
    event::AgentEvent,
    exec::CancellationToken,
    llm::{
        AnthropicConfig, AnthropicModel, GeminiConfig, GeminiModel, MessageAssembler, Model,
        ModelEvent, ModelRequest, OpenAiConfig, OpenAiModel, OpenAiResponsesConfig,
        OpenAiResponsesModel, RetryPolicy,
    },
    message::{AgentMessage, StopReason, UserMessage},
    store::ToolStore,
};

/// A running llmock, stopped on drop.
struct Llmock {
    child: Child,
    port: u16,
}

impl Llmock {
    fn program() -> PathBuf {
        if let Some(path) = std::env::var_os("YIEM_LLMOCK") {
            return PathBuf::from(path);
        }
        static INSTALLED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        INSTALLED
            .get_or_init(|| {
                common::venv::venv_program("python-llmock", &["llmock==0.2.2"], "llmock", "llmock")
            })
            .clone()
    }

    fn start(args: &[&str]) -> Llmock {
        // One server starts at a time, from choosing its port until it listens. Otherwise two tests could
        // be handed the same free port: one llmock fails to bind and exits, and its test, whose probe
        // reached the other test's server, later finds nothing listening once that test is done.
        static STARTING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = STARTING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let program = Self::program();
        assert!(
            program.exists(),
            "llmock is not installed at {}: run .ci/run, or `python3 -m venv <target>/python-llmock && \
             <target>/python-llmock/bin/pip install llmock==0.2.2`, or set YIEM_LLMOCK",
            program.display()
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(&program)
            .args(["serve", "--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--response-style", "echo", "--log-level", "warning"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut server = Llmock { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("llmock exited before it listened: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "llmock did not listen within 60 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // What answered must be this llmock, not another process that took the port meanwhile.
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("llmock exited after its port answered (another process holds it?): {status}");
        }
        server
    }

    fn root(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The four clients, pointed at this server, with quick retries.
    fn models(&self) -> Vec<Arc<dyn Model>> {
        let retry = RetryPolicy::new(2, Duration::from_millis(1), Duration::from_secs(2));
        vec![
            Arc::new(
                OpenAiModel::new(
                    OpenAiConfig::new(format!("{}/v1", self.root()), "gpt-4o-mini")
                        .api_key("sk-test")
                        .retry(retry),
                )
                .unwrap(),
            ),
            Arc::new(
                OpenAiResponsesModel::new(
                    OpenAiResponsesConfig::new("gpt-5-mini")
                        .base_url(format!("{}/v1", self.root()))
                        .api_key("sk-test")
                        .retry(retry),
                )
                .unwrap(),
            ),
            Arc::new(
                AnthropicModel::new(
                    AnthropicConfig::new("sk-ant-test", "claude-sonnet-4-6")
                        .base_url(format!("{}/anthropic", self.root()))
                        .retry(retry),
                )
                .unwrap(),
            ),
            Arc::new(
                GeminiModel::new(
                    GeminiConfig::new("AIza-test", "gemini-2.5-pro")
                        .base_url(format!("{}/gemini/v1beta", self.root()))
                        .retry(retry),
                )
                .unwrap(),
            ),
        ]
    }
}

impl Drop for Llmock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn request(text: &str) -> ModelRequest {
    ModelRequest::new("You are terse.", vec![UserMessage::text(text).into()])
}

async fn events(model: &dyn Model, request: ModelRequest) -> Vec<ModelEvent> {
    tokio::time::timeout(
        Duration::from_secs(60),
        model.stream(request, CancellationToken::new()).collect(),
    )
    .await
    .expect("the stream ended")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_streams_a_text_reply_from_llmock() {
    let server = Llmock::start(&[]);
    for model in server.models() {
        let streamed = events(&*model, request("Say hello.")).await;
        let mut assembler = MessageAssembler::new();
        for event in &streamed {
            assembler.apply(event.clone());
        }
        let reply = assembler.finish();
        assert_eq!(
            reply.stop_reason,
            StopReason::Stop,
            "{}: {streamed:?}",
            model.name()
        );
        assert!(
            !reply.text_content().is_empty(),
            "{}: {streamed:?}",
            model.name()
        );
        assert!(
            reply.usage.input_tokens > 0,
            "{}: {:?}",
            model.name(),
            reply.usage
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_runs_a_tool_call_round_trip_with_llmock() {
    let server = Llmock::start(&["--tool-mode", "auto"]);
    for model in server.models() {
        let name = model.name().to_owned();
        let tools = ToolStore::new("weather");
        tools.register(weather_tool()).unwrap();
        let agent = Agent::builder()
            .system_prompt("Use the tools.")
            .tools(tools)
            .shared_model(model)
            .build();
        let ran = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&ran);
        agent.on_event(move |event| {
            if let AgentEvent::ToolExecutionEnd { call, is_error, .. } = event {
                seen.lock().unwrap().push((call.name.clone(), *is_error));
            }
        });
        let added = tokio::time::timeout(
            Duration::from_secs(60),
            agent.prompt("What is the weather in Tokyo?"),
        )
        .await
        .expect("the run ended")
        .messages;
        // llmock calls the tool with arguments valid for its schema, then answers once the result is back.
        assert_eq!(
            *ran.lock().unwrap(),
            vec![("get_weather".to_owned(), false)],
            "{name}: {added:?}"
        );
        let Some(AgentMessage::Assistant(last)) = added.last() else {
            panic!("{name}: the run did not end with a reply: {added:?}");
        };
        assert_eq!(last.stop_reason, StopReason::Stop, "{name}: {last:?}");
        assert!(!last.text_content().is_empty(), "{name}: {last:?}");
    }
}

/// A prompt llmock echoes back in more pieces than the chunk a stream fault hits (at most the 6th), so
/// the fault always fires.
const LONG_PROMPT: &str = "one two three four five six seven eight nine ten eleven twelve";

/// Each fault llmock injects ends every client's stream with exactly one error, last, whose text starts
/// as `expected` says (after `POST <url> failed: `).
async fn every_client_reports(args: &[&str], expected: &[&str]) {
    let server = Llmock::start(args);
    for model in server.models() {
        let streamed = events(&*model, request(LONG_PROMPT)).await;
        let errors: Vec<&String> = streamed
            .iter()
            .filter_map(|event| match event {
                ModelEvent::Error(text) => Some(text),
                _ => None,
            })
            .collect();
        assert_eq!(errors.len(), 1, "{}: {streamed:?}", model.name());
        assert!(
            matches!(streamed.last(), Some(ModelEvent::Error(_))),
            "{}: {streamed:?}",
            model.name()
        );
        let (_, reason) = errors[0]
            .split_once(" failed: ")
            .unwrap_or_else(|| panic!("{}: {}", model.name(), errors[0]));
        assert!(
            expected.iter().any(|start| reason.starts_with(start)),
            "{}: {reason}",
            model.name()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_stream_is_an_error_for_every_client() {
    every_client_reports(
        &["--stream-fault", "truncate=1.0"],
        &["the stream ended after"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_chunk_is_an_error_for_every_client() {
    every_client_reports(
        &["--stream-fault", "malformed=1.0"],
        &["chunk ", "event ", "the stream is not a valid event stream"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_is_an_error_for_every_client() {
    every_client_reports(
        &["--stream-fault", "disconnect=1.0"],
        &["the stream broke off after", "the stream ended after"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_and_rate_limits_are_retried_then_reported() {
    every_client_reports(
        &["--error-rate", "500=1.0"],
        &["HTTP 500 Internal Server Error"],
    )
    .await;
    every_client_reports(
        &["--error-rate", "429=1.0"],
        &["HTTP 429 Too Many Requests"],
    )
    .await;
}
