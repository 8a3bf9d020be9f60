//! The batch pipeline: exactly one result per call, in call order, whatever fails; sequential and
//! parallel batches; hooks; events; abort; terminate.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use yiem_core::{
    event::{AgentEvent, EventBus},
    exec::{
        BatchMode, Block, CancellationToken, ToolCall, ToolExecutor, ToolHooks, ToolResultPatch,
    },
    message::{AssistantContent, AssistantMessage},
    store::ToolStore,
    tool,
    tool::{AgentTool, AgentToolResult, Content, ToolContext},
};

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

/// Echo the text.
#[tool(parallel)]
async fn echo(args: EchoArgs) -> String {
    args.text
}

/// Always fail.
#[tool(parallel)]
async fn fail(args: EchoArgs) -> Result<String, String> {
    Err(format!("cannot handle `{}`", args.text))
}

/// Always panic.
#[tool(parallel)]
async fn boom() -> String {
    panic!("boom went the tool")
}

/// Take too long.
#[tool(parallel, timeout_ms = 50)]
async fn slow() -> String {
    std::future::pending::<()>().await;
    "never".into()
}

/// Guarded by a hook.
#[tool(parallel)]
async fn guarded() -> String {
    "should have been blocked".into()
}

/// Patched by a hook.
#[tool(parallel)]
async fn patched() -> String {
    "secret".into()
}

/// Its after hook panics.
#[tool(parallel)]
async fn after_panics() -> String {
    "fine until the hook".into()
}

/// A sequential tool.
#[tool]
async fn one_at_a_time(args: EchoArgs) -> String {
    args.text
}

fn store() -> ToolStore {
    let store = ToolStore::new("pipeline");
    for tool in [
        echo_tool(),
        fail_tool(),
        boom_tool(),
        slow_tool(),
        guarded_tool(),
        patched_tool(),
        after_panics_tool(),
        one_at_a_time_tool(),
    ] {
        store.register(tool).unwrap();
    }
    store
}

fn hooks() -> ToolHooks {
    ToolHooks::new()
        .before_tool_call(|ctx| async move {
            (ctx.call.name == "guarded")
                .then(|| Block::new("`guarded` needs approval from a human"))
        })
        .after_tool_call(|ctx| async move {
            match ctx.call.name.as_str() {
                "patched" => Some(
                    ToolResultPatch::default()
                        .content(vec![Content::text("[redacted]")])
                        .details(json!({"redacted": true})),
                ),
                "after_panics" => panic!("the after hook fell over"),
                _ => None,
            }
        })
}

/// Records every event's kind and call id, in order.
fn recorder(bus: &EventBus) -> Arc<Mutex<Vec<String>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&log);
    bus.on_event(move |event| {
        let line = match event {
            AgentEvent::ToolExecutionStart { call } => format!("start {}", call.id),
            AgentEvent::ToolExecutionUpdate { call, partial } => {
                format!("update {} {}", call.id, partial.text_content())
            }
            AgentEvent::ToolExecutionEnd { call, is_error, .. } => {
                format!("end {} {}", call.id, if *is_error { "error" } else { "ok" })
            }
            AgentEvent::MessageStart { message } => match &**message {
                yiem_core::message::AgentMessage::ToolResult(m) => {
                    format!("message_start {}", m.tool_call_id)
                }
                other => format!("{other:?}"),
            },
            AgentEvent::MessageEnd { message } => match &**message {
                yiem_core::message::AgentMessage::ToolResult(m) => {
                    format!("message_end {}", m.tool_call_id)
                }
                other => format!("{other:?}"),
            },
            other => format!("{other:?}"),
        };
        sink.lock().unwrap().push(line);
    });
    log
}

/// The eleven kinds of call in the mixed batch, with what each must produce.
fn mixed_call(i: usize) -> (ToolCall, bool, String) {
    let id = format!("call-{i}");
    let (name, args, is_error, text): (&str, Value, bool, String) = match i % 11 {
        0 => ("echo", json!({"text": format!("hello {i}")}), false, format!("hello {i}")),
        1 => ("ehco", json!({"text": "x"}), true, "tool `ehco` not found. Did you mean `echo`? Available tools: echo, fail, boom, slow, guarded, patched, after_panics, one_at_a_time".into()),
        2 => ("echo", json!("{\"text\": \"unterminated"), true, "arguments for tool `echo` are not valid JSON (EOF while parsing a string at line 1 column 22); send the arguments as a JSON object".into()),
        3 => ("echo", json!({"text": 12}), true, "invalid arguments for tool `echo`: at `/text`: expected a string, got the number 12\nvalid properties: `text`".into()),
        4 => ("echo", json!({}), true, "invalid arguments for tool `echo`: missing required property `text` (expected a string)\nvalid properties: `text`".into()),
        5 => ("fail", json!({"text": "this"}), true, "cannot handle `this`".into()),
        6 => ("boom", json!({}), true, "tool `boom` panicked: boom went the tool".into()),
        7 => ("slow", json!({}), true, "tool `slow` timed out after 50 ms".into()),
        8 => ("guarded", json!({}), true, "`guarded` needs approval from a human".into()),
        9 => ("patched", json!({}), false, "[redacted]".into()),
        _ => ("after_panics", json!({}), true, "the after_tool_call hook panicked for tool `after_panics`: the after hook fell over".into()),
    };
    (ToolCall::new(id, name, args), is_error, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_mixed_calls_give_a_hundred_results_in_call_order() {
    let executor = ToolExecutor::new().with_hooks(hooks());
    let log = recorder(executor.events());
    let expected: Vec<_> = (0..100).map(mixed_call).collect();
    let calls = expected.iter().map(|(call, _, _)| call.clone()).collect();

    let batch = executor
        .execute(&store(), calls, &CancellationToken::new())
        .await;

    assert_eq!(batch.messages.len(), 100);
    for (message, (call, is_error, text)) in batch.messages.iter().zip(&expected) {
        assert_eq!(message.tool_call_id, call.id);
        assert_eq!(message.tool_name, call.name);
        assert_eq!(message.is_error(), *is_error, "{}", call.id);
        assert_eq!(message.text_content(), *text, "{}", call.id);
    }
    assert_eq!(
        batch.messages[9].result.details(),
        &json!({"redacted": true})
    );
    assert!(!batch.terminate);

    let log = log.lock().unwrap();
    for (call, _, _) in &expected {
        let count = |prefix: &str| {
            log.iter()
                .filter(|line| **line == format!("{prefix} {}", call.id))
                .count()
        };
        let ends = log
            .iter()
            .filter(|line| line.starts_with(&format!("end {} ", call.id)))
            .count();
        assert_eq!(
            (
                count("start"),
                ends,
                count("message_start"),
                count("message_end")
            ),
            (1, 1, 1, 1),
            "{}",
            call.id
        );
    }
    // The result messages are emitted after every call ended, in call order.
    let messages: Vec<&String> = log
        .iter()
        .filter(|line| line.starts_with("message_start"))
        .collect();
    let in_order: Vec<String> = (0..100)
        .map(|i| format!("message_start call-{i}"))
        .collect();
    assert_eq!(messages, in_order.iter().collect::<Vec<_>>());
}

/// Waits until eight calls are inside it at once: it can only finish if they really run concurrently.
#[tool(parallel)]
async fn rendezvous(args: EchoArgs) -> String {
    static BARRIER: std::sync::OnceLock<tokio::sync::Barrier> = std::sync::OnceLock::new();
    BARRIER
        .get_or_init(|| tokio::sync::Barrier::new(8))
        .wait()
        .await;
    args.text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_run_at_the_same_time() {
    let store = ToolStore::new("parallel");
    store.register(rendezvous_tool()).unwrap();
    let executor = ToolExecutor::new();
    let log = recorder(executor.events());
    let calls = (0..8)
        .map(|i| {
            ToolCall::new(
                format!("p{i}"),
                "rendezvous",
                json!({"text": i.to_string()}),
            )
        })
        .collect();
    let batch = tokio::time::timeout(
        Duration::from_secs(10),
        executor.execute(&store, calls, &CancellationToken::new()),
    )
    .await
    .expect("all eight calls met at the barrier, so they ran concurrently");
    let texts: Vec<String> = batch.messages.iter().map(|m| m.text_content()).collect();
    assert_eq!(texts, ["0", "1", "2", "3", "4", "5", "6", "7"]);
    // Every call started before any ended.
    let log = log.lock().unwrap();
    let first_end = log.iter().position(|l| l.starts_with("end")).unwrap();
    assert_eq!(
        log[..first_end]
            .iter()
            .filter(|l| l.starts_with("start"))
            .count(),
        8
    );
}

#[tokio::test]
async fn one_sequential_tool_makes_the_whole_batch_sequential() {
    let executor = ToolExecutor::new();
    let log = recorder(executor.events());
    let calls = vec![
        ToolCall::new("a", "echo", json!({"text": "1"})),
        ToolCall::new("b", "one_at_a_time", json!({"text": "2"})),
        ToolCall::new("c", "echo", json!({"text": "3"})),
    ];
    executor
        .execute(&store(), calls, &CancellationToken::new())
        .await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            "start a",
            "end a ok",
            "message_start a",
            "message_end a",
            "start b",
            "end b ok",
            "message_start b",
            "message_end b",
            "start c",
            "end c ok",
            "message_start c",
            "message_end c",
        ]
    );
}

#[tokio::test]
async fn a_parallel_batch_starts_every_call_then_reports_results_in_order() {
    let executor = ToolExecutor::new();
    let log = recorder(executor.events());
    let calls = vec![
        ToolCall::new("a", "echo", json!({"text": "1"})),
        ToolCall::new("b", "nope", json!({})),
    ];
    executor
        .execute(&store(), calls, &CancellationToken::new())
        .await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            "start a",
            "start b",
            "end b error",
            "end a ok",
            "message_start a",
            "message_end a",
            "message_start b",
            "message_end b"
        ]
    );
}

#[tokio::test]
async fn the_sequential_mode_of_the_executor_forces_sequential_batches() {
    let executor = ToolExecutor::new().with_mode(BatchMode::Sequential);
    let log = recorder(executor.events());
    let calls = vec![
        ToolCall::new("a", "echo", json!({"text": "1"})),
        ToolCall::new("b", "echo", json!({"text": "2"})),
    ];
    executor
        .execute(&store(), calls, &CancellationToken::new())
        .await;
    assert_eq!(
        log.lock().unwrap()[..4],
        ["start a", "end a ok", "message_start a", "message_end a"]
    );
}

/// A batch run one call after another looks each call's tool up when the call starts: a tool that an
/// earlier call of the batch registered is there for a later one.
#[tokio::test]
async fn a_later_call_of_a_sequential_batch_finds_a_tool_an_earlier_call_registered() {
    let store = store();
    let late = AgentTool::builder("late")
        .description("Registered while the batch runs.")
        .handler(|_, _| async { "late ran" })
        .build()
        .unwrap();
    let registers = {
        let store = store.clone();
        AgentTool::builder("registers")
            .description("Register `late`.")
            .handler(move |_, _| {
                let (store, late) = (store.clone(), late.clone());
                async move {
                    store.register(late).unwrap();
                    "registered"
                }
            })
            .build()
            .unwrap()
    };
    store.register(registers).unwrap();
    let calls = vec![
        ToolCall::new("a", "registers", json!({})),
        ToolCall::new("b", "late", json!({})),
    ];
    let batch = ToolExecutor::new()
        .with_mode(BatchMode::Sequential)
        .execute(&store, calls, &CancellationToken::new())
        .await;
    let texts: Vec<String> = batch.messages.iter().map(|m| m.text_content()).collect();
    assert_eq!(texts, ["registered", "late ran"]);
}

/// The test says `chatty`'s call has ended; `chatty` says it has sent its late update.
static CHATTY_ENDED: tokio::sync::Notify = tokio::sync::Notify::const_new();
static CHATTY_LATE_SENT: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Streams three updates, then tries to send one more once the test says its call has ended.
#[tool(parallel)]
async fn chatty(ctx: ToolContext) -> String {
    for step in 1..=3 {
        ctx.update(format!("step {step}"));
    }
    let late = ctx.clone();
    tokio::spawn(async move {
        CHATTY_ENDED.notified().await;
        late.update("too late");
        CHATTY_LATE_SENT.notify_one();
    });
    "done".into()
}

#[tokio::test]
async fn events_per_call_are_start_updates_end_and_no_update_after_the_end() {
    let store = ToolStore::new("events");
    store.register(chatty_tool()).unwrap();
    let executor = ToolExecutor::new();
    let log = recorder(executor.events());
    executor
        .execute(
            &store,
            vec![ToolCall::new("c1", "chatty", json!({}))],
            &CancellationToken::new(),
        )
        .await;
    CHATTY_ENDED.notify_one();
    CHATTY_LATE_SENT.notified().await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            "start c1",
            "update c1 step 1",
            "update c1 step 2",
            "update c1 step 3",
            "end c1 ok",
            "message_start c1",
            "message_end c1"
        ]
    );
}

#[tokio::test]
async fn events_also_arrive_as_a_stream() {
    let executor = ToolExecutor::new();
    let stream = executor.events().subscribe();
    executor
        .execute(
            &store(),
            vec![ToolCall::new("s1", "echo", json!({"text": "hi"}))],
            &CancellationToken::new(),
        )
        .await;
    drop(executor);
    let events: Vec<AgentEvent> = stream.collect().await;
    assert_eq!(events.len(), 4);
    assert!(matches!(&events[0], AgentEvent::ToolExecutionStart { call } if call.id == "s1"));
    assert!(
        matches!(&events[1], AgentEvent::ToolExecutionEnd { result, is_error: false, .. } if result.text_content() == "hi")
    );
    assert!(matches!(&events[3], AgentEvent::MessageEnd { .. }));
}

#[tokio::test]
async fn a_slow_stream_drops_its_oldest_events_and_counts_them_without_stalling_the_batch() {
    let bus = EventBus::with_capacity(2);
    let mut stream = bus.subscribe();
    let executor = ToolExecutor::new().with_events(bus.clone());
    let calls = (0..5)
        .map(|i| ToolCall::new(format!("l{i}"), "echo", json!({"text": "x"})))
        .collect();
    let batch = executor
        .execute(&store(), calls, &CancellationToken::new())
        .await;
    assert_eq!(batch.messages.len(), 5);
    // 5 calls × 4 events = 20 emitted; the stream kept the last 2.
    let first = stream.next().await.unwrap();
    assert_eq!(stream.missed(), 18);
    assert!(matches!(first, AgentEvent::MessageStart { .. }));
}

/// Waits until cancelled.
#[tool(parallel)]
async fn wait_for_abort(ctx: ToolContext) -> String {
    ctx.cancelled().await;
    "observed the abort".into()
}

/// Cancels the batch from inside, then finishes normally.
#[tool]
async fn pull_the_plug(ctx: ToolContext) -> String {
    ABORT.get().expect("the test set the token").cancel();
    let _ = ctx;
    "pulled".into()
}

static ABORT: std::sync::OnceLock<CancellationToken> = std::sync::OnceLock::new();

#[tokio::test]
async fn aborting_a_sequential_batch_keeps_finished_results_and_answers_every_other_call() {
    let store = store();
    store.register(pull_the_plug_tool()).unwrap();
    let cancel = ABORT.get_or_init(CancellationToken::new).clone();
    let executor = ToolExecutor::new();
    let log = recorder(executor.events());
    let calls = vec![
        ToolCall::new("s1", "echo", json!({"text": "before"})),
        ToolCall::new("s2", "pull_the_plug", json!({})),
        ToolCall::new("s3", "echo", json!({"text": "after"})),
        ToolCall::new("s4", "nope", json!({})),
    ];
    let batch = executor.execute(&store, calls, &cancel).await;
    let outcome: Vec<(bool, String)> = batch
        .messages
        .iter()
        .map(|m| (m.is_error(), m.text_content()))
        .collect();
    assert_eq!(
        outcome,
        [
            (false, "before".to_owned()),
            (false, "pulled".to_owned()),
            (
                true,
                "tool `echo` was not run: the batch was aborted".to_owned()
            ),
            (
                true,
                "tool `nope` was not run: the batch was aborted".to_owned()
            ),
        ]
    );
    let log = log.lock().unwrap();
    assert_eq!(log.iter().filter(|l| l.starts_with("start")).count(), 4);
    assert_eq!(log.iter().filter(|l| l.starts_with("end")).count(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_a_parallel_batch_cancels_running_calls() {
    let store = store();
    store.register(wait_for_abort_tool()).unwrap();
    store.register(chatty_tool()).unwrap();
    let cancel = CancellationToken::new();
    let executor = ToolExecutor::new();
    let log = recorder(executor.events());
    let calls = vec![
        ToolCall::new("p1", "echo", json!({"text": "quick"})),
        ToolCall::new("p2", "wait_for_abort", json!({})),
        ToolCall::new("p3", "wait_for_abort", json!({})),
    ];
    // Aborts once `p1` has ended and both waits have started: no timing involved.
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel();
    executor.events().on_event(move |event| match event {
        AgentEvent::ToolExecutionEnd { call, .. } if call.id == "p1" => {
            let _ = seen_tx.send(());
        }
        AgentEvent::ToolExecutionStart { call } if call.id != "p1" => {
            let _ = seen_tx.send(());
        }
        _ => {}
    });
    let trigger = cancel.clone();
    tokio::spawn(async move {
        for _ in 0..3 {
            seen_rx.recv().await;
        }
        trigger.cancel();
    });
    let batch = tokio::time::timeout(
        Duration::from_secs(5),
        executor.execute(&store, calls, &cancel),
    )
    .await
    .expect("the abort ends the batch");
    let outcome: Vec<(bool, String)> = batch
        .messages
        .iter()
        .map(|m| (m.is_error(), m.text_content()))
        .collect();
    assert_eq!(
        outcome,
        [
            (false, "quick".to_owned()),
            (
                true,
                "tool `wait_for_abort` was aborted before it finished".to_owned()
            ),
            (
                true,
                "tool `wait_for_abort` was aborted before it finished".to_owned()
            ),
        ]
    );
    let log = log.lock().unwrap();
    assert_eq!(log.iter().filter(|l| l.starts_with("start")).count(), 3);
    assert_eq!(log.iter().filter(|l| l.starts_with("end")).count(), 3);
}

#[tokio::test]
async fn a_batch_aborted_before_it_starts_answers_every_call() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    let calls = (0..3)
        .map(|i| ToolCall::new(format!("x{i}"), "echo", json!({"text": "t"})))
        .collect();
    let batch = ToolExecutor::new().execute(&store(), calls, &cancel).await;
    assert_eq!(batch.messages.len(), 3);
    assert!(
        batch.messages.iter().all(|m| m.is_error()
            && m.text_content() == "tool `echo` was not run: the batch was aborted")
    );
}

/// Finishes and asks the loop to stop, depending on its argument.
#[tool(parallel)]
async fn finish(args: TerminateArgs) -> yiem_core::tool::AgentToolResult {
    AgentToolResult::text("finished").with_terminate(args.terminate)
}

#[derive(Deserialize, JsonSchema)]
struct TerminateArgs {
    terminate: bool,
}

async fn terminates(flags: &[bool]) -> bool {
    let store = ToolStore::new("terminate");
    store.register(finish_tool()).unwrap();
    let calls = flags
        .iter()
        .enumerate()
        .map(|(i, flag)| ToolCall::new(i.to_string(), "finish", json!({"terminate": flag})))
        .collect();
    ToolExecutor::new()
        .execute(&store, calls, &CancellationToken::new())
        .await
        .terminate
}

#[tokio::test]
async fn a_batch_terminates_only_when_every_result_asks_to() {
    assert!(terminates(&[true, true, true]).await);
    assert!(!terminates(&[true, false, true]).await);
    assert!(!terminates(&[]).await);
}

#[tokio::test]
async fn the_before_hook_sees_validated_arguments_and_the_assistant_message() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let hooks = ToolHooks::new().before_tool_call(move |ctx| {
        let text = ctx
            .assistant
            .as_ref()
            .map(|m| m.text_content())
            .unwrap_or_default();
        record
            .lock()
            .unwrap()
            .push((ctx.call.id.clone(), (*ctx.args).clone(), text));
        async { None }
    });
    let message = AssistantMessage::new(
        vec![
            AssistantContent::Text {
                text: "echoing".into(),
            },
            AssistantContent::ToolCall(ToolCall::new("h1", "echo", json!("{\"text\": \"hi\"}"))),
        ],
        Default::default(),
    );
    let batch = ToolExecutor::new()
        .with_hooks(hooks)
        .execute_message(&store(), Arc::new(message), &CancellationToken::new())
        .await;
    assert_eq!(batch.messages[0].text_content(), "hi");
    assert_eq!(
        *seen.lock().unwrap(),
        [("h1".to_owned(), json!({"text": "hi"}), "echoing".to_owned())]
    );
}

#[tokio::test]
async fn a_failing_before_hook_becomes_an_error_result() {
    let hooks = ToolHooks::new()
        .before_tool_call(|_ctx| async { Err::<Option<Block>, _>("policy service unreachable") });
    let batch = ToolExecutor::new()
        .with_hooks(hooks)
        .execute(
            &store(),
            vec![ToolCall::new("f1", "echo", json!({"text": "x"}))],
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(
        batch.messages[0].text_content(),
        "the before_tool_call hook failed for tool `echo`: policy service unreachable"
    );
    assert!(batch.messages[0].is_error());
}

#[tokio::test]
async fn the_after_hook_may_flip_is_error_and_terminate() {
    let hooks = ToolHooks::new().after_tool_call(|ctx| async move {
        ctx.is_error
            .then(|| ToolResultPatch::new().is_error(false).terminate(true))
    });
    let batch = ToolExecutor::new()
        .with_hooks(hooks)
        .execute(
            &store(),
            vec![ToolCall::new("a1", "fail", json!({"text": "x"}))],
            &CancellationToken::new(),
        )
        .await;
    assert!(!batch.messages[0].is_error());
    assert!(batch.terminate);
}

#[tokio::test]
async fn a_panicking_event_sink_costs_no_result() {
    let executor = ToolExecutor::new();
    executor.events().on_event(|_| panic!("the UI crashed"));
    let log = recorder(executor.events());
    let batch = executor
        .execute(
            &store(),
            vec![ToolCall::new("k1", "echo", json!({"text": "still here"}))],
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(batch.messages[0].text_content(), "still here");
    assert_eq!(log.lock().unwrap().len(), 4);
}

/// A batch reads its sinks once, when it starts; a sink registered while the batch runs must still see
/// every later event of that batch, and a sink registered in the middle of a call its remaining events.
/// Both schedules: one call after another (the second tool is sequential), and all at once.
#[tokio::test]
async fn a_sink_registered_while_a_batch_runs_sees_the_rest_of_its_events() {
    let one_by_one = [
        "end r1 ok",
        "message_start r1",
        "message_end r1",
        "start r2",
        "end r2 ok",
        "message_start r2",
        "message_end r2",
    ];
    assert_eq!(late_sink_sees("one_at_a_time").await, one_by_one);
    // All starts first, then the ends as the calls finish (inline, in call order, on this runtime), then
    // the messages in call order.
    let at_once = [
        "start r2",
        "end r1 ok",
        "end r2 ok",
        "message_start r1",
        "message_end r1",
        "message_start r2",
        "message_end r2",
    ];
    assert_eq!(late_sink_sees("echo").await, at_once);
}

/// What a sink registered at the start of call `r1` sees of a batch of `r1` (echo) and `r2` (`second`).
async fn late_sink_sees(second: &str) -> Vec<String> {
    let executor = ToolExecutor::new();
    let bus = executor.events().clone();
    let late = Arc::new(std::sync::OnceLock::new());
    let slot = Arc::clone(&late);
    executor.events().on_event(move |event| {
        // At the first call's start, from inside a sink: the bus is being emitted to right now.
        if let AgentEvent::ToolExecutionStart { call } = event
            && call.id == "r1"
        {
            slot.get_or_init(|| recorder(&bus));
        }
    });
    let calls = vec![
        ToolCall::new("r1", "echo", json!({"text": "one"})),
        ToolCall::new("r2", second, json!({"text": "two"})),
    ];
    let batch = executor
        .execute(&store(), calls, &CancellationToken::new())
        .await;
    assert_eq!(batch.messages.len(), 2);
    let log = late.get().expect("registered at r1's start");
    log.lock().unwrap().clone()
}

#[tokio::test]
async fn the_default_timeout_applies_to_tools_without_their_own() {
    let store = ToolStore::new("timeouts");
    store.register(wait_for_abort_tool()).unwrap();
    let batch = ToolExecutor::new()
        .with_default_timeout(Duration::from_millis(20))
        .execute(
            &store,
            vec![ToolCall::new("t1", "wait_for_abort", json!({}))],
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(
        batch.messages[0].text_content(),
        "tool `wait_for_abort` timed out after 20 ms"
    );
}

static CALLS: AtomicUsize = AtomicUsize::new(0);

/// Counts its calls.
#[tool(parallel)]
async fn counted() -> String {
    CALLS.fetch_add(1, Ordering::SeqCst).to_string()
}

#[tokio::test]
async fn a_blocked_call_never_runs_its_tool() {
    let store = ToolStore::new("blocked");
    store.register(counted_tool()).unwrap();
    let hooks = ToolHooks::new().before_tool_call(|_| async { Some(Block::new("no")) });
    let batch = ToolExecutor::new()
        .with_hooks(hooks)
        .execute(
            &store,
            vec![ToolCall::new("b", "counted", json!({}))],
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(batch.messages[0].text_content(), "no");
    assert_eq!(CALLS.load(Ordering::SeqCst), 0);
}

/// A tool whose prepare step cancels `token` (as an abort arriving while the call binds) and whose body
/// notes that it ran.
fn aborts_while_binding(token: CancellationToken, ran: Arc<AtomicUsize>) -> ToolStore {
    let tool = yiem_core::tool::AgentTool::builder("late")
        .description("Note that the body ran.")
        .prepare_arguments(move |args| {
            token.cancel();
            args
        })
        .handler(move |_, _| {
            let ran = Arc::clone(&ran);
            async move {
                ran.fetch_add(1, Ordering::SeqCst);
                "ran"
            }
        })
        .build()
        .unwrap();
    let store = ToolStore::new("abort-while-binding");
    store.register(tool).unwrap();
    store
}

#[test]
fn a_batch_aborted_while_its_call_binds_does_not_start_the_call() {
    let current = current_thread();
    let threads = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for runtime in [&current, &threads] {
        let (token, ran) = (CancellationToken::new(), Arc::new(AtomicUsize::new(0)));
        let store = aborts_while_binding(token.clone(), Arc::clone(&ran));
        let batch = runtime.block_on(ToolExecutor::new().execute(
            &store,
            vec![ToolCall::new("c1", "late", json!({}))],
            &token,
        ));
        assert_eq!(batch.messages.len(), 1);
        assert!(batch.messages[0].result.is_error);
        assert_eq!(
            batch.messages[0].result.text_content(),
            "tool `late` was not run: the batch was aborted"
        );
        assert_eq!(ran.load(Ordering::SeqCst), 0, "the body never ran");
    }
}

/// The `before_tool_call` hook (an approval prompt, say) is not asked about a call whose batch was aborted
/// while it bound: the call will not run, whatever the hook says.
#[test]
fn the_before_hook_is_not_asked_about_a_call_aborted_while_it_binds() {
    let runtime = current_thread();
    let (token, ran) = (CancellationToken::new(), Arc::new(AtomicUsize::new(0)));
    let store = aborts_while_binding(token.clone(), Arc::clone(&ran));
    let asked = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&asked);
    let executor = ToolExecutor::new().with_hooks(ToolHooks::new().before_tool_call(move |_| {
        count.fetch_add(1, Ordering::SeqCst);
        async { None }
    }));
    let batch = runtime.block_on(executor.execute(
        &store,
        vec![ToolCall::new("c1", "late", json!({}))],
        &token,
    ));
    assert_eq!(
        batch.messages[0].result.text_content(),
        "tool `late` was not run: the batch was aborted"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 0, "the hook was not asked");
    assert_eq!(ran.load(Ordering::SeqCst), 0, "the body never ran");
}

/// A current-thread runtime: every call runs inline, so a test can poll a batch by hand and know that a
/// call which could start has started by the time the poll returns.
fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Tools that record the id of each call as it starts; the first call to start also waits until the
/// gate's sender is used (or dropped).
struct Gate {
    started: Arc<Mutex<Vec<String>>>,
    released: Arc<Mutex<Option<tokio::sync::oneshot::Receiver<()>>>>,
}

impl Gate {
    fn new() -> (tokio::sync::oneshot::Sender<()>, Gate) {
        let (release, released) = tokio::sync::oneshot::channel();
        let gate = Gate {
            started: Arc::default(),
            released: Arc::new(Mutex::new(Some(released))),
        };
        (release, gate)
    }

    fn tool(&self, name: &str, parallel: bool) -> yiem_core::tool::AgentTool {
        let (started, released) = (Arc::clone(&self.started), Arc::clone(&self.released));
        let builder = yiem_core::tool::AgentTool::builder(name)
            .description("Record the start; the first call also waits until released.")
            .handler(move |ctx: ToolContext, _| {
                let (started, released) = (Arc::clone(&started), Arc::clone(&released));
                async move {
                    started.lock().unwrap().push(ctx.call_id().to_owned());
                    let wait = released.lock().unwrap().take();
                    if let Some(wait) = wait {
                        let _ = wait.await;
                    }
                    "done"
                }
            });
        let builder = if parallel {
            builder.parallel()
        } else {
            builder
        };
        builder.build().unwrap()
    }
}

#[test]
fn a_batch_of_one_call_waits_for_its_permit_beside_another_batch() {
    // One permit for the whole executor. Batch A's call holds it until told to finish; batch B's call,
    // polled meanwhile, must not start. On a current-thread runtime every call runs inline, so a call
    // that could start would have started within the poll that returned `Pending`.
    let runtime = current_thread();
    let (release, gate) = Gate::new();
    let store = ToolStore::new("permits");
    store.register(gate.tool("hold", true)).unwrap();
    let started = gate.started;
    let executor = ToolExecutor::new().with_max_concurrent_calls(1);
    let cancel = CancellationToken::new();
    runtime.block_on(async {
        let mut a = std::pin::pin!(executor.execute(
            &store,
            vec![ToolCall::new("a", "hold", json!({}))],
            &cancel
        ));
        let mut b = std::pin::pin!(executor.execute(
            &store,
            vec![ToolCall::new("b", "hold", json!({}))],
            &cancel
        ));
        assert!(futures::poll!(&mut a).is_pending());
        assert_eq!(*started.lock().unwrap(), ["a"]);
        assert!(futures::poll!(&mut b).is_pending());
        assert_eq!(*started.lock().unwrap(), ["a"], "b waits for the permit");
        release.send(()).unwrap();
        let (a, b) = tokio::join!(a, b);
        assert_eq!(a.messages[0].result.text_content(), "done");
        assert_eq!(b.messages[0].result.text_content(), "done");
        assert_eq!(*started.lock().unwrap(), ["a", "b"]);
    });
}

#[test]
fn a_result_message_is_written_flat_and_read_back_with_every_part() {
    let mut result = AgentToolResult::text("3 rows")
        .with_usage(yiem_core::message::Usage::new(0, 4))
        .with_added_tools(vec!["late".into()]);
    result.set_details(Value::Null);
    let message =
        yiem_core::message::ToolResultMessage::new(&ToolCall::new("c1", "rows", json!({})), result);
    let written = serde_json::to_value(&message).unwrap();
    assert_eq!(written["tool_call_id"], "c1");
    assert_eq!(written["details"], Value::Null);
    assert_eq!(written["usage"]["output_tokens"], 4);
    assert_eq!(written["added_tool_names"], json!(["late"]));
    assert_eq!(
        written["content"],
        json!([{"type": "text", "text": "3 rows"}])
    );
    let read: yiem_core::message::ToolResultMessage = serde_json::from_value(written).unwrap();
    assert_eq!(read, message);
}

#[test]
fn a_waiting_sequential_call_is_not_overtaken_by_a_later_parallel_batch() {
    // Batch A's parallel call runs until released. Batch S (a sequential call) must wait for it; batch C
    // (a parallel call), polled after S began to wait, must wait behind S rather than slip in beside A.
    // On a current-thread runtime every call runs inline, so a call that could start would have started
    // within the poll that returned `Pending`.
    let runtime = current_thread();
    let (release, gate) = Gate::new();
    let store = ToolStore::new("order");
    store.register(gate.tool("hold", true)).unwrap();
    store.register(gate.tool("seq", false)).unwrap();
    store.register(gate.tool("par", true)).unwrap();
    let started = gate.started;
    let executor = ToolExecutor::new();
    let cancel = CancellationToken::new();
    let batch = |id: &str, name: &str| {
        executor.execute(&store, vec![ToolCall::new(id, name, json!({}))], &cancel)
    };
    runtime.block_on(async {
        let mut a = std::pin::pin!(batch("a", "hold"));
        let mut s = std::pin::pin!(batch("s", "seq"));
        let mut c = std::pin::pin!(batch("c", "par"));
        assert!(futures::poll!(&mut a).is_pending());
        assert!(futures::poll!(&mut s).is_pending());
        assert!(futures::poll!(&mut c).is_pending());
        assert_eq!(
            *started.lock().unwrap(),
            ["a"],
            "s waits for a, c waits behind s"
        );
        release.send(()).unwrap();
        let (a, s, c) = tokio::join!(a, s, c);
        for batch in [a, s, c] {
            assert_eq!(batch.messages[0].result.text_content(), "done");
        }
        assert_eq!(*started.lock().unwrap(), ["a", "s", "c"]);
    });
}

/// A panic payload whose own `Drop` panics: dropping it after catching the first panic panics again.
struct PanicsWhenDropped;

impl Drop for PanicsWhenDropped {
    fn drop(&mut self) {
        panic!("the payload's drop panicked too");
    }
}

/// Every place user code runs on a call's path panics with a payload whose `Drop` panics: the call still
/// gets its one result, and so does every other call of the batch.
#[tokio::test]
async fn a_panic_whose_payload_panics_when_dropped_costs_no_result_anywhere() {
    // An event sink.
    let executor = ToolExecutor::new();
    executor
        .events()
        .on_event(|_| std::panic::panic_any(PanicsWhenDropped));
    let batch = executor
        .execute(
            &store(),
            vec![
                ToolCall::new("s1", "echo", json!({"text": "one"})),
                ToolCall::new("s2", "echo", json!({"text": "two"})),
            ],
            &CancellationToken::new(),
        )
        .await;
    let texts: Vec<String> = batch.messages.iter().map(|m| m.text_content()).collect();
    assert_eq!(texts, ["one", "two"]);

    // The hooks.
    let hooks = ToolHooks::new()
        .before_tool_call(|ctx: yiem_core::exec::BeforeToolCallContext| async move {
            if ctx.call.id == "b1" {
                std::panic::panic_any(PanicsWhenDropped);
            }
            None
        })
        .after_tool_call(|ctx: yiem_core::exec::AfterToolCallContext| async move {
            if ctx.call.id == "a1" {
                std::panic::panic_any(PanicsWhenDropped);
            }
            None
        });
    let executor = ToolExecutor::new().with_hooks(hooks);
    let batch = executor
        .execute(
            &store(),
            vec![
                ToolCall::new("b1", "echo", json!({"text": "x"})),
                ToolCall::new("a1", "echo", json!({"text": "y"})),
                ToolCall::new("ok", "echo", json!({"text": "z"})),
            ],
            &CancellationToken::new(),
        )
        .await;
    let texts: Vec<String> = batch.messages.iter().map(|m| m.text_content()).collect();
    assert_eq!(
        texts,
        [
            "the before_tool_call hook panicked for tool `echo`: a panic with a non-text payload",
            "the after_tool_call hook panicked for tool `echo`: a panic with a non-text payload",
            "z"
        ]
    );

    // The tool itself, and an update it streams to a panicking sink.
    let tool = yiem_core::tool::AgentTool::builder("payload")
        .description("Panics with a payload that panics when dropped.")
        .parallel()
        .handler(|ctx: ToolContext, _| async move {
            ctx.update("halfway");
            if ctx.call_id() == "t1" {
                std::panic::panic_any(PanicsWhenDropped);
            }
            "fine"
        })
        .build()
        .unwrap();
    let tools = ToolStore::new("payload");
    tools.register(tool).unwrap();
    let executor = ToolExecutor::new();
    executor
        .events()
        .on_event(|_| std::panic::panic_any(PanicsWhenDropped));
    let batch = executor
        .execute(
            &tools,
            vec![
                ToolCall::new("t1", "payload", json!({})),
                ToolCall::new("t2", "payload", json!({})),
            ],
            &CancellationToken::new(),
        )
        .await;
    let texts: Vec<String> = batch.messages.iter().map(|m| m.text_content()).collect();
    assert_eq!(
        texts,
        [
            "tool `payload` panicked: a panic with a non-text payload",
            "fine"
        ]
    );
}
