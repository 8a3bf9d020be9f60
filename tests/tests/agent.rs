//! The agent loop on the scripted model: the seeds' scenario traces event by event, steering, follow-ups,
//! abort, queued prompts, termination and the hooks.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::{Notify, watch};
use yiem_core::{
    agent::{Agent, AgentSettings, TurnUpdate},
    event::AgentEvent,
    exec::BatchMode,
    llm::{ModelRequest, ScriptedModel, ScriptedTurn},
    message::{AgentMessage, StopReason, UserMessage},
    store::ToolStore,
    tool,
    tool::{AgentToolResult, ToolContext},
};

/// The files the scenario tools read and write.
static FILES: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());
/// Whether `read`'s end event has been emitted (`trace` says so; `file_tools` starts it false): `write`
/// waits for it, which makes the parallel trace deterministic.
static READ_ENDED: LazyLock<watch::Sender<bool>> = LazyLock::new(|| watch::Sender::new(false));
/// The tools below share statics, so the tests in this file run one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    /// The file to read.
    file: String,
}

/// Read a file.
#[tool(parallel)]
async fn read(args: ReadArgs) -> Result<String, String> {
    let content = FILES.lock().unwrap().get(&args.file).cloned();
    content.ok_or_else(|| format!("no file `{}`", args.file))
}

#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    /// The file to write.
    file: String,
    /// What to write.
    content: String,
}

/// Write a file.
#[tool(parallel)]
async fn write(args: WriteArgs) -> String {
    // The time limit only keeps a test that forgot `trace` from hanging; its trace then fails.
    let mut ended = READ_ENDED.subscribe();
    let _ = tokio::time::timeout(Duration::from_secs(60), ended.wait_for(|ended| *ended)).await;
    FILES
        .lock()
        .unwrap()
        .insert(args.file.clone(), args.content);
    format!("wrote {}", args.file)
}

fn file_tools() -> ToolStore {
    READ_ENDED.send_replace(false);
    FILES
        .lock()
        .unwrap()
        .insert("text.txt".into(), "hello from text.txt".into());
    let store = ToolStore::new("files");
    store.register(read_tool()).unwrap();
    store.register(write_tool()).unwrap();
    store
}

/// Records events as short lines; a run of `MessageUpdate`s becomes one `MessageUpdate*` line.
fn trace(agent: &Agent) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&lines);
    agent.on_event(move |event| {
        let line = match event {
            AgentEvent::AgentStart => "AgentStart".to_owned(),
            AgentEvent::TurnStart => "TurnStart".to_owned(),
            AgentEvent::MessageStart { message } => format!("MessageStart({})", role(message)),
            AgentEvent::MessageUpdate { message, .. } => {
                format!("MessageUpdate*({})", role(message))
            }
            AgentEvent::MessageEnd { message } => format!("MessageEnd({})", role(message)),
            AgentEvent::ToolExecutionStart { call } => format!("ToolExecutionStart({})", call.name),
            AgentEvent::ToolExecutionUpdate { call, .. } => {
                format!("ToolExecutionUpdate({})", call.name)
            }
            AgentEvent::ToolExecutionEnd { call, .. } => format!("ToolExecutionEnd({})", call.name),
            AgentEvent::TurnEnd { tool_results, .. } => {
                format!("TurnEnd({} results)", tool_results.len())
            }
            AgentEvent::AgentEnd { messages } => format!("AgentEnd({} messages)", messages.len()),
            other => format!("{other:?}"),
        };
        let mut lines = sink.lock().unwrap();
        if !(line.starts_with("MessageUpdate*") && lines.last() == Some(&line)) {
            lines.push(line);
        }
        if let AgentEvent::ToolExecutionEnd { call, .. } = event
            && call.name == "read"
        {
            READ_ENDED.send_replace(true);
        }
    });
    lines
}

fn role(message: &AgentMessage) -> String {
    match message {
        AgentMessage::User(_) => "User".into(),
        AgentMessage::Assistant(_) => "Assistant".into(),
        AgentMessage::ToolResult(result) => format!("ToolResult[{}]", result.tool_name),
        other => format!("{other:?}"),
    }
}

fn assistant(message: &AgentMessage) -> &yiem_core::message::AssistantMessage {
    match message {
        AgentMessage::Assistant(message) => message,
        other => panic!("expected an assistant message, got {other:?}"),
    }
}

#[tokio::test]
async fn scenario_one_reads_a_file_with_the_exact_event_sequence() {
    let _serial = SERIAL.lock().await;
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("read", json!({"file": "text.txt"})),
        ScriptedTurn::text("The file says: hello from text.txt"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(file_tools())
        .build();
    let events = trace(&agent);

    let messages = agent
        .prompt("what is the content of text.txt file")
        .await
        .messages;

    assert_eq!(
        *events.lock().unwrap(),
        [
            "AgentStart",
            "TurnStart",
            "MessageStart(User)",
            "MessageEnd(User)",
            "MessageStart(Assistant)",
            "MessageUpdate*(Assistant)",
            "MessageEnd(Assistant)",
            "ToolExecutionStart(read)",
            "ToolExecutionEnd(read)",
            "MessageStart(ToolResult[read])",
            "MessageEnd(ToolResult[read])",
            "TurnEnd(1 results)",
            "TurnStart",
            "MessageStart(Assistant)",
            "MessageUpdate*(Assistant)",
            "MessageEnd(Assistant)",
            "TurnEnd(0 results)",
            "AgentEnd(4 messages)",
        ]
    );
    assert_eq!(messages.len(), 4);
    let AgentMessage::ToolResult(result) = &messages[2] else {
        panic!()
    };
    assert_eq!(result.text_content(), "hello from text.txt");
    assert_eq!(
        assistant(&messages[3]).text_content(),
        "The file says: hello from text.txt"
    );
    // The second request carried the tool result back to the model.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].messages.len(), 3);
    assert_eq!(
        requests[0]
            .tools
            .iter()
            .map(|t| t.name().to_owned())
            .collect::<Vec<_>>(),
        ["read", "write"]
    );
}

fn copy_script() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedTurn::tool_calls([
            ("read", json!({"file": "text.txt"})),
            (
                "write",
                json!({"file": "text.md", "content": "hello from text.txt"}),
            ),
        ]),
        ScriptedTurn::text("I've copied text.txt to text.md."),
    ])
}

const COPY_PROLOGUE: [&str; 7] = [
    "AgentStart",
    "TurnStart",
    "MessageStart(User)",
    "MessageEnd(User)",
    "MessageStart(Assistant)",
    "MessageUpdate*(Assistant)",
    "MessageEnd(Assistant)",
];

const COPY_EPILOGUE: [&str; 7] = [
    "TurnEnd(2 results)",
    "TurnStart",
    "MessageStart(Assistant)",
    "MessageUpdate*(Assistant)",
    "MessageEnd(Assistant)",
    "TurnEnd(0 results)",
    "AgentEnd(5 messages)",
];

#[tokio::test]
async fn scenario_two_copies_a_file_with_parallel_tool_calls() {
    let _serial = SERIAL.lock().await;
    let agent = Agent::builder()
        .model(copy_script())
        .tools(file_tools())
        .build();
    let events = trace(&agent);
    let messages = agent.prompt("copy text.txt to text.md").await.messages;
    let middle = [
        "ToolExecutionStart(read)",
        "ToolExecutionStart(write)",
        "ToolExecutionEnd(read)",
        "ToolExecutionEnd(write)",
        "MessageStart(ToolResult[read])",
        "MessageEnd(ToolResult[read])",
        "MessageStart(ToolResult[write])",
        "MessageEnd(ToolResult[write])",
    ];
    let expected: Vec<&str> = COPY_PROLOGUE
        .iter()
        .chain(&middle)
        .chain(&COPY_EPILOGUE)
        .copied()
        .collect();
    assert_eq!(*events.lock().unwrap(), expected);
    assert_eq!(
        assistant(&messages[4]).text_content(),
        "I've copied text.txt to text.md."
    );
    assert_eq!(
        FILES.lock().unwrap().get("text.md").map(String::as_str),
        Some("hello from text.txt")
    );
}

#[tokio::test]
async fn scenario_two_copies_a_file_with_sequential_tool_calls() {
    let _serial = SERIAL.lock().await;
    let agent = Agent::builder()
        .model(copy_script())
        .tools(file_tools())
        .tool_execution(BatchMode::Sequential)
        .build();
    let events = trace(&agent);
    agent.prompt("copy text.txt to text.md").await;
    let middle = [
        "ToolExecutionStart(read)",
        "ToolExecutionEnd(read)",
        "MessageStart(ToolResult[read])",
        "MessageEnd(ToolResult[read])",
        "ToolExecutionStart(write)",
        "ToolExecutionEnd(write)",
        "MessageStart(ToolResult[write])",
        "MessageEnd(ToolResult[write])",
    ];
    let expected: Vec<&str> = COPY_PROLOGUE
        .iter()
        .chain(&middle)
        .chain(&COPY_EPILOGUE)
        .copied()
        .collect();
    assert_eq!(*events.lock().unwrap(), expected);
}

/// A tool that waits until the test releases it.
static RELEASE: Notify = Notify::const_new();
static STARTED: Notify = Notify::const_new();

/// Work until released.
#[tool(parallel)]
async fn work(ctx: ToolContext) -> String {
    STARTED.notify_one();
    tokio::select! {
        () = RELEASE.notified() => "work done".to_owned(),
        () = ctx.cancelled() => "noticed the abort".to_owned(),
    }
}

fn work_tools() -> ToolStore {
    let store = ToolStore::new("work");
    store.register(work_tool()).unwrap();
    store
}

/// Replies to whatever the last message was, so tests can see what the model was sent.
fn echo_model() -> ScriptedModel {
    ScriptedModel::from_fn(|request: &ModelRequest| match request.messages.last() {
        Some(AgentMessage::User(user)) if user.text_content() == "do work" => {
            ScriptedTurn::tool_call("work", json!({}))
        }
        Some(AgentMessage::User(user)) => {
            ScriptedTurn::text(format!("you said: {}", user.text_content()))
        }
        Some(AgentMessage::ToolResult(result)) => {
            ScriptedTurn::text(format!("tool said: {}", result.text_content()))
        }
        _ => ScriptedTurn::text("?"),
    })
}

fn texts(messages: &[AgentMessage]) -> Vec<String> {
    messages
        .iter()
        .map(|message| match message {
            AgentMessage::User(user) => format!("user: {}", user.text_content()),
            AgentMessage::Assistant(reply) if reply.tool_calls().next().is_some() => {
                format!(
                    "assistant calls {}",
                    reply
                        .tool_calls()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                )
            }
            AgentMessage::Assistant(reply) => format!("assistant: {}", reply.text_content()),
            AgentMessage::ToolResult(result) => format!("result: {}", result.text_content()),
            other => format!("{other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_while_a_tool_runs_is_injected_after_the_turn() {
    let _serial = SERIAL.lock().await;
    let agent = Agent::builder()
        .model(echo_model())
        .tools(work_tools())
        .build();
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("do work").await.messages }
    });
    STARTED.notified().await;
    agent.steer("also check the logs");
    RELEASE.notify_one();
    let messages = run.await.unwrap();
    assert_eq!(
        texts(&messages),
        [
            "user: do work",
            "assistant calls work",
            "result: work done",
            "user: also check the logs",
            "assistant: you said: also check the logs",
        ]
    );
}

#[tokio::test]
async fn a_follow_up_runs_after_the_final_answer() {
    let _serial = SERIAL.lock().await;
    let agent = Agent::builder().model(echo_model()).build();
    agent.follow_up("and one more thing");
    let messages = agent.prompt("hello").await.messages;
    assert_eq!(
        texts(&messages),
        [
            "user: hello",
            "assistant: you said: hello",
            "user: and one more thing",
            "assistant: you said: and one more thing",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_sent_while_busy_are_all_processed_in_order() {
    let _serial = SERIAL.lock().await;
    let agent = Agent::builder()
        .model(echo_model())
        .tools(work_tools())
        .build();
    let first = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("do work").await.messages }
    });
    STARTED.notified().await;
    let mut queued = Vec::new();
    for text in ["second", "third"] {
        let agent = agent.clone();
        let mut prompt = Box::pin(async move { agent.prompt(text).await.messages });
        // Polled once here, the prompt takes its place in the queue (first come, first served) before
        // the next one is sent.
        assert!(futures::poll!(prompt.as_mut()).is_pending());
        queued.push(tokio::spawn(prompt));
    }
    assert!(agent.is_running());
    RELEASE.notify_one();
    let first = first.await.unwrap();
    let second = queued.remove(0).await.unwrap();
    let third = queued.remove(0).await.unwrap();
    assert_eq!(
        texts(&first),
        [
            "user: do work",
            "assistant calls work",
            "result: work done",
            "assistant: tool said: work done"
        ]
    );
    assert_eq!(
        texts(&second),
        ["user: second", "assistant: you said: second"]
    );
    assert_eq!(texts(&third), ["user: third", "assistant: you said: third"]);
    assert_eq!(agent.messages().len(), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_during_a_tool_cancels_it_and_ends_the_run_with_a_result_per_call() {
    let _serial = SERIAL.lock().await;
    let model = echo_model();
    let agent = Agent::builder()
        .model(model.clone())
        .tools(work_tools())
        .build();
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("do work").await.messages }
    });
    STARTED.notified().await;
    agent.abort();
    let messages = run.await.unwrap();
    assert_eq!(
        texts(&messages),
        [
            "user: do work",
            "assistant calls work",
            "result: tool `work` was aborted before it finished"
        ]
    );
    let AgentMessage::ToolResult(result) = &messages[2] else {
        panic!()
    };
    assert!(result.is_error());
    assert_eq!(model.requests().len(), 1, "no model call after the abort");
    assert!(!agent.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_during_a_model_stream_ends_the_reply_as_aborted() {
    let _serial = SERIAL.lock().await;
    let model = ScriptedModel::new([ScriptedTurn::text(
        "a long answer that streams slowly, one small chunk at a time",
    )])
    .chunk_size(2)
    .pause(Duration::from_millis(20));
    let agent = Agent::builder().model(model).build();
    let updates = Arc::new(Notify::new());
    let signal = Arc::clone(&updates);
    agent.on_event(move |event| {
        if matches!(event, AgentEvent::MessageUpdate { .. }) {
            signal.notify_one();
        }
    });
    let events = trace(&agent);
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("talk").await.messages }
    });
    updates.notified().await;
    agent.abort();
    let messages = run.await.unwrap();
    let reply = assistant(&messages[1]);
    assert_eq!(reply.stop_reason, StopReason::Aborted);
    assert_eq!(
        reply.error.as_deref(),
        Some("the run was aborted while the model was answering")
    );
    assert!(
        reply.text_content().len()
            < "a long answer that streams slowly, one small chunk at a time".len()
    );
    let events = events.lock().unwrap();
    assert_eq!(
        events[events.len() - 3..],
        [
            "MessageEnd(Assistant)",
            "TurnEnd(0 results)",
            "AgentEnd(2 messages)"
        ]
    );
}

/// Finish the job and stop the agent.
#[tool(parallel)]
async fn finish_job() -> AgentToolResult {
    AgentToolResult::text("job finished").with_terminate(true)
}

#[tokio::test]
async fn a_terminating_batch_ends_the_run_with_a_reply_built_from_the_results() {
    let _serial = SERIAL.lock().await;
    let store = ToolStore::new("finish");
    store.register(finish_job_tool()).unwrap();
    let model = ScriptedModel::new([ScriptedTurn::tool_call("finish_job", json!({}))]);
    let agent = Agent::builder().model(model.clone()).tools(store).build();
    let events = trace(&agent);
    let messages = agent.prompt("finish it").await.messages;
    let last = assistant(messages.last().unwrap());
    assert_eq!(last.stop_reason, StopReason::ToolUseTerminated);
    assert_eq!(
        last.text_content(),
        "Tool execution completed.\njob finished"
    );
    assert_eq!(last.error, None);
    assert_eq!(model.requests().len(), 1);
    let events = events.lock().unwrap();
    assert_eq!(
        events[events.len() - 4..],
        [
            "TurnEnd(1 results)",
            "MessageStart(Assistant)",
            "MessageEnd(Assistant)",
            "AgentEnd(4 messages)"
        ]
    );
}

#[tokio::test]
async fn tool_calls_cut_off_by_the_output_limit_are_refused_not_run() {
    let _serial = SERIAL.lock().await;
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("read", json!({"file": "text.txt"}))
            .stop_reason(StopReason::Length),
        ScriptedTurn::text("I will ask for less."),
    ]);
    let agent = Agent::builder().model(model).tools(file_tools()).build();
    let messages = agent.prompt("read it").await.messages;
    let AgentMessage::ToolResult(result) = &messages[2] else {
        panic!()
    };
    assert!(result.is_error());
    assert_eq!(
        result.text_content(),
        "tool call `read` was not run: the reply hit the model's output limit (finish_reason \"length\"), so its arguments may be truncated; call the tool again with shorter arguments"
    );
    assert_eq!(
        assistant(&messages[3]).text_content(),
        "I will ask for less."
    );
}

#[tokio::test]
async fn a_model_error_ends_the_run_with_an_error_reply() {
    let _serial = SERIAL.lock().await;
    let agent = Agent::builder()
        .model(ScriptedModel::new([ScriptedTurn::error(
            "rate limited for good",
        )]))
        .build();
    let messages = agent.prompt("hi").await.messages;
    let reply = assistant(&messages[1]);
    assert_eq!(reply.stop_reason, StopReason::Error);
    assert_eq!(reply.error.as_deref(), Some("rate limited for good"));
}

#[tokio::test]
async fn prepare_context_filters_tools_and_edits_the_prompt() {
    let _serial = SERIAL.lock().await;
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("write", json!({"file": "x", "content": "y"})),
        ScriptedTurn::text("ok"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(file_tools())
        .system_prompt("base")
        .prepare_context(|context| {
            context.tools.retain(|tool| tool.name() == "read");
            context.system_prompt.push_str(" + read-only mode");
        })
        .build();
    let messages = agent.prompt("write something").await.messages;
    let AgentMessage::ToolResult(result) = &messages[2] else {
        panic!()
    };
    assert_eq!(
        result.text_content(),
        "tool `write` not found. Available tools: read"
    );
    let request = &model.requests()[0];
    assert_eq!(request.system_prompt, "base + read-only mode");
    assert_eq!(request.tools.len(), 1);
}

#[tokio::test]
async fn prepare_next_turn_can_stop_the_run_and_change_the_prompt() {
    let _serial = SERIAL.lock().await;
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("read", json!({"file": "text.txt"})),
        ScriptedTurn::text("never asked"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(file_tools())
        .prepare_next_turn(|context| {
            assert_eq!(context.tool_results.len(), 1);
            Some(TurnUpdate::default().system_prompt("changed").stopping())
        })
        .build();
    let messages = agent.prompt("read").await.messages;
    assert_eq!(messages.len(), 3);
    assert_eq!(model.requests().len(), 1);
    assert_eq!(model.remaining(), 1);
}

#[tokio::test]
async fn the_conversation_carries_over_between_prompts() {
    let _serial = SERIAL.lock().await;
    let agent = Agent::builder().model(echo_model()).build();
    agent.prompt("one").await;
    agent.prompt_messages(vec![UserMessage::text("two")]).await;
    assert_eq!(
        texts(&agent.messages()),
        [
            "user: one",
            "assistant: you said: one",
            "user: two",
            "assistant: you said: two"
        ]
    );
}

#[derive(Deserialize, JsonSchema)]
struct Size {
    /// How many items.
    count: u32,
}

/// Ask the user how many items to make.
#[tool]
async fn make_items(ctx: ToolContext) -> Result<String, yiem_core::ask::ElicitError> {
    Ok(match ctx.elicit::<Size>("How many items?").await? {
        yiem_core::ask::ElicitationAnswer::Accept(size) => format!("made {} items", size.count),
        _ => "the user did not say how many".into(),
    })
}

/// The text of the tool result an agent got for one `make_items` call, with `agent` built from `builder`.
async fn make_items_result(builder: yiem_core::agent::AgentBuilder) -> (bool, String) {
    let store = ToolStore::new("items");
    store.register(make_items_tool()).unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("make_items", json!({})),
        ScriptedTurn::text("done"),
    ]);
    let agent = builder.model(model).tools(store).build();
    let messages = agent.prompt("make some").await.messages;
    let AgentMessage::ToolResult(result) = &messages[2] else {
        panic!("{messages:?}")
    };
    (result.is_error(), result.text_content())
}

#[tokio::test]
async fn a_tools_question_in_an_agent_goes_to_its_elicitation_handler() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let builder = Agent::builder().elicitation(move |question: yiem_core::ask::Elicitation| {
        seen.lock()
            .unwrap()
            .push((question.server, question.message, question.schema));
        async move {
            yiem_core::ask::ElicitationAnswer::Accept(
                json!({"count": 3}).as_object().unwrap().clone(),
            )
        }
    });
    assert_eq!(
        make_items_result(builder).await,
        (false, "made 3 items".to_owned())
    );
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].0, "items");
    assert_eq!(asked[0].1, "How many items?");
    assert_eq!(asked[0].2["properties"]["count"]["type"], "integer");
}

#[tokio::test]
async fn without_an_elicitation_handler_an_agent_pauses_on_a_tools_question() {
    let store = ToolStore::new("items");
    store.register(make_items_tool()).unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([ScriptedTurn::tool_call(
            "make_items",
            json!({}),
        )]))
        .tools(store)
        .build();
    let outcome = agent.prompt("make some").await;
    let questions = outcome.pending_questions();
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0].message, "How many items?");
    assert_eq!(questions[0].key, "question-1");
}

#[tokio::test]
async fn without_an_elicitation_handler_an_executors_call_cannot_ask() {
    let store = ToolStore::new("items");
    store.register(make_items_tool()).unwrap();
    let batch = yiem_core::exec::ToolExecutor::new()
        .execute(
            &store,
            vec![yiem_core::exec::ToolCall::new(
                "c1",
                "make_items",
                json!({}),
            )],
            &yiem_core::exec::CancellationToken::new(),
        )
        .await;
    assert!(batch.messages[0].is_error());
    assert_eq!(
        batch.messages[0].text_content(),
        "the user cannot be asked: this call runs where no person can be asked (no MCP client that accepts questions, no elicitation handler); go on without the answer, or tell the user what you need"
    );
}
