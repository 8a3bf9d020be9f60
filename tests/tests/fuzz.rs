//! A fuzz harness over the places where outside input enters yiem: argument normalization and binding
//! (every tool signature, values and JSON strings), tool-call extraction from OpenAI-shaped messages, the
//! OpenAI SSE chunk parser, and MCP request handling over a real transport. Inputs are generated from a
//! seeded generator (random JSON, and valid samples with bytes flipped, inserted and cut), so every run is
//! repeatable; a failure prints its seed and case.
//!
//! The promise checked: no input panics or hangs, and every input is answered — a call gets exactly one
//! result, a stream ends in events, every MCP request with an id gets exactly one response.
//!
//! `cargo test` runs a short pass (a few thousand inputs per target). The full run, over a million
//! inputs in all:
//!
//! ```text
//! FUZZ_CASES=250000 cargo test --release -p yiem-tests --test fuzz
//! ```
//!
//! (`FUZZ_CASES` is per target, four targets; `FUZZ_SEED` picks another seed.)

use std::collections::HashSet;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use yiem_core::__private::fuzz;
use yiem_core::llm::assistant_from_openai;
use yiem_core::{
    exec::{CancellationToken, ToolCall, ToolExecutor},
    llm::extract_tool_calls,
    store::ToolStore,
    tool,
    tool::{AgentTool, ToolContext},
};
use yiem_tests::rng::Rng;

/// Inputs per target: `FUZZ_CASES`, else a short pass.
fn cases() -> usize {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3_000)
}

fn seed() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0x5eed_1e55)
}

const KEYS: &[&str] = &[
    "text",
    "city",
    "count",
    "items",
    "kind",
    "name",
    "nested",
    "note",
    "id",
    "function",
    "arguments",
    "tool_calls",
    "type",
    "index",
    "content",
    "delta",
    "choices",
    "finish_reason",
    "",
    "a\u{0}b",
    "ünï",
    "citty",
];

const STRINGS: &[&str] = &[
    "",
    "hi",
    "Tokyo",
    "{",
    "}",
    "{\"a\":",
    "null",
    "[]",
    "\u{0}",
    "\\",
    "\"",
    "tool_calls",
    "stop",
    "length",
    "function_call",
    "𝄞",
    "a very long string that goes on",
];

/// A random JSON value of at most `depth` levels.
fn value(rng: &mut Rng, depth: usize) -> Value {
    let kinds = if depth == 0 { 6 } else { 8 };
    match rng.below(kinds) {
        0 => Value::Null,
        1 => Value::Bool(rng.chance(50)),
        2 => json!(rng.next_u64() as i64 >> rng.below(64)),
        // A NaN becomes `null`, as serde_json writes it.
        3 => json!(f64::from_bits(rng.next_u64())),
        4 => json!(rng.below(1000)),
        5 => Value::String(rng.pick(STRINGS).to_string()),
        6 => Value::Array((0..rng.below(4)).map(|_| value(rng, depth - 1)).collect()),
        _ => Value::Object(object(rng, depth - 1)),
    }
}

fn object(rng: &mut Rng, depth: usize) -> Map<String, Value> {
    (0..rng.below(5))
        .map(|_| (rng.pick(KEYS).to_string(), value(rng, depth)))
        .collect()
}

/// `text` with a few bytes flipped, inserted or cut, kept as valid UTF-8.
fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for _ in 0..=rng.below(4) {
        let at = if bytes.is_empty() {
            0
        } else {
            rng.below(bytes.len() + 1)
        };
        match rng.below(4) {
            0 if at < bytes.len() => bytes[at] = *rng.pick(b"{}[]\":,0a\\ -e.nt"),
            1 => bytes.insert(at.min(bytes.len()), *rng.pick(b"{}[]\":,0a\\ ")),
            2 => bytes.truncate(at),
            _ if at < bytes.len() => {
                bytes.remove(at);
            }
            _ => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

// ---------------------------------------------------------------------------------------------------
// Arguments: normalization and binding
// ---------------------------------------------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
enum Kind {
    Small,
    Large { size: u32 },
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Nested {
    name: String,
    count: Option<u8>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct RichArgs {
    text: String,
    #[serde(default)]
    count: i32,
    items: Option<Vec<Nested>>,
    kind: Option<Kind>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

/// Echo the text.
#[tool(parallel)]
async fn fuzz_echo(args: Nested) -> String {
    args.name
}

/// Take rich arguments.
#[tool(parallel)]
async fn fuzz_rich(args: RichArgs) -> String {
    args.text
}

/// Take nothing.
#[tool(parallel)]
fn fuzz_none() -> &'static str {
    "none"
}

fn fuzz_store() -> ToolStore {
    let store = ToolStore::new("fuzz");
    store.register(fuzz_echo_tool()).unwrap();
    store.register(fuzz_rich_tool()).unwrap();
    store.register(fuzz_none_tool()).unwrap();
    let schema_tool = AgentTool::builder("fuzz_schema")
        .description("A run-time tool with a schema.")
        .input_schema(json!({
            "type": "object",
            "properties": {"city": {"type": "string", "minLength": 1}, "count": {"type": "integer"}},
            "required": ["city"],
            "additionalProperties": false
        }))
        .parallel()
        .handler(|_ctx: ToolContext, args: Value| async move { args["city"].to_string() })
        .build()
        .unwrap();
    store.register(schema_tool).unwrap();
    store
}

/// Raw arguments: a random value, a random value's text, or a valid sample's text mutated.
fn raw_arguments(rng: &mut Rng) -> Value {
    let samples = [
        json!({"name": "n", "count": 3}),
        json!({"text": "t", "items": [{"name": "a"}], "kind": {"Large": {"size": 2}}}),
        json!({"city": "Oslo", "count": 1}),
        json!({}),
    ];
    match rng.below(4) {
        0 => value(rng, 3),
        1 => Value::Object(object(rng, 2)),
        2 => Value::String(value(rng, 3).to_string()),
        _ => {
            let sample = rng.pick(&samples).to_string();
            Value::String(mutate(rng, &sample))
        }
    }
}

#[test]
fn arguments_of_every_shape_get_exactly_one_result_per_call() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let store = fuzz_store();
    let names = [
        "fuzz_echo",
        "fuzz_rich",
        "fuzz_none",
        "fuzz_schema",
        "missing",
    ];
    let executor = ToolExecutor::new();
    let mut rng = Rng::new(seed());
    let cancel = CancellationToken::new();
    let mut done = 0;
    while done < cases() {
        // Batches of 1 to 8 calls, answered in order.
        let calls: Vec<ToolCall> = (0..1 + rng.below(8))
            .map(|i| {
                ToolCall::new(
                    format!("c{done}-{i}"),
                    *rng.pick(&names),
                    raw_arguments(&mut rng),
                )
            })
            .collect();
        let ids: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
        let shown = format!("{calls:?}");
        let batch = runtime.block_on(async {
            tokio::time::timeout(
                Duration::from_secs(30),
                executor.execute(&store, calls, &cancel),
            )
            .await
            .unwrap_or_else(|_| panic!("a batch hung: {shown}"))
        });
        let answered: Vec<&str> = batch
            .messages
            .iter()
            .map(|m| m.tool_call_id.as_str())
            .collect();
        assert_eq!(answered, ids, "{shown}");
        // An error says what went wrong (a tool may well answer an empty text on success).
        for message in batch.messages.iter().filter(|m| m.is_error()) {
            assert!(
                !message.text_content().is_empty(),
                "an empty error for {shown}"
            );
        }
        done += ids.len();
    }
    runtime.shutdown_background();
}

// ---------------------------------------------------------------------------------------------------
// Tool-call extraction
// ---------------------------------------------------------------------------------------------------

#[test]
fn tool_call_extraction_reads_any_message_without_panicking() {
    let mut rng = Rng::new(seed() ^ 0xe87a);
    let samples = [
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}]}),
        json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "function_call": {"name": "t", "arguments": "{}"},
            "tool_calls": [{"id": "x", "function": {"name": "t", "arguments": {}}}]}}]}),
        json!([{"type": "tool_calls", "tool_calls": [{"function": {"name": "a"}}]},
               {"type": "tool_call", "id": "b", "name": "b", "arguments": "{"}]),
    ];
    for _ in 0..cases() {
        let input = match rng.below(3) {
            0 => value(&mut rng, 5),
            1 => {
                let sample = rng.pick(&samples).to_string();
                serde_json::from_str(&mutate(&mut rng, &sample)).unwrap_or(Value::Null)
            }
            _ => {
                let mut sample = rng.pick(&samples).clone();
                graft(&mut rng, &mut sample);
                sample
            }
        };
        let calls = extract_tool_calls(&input);
        let reply = assistant_from_openai(&input);
        // Every call has a name field and an id (generated where the input had none).
        for call in calls.iter().chain(reply.tool_calls()) {
            assert!(!call.id.is_empty(), "{input}");
        }
        // A reply never repeats a call id.
        let ids: HashSet<&str> = reply.tool_calls().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), reply.tool_calls().count(), "{input}");
    }
}

/// Replaces one node somewhere in `value` with a random value.
fn graft(rng: &mut Rng, value: &mut Value) {
    match value {
        Value::Object(map) if !map.is_empty() && rng.chance(70) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = rng.pick(&keys).clone();
            graft(rng, map.get_mut(&key).unwrap());
        }
        Value::Array(list) if !list.is_empty() && rng.chance(70) => {
            let at = rng.below(list.len());
            graft(rng, &mut list[at]);
        }
        other => *other = self::value(rng, 2),
    }
}

// ---------------------------------------------------------------------------------------------------
// The SSE chunk parser
// ---------------------------------------------------------------------------------------------------

#[test]
fn the_openai_chunk_parser_ends_every_stream_in_events_without_panicking() {
    let mut rng = Rng::new(seed() ^ 0x55e);
    let deltas = [
        json!({"content": "Hel"}),
        json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{\"a\""}}]}),
        json!({"tool_calls": [{"index": 1, "function": {"arguments": ":1}"}}]}),
        json!({"function_call": {"name": "g", "arguments": "{}"}}),
        json!({"reasoning_content": "hm"}),
    ];
    for _ in 0..cases() {
        let stream: Vec<String> = (0..rng.below(8))
            .map(|_| {
                let chunk = json!({"choices": [{
                    "index": rng.below(2),
                    "delta": rng.pick(&deltas).clone(),
                    "finish_reason": *rng.pick(&[Value::Null, json!("stop"), json!("tool_calls"), json!("length")]),
                }]});
                match rng.below(4) {
                    0 => mutate(&mut rng, &chunk.to_string()),
                    1 => value(&mut rng, 4).to_string(),
                    _ => chunk.to_string(),
                }
            })
            .collect();
        let events = fuzz::openai_chunks(stream.iter().map(String::as_str));
        // Whatever came, the stream ends: in `Done` or an `Error`.
        assert!(
            matches!(
                events.last(),
                Some(
                    yiem_core::llm::ModelEvent::Done { .. } | yiem_core::llm::ModelEvent::Error(_)
                )
            ),
            "{stream:?} gave {events:?}"
        );
    }
}

/// Whatever came, a stream ends in `Done` or an `Error`, and every call that started has a name.
fn assert_ends(events: &[yiem_core::llm::ModelEvent], input: &dyn std::fmt::Debug) {
    assert!(
        matches!(
            events.last(),
            Some(yiem_core::llm::ModelEvent::Done { .. } | yiem_core::llm::ModelEvent::Error(_))
        ),
        "{input:?} gave {events:?}"
    );
}

#[test]
fn the_anthropic_event_parser_ends_every_stream_in_events_without_panicking() {
    let mut rng = Rng::new(seed() ^ 0xa17);
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "m", "model": "claude", "usage": {"input_tokens": 3}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "thinking", "thinking": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a\":"}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "signature_delta", "signature": "sig"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        ),
        ("ping", json!({"type": "ping"})),
        (
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    for _ in 0..cases() {
        let stream: Vec<(String, String)> = (0..rng.below(10))
            .map(|_| {
                let (name, data) = rng.pick(&events).clone();
                let data = match rng.below(4) {
                    0 => mutate(&mut rng, &data.to_string()),
                    1 => value(&mut rng, 4).to_string(),
                    _ => data.to_string(),
                };
                (name.to_owned(), data)
            })
            .collect();
        let parsed = fuzz::anthropic_events(stream.iter().map(|(n, d)| (n.as_str(), d.as_str())));
        assert_ends(&parsed, &stream);
    }
}

#[test]
fn the_gemini_response_parser_ends_every_stream_in_events_without_panicking() {
    let mut rng = Rng::new(seed() ^ 0x9e3);
    let responses = [
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}),
        json!({"candidates": [{"content": {"parts": [{"thought": true, "text": "hm", "thoughtSignature": "s"}]}}]}),
        json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}]}}]}),
        json!({"candidates": [{"finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 5}}),
        json!({"candidates": [{"finishReason": "MAX_TOKENS"}]}),
        json!({"promptFeedback": {"blockReason": "SAFETY"}}),
        json!({"error": {"code": 500, "message": "internal"}}),
    ];
    for _ in 0..cases() {
        let stream: Vec<String> = (0..rng.below(8))
            .map(|_| {
                let response = rng.pick(&responses).clone();
                match rng.below(4) {
                    0 => mutate(&mut rng, &response.to_string()),
                    1 => value(&mut rng, 4).to_string(),
                    _ => response.to_string(),
                }
            })
            .collect();
        let parsed = fuzz::gemini_responses(stream.iter().map(String::as_str));
        assert_ends(&parsed, &stream);
    }
}

#[test]
fn the_responses_event_parser_ends_every_stream_in_events_without_panicking() {
    let mut rng = Rng::new(seed() ^ 0x5e5);
    let events = [
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": "Hi"}),
        json!({"type": "response.output_item.added", "output_index": 1,
               "item": {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "{\"a\":"}),
        json!({"type": "response.function_call_arguments.done", "output_index": 1, "arguments": "{\"a\":1}"}),
        json!({"type": "response.output_item.done", "output_index": 1,
               "item": {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 2,
               "summary_index": 1, "delta": "hm"}),
        json!({"type": "response.output_item.done", "output_index": 2,
               "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "x"}]}}),
        json!({"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "delta": "no"}),
        json!({"type": "response.completed", "response": {"status": "completed",
               "usage": {"input_tokens": 3, "output_tokens": 5}, "output": [{"type": "message", "content": []}]}}),
        json!({"type": "response.incomplete", "response": {"incomplete_details": {"reason": "max_output_tokens"}}}),
        json!({"type": "response.failed", "response": {"error": {"code": "server_error", "message": "x"}}}),
        json!({"type": "error", "code": "server_error", "message": "boom"}),
        json!({"type": "response.something_new"}),
    ];
    for _ in 0..cases() {
        let stream: Vec<(String, String)> = (0..rng.below(10))
            .map(|_| {
                let event = rng.pick(&events).clone();
                let name = event["type"].as_str().unwrap_or_default().to_owned();
                let data = match rng.below(4) {
                    0 => mutate(&mut rng, &event.to_string()),
                    1 => value(&mut rng, 4).to_string(),
                    _ => event.to_string(),
                };
                (name, data)
            })
            .collect();
        let parsed = fuzz::responses_events(stream.iter().map(|(n, d)| (n.as_str(), d.as_str())));
        assert_ends(&parsed, &stream);
    }
}

// ---------------------------------------------------------------------------------------------------
// MCP request handling
// ---------------------------------------------------------------------------------------------------

#[test]
fn the_mcp_server_answers_every_request_it_can_read() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server);
        let serving = tokio::spawn(
            yiem_core::mcp::McpServer::new(fuzz_store()).serve(server_read, server_write),
        );
        let (client_read, mut client_write) = tokio::io::split(client);
        let mut lines = BufReader::new(client_read).lines();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "0"}}});
        client_write
            .write_all(format!("{init}\n").as_bytes())
            .await
            .unwrap();
        let answer: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(answer["id"], 0);
        client_write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await
            .unwrap();
        let mut rng = Rng::new(seed() ^ 0x3c9);
        let methods = [
            "tools/list",
            "tools/call",
            "ping",
            "resources/list",
            "nope",
            "",
        ];
        let names = [
            "fuzz_echo",
            "fuzz_rich",
            "fuzz_none",
            "fuzz_schema",
            "missing",
        ];
        let mut id: u64 = 0;
        let mut sent = 0;
        while sent < cases() {
            id += 1;
            let method = *rng.pick(&methods);
            let params = match (method, rng.below(3)) {
                ("tools/call", 0) => Value::Object(object(&mut rng, 2)),
                ("tools/call", _) => match raw_arguments(&mut rng) {
                    Value::Object(arguments) => {
                        json!({"name": rng.pick(&names), "arguments": arguments})
                    }
                    other => json!({"name": rng.pick(&names), "arguments": other}),
                },
                (_, 0) => value(&mut rng, 2),
                _ => json!({}),
            };
            let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            client_write
                .write_all(format!("{request}\n").as_bytes())
                .await
                .unwrap();
            sent += 1;
            // Exactly one response with this id, skipping notifications (progress, logs).
            let response = tokio::time::timeout(Duration::from_secs(30), async {
                loop {
                    let line = lines
                        .next_line()
                        .await
                        .unwrap()
                        .expect("the server hung up");
                    let message: Value = serde_json::from_str(&line).unwrap();
                    if message.get("id").is_some() {
                        return message;
                    }
                }
            })
            .await
            .unwrap_or_else(|_| panic!("no answer to {request}"));
            assert_eq!(response["id"], id, "{request} answered by {response}");
            assert!(
                response.get("result").is_some() != response.get("error").is_some(),
                "{request} answered by {response}"
            );
        }
        drop(client_write);
        drop(lines);
        let _ = tokio::time::timeout(Duration::from_secs(5), serving).await;
    });
    runtime.shutdown_background();
}
