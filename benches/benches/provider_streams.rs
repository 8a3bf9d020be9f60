//! Issue 50: each provider client reads its stream in time linear in what arrives. One reply per
//! client, from a server on 127.0.0.1, whose single text delta (and, apart, whose single tool-call
//! argument delta) is 512 KB, 4 MB or 32 MB, sent as one body the socket delivers in pieces of a few
//! kilobytes: 8× the size should take at most 10× the time (the SSE parser once re-read the whole
//! pending line per piece: a 4 MB delta took 20 s). Beside each, its floor (`<kind>_floor`): the same
//! body from the same server read with reqwest into one buffer, the delta taken out of it as a `String`
//! without parsing (`floor_once`); `cargo run --release --bin table` prints each as a multiple of it.

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use yiem_benches::provider_streams::{
    PROVIDERS, SIZES, delta_range, floor_once, model, reply, serve, stream_once, text,
};

fn provider_streams(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let http = reqwest::Client::new();
    for provider in PROVIDERS {
        let mut group = c.benchmark_group(format!("provider_stream/{provider}"));
        group.sample_size(10);
        group.warm_up_time(Duration::from_secs(1));
        group.measurement_time(Duration::from_secs(3));
        for (kind, call) in [("text", false), ("arguments", true)] {
            for (label, bytes) in SIZES {
                let text = text(bytes);
                let response = reply(provider, &text, call);
                let delta = delta_range(&response, &text);
                let root = runtime.block_on(serve(Arc::new(response)));
                let model = model(provider, &root);
                let what = format!("{provider} {kind} {label}");
                group.bench_function(BenchmarkId::new(kind, label), |b| {
                    b.to_async(&runtime)
                        .iter(|| stream_once(model.as_ref(), &what));
                });
                group.bench_function(BenchmarkId::new(format!("{kind}_floor"), label), |b| {
                    b.to_async(&runtime)
                        .iter(|| floor_once(&http, &root, delta.clone()));
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, provider_streams);
criterion_main!(benches);
