//! The durable scenario of `yiem_restate_tests::durable` as a Restate service, for the tests to start, kill and
//! restart. Listens on `YIEM_RESTATE_LISTEN`. With `YIEM_RESTATE_STOP_AT=<step name>` it stops at that
//! step boundary: once the step is durable it creates the file `YIEM_RESTATE_MARKER` and blocks, so the
//! test can kill it there. With `YIEM_RESTATE_SPANS=<file>` it writes its spans there as each ends.

use std::path::PathBuf;

use tracing_subscriber::Layer;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use yiem_core::agent::AgentSettings;
use yiem_restate::DurableAgent;
use yiem_restate::restate_sdk::prelude::*;
use yiem_restate_tests::{durable, spans};

#[tokio::main]
async fn main() {
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(LevelFilter::INFO);
    let (provider, spans) = match std::env::var_os(spans::SPANS_ENV) {
        Some(path) => {
            let (provider, layer) = spans::layer(&PathBuf::from(path));
            (Some(provider), Some(layer))
        }
        None => (None, None),
    };
    tracing_subscriber::registry().with(log).with(spans).init();
    // Spans are written as they end; the provider lives as long as the process.
    let _provider = provider;
    let listen = std::env::var("YIEM_RESTATE_LISTEN").expect("YIEM_RESTATE_LISTEN is set");
    let stop_at = std::env::var("YIEM_RESTATE_STOP_AT").ok();
    let marker = std::env::var_os("YIEM_RESTATE_MARKER").map(PathBuf::from);
    let events = std::env::var_os(durable::EVENTS_ENV).map(PathBuf::from);
    let agent = DurableAgent::builder()
        .config(durable::config())
        .model(|_conversation| durable::model())
        .on_event(move |event| {
            if let Some(events) = &events {
                durable::append_to(events, &durable::describe(event));
            }
        })
        .on_step(move |step| {
            if stop_at.as_deref() == Some(step.name.as_str()) {
                let marker = marker
                    .as_ref()
                    .expect("YIEM_RESTATE_MARKER is set with STOP_AT");
                std::fs::write(marker, step.name.as_bytes()).expect("the marker is written");
                // Blocks this step until the test kills the process.
                loop {
                    std::thread::park();
                }
            }
        })
        .build();
    HttpServer::new(agent.endpoint())
        .listen_and_serve(listen.parse().expect("YIEM_RESTATE_LISTEN is an address"))
        .await;
}
