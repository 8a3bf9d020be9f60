//! Issue 30: a tool call whose arguments stream in small deltas costs amortised linear time. One
//! `stream_reply` of a scripted `write` call with 64 KB and 256 KB of content in 4-character deltas, with
//! an event observer attached (as `yiem chat` has): the second should take about 4× the first, not 16×.

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use yiem_core::llm::stream_reply;
use yiem_core::{
    event::EventBus,
    exec::CancellationToken,
    llm::{ModelRequest, ScriptedModel, ScriptedTurn},
};

fn streamed_arguments(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("streamed_arguments");
    group.sample_size(20);
    for kb in [64usize, 256] {
        let content = "abcd".repeat(kb * 256);
        group.bench_with_input(
            BenchmarkId::new("observed", format!("{kb}KB")),
            &content,
            |b, content| {
                b.iter_batched(
                    || {
                        let model = ScriptedModel::new([ScriptedTurn::tool_call(
                            "write",
                            serde_json::json!({"path": "a.txt", "content": content}),
                        )])
                        .chunk_size(4);
                        let bus = EventBus::new();
                        bus.on_event(|event| {
                            black_box(event);
                        });
                        (model, bus)
                    },
                    |(model, bus)| {
                        let reply = runtime.block_on(stream_reply(
                            &model,
                            ModelRequest::default(),
                            &CancellationToken::new(),
                            &bus,
                        ));
                        assert_eq!(reply.tool_calls().count(), 1);
                        reply
                    },
                    BatchSize::LargeInput,
                );
            },
        );
    }
    group.finish();
}

criterion_group!(benches, streamed_arguments);
criterion_main!(benches);
