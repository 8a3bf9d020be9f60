//! Generates the 1000 `#[tool]` functions of the `register` benchmark (item 6 of the benchmark issue).

use std::fmt::Write as _;
use std::path::PathBuf;

const TOOLS: usize = 1000;

fn main() {
    let mut code = String::new();
    for i in 1..=TOOLS {
        writeln!(
            code,
            "/// Add two integers, number {i}.\n\
             #[::yiem_core::tool(parallel)]\n\
             pub async fn scale_{i:04}(args: ScaleArgs) -> String {{\n    \
                 (args.a + args.b + {i}).to_string()\n\
             }}\n"
        )
        .unwrap();
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("tools_1000.rs"), code).expect("OUT_DIR is writable");
    println!("cargo::rerun-if-changed=build.rs");
}
