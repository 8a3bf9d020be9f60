//! One case of `benches/provider_streams.rs` run N times in a row, with what each reply costs: its wall
//! time, and the process's minor page faults and user and system CPU time per reply (from
//! `/proc/self/stat`), counted around the N replies only (two replies run before them, so the allocator
//! is in the state a criterion run leaves it in). Under `valgrind --tool=callgrind`, the difference
//! between two values of N gives the instructions per reply (`provider-stream-callgrind.sh`). The kinds
//! `text_floor` and `arguments_floor` run the floor of that reply instead (`floor_once`).
//!
//! ```text
//! cargo build --release --bin provider-stream-count
//! target/release/provider-stream-count anthropic text 32MB 20
//! ```

use std::sync::Arc;
use std::time::Instant;

use yiem_benches::provider_streams::{
    PROVIDERS, SIZES, delta_range, floor_once, model, reply, serve, stream_once, text,
};

/// The process's minor page faults, user and system CPU time (clock ticks) so far.
fn usage() -> [u64; 3] {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command's `(…)`: state is field 3, minflt 10, utime 14, stime 15.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let field = |n: usize| fields[n - 3].parse::<u64>().unwrap();
    [field(10), field(14), field(15)]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage_text = "usage: provider-stream-count <openai|responses|anthropic|gemini> <text|arguments|text_floor|arguments_floor> <512KB|4MB|32MB> <N>";
    let [provider, kind, size, n] = &args[..] else {
        panic!("{usage_text}");
    };
    assert!(PROVIDERS.contains(&provider.as_str()), "{usage_text}");
    let call = match kind.trim_end_matches("_floor") {
        "text" => false,
        "arguments" => true,
        _ => panic!("{usage_text}"),
    };
    let floor = kind.ends_with("_floor");
    let (_, bytes) = SIZES
        .into_iter()
        .find(|(label, _)| label == size)
        .expect(usage_text);
    let n: u32 = n.parse().ok().filter(|&n| n > 0).expect(usage_text);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let text = text(bytes);
    let response = reply(provider, &text, call);
    let delta = delta_range(&response, &text);
    let root = runtime.block_on(serve(Arc::new(response)));
    let model = model(provider, &root);
    let http = reqwest::Client::new();
    let what = format!("{provider} {kind} {size}");
    let once = || async {
        if floor {
            floor_once(&http, &root, delta.clone()).await
        } else {
            stream_once(model.as_ref(), &what).await
        }
    };
    runtime.block_on(async {
        for _ in 0..2 {
            once().await;
        }
    });
    let ticks = 100.0; // USER_HZ on Linux
    let before = usage();
    let mut times = Vec::new();
    runtime.block_on(async {
        for _ in 0..n {
            let start = Instant::now();
            once().await;
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
    });
    let after = usage();
    times.sort_by(f64::total_cmp);
    let per = |i: usize| (after[i] - before[i]) as f64 / f64::from(n);
    println!(
        "{what}: median {:.2} ms, {:.0} minor faults, user {:.2} ms, system {:.2} ms per reply ({n} replies)",
        times[times.len() / 2],
        per(0),
        per(1) * 1e3 / ticks,
        per(2) * 1e3 / ticks,
    );
}
