//! A linear layer's product, `x · Wᵀ + b`, with its weights packed once, at load: the products of
//! yiem's sentence embedder (`yiem_core::catalog::SentenceEmbedder`), and tool search's cosines of a
//! query with every tool (`HybridRanker`: the tools' vectors are a layer whose outputs are the tools).
//!
//! ```
//! // Two outputs of three inputs: W is (outputs, inputs), row-major.
//! let layer = yiem_dense::Packed::new(&[1.0, 0.0, 2.0, 0.0, 1.0, 0.0], &[0.5, -0.5], 2, 3);
//! assert_eq!(layer.forward(&[1.0, 2.0, 3.0], 1), vec![7.5, 1.5]);
//! ```
//!
//! A crate of its own so that test and debug builds run it optimized, as they run candle (the
//! workspace's `profile.dev.package` settings): unoptimized, a query's embedding takes seconds.
//!
//! Why not candle's matmul: a query is a dozen or so tokens, and gemm, made for large products, packs
//! the whole weight matrix again on every call and runs its kernel well below the core's speed on so
//! few rows (see BENCHMARKS.md, "The sentence embedder"). Here the weights are laid out at load as
//! panels of 16 outputs, input by input, so a product reads each panel once from memory and keeps a
//! tile of rows × 16 outputs in registers while it walks the inputs: up to 22 rows with AVX-512, 6 with
//! AVX2 and FMA, chosen when the layer is made; elsewhere the same loop in plain code. Long batches (the
//! tools' texts) are split by rows over the machine's cores, in blocks of rows that stay in cache.
//!
//! The weights can be kept as f16 ([`Precision::F16`]): a short product waits on reading its weights
//! more than on its arithmetic, and f16 halves what it reads. Each weight is rounded to the nearest f16
//! once, at load; the products and sums stay f32.

/// Outputs per panel: one AVX-512 register, two AVX2 registers.
const LANES: usize = 16;

/// How far ahead of the product the weights are fetched, in bytes: a few dozen cache lines, so that
/// memory's latency is hidden behind a tile's arithmetic (without it, a query's products wait on it
/// twice as long as they compute).
const AHEAD: usize = 2048;

/// Rows multiplied against every panel before the next rows: at 1,536 inputs, 576 KiB of them, within
/// a core's second-level cache.
const BLOCK_ROWS: usize = 96;

/// Rows at or past which a product is split over threads (a query has far fewer).
const THREADED_ROWS: usize = 256;

/// The instructions a product runs with, found once per layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// Plain Rust (vectorized as the target allows).
    Plain,
    /// AVX2 with fused multiply-add and F16C (every CPU with AVX2 and FMA has F16C).
    Avx2,
    /// AVX-512 (foundation).
    Avx512,
}

impl Isa {
    /// The best this machine runs.
    pub fn detect() -> Isa {
        Isa::ALL
            .into_iter()
            .rev()
            .find(|isa| isa.available())
            .unwrap_or(Isa::Plain)
    }

    /// Every kind, the plainest first.
    pub const ALL: [Isa; 3] = [Isa::Plain, Isa::Avx2, Isa::Avx512];

    /// Whether this machine runs it.
    pub fn available(self) -> bool {
        match self {
            Isa::Plain => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                    && std::arch::is_x86_feature_detected!("f16c")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }
}

/// How a layer keeps its weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// As given.
    F32,
    /// Each rounded to the nearest IEEE half (f16): half the memory, and half of what a product reads.
    /// Products and sums are f32. A weight beyond f16's range (±65,504) is kept as ±infinity:
    /// [`Precision::holds`] says whether a layer's weights fit.
    F16,
}

impl Precision {
    /// Whether every finite one of `weights` stays finite when kept at this precision.
    pub fn holds(self, weights: &[f32]) -> bool {
        match self {
            Precision::F32 => true,
            Precision::F16 => weights
                .iter()
                .all(|weight| !weight.is_finite() || u16::pack(*weight).value().is_finite()),
        }
    }
}

/// `x · Wᵀ + b` for a `(outputs, inputs)` weight matrix, packed.
pub struct Packed {
    inputs: usize,
    outputs: usize,
    /// Panel `p` holds, for each input `i` in turn, the weights of outputs `16p .. 16p + 16` for `i`
    /// (zeros past `outputs`).
    panels: Panels,
    /// The bias, zeros past `outputs` to a whole panel.
    bias: Vec<f32>,
    isa: Isa,
}

enum Panels {
    F32(Vec<f32>),
    /// IEEE half bits.
    F16(Vec<u16>),
}

impl Packed {
    /// Packs `weight` (`outputs` rows of `inputs` numbers, row-major) and `bias` (`outputs`) as f32,
    /// for the best instructions this machine runs.
    ///
    /// # Panics
    /// If `weight` is not `outputs × inputs` long or `bias` not `outputs`.
    pub fn new(weight: &[f32], bias: &[f32], outputs: usize, inputs: usize) -> Self {
        Packed::with(weight, bias, outputs, inputs, Precision::F32, Isa::detect())
            .expect("Isa::detect finds only instructions this machine runs")
    }

    /// The same with the weights kept as `precision` and the instructions given, `None` if this
    /// machine does not run them.
    ///
    /// # Panics
    /// As [`Packed::new`].
    pub fn with(
        weight: &[f32],
        bias: &[f32],
        outputs: usize,
        inputs: usize,
        precision: Precision,
        isa: Isa,
    ) -> Option<Self> {
        if !isa.available() {
            return None;
        }
        assert_eq!(weight.len(), outputs * inputs, "weight is outputs × inputs");
        assert_eq!(bias.len(), outputs, "one bias per output");
        let mut padded = bias.to_vec();
        padded.resize(outputs.div_ceil(LANES) * LANES, 0.0);
        Some(Packed {
            inputs,
            outputs,
            panels: match precision {
                Precision::F32 => Panels::F32(pack(weight, outputs, inputs)),
                Precision::F16 => Panels::F16(pack(weight, outputs, inputs)),
            },
            bias: padded,
            isa,
        })
    }

    pub fn inputs(&self) -> usize {
        self.inputs
    }

    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// The instructions it runs with.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// How it keeps its weights.
    pub fn precision(&self) -> Precision {
        match self.panels {
            Panels::F32(_) => Precision::F32,
            Panels::F16(_) => Precision::F16,
        }
    }

    /// `rows` rows of `inputs` numbers (row-major) to `rows` rows of `outputs` numbers.
    ///
    /// # Panics
    /// If `xs` is not `rows × inputs` long.
    pub fn forward(&self, xs: &[f32], rows: usize) -> Vec<f32> {
        assert_eq!(xs.len(), rows * self.inputs, "xs is rows × inputs");
        let mut out = vec![0.0; rows * self.outputs];
        // A layer of no outputs has nothing to write, and one of no inputs is its bias.
        if out.is_empty() {
            return out;
        }
        if self.inputs == 0 {
            for row in out.chunks_exact_mut(self.outputs) {
                row.copy_from_slice(&self.bias[..self.outputs]);
            }
            return out;
        }
        let threads = if rows >= THREADED_ROWS {
            std::thread::available_parallelism().map_or(1, usize::from)
        } else {
            1
        };
        if threads <= 1 {
            self.rows(xs, &mut out);
            return out;
        }
        let per_thread = rows.div_ceil(threads);
        std::thread::scope(|scope| {
            for (xs, out) in xs
                .chunks(per_thread * self.inputs)
                .zip(out.chunks_mut(per_thread * self.outputs))
            {
                scope.spawn(move || self.rows(xs, out));
            }
        });
        out
    }

    /// The product of whole rows into `out`, on this thread (`inputs` and `outputs` are not 0).
    fn rows(&self, xs: &[f32], out: &mut [f32]) {
        // A long input in blocks of rows that stay in the core's cache while every panel passes.
        for (xs, out) in xs
            .chunks(BLOCK_ROWS * self.inputs)
            .zip(out.chunks_mut(BLOCK_ROWS * self.outputs))
        {
            match &self.panels {
                Panels::F32(panels) => self.block(panels, xs, out),
                Panels::F16(panels) => self.block(panels, xs, out),
            }
        }
    }

    fn block<W: Weight>(&self, panels: &[W], xs: &[f32], out: &mut [f32]) {
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `Packed` holds `Isa::Avx512` only where the CPU has AVX-512
            // (`Isa::detect`, `with`).
            Isa::Avx512 => unsafe { avx512(self, panels, xs, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, for AVX2, FMA and F16C.
            Isa::Avx2 => unsafe { avx2(self, panels, xs, out) },
            _ => plain(self, panels, xs, out),
        }
    }
}

/// `weight` (`outputs × inputs`, row-major) as panels of 16 outputs, input by input.
fn pack<W: Weight>(weight: &[f32], outputs: usize, inputs: usize) -> Vec<W> {
    let mut panels = vec![W::pack(0.0); outputs.div_ceil(LANES) * inputs * LANES];
    for (output, row) in weight.chunks_exact(inputs.max(1)).enumerate() {
        let panel = &mut panels[output / LANES * inputs * LANES..][..inputs * LANES];
        for (input, &value) in row.iter().enumerate() {
            panel[input * LANES + output % LANES] = W::pack(value);
        }
    }
    panels
}

/// A weight as packed: f32, or f16's bits.
trait Weight: Copy + Send + Sync {
    fn pack(value: f32) -> Self;
    fn value(self) -> f32;
    /// 16 weights from `at` on.
    ///
    /// # Safety
    /// The CPU has AVX-512, and 16 weights are there to read.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load16(at: *const Self) -> std::arch::x86_64::__m512;
    /// 8 weights from `at` on.
    ///
    /// # Safety
    /// The CPU has AVX2 and F16C, and 8 weights are there to read.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load8(at: *const Self) -> std::arch::x86_64::__m256;
}

impl Weight for f32 {
    fn pack(value: f32) -> f32 {
        value
    }

    fn value(self) -> f32 {
        self
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load16(at: *const f32) -> std::arch::x86_64::__m512 {
        // SAFETY: the caller's.
        unsafe { std::arch::x86_64::_mm512_loadu_ps(at) }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2,f16c")]
    unsafe fn load8(at: *const f32) -> std::arch::x86_64::__m256 {
        // SAFETY: the caller's.
        unsafe { std::arch::x86_64::_mm256_loadu_ps(at) }
    }
}

impl Weight for u16 {
    fn pack(value: f32) -> u16 {
        half::f16::from_f32(value).to_bits()
    }

    fn value(self) -> f32 {
        half::f16::from_bits(self).to_f32()
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load16(at: *const u16) -> std::arch::x86_64::__m512 {
        use std::arch::x86_64::{_mm256_loadu_si256, _mm512_cvtph_ps};
        // SAFETY: the caller's (16 halves are 256 bits).
        unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(at.cast())) }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2,f16c")]
    unsafe fn load8(at: *const u16) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::{_mm_loadu_si128, _mm256_cvtph_ps};
        // SAFETY: the caller's (8 halves are 128 bits).
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(at.cast())) }
    }
}

/// Panel by panel, each read once from memory: the rows in as few tiles as the registers allow, of
/// nearly equal height, so that one pass over a panel serves a short input's every row.
macro_rules! panels {
    ($packed:expr, $panels:expr, $xs:expr, $out:expr, $tile:ident, [$($height:literal),*]) => {{
        let (packed, xs, out): (&Packed, &[f32], &mut [f32]) = ($packed, $xs, $out);
        let rows = out.len() / packed.outputs;
        let tallest = *[$($height),*].last().unwrap();
        let tiles = rows.div_ceil(tallest);
        for (at, panel) in $panels.chunks_exact(packed.inputs * LANES).enumerate() {
            let tile = Tile {
                panel,
                bias: packed.bias[at * LANES..][..LANES].try_into().unwrap(),
                inputs: packed.inputs,
                outputs: packed.outputs,
                column: at * LANES,
            };
            let mut row = 0;
            for left in (1..=tiles).rev() {
                let height = (rows - row).div_ceil(left);
                match height {
                    $($height => $tile::<$height, _>(&tile, xs, out, row),)*
                    _ => unreachable!("a tile is 1 to {tallest} rows"),
                }
                row += height;
            }
        }
    }};
}

/// With 32 registers, tiles of up to 22 rows: a query's tokens in one pass. (At 23 and 24 rows the
/// compiler's code for a tile runs at a third of its speed, measured with the example `tiles`.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn avx512<W: Weight>(packed: &Packed, panels: &[W], xs: &[f32], out: &mut [f32]) {
    panels!(
        packed,
        panels,
        xs,
        out,
        tile_avx512,
        [
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22
        ]
    );
}

/// With 16 registers, two per row: tiles of up to 6 rows.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
fn avx2<W: Weight>(packed: &Packed, panels: &[W], xs: &[f32], out: &mut [f32]) {
    panels!(packed, panels, xs, out, tile_avx2, [1, 2, 3, 4, 5, 6]);
}

fn plain<W: Weight>(packed: &Packed, panels: &[W], xs: &[f32], out: &mut [f32]) {
    panels!(packed, panels, xs, out, tile_plain, [1, 2, 3, 4]);
}

/// One panel of 16 outputs against some rows.
struct Tile<'a, W> {
    panel: &'a [W],
    bias: &'a [f32; LANES],
    inputs: usize,
    outputs: usize,
    column: usize,
}

impl<W> Tile<'_, W> {
    /// The `R` rows of `xs` from `row` on, each `inputs` long.
    #[inline(always)]
    fn rows<'x, const R: usize>(&self, xs: &'x [f32], row: usize) -> [&'x [f32]; R] {
        std::array::from_fn(|r| &xs[(row + r) * self.inputs..][..self.inputs])
    }

    /// Writes the tile's sums, row by row, as far as the layer has outputs.
    #[inline(always)]
    fn write<const R: usize>(&self, sums: &[[f32; LANES]; R], out: &mut [f32], row: usize) {
        let width = LANES.min(self.outputs - self.column);
        for (r, sums) in sums.iter().enumerate() {
            out[(row + r) * self.outputs + self.column..][..width].copy_from_slice(&sums[..width]);
        }
    }
}

/// Asks for the weights `AHEAD` bytes past `weights` to be brought into the cache.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn fetch_ahead<W>(weights: &[W]) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: a prefetch is a hint that reads nothing and cannot fault, wherever it points (safe to
    // call from Rust 1.9x on, `unsafe` before); SSE, which it needs, is in every x86-64 CPU.
    #[allow(unused_unsafe)]
    unsafe {
        _mm_prefetch::<_MM_HINT_T0>(weights.as_ptr().cast::<i8>().wrapping_add(AHEAD))
    };
}

/// `R` rows of one panel, the sums in `R` AVX-512 registers.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
fn tile_avx512<const R: usize, W: Weight>(tile: &Tile<W>, xs: &[f32], out: &mut [f32], row: usize) {
    use std::arch::x86_64::{_mm512_fmadd_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_storeu_ps};
    let x = tile.rows::<R>(xs, row);
    // SAFETY: every load and store is of 16 numbers at the start of a 16-number array.
    let mut sums = [unsafe { _mm512_loadu_ps(tile.bias.as_ptr()) }; R];
    for (input, weights) in tile.panel.chunks_exact(LANES).enumerate() {
        fetch_ahead(weights);
        // SAFETY: a panel's input has 16 weights.
        let weights = unsafe { W::load16(weights.as_ptr()) };
        for r in 0..R {
            sums[r] = _mm512_fmadd_ps(_mm512_set1_ps(x[r][input]), weights, sums[r]);
        }
    }
    let mut lanes = [[0.0; LANES]; R];
    for r in 0..R {
        unsafe { _mm512_storeu_ps(lanes[r].as_mut_ptr(), sums[r]) };
    }
    tile.write(&lanes, out, row);
}

/// `R` rows of one panel, the sums in `2R` AVX2 registers.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn tile_avx2<const R: usize, W: Weight>(tile: &Tile<W>, xs: &[f32], out: &mut [f32], row: usize) {
    use std::arch::x86_64::{_mm256_fmadd_ps, _mm256_loadu_ps, _mm256_set1_ps, _mm256_storeu_ps};
    let x = tile.rows::<R>(xs, row);
    // SAFETY: every load and store is of 8 numbers within a 16-number array.
    let bias = unsafe {
        [
            _mm256_loadu_ps(tile.bias.as_ptr()),
            _mm256_loadu_ps(tile.bias[8..].as_ptr()),
        ]
    };
    let mut sums = [bias; R];
    for (input, weights) in tile.panel.chunks_exact(LANES).enumerate() {
        fetch_ahead(weights);
        // SAFETY: a panel's input has 16 weights.
        let weights = unsafe { [W::load8(weights.as_ptr()), W::load8(weights[8..].as_ptr())] };
        for r in 0..R {
            let value = _mm256_set1_ps(x[r][input]);
            sums[r][0] = _mm256_fmadd_ps(value, weights[0], sums[r][0]);
            sums[r][1] = _mm256_fmadd_ps(value, weights[1], sums[r][1]);
        }
    }
    let mut lanes = [[0.0; LANES]; R];
    for r in 0..R {
        unsafe {
            _mm256_storeu_ps(lanes[r].as_mut_ptr(), sums[r][0]);
            _mm256_storeu_ps(lanes[r][8..].as_mut_ptr(), sums[r][1]);
        }
    }
    tile.write(&lanes, out, row);
}

/// `R` rows of one panel in plain Rust.
fn tile_plain<const R: usize, W: Weight>(tile: &Tile<W>, xs: &[f32], out: &mut [f32], row: usize) {
    let x = tile.rows::<R>(xs, row);
    let mut sums = [*tile.bias; R];
    for (input, weights) in tile.panel.chunks_exact(LANES).enumerate() {
        let weights: [f32; LANES] = std::array::from_fn(|lane| weights[lane].value());
        for r in 0..R {
            let value = x[r][input];
            for (sum, weight) in sums[r].iter_mut().zip(weights) {
                *sum += value * weight;
            }
        }
    }
    tile.write(&sums, out, row);
}

#[cfg(test)]
mod tests {
    use super::{Isa, Packed, Precision, Weight};

    /// Numbers in [-1, 1) from a seed, the same on every run.
    fn numbers(count: usize, seed: u64) -> Vec<f32> {
        let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (0..count)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    }

    #[test]
    fn f16_holds_weights_up_to_its_largest() {
        assert!(Precision::F16.holds(&[65504.0, -65519.0, 1e-9, f32::INFINITY, f32::NAN]));
        assert!(!Precision::F16.holds(&[1.0, 65520.0]));
        assert!(!Precision::F16.holds(&[-1e6]));
        assert!(Precision::F32.holds(&[f32::MAX]));
    }

    #[test]
    fn f16_keeps_the_nearest_half() {
        for (value, bits) in [
            (1.0, 0x3c00),
            (-2.0, 0xc000),
            (0.1, 0x2e66),
            (65504.0, 0x7bff),
            (1e6, 0x7c00),
            (6e-8, 0x0001),
            (1e-9, 0x0000),
        ] {
            assert_eq!(u16::pack(value), bits, "{value}");
        }
    }

    #[test]
    fn the_product_is_x_times_w_transposed_plus_b() {
        for (rows, inputs, outputs) in [
            (1, 1, 1),
            (1, 384, 384),
            (3, 7, 5),
            (7, 33, 40),
            (15, 384, 1152),
            (17, 1536, 384),
            (9, 0, 3),
            (0, 4, 4),
            (300, 20, 17),
            (200, 9, 33),
            (300, 0, 5),
            (4, 5, 0),
            (300, 3, 0),
            (0, 0, 0),
        ] {
            let weight = numbers(outputs * inputs, 1);
            let bias = numbers(outputs, 2);
            let xs = numbers(rows * inputs, 3);
            for precision in [Precision::F32, Precision::F16] {
                // The weights the product must use: f16's nearest to each, for f16.
                let kept: Vec<f32> = match precision {
                    Precision::F32 => weight.clone(),
                    Precision::F16 => weight.iter().map(|w| u16::pack(*w).value()).collect(),
                };
                for isa in Isa::ALL.into_iter().filter(|isa| isa.available()) {
                    let layer =
                        Packed::with(&weight, &bias, outputs, inputs, precision, isa).unwrap();
                    assert_eq!((layer.precision(), layer.isa()), (precision, isa));
                    let got = layer.forward(&xs, rows);
                    assert_eq!(got.len(), rows * outputs);
                    for row in 0..rows {
                        for output in 0..outputs {
                            let want = f64::from(bias[output])
                                + (0..inputs)
                                    .map(|i| {
                                        f64::from(xs[row * inputs + i])
                                            * f64::from(kept[output * inputs + i])
                                    })
                                    .sum::<f64>();
                            let have = f64::from(got[row * outputs + output]);
                            assert!(
                                (have - want).abs() <= 1e-5 * (1.0 + inputs as f64).sqrt(),
                                "{precision:?} {isa:?} {rows}×{inputs}→{outputs} at ({row}, {output}): \
                                 {have} against {want}"
                            );
                        }
                    }
                }
            }
        }
    }
}
