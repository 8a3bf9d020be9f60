//! Tool search by meaning with all-MiniLM-L6-v2 run in process (`catalog::SentenceEmbedder`), on the
//! BFCL catalog of `benches/tool-search` (repeated with numbered names past its 1,998 tools):
//!
//! - `embeddings/floor`: the floor every figure is read against in the same run, so that a loaded
//!   machine's slowness cancels out: 10,000 dot products of 384 numbers in a plain loop (what ranking
//!   10,000 tools by meaning cannot do without).
//! - `embeddings/query/{10000,1000,100}`: one query of the hybrid ranking, its embedding included
//!   (tokenizing, the model, the word search, the cosines and the best 5), over an index built before.
//!   The copies past the catalog's 1,998 tools (`name_2x`, ...) get their original's vector (their text
//!   differs by the suffix alone), so building the 10,000 tools' index embeds 1,998 texts, not 10,000;
//!   the query's cost is the same.
//! - `embeddings/parts/*`, where a query's time goes at 10,000 tools: `tokenize` (the model's tokenizer
//!   alone), `embed` (the query's vector: tokenizer, model, pooling), `words` (the tuned BM25's best 100),
//!   `rank` (the whole hybrid query with a stand-in embedder that costs nothing: words, cosines, best 5).
//! - `embeddings/{f32,int8}/embed` and `embeddings/{f32,int8}/query/10000`: the same with the model's
//!   linear layers' weights kept as f32 or int8 (`SentenceEmbedder::weights`) instead of the default
//!   f16; the tools' vectors made by that model, kept in a file of their own.
//!
//! Run without a filter, it also prints, outside criterion (one run takes half a minute), the time to
//! embed the first 1,000 tools' texts (`catalog::embedding_text`) in the ranker's batches of 64; and the
//! process's resident memory with the model loaded, then with the 10,000 tools' index.
//! Run with `cargo bench -p yiem-core --features embeddings --bench embeddings`; the model is found (or
//! installed) as by the tests (`tests/model/mod.rs`).

#[path = "../tests/model/mod.rs"]
mod model;

#[path = "../../benches/src/catalog.rs"]
mod bfcl;

use std::cell::OnceCell;
use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use yiem_core::catalog::{
    Bm25Ranker, EmbedError, Embedder, HybridRanker, Ranker, SentenceEmbedder, Weights,
    embedding_text,
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

    fn model_name(&self) -> Option<String> {
        self.0.model_name()
    }
}

/// A stand-in for the model that costs next to nothing: a vector of 384 numbers from the text's bytes.
struct Free;

impl Embedder for Free {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|text| {
                let seed = text
                    .bytes()
                    .fold(7u32, |h, b| h.wrapping_mul(31) ^ u32::from(b));
                (0..384u32)
                    .map(|at| ((seed ^ at.wrapping_mul(2_654_435_761)) % 1_000) as f32 - 500.0)
                    .collect()
            })
            .collect())
    }
}

/// Whether criterion was given a filter (then only some benchmarks run, and the slow figures printed
/// outside criterion are left out).
fn filtered() -> bool {
    std::env::args()
        .skip(1)
        .any(|argument| !argument.starts_with('-'))
}

fn embeddings(c: &mut Criterion) {
    let folder = model::minilm();
    eprintln!("before the model: {}", memory());
    let model = SentenceEmbedder::from_dir(&folder).expect("all-MiniLM-L6-v2 loads");
    eprintln!("the model loaded: {}", memory());

    if !filtered() {
        let tools = bfcl::bfcl_tools(1_000);
        let texts: Vec<String> = tools.iter().map(embedding_text).collect();
        let started = Instant::now();
        for batch in texts.chunks(64) {
            let batch: Vec<&str> = batch.iter().map(String::as_str).collect();
            black_box(model.embed(&batch).unwrap());
        }
        eprintln!("embedding 1,000 tools: {:?}", started.elapsed());
    }

    let mut group = c.benchmark_group("embeddings");
    let a: Vec<f32> = (0..384).map(|at| at as f32 / 384.0).collect();
    let matrix: Vec<f32> = (0..384 * 10_000)
        .map(|at| (at % 97) as f32 / 97.0)
        .collect();
    group.bench_function("floor", |b| {
        b.iter(|| {
            let a = black_box(&a);
            let mut best = f32::MIN;
            for row in black_box(&matrix).chunks_exact(384) {
                let mut sum = 0.0;
                for (x, y) in a.iter().zip(row) {
                    sum += x * y;
                }
                best = best.max(sum);
            }
            best
        })
    });

    // Where a query's time goes at 10,000 tools.
    let tools = bfcl::bfcl_tools(10_000);
    let tokenizer = tokenizers::Tokenizer::from_file(folder.join("tokenizer.json")).unwrap();
    let mut next = 0;
    group.bench_function("parts/tokenize", |b| {
        b.iter(|| {
            next = (next + 1) % QUERIES.len();
            black_box(tokenizer.encode(black_box(QUERIES[next]), true).unwrap())
        })
    });
    group.bench_function("parts/embed", |b| {
        b.iter(|| {
            next = (next + 1) % QUERIES.len();
            black_box(model.embed(&[black_box(QUERIES[next])]).unwrap())
        })
    });
    let words = Bm25Ranker::new().index(&tools);
    group.bench_function("parts/words", |b| {
        b.iter(|| {
            next = (next + 1) % QUERIES.len();
            black_box(words.search(black_box(QUERIES[next]), 100))
        })
    });
    let free = HybridRanker::new(Free).index(&tools);
    group.bench_function("parts/rank", |b| {
        b.iter(|| {
            next = (next + 1) % QUERIES.len();
            black_box(free.search(black_box(QUERIES[next]), 5))
        })
    });

    // One ranker for every size, the largest first: the 10,000 tools' texts include the 1,000's and the
    // 100's, so each text is embedded once (the ranker's cache keeps the last index's texts, not more).
    // The tools' vectors are kept beside the model (`cache_file`), so only the first run embeds them: a
    // file per kind of weights, as a file keeps one model's vectors.
    let ranker = HybridRanker::new(Copies(model))
        .cache_file(folder.with_file_name("bench-vectors-f16.jsonl"));
    for count in [10_000, 1_000, 100] {
        let tools = bfcl::bfcl_tools(count);
        // Built when the benchmark runs (criterion calls the closure only for the benchmarks a filter
        // keeps), once.
        let index = OnceCell::new();
        group.bench_function(format!("query/{count}"), |b| {
            let index = index.get_or_init(|| {
                let index = ranker.index(&tools);
                if count == 10_000 {
                    eprintln!("the model and 10,000 tools' index: {}", memory());
                }
                index
            });
            b.iter(|| {
                next = (next + 1) % QUERIES.len();
                black_box(index.search(black_box(QUERIES[next]), 5))
            })
        });
    }

    // The other kinds of weights, loaded after the default's figures so that the memory printed above
    // is the default model's.
    for (kind, weights) in [("f32", Weights::F32), ("int8", Weights::Int8)] {
        let other = SentenceEmbedder::from_dir(&folder)
            .and_then(|model| model.weights(weights))
            .expect("all-MiniLM-L6-v2 loads");
        group.bench_function(format!("{kind}/embed"), |b| {
            b.iter(|| {
                next = (next + 1) % QUERIES.len();
                black_box(other.embed(&[black_box(QUERIES[next])]).unwrap())
            })
        });
        let ranker = HybridRanker::new(Copies(other))
            .cache_file(folder.with_file_name(format!("bench-vectors-{kind}.jsonl")));
        let tools = bfcl::bfcl_tools(10_000);
        let index = OnceCell::new();
        group.bench_function(format!("{kind}/query/10000"), |b| {
            let index = index.get_or_init(|| ranker.index(&tools));
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
