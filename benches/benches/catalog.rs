//! Tool search over 10,000 tools (issue 34): building the BM25 index, and one query (criterion medians).
//! The tools are the BFCL catalog repeated to 10,000 (`yiem_benches::catalog`).

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use yiem_core::catalog::{Bm25Ranker, Ranker};

const QUERIES: [&str; 4] = [
    "What's the weather like in Boston, MA right now?",
    "Convert 500 US dollars to Canadian dollars",
    "Find the area of a triangle with a base of 10 units and height of 5 units.",
    "Book a table for two at an Italian restaurant in San Francisco tonight",
];

fn catalog(c: &mut Criterion) {
    let tools = yiem_benches::catalog::bfcl_tools(10_000);
    let ranker = Bm25Ranker::new();
    c.bench_function("tool_search/index_10k", |b| {
        b.iter(|| black_box(ranker.index(black_box(&tools))))
    });
    let index = ranker.index(&tools);
    let mut next = 0;
    c.bench_function("tool_search/query_10k", |b| {
        b.iter(|| {
            next = (next + 1) % QUERIES.len();
            black_box(index.search(black_box(QUERIES[next]), 5))
        })
    });
}

criterion_group!(benches, catalog);
criterion_main!(benches);
