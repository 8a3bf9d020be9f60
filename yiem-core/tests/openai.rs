//! The OpenAI-compatible client against real HTTP servers on 127.0.0.1: each test starts a tokio
//! `TcpListener` that speaks HTTP/1.1 and replays the exact byte shapes real servers send (OpenAI, Ollama,
//! vLLM, llama.cpp), then asserts the exact events the client streamed and the request it sent.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use yiem_core::llm::to_openai_messages;
use yiem_core::{
    exec::{CancellationToken, ToolCall},
    llm::{
        ConfigError, Model, ModelEvent, ModelRequest, OpenAiConfig, OpenAiModel, RetryPolicy,
        truncated_tool_results,
    },
    message::{
        AgentMessage, AssistantContent, AssistantMessage, StopReason, ToolResultMessage, Usage,
        UserMessage,
    },
    tool::AgentToolResult,
};

mod common;

use common::{Reply, Server, all_events, assemble, data, done, events, last_error, weather_tool};

/// The OpenAI side of the loopback server.
trait OpenAiServer {
    fn base_url(&self) -> String;
    fn endpoint(&self) -> String;
    fn model(&self) -> OpenAiModel;
    fn model_with(&self, edit: impl FnOnce(OpenAiConfig) -> OpenAiConfig) -> OpenAiModel;
}

impl OpenAiServer for Server {
    fn base_url(&self) -> String {
        format!("{}/v1", self.root())
    }

    fn endpoint(&self) -> String {
        format!("POST {}/v1/chat/completions", self.root())
    }

    /// A model for this server with tiny retry delays.
    fn model(&self) -> OpenAiModel {
        self.model_with(|config| config)
    }

    fn model_with(&self, edit: impl FnOnce(OpenAiConfig) -> OpenAiConfig) -> OpenAiModel {
        let config = OpenAiConfig::new(self.base_url(), "gpt-test")
            .api_key("sk-test")
            .retry(RetryPolicy::new(
                3,
                Duration::from_millis(1),
                Duration::from_millis(10),
            ));
        OpenAiModel::new(edit(config)).unwrap()
    }
}

// ---------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------

const DONE: &str = "data: [DONE]\n\n";

/// An OpenAI `chat.completion.chunk` with one choice.
fn chunk(delta: Value, finish_reason: Value) -> String {
    data(json!({
        "id": "chatcmpl-9x",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-test-2025-01-01",
        "system_fingerprint": "fp_1",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
    }))
}

/// The usage chunk OpenAI sends last when `stream_options.include_usage` is set.
fn usage_chunk(prompt: u64, completion: u64, cached: u64) -> String {
    data(json!({
        "id": "chatcmpl-9x",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-test-2025-01-01",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0}},
    }))
}

fn request(text: &str) -> ModelRequest {
    ModelRequest::new("You are terse.", vec![UserMessage::text(text).into()])
}

fn start() -> ModelEvent {
    ModelEvent::Start {
        model: "gpt-test".into(),
    }
}

fn text(piece: &str) -> ModelEvent {
    ModelEvent::TextDelta(piece.into())
}

fn call_start(index: usize, id: &str, name: &str) -> ModelEvent {
    ModelEvent::ToolCallStart {
        index,
        id: id.into(),
        name: name.into(),
    }
}

fn call_delta(index: usize, arguments: &str) -> ModelEvent {
    ModelEvent::ToolCallDelta {
        index,
        arguments: arguments.into(),
    }
}

fn call_end(index: usize) -> ModelEvent {
    ModelEvent::ToolCallEnd { index }
}

fn usage(input: u64, output: u64, cached: u64) -> Usage {
    Usage::new(input, output).cache(cached, 0)
}

/// A small retry policy whose waits are long: the test must cancel during them.
fn slow_retries() -> RetryPolicy {
    RetryPolicy::new(3, Duration::from_secs(600), Duration::from_secs(1200))
}

// ---------------------------------------------------------------------------------------------------
// Streams in the shapes real servers send
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn text_deltas_and_the_usage_chunk_stream_in_order() {
    let server = Server::start(vec![Reply::Sse(vec![
        chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            Value::Null,
        ),
        chunk(json!({"content": "Hel"}), Value::Null),
        chunk(json!({"content": "lo."}), Value::Null),
        chunk(json!({}), json!("stop")),
        usage_chunk(12, 3, 4),
        DONE.into(),
    ])])
    .await;
    let events = events(&server.model(), request("Say hello")).await;
    assert_eq!(
        events,
        vec![
            start(),
            text("Hel"),
            text("lo."),
            done(StopReason::Stop, usage(12, 3, 4)),
        ]
    );
    let message = assemble(&events);
    assert_eq!(message.text_content(), "Hello.");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.model, "gpt-test");
}

#[tokio::test]
async fn the_request_carries_model_stream_messages_tools_and_the_bearer_key() {
    let server = Server::start(vec![Reply::Sse(vec![
        chunk(json!({"content": "ok"}), json!("stop")),
        DONE.into(),
    ])])
    .await;
    let call = ToolCall::new("call_1", "get_weather", json!({"city": "Tokyo"}));
    let mut reply = AssistantMessage::text("Let me check.");
    reply.content.insert(
        0,
        AssistantContent::Thinking {
            thinking: "the user wants weather".into(),
            signature: None,
        },
    );
    reply.content.push(AssistantContent::ToolCall(call.clone()));
    reply.stop_reason = StopReason::ToolUse;
    let request = ModelRequest::new(
        "You report weather.",
        vec![
            UserMessage::text("Weather in Tokyo?").into(),
            reply.into(),
            ToolResultMessage::new(&call, AgentToolResult::text("Sunny, 22 °C")).into(),
        ],
    )
    .tools(vec![weather_tool()].into());
    let model = server.model_with(|config| config.extra("temperature", json!(0)));
    assert_eq!(
        events(&model, request).await,
        vec![
            start(),
            text("ok"),
            done(StopReason::Stop, Usage::default())
        ]
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    assert_eq!(
        sent.body,
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "You report weather."},
                {"role": "user", "content": "Weather in Tokyo?"},
                {"role": "assistant", "content": "Let me check.", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\":\"Tokyo\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 22 °C"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "City name"}},
                    "required": ["city"]
                }
            }}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0
        })
    );
}

#[tokio::test]
async fn without_an_api_key_no_authorization_header_is_sent() {
    let server = Server::start(vec![Reply::Sse(vec![
        chunk(json!({"content": "ok"}), json!("stop")),
        DONE.into(),
    ])])
    .await;
    let model = OpenAiModel::new(OpenAiConfig::new(server.base_url(), "llama3.2")).unwrap();
    events(&model, request("hi")).await;
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn a_replaced_message_format_shapes_the_sent_messages() {
    let server = Server::start(vec![Reply::Sse(vec![
        chunk(json!({"content": "ok"}), json!("stop")),
        DONE.into(),
    ])])
    .await;
    let model = server
        .model()
        .format(|system: &str, messages: &[AgentMessage]| -> Vec<Value> {
            let mut out = to_openai_messages(system, messages);
            out[0]["role"] = json!("developer");
            out
        });
    events(&model, request("hi")).await;
    assert_eq!(
        server.requests()[0].body["messages"],
        json!([{"role": "developer", "content": "You are terse."}, {"role": "user", "content": "hi"}])
    );
}

#[tokio::test]
async fn tool_call_arguments_split_across_chunks_are_assembled() {
    // The id and name come first; the arguments in pieces, one SSE event split across two HTTP chunks.
    let first = chunk(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"index": 0, "id": "call_abc", "type": "function",
             "function": {"name": "get_weather", "arguments": ""}}
        ]}),
        Value::Null,
    );
    let piece = |arguments: &str| {
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
            Value::Null,
        )
    };
    let split = piece("Tok");
    let (head, tail) = split.split_at(25);
    let server = Server::start(vec![Reply::Sse(vec![
        first,
        piece("{\"ci"),
        piece("ty\": \""),
        head.to_owned(),
        tail.to_owned(),
        piece("yo\"}"),
        chunk(json!({}), json!("tool_calls")),
        usage_chunk(80, 17, 0),
        DONE.into(),
    ])])
    .await;
    let events = events(&server.model(), request("Weather in Tokyo?")).await;
    assert_eq!(
        events,
        vec![
            start(),
            call_start(0, "call_abc", "get_weather"),
            call_delta(0, "{\"ci"),
            call_delta(0, "ty\": \""),
            call_delta(0, "Tok"),
            call_delta(0, "yo\"}"),
            call_end(0),
            done(StopReason::ToolUse, usage(80, 17, 0)),
        ]
    );
    let message = assemble(&events);
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        message.tool_calls().cloned().collect::<Vec<_>>(),
        vec![ToolCall::new(
            "call_abc",
            "get_weather",
            json!({"city": "Tokyo"})
        )]
    );
}

#[tokio::test]
async fn every_argument_delta_is_followed_by_the_arguments_parsed_so_far() {
    let piece = |arguments: &str| {
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
            Value::Null,
        )
    };
    let server = Server::start(vec![Reply::Sse(vec![
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "write", "arguments": ""}}]}),
            Value::Null,
        ),
        piece("{\"pa"),
        piece("th\": \"src/ma"),
        piece("in.rs\", \"content\": \"fn"),
        piece(" main() {}\"}"),
        chunk(json!({}), json!("tool_calls")),
        DONE.into(),
    ])])
    .await;
    let partials: Vec<Value> = all_events(&server.model(), request("write it"))
        .await
        .into_iter()
        .filter_map(|event| match event {
            ModelEvent::ToolCallArguments {
                index: 0,
                arguments,
            } => Some(arguments),
            _ => None,
        })
        .collect();
    // `{"pa` has no complete key yet: an empty object; then the path as far as it streamed.
    assert_eq!(
        partials,
        vec![
            json!({}),
            json!({"path": "src/ma"}),
            json!({"path": "src/main.rs", "content": "fn"}),
            json!({"path": "src/main.rs", "content": "fn main() {}"}),
        ]
    );
}

#[tokio::test]
async fn a_long_call_in_small_deltas_is_reparsed_a_logarithmic_number_of_times() {
    // 64 KB of content in 4-byte deltas: 16 000 deltas. Re-parsing the whole text after each one made a
    // 256 KB call quadratic (73 s in `yiem chat`); now the text is parsed after every delta up to 4 KB,
    // then each time it has doubled.
    let piece = |arguments: &str| {
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
            Value::Null,
        )
    };
    let content = "abcd".repeat(16 * 1024);
    let text = format!("{{\"path\": \"big.txt\", \"content\": \"{content}\"}}");
    let mut sse = vec![chunk(
        json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "write", "arguments": ""}}]}),
        Value::Null,
    )];
    let bytes = text.as_bytes();
    sse.extend(
        bytes
            .chunks(4)
            .map(|four| piece(std::str::from_utf8(four).unwrap())),
    );
    sse.push(chunk(json!({}), json!("tool_calls")));
    sse.push(DONE.into());
    let server = Server::start(vec![Reply::Sse(sse)]).await;
    let events = all_events(&server.model(), request("write it")).await;
    let deltas = events
        .iter()
        .filter(|event| matches!(event, ModelEvent::ToolCallDelta { .. }))
        .count();
    let partials: Vec<&Value> = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ToolCallArguments { arguments, .. } => Some(arguments),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, bytes.len().div_ceil(4));
    // Every delta of the first 4 KB, then at 8, 16, 32 and 64 KB, and the whole text before the end.
    assert!(
        partials.len() <= 4096 / 4 + 6,
        "{} parses for {deltas} deltas",
        partials.len()
    );
    assert_eq!(
        partials.last().unwrap()["content"].as_str().unwrap().len(),
        content.len()
    );
}

#[tokio::test]
async fn two_tool_calls_interleaved_by_index_are_kept_apart() {
    let call = |index: u64, id: &str, name: &str| {
        chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                   "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        )
    };
    let piece = |index: u64, arguments: &str| {
        chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}),
            Value::Null,
        )
    };
    let server = Server::start(vec![Reply::Sse(vec![
        chunk(
            json!({"role": "assistant", "content": "Copying."}),
            Value::Null,
        ),
        call(0, "call_read", "read"),
        call(1, "call_write", "write"),
        piece(1, "{\"path\":\"text.md\","),
        piece(0, "{\"path\":"),
        piece(1, "\"content\":\"hi\"}"),
        piece(0, "\"text.txt\"}"),
        chunk(json!({}), json!("tool_calls")),
        usage_chunk(50, 30, 0),
        DONE.into(),
    ])])
    .await;
    let events = events(&server.model(), request("copy text.txt to text.md")).await;
    assert_eq!(
        events,
        vec![
            start(),
            text("Copying."),
            call_start(0, "call_read", "read"),
            call_start(1, "call_write", "write"),
            call_delta(1, "{\"path\":\"text.md\","),
            call_delta(0, "{\"path\":"),
            call_delta(1, "\"content\":\"hi\"}"),
            call_delta(0, "\"text.txt\"}"),
            call_end(0),
            call_end(1),
            done(StopReason::ToolUse, usage(50, 30, 0)),
        ]
    );
    let message = assemble(&events);
    assert_eq!(message.text_content(), "Copying.");
    assert_eq!(
        message.tool_calls().cloned().collect::<Vec<_>>(),
        vec![
            ToolCall::new("call_read", "read", json!({"path": "text.txt"})),
            ToolCall::new(
                "call_write",
                "write",
                json!({"path": "text.md", "content": "hi"})
            ),
        ]
    );
}

#[tokio::test]
async fn an_ollama_style_stream_without_ids_indexes_or_usage_is_read() {
    // Whole calls without `id`, `index` or `type`, arguments as an object, `finish_reason: "stop"` despite
    // the calls, no usage chunk; the body is framed by closing the connection.
    let ollama = |delta: Value, finish: Value| {
        data(json!({
            "id": "chatcmpl-412",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "llama3.2",
            "system_fingerprint": "fp_ollama",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }))
    };
    let server = Server::start(vec![Reply::SseUntilClose(vec![
        ollama(
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "read", "arguments": {"path": "text.txt"}}},
                {"function": {"name": "write", "arguments": {"path": "text.md", "content": "hi"}}}
            ]}),
            Value::Null,
        ),
        ollama(json!({"role": "assistant", "content": ""}), json!("stop")),
        DONE.into(),
    ])])
    .await;
    let events = events(&server.model(), request("copy text.txt to text.md")).await;
    assert_eq!(
        events,
        vec![
            start(),
            call_start(0, "", "read"),
            call_delta(0, "{\"path\":\"text.txt\"}"),
            call_start(1, "", "write"),
            call_delta(1, "{\"path\":\"text.md\",\"content\":\"hi\"}"),
            call_end(0),
            call_end(1),
            done(StopReason::ToolUse, Usage::default()),
        ]
    );
    let message = assemble(&events);
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].arguments, json!({"path": "text.txt"}));
    assert_eq!(
        calls[1].arguments,
        json!({"path": "text.md", "content": "hi"})
    );
    // Missing ids become fresh, distinct UUIDs.
    assert_eq!(calls[0].id.len(), 36);
    assert_eq!(calls[1].id.len(), 36);
    assert_ne!(calls[0].id, calls[1].id);
}

#[tokio::test]
async fn a_stream_without_finish_reason_before_done_is_complete() {
    // llama.cpp-style minimal chunks: no `id`, no `object`, no `finish_reason` at all.
    let server = Server::start(vec![Reply::Sse(vec![
        data(json!({"choices": [{"delta": {"content": "4"}}]})),
        DONE.into(),
    ])])
    .await;
    assert_eq!(
        events(&server.model(), request("2+2?")).await,
        vec![start(), text("4"), done(StopReason::Stop, Usage::default())]
    );
}

#[tokio::test]
async fn a_stream_that_ends_after_its_finish_reason_without_done_is_complete() {
    let server = Server::start(vec![Reply::SseUntilClose(vec![
        chunk(json!({"content": "4"}), Value::Null),
        chunk(json!({}), json!("stop")),
    ])])
    .await;
    assert_eq!(
        events(&server.model(), request("2+2?")).await,
        vec![start(), text("4"), done(StopReason::Stop, Usage::default())]
    );
}

#[tokio::test]
async fn reasoning_fields_become_thinking_deltas() {
    let server = Server::start(vec![Reply::Sse(vec![
        chunk(
            json!({"role": "assistant", "content": null, "reasoning_content": "2+2 "}),
            Value::Null,
        ),
        chunk(json!({"content": null, "reasoning": "is 4"}), Value::Null),
        chunk(
            json!({"content": "4", "reasoning_content": null}),
            Value::Null,
        ),
        chunk(json!({}), json!("stop")),
        DONE.into(),
    ])])
    .await;
    let events = events(&server.model(), request("2+2?")).await;
    assert_eq!(
        events,
        vec![
            start(),
            ModelEvent::ThinkingDelta("2+2 ".into()),
            ModelEvent::ThinkingDelta("is 4".into()),
            text("4"),
            done(StopReason::Stop, Usage::default()),
        ]
    );
    assert_eq!(
        assemble(&events).content,
        vec![
            AssistantContent::Thinking {
                thinking: "2+2 is 4".into(),
                signature: None
            },
            AssistantContent::Text { text: "4".into() },
        ]
    );
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_read_from_its_json_body() {
    let body = json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-test-2025-01-01",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]
        }}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}
    });
    let server = Server::start(vec![Reply::Status {
        status: "200 OK",
        headers: Vec::new(),
        content_type: "application/json",
        body: body.to_string(),
    }])
    .await;
    assert_eq!(
        events(&server.model(), request("Weather in Oslo?")).await,
        vec![
            start(),
            text("Checking."),
            call_start(0, "call_1", "get_weather"),
            call_delta(0, "{\"city\":\"Oslo\"}"),
            call_end(0),
            done(StopReason::ToolUse, usage(30, 9, 0)),
        ]
    );
}

// ---------------------------------------------------------------------------------------------------
// Servers that mirror tool calls into the legacy `function_call`, and strict servers
// ---------------------------------------------------------------------------------------------------

/// A llama-cpp-python stream: every piece of the call in `delta.tool_calls` and again in
/// `delta.function_call`.
fn mirrored_piece(name: &str, arguments: &str) -> String {
    chunk(
        json!({"role": null, "content": null,
               "function_call": {"name": name, "arguments": arguments},
               "tool_calls": [{"index": 0, "id": "call__0_get_weather_cmpl-1", "type": "function",
                               "function": {"name": name, "arguments": arguments}}]}),
        Value::Null,
    )
}

#[tokio::test]
async fn a_stream_that_mirrors_each_piece_into_function_call_is_read_once() {
    let server = Server::start(vec![Reply::Sse(vec![
        mirrored_piece("get_weather", "{\"city"),
        mirrored_piece("get_weather", "\": \"Tokyo\"}"),
        chunk(json!({}), json!("tool_calls")),
        DONE.into(),
    ])])
    .await;
    let events = events(&server.model(), request("Weather in Tokyo?")).await;
    assert_eq!(
        events,
        vec![
            start(),
            call_start(0, "call__0_get_weather_cmpl-1", "get_weather"),
            call_delta(0, "{\"city"),
            call_delta(0, "\": \"Tokyo\"}"),
            call_end(0),
            done(StopReason::ToolUse, Usage::default()),
        ]
    );
    assert_eq!(
        assemble(&events).tool_calls().cloned().collect::<Vec<_>>(),
        vec![ToolCall::new(
            "call__0_get_weather_cmpl-1",
            "get_weather",
            json!({"city": "Tokyo"})
        )]
    );
}

#[tokio::test]
async fn a_json_body_with_both_tool_calls_and_function_call_holds_one_call() {
    let body = json!({
        "object": "chat.completion",
        "model": "qwen2.5-0.5b",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant",
            "content": null,
            "function_call": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"},
            "tool_calls": [{"id": "call__0_get_weather_cmpl-2", "type": "function",
                            "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]
        }}]
    });
    let server = Server::start(vec![Reply::Status {
        status: "200 OK",
        headers: Vec::new(),
        content_type: "application/json",
        body: body.to_string(),
    }])
    .await;
    let events = events(&server.model(), request("Weather in Oslo?")).await;
    let calls: Vec<ToolCall> = assemble(&events).tool_calls().cloned().collect();
    assert_eq!(
        calls,
        vec![ToolCall::new(
            "call__0_get_weather_cmpl-2",
            "get_weather",
            json!({"city": "Oslo"})
        )]
    );
    // The same body read as a reply, without the client.
    let reply = yiem_core::llm::assistant_from_openai(&body);
    assert_eq!(reply.tool_calls().count(), 1);
}

#[tokio::test]
async fn a_stream_of_only_the_legacy_function_call_is_still_a_call() {
    let piece = |delta: Value| chunk(json!({"function_call": delta}), Value::Null);
    let server = Server::start(vec![Reply::Sse(vec![
        piece(json!({"name": "get_weather", "arguments": "{\"city\":"})),
        piece(json!({"arguments": "\"Rome\"}"})),
        chunk(json!({}), json!("function_call")),
        DONE.into(),
    ])])
    .await;
    let events = events(&server.model(), request("Weather in Rome?")).await;
    let calls: Vec<ToolCall> = assemble(&events).tool_calls().cloned().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(calls[0].arguments, json!({"city": "Rome"}));
}

#[tokio::test]
async fn the_tool_result_request_sends_tool_calls_with_empty_text_content() {
    let server = Server::start(vec![ok_stream()]).await;
    let call = ToolCall::new("call_1", "get_weather", json!({"city": "Oslo"}));
    let assistant = AssistantMessage::new(
        vec![AssistantContent::ToolCall(call.clone())],
        StopReason::ToolUse,
    );
    let result = ToolResultMessage::new(&call, AgentToolResult::text("sunny"));
    let request = ModelRequest::new(
        String::new(),
        vec![
            UserMessage::text("Weather in Oslo?").into(),
            assistant.into(),
            result.into(),
        ],
    );
    let _ = events(&server.model(), request).await;
    let sent = &server.requests()[0].body["messages"];
    // `null` is refused by strict servers (llama-cpp-python answers it with a 500); `""` is accepted by all.
    assert_eq!(
        sent[1],
        json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}
        ]})
    );
}

// ---------------------------------------------------------------------------------------------------
// The output limit
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn finish_reason_length_with_a_pending_call_stops_with_length_and_the_call_is_refused() {
    let server = Server::start(vec![Reply::Sse(vec![
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_w", "type": "function",
                                   "function": {"name": "write", "arguments": "{\"path\":\"a.md\","}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"content\":\"lorem ip"}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("length")),
        usage_chunk(40, 4096, 0),
        DONE.into(),
    ])])
    .await;
    let events = events(&server.model(), request("write a long file")).await;
    assert_eq!(
        events,
        vec![
            start(),
            call_start(0, "call_w", "write"),
            call_delta(0, "{\"path\":\"a.md\","),
            call_delta(0, "\"content\":\"lorem ip"),
            call_end(0),
            done(StopReason::Length, usage(40, 4096, 0)),
        ]
    );
    let message = assemble(&events);
    assert_eq!(message.stop_reason, StopReason::Length);
    let refused = truncated_tool_results(&message).expect("the call must not run");
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].tool_call_id, "call_w");
    assert_eq!(refused[0].tool_name, "write");
    assert!(refused[0].is_error());
    assert_eq!(
        refused[0].text_content(),
        "tool call `write` was not run: the reply hit the model's output limit (finish_reason \"length\"), \
         so its arguments may be truncated; call the tool again with shorter arguments"
    );
}

// ---------------------------------------------------------------------------------------------------
// Retries
// ---------------------------------------------------------------------------------------------------

fn rate_limited(retry_after: Option<&'static str>) -> Reply {
    Reply::Status {
        status: "429 Too Many Requests",
        headers: retry_after
            .map(|value| vec![("Retry-After", value)])
            .unwrap_or_default(),
        content_type: "application/json",
        body: json!({"error": {"message": "Rate limit reached for gpt-test", "type": "requests",
                               "code": "rate_limit_exceeded"}})
        .to_string(),
    }
}

fn ok_stream() -> Reply {
    Reply::Sse(vec![
        chunk(json!({"content": "fine"}), json!("stop")),
        usage_chunk(5, 1, 0),
        DONE.into(),
    ])
}

#[tokio::test]
async fn a_429_then_200_is_retried_and_succeeds() {
    let server = Server::start(vec![rate_limited(Some("0")), ok_stream()]).await;
    assert_eq!(
        events(&server.model(), request("hi")).await,
        vec![
            start(),
            text("fine"),
            done(StopReason::Stop, usage(5, 1, 0))
        ]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
}

#[tokio::test]
async fn a_429_without_retry_after_is_retried_with_backoff() {
    let server = Server::start(vec![rate_limited(None), rate_limited(None), ok_stream()]).await;
    assert_eq!(
        events(&server.model(), request("hi")).await,
        vec![
            start(),
            text("fine"),
            done(StopReason::Stop, usage(5, 1, 0))
        ]
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_500_forever_is_retried_a_bounded_number_of_times_then_reported() {
    let server = Server::start(vec![Reply::Status {
        status: "500 Internal Server Error",
        headers: Vec::new(),
        content_type: "application/json",
        body: json!({"error": {"message": "The server had an error while processing your request.",
                               "type": "server_error"}})
        .to_string(),
    }])
    .await;
    let events = events(&server.model(), request("hi")).await;
    assert_eq!(
        events,
        vec![
            start(),
            ModelEvent::Error(format!(
                "{} failed: HTTP 500 Internal Server Error: The server had an error while processing your \
                 request. (4 attempts)",
                server.endpoint()
            )),
        ]
    );
    assert_eq!(server.requests().len(), 4);
    let message = assemble(&events);
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(message.content.is_empty());
}

#[tokio::test]
async fn no_retries_means_one_attempt() {
    let server = Server::start(vec![Reply::Status {
        status: "503 Service Unavailable",
        headers: Vec::new(),
        content_type: "text/plain",
        body: "upstream connect error".into(),
    }])
    .await;
    let model = server.model_with(|config| config.retry(RetryPolicy::none()));
    assert_eq!(
        events(&model, request("hi")).await,
        vec![
            start(),
            ModelEvent::Error(format!(
                "{} failed: HTTP 503 Service Unavailable: upstream connect error",
                server.endpoint()
            )),
        ]
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_client_error_is_reported_at_once_with_the_server_message() {
    let server = Server::start(vec![Reply::Status {
        status: "404 Not Found",
        headers: Vec::new(),
        content_type: "application/json",
        body: json!({"error": "model \"gpt-test\" not found, try pulling it first"}).to_string(),
    }])
    .await;
    assert_eq!(
        events(&server.model(), request("hi")).await,
        vec![
            start(),
            ModelEvent::Error(format!(
                "{} failed: HTTP 404 Not Found: model \"gpt-test\" not found, try pulling it first",
                server.endpoint()
            )),
        ]
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_retry_after_longer_than_the_max_delay_is_not_waited_for() {
    let server = Server::start(vec![rate_limited(Some("120")), ok_stream()]).await;
    assert_eq!(
        events(&server.model(), request("hi")).await,
        vec![
            start(),
            ModelEvent::Error(format!(
                "{} failed: HTTP 429 Too Many Requests: Rate limit reached for gpt-test (not retried: the \
                 server asked to retry after 120 s, more than the 10 ms allowed)",
                server.endpoint()
            )),
        ]
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    // A port that was just free: nothing listens there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let config = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "gpt-test").retry(
        RetryPolicy::new(2, Duration::from_millis(1), Duration::from_millis(5)),
    );
    let model = OpenAiModel::new(config).unwrap();
    assert_eq!(
        events(&model, request("hi")).await,
        vec![
            start(),
            ModelEvent::Error(format!(
                "POST http://127.0.0.1:{port}/v1/chat/completions failed: could not connect: Connection \
                 refused (os error 111) (3 attempts)"
            )),
        ]
    );
}

// ---------------------------------------------------------------------------------------------------
// Broken streams
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_stream_cut_mid_way_ends_in_an_error_that_keeps_the_partial_reply() {
    let server = Server::start(vec![Reply::SseCut(vec![
        chunk(
            json!({"role": "assistant", "content": "The answer"}),
            Value::Null,
        ),
        chunk(json!({"content": " is"}), Value::Null),
    ])])
    .await;
    let events = events(&server.model(), request("hi")).await;
    assert_eq!(
        events,
        vec![
            start(),
            text("The answer"),
            text(" is"),
            ModelEvent::Error(format!(
                "{} failed: the stream broke off after 2 chunks: unexpected EOF during chunk size line",
                server.endpoint()
            )),
        ]
    );
    let message = assemble(&events);
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text_content(), "The answer is");
    // A broken stream is never retried: the reply had started.
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_response_that_breaks_before_its_first_chunk_is_sent_again() {
    let server = Server::start(vec![Reply::SseCut(Vec::new()), ok_stream()]).await;
    assert_eq!(
        events(&server.model(), request("hi")).await,
        vec![
            start(),
            text("fine"),
            done(StopReason::Stop, usage(5, 1, 0))
        ]
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn responses_that_always_break_before_their_first_chunk_are_retried_a_bounded_number_of_times()
 {
    let server = Server::start(vec![Reply::SseUntilClose(vec![": keep-alive\n\n".into()])]).await;
    assert_eq!(
        events(&server.model(), request("hi")).await,
        vec![
            start(),
            ModelEvent::Error(format!(
                "{} failed: the stream ended after 0 chunks before the reply was complete (4 attempts)",
                server.endpoint()
            )),
        ]
    );
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn a_stream_that_closes_before_the_reply_is_complete_is_an_error() {
    let server = Server::start(vec![Reply::SseUntilClose(vec![
        chunk(json!({"content": "The answer"}), Value::Null),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read", "arguments": "{"}}]}),
            Value::Null,
        ),
    ])])
    .await;
    let events = events(&server.model(), request("hi")).await;
    assert_eq!(
        events,
        vec![
            start(),
            text("The answer"),
            call_start(0, "c1", "read"),
            call_delta(0, "{"),
            ModelEvent::Error(format!(
                "{} failed: the stream ended after 2 chunks before the reply was complete",
                server.endpoint()
            )),
        ]
    );
    assert_eq!(assemble(&events).stop_reason, StopReason::Error);
}

#[tokio::test]
async fn a_garbage_chunk_is_fatal_and_named() {
    let server = Server::start(vec![Reply::Sse(vec![
        chunk(json!({"content": "Hi"}), Value::Null),
        "data: <html><body>502 Bad Gateway</body></html>\n\n".into(),
        chunk(json!({"content": " there"}), json!("stop")),
        DONE.into(),
    ])])
    .await;
    let events = events(&server.model(), request("hi")).await;
    assert_eq!(
        events,
        vec![
            start(),
            text("Hi"),
            ModelEvent::Error(format!(
                "{} failed: chunk 2 is not JSON (expected value at line 1 column 1): \
                 <html><body>502 Bad Gateway</body></html>",
                server.endpoint()
            )),
        ]
    );
    let message = assemble(&events);
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text_content(), "Hi");
}

#[tokio::test]
async fn an_error_object_in_the_stream_is_reported() {
    let server = Server::start(vec![Reply::Sse(vec![
        chunk(json!({"content": "Hi"}), Value::Null),
        data(json!({"error": {"message": "Provider returned error", "code": 502}})),
    ])])
    .await;
    assert_eq!(
        events(&server.model(), request("hi")).await,
        vec![
            start(),
            text("Hi"),
            ModelEvent::Error(format!(
                "{} failed: the server reported an error in the stream: Provider returned error",
                server.endpoint()
            )),
        ]
    );
}

#[tokio::test]
async fn an_error_event_in_the_stream_is_reported() {
    let server = Server::start(vec![Reply::Sse(vec![
        "event: error\ndata: {\"error\":\"out of memory\"}\n\n".into(),
    ])])
    .await;
    assert_eq!(
        events(&server.model(), request("hi")).await,
        vec![
            start(),
            ModelEvent::Error(format!(
                "{} failed: the server reported an error in the stream: out of memory",
                server.endpoint()
            )),
        ]
    );
}

#[tokio::test]
async fn a_content_filter_stop_is_an_error() {
    let server = Server::start(vec![Reply::Sse(vec![
        chunk(json!({"content": "Sure"}), Value::Null),
        chunk(json!({}), json!("content_filter")),
        DONE.into(),
    ])])
    .await;
    assert_eq!(
        events(&server.model(), request("hi")).await,
        vec![
            start(),
            text("Sure"),
            ModelEvent::Error(format!(
                "{} failed: the server stopped the reply with finish_reason \"content_filter\"",
                server.endpoint()
            )),
        ]
    );
}

#[tokio::test]
async fn a_silent_stream_hits_the_idle_timeout() {
    let server = Server::start(vec![Reply::SseStall(vec![chunk(
        json!({"content": "Thinking"}),
        Value::Null,
    )])])
    .await;
    let model = server.model_with(|config| {
        config.timeouts(
            Duration::from_secs(5),
            Duration::from_secs(5),
            Duration::from_millis(100),
        )
    });
    assert_eq!(
        events(&model, request("hi")).await,
        vec![
            start(),
            text("Thinking"),
            ModelEvent::Error(format!(
                "{} failed: no data for 100 ms after 1 chunk",
                server.endpoint()
            )),
        ]
    );
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_response_timeout() {
    let server = Server::start(vec![Reply::Silence]).await;
    let model = server.model_with(|config| {
        config.timeouts(
            Duration::from_secs(5),
            Duration::from_millis(100),
            Duration::from_secs(5),
        )
    });
    assert_eq!(
        events(&model, request("hi")).await,
        vec![
            start(),
            ModelEvent::Error(format!(
                "{} failed: no response within 100 ms",
                server.endpoint()
            )),
        ]
    );
    assert_eq!(server.requests().len(), 1);
}

// ---------------------------------------------------------------------------------------------------
// Cancellation
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn cancelling_during_a_retry_wait_ends_the_stream_at_once() {
    let server = Server::start(vec![rate_limited(None)]).await;
    let model = server.model_with(|config| config.retry(slow_retries()));
    let cancel = CancellationToken::new();
    let stream = model.stream(request("hi"), cancel.clone());
    let collecting = tokio::spawn(stream.collect::<Vec<ModelEvent>>());
    server.arrived.notified().await;
    cancel.cancel();
    // The retry wait is at least 300 s; the stream must end long before this guard.
    let events = tokio::time::timeout(Duration::from_secs(30), collecting)
        .await
        .expect("the stream ended")
        .unwrap();
    assert_eq!(events, Vec::<ModelEvent>::new());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn cancelling_mid_stream_ends_the_stream_at_once() {
    let server = Server::start(vec![Reply::SseStall(vec![chunk(
        json!({"content": "Once upon"}),
        Value::Null,
    )])])
    .await;
    let cancel = CancellationToken::new();
    let mut stream = server.model().stream(request("a story"), cancel.clone());
    assert_eq!(stream.next().await, Some(start()));
    assert_eq!(stream.next().await, Some(text("Once upon")));
    cancel.cancel();
    let rest = tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .expect("the stream ended");
    assert_eq!(rest, None);
}

// ---------------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------------

#[test]
fn configuration_from_the_environment_needs_a_base_url() {
    let error =
        OpenAiConfig::from_lookup(|name| (name == "OPENAI_API_KEY").then(|| "sk-test".to_owned()))
            .unwrap_err();
    assert!(matches!(error, ConfigError::MissingBaseUrl { .. }));
    assert_eq!(
        error.to_string(),
        "`YIEM_BASE_URL` is not set: set it to the chat-completions base URL, e.g. \
         https://api.openai.com/v1 or http://localhost:11434/v1"
    );

    let config = OpenAiConfig::from_lookup(|name| match name {
        "YIEM_BASE_URL" => Some("http://localhost:11434/v1/".into()),
        "YIEM_MODEL" => Some("qwen3:8b".into()),
        "OPENAI_API_KEY" => Some(String::new()),
        _ => None,
    })
    .unwrap();
    assert_eq!(config.client.model, "qwen3:8b");
    assert_eq!(config.client.api_key, None);
    let model = OpenAiModel::new(config).unwrap();
    assert_eq!(
        model.endpoint(),
        "http://localhost:11434/v1/chat/completions"
    );
    assert_eq!(model.name(), "qwen3:8b");
}

#[test]
fn the_debug_output_hides_the_api_key() {
    let config = OpenAiConfig::new("https://api.openai.com/v1", "gpt-4o").api_key("sk-secret");
    let shown = format!("{:?}", OpenAiModel::new(config).unwrap());
    assert!(!shown.contains("sk-secret"), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
}

#[tokio::test]
async fn a_500_whose_body_is_a_validation_error_is_not_retried() {
    // What llama-cpp-python (pydantic) answers to a request it refuses.
    let body = json!({"error": {
        "message": "1 validation error for ChatCompletionRequestAssistantMessage\ncontent\n  Input should be a valid string [type=string_type, input_value=None, input_type=NoneType]",
        "type": "internal_server_error"
    }});
    let server = Server::start(vec![
        Reply::Status {
            status: "500 Internal Server Error",
            headers: Vec::new(),
            content_type: "application/json",
            body: body.to_string(),
        },
        ok_stream(),
    ])
    .await;
    let events = events(&server.model(), request("hi")).await;
    assert_eq!(
        server.requests().len(),
        1,
        "a validation error is sent once"
    );
    let text = last_error(&events);
    assert!(text.contains("Input should be a valid string"), "{text}");
    assert!(
        text.ends_with(
            "(a validation error of the request: not retried, since it would fail again)"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn a_reply_cut_mid_stream_is_not_sent_back_as_a_finished_message() {
    // The first turn's stream breaks after some text; the next request must not carry that text.
    let server = Server::start(vec![
        Reply::SseCut(vec![chunk(json!({"content": "LLMock says "}), Value::Null)]),
        ok_stream(),
    ])
    .await;
    let model = server.model_with(|config| config.retry(RetryPolicy::none()));
    let first = events(&model, request("hello")).await;
    let cut = assemble(&first);
    assert_eq!(cut.stop_reason, StopReason::Error);
    assert_eq!(cut.text_content(), "LLMock says ");
    let next = ModelRequest::new(
        String::new(),
        vec![
            UserMessage::text("hello").into(),
            cut.into(),
            UserMessage::text("again?").into(),
        ],
    );
    let _ = events(&model, next).await;
    assert_eq!(
        server.requests()[1].body["messages"],
        json!([{"role": "user", "content": "hello"}, {"role": "user", "content": "again?"}])
    );
}
