//! One tool call through yiem against the floor: a hand-written `match` on the name, `serde_json::from_value`
//! and a direct call. Run with `cargo bench -p yiem-core`.
//!
//! - `floor`: match + from_value + call + `String` result.
//! - `lookup_args_call`: `ToolStore::get` + `prepare_arguments` + `bind` (parse) + await (no guard).
//! - `execute`: `AgentTool::execute` (adds the context, panic guard, time-limit/cancel select).
//! - `pipeline`: `ToolExecutor::execute` of a one-call batch with an event sink: lookup, prepare, execute,
//!   finalize, start/end and message events, and the `ToolResultMessage`.
//!
//! Every variant starts from an owned JSON value built outside the measurement (`iter_batched`). The
//! `parts/` group times the pieces of the path on their own.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use yiem_core::{
    exec::{CancellationToken, ToolCall, ToolExecutor},
    store::ToolStore,
    tool,
    tool::{AgentToolResult, IntoToolResult, ToolContext},
};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
    note: Option<String>,
}

/// Add two integers.
#[tool(parallel)]
async fn add(args: AddArgs) -> String {
    let sum = args.a + args.b;
    match args.note {
        Some(note) => format!("{sum} ({note})"),
        None => sum.to_string(),
    }
}

async fn floor(name: &str, args: Value) -> AgentToolResult {
    match name {
        "add" => match serde_json::from_value::<AddArgs>(args) {
            Ok(args) => add(args).await.into_tool_result(),
            Err(error) => AgentToolResult::error(error.to_string()),
        },
        other => AgentToolResult::error(format!("unknown tool {other}")),
    }
}

fn arguments() -> Value {
    json!({"a": 40, "b": 2, "note": "answer"})
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = ToolStore::new("bench");
    store.register(add_tool()).unwrap();
    let executor = ToolExecutor::new();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    executor.events().on_event(move |_| {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    let cancel = CancellationToken::new();
    let tool = store.get("add").unwrap();

    let store = &store;
    let executor = &executor;
    let cancel = &cancel;
    let tool = &tool;
    let mut group = c.benchmark_group("one_call");
    group.bench_function("floor", |b| {
        b.to_async(&runtime).iter_batched(
            arguments,
            |args| async { black_box(floor(black_box("add"), args).await) },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("get_execute", |b| {
        b.to_async(&runtime).iter_batched(
            arguments,
            |args| async move {
                let tool = store.get(black_box("add")).unwrap();
                black_box(tool.execute("c", args).await)
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("execute", |b| {
        b.to_async(&runtime).iter_batched(
            arguments,
            |args| async { black_box(tool.execute("c", args).await) },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("pipeline", |b| {
        b.to_async(&runtime).iter_batched(
            || vec![ToolCall::new("call-1", "add", arguments())],
            |calls| async move { black_box(executor.execute(store, calls, cancel).await) },
            BatchSize::SmallInput,
        )
    });
    group.finish();

    // The parts of the path, to explain the ratios.
    let mut group = c.benchmark_group("parts");
    group.bench_function("store_get", |b| {
        b.iter(|| black_box(store.get(black_box("add"))))
    });
    group.bench_function("tool_context_new", |b| {
        b.iter(|| black_box(ToolContext::new("c")))
    });
    group.bench_function("deserialize_borrowed", |b| {
        let v = arguments();
        b.iter(|| black_box(<AddArgs as serde::Deserialize>::deserialize(black_box(&v)).unwrap()))
    });
    group.bench_function("from_value_owned_with_drop", |b| {
        b.iter_batched(
            arguments,
            |v| black_box(serde_json::from_value::<AddArgs>(v).unwrap()),
            BatchSize::SmallInput,
        )
    });
    group.finish();
    assert!(
        seen.load(Ordering::Relaxed) > 0,
        "the pipeline emitted events"
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
