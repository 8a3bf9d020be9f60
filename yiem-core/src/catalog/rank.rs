//! Ranking tools for a query: the [`Ranker`] trait (an application can bring embeddings), the text a tool
//! is found by ([`searchable_text`]), and, with the `tool-search` feature, [`Bm25Ranker`].

use serde_json::Value;

use crate::tool::definition::AgentTool;

/// Makes a [`ToolIndex`] over a list of tools. [`ToolSearch`](super::ToolSearch) builds one whenever the
/// store's tools change and searches it for each query.
///
/// ```
/// use yiem_core::tool::AgentTool;
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
/// use yiem_core::tool::AgentTool;
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
pub(super) use bm25_ranker::identifier_words;

#[cfg(feature = "tool-search")]
mod bm25_ranker {
    use std::collections::HashMap;

    use rust_stemmers::{Algorithm, Stemmer};

    use super::{Ranker, ToolIndex, searchable_text};
    use crate::tool::definition::AgentTool;

    type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

    /// The words of each run of letters and digits (`getWeather` → `get`, `weather`), worked out once
    /// per index.
    type PieceWords = FastMap<String, Vec<String>>;

    /// BM25 over each tool's [`searchable_text`], tuned for tools:
    ///
    /// - identifiers are split into words (`getWeather`, `get_weather` and `get-weather` are all
    ///   "get weather"), English stop words ([`stop_words`]) are dropped and words are stemmed
    ///   ([`rust_stemmers`]' Snowball English: "invoices" finds "invoice");
    /// - the name counts [`name_weight`](Self::name_weight) times (3 by default), the description twice,
    ///   the label (when it is not the name) and the parameters once;
    /// - words that only make a request polite ("please", "could", "want", ...) are dropped with the stop
    ///   words, and each word of a query counts once.
    ///
    /// [`plain`](Self::plain) is the textbook BM25 over the same text (lowercased words, nothing else),
    /// the baseline the benchmark compares with.
    ///
    /// The weights are BM25's formula, written out here over an inverted index (twenty lines), not taken
    /// from the `bm25` crate: its embedder makes a `String` per word occurrence and its scorer reads
    /// every candidate's words once per query word, which made indexing 10,000 tools three times slower
    /// (BENCHMARKS.md, issue 34).
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

        /// BM25's `k1` (how fast a repeated word stops counting) and `b` (how much a long text is
        /// discounted).
        pub fn parameters(mut self, k1: f32, b: f32) -> Self {
            self.k1 = k1;
            self.b = b;
            self
        }

        /// How many times each word of `tool`'s text counts, and how many words it has in all.
        fn counts(
            &self,
            tool: &AgentTool,
            words: &Words,
            piece_words: &mut PieceWords,
        ) -> (FastMap<String, u32>, usize) {
            let [name, label, description, parameters] = searchable_text(tool);
            let mut fields: Vec<(&str, u32)> = vec![(&name, self.name_weight as u32)];
            if !self.tuned || label != name {
                fields.push((&label, 1));
            }
            fields.push((&description, if self.tuned { 2 } else { 1 }));
            fields.push((&parameters, 1));
            let mut counts = FastMap::default();
            let mut length = 0;
            for (field, times) in fields {
                words.each(field, piece_words, |word| {
                    match counts.get_mut(word) {
                        Some(count) => *count += times,
                        None => {
                            counts.insert(word.to_owned(), times);
                        }
                    }
                    length += times as usize;
                });
            }
            (counts, length)
        }
    }

    impl Ranker for Bm25Ranker {
        fn index(&self, tools: &[AgentTool]) -> Box<dyn ToolIndex> {
            let words = Words::new(self.tuned);
            let mut piece_words = PieceWords::default();
            let documents: Vec<(FastMap<String, u32>, usize)> = tools
                .iter()
                .map(|tool| self.counts(tool, &words, &mut piece_words))
                .collect();
            let average = documents.iter().map(|(_, length)| *length).sum::<usize>() as f32
                / documents.len().max(1) as f32;
            let mut index = Index {
                vocabulary: FastMap::default(),
                postings: Vec::new(),
                documents: tools.len(),
                words,
            };
            for (at, (counts, length)) in documents.into_iter().enumerate() {
                // BM25's weight of a word in a text: it saturates with the count (`k1`) and is
                // discounted for a text longer than the average (`b`).
                let norm = self.k1 * (1.0 - self.b + self.b * length as f32 / average.max(1.0));
                for (word, count) in counts {
                    let count = count as f32;
                    let weight = count * (self.k1 + 1.0) / (count + norm);
                    let id = index.word_id(word);
                    index.postings[id].push((at as u32, weight));
                }
            }
            Box::new(index)
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
        stop: std::collections::HashSet<&'static str, foldhash::fast::RandomState>,
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
        /// Calls `push` with each word of `text`; `piece_words` remembers the words of each run of letters.
        fn each(&self, text: &str, piece_words: &mut PieceWords, mut push: impl FnMut(&str)) {
            for piece in text.split(|c: char| !c.is_alphanumeric()) {
                if piece.is_empty() {
                    continue;
                }
                if !piece_words.contains_key(piece) {
                    let words = self.words_of(piece);
                    piece_words.insert(piece.to_owned(), words);
                }
                for word in &piece_words[piece] {
                    push(word);
                }
            }
        }

        /// The words of one run of letters and digits: lowercased, and (tuned) split at an identifier's
        /// word boundaries, without stop words, stemmed.
        fn words_of(&self, piece: &str) -> Vec<String> {
            let Some(stemmer) = &self.stem else {
                return vec![piece.to_lowercase()];
            };
            identifier_words(piece)
                .into_iter()
                .map(str::to_lowercase)
                .filter(|word| !self.stop.contains(word.as_str()))
                .map(|word| stemmer.stem(&word).into_owned())
                .collect()
        }
    }

    /// `getHTTPResponse2` → `get`, `HTTP`, `Response`, `2`.
    pub(in crate::catalog) fn identifier_words(piece: &str) -> Vec<&str> {
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

    /// An inverted index: for each word, the tools that have it and the word's BM25 weight there.
    struct Index {
        /// Each word's number.
        vocabulary: FastMap<String, usize>,
        /// For each word (by number), the documents that have it and its weight there.
        postings: Vec<Vec<(u32, f32)>>,
        documents: usize,
        words: Words,
    }

    impl Index {
        fn word_id(&mut self, word: String) -> usize {
            if let Some(id) = self.vocabulary.get(&word) {
                return *id;
            }
            let id = self.postings.len();
            self.vocabulary.insert(word, id);
            self.postings.push(Vec::new());
            id
        }

        /// How rare a word in `df` of the documents is.
        fn idf(&self, df: usize) -> f32 {
            let (n, df) = (self.documents as f32, df as f32);
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        }
    }

    impl ToolIndex for Index {
        fn search(&self, query: &str, k: usize) -> Vec<(usize, f32)> {
            let mut asked: Vec<usize> = Vec::new();
            self.words.each(query, &mut PieceWords::default(), |word| {
                // Each word of the query counts once.
                if let Some(&id) = self.vocabulary.get(word)
                    && !asked.contains(&id)
                {
                    asked.push(id);
                }
            });
            let mut scores: FastMap<u32, f32> = FastMap::default();
            for id in asked {
                let postings = &self.postings[id];
                let idf = self.idf(postings.len());
                for (document, weight) in postings {
                    *scores.entry(*document).or_default() += idf * weight;
                }
            }
            let mut hits: Vec<(usize, f32)> = scores
                .into_iter()
                .map(|(document, score)| (document as usize, score))
                .collect();
            // Best first; equal scores in registration order, so results do not depend on hashing.
            hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
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
