//! Item 3 of the benchmark issue: the tool list a request carries, for 1, 100 and 1000 tools.
//!
//! - yiem `_json`: `ToolStore::tool_list().definitions_json(dialect)`, the bytes a request carries (the
//!   list's text is serialized once per store version and dialect; every later request shares it);
//! - yiem `_value`: `ToolStore::definitions(dialect)`, the same list as an owned `serde_json::Value`;
//! - rmcp: `ToolRouter::list_all()`, the `Vec<Tool>` of a `tools/list` result (its schemas are `Arc`s), and
//!   `_json`, that list serialized to the bytes of a response;
//! - rig: `ToolSet::tool_definitions()`, the `Vec<ToolDefinition>` rig hands a completion request, and
//!   `_json`, serialized.
//!
//! Each tool has `add`'s schema under its own name.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rig_agent::tool::ToolSet;
use yiem_benches::{RmcpServer, rig_filler, rmcp_filler, yiem_filler};
use yiem_core::store::{Dialect, ToolStore};

fn name(i: usize) -> String {
    format!("tool_{i:05}")
}

fn definitions(c: &mut Criterion) {
    let mut group = c.benchmark_group("tool_list");
    for tools in [1usize, 100, 1000] {
        group.throughput(Throughput::Elements(tools as u64));

        let store = ToolStore::new("bench");
        for i in 0..tools {
            store.register(yiem_filler(&name(i))).unwrap();
        }
        for dialect in Dialect::ALL {
            // Fill the cache: the first list is the one that rewrites the schemas.
            let list = store.definitions(dialect).unwrap();
            let expected = if dialect == Dialect::Gemini { 1 } else { tools };
            assert_eq!(list.as_array().unwrap().len(), expected);
            group.bench_with_input(
                BenchmarkId::new(format!("yiem_{}_value", dialect.as_str()), tools),
                &tools,
                |b, _| b.iter(|| black_box(store.definitions(black_box(dialect)).unwrap())),
            );
            let text = store
                .tool_list()
                .definitions_json(dialect)
                .unwrap()
                .to_owned();
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&text).unwrap(),
                list
            );
            group.bench_with_input(
                BenchmarkId::new(format!("yiem_{}_json", dialect.as_str()), tools),
                &tools,
                |b, _| {
                    b.iter(|| {
                        let list = store.tool_list();
                        black_box(list.definitions_json(black_box(dialect)).unwrap().len())
                    })
                },
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
        group.bench_with_input(
            BenchmarkId::new("rmcp_list_all_json", tools),
            &tools,
            |b, _| {
                b.iter(|| black_box(serde_json::to_string(&server.tool_router.list_all()).unwrap()))
            },
        );

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
        group.bench_with_input(
            BenchmarkId::new("rig_tool_definitions_json", tools),
            &tools,
            |b, _| b.iter(|| black_box(serde_json::to_string(&set.tool_definitions()).unwrap())),
        );
    }
    group.finish();

    // The first list of a process: every schema rewritten (yiem, OpenAI strict mode, 100 tools).
    let mut group = c.benchmark_group("tool_list_uncached");
    group.throughput(Throughput::Elements(100));
    group.bench_function("yiem_openai-strict/100", |b| {
        b.iter_batched(
            || {
                let store = ToolStore::new("bench");
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
