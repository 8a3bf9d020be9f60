//! Item 3 of the benchmark issue: the tool list a request carries, for 1, 100 and 1000 tools.
//!
//! - yiem: `ToolStore::definitions(dialect)` in each dialect, once every tool's definition is cached (the
//!   first request of a process pays for the rewrite; every later one reads the cache). The result is the
//!   `serde_json::Value` that goes into the request body.
//! - rmcp: `ToolRouter::list_all()`, the `Vec<Tool>` of a `tools/list` result (its schemas are `Arc`s).
//! - rig: `ToolSet::tool_definitions()`, the `Vec<ToolDefinition>` rig hands a completion request.
//!
//! Each tool has `add`'s schema under its own name.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rig_agent::tool::ToolSet;
use yiem_benches::{RmcpServer, rig_filler, rmcp_filler, yiem_filler};
use yiem_core::{Dialect, ToolStore};

fn name(i: usize) -> String {
    format!("tool_{i:05}")
}

fn definitions(c: &mut Criterion) {
    let mut group = c.benchmark_group("tool_list");
    for tools in [1usize, 100, 1000] {
        group.throughput(Throughput::Elements(tools as u64));

        let mut store = ToolStore::new("bench");
        for i in 0..tools {
            store.register(yiem_filler(&name(i))).unwrap();
        }
        for dialect in Dialect::ALL {
            // Fill the cache: the first list is the one that rewrites the schemas.
            let list = store.definitions(dialect).unwrap();
            let expected = if dialect == Dialect::Gemini { 1 } else { tools };
            assert_eq!(list.as_array().unwrap().len(), expected);
            group.bench_with_input(
                BenchmarkId::new(format!("yiem_{}", dialect.as_str()), tools),
                &tools,
                |b, _| b.iter(|| black_box(store.definitions(black_box(dialect)).unwrap())),
            );
        }

        let mut server = RmcpServer::new();
        server.tool_router.remove_route("add");
        for i in 0..tools {
            server.tool_router.add_route(rmcp_filler(name(i)));
        }
        assert_eq!(server.tool_router.list_all().len(), tools);
        group.bench_with_input(BenchmarkId::new("rmcp_list_all", tools), &tools, |b, _| {
            b.iter(|| black_box(server.tool_router.list_all()))
        });

        let mut set = ToolSet::default();
        for i in 0..tools {
            set.add_dynamic_tool(rig_filler(name(i)));
        }
        assert_eq!(set.tool_definitions().len(), tools);
        group.bench_with_input(
            BenchmarkId::new("rig_tool_definitions", tools),
            &tools,
            |b, _| b.iter(|| black_box(set.tool_definitions())),
        );
    }
    group.finish();

    // The first list of a process: every schema rewritten (yiem, OpenAI strict mode, 100 tools).
    let mut group = c.benchmark_group("tool_list_uncached");
    group.throughput(Throughput::Elements(100));
    group.bench_function("yiem_openai-strict/100", |b| {
        b.iter_batched(
            || {
                let mut store = ToolStore::new("bench");
                for i in 0..100 {
                    store.register(yiem_filler(&name(i))).unwrap();
                }
                store
            },
            |store| {
                let list = store.definitions(Dialect::OpenAiStrict).unwrap();
                black_box((store, list))
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, definitions);
criterion_main!(benches);
