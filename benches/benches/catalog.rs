//! Tool search over 10,000 tools (issue 34): building the BM25 index, and one query (criterion medians);
//! and one query of the hybrid ranking (BM25 mixed with embeddings), the model left out: its embedder
//! hands back 512 pseudo-random numbers per text, so what is timed is the mix (the word search, 10,000
//! cosines, the best k). The tools are the BFCL catalog repeated to 10,000 (`yiem_benches::catalog`).

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use yiem_core::catalog::{Bm25Ranker, EmbedError, Embedder, HybridRanker, Ranker};

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

/// 512 pseudo-random numbers per text, the same for the same text: a model's vectors, without the model.
struct Noise;

impl Embedder for Noise {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|text| {
                // FNV-1a of the text seeds a xorshift.
                let mut state = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
                    (hash ^ byte as u64).wrapping_mul(0x100_0000_01b3)
                }) | 1;
                (0..512)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                    })
                    .collect()
            })
            .collect())
    }
}

fn hybrid(c: &mut Criterion) {
    let tools = yiem_benches::catalog::bfcl_tools(10_000);
    let index = HybridRanker::new(Noise).index(&tools);
    let mut next = 0;
    c.bench_function("tool_search/hybrid_query_10k", |b| {
        b.iter(|| {
            next = (next + 1) % QUERIES.len();
            black_box(index.search(black_box(QUERIES[next]), 5))
        })
    });
}

criterion_group!(benches, catalog, hybrid);
criterion_main!(benches);
