//! A property test of each provider's stream parser, through its client and a real HTTP server on
//! 127.0.0.1: a recorded reply that calls a tool, its events reordered, dropped or cut at any byte and
//! sent in chunks of any size, drives an agent run. Whatever arrives, the run ends — no panic, no hang
//! (each run is guarded) — with a valid conversation (every call followed by its one result, in order,
//! or no call: a failed reply's calls never run and end the run) and either a finished run or a clear
//! error. A fixed number of cases per provider, with a
//! fixed seed, so CI runs the same cases every time.

mod common;

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use yiem_core::agent::{Agent, AgentSettings, RunStop};
use yiem_core::message::{AgentMessage, AssistantContent, StopReason};
use yiem_core::store::ToolStore;

use common::streams::{Limits, PROVIDERS, Provider};
use common::{Reply, Server, weather_tool};

/// Cases per provider.
const CASES: u32 = 40;

/// What is done to the recorded reply.
#[derive(Clone, Debug)]
struct Mangle {
    /// Events swapped, by index (modulo the number of events).
    swaps: Vec<(usize, usize)>,
    /// An event left out.
    dropped: Option<usize>,
    /// Where the bytes stop (a fraction of them), and whether the connection then drops without the
    /// stream's end (else it closes cleanly).
    cut: Option<(f64, bool)>,
    /// The sizes of the HTTP chunks, used in turn.
    chunks: Vec<usize>,
}

fn mangle() -> impl Strategy<Value = Mangle> {
    (
        prop::collection::vec((0usize..32, 0usize..32), 0..3),
        prop::option::of(0usize..32),
        prop::option::of((0.0f64..1.0, any::<bool>())),
        prop::collection::vec(1usize..200, 1..8),
    )
        .prop_map(|(swaps, dropped, cut, chunks)| Mangle {
            swaps,
            dropped,
            cut,
            chunks,
        })
}

/// The reply `mangle` makes of `events`, as the server sends it.
fn mangled(mut events: Vec<String>, mangle: &Mangle) -> Reply {
    let n = events.len();
    for (a, b) in &mangle.swaps {
        events.swap(a % n, b % n);
    }
    if let Some(dropped) = mangle.dropped {
        events.remove(dropped % n);
    }
    let mut bytes = events.concat().into_bytes();
    if let Some((fraction, _)) = mangle.cut {
        bytes.truncate((bytes.len() as f64 * fraction) as usize);
    }
    let mut pieces = Vec::new();
    let mut sizes = mangle.chunks.iter().cycle();
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let size = (*sizes.next().unwrap()).min(rest.len());
        // Chunks are written as text; a cut inside a character keeps its bytes whole.
        let mut end = size;
        while end < rest.len() && std::str::from_utf8(&rest[..end]).is_err() {
            end += 1;
        }
        pieces.push(String::from_utf8_lossy(&rest[..end]).into_owned());
        rest = &rest[end..];
    }
    match mangle.cut {
        Some((_, true)) => Reply::SseCut(pieces),
        Some((_, false)) => Reply::SseUntilClose(pieces),
        None => Reply::Sse(pieces),
    }
}

/// Every call of the run's assistant messages is followed by exactly its one result, in call order.
fn assert_valid_conversation(messages: &[AgentMessage]) {
    let mut open: Vec<String> = Vec::new();
    for message in messages {
        match message {
            // A failed reply ends the run, and its calls (their arguments perhaps cut short) are no
            // calls: they never run, and no provider format sends them back.
            AgentMessage::Assistant(reply) if reply.stop_reason == StopReason::Error => {
                assert!(open.is_empty(), "calls without results: {open:?}");
                assert!(
                    std::ptr::eq(message, messages.last().unwrap()),
                    "the run went on after a failed reply"
                );
            }
            AgentMessage::Assistant(reply) => {
                assert!(open.is_empty(), "calls without results: {open:?}");
                open = reply
                    .content
                    .iter()
                    .filter_map(|c| match c {
                        AssistantContent::ToolCall(call) => Some(call.id.clone()),
                        _ => None,
                    })
                    .collect();
                open.reverse();
            }
            AgentMessage::ToolResult(result) => {
                assert_eq!(
                    open.pop().as_ref(),
                    Some(&result.tool_call_id),
                    "a result out of order"
                );
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "calls without results: {open:?}");
}

async fn run_case(provider: Provider, mangle: &Mangle) -> Result<(), TestCaseError> {
    let recorded = provider.tool_call(&["{\"ci", "ty\": \"Tö", "kyo\"}"]);
    let server = Server::start(vec![
        mangled(recorded, mangle),
        Reply::Sse(provider.text("Sunny.")),
    ])
    .await;
    let tools = ToolStore::new("weather");
    tools.register(weather_tool()).unwrap();
    let agent = Agent::builder()
        .shared_model(provider.model(&server, Limits::default()))
        .tools(tools)
        .build();
    let outcome = tokio::time::timeout(Duration::from_secs(30), agent.prompt("Weather in Tokyo?"))
        .await
        .map_err(|_| TestCaseError::fail(format!("{provider:?}: the run hung")))?;
    assert_valid_conversation(&outcome.messages);
    match &outcome.stop {
        RunStop::Finished => {}
        RunStop::Error { message } => {
            prop_assert!(
                message.starts_with("POST http://127.0.0.1:"),
                "{provider:?}: {message}"
            );
            prop_assert!(message.len() < 2200, "{provider:?}: {message}");
        }
        other => prop_assert!(false, "{provider:?}: the run stopped with {other:?}"),
    }
    Ok(())
}

#[test]
fn any_cut_or_order_of_a_recorded_stream_ends_in_a_valid_conversation() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for provider in PROVIDERS {
        let config = Config {
            cases: CASES,
            failure_persistence: None,
            ..Config::default()
        };
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[provider as u8 + 1; 32]);
        let mut runner = TestRunner::new_with_rng(config, rng);
        runner
            .run(&mangle(), |mangle| {
                runtime.block_on(run_case(provider, &mangle))
            })
            .unwrap_or_else(|failure| panic!("{provider:?}: {failure}"));
    }
}
