//! The four providers side by side, for the tests that hold every client to the same promise: a model
//! for each against a [`Server`], and recorded replies in each one's wire format (a text, a tool call
//! whose arguments stream in pieces, an error the server reports inside the stream).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use yiem_core::llm::{
    AnthropicConfig, AnthropicModel, GeminiConfig, GeminiModel, Model, OpenAiConfig, OpenAiModel,
    OpenAiResponsesConfig, OpenAiResponsesModel, RetryPolicy,
};

use super::{Server, data, named};

/// A provider client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    OpenAi,
    Responses,
    Anthropic,
    Gemini,
}

pub const PROVIDERS: [Provider; 4] = [
    Provider::OpenAi,
    Provider::Responses,
    Provider::Anthropic,
    Provider::Gemini,
];

/// The transport settings a test changes; the rest are each client's defaults.
#[derive(Clone, Copy)]
pub struct Limits {
    pub retry: RetryPolicy,
    pub reply_timeout: Option<Duration>,
    pub max_event_bytes: Option<usize>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            retry: RetryPolicy::new(2, Duration::from_millis(1), Duration::from_secs(30)),
            reply_timeout: None,
            max_event_bytes: None,
        }
    }
}

/// Applies `limits` to a configuration of any client (their setters have the same names).
macro_rules! limited {
    ($config:expr, $limits:expr) => {{
        let mut config = $config.retry($limits.retry);
        if let Some(timeout) = $limits.reply_timeout {
            config = config.reply_timeout(timeout);
        }
        if let Some(bytes) = $limits.max_event_bytes {
            config = config.max_event_bytes(bytes);
        }
        config
    }};
}

impl Provider {
    /// The API key each client sends (in its own header), which no error text may show.
    pub fn key(self) -> &'static str {
        match self {
            Provider::OpenAi => "sk-chat-0123456789abcdef",
            Provider::Responses => "sk-resp-0123456789abcdef",
            Provider::Anthropic => "sk-ant-0123456789abcdef",
            Provider::Gemini => "AIza-0123456789abcdef",
        }
    }

    /// The client, against `server`.
    pub fn model(self, server: &Server, limits: Limits) -> Arc<dyn Model> {
        let root = server.root();
        match self {
            Provider::OpenAi => {
                let config =
                    OpenAiConfig::new(format!("{root}/v1"), "gpt-test").api_key(self.key());
                Arc::new(OpenAiModel::new(limited!(config, limits)).unwrap())
            }
            Provider::Responses => {
                let config = OpenAiResponsesConfig::new("gpt-test")
                    .base_url(format!("{root}/v1"))
                    .api_key(self.key());
                Arc::new(OpenAiResponsesModel::new(limited!(config, limits)).unwrap())
            }
            Provider::Anthropic => {
                let config = AnthropicConfig::new(self.key(), "claude-test").base_url(root);
                Arc::new(AnthropicModel::new(limited!(config, limits)).unwrap())
            }
            Provider::Gemini => {
                let config =
                    GeminiConfig::new(self.key(), "gemini-test").base_url(format!("{root}/v1beta"));
                Arc::new(GeminiModel::new(limited!(config, limits)).unwrap())
            }
        }
    }

    /// A reply saying `text` (in one delta), whole.
    pub fn text(self, text: &str) -> Vec<String> {
        match self {
            Provider::OpenAi => vec![
                chat_chunk(json!({"role": "assistant", "content": text}), Value::Null),
                chat_chunk(json!({}), json!("stop")),
                "data: [DONE]\n\n".into(),
            ],
            Provider::Responses => {
                let message = |status: &str, text: &str| {
                    json!({"type": "message", "id": "msg_1", "status": status, "role": "assistant",
                           "content": [{"type": "output_text", "text": text, "annotations": []}]})
                };
                responses(vec![
                    json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
                    json!({"type": "response.output_item.added", "output_index": 0, "item": message("in_progress", "")}),
                    json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                           "content_index": 0, "delta": text}),
                    json!({"type": "response.output_item.done", "output_index": 0, "item": message("completed", text)}),
                    responses_completed(vec![message("completed", text)]),
                ])
            }
            Provider::Anthropic => vec![
                anthropic_start(),
                named(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                named(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
                ),
                named(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                ),
                anthropic_end("end_turn"),
                named("message_stop", json!({"type": "message_stop"})),
            ],
            Provider::Gemini => vec![gemini(json!([{"text": text}]), true)],
        }
    }

    /// A reply that calls `get_weather` (call id `call_1`) with arguments streamed in `pieces` (Gemini
    /// sends a call whole: their concatenation, which must then be a JSON object).
    pub fn tool_call(self, pieces: &[&str]) -> Vec<String> {
        let whole: String = pieces.concat();
        match self {
            Provider::OpenAi => {
                let mut events = vec![chat_chunk(
                    json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                           "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}),
                    Value::Null,
                )];
                for piece in pieces {
                    events.push(chat_chunk(
                        json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
                        Value::Null,
                    ));
                }
                events.push(chat_chunk(json!({}), json!("tool_calls")));
                events.push("data: [DONE]\n\n".into());
                events
            }
            Provider::Responses => {
                let item = |status: &str, arguments: &str| {
                    json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
                           "arguments": arguments, "status": status})
                };
                let mut events = vec![
                    json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
                    json!({"type": "response.output_item.added", "output_index": 0, "item": item("in_progress", "")}),
                ];
                for piece in pieces {
                    events.push(
                        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1",
                                       "output_index": 0, "delta": piece}),
                    );
                }
                events.push(
                    json!({"type": "response.function_call_arguments.done", "item_id": "fc_1",
                                   "output_index": 0, "arguments": whole}),
                );
                events.push(
                    json!({"type": "response.output_item.done", "output_index": 0,
                                   "item": item("completed", &whole)}),
                );
                events.push(responses_completed(vec![item("completed", &whole)]));
                responses(events)
            }
            Provider::Anthropic => {
                let mut events = vec![
                    anthropic_start(),
                    named(
                        "content_block_start",
                        json!({"type": "content_block_start", "index": 0, "content_block":
                               {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {}}}),
                    ),
                ];
                for piece in pieces {
                    events.push(named(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    ));
                }
                events.push(named(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                ));
                events.push(anthropic_end("tool_use"));
                events.push(named("message_stop", json!({"type": "message_stop"})));
                events
            }
            Provider::Gemini => {
                let args: Value =
                    serde_json::from_str(&whole).expect("Gemini's arguments are JSON");
                vec![gemini(
                    json!([{"functionCall": {"id": "call_1", "name": "get_weather", "args": args}}]),
                    true,
                )]
            }
        }
    }

    /// A reply that starts and then reports `message` as an error inside the stream, as this provider
    /// does.
    pub fn error_in_stream(self, message: &str) -> Vec<String> {
        let mut events = match self {
            Provider::OpenAi => vec![chat_chunk(
                json!({"role": "assistant", "content": "Hel"}),
                Value::Null,
            )],
            Provider::Responses => responses(vec![
                json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
            ]),
            Provider::Anthropic => vec![anthropic_start()],
            Provider::Gemini => vec![gemini(json!([{"text": "Hel"}]), false)],
        };
        events.push(match self {
            Provider::OpenAi | Provider::Gemini => {
                data(json!({"error": {"code": 500, "message": message}}))
            }
            Provider::Responses => named(
                "error",
                json!({"type": "error", "code": "server_error", "message": message, "sequence_number": 1}),
            ),
            Provider::Anthropic => named(
                "error",
                json!({"type": "error", "error": {"type": "overloaded_error", "message": message}}),
            ),
        });
        events
    }
}

fn chat_chunk(delta: Value, finish_reason: Value) -> String {
    data(json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": "gpt-test", "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }))
}

/// Responses API events, each named by its type and numbered.
fn responses(events: Vec<Value>) -> Vec<String> {
    events
        .into_iter()
        .enumerate()
        .map(|(sequence, mut event)| {
            event["sequence_number"] = json!(sequence);
            let kind = event["type"].as_str().unwrap().to_owned();
            named(&kind, event)
        })
        .collect()
}

fn responses_completed(output: Vec<Value>) -> Value {
    json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
           "output": output, "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}}})
}

fn anthropic_start() -> String {
    named(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
               "content": [], "model": "claude-test", "stop_reason": null, "stop_sequence": null,
               "usage": {"input_tokens": 5, "output_tokens": 1}}}),
    )
}

fn anthropic_end(stop_reason: &str) -> String {
    named(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": 3}}),
    )
}

fn gemini(parts: Value, last: bool) -> String {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut response = json!({"modelVersion": "gemini-test"});
    if last {
        candidate["finishReason"] = json!("STOP");
        response["usageMetadata"] =
            json!({"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8});
    }
    response["candidates"] = json!([candidate]);
    data(response)
}
