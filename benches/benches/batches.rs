//! Item 4 of the benchmark issue: batches through `ToolExecutor::execute` on a two-worker runtime.
//!
//! - `sleep/`: 64 calls of a parallel tool that waits 50 ms. The floor is one 50 ms `tokio::time::sleep`
//!   on the same runtime (the timer rounds up to its 1 ms tick); the target is the batch within 1.1× 50 ms.
//! - `cpu/`: 2 calls of a plain (blocking) parallel tool that spins for a fixed number of rounds, run as a
//!   parallel batch and by a sequential executor; the target is a speed-up of at least 1.8× on 2 cores.
//!   The floor is one direct call of the function.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::{
    exec::{BatchMode, CancellationToken, ToolCall, ToolExecutor},
    store::ToolStore,
    tool,
};

const NAP: Duration = Duration::from_millis(50);

/// Wait 50 ms.
#[tool(parallel)]
async fn nap() -> &'static str {
    tokio::time::sleep(NAP).await;
    "rested"
}

#[derive(Deserialize, JsonSchema)]
struct SpinArgs {
    /// How many rounds to spin.
    rounds: u64,
}

/// Spin the CPU for a number of rounds.
#[tool(parallel)]
fn spin(args: SpinArgs) -> String {
    spin_rounds(args.rounds).to_string()
}

/// xorshift: CPU work the optimizer cannot skip.
fn spin_rounds(rounds: u64) -> u64 {
    let mut x = black_box(0x9E37_79B9_7F4A_7C15u64);
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// About 20 ms of work per call on this machine.
const ROUNDS: u64 = 20_000_000;

fn batches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let store = ToolStore::new("bench");
    store.register(nap_tool()).unwrap();
    store.register(spin_tool()).unwrap();
    let parallel = ToolExecutor::new();
    let sequential = ToolExecutor::new().with_mode(BatchMode::Sequential);
    let cancel = CancellationToken::new();
    let naps = || -> Vec<ToolCall> {
        (0..64)
            .map(|i| ToolCall::new(format!("c{i}"), "nap", json!({})))
            .collect()
    };
    let spins = || -> Vec<ToolCall> {
        (0..2)
            .map(|i| ToolCall::new(format!("c{i}"), "spin", json!({"rounds": ROUNDS})))
            .collect()
    };
    runtime.block_on(async {
        let batch = parallel.execute(&store, naps(), &cancel).await;
        assert!(batch.messages.iter().all(|m| m.text_content() == "rested"));
        let batch = parallel.execute(&store, spins(), &cancel).await;
        let expected = spin_rounds(ROUNDS).to_string();
        assert!(batch.messages.iter().all(|m| m.text_content() == expected));
    });
    let (store, parallel, sequential, cancel) = (&store, &parallel, &sequential, &cancel);

    let mut group = c.benchmark_group("batch_sleep");
    group.sample_size(20);
    group.bench_function("floor_one_sleep", |b| {
        b.to_async(&runtime).iter(|| tokio::time::sleep(NAP))
    });
    group.bench_function("yiem_parallel_64", |b| {
        b.to_async(&runtime).iter_batched(
            naps,
            |calls| async move { black_box(parallel.execute(store, calls, cancel).await) },
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();

    let mut group = c.benchmark_group("batch_cpu");
    group.sample_size(20);
    group.bench_function("floor_one_call", |b| {
        b.iter(|| black_box(spin_rounds(black_box(ROUNDS))))
    });
    group.bench_function("yiem_sequential_2", |b| {
        b.to_async(&runtime).iter_batched(
            spins,
            |calls| async move { black_box(sequential.execute(store, calls, cancel).await) },
            criterion::BatchSize::SmallInput,
        )
    });
    group.bench_function("yiem_parallel_2", |b| {
        b.to_async(&runtime).iter_batched(
            spins,
            |calls| async move { black_box(parallel.execute(store, calls, cancel).await) },
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, batches);
criterion_main!(benches);
