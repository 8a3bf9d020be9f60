//! Issue 50: each provider client reads its stream in time linear in what arrives. One reply per
//! client, from a server on 127.0.0.1, whose single text delta (and, apart, whose single tool-call
//! argument delta) is 512 KB, 4 MB or 32 MB, sent as one body the socket delivers in pieces of a few
//! kilobytes: 8× the size should take at most 10× the time (the SSE parser once re-read the whole
//! pending line per piece: a 4 MB delta took 20 s).

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use yiem_core::exec::CancellationToken;
use yiem_core::llm::{
    AnthropicConfig, AnthropicModel, GeminiConfig, GeminiModel, Model, ModelEvent, ModelRequest,
    OpenAiConfig, OpenAiModel, OpenAiResponsesConfig, OpenAiResponsesModel,
};
use yiem_core::message::UserMessage;

const PROVIDERS: [&str; 4] = ["openai", "responses", "anthropic", "gemini"];

fn data(payload: Value) -> String {
    format!("data: {payload}\n\n")
}

fn named(event: &str, payload: Value) -> String {
    format!("event: {event}\ndata: {payload}\n\n")
}

/// A reply of `provider` with one text delta of `text`, or one argument delta of `{"city": text}`.
fn reply(provider: &str, text: &str, call: bool) -> String {
    let arguments = json!({ "city": text }).to_string();
    let events = match (provider, call) {
        ("openai", false) => vec![
            data(
                json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}),
            ),
            data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
            "data: [DONE]\n\n".into(),
        ],
        ("openai", true) => vec![
            data(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1",
                "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}, "finish_reason": null}]}),
            ),
            data(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
                "function": {"arguments": arguments}}]}, "finish_reason": null}]}),
            ),
            data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
            "data: [DONE]\n\n".into(),
        ],
        ("responses", false) => vec![
            named(
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "message", "id": "m1", "role": "assistant", "content": []}}),
            ),
            named(
                "response.output_text.delta",
                json!({"type": "response.output_text.delta", "item_id": "m1",
                "output_index": 0, "content_index": 0, "delta": text}),
            ),
            named(
                "response.completed",
                json!({"type": "response.completed", "response": {"id": "r1",
                "status": "completed", "output": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
            ),
        ],
        ("responses", true) => vec![
            named(
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "function_call", "id": "f1", "call_id": "c1", "name": "get_weather", "arguments": ""}}),
            ),
            named(
                "response.function_call_arguments.delta",
                json!({"type": "response.function_call_arguments.delta",
                "item_id": "f1", "output_index": 0, "delta": arguments}),
            ),
            named(
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"type": "function_call", "id": "f1", "call_id": "c1", "name": "get_weather", "arguments": arguments}}),
            ),
            named(
                "response.completed",
                json!({"type": "response.completed", "response": {"id": "r1",
                "status": "completed", "output": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
            ),
        ],
        ("anthropic", call) => {
            let (block, delta, stop) = if call {
                (
                    json!({"type": "tool_use", "id": "c1", "name": "get_weather", "input": {}}),
                    json!({"type": "input_json_delta", "partial_json": arguments}),
                    "tool_use",
                )
            } else {
                (
                    json!({"type": "text", "text": ""}),
                    json!({"type": "text_delta", "text": text}),
                    "end_turn",
                )
            };
            vec![
                named(
                    "message_start",
                    json!({"type": "message_start", "message": {"id": "m1", "type": "message",
                    "role": "assistant", "content": [], "model": "claude", "usage": {"input_tokens": 1, "output_tokens": 1}}}),
                ),
                named(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0, "content_block": block}),
                ),
                named(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": delta}),
                ),
                named(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                ),
                named(
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": stop},
                    "usage": {"output_tokens": 1}}),
                ),
                named("message_stop", json!({"type": "message_stop"})),
            ]
        }
        ("gemini", call) => {
            let part = if call {
                json!({"functionCall": {"name": "get_weather", "args": {"city": text}}})
            } else {
                json!({"text": text})
            };
            vec![data(
                json!({"candidates": [{"content": {"role": "model", "parts": [part]},
                "finishReason": "STOP", "index": 0}]}),
            )]
        }
        _ => unreachable!(),
    };
    let body = events.concat();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A server on 127.0.0.1 that answers every request with `response`; its address.
async fn serve(response: Arc<String>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let response = Arc::clone(&response);
            tokio::spawn(async move {
                // The request: its head, then as many bytes as it says.
                let mut read = Vec::new();
                let mut piece = [0u8; 8192];
                loop {
                    let Ok(n) = socket.read(&mut piece).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    read.extend_from_slice(&piece[..n]);
                    if let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&read[..end]).to_ascii_lowercase();
                        let length: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|n| n.trim().parse().ok())
                            .unwrap_or(0);
                        if read.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    address
}

fn model(provider: &str, root: &str) -> Arc<dyn Model> {
    match provider {
        "openai" => Arc::new(
            OpenAiModel::new(OpenAiConfig::new(format!("{root}/v1"), "gpt").api_key("sk"))
                .unwrap(),
        ),
        "responses" => Arc::new(
            OpenAiResponsesModel::new(
                OpenAiResponsesConfig::new("gpt")
                    .base_url(format!("{root}/v1"))
                    .api_key("sk"),
            )
            .unwrap(),
        ),
        "anthropic" => Arc::new(
            AnthropicModel::new(AnthropicConfig::new("sk", "claude").base_url(root)).unwrap(),
        ),
        "gemini" => Arc::new(
            GeminiModel::new(
                GeminiConfig::new("key", "gemini").base_url(format!("{root}/v1beta")),
            )
            .unwrap(),
        ),
        _ => unreachable!(),
    }
}

fn provider_streams(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for provider in PROVIDERS {
        let mut group = c.benchmark_group(format!("provider_stream/{provider}"));
        group.sample_size(10);
        group.warm_up_time(Duration::from_secs(1));
        group.measurement_time(Duration::from_secs(3));
        for (kind, call) in [("text", false), ("arguments", true)] {
            for (label, bytes) in [("512KB", 512 << 10), ("4MB", 4 << 20), ("32MB", 32 << 20)] {
                let text = "abcdefgh".repeat(bytes / 8);
                let root = runtime.block_on(serve(Arc::new(reply(provider, &text, call))));
                let model = model(provider, &root);
                group.bench_function(BenchmarkId::new(kind, label), |b| {
                    b.to_async(&runtime).iter(|| async {
                        let request = ModelRequest::new("", vec![UserMessage::text("hi").into()]);
                        let events: Vec<ModelEvent> = model
                            .stream(request, CancellationToken::new())
                            .collect()
                            .await;
                        assert!(
                            matches!(events.last(), Some(ModelEvent::Done { .. })),
                            "{provider} {kind} {label}: {:?}",
                            events.last()
                        );
                        events.len()
                    });
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, provider_streams);
criterion_main!(benches);
