//! Ranking by meaning as well as words: the [`Embedder`] trait an application implements (texts to
//! vectors, with a model of its choice), and [`HybridRanker`], which mixes a word ranking (the tuned
//! [`Bm25Ranker`] by default) with the cosine similarity of a query's vector to each tool's.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use yiem_dense::Packed;

use super::cache::{Disk, VectorCache};
use super::rank::{Bm25Ranker, Ranker, ToolIndex, identifier_words};
use crate::tool::definition::{AgentTool, title_case};

/// Turns texts into vectors (sentence embeddings) that are close when the texts mean the same thing.
///
/// [`HybridRanker`] calls it when it builds an index (every tool's text, in batches of at most
/// [`HybridRanker::batch`] texts) and once for each query. The call blocks: `search_tools` runs its
/// searches on tokio's blocking threads, so an embedder may wait for a model server or a process (an
/// async client can wait with `Handle::block_on` on a runtime of its own).
///
/// ```
/// use yiem_core::catalog::{EmbedError, Embedder};
///
/// /// A toy embedder: counts of a few letters.
/// struct Letters;
///
/// impl Embedder for Letters {
///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
///         Ok(texts
///             .iter()
///             .map(|text| "aeiou".chars().map(|c| text.matches(c).count() as f32).collect())
///             .collect())
///     }
/// }
/// ```
pub trait Embedder: Send + Sync + 'static {
    /// One vector per text, in the order of `texts`, all of the same length.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// A name for the model whose vectors `embed` returns, for vectors kept in a file
    /// ([`HybridRanker::cache_file`]): embedders with the same name must give the same vectors. `None` (the
    /// default): vectors are kept in memory only.
    fn model_name(&self) -> Option<String> {
        None
    }
}

/// Why an embedding could not be used. [`HybridRanker`] then ranks by words alone, and says so
/// ([`HybridRanker::on_fallback`], and a `tracing` warning).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The embedder itself failed (its model could not be reached, its process died, ...).
    #[error("the embedder failed: {0}")]
    Failed(String),
    /// It answered with another number of vectors than it was given texts.
    #[error("the embedder returned {returned} vectors for {asked} texts")]
    Count {
        /// How many texts it was given.
        asked: usize,
        /// How many vectors it returned.
        returned: usize,
    },
    /// A vector's length differs from the others' (or from the tools' vectors, for a query).
    #[error("the embedder returned a vector of {returned} numbers where {expected} were expected")]
    Length {
        /// The length of the first vector (of the tools' vectors, for a query).
        expected: usize,
        /// The length of the vector that differs.
        returned: usize,
    },
    /// A vector is empty, or holds a number that is not finite.
    #[error("the embedder returned an empty vector or one with a number that is not finite")]
    NotFinite,
}

impl EmbedError {
    /// The embedder failed, for `reason`.
    pub fn failed(reason: impl fmt::Display) -> Self {
        EmbedError::Failed(reason.to_string())
    }
}

/// What [`HybridRanker::on_fallback`] is told: which embedding failed, and why.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Fallback {
    /// The tools could not be embedded: the index ranks every query by words alone.
    Tools(EmbedError),
    /// A query could not be embedded: that query is ranked by words alone.
    Query(EmbedError),
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fallback::Tools(error) => write!(
                f,
                "embedding the tools failed ({error}): every query is ranked by words alone"
            ),
            Fallback::Query(error) => write!(
                f,
                "embedding the query failed ({error}): it is ranked by words alone"
            ),
        }
    }
}

type FallbackHook = Arc<dyn Fn(&Fallback) + Send + Sync>;

/// How many texts [`HybridRanker`] gives its embedder at once by default.
const DEFAULT_BATCH: usize = 64;
/// How many of the word ranking's best tools take part in the mix: a tool below them counts as having
/// no word in common with the query.
const WORD_CANDIDATES: usize = 100;

/// Ranks by words and meaning: each tool's score is `weight × words + (1 − weight) × meaning`, where
/// *words* is the word ranking's score divided by the best score for the query (1 for the best tool,
/// 0 for a tool the word ranking leaves out), and *meaning* is the cosine similarity of the query's
/// vector and the tool's, from an [`Embedder`]. A tool can be found by meaning with no word in common
/// with the query ("500 US dollars in Canadian dollars" for `currency_exchange_convert`).
///
/// Each tool is embedded from its name (split into words) and description ([`embedding_text`]) when the
/// first index that holds it is built; the ranker (and its clones) keep each vector by the text it was
/// made from, so an index built again after the store changed embeds only the tools whose text is new
/// (an MCP server's `list_changed` costs what changed), and with [`cache_file`](Self::cache_file) keep
/// them on disk for the next process. Each query is embedded when it is searched. If the embedder fails or
/// its vectors are unusable (wrong count, lengths that differ, not finite numbers), the ranking falls
/// back to words alone — for the whole index or for one query — and says so: a `tracing` warning, and
/// the hook set with [`on_fallback`](Self::on_fallback). It never panics on an embedder's answer.
///
/// The default weight, 0.4, was chosen on half of the tool-search benchmark's requests and checked on the
/// other half (BENCHMARKS.md, issue 34), with Universal Sentence Encoder lite; with all-MiniLM-L6-v2
/// (`SentenceEmbedder`, feature `embeddings`) it was kept untuned, and tuning it on one half
/// did not carry to the other (BENCHMARKS.md, "The sentence embedder: tool search by meaning").
///
/// ```
/// use yiem_core::{store::ToolStore, tool::AgentTool};
/// use yiem_core::catalog::{EmbedError, Embedder, HybridRanker, ToolSearch};
///
/// /// Says whether a text is about money (a stand-in for a sentence-embedding model).
/// struct Money;
///
/// impl Embedder for Money {
///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
///         Ok(texts.iter().map(|text| {
///             let money = ["dollar", "currenc", "euro"].iter().any(|word| text.to_lowercase().contains(word));
///             if money { vec![1.0, 0.0] } else { vec![0.0, 1.0] }
///         }).collect())
///     }
/// }
///
/// let store = ToolStore::new("agent").with_deferred_loading();
/// for (name, description) in [
///     ("currency_exchange_convert", "Convert an amount between currencies."),
///     ("send_invoice", "Send an invoice to a customer."),
/// ] {
///     store.register(
///         AgentTool::builder(name).description(description).handler(|_, _| async { "" }).build().unwrap(),
///     ).unwrap();
/// }
/// let search = ToolSearch::new(HybridRanker::new(Money));
/// // No word in common with the tool: found by meaning.
/// let found = search.search(&store, "500 US dollars in Canadian money", 1);
/// assert_eq!(found[0].0.name(), "currency_exchange_convert");
/// ```
#[derive(Clone)]
pub struct HybridRanker {
    words: Arc<dyn Ranker>,
    embedder: Arc<dyn Embedder>,
    weight: f32,
    batch: usize,
    on_fallback: Option<FallbackHook>,
    cache: VectorCache,
    cache_file: Option<PathBuf>,
}

impl HybridRanker {
    /// The tuned [`Bm25Ranker`] mixed with `embedder`'s similarities.
    pub fn new(embedder: impl Embedder) -> Self {
        HybridRanker {
            words: Arc::new(Bm25Ranker::new()),
            embedder: Arc::new(embedder),
            weight: 0.4,
            batch: DEFAULT_BATCH,
            on_fallback: None,
            cache: VectorCache::default(),
            cache_file: None,
        }
    }

    /// The word ranking to mix with (the tuned [`Bm25Ranker`] by default).
    pub fn words(mut self, ranker: impl Ranker) -> Self {
        self.words = Arc::new(ranker);
        self
    }

    /// How much the words count against the meaning, from 0 (meaning alone) to 1 (words alone); 0.4 by
    /// default.
    pub fn weight(mut self, weight: f32) -> Self {
        self.weight = if weight.is_finite() {
            weight.clamp(0.0, 1.0)
        } else {
            0.4
        };
        self
    }

    /// How many texts the embedder is given at once when the index is built (64 by default).
    pub fn batch(mut self, texts: usize) -> Self {
        self.batch = texts.max(1);
        self
    }

    /// Keeps the tools' vectors in `file` too (JSON lines, keyed by the embedder's
    /// [`model_name`](Embedder::model_name) and each tool's text), so that another process with the same
    /// model embeds only the tools the file lacks. Vectors of another model in the file are replaced; an
    /// embedder without a model name keeps them in memory only. A file that cannot be read or written
    /// costs only the vectors on disk (a `tracing` warning).
    ///
    /// ```no_run
    /// # #[cfg(feature = "embeddings")] {
    /// use yiem_core::catalog::{HybridRanker, SentenceEmbedder};
    ///
    /// let model = SentenceEmbedder::from_dir("models/all-MiniLM-L6-v2").unwrap();
    /// let ranker = HybridRanker::new(model).cache_file("tool-vectors.jsonl");
    /// # }
    /// ```
    pub fn cache_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.cache_file = Some(file.into());
        self
    }

    /// Called each time the ranking falls back to words alone, with what failed (the CLI prints it).
    pub fn on_fallback(mut self, hook: impl Fn(&Fallback) + Send + Sync + 'static) -> Self {
        self.on_fallback = Some(Arc::new(hook));
        self
    }

    /// Every tool's vector, normalized to length 1, one after the other: the kept ones, and the rest
    /// embedded in batches (then kept, once every vector proved usable).
    fn embed_tools(&self, tools: &[AgentTool]) -> Result<Vectors, EmbedError> {
        let texts: Vec<String> = tools.iter().map(embedding_text).collect();
        let model = self
            .cache_file
            .as_ref()
            .and_then(|_| self.embedder.model_name());
        let disk = self
            .cache_file
            .as_deref()
            .zip(model.as_deref())
            .map(|(file, model)| Disk { file, model });
        let kept = self.cache.get(&texts, disk.as_ref());
        // Each text not kept, once (two tools may share a text).
        let mut missing: Vec<&str> = Vec::new();
        let mut seen = HashSet::new();
        for (text, kept) in texts.iter().zip(&kept) {
            if kept.is_none() && seen.insert(text.as_str()) {
                missing.push(text);
            }
        }
        let mut new: HashMap<&str, Arc<[f32]>> = HashMap::with_capacity(missing.len());
        for batch in missing.chunks(self.batch) {
            let embedded = self.embedder.embed(batch)?;
            if embedded.len() != batch.len() {
                return Err(EmbedError::Count {
                    asked: batch.len(),
                    returned: embedded.len(),
                });
            }
            new.extend(
                batch
                    .iter()
                    .copied()
                    .zip(embedded.into_iter().map(Arc::from)),
            );
        }
        let mut vectors = Vectors::default();
        for (text, kept) in texts.iter().zip(&kept) {
            match kept.as_ref().or_else(|| new.get(text.as_str())) {
                Some(vector) => vectors.push(vector)?,
                None => return Err(EmbedError::failed("a tool's vector went missing")),
            }
        }
        let new = missing
            .iter()
            .filter_map(|text| Some((text.to_string(), new.get(text)?.clone())))
            .collect();
        self.cache.put(new, &texts, disk.as_ref());
        Ok(vectors)
    }
}

impl fmt::Debug for HybridRanker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HybridRanker")
            .field("weight", &self.weight)
            .field("batch", &self.batch)
            .field("cache_file", &self.cache_file)
            .finish_non_exhaustive()
    }
}

impl Ranker for HybridRanker {
    fn index(&self, tools: &[AgentTool]) -> Box<dyn ToolIndex> {
        let words = self.words.index(tools);
        let cosines = if tools.is_empty() {
            Some(Vectors::default().into_cosines())
        } else {
            match self.embed_tools(tools) {
                Ok(vectors) => Some(vectors.into_cosines()),
                Err(error) => {
                    report(self.on_fallback.as_ref(), Fallback::Tools(error));
                    None
                }
            }
        };
        Box::new(HybridIndex {
            words,
            cosines,
            tools: tools.len(),
            embedder: Arc::clone(&self.embedder),
            weight: self.weight,
            on_fallback: self.on_fallback.clone(),
        })
    }
}

/// Tells the hook and the log that a ranking fell back to words alone.
fn report(hook: Option<&FallbackHook>, fallback: Fallback) {
    tracing::warn!(target: "yiem::catalog", "{fallback}");
    if let Some(hook) = hook {
        hook(&fallback);
    }
}

/// The text a tool is embedded by: its name with its words apart (`getWeather_v2` → "get Weather v 2"),
/// its label when it has one of its own (not the one made from its name), and its description. Parameters are left out: with them, recall@5
/// on the benchmark's tuning half was 0.889 instead of 0.896, and the texts take twice as long to embed.
///
/// ```
/// use yiem_core::tool::AgentTool;
/// use yiem_core::catalog::embedding_text;
///
/// let tool = AgentTool::builder("getWeather")
///     .description("Current weather for a city.")
///     .handler(|_, _| async { "" })
///     .build()
///     .unwrap();
/// assert_eq!(embedding_text(&tool), "get Weather. Current weather for a city.");
/// ```
pub fn embedding_text(tool: &AgentTool) -> String {
    let mut text = tool
        .name()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|piece| !piece.is_empty())
        .flat_map(identifier_words)
        .collect::<Vec<_>>()
        .join(" ");
    // A label of its own, not the one made from the name.
    let label = tool.label();
    if !label.is_empty() && label != tool.name() && label != title_case(tool.name()) {
        text.push_str(" (");
        text.push_str(label);
        text.push(')');
    }
    if !tool.description().is_empty() {
        text.push_str(". ");
        text.push_str(tool.description());
    }
    text
}

/// Vectors of one length, normalized, stored one after the other.
#[derive(Default)]
struct Vectors {
    length: usize,
    numbers: Vec<f32>,
}

impl Vectors {
    fn push(&mut self, vector: &[f32]) -> Result<(), EmbedError> {
        if self.numbers.is_empty() {
            self.length = vector.len();
        }
        let normalized = normalized(vector, self.length)?;
        self.numbers.extend_from_slice(&normalized);
        Ok(())
    }

    /// The vectors as one linear layer whose outputs are the tools, so that a query's cosines are
    /// one product (`yiem_dense`: the vectors packed once, then read in one pass at the speed memory
    /// gives; 15 MB for 10,000 tools of 384 numbers).
    fn into_cosines(self) -> Cosines {
        let tools = self.numbers.len().checked_div(self.length).unwrap_or(0);
        Cosines {
            length: self.length,
            layer: Packed::new(&self.numbers, &vec![0.0; tools], tools, self.length),
        }
    }
}

/// The tools' normalized vectors, packed: [`Vectors::into_cosines`].
struct Cosines {
    length: usize,
    layer: Packed,
}

/// `vector` at length 1 (all zeros stays all zeros), if it has `length` finite numbers.
fn normalized(vector: &[f32], length: usize) -> Result<Vec<f32>, EmbedError> {
    if vector.len() != length {
        return Err(EmbedError::Length {
            expected: length,
            returned: vector.len(),
        });
    }
    if vector.is_empty() || !vector.iter().all(|x| x.is_finite()) {
        return Err(EmbedError::NotFinite);
    }
    let norm = dot(vector, vector).sqrt();
    if !norm.is_finite() {
        return Err(EmbedError::NotFinite);
    }
    let scale = if norm > 0.0 { 1.0 / norm } else { 0.0 };
    Ok(vector.iter().map(|x| x * scale).collect())
}

/// The dot product, in eight lanes so that it vectorizes.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let (a_rest, b_rest) = (a_chunks.remainder(), b_chunks.remainder());
    for (x, y) in a_chunks.zip(b_chunks) {
        for lane in 0..8 {
            lanes[lane] += x[lane] * y[lane];
        }
    }
    let rest: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + rest
}

/// A word index and the tools' vectors (`None` when they could not be made).
struct HybridIndex {
    words: Box<dyn ToolIndex>,
    cosines: Option<Cosines>,
    tools: usize,
    embedder: Arc<dyn Embedder>,
    weight: f32,
    on_fallback: Option<FallbackHook>,
}

impl HybridIndex {
    /// The query's vector, normalized, or why there is none.
    fn query_vector(&self, query: &str, length: usize) -> Result<Vec<f32>, EmbedError> {
        let mut vectors = self.embedder.embed(&[query])?;
        if vectors.len() != 1 {
            return Err(EmbedError::Count {
                asked: 1,
                returned: vectors.len(),
            });
        }
        normalized(&vectors.remove(0), length)
    }
}

impl ToolIndex for HybridIndex {
    fn search(&self, query: &str, k: usize) -> Vec<(usize, f32)> {
        let Some(cosines) = self.cosines.as_ref().filter(|_| self.tools > 0) else {
            return self.words.search(query, k);
        };
        if query.trim().is_empty() || k == 0 {
            return self.words.search(query, k);
        }
        let asked = match self.query_vector(query, cosines.length) {
            Ok(vector) => vector,
            Err(error) => {
                report(self.on_fallback.as_ref(), Fallback::Query(error));
                return self.words.search(query, k);
            }
        };
        let mut scores = cosines.layer.forward(&asked, 1);
        for score in &mut scores {
            *score *= 1.0 - self.weight;
        }
        let by_words = self.words.search(query, WORD_CANDIDATES.max(k));
        if let Some(best) = by_words.first().map(|(_, score)| *score)
            && best > 0.0
        {
            for (at, score) in by_words {
                if let Some(total) = scores.get_mut(at) {
                    *total += self.weight * score / best;
                }
            }
        }
        // A tool that shares no word with the query and is no closer to it than to its opposite is left
        // out, as the word ranking leaves out a tool with nothing in common with the query.
        let mut hits: Vec<(usize, f32)> = scores
            .into_iter()
            .enumerate()
            .filter(|(_, score)| *score > 0.0)
            .collect();
        let best_first =
            |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if hits.len() > k {
            hits.select_nth_unstable_by(k - 1, best_first);
            hits.truncate(k);
        }
        hits.sort_by(best_first);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::{EmbedError, dot, normalized};

    #[test]
    fn dot_products_count_every_number() {
        let a: Vec<f32> = (1..=11).map(|x| x as f32).collect();
        assert_eq!(dot(&a, &[1.0; 11]), 66.0);
    }

    #[test]
    fn vectors_are_normalized_and_checked() {
        assert_eq!(normalized(&[3.0, 4.0], 2), Ok(vec![0.6, 0.8]));
        assert_eq!(normalized(&[0.0, 0.0], 2), Ok(vec![0.0, 0.0]));
        assert_eq!(
            normalized(&[1.0], 2),
            Err(EmbedError::Length {
                expected: 2,
                returned: 1
            })
        );
        assert_eq!(normalized(&[f32::NAN, 1.0], 2), Err(EmbedError::NotFinite));
        assert_eq!(normalized(&[], 0), Err(EmbedError::NotFinite));
    }
}
