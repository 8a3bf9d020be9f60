//! How long one product of a 384 → 1,536 layer takes, by rows and by how the weights are kept:
//! `hot`, the same layer again and again (its weights in the core's cache), and `cold`, 24 such layers
//! in turn (57 MB as f32, read from memory each time, as a query's layers are).
//!
//! `cargo run --release -p yiem-dense --example tiles`

use std::time::Instant;

use yiem_dense::{Isa, Packed, Precision};

fn main() {
    let (outputs, inputs) = (1536, 384);
    let weight: Vec<f32> = (0..outputs * inputs)
        .map(|at| (at % 97) as f32 * 0.01)
        .collect();
    let bias = vec![0.1; outputs];
    let runs = 2000;
    for precision in [Precision::F32, Precision::F16] {
        let layers: Vec<Packed> = (0..24)
            .map(|_| {
                Packed::with(&weight, &bias, outputs, inputs, precision, Isa::detect()).unwrap()
            })
            .collect();
        for rows in [1, 8, 15, 22, 23, 24, 96] {
            let xs: Vec<f32> = (0..rows * inputs)
                .map(|at| (at % 13) as f32 * 0.1)
                .collect();
            let time = |pick: &dyn Fn(usize) -> usize| {
                let start = Instant::now();
                for run in 0..runs {
                    std::hint::black_box(layers[pick(run)].forward(&xs, rows));
                }
                start.elapsed().as_secs_f64() * 1e6 / runs as f64
            };
            let cold = time(&|run| run % layers.len());
            let hot = time(&|_| 0);
            println!("{precision:?} {rows:>2} rows: hot {hot:>6.1} µs, cold {cold:>6.1} µs");
        }
    }
}
