//! The BERT encoder [`SentenceEmbedder`](super::SentenceEmbedder) runs: candle-transformers' `bert`
//! forward pass (embeddings, six or so layers of attention and feed-forward, each closed by a residual
//! and a layer norm), written again over candle's operations so that its linear layers are its own.
//!
//! Why not candle-transformers' `BertModel`: a query's time is its linear layers' products (see
//! BENCHMARKS.md, "The sentence embedder"), which it runs through candle's matmul, made for large
//! products. Here every linear layer is a `Dense` whose weights are packed at load for `yiem_dense` (a
//! product that reads them once for all of a query's tokens), as f16 or f32, or, quantized at load,
//! candle's `Q8_0` blocks (groups of 32 weights as int8 with one scale each, multiplied by AVX2 /
//! VNNI integer kernels). One forward pass serves all three. Query, key and value are one product of a
//! 3 × wider layer, so a layer is four products.

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{D, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, VarBuilder};
use candle_transformers::models::bert::{Config, HiddenAct};

use yiem_dense::{Isa, Packed, Precision};

/// How a [`SentenceEmbedder`](super::SentenceEmbedder)'s linear layers (attention and feed-forward: nearly all of the model's
/// arithmetic and memory) keep their weights, set with
/// [`SentenceEmbedder::weights`](super::SentenceEmbedder::weights).
///
/// A short query's time is mostly the reading of those weights (about 42 MB in f32 for
/// all-MiniLM-L6-v2, once per query), so fewer bytes make a faster query. Measured on all-MiniLM-L6-v2
/// (BENCHMARKS.md, "The sentence embedder"), the 13 cosine similarities sentence-transformers publishes
/// (to four decimals) are met within 0.00005 with f32, 0.00011 with f16 and 0.009 with int8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Weights {
    /// The model's own f32 numbers: vectors as sentence-transformers computes them on the CPU.
    F32,
    /// Each weight rounded to the nearest f16 when the model is loaded (the default): half the memory
    /// and about 70 % of f32's time for a query. Products and sums are still f32. A layer with a weight
    /// beyond f16's range (±65,504) keeps its f32 numbers.
    #[default]
    F16,
    /// candle's `Q8_0`: 32 weights as int8 with one scale, and each layer's input quantized per row the
    /// same way before an integer product (AVX-512 VNNI or AVX-VNNI kernels where the CPU has them,
    /// slower ones elsewhere). Its vectors move the most, and it is no faster than f16. candle runs these
    /// products on a pool of spinning threads, one per core: where the cores are busy with other
    /// work, one thread (`CANDLE_NUM_THREADS=1` in the environment) is faster.
    Int8,
}

/// A linear layer, `x · Wᵀ + b`, with f16, f32 or int8 weights.
enum Dense {
    /// f16 or f32 weights, packed for yiem's own product (`yiem_dense`).
    Packed(Packed),
    /// candle's `Q8_0` weights.
    Int8 {
        weight: QMatMul,
        bias: Tensor,
        /// Zeros appended to each input row: candle's fast int8 kernels take inputs whose size is a
        /// multiple of 256, so a 384-wide input is read as 512 wide against zero weights.
        pad: usize,
    },
}

impl Dense {
    /// The layer from its `(out, in)` weight and `(out)` bias, its weights kept as asked.
    fn new(weight: Tensor, bias: Tensor, weights: Weights) -> Result<Self> {
        let (outputs, inputs) = weight.dims2()?;
        if weights == Weights::Int8 {
            let pad = inputs.next_multiple_of(256) - inputs;
            let padded = weight.pad_with_zeros(1, 0, pad)?;
            let weight = QMatMul::from_qtensor(QTensor::quantize(&padded, GgmlDType::Q8_0)?)?;
            return Ok(Dense::Int8 { weight, bias, pad });
        }
        let weight = weight.flatten_all()?.to_vec1::<f32>()?;
        let bias = bias.to_vec1::<f32>()?;
        // A layer with a weight f16 cannot hold keeps its f32 numbers rather than infinities.
        let precision = if weights == Weights::F16 && Precision::F16.holds(&weight) {
            Precision::F16
        } else {
            Precision::F32
        };
        // `Isa::detect` finds only instructions this machine runs.
        Packed::with(&weight, &bias, outputs, inputs, precision, Isa::detect())
            .map(Dense::Packed)
            .ok_or_else(|| candle_core::Error::Msg("this CPU runs no product".into()))
    }

    fn load(vb: VarBuilder, inputs: usize, outputs: usize, weights: Weights) -> Result<Self> {
        Dense::new(
            vb.get((outputs, inputs), "weight")?,
            vb.get(outputs, "bias")?,
            weights,
        )
    }

    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        match self {
            Dense::Packed(packed) => {
                let mut dims = xs.dims().to_vec();
                let inputs = dims.pop().unwrap_or(0);
                if inputs != packed.inputs() {
                    candle_core::bail!("a layer of {} inputs given {inputs}", packed.inputs());
                }
                let rows = dims.iter().product();
                // The input's numbers read where candle keeps them, not copied out.
                let xs = xs.contiguous()?;
                let (storage, layout) = xs.storage_and_layout();
                let candle_core::Storage::Cpu(storage) = &*storage else {
                    candle_core::bail!("the sentence embedder runs on the CPU");
                };
                let Some((start, end)) = layout.contiguous_offsets() else {
                    candle_core::bail!("a layer's input is not contiguous");
                };
                let out = packed.forward(&storage.as_slice::<f32>()?[start..end], rows);
                dims.push(packed.outputs());
                Tensor::from_vec(out, dims, xs.device())
            }
            Dense::Int8 { weight, bias, pad } => {
                let xs = if *pad > 0 {
                    &xs.pad_with_zeros(D::Minus1, 0, *pad)?
                } else {
                    xs
                };
                weight.forward(xs)?.broadcast_add(bias)
            }
        }
    }
}

struct Layer {
    /// Query, key and value in one: `(3 × hidden, hidden)`.
    qkv: Dense,
    attention_out: Dense,
    attention_norm: LayerNorm,
    intermediate: Dense,
    output: Dense,
    output_norm: LayerNorm,
}

/// A BERT encoder (no pooler): token ids in, one vector per token out.
pub(super) struct Bert {
    words: Embedding,
    positions: Embedding,
    /// The first token type's vector: every token of a sentence is of type 0.
    token_type: Tensor,
    embeddings_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    act: HiddenAct,
}

impl Bert {
    /// The encoder's weights from a BERT safetensors file (with or without the `bert.` prefix), those of
    /// its linear layers kept as `weights` says.
    pub(super) fn load(vb: VarBuilder, config: &Config, weights: Weights) -> Result<Self> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let hidden = config.hidden_size;
        if config.num_attention_heads == 0 || !hidden.is_multiple_of(config.num_attention_heads) {
            candle_core::bail!(
                "hidden_size {hidden} is not a multiple of num_attention_heads {}",
                config.num_attention_heads
            );
        }
        let norm = |vb: VarBuilder| candle_nn::layer_norm(hidden, config.layer_norm_eps, vb);
        let embeddings = vb.pp("embeddings");
        let words =
            candle_nn::embedding(config.vocab_size, hidden, embeddings.pp("word_embeddings"))?;
        let positions = candle_nn::embedding(
            config.max_position_embeddings,
            hidden,
            embeddings.pp("position_embeddings"),
        )?;
        let token_type = embeddings
            .get(
                (config.type_vocab_size, hidden),
                "token_type_embeddings.weight",
            )?
            .get(0)?;
        let embeddings_norm = norm(embeddings.pp("LayerNorm"))?;
        let layers = (0..config.num_hidden_layers)
            .map(|at| {
                let vb = vb.pp(format!("encoder.layer.{at}"));
                let attention = vb.pp("attention");
                let parts = ["query", "key", "value"].map(|part| attention.pp("self").pp(part));
                let qkv = parts
                    .iter()
                    .map(|vb| vb.get((hidden, hidden), "weight"))
                    .collect::<Result<Vec<_>>>()?;
                let biases = parts
                    .iter()
                    .map(|vb| vb.get(hidden, "bias"))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Layer {
                    qkv: Dense::new(Tensor::cat(&qkv, 0)?, Tensor::cat(&biases, 0)?, weights)?,
                    attention_out: Dense::load(
                        attention.pp("output.dense"),
                        hidden,
                        hidden,
                        weights,
                    )?,
                    attention_norm: norm(attention.pp("output.LayerNorm"))?,
                    intermediate: Dense::load(
                        vb.pp("intermediate.dense"),
                        hidden,
                        config.intermediate_size,
                        weights,
                    )?,
                    output: Dense::load(
                        vb.pp("output.dense"),
                        config.intermediate_size,
                        hidden,
                        weights,
                    )?,
                    output_norm: norm(vb.pp("output.LayerNorm"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Bert {
            words,
            positions,
            token_type,
            embeddings_norm,
            layers,
            heads: config.num_attention_heads,
            act: config.hidden_act,
        })
    }

    /// `(batch, tokens)` ids to `(batch, tokens, hidden)` vectors; `mask` is `(batch, tokens)` f32, 1 for
    /// a text's tokens and 0 for padding (`None`: no padding).
    pub(super) fn forward(&self, ids: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
        let (batch, tokens) = ids.dims2()?;
        let positions = Tensor::arange(0u32, tokens as u32, ids.device())?;
        let xs = self
            .words
            .forward(ids)?
            .broadcast_add(&self.positions.forward(&positions)?)?
            .broadcast_add(&self.token_type)?;
        let mut xs = self.embeddings_norm.forward(&xs)?;
        // Added to the attention scores: 0 for a token, the lowest f32 for padding (as Hugging Face's
        // BERT), shaped (batch, 1, 1, tokens) to reach every head and query.
        let mask = match mask {
            Some(mask) => Some(
                ((mask.ones_like()? - mask)? * f64::from(f32::MIN))?
                    .reshape((batch, 1, 1, tokens))?,
            ),
            None => None,
        };
        for layer in &self.layers {
            xs = self.layer(layer, &xs, mask.as_ref())?;
        }
        Ok(xs)
    }

    fn layer(&self, layer: &Layer, xs: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
        let (batch, tokens, hidden) = xs.dims3()?;
        let size = hidden / self.heads;
        // (batch, tokens, 3, heads, size) → three of (batch, heads, tokens, size).
        let qkv = layer
            .qkv
            .forward(xs)?
            .reshape((batch, tokens, 3, self.heads, size))?;
        let part = |at: usize| {
            qkv.narrow(2, at, 1)?
                .squeeze(2)?
                .transpose(1, 2)?
                .contiguous()
        };
        let (query, key, value) = (part(0)?, part(1)?, part(2)?);
        let mut scores = (query.matmul(&key.t()?)? * (1.0 / (size as f64).sqrt()))?;
        if let Some(mask) = mask {
            scores = scores.broadcast_add(mask)?;
        }
        let probabilities = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = probabilities
            .matmul(&value)?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((batch, tokens, hidden))?;
        let attended = layer
            .attention_norm
            .forward(&(layer.attention_out.forward(&context)? + xs)?)?;
        let intermediate = layer.intermediate.forward(&attended)?;
        let intermediate = match self.act {
            HiddenAct::Gelu => gelu_erf(&intermediate)?,
            HiddenAct::GeluApproximate => intermediate.gelu()?,
            HiddenAct::Relu => intermediate.relu()?,
        };
        layer
            .output_norm
            .forward(&(layer.output.forward(&intermediate)? + attended)?)
    }
}

/// GELU as BERT's `gelu` is, `x · (1 + erf(x / √2)) / 2`, over a tensor's numbers. candle's
/// `gelu_erf` calls libm's `erff` (with its branches and `expf`) once per number, about a tenth of a
/// query's embedding; this erf has no branch, so the compiler runs it on several numbers at once.
fn gelu_erf(xs: &Tensor) -> Result<Tensor> {
    let mut values = xs.flatten_all()?.to_vec1::<f32>()?;
    for x in &mut values {
        *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
    }
    Tensor::from_vec(values, xs.shape(), xs.device())
}

/// The error function, as a ratio of two polynomials over [-4, 4] (erf is ±1 to f32's precision
/// beyond): Eigen's and XLA's `erf` for f32, within 1e-6 of erf.
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = [
        -2.726_142_3e-10,
        2.770_681_4e-8,
        -2.101_024_e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_6e-3,
        -1.609_603_3e-2,
    ]
    .into_iter()
    .fold(0.0, |sum, alpha| sum * x2 + alpha);
    let q = [
        -1.456_607_2e-5,
        -2.133_740_6e-4,
        -1.682_827e-3,
        -7.373_329e-3,
        -1.426_474e-2,
    ]
    .into_iter()
    .fold(0.0, |sum, beta| sum * x2 + beta);
    x * p / q
}

#[cfg(test)]
mod tests {
    #[test]
    fn erf_is_within_a_millionth() {
        let worst = (-80_000..=80_000)
            .map(|at| f64::from(at) / 10_000.0)
            .map(|x| (f64::from(super::erf(x as f32)) - candle_core::cpu::erf::erf_f64(x)).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-6, "erf is off by {worst}");
    }
}
