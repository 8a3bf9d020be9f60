//! Items 1 and 2 of the benchmark issue: one call of `add`, dispatched by name, through each toolkit; then
//! the same call with 1, 100 and 10 000 tools registered.
//!
//! Every variant starts from arguments built outside the measurement (`iter_batched`) and ends with the
//! tool's answer in hand; see BENCHMARKS.md for what each one includes.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use rig_agent::tool::ToolSet;
use serde_json::Value;
use yiem_benches::{
    ANSWER, RigAdd, RmcpHarness, RmcpServer, add_tool, arguments, arguments_object,
    arguments_string, floor, floor_batch, yiem_filler,
};
use yiem_core::{
    exec::{CancellationToken, ToolCall, ToolExecutor},
    store::ToolStore,
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A store with `add` and `fillers - 1` other tools (so `fillers` tools in all).
fn store_with(tools: usize) -> ToolStore {
    let store = ToolStore::new("bench");
    for i in 1..tools {
        store
            .register(yiem_filler(&format!("tool_{i:05}")))
            .unwrap();
    }
    store.register(add_tool()).unwrap();
    store
}

/// An executor that emits every event to a sink, as an agent with a UI would.
fn executor_with_sink() -> (ToolExecutor, Arc<AtomicUsize>) {
    let executor = ToolExecutor::new();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    executor.events().on_event(move |_| {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    (executor, seen)
}

fn dispatch(c: &mut Criterion) {
    let runtime = runtime();
    let store = store_with(1);
    let tool = store.get("add").unwrap();
    let (executor, seen) = executor_with_sink();
    // The hand-written batch's sink does what the executor's does.
    let batch_seen = AtomicUsize::new(0);
    let sink = |_: &yiem_core::event::AgentEvent| {
        batch_seen.fetch_add(1, Ordering::Relaxed);
    };
    let cancel = CancellationToken::new();
    let rmcp = runtime.block_on(async { RmcpHarness::new(RmcpServer::new()) });
    let mut rig = ToolSet::default();
    rig.add_tool(RigAdd);

    // Every variant gives the right answer before it is timed.
    runtime.block_on(async {
        assert_eq!(
            floor::dispatch_value("add", arguments()).await.unwrap(),
            ANSWER
        );
        assert_eq!(
            floor::dispatch_str("add", &arguments_string())
                .await
                .unwrap(),
            ANSWER
        );
        for args in [arguments(), Value::String(arguments_string())] {
            let messages =
                floor_batch::dispatch(vec![ToolCall::new("c", "add", args)], &sink).await;
            assert_eq!(messages[0].text_content(), ANSWER);
        }
        assert_eq!(
            batch_seen.load(Ordering::Relaxed),
            8,
            "four events per call"
        );
        assert_eq!(tool.execute("c", arguments()).await.text_content(), ANSWER);
        let as_string = Value::String(arguments_string());
        assert_eq!(tool.execute("c", as_string).await.text_content(), ANSWER);
        let batch = executor
            .execute(
                &store,
                vec![ToolCall::new("c", "add", arguments())],
                &cancel,
            )
            .await;
        assert_eq!(batch.messages[0].text_content(), ANSWER);
        let response = rmcp.call("add", arguments_object()).await.unwrap();
        assert!(format!("{response:?}").contains(ANSWER), "{response:?}");
        let mut context = rig_core::tool::ToolContext::default();
        let result = rig.execute("add", arguments_string(), &mut context).await;
        assert_eq!(result.output().as_text(), Some(ANSWER));
    });

    let (store, tool, executor, cancel, rmcp, rig) =
        (&store, &tool, &executor, &cancel, &rmcp, &rig);

    let mut group = c.benchmark_group("dispatch_value");
    group.bench_function("floor", |b| {
        b.to_async(&runtime).iter_batched(
            arguments,
            |args| async { black_box(floor::dispatch_value(black_box("add"), args).await) },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("floor_batch", |b| {
        b.to_async(&runtime).iter_batched(
            || vec![ToolCall::new("c", "add", arguments())],
            |calls| async move { black_box(floor_batch::dispatch(calls, &sink).await) },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("yiem_execute", |b| {
        b.to_async(&runtime).iter_batched(
            arguments,
            |args| async { black_box(tool.execute("c", args).await) },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("yiem_get_execute", |b| {
        b.to_async(&runtime).iter_batched(
            arguments,
            |args| async {
                let tool = store.get(black_box("add")).unwrap();
                black_box(tool.execute("c", args).await)
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("yiem_pipeline", |b| {
        b.to_async(&runtime).iter_batched(
            || vec![ToolCall::new("c", "add", arguments())],
            |calls| async move { black_box(executor.execute(store, calls, cancel).await) },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("rmcp_router", |b| {
        b.to_async(&runtime).iter_batched(
            arguments_object,
            |args| async { black_box(rmcp.call(black_box("add"), args).await) },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("rig_toolset", |b| {
        b.to_async(&runtime).iter_batched(
            arguments,
            |args| async move {
                // rig takes the arguments as a string only: a value is serialized first.
                let mut context = rig_core::tool::ToolContext::default();
                black_box(rig.execute("add", args.to_string(), &mut context).await)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();

    let mut group = c.benchmark_group("dispatch_string");
    group.bench_function("floor", |b| {
        b.to_async(&runtime).iter_batched(
            arguments_string,
            |args| async move { black_box(floor::dispatch_str(black_box("add"), &args).await) },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("floor_batch", |b| {
        b.to_async(&runtime).iter_batched(
            || vec![ToolCall::new("c", "add", Value::String(arguments_string()))],
            |calls| async move { black_box(floor_batch::dispatch(calls, &sink).await) },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("yiem_execute", |b| {
        b.to_async(&runtime).iter_batched(
            || Value::String(arguments_string()),
            |args| async { black_box(tool.execute("c", args).await) },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("yiem_get_execute", |b| {
        b.to_async(&runtime).iter_batched(
            || Value::String(arguments_string()),
            |args| async {
                let tool = store.get(black_box("add")).unwrap();
                black_box(tool.execute("c", args).await)
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("yiem_pipeline", |b| {
        b.to_async(&runtime).iter_batched(
            || vec![ToolCall::new("c", "add", Value::String(arguments_string()))],
            |calls| async move { black_box(executor.execute(store, calls, cancel).await) },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("rmcp_router", |b| {
        b.to_async(&runtime).iter_batched(
            arguments_string,
            |args| async move {
                // rmcp takes an arguments object: the string is parsed into one first.
                let args = serde_json::from_str(&args).unwrap();
                black_box(rmcp.call(black_box("add"), args).await)
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("rig_toolset", |b| {
        b.to_async(&runtime).iter_batched(
            arguments_string,
            |args| async move {
                let mut context = rig_core::tool::ToolContext::default();
                black_box(rig.execute("add", args, &mut context).await)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
    assert!(
        seen.load(Ordering::Relaxed) > 0,
        "the pipeline emitted events"
    );
}

/// Item 2: the same call with 1, 100 and 10 000 tools in the store.
fn lookup_at_scale(c: &mut Criterion) {
    let runtime = runtime();
    let (executor, _seen) = executor_with_sink();
    let cancel = CancellationToken::new();
    let mut group = c.benchmark_group("scale");
    for tools in [1, 100, 10_000] {
        let store = store_with(tools);
        assert_eq!(store.len(), tools);
        let (store, executor, cancel) = (&store, &executor, &cancel);
        group.bench_with_input(
            BenchmarkId::new("yiem_get_execute", tools),
            &tools,
            |b, _| {
                b.to_async(&runtime).iter_batched(
                    arguments,
                    |args| async {
                        let tool = store.get(black_box("add")).unwrap();
                        black_box(tool.execute("c", args).await)
                    },
                    BatchSize::SmallInput,
                )
            },
        );
        group.bench_with_input(BenchmarkId::new("yiem_pipeline", tools), &tools, |b, _| {
            b.to_async(&runtime).iter_batched(
                || vec![ToolCall::new("c", "add", arguments())],
                |calls| async move { black_box(executor.execute(store, calls, cancel).await) },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, dispatch, lookup_at_scale);
criterion_main!(benches);
