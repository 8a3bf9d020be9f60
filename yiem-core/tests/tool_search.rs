//! The hybrid tool search's index over time: vectors kept by the text they were made from (in memory,
//! and in a file keyed by the model), and what `search_tools` answers. The embedder is a stand-in that
//! records what it is asked; `tests/embeddings.rs` runs a real model.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::json;
use yiem_core::catalog::{EmbedError, Embedder, HybridRanker, SEARCH_TOOLS, ToolSearch};
use yiem_core::{store::ToolStore, tool::AgentTool};

/// Vectors that count a few concepts' words; records every text it embeds.
#[derive(Clone)]
struct Concepts {
    asked: Arc<Mutex<Vec<String>>>,
    model: Option<&'static str>,
}

impl Concepts {
    fn new(model: Option<&'static str>) -> Self {
        Concepts {
            asked: Arc::default(),
            model,
        }
    }

    fn asked(&self) -> Vec<String> {
        let mut asked = self.asked.lock().unwrap().clone();
        asked.sort();
        asked
    }
}

impl Embedder for Concepts {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.asked
            .lock()
            .unwrap()
            .extend(texts.iter().map(|text| text.to_string()));
        const CONCEPTS: [&[&str]; 4] = [
            &["dollar", "currenc", "money"],
            &["weather", "rain"],
            &["invoice", "bill"],
            &["parcel", "package"],
        ];
        Ok(texts
            .iter()
            .map(|text| {
                let text = text.to_lowercase();
                CONCEPTS
                    .iter()
                    .map(|words| words.iter().filter(|word| text.contains(*word)).count() as f32)
                    .collect()
            })
            .collect())
    }

    fn model_name(&self) -> Option<String> {
        self.model.map(str::to_owned)
    }
}

fn tool(name: &str, description: &str) -> AgentTool {
    AgentTool::builder(name)
        .description(description)
        .handler(|_, _| async { "" })
        .build()
        .unwrap()
}

fn store(tools: &[(&str, &str)]) -> ToolStore {
    let store = ToolStore::new("agent").with_deferred_loading();
    for (name, description) in tools {
        store.register(tool(name, description)).unwrap();
    }
    store
}

const TOOLS: [(&str, &str); 3] = [
    ("currency_convert", "Convert an amount between currencies."),
    ("send_invoice", "Send an invoice to a customer."),
    ("get_weather", "The weather forecast for a city."),
];

fn best(search: &ToolSearch, store: &ToolStore, query: &str) -> String {
    search.search(store, query, 1)[0].0.name().to_owned()
}

#[test]
fn an_index_built_again_embeds_only_the_tools_whose_text_is_new() {
    let store = store(&TOOLS);
    let embedder = Concepts::new(None);
    let ranker = HybridRanker::new(embedder.clone());
    let search = ToolSearch::new(ranker.clone());
    assert_eq!(
        best(&search, &store, "500 dollars in yen"),
        "currency_convert"
    );
    assert_eq!(
        embedder.asked.lock().unwrap().len(),
        4,
        "three tools, one query"
    );
    embedder.asked.lock().unwrap().clear();
    // The store changes, as when an MCP server's list changes: a tool more, one reworded, one gone.
    store
        .register(tool("track_parcel", "Where a parcel is."))
        .unwrap();
    store.remove("get_weather");
    store.remove("send_invoice");
    store
        .register(tool("send_invoice", "E-mail an invoice."))
        .unwrap();
    assert_eq!(best(&search, &store, "my package"), "track_parcel");
    assert_eq!(
        embedder.asked(),
        [
            "my package",
            "send invoice. E-mail an invoice.",
            "track parcel. Where a parcel is.",
        ]
    );
    // A clone of the ranker shares its vectors: another search over the same tools embeds its query only.
    embedder.asked.lock().unwrap().clear();
    let other = ToolSearch::new(ranker.clone());
    assert_eq!(best(&other, &store, "dollars"), "currency_convert");
    assert_eq!(embedder.asked(), ["dollars"]);
}

/// A file under the target directory for `case`, removed first.
fn cache_file(case: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let folder = exe.ancestors().nth(3).unwrap().join("tool-search-tests");
    std::fs::create_dir_all(&folder).unwrap();
    let file = folder.join(format!("{case}.jsonl"));
    let _ = std::fs::remove_file(&file);
    file
}

#[test]
fn vectors_kept_in_a_file_are_reused_by_the_same_model_only() {
    let file = cache_file("reuse");
    let store = store(&TOOLS);
    let first = Concepts::new(Some("concepts-1"));
    let search = ToolSearch::new(HybridRanker::new(first.clone()).cache_file(&file));
    assert_eq!(best(&search, &store, "dollars"), "currency_convert");
    assert_eq!(first.asked.lock().unwrap().len(), 4);
    // Another process, the same model: the tools' vectors come from the file.
    let again = Concepts::new(Some("concepts-1"));
    let search = ToolSearch::new(HybridRanker::new(again.clone()).cache_file(&file));
    assert_eq!(best(&search, &store, "rain"), "get_weather");
    assert_eq!(again.asked(), ["rain"]);
    // A tool more: only its text is embedded, and it joins the file.
    store
        .register(tool("track_parcel", "Where a parcel is."))
        .unwrap();
    assert_eq!(best(&search, &store, "my package"), "track_parcel");
    assert_eq!(
        again.asked(),
        ["my package", "rain", "track parcel. Where a parcel is."]
    );
    let third = Concepts::new(Some("concepts-1"));
    let search = ToolSearch::new(HybridRanker::new(third.clone()).cache_file(&file));
    assert_eq!(best(&search, &store, "invoice"), "send_invoice");
    assert_eq!(third.asked(), ["invoice"]);
    // Another model: nothing is reused, and the file is now that model's.
    let other = Concepts::new(Some("concepts-2"));
    let search = ToolSearch::new(HybridRanker::new(other.clone()).cache_file(&file));
    assert_eq!(best(&search, &store, "invoice"), "send_invoice");
    assert_eq!(
        other.asked.lock().unwrap().len(),
        5,
        "four tools, one query"
    );
    let header = std::fs::read_to_string(&file).unwrap();
    assert!(
        header.starts_with("{\"model\":\"concepts-2\"}\n"),
        "{header}"
    );
    // An embedder that names no model keeps its vectors in memory only.
    let unnamed = Concepts::new(None);
    let file = cache_file("unnamed");
    let search = ToolSearch::new(HybridRanker::new(unnamed).cache_file(&file));
    assert_eq!(best(&search, &store, "invoice"), "send_invoice");
    assert!(!file.exists());
}

/// Counts the texts it embeds; every vector is the same.
#[derive(Clone, Default)]
struct Counting(Arc<Mutex<usize>>);

impl Embedder for Counting {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        *self.0.lock().unwrap() += texts.len();
        Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
    }

    fn model_name(&self) -> Option<String> {
        Some("counting".to_owned())
    }
}

#[test]
fn vectors_memory_let_go_are_read_back_from_the_file_not_embedded_again() {
    use yiem_core::catalog::Ranker;
    let file = cache_file("trimmed");
    let many: Vec<AgentTool> = (0..5_000)
        .map(|at| tool(&format!("tool_{at}"), "Does one thing."))
        .collect();
    let counting = Counting::default();
    let ranker = HybridRanker::new(counting.clone()).cache_file(&file);
    ranker.index(&many);
    assert_eq!(*counting.0.lock().unwrap(), 5_000);
    // A small catalog: memory keeps its vectors only (the rest stays in the file).
    ranker.index(&many[..10]);
    // The large one again: every vector comes from the file, and the file does not grow.
    let lines = std::fs::read_to_string(&file).unwrap().lines().count();
    ranker.index(&many);
    assert_eq!(*counting.0.lock().unwrap(), 5_000, "nothing embedded again");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().lines().count(),
        lines
    );
}

#[test]
fn a_corrupt_or_unwritable_cache_file_costs_the_cache_not_the_search() {
    let store = store(&TOOLS);
    let file = cache_file("corrupt");
    std::fs::write(
        &file,
        "{\"model\":\"concepts-1\"}\n{\"text\": 3}\nnot json\n",
    )
    .unwrap();
    let embedder = Concepts::new(Some("concepts-1"));
    let search = ToolSearch::new(HybridRanker::new(embedder.clone()).cache_file(&file));
    assert_eq!(best(&search, &store, "dollars"), "currency_convert");
    assert_eq!(
        embedder.asked.lock().unwrap().len(),
        4,
        "every tool embedded"
    );
    // A folder where the file should be: nothing written, the search still ranks by meaning.
    let folder = cache_file("a-folder");
    std::fs::create_dir_all(&folder).unwrap();
    let embedder = Concepts::new(Some("concepts-1"));
    let search = ToolSearch::new(HybridRanker::new(embedder.clone()).cache_file(&folder));
    assert_eq!(best(&search, &store, "rain"), "get_weather");
    std::fs::remove_dir_all(&folder).unwrap();
}

#[tokio::test]
async fn a_search_answer_quotes_a_bounded_excerpt_of_each_tools_description() {
    let long = format!("Send an invoice {}.\nSecond line.", "and more ".repeat(200));
    let store = store(&[("send_invoice", &long)]);
    let search = ToolSearch::bm25();
    store.register(search.tool(&store)).unwrap();
    let found = store
        .execute("s1", SEARCH_TOOLS, json!({"query": "invoice"}))
        .await;
    let text = found.text_content();
    let line = text.lines().nth(1).unwrap();
    let excerpt = line.strip_prefix("- send_invoice: ").unwrap();
    assert!(excerpt.starts_with("Send an invoice and more"), "{line}");
    assert!(excerpt.ends_with('…'), "{line}");
    assert_eq!(excerpt.chars().count(), 200, "{excerpt}");
    assert!(!text.contains("Second line"), "{text}");
}
