//! Tool search by meaning with all-MiniLM-L6-v2 run in process (`catalog::SentenceEmbedder`), on the
//! BFCL catalog of `benches/tool-search` (repeated with numbered names past its 1,998 tools):
//!
//! - `embeddings/query/{100,1000,10000}`: one query of the hybrid ranking, its embedding included
//!   (tokenizing, the model, the word search, the cosines and the best 5), over an index built before.
//!   The copies past the catalog's 1,998 tools (`name_2x`, ...) get their original's vector (their text
//!   differs by the suffix alone), so building the 10,000 tools' index embeds 1,998 texts, not 10,000;
//!   the query's cost is the same.
//!
//! It prints, outside criterion (one run takes seconds), the time to embed the first 1,000 tools' texts
//! (`catalog::embedding_text`) in the ranker's batches of 64, twice; and the process's resident memory
//! with the model loaded, then with the 10,000 tools' index.
//! Run with `cargo bench -p yiem-core --features embeddings --bench embeddings`; the model is found (or
//! installed) as by the tests (`tests/model/mod.rs`).

#[path = "../tests/model/mod.rs"]
mod model;

#[path = "../../benches/src/catalog.rs"]
mod bfcl;

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use yiem_core::catalog::{
    EmbedError, Embedder, HybridRanker, Ranker, SentenceEmbedder, embedding_text,
};

const QUERIES: [&str; 4] = [
    "What's the weather like in Boston, MA right now?",
    "Convert 500 US dollars to Canadian dollars",
    "Find the area of a triangle with a base of 10 units and height of 5 units.",
    "Book a table for two at an Italian restaurant in San Francisco tonight",
];

/// This process's resident memory (`VmRSS`) and its peak (`VmHWM`), from `/proc/self/status`.
fn memory() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .filter(|line| line.starts_with("VmRSS") || line.starts_with("VmHWM"))
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The model, with a copy's text (`name 2 x. description`) read as its original's (`name. description`).
struct Copies(SentenceEmbedder);

impl Embedder for Copies {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let originals: Vec<String> = texts
            .iter()
            .map(|text| {
                (2..=5).fold(text.to_string(), |text, round| {
                    text.replacen(&format!(" {round} x. "), ". ", 1)
                })
            })
            .collect();
        let originals: Vec<&str> = originals.iter().map(String::as_str).collect();
        self.0.embed(&originals)
    }
}

fn embeddings(c: &mut Criterion) {
    let folder = model::minilm();
    eprintln!("before the model: {}", memory());
    let model = SentenceEmbedder::from_dir(&folder).expect("all-MiniLM-L6-v2 loads");
    eprintln!("the model loaded: {}", memory());

    let tools = bfcl::bfcl_tools(1_000);
    let texts: Vec<String> = tools.iter().map(embedding_text).collect();
    for run in 1..=2 {
        let started = Instant::now();
        for batch in texts.chunks(64) {
            let batch: Vec<&str> = batch.iter().map(String::as_str).collect();
            black_box(model.embed(&batch).unwrap());
        }
        eprintln!("embedding 1,000 tools, run {run}: {:?}", started.elapsed());
    }

    // One ranker for every size: the 10,000 tools' texts include the 1,000's and the 100's, so each
    // text is embedded once (the ranker's cache).
    let ranker = HybridRanker::new(Copies(model));
    let mut group = c.benchmark_group("embeddings/query");
    for count in [100, 1_000, 10_000] {
        let tools = bfcl::bfcl_tools(count);
        let index = ranker.index(&tools);
        if count == 10_000 {
            eprintln!("the model and 10,000 tools' index: {}", memory());
        }
        let mut next = 0;
        group.bench_function(count.to_string(), |b| {
            b.iter(|| {
                next = (next + 1) % QUERIES.len();
                black_box(index.search(black_box(QUERIES[next]), 5))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, embeddings);
criterion_main!(benches);
