//! Prints the medians of the last `cargo bench` run (criterion's `new/estimates.json` files) as the
//! Markdown tables of BENCHMARKS.md, each with its ratio to the floor of its group:
//!
//! - `dispatch_*`, `batch_*`: the benchmark whose name starts with `floor`;
//! - `scale`: the same function with 1 tool;
//! - `tool_list*`: none; the time per tool instead;
//! - `provider_stream/*`: one table, each client and kind at each size with its growth and its multiple
//!   of the floor of the same size (`<kind>_floor`), and the floor's own growth.
//!
//! ```text
//! cargo bench && cargo run --release --bin table
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

struct Entry {
    function: String,
    parameter: Option<String>,
    median_ns: f64,
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `new/` directory under `dir`.
fn runs(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name == "new") {
                found.push(path);
            } else {
                runs(&path, found);
            }
        }
    }
}

fn human(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

fn main() {
    let root = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
                || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
                PathBuf::from,
            );
            target.join("criterion")
        });
    let mut found = Vec::new();
    runs(&root, &mut found);
    let mut groups: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
    for dir in found {
        let benchmark = read(&dir.join("benchmark.json"));
        let estimates = read(&dir.join("estimates.json"));
        let group = benchmark["group_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        groups.entry(group).or_default().push(Entry {
            function: benchmark["function_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            parameter: benchmark["value_str"].as_str().map(str::to_owned),
            median_ns: estimates["median"]["point_estimate"]
                .as_f64()
                .unwrap_or(f64::NAN),
        });
    }
    let streams: BTreeMap<String, Vec<Entry>> = groups
        .extract_if(.., |group, _| group.starts_with("provider_stream/"))
        .collect();
    if !streams.is_empty() {
        provider_streams(&streams);
    }
    for (group, mut entries) in groups {
        entries.sort_by(|a, b| {
            let key = |e: &Entry| {
                (
                    !e.function.starts_with("floor"),
                    e.function.clone(),
                    e.parameter
                        .as_deref()
                        .and_then(|p| p.parse::<u64>().ok())
                        .unwrap_or(0),
                )
            };
            key(a).cmp(&key(b))
        });
        println!("\n#### `{group}`\n");
        let per_tool = group.starts_with("tool_list");
        if per_tool {
            println!("| benchmark | tools | median | per tool |\n|---|---:|---:|---:|");
        } else {
            let base = if group == "scale" {
                "× 1 tool"
            } else {
                "× floor"
            };
            println!("| benchmark | median | {base} |\n|---|---:|---:|");
        }
        let floor = entries
            .iter()
            .find(|e| e.function.starts_with("floor"))
            .map(|e| e.median_ns);
        for entry in &entries {
            let name = match &entry.parameter {
                Some(p) if !per_tool => format!("{}/{p}", entry.function),
                _ => entry.function.clone(),
            };
            if per_tool {
                let tools: f64 = entry
                    .parameter
                    .as_deref()
                    .or_else(|| entry.function.rsplit('/').next())
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(1.0);
                println!(
                    "| {name} | {tools} | {} | {} |",
                    human(entry.median_ns),
                    human(entry.median_ns / tools)
                );
                continue;
            }
            let base = if group == "scale" {
                entries
                    .iter()
                    .find(|e| e.function == entry.function && e.parameter.as_deref() == Some("1"))
                    .map(|e| e.median_ns)
            } else {
                floor
            };
            let ratio =
                base.map_or_else(|| "–".to_owned(), |b| format!("{:.2}", entry.median_ns / b));
            println!("| {name} | {} | {ratio} |", human(entry.median_ns));
        }
    }
}

/// The provider-stream table (issue 50): per client and kind, the median at each size, 8× growth, the
/// multiple of the floor at each size, and the floor's own growth from 4 MB to 32 MB.
fn provider_streams(groups: &BTreeMap<String, Vec<Entry>>) {
    const SIZES: [&str; 3] = ["512KB", "4MB", "32MB"];
    println!("\n#### `provider_stream`\n");
    println!(
        "| client, kind | 512 KB | 4 MB | 32 MB | 4 MB / 512 KB | 32 MB / 4 MB | × floor 512 KB | 4 MB | 32 MB | floor 4 MB / 512 KB | 32 MB / 4 MB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (group, entries) in groups {
        let client = group.trim_start_matches("provider_stream/");
        for kind in ["text", "arguments"] {
            let medians = |function: &str| {
                SIZES.map(|size| {
                    entries
                        .iter()
                        .find(|e| e.function == function && e.parameter.as_deref() == Some(size))
                        .map_or(f64::NAN, |e| e.median_ns)
                })
            };
            let (time, floor) = (medians(kind), medians(&format!("{kind}_floor")));
            let ratio = |a: f64, b: f64| format!("{:.1}×", a / b);
            println!(
                "| {client}, {kind} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                human(time[0]),
                human(time[1]),
                human(time[2]),
                ratio(time[1], time[0]),
                ratio(time[2], time[1]),
                ratio(time[0], floor[0]),
                ratio(time[1], floor[1]),
                ratio(time[2], floor[2]),
                ratio(floor[1], floor[0]),
                ratio(floor[2], floor[1]),
            );
        }
    }
}
