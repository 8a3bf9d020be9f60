//! The durable scenario of `yiem_restate_tests::durable` as a Restate service, for the tests to start, kill and
//! restart. Listens on `YIEM_RESTATE_LISTEN`. With `YIEM_RESTATE_STOP_AT=<step name>` it stops at that
//! step boundary: once the step is durable it creates the file `YIEM_RESTATE_MARKER` and blocks, so the
//! test can kill it there.

use std::path::PathBuf;

use yiem_core::AgentSettings;
use yiem_restate::DurableAgent;
use yiem_restate::restate_sdk::prelude::*;
use yiem_restate_tests::durable;

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
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
