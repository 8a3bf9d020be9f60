//! The call path under attack: a panic in every place user code runs, tools that block their thread, and
//! all of them in one batch with good calls. Every call gets exactly one result, in call order, with the
//! text the model needs.
//!
//! Time limits are checked against generous bounds (a tool that would block for 20 s must answer well
//! before that); nothing here depends on how fast the machine is.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};
use yiem_core::{
    event::AgentEvent,
    exec::{CancellationToken, ToolCall, ToolExecutor, ToolHooks},
    store::ToolStore,
    tool,
    tool::{AgentTool, ToolContext},
};

// ---------------------------------------------------------------------------------------------------
// The tools, one per way to panic or block
// ---------------------------------------------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
struct TextArgs {
    text: String,
}

/// Echo the text.
#[tool(parallel)]
async fn echo(args: TextArgs) -> String {
    args.text
}

fn exploding_validate(_: &TextArgs) -> Result<(), String> {
    panic!("validate exploded")
}

/// A tool whose `validate` panics.
#[tool(parallel, validate = exploding_validate)]
async fn validated(args: TextArgs) -> String {
    args.text
}

fn exploding_prepare(_: Value) -> Value {
    panic!("prepare exploded")
}

/// A tool whose prepare step panics.
#[tool(parallel, prepare = exploding_prepare)]
async fn prepared(args: TextArgs) -> String {
    args.text
}

/// Arguments whose `Deserialize` panics.
#[derive(JsonSchema)]
struct Exploding {
    #[allow(dead_code)]
    text: String,
}

impl<'de> Deserialize<'de> for Exploding {
    fn deserialize<D: Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        panic!("deserialize exploded")
    }
}

/// A tool whose arguments panic while they are deserialized.
#[tool(parallel)]
async fn deserialized(_args: Exploding) -> String {
    "never".into()
}

/// A panic payload that panics again when it is dropped.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("the payload's drop exploded");
    }
}

/// A tool that panics with a payload whose `Drop` panics.
#[tool(parallel)]
async fn bad_payload() -> String {
    std::panic::panic_any(PanicsOnDrop)
}

/// A tool that never finishes and panics when it is dropped.
#[tool(parallel, timeout_ms = 50)]
async fn sticky() -> String {
    let _guard = PanicsOnDrop;
    std::future::pending::<()>().await;
    unreachable!()
}

/// How long the blocking tools below block their thread: far past any test, so a test whose answer
/// waited for one would take that long, and then see [`WOKEN`] counted.
const BLOCKED_FOR: Duration = Duration::from_secs(600);

/// How many blocking tools have woken up. Every answer in this file comes while they still block, so a
/// test reads 0 after its answer; an answer that waited for its tool's thread reads more.
static WOKEN: AtomicUsize = AtomicUsize::new(0);

/// Blocks the thread as a tool would that never yields, then counts itself woken.
fn block_the_thread() {
    std::thread::sleep(BLOCKED_FOR);
    WOKEN.fetch_add(1, Ordering::SeqCst);
}

/// An async tool that blocks its thread (for [`BLOCKED_FOR`]), with a 100 ms limit.
#[tool(parallel, timeout_ms = 100)]
async fn blocks_with_limit() -> String {
    block_the_thread();
    "woke up".into()
}

/// A tool built at run time whose handler panics before it returns its future.
fn exploding_handler() -> AgentTool {
    AgentTool::builder("handler")
        .description("A handler that panics at once.")
        .parallel()
        .handler(
            |_ctx: ToolContext, _args: Value| -> std::future::Ready<String> {
                panic!("handler exploded")
            },
        )
        .build()
        .unwrap()
}

/// Hooks that panic before returning their future, for the calls whose id says so.
fn exploding_hooks() -> ToolHooks {
    ToolHooks::new()
        .before_tool_call(|ctx| {
            if ctx.call.id == "before-panics" {
                panic!("before exploded");
            }
            async { None }
        })
        .after_tool_call(|ctx| {
            if ctx.call.id == "after-panics" {
                panic!("after exploded");
            }
            async { None }
        })
}

fn store() -> ToolStore {
    let store = ToolStore::new("attack");
    for tool in [
        echo_tool(),
        validated_tool(),
        prepared_tool(),
        deserialized_tool(),
        bad_payload_tool(),
        sticky_tool(),
        blocks_with_limit_tool(),
        exploding_handler(),
    ] {
        store.register(tool).unwrap();
    }
    store
}

/// A multi-threaded runtime that is shut down without waiting for blocked threads.
fn with_runtime<T>(test: impl std::future::Future<Output = T>) -> T {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let out = runtime.block_on(test);
    runtime.shutdown_background();
    out
}

fn text() -> Value {
    json!({"text": "hi"})
}

/// The one result of one call, through an executor with the exploding hooks.
fn one(id: &str, name: &str, args: Value) -> (bool, String) {
    with_runtime(async {
        let batch = ToolExecutor::new()
            .with_hooks(exploding_hooks())
            .execute(
                &store(),
                vec![ToolCall::new(id, name, args)],
                &CancellationToken::new(),
            )
            .await;
        assert_eq!(batch.messages.len(), 1);
        assert_eq!(batch.messages[0].tool_call_id, id);
        (
            batch.messages[0].is_error(),
            batch.messages[0].text_content(),
        )
    })
}

fn error(text: &str) -> (bool, String) {
    (true, text.to_owned())
}

// ---------------------------------------------------------------------------------------------------
// The seven synchronous panics, one call each
// ---------------------------------------------------------------------------------------------------

#[test]
fn a_panicking_validate_fn_is_that_calls_error() {
    assert_eq!(
        one("c", "validated", text()),
        error("the `validate` check of tool `validated` panicked: validate exploded")
    );
}

#[test]
fn a_panicking_prepare_fn_is_that_calls_error() {
    assert_eq!(
        one("c", "prepared", text()),
        error("the prepare step of tool `prepared` panicked: prepare exploded")
    );
}

#[test]
fn a_panicking_deserialize_impl_is_that_calls_error() {
    assert_eq!(
        one("c", "deserialized", text()),
        error(
            "tool `deserialized` panicked while its arguments were deserialized: deserialize exploded"
        )
    );
}

#[test]
fn a_builder_handler_that_panics_before_returning_its_future_is_that_calls_error() {
    assert_eq!(
        one("c", "handler", json!({})),
        error(
            "the handler of tool `handler` panicked before it returned its future: handler exploded"
        )
    );
}

#[test]
fn a_before_hook_that_panics_before_returning_its_future_is_that_calls_error() {
    assert_eq!(
        one("before-panics", "echo", text()),
        error("the before_tool_call hook panicked for tool `echo`: before exploded")
    );
}

#[test]
fn an_after_hook_that_panics_before_returning_its_future_is_that_calls_error() {
    assert_eq!(
        one("after-panics", "echo", text()),
        error("the after_tool_call hook panicked for tool `echo`: after exploded")
    );
}

#[test]
fn a_panic_payload_whose_drop_panics_is_contained() {
    assert_eq!(
        one("c", "bad_payload", json!({})),
        error("tool `bad_payload` panicked: a panic with a non-text payload")
    );
}

#[test]
fn a_tool_that_panics_while_dropped_by_its_timeout_gets_its_timeout_result() {
    assert_eq!(
        one("c", "sticky", json!({})),
        error("tool `sticky` timed out after 50 ms")
    );
}

#[test]
fn a_tool_that_panics_while_dropped_by_its_timeout_on_a_current_thread_runtime_too() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = runtime.block_on(sticky_tool().execute("c", json!({})));
    assert_eq!(result.text_content(), "tool `sticky` timed out after 50 ms");
}

// ---------------------------------------------------------------------------------------------------
// Tools that block their thread
// ---------------------------------------------------------------------------------------------------

#[test]
fn a_blocking_async_tool_gets_its_timeout_result_at_its_limit() {
    let (is_error, text) = one("c", "blocks_with_limit", json!({}));
    // The tool still blocks its thread: the limit held outside it.
    assert_eq!(
        WOKEN.load(Ordering::SeqCst),
        0,
        "the answer waited for the tool"
    );
    assert_eq!(
        (is_error, text),
        error("tool `blocks_with_limit` timed out after 100 ms")
    );
}

#[test]
fn a_blocking_async_tool_through_execute_gets_its_timeout_result_too() {
    let result = with_runtime(blocks_with_limit_tool().execute("c", json!({})));
    assert_eq!(
        WOKEN.load(Ordering::SeqCst),
        0,
        "the answer waited for the tool"
    );
    assert_eq!(
        result.text_content(),
        "tool `blocks_with_limit` timed out after 100 ms"
    );
}

#[test]
fn an_aborted_batch_returns_promptly_while_a_tool_blocks_its_thread() {
    let (started_tx, started_rx) = mpsc::channel::<()>();
    let blocker = AgentTool::builder("blocker")
        .description("Blocks its thread, with no time limit.")
        .parallel()
        .handler(move |_ctx: ToolContext, _args: Value| {
            let started = started_tx.clone();
            async move {
                started.send(()).unwrap();
                block_the_thread();
                "woke up"
            }
        })
        .build()
        .unwrap();
    let store = store();
    store.register(blocker).unwrap();
    let cancel = CancellationToken::new();
    let executor = ToolExecutor::new();
    let (echoed_tx, echoed_rx) = mpsc::channel::<()>();
    let echoed_tx = std::sync::Mutex::new(echoed_tx);
    executor.events().on_event(move |event| {
        if let AgentEvent::ToolExecutionEnd { call, .. } = event
            && call.id == "1"
        {
            echoed_tx.lock().unwrap().send(()).unwrap();
        }
    });
    // Aborts once the blocker has really started and the echo has finished: no timing involved.
    let aborter = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            started_rx.recv().unwrap();
            echoed_rx.recv().unwrap();
            cancel.cancel();
        })
    };
    let batch = with_runtime(executor.execute(
        &store,
        vec![
            ToolCall::new("1", "echo", text()),
            ToolCall::new("2", "blocker", json!({})),
        ],
        &cancel,
    ));
    aborter.join().unwrap();
    assert_eq!(
        WOKEN.load(Ordering::SeqCst),
        0,
        "the abort waited for the tool"
    );
    let results: Vec<(bool, String)> = batch
        .messages
        .iter()
        .map(|m| (m.is_error(), m.text_content()))
        .collect();
    assert_eq!(
        results,
        vec![
            (false, "hi".to_owned()),
            error("tool `blocker` was aborted before it finished"),
        ]
    );
}

// ---------------------------------------------------------------------------------------------------
// Everything at once
// ---------------------------------------------------------------------------------------------------

#[test]
fn a_batch_mixing_every_failure_with_good_calls_answers_each_in_order() {
    let calls = vec![
        ToolCall::new("good-1", "echo", json!({"text": "first"})),
        ToolCall::new("validate", "validated", text()),
        ToolCall::new("prepare", "prepared", text()),
        ToolCall::new("deserialize", "deserialized", text()),
        ToolCall::new("handler", "handler", json!({})),
        ToolCall::new("before-panics", "echo", text()),
        ToolCall::new("after-panics", "echo", text()),
        ToolCall::new("payload", "bad_payload", json!({})),
        ToolCall::new("sticky", "sticky", json!({})),
        ToolCall::new("blocks", "blocks_with_limit", json!({})),
        ToolCall::new("unknown", "nope", json!({})),
        ToolCall::new("good-2", "echo", json!({"text": "last"})),
    ];
    let ids: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
    let batch = with_runtime(ToolExecutor::new().with_hooks(exploding_hooks()).execute(
        &store(),
        calls,
        &CancellationToken::new(),
    ));
    assert_eq!(
        WOKEN.load(Ordering::SeqCst),
        0,
        "the batch waited for a tool"
    );
    let answered: Vec<&str> = batch
        .messages
        .iter()
        .map(|m| m.tool_call_id.as_str())
        .collect();
    assert_eq!(answered, ids);
    let results: Vec<(bool, String)> = batch
        .messages
        .iter()
        .map(|m| (m.is_error(), m.text_content()))
        .collect();
    assert_eq!(
        results,
        vec![
            (false, "first".to_owned()),
            error("the `validate` check of tool `validated` panicked: validate exploded"),
            error("the prepare step of tool `prepared` panicked: prepare exploded"),
            error(
                "tool `deserialized` panicked while its arguments were deserialized: deserialize exploded"
            ),
            error(
                "the handler of tool `handler` panicked before it returned its future: handler exploded"
            ),
            error("the before_tool_call hook panicked for tool `echo`: before exploded"),
            error("the after_tool_call hook panicked for tool `echo`: after exploded"),
            error("tool `bad_payload` panicked: a panic with a non-text payload"),
            error("tool `sticky` timed out after 50 ms"),
            error("tool `blocks_with_limit` timed out after 100 ms"),
            error(
                "tool `nope` not found. Available tools: echo, validated, prepared, \
                 deserialized, bad_payload, sticky, blocks_with_limit, handler"
            ),
            (false, "last".to_owned()),
        ]
    );
}

#[test]
fn dropping_a_batch_stops_its_running_calls() {
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = std::sync::Mutex::new(Some(started_tx));
    let (dropped_tx, dropped_rx) = mpsc::channel::<()>();
    /// Sends when dropped.
    struct Signal(mpsc::Sender<()>);
    impl Drop for Signal {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let waits = AgentTool::builder("waits")
        .description("Waits forever.")
        .parallel()
        .handler(move |_ctx: ToolContext, _args: Value| {
            let started = started_tx.lock().unwrap().take();
            let signal = Signal(dropped_tx.clone());
            async move {
                let _signal = signal;
                if let Some(started) = started {
                    let _ = started.send(());
                }
                std::future::pending::<()>().await;
                "never"
            }
        })
        .build()
        .unwrap();
    let store = ToolStore::new("drop");
    store.register(waits).unwrap();
    with_runtime(async {
        let executor = ToolExecutor::new();
        let cancel = CancellationToken::new();
        let batch = executor.execute(
            &store,
            vec![ToolCall::new("1", "waits", json!({}))],
            &cancel,
        );
        tokio::select! {
            _ = batch => panic!("the call never finishes on its own"),
            _ = started_rx => {} // the call runs: drop the batch here
        }
        // Still inside the runtime, which would drop every task when it shuts down.
        let dropped =
            tokio::task::spawn_blocking(move || dropped_rx.recv_timeout(Duration::from_secs(10)));
        dropped
            .await
            .unwrap()
            .expect("the call's future was dropped with its batch");
    });
}

/// A tool that waits once, then panics with a payload whose `Drop` panics.
#[tool(parallel)]
async fn late_bad_payload() -> String {
    tokio::task::yield_now().await;
    std::panic::panic_any(PanicsOnDrop)
}

#[test]
fn a_tool_in_hand_with_nothing_to_watch_is_guarded_like_any_call() {
    // No time limit and no context: `execute` awaits such a call directly. Its panics, before or after
    // its first `.await`, and a payload whose drop panics, still give the call its error result.
    for flavor in ["current", "multi"] {
        let runtime = match flavor {
            "current" => tokio::runtime::Builder::new_current_thread(),
            _ => tokio::runtime::Builder::new_multi_thread(),
        }
        .enable_all()
        .build()
        .unwrap();
        let store = ToolStore::new("in-hand");
        store.register(bad_payload_tool()).unwrap();
        store.register(late_bad_payload_tool()).unwrap();
        store.register(echo_tool()).unwrap();
        runtime.block_on(async {
            for name in ["bad_payload", "late_bad_payload"] {
                let expected = format!("tool `{name}` panicked: a panic with a non-text payload");
                let tool = store.get(name).unwrap();
                let direct = tool.execute("c", json!({})).await;
                assert!(direct.is_error, "{flavor}: {name}");
                assert_eq!(direct.text_content(), expected, "{flavor}");
                let through_store = store.execute("c", name, json!({})).await;
                assert!(through_store.is_error, "{flavor}: {name}");
                assert_eq!(through_store.text_content(), expected, "{flavor}");
            }
            let fine = store.execute("c", "echo", text()).await;
            assert!(!fine.is_error, "{flavor}");
        });
    }
}
