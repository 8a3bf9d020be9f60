//! Ranking tools for a query: the [`Ranker`] trait (an application can bring embeddings), the text a tool
//! is found by ([`searchable_text`]), and, with the `tool-search` feature, [`Bm25Ranker`].

use serde_json::Value;

use crate::tool::AgentTool;

/// Makes a [`ToolIndex`] over a list of tools. [`ToolSearch`](super::ToolSearch) builds one whenever the
/// store's tools change and searches it for each query.
///
/// ```
/// use yiem_core::AgentTool;
/// use yiem_core::catalog::{Ranker, ToolIndex};
///
/// /// Ranks by how many query words the tool's name contains.
/// struct NameWords;
///
/// struct Names(Vec<String>);
///
/// impl Ranker for NameWords {
///     fn index(&self, tools: &[AgentTool]) -> Box<dyn ToolIndex> {
///         Box::new(Names(tools.iter().map(|tool| tool.name().to_owned()).collect()))
///     }
/// }
///
/// impl ToolIndex for Names {
///     fn search(&self, query: &str, k: usize) -> Vec<(usize, f32)> {
///         let mut hits: Vec<(usize, f32)> = self.0.iter().enumerate()
///             .map(|(at, name)| (at, query.split_whitespace().filter(|word| name.contains(*word)).count() as f32))
///             .filter(|(_, score)| *score > 0.0)
///             .collect();
///         hits.sort_by(|a, b| b.1.total_cmp(&a.1));
///         hits.truncate(k);
///         hits
///     }
/// }
/// ```
pub trait Ranker: Send + Sync + 'static {
    /// An index over `tools`; its hits are positions in `tools`.
    fn index(&self, tools: &[AgentTool]) -> Box<dyn ToolIndex>;
}

/// A searchable index over a list of tools, made by a [`Ranker`].
pub trait ToolIndex: Send + Sync {
    /// At most `k` tools for `query`, best first, each as its position in the indexed list and its score;
    /// tools with nothing in common with the query are left out.
    fn search(&self, query: &str, k: usize) -> Vec<(usize, f32)>;
}

/// The text a tool is found by, field by field: its name, its label, its description, and the names,
/// descriptions and allowed values (`enum`) of its parameters (nested ones too), one per line — many tools
/// name their domain only in their parameters' values.
///
/// ```
/// use serde_json::json;
/// use yiem_core::AgentTool;
/// use yiem_core::catalog::searchable_text;
///
/// let tool = AgentTool::builder("get_weather")
///     .description("Current weather for a city.")
///     .input_schema(json!({"type": "object", "properties": {
///         "city": {"type": "string", "description": "City name."}
///     }}))
///     .handler(|_, _| async { "" })
///     .build()
///     .unwrap();
/// let text = searchable_text(&tool);
/// assert_eq!(text[0], "get_weather");
/// assert_eq!(text[3], "city City name.");
/// ```
pub fn searchable_text(tool: &AgentTool) -> [String; 4] {
    let mut parameters = String::new();
    schema_words(tool.input_schema(), 0, &mut parameters);
    [
        tool.name().to_owned(),
        tool.label().to_owned(),
        tool.description().to_owned(),
        parameters,
    ]
}

/// Appends the names and descriptions of `schema`'s properties, nested ones (in objects and array items)
/// too, down to a few levels.
fn schema_words(schema: &Value, depth: usize, out: &mut String) {
    if depth > 4 {
        return;
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(name);
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                out.push(' ');
                out.push_str(description);
            }
            let values = property
                .get("enum")
                .or_else(|| property.get("items").and_then(|items| items.get("enum")));
            for value in values.and_then(Value::as_array).into_iter().flatten() {
                if let Some(value) = value.as_str() {
                    out.push(' ');
                    out.push_str(value);
                }
            }
            schema_words(property, depth + 1, out);
        }
    }
    if let Some(items) = schema.get("items") {
        schema_words(items, depth + 1, out);
    }
}

#[cfg(feature = "tool-search")]
pub use bm25_ranker::Bm25Ranker;

#[cfg(feature = "tool-search")]
mod bm25_ranker {
    use std::collections::HashMap;

    use bm25::{Embedder, EmbedderBuilder, Embedding, Tokenizer};
    use rust_stemmers::{Algorithm, Stemmer};

    use super::{Ranker, ToolIndex, searchable_text};
    use crate::tool::AgentTool;

    /// BM25 ([`bm25`] for the weights, [`rust_stemmers`] and [`stop_words`] for the words) over each
    /// tool's [`searchable_text`], tuned for tools:
    ///
    /// - identifiers are split into words (`getWeather`, `get_weather` and `get-weather` are all
    ///   "get weather"), English stop words are dropped and words are stemmed ("invoices" finds
    ///   "invoice");
    /// - the name counts [`name_weight`](Self::name_weight) times (3 by default), the description twice,
    ///   the label (when it is not the name) and the parameters once;
    /// - words that only make a request polite ("please", "could", "want", ...) are dropped with the stop
    ///   words.
    ///
    /// [`plain`](Self::plain) is the textbook BM25 over the same text (lowercased words, nothing else),
    /// the baseline the benchmark compares with.
    #[derive(Clone, Debug)]
    pub struct Bm25Ranker {
        tuned: bool,
        name_weight: usize,
        k1: f32,
        b: f32,
    }

    impl Default for Bm25Ranker {
        fn default() -> Self {
            Bm25Ranker {
                tuned: true,
                name_weight: 3,
                k1: 1.2,
                b: 0.75,
            }
        }
    }

    impl Bm25Ranker {
        /// The tuned ranker.
        pub fn new() -> Self {
            Self::default()
        }

        /// Textbook BM25 over the same text: lowercased alphanumeric words, every field once.
        pub fn plain() -> Self {
            Bm25Ranker {
                tuned: false,
                name_weight: 1,
                ..Self::default()
            }
        }

        /// How many times the name's words count.
        pub fn name_weight(mut self, weight: usize) -> Self {
            self.name_weight = weight.max(1);
            self
        }

        /// BM25's `k1` and `b`.
        pub fn parameters(mut self, k1: f32, b: f32) -> Self {
            self.k1 = k1;
            self.b = b;
            self
        }

        /// The tool's normalized words, each field as many times as it counts.
        fn document(&self, tool: &AgentTool, words: &Words, stems: &mut Stems) -> String {
            let [name, label, description, parameters] = searchable_text(tool);
            let mut fields: Vec<(&str, usize)> = vec![(&name, self.name_weight)];
            if !self.tuned || label != name {
                fields.push((&label, 1));
            }
            fields.push((&description, if self.tuned { 2 } else { 1 }));
            fields.push((&parameters, 1));
            let mut text = String::new();
            for (field, times) in fields {
                let normalized = words.normalize(field, stems);
                for _ in 0..times {
                    text.push_str(&normalized);
                    text.push(' ');
                }
            }
            text
        }
    }

    impl Ranker for Bm25Ranker {
        fn index(&self, tools: &[AgentTool]) -> Box<dyn ToolIndex> {
            // Each tool's text normalized once (a word's stem is worked out once per index), then given
            // to `bm25` as words separated by spaces.
            let words = Words::new(self.tuned);
            let mut stems = Stems::default();
            let documents: Vec<String> = tools
                .iter()
                .map(|tool| self.document(tool, &words, &mut stems))
                .collect();
            let corpus: Vec<&str> = documents.iter().map(String::as_str).collect();
            let words_in_all: usize = corpus
                .iter()
                .map(|document| document.split_ascii_whitespace().count())
                .sum();
            let avgdl = words_in_all as f32 / corpus.len().max(1) as f32;
            let embedder: Embedder<u32, Spaces> = EmbedderBuilder::with_avgdl(avgdl)
                .k1(self.k1)
                .b(self.b)
                .build();
            let mut index = Index {
                postings: HashMap::default(),
                documents: tools.len(),
                embedder,
                words,
            };
            for (at, document) in corpus.iter().enumerate() {
                let embedding = index.embedder.embed(document);
                index.add(at, &embedding);
            }
            Box::new(index)
        }
    }

    /// Each word's stem, worked out once per index.
    type Stems = HashMap<String, String, foldhash::fast::RandomState>;

    /// Splits text that is already normalized words.
    #[derive(Default)]
    struct Spaces;

    impl Tokenizer for Spaces {
        fn tokenize(&self, text: &str) -> Vec<String> {
            text.split_ascii_whitespace().map(str::to_owned).collect()
        }
    }

    /// Words that make a request polite or personal but say nothing about the tool it needs.
    const REQUEST_WORDS: [&str; 16] = [
        "please", "could", "would", "can", "want", "need", "like", "tell", "help", "let", "know",
        "give", "show", "find", "also", "using",
    ];

    /// Words of a text: split at anything not alphanumeric, and (tuned) at identifiers' word
    /// boundaries, lowercased, then (tuned) without stop words and stemmed.
    struct Words {
        stem: Option<Stemmer>,
        stop: std::collections::HashSet<&'static str>,
    }

    impl Words {
        fn new(tuned: bool) -> Self {
            Words {
                stem: tuned.then(|| Stemmer::create(Algorithm::English)),
                stop: if tuned {
                    stop_words::get(stop_words::LANGUAGE::English)
                        .iter()
                        .copied()
                        .chain(REQUEST_WORDS)
                        .collect()
                } else {
                    Default::default()
                },
            }
        }
    }

    impl Words {
        /// `text`'s words, separated by spaces; `stems` remembers each word's stem.
        fn normalize(&self, text: &str, stems: &mut Stems) -> String {
            let mut out = String::new();
            let mut push = |word: &str| {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(word);
            };
            for piece in text.split(|c: char| !c.is_alphanumeric()) {
                if piece.is_empty() {
                    continue;
                }
                let Some(stemmer) = &self.stem else {
                    push(&piece.to_lowercase());
                    continue;
                };
                for word in identifier_words(piece) {
                    let word = word.to_lowercase();
                    if self.stop.contains(word.as_str()) {
                        continue;
                    }
                    match stems.get(&word) {
                        Some(stem) => push(stem),
                        None => {
                            let stem = stemmer.stem(&word).into_owned();
                            push(&stem);
                            stems.insert(word, stem);
                        }
                    }
                }
            }
            out
        }
    }

    /// `getHTTPResponse2` → `get`, `HTTP`, `Response`, `2`.
    fn identifier_words(piece: &str) -> Vec<&str> {
        let chars: Vec<(usize, char)> = piece.char_indices().collect();
        let mut words = Vec::new();
        let mut start = 0;
        for i in 1..chars.len() {
            let (at, c) = chars[i];
            let (_, before) = chars[i - 1];
            let after = chars.get(i + 1).map(|(_, c)| *c);
            let boundary = (before.is_lowercase() && c.is_uppercase())
                || (before.is_uppercase()
                    && c.is_uppercase()
                    && after.is_some_and(char::is_lowercase))
                || (before.is_alphabetic() != c.is_alphabetic());
            if boundary {
                words.push(&piece[start..at]);
                start = at;
            }
        }
        words.push(&piece[start..]);
        words
    }

    /// An inverted index: for each word, the documents that have it and the word's BM25 weight there.
    struct Index {
        postings: HashMap<u32, Vec<(u32, f32)>, foldhash::fast::RandomState>,
        documents: usize,
        embedder: Embedder<u32, Spaces>,
        words: Words,
    }

    impl Index {
        fn add(&mut self, at: usize, embedding: &Embedding<u32>) {
            // The embedding has one entry per word occurrence, each with the word's weight.
            let mut seen: std::collections::HashSet<u32, foldhash::fast::RandomState> =
                Default::default();
            for token in embedding.iter() {
                if seen.insert(token.index) {
                    self.postings
                        .entry(token.index)
                        .or_default()
                        .push((at as u32, token.value));
                }
            }
        }

        fn idf(&self, df: usize) -> f32 {
            let (n, df) = (self.documents as f32, df as f32);
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        }

        /// Adds `weight` × each word's BM25 score to `scores`.
        fn score(&self, words: &[(u32, f32)], scores: &mut HashMap<u32, f32>) {
            for (word, weight) in words {
                let Some(postings) = self.postings.get(word) else {
                    continue;
                };
                let idf = self.idf(postings.len());
                for (document, value) in postings {
                    *scores.entry(*document).or_default() += weight * idf * value;
                }
            }
        }
    }

    /// Ranked best first; equal scores in registration order, so results do not depend on hashing.
    fn ranked(scores: HashMap<u32, f32>) -> Vec<(usize, f32)> {
        let mut hits: Vec<(usize, f32)> = scores
            .into_iter()
            .map(|(document, score)| (document as usize, score))
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits
    }

    impl ToolIndex for Index {
        fn search(&self, query: &str, k: usize) -> Vec<(usize, f32)> {
            let query = self
                .embedder
                .embed(&self.words.normalize(query, &mut Stems::default()));
            let mut words: Vec<(u32, f32)> = Vec::new();
            for token in query.iter() {
                if !words.iter().any(|(word, _)| *word == token.index) {
                    words.push((token.index, 1.0));
                }
            }
            let mut scores = HashMap::new();
            self.score(&words, &mut scores);
            let mut hits = ranked(scores);
            hits.truncate(k);
            hits
        }
    }

    #[cfg(test)]
    mod tests {
        use super::identifier_words;

        #[test]
        fn identifiers_split_into_words() {
            assert_eq!(
                identifier_words("getHTTPResponse2"),
                ["get", "HTTP", "Response", "2"]
            );
            assert_eq!(identifier_words("plain"), ["plain"]);
            assert_eq!(identifier_words("ABC"), ["ABC"]);
        }
    }
}
