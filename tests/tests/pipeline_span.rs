//! The `execute_tool` span around a call, seen by a subscriber that records spans. A test binary of
//! its own: tracing caches a callsite's interest when it is first hit, and a first hit on another
//! test's thread while this test sets its scoped subscriber can cache "never" (CI saw the tool run
//! outside its span so), so no other test may run beside it.

use std::sync::{Arc, Mutex};

use serde_json::json;
use yiem_core::exec::{CancellationToken, ToolCall, ToolExecutor};
use yiem_core::store::ToolStore;

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// What a `fmt` subscriber writes, kept for the test to read.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_recorded_span_encloses_the_call_and_records_its_outcome() {
    // With a subscriber that records spans, the call runs inside its `execute_tool` span (what the tool logs
    // carries the span) and the span closes with the call's outcome; without one, the span is skipped.
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .finish();
    let logs = yiem_core::tool::AgentTool::builder("logs")
        .description("Log a line, then answer.")
        .parallel()
        .handler(|_, _| async {
            tracing::info!("the tool is running");
            "logged"
        })
        .build()
        .unwrap();
    let store = ToolStore::new("spans");
    store.register(logs).unwrap();
    let run = || {
        current_thread().block_on(ToolExecutor::new().execute(
            &store,
            vec![ToolCall::new("c1", "logs", json!({}))],
            &CancellationToken::new(),
        ))
    };
    let batch = tracing::subscriber::with_default(subscriber, run);
    assert_eq!(batch.messages[0].result.text_content(), "logged");
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let running = text
        .lines()
        .find(|line| line.contains("the tool is running"))
        .unwrap_or_else(|| panic!("the tool's line was written: {text}"));
    assert!(
        running.contains("execute_tool{")
            && running.contains("gen_ai.tool.name=logs")
            && running.contains("gen_ai.tool.call.id=c1"),
        "the tool ran inside its span: {running}"
    );
    let closed = text
        .lines()
        .find(|line| line.contains("close"))
        .unwrap_or_else(|| panic!("the span closed: {text}"));
    assert!(
        closed.contains("outcome=\"ok\"") || closed.contains("outcome=ok"),
        "{closed}"
    );
}
