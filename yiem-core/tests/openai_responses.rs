//! The Responses API client against real HTTP servers on 127.0.0.1 that replay the event sequences
//! OpenAI documents for `POST /v1/responses` with `stream: true` (each event an `event:` line and its
//! JSON with `type` and `sequence_number`). Each test asserts the exact events the client streamed, and
//! every request it sent is checked against the official `openai` Python SDK's request type for a
//! streamed `responses.create` (`ResponseCreateParamsStreaming`, with unknown keys refused at any depth:
//! `tests/python/sdk_request.py`).
//!
//! (The SDK's Python: see `common/sdk.rs`.)

mod common;

use std::time::Duration;

use serde_json::{Value, json};
use yiem_core::{
    exec::ToolCall,
    llm::{ModelEvent, ModelRequest, OpenAiResponsesConfig, OpenAiResponsesModel, RetryPolicy},
    message::{AssistantContent, StopReason, ToolResultMessage, Usage, UserMessage},
    tool::AgentToolResult,
};

use common::sdk::{Request, assert_sdk_accepts_bodies};
use common::{Reply, Server, all_events, assemble, done, events, last_error, weather_tool};

/// Asserts that every request the server got fits the SDK's `ResponseCreateParamsStreaming`.
fn assert_sdk_accepts(server: &Server) {
    common::sdk::assert_sdk_accepts(Request::Responses, server);
}

// ---------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------

fn model_for(
    server: &Server,
    edit: impl FnOnce(OpenAiResponsesConfig) -> OpenAiResponsesConfig,
) -> OpenAiResponsesModel {
    let config = OpenAiResponsesConfig::new("gpt-test")
        .base_url(format!("{}/v1", server.root()))
        .api_key("sk-test")
        .retry(RetryPolicy::new(
            2,
            Duration::from_millis(1),
            Duration::from_millis(10),
        ));
    OpenAiResponsesModel::new(edit(config)).unwrap()
}

fn request(text: &str) -> ModelRequest {
    ModelRequest::new("You are terse.", vec![UserMessage::text(text).into()])
}

/// A stream of events as OpenAI writes them: `event: <type>` and the JSON with `type` and a
/// `sequence_number` counting from 0.
fn stream(events: Vec<Value>) -> Vec<String> {
    events
        .into_iter()
        .enumerate()
        .map(|(sequence, mut event)| {
            event["sequence_number"] = json!(sequence);
            let kind = event["type"].as_str().unwrap().to_owned();
            format!("event: {kind}\ndata: {event}\n\n")
        })
        .collect()
}

fn response(id: &str, status: &str, output: Value, usage: Value) -> Value {
    json!({
        "id": id, "object": "response", "created_at": 1_741_476_542, "status": status,
        "error": null, "incomplete_details": null, "instructions": null, "max_output_tokens": null,
        "model": "gpt-test-2025-01-01", "output": output, "parallel_tool_calls": true,
        "previous_response_id": null, "reasoning": {"effort": null, "summary": null}, "store": false,
        "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [],
        "top_p": 1.0, "truncation": "disabled", "usage": usage, "user": null, "metadata": {}
    })
}

fn usage_json(input: u64, cached: u64, output: u64, reasoning: u64) -> Value {
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
           "output_tokens": output, "output_tokens_details": {"reasoning_tokens": reasoning},
           "total_tokens": input + output})
}

fn created(id: &str) -> [Value; 2] {
    let pending = response(id, "in_progress", json!([]), Value::Null);
    [
        json!({"type": "response.created", "response": pending}),
        json!({"type": "response.in_progress", "response": pending}),
    ]
}

fn completed(id: &str, output: Value, usage: Value) -> Value {
    json!({"type": "response.completed", "response": response(id, "completed", output, usage)})
}

/// The whole second response (`resp_2`): one message (`msg_2`) saying `text`, then its completion with
/// `usage`.
fn answered(text: &str, usage: Value) -> Vec<Value> {
    let (answer, answer_item) = message_events(0, "msg_2", &[text]);
    let mut events = created("resp_2").to_vec();
    events.extend(answer);
    events.push(completed("resp_2", json!([answer_item]), usage));
    events
}

/// The events of an assistant message item `id` at `index` whose text streams in `pieces`.
fn message_events(index: u64, id: &str, pieces: &[&str]) -> (Vec<Value>, Value) {
    let text: String = pieces.concat();
    let done_item = json!({"type": "message", "id": id, "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]});
    let mut events = vec![
        json!({"type": "response.output_item.added", "output_index": index,
               "item": {"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []}}),
        json!({"type": "response.content_part.added", "item_id": id, "output_index": index, "content_index": 0,
               "part": {"type": "output_text", "text": "", "annotations": []}}),
    ];
    for piece in pieces {
        events.push(
            json!({"type": "response.output_text.delta", "item_id": id, "output_index": index,
                           "content_index": 0, "delta": piece, "logprobs": []}),
        );
    }
    events.extend([
        json!({"type": "response.output_text.done", "item_id": id, "output_index": index,
               "content_index": 0, "text": text, "logprobs": []}),
        json!({"type": "response.content_part.done", "item_id": id, "output_index": index, "content_index": 0,
               "part": {"type": "output_text", "text": text, "annotations": []}}),
        json!({"type": "response.output_item.done", "output_index": index, "item": done_item}),
    ]);
    (events, done_item)
}

/// The events of a function call item.
fn call_events(
    index: u64,
    id: &str,
    call_id: &str,
    name: &str,
    pieces: &[&str],
) -> (Vec<Value>, Value) {
    let arguments: String = pieces.concat();
    let item = |status: &str, arguments: &str| {
        json!({"type": "function_call", "id": id, "call_id": call_id, "name": name,
               "arguments": arguments, "status": status})
    };
    let mut events = vec![
        json!({"type": "response.output_item.added", "output_index": index,
                                 "item": item("in_progress", "")}),
    ];
    for piece in pieces {
        events.push(
            json!({"type": "response.function_call_arguments.delta", "item_id": id,
                           "output_index": index, "delta": piece}),
        );
    }
    let done_item = item("completed", &arguments);
    events.extend([
        json!({"type": "response.function_call_arguments.done", "item_id": id, "output_index": index,
               "arguments": arguments}),
        json!({"type": "response.output_item.done", "output_index": index, "item": done_item}),
    ]);
    (events, done_item)
}

fn block(value: Value) -> ModelEvent {
    ModelEvent::ProviderBlock {
        provider: "openai-responses".into(),
        block: value,
    }
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

fn usage(input: u64, output: u64, cached: u64) -> Usage {
    Usage::new(input, output).cache(cached, 0)
}

// ---------------------------------------------------------------------------------------------------
// The documented sequences
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_text_reply_streams_in_order_with_its_usage() {
    let (message, item) = message_events(0, "msg_1", &["Hel", "lo."]);
    let mut sequence = created("resp_1").to_vec();
    sequence.extend(message);
    sequence.push(completed("resp_1", json!([item]), usage_json(12, 4, 3, 0)));
    let server = Server::start(vec![Reply::Sse(stream(sequence))]).await;
    let model = model_for(&server, |config| config.extra("temperature", json!(0)));
    let events = events(&model, request("Say hello")).await;
    assert_eq!(
        events,
        vec![
            start(),
            block(json!({"type": "message", "id": "msg_1"})),
            text("Hel"),
            text("lo."),
            done(StopReason::Stop, usage(12, 3, 4)),
        ]
    );
    let reply = assemble(&events);
    assert_eq!(reply.text_content(), "Hello.");

    let sent = &server.requests()[0];
    assert_eq!(sent.request_line, "POST /v1/responses HTTP/1.1");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    assert_eq!(
        sent.body,
        json!({
            "model": "gpt-test",
            "instructions": "You are terse.",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Say hello"}]}],
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "temperature": 0
        })
    );
    assert_sdk_accepts(&server);
}

#[tokio::test]
async fn a_parallel_pair_of_function_calls_streams_and_goes_back_with_its_results() {
    let (first, first_item) = call_events(
        0,
        "fc_1",
        "call_a",
        "get_weather",
        &["{\"ci", "ty\":\"Tokyo\"}"],
    );
    let (second, second_item) =
        call_events(1, "fc_2", "call_b", "get_weather", &["{\"city\":\"Oslo\"}"]);
    let mut sequence = created("resp_1").to_vec();
    sequence.extend(first);
    sequence.extend(second);
    sequence.push(completed(
        "resp_1",
        json!([first_item, second_item]),
        usage_json(80, 0, 17, 0),
    ));
    let follow_up = answered("Sunny in both.", usage_json(120, 0, 5, 0));
    let server = Server::start(vec![
        Reply::Sse(stream(sequence)),
        Reply::Sse(stream(follow_up)),
    ])
    .await;
    let model = model_for(&server, |config| config);
    let mut ask = request("Weather in Tokyo and Oslo?");
    ask.tools = vec![weather_tool()].into();

    let streamed = events(&model, ask.clone()).await;
    assert_eq!(
        streamed,
        vec![
            start(),
            block(json!({"type": "function_call", "id": "fc_1", "call_id": "call_a"})),
            call_start(0, "call_a", "get_weather"),
            call_delta(0, "{\"ci"),
            call_delta(0, "ty\":\"Tokyo\"}"),
            ModelEvent::ToolCallEnd { index: 0 },
            block(json!({"type": "function_call", "id": "fc_2", "call_id": "call_b"})),
            call_start(1, "call_b", "get_weather"),
            call_delta(1, "{\"city\":\"Oslo\"}"),
            ModelEvent::ToolCallEnd { index: 1 },
            done(StopReason::ToolUse, usage(80, 17, 0)),
        ]
    );
    let reply = assemble(&streamed);
    let calls: Vec<ToolCall> = reply.tool_calls().cloned().collect();
    assert_eq!(
        calls,
        vec![
            ToolCall::new("call_a", "get_weather", json!({"city": "Tokyo"})),
            ToolCall::new("call_b", "get_weather", json!({"city": "Oslo"})),
        ]
    );

    ask.messages.push(reply.into());
    ask.messages
        .push(ToolResultMessage::new(&calls[0], AgentToolResult::text("Sunny, 22 °C")).into());
    ask.messages
        .push(ToolResultMessage::new(&calls[1], AgentToolResult::error("no station")).into());
    let answer = assemble(&events(&model, ask).await);
    assert_eq!(answer.text_content(), "Sunny in both.");

    let sent = server.requests();
    assert_eq!(
        sent[0].body["tools"],
        json!([{"type": "function", "name": "get_weather", "description": "Current weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}},
                               "required": ["city"]},
                "strict": false}])
    );
    assert_eq!(
        sent[1].body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Tokyo and Oslo?"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "get_weather", "arguments": "{\"city\":\"Tokyo\"}"},
            {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"},
            {"type": "function_call_output", "call_id": "call_a", "output": "Sunny, 22 °C"},
            {"type": "function_call_output", "call_id": "call_b", "output": "no station"}
        ])
    );
    assert_sdk_accepts(&server);
}

/// A reasoning model's turn: a reasoning item with a two-part summary (its `encrypted_content` whole only
/// in `response.output_item.done`), then a call.
fn reasoning_turn() -> Vec<Value> {
    let reasoning = |encrypted: &str, summary: Value| json!({"type": "reasoning", "id": "rs_1", "summary": summary, "encrypted_content": encrypted});
    let mut sequence = created("resp_1").to_vec();
    sequence.extend([
        json!({"type": "response.output_item.added", "output_index": 0, "item": reasoning("gAAA", json!([]))}),
        json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0,
               "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0,
               "summary_index": 0, "delta": "**Planning** "}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0,
               "summary_index": 0, "delta": "the lookup"}),
        json!({"type": "response.reasoning_summary_text.done", "item_id": "rs_1", "output_index": 0,
               "summary_index": 0, "text": "**Planning** the lookup"}),
        json!({"type": "response.reasoning_summary_part.done", "item_id": "rs_1", "output_index": 0,
               "summary_index": 0, "part": {"type": "summary_text", "text": "**Planning** the lookup"}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0,
               "summary_index": 1, "delta": "Tokyo first."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning(
            "gAAAAABo-full-encrypted-content",
            json!([{"type": "summary_text", "text": "**Planning** the lookup"},
                   {"type": "summary_text", "text": "Tokyo first."}]))}),
    ]);
    let (call, call_item) = call_events(
        1,
        "fc_1",
        "call_a",
        "get_weather",
        &["{\"city\":\"Tokyo\"}"],
    );
    sequence.extend(call);
    sequence.push(completed(
        "resp_1",
        json!([call_item]),
        usage_json(50, 0, 90, 64),
    ));
    sequence
}

#[tokio::test]
async fn reasoning_items_are_kept_and_sent_back_with_their_encrypted_content() {
    let follow_up = answered("Sunny.", usage_json(140, 128, 3, 0));
    let server = Server::start(vec![
        Reply::Sse(stream(reasoning_turn())),
        Reply::Sse(stream(follow_up)),
    ])
    .await;
    let model = model_for(&server, |config| {
        config.extra("reasoning", json!({"effort": "low", "summary": "auto"}))
    });
    let mut ask = request("Weather in Tokyo?");
    ask.tools = vec![weather_tool()].into();

    let streamed = events(&model, ask.clone()).await;
    let full_reasoning = json!({"type": "reasoning", "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "**Planning** the lookup"},
                    {"type": "summary_text", "text": "Tokyo first."}],
        "encrypted_content": "gAAAAABo-full-encrypted-content"});
    assert_eq!(
        streamed[..6],
        [
            start(),
            ModelEvent::ThinkingDelta("**Planning** ".into()),
            ModelEvent::ThinkingDelta("the lookup".into()),
            ModelEvent::ThinkingDelta("\n\n".into()),
            ModelEvent::ThinkingDelta("Tokyo first.".into()),
            block(full_reasoning.clone()),
        ]
    );
    assert_eq!(
        streamed.last(),
        Some(&done(StopReason::ToolUse, usage(50, 90, 0)))
    );
    let reply = assemble(&streamed);
    assert_eq!(
        reply.content[0],
        AssistantContent::Thinking {
            thinking: "**Planning** the lookup\n\nTokyo first.".into(),
            signature: None
        }
    );
    let call = reply.tool_calls().next().unwrap().clone();

    ask.messages.push(reply.into());
    ask.messages
        .push(ToolResultMessage::new(&call, AgentToolResult::text("Sunny")).into());
    let answer = events(&model, ask).await;
    assert_eq!(
        answer.last(),
        Some(&done(StopReason::Stop, usage(140, 3, 128)))
    );

    let sent = server.requests();
    assert_eq!(
        sent[1].body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Tokyo?"}]},
            full_reasoning,
            {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "get_weather", "arguments": "{\"city\":\"Tokyo\"}"},
            {"type": "function_call_output", "call_id": "call_a", "output": "Sunny"}
        ])
    );
    assert_eq!(sent[1].body["store"], false);
    assert_eq!(
        sent[1].body["include"],
        json!(["reasoning.encrypted_content"])
    );
    assert_sdk_accepts(&server);
}

#[tokio::test]
async fn a_refusal_ends_the_reply_with_its_text_as_the_error() {
    let refusal = "I'm sorry, I can't help with that.";
    let mut sequence = created("resp_1").to_vec();
    sequence.extend([
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message", "id": "msg_1", "status": "in_progress", "role": "assistant", "content": []}}),
        json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0,
               "part": {"type": "refusal", "refusal": ""}}),
        json!({"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
               "delta": "I'm sorry, "}),
        json!({"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
               "delta": "I can't help with that."}),
        json!({"type": "response.refusal.done", "item_id": "msg_1", "output_index": 0, "content_index": 0,
               "refusal": refusal}),
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                        "content": [{"type": "refusal", "refusal": refusal}]}}),
        completed("resp_1", json!([]), usage_json(10, 0, 9, 0)),
    ]);
    let server = Server::start(vec![Reply::Sse(stream(sequence))]).await;
    let events = events(&model_for(&server, |c| c), request("Something bad")).await;
    assert_eq!(
        last_error(&events),
        format!(
            "POST {}/v1/responses failed: the model refused to answer: {refusal}",
            server.root()
        )
    );
    assert_eq!(assemble(&events).stop_reason, StopReason::Error);
    assert_sdk_accepts(&server);
}

#[tokio::test]
async fn an_error_event_mid_stream_ends_the_reply_with_its_message() {
    let (message, _) = message_events(0, "msg_1", &["Par", "tial"]);
    let mut sequence = created("resp_1").to_vec();
    sequence.extend(message[..3].iter().cloned());
    sequence.push(json!({"type": "error", "code": "server_error",
        "message": "The server had an error while processing your request.", "param": null}));
    let server = Server::start(vec![Reply::Sse(stream(sequence))]).await;
    let events = events(&model_for(&server, |c| c), request("hi")).await;
    assert_eq!(
        last_error(&events),
        format!(
            "POST {}/v1/responses failed: the server reported an error in the stream: The server had an error \
             while processing your request.",
            server.root()
        )
    );
    // Exactly one error, last; the text before it stays in the reply.
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, ModelEvent::Error(_)))
            .count(),
        1
    );
    assert_eq!(assemble(&events).text_content(), "Par");
    assert_sdk_accepts(&server);
}

#[tokio::test]
async fn a_failed_response_ends_the_reply_with_its_error() {
    let mut sequence = created("resp_1").to_vec();
    let mut failed = response("resp_1", "failed", json!([]), Value::Null);
    failed["error"] =
        json!({"code": "rate_limit_exceeded", "message": "Rate limit reached for gpt-test."});
    sequence.push(json!({"type": "response.failed", "response": failed}));
    let server = Server::start(vec![Reply::Sse(stream(sequence))]).await;
    let events = events(&model_for(&server, |c| c), request("hi")).await;
    assert_eq!(
        last_error(&events),
        format!(
            "POST {}/v1/responses failed: the response failed: Rate limit reached for gpt-test. \
             (rate_limit_exceeded)",
            server.root()
        )
    );
}

#[tokio::test]
async fn a_cut_stream_is_an_error_that_says_how_far_it_got() {
    let (message, _) = message_events(0, "msg_1", &["Par", "tial", " answer"]);
    let mut sequence = created("resp_1").to_vec();
    sequence.extend(message[..4].iter().cloned());
    let server = Server::start(vec![Reply::SseCut(stream(sequence))]).await;
    let events = events(&model_for(&server, |c| c), request("hi")).await;
    let error = last_error(&events);
    let prefix = format!("POST {}/v1/responses failed: ", server.root());
    let reason = error
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{error}"));
    assert!(
        reason.starts_with("the stream broke off after 6 chunks")
            || reason.starts_with("the stream ended after 6 chunks before the reply was complete"),
        "{reason}"
    );
    assert_eq!(assemble(&events).text_content(), "Partial");
    // Cut after the first chunk: not sent again.
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_that_ends_without_response_completed_is_an_error() {
    let (message, _) = message_events(0, "msg_1", &["Hi"]);
    let mut sequence = created("resp_1").to_vec();
    sequence.extend(message);
    let server = Server::start(vec![Reply::Sse(stream(sequence))]).await;
    let events = events(&model_for(&server, |c| c), request("hi")).await;
    assert!(
        last_error(&events)
            .ends_with("the stream ended after 8 chunks before the reply was complete"),
        "{}",
        last_error(&events)
    );
}

// ---------------------------------------------------------------------------------------------------
// Bad and unusual input
// ---------------------------------------------------------------------------------------------------

#[tokio::test]
async fn unknown_event_types_are_skipped_and_hosted_tool_items_kept() {
    let search = json!({"type": "web_search_call", "id": "ws_1", "status": "completed",
                        "action": {"type": "search", "query": "weather Tokyo"}});
    let (message, message_item) = message_events(1, "msg_1", &["Sunny."]);
    let mut sequence = created("resp_1").to_vec();
    sequence.extend([
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}}),
        json!({"type": "response.web_search_call.searching", "item_id": "ws_1", "output_index": 0}),
        json!({"type": "response.something_new.delta", "item_id": "ws_1", "output_index": 0, "delta": {"x": 1}}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": search}),
    ]);
    sequence.extend(message);
    sequence.push(json!({"type": "response.output_text.annotation.added", "item_id": "msg_1", "output_index": 1,
        "content_index": 0, "annotation_index": 0, "annotation": {"type": "url_citation", "url": "https://example.com"}}));
    sequence.push(completed(
        "resp_1",
        json!([search, message_item]),
        usage_json(10, 0, 3, 0),
    ));
    let follow_up = answered("ok", usage_json(10, 0, 1, 0));
    let server = Server::start(vec![
        Reply::Sse(stream(sequence)),
        Reply::Sse(stream(follow_up)),
    ])
    .await;
    let model = model_for(&server, |c| c);
    let streamed = events(&model, request("Weather in Tokyo?")).await;
    assert_eq!(
        streamed,
        vec![
            start(),
            block(search.clone()),
            block(json!({"type": "message", "id": "msg_1"})),
            text("Sunny."),
            done(StopReason::Stop, usage(10, 3, 0)),
        ]
    );
    let mut ask = request("Weather in Tokyo?");
    ask.messages.push(assemble(&streamed).into());
    ask.messages.push(UserMessage::text("Thanks").into());
    events(&model, ask).await;
    assert_eq!(
        server.requests()[1].body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Tokyo?"}]},
            search,
            {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
             "content": [{"type": "output_text", "text": "Sunny.", "annotations": []}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks"}]}
        ])
    );
    assert_sdk_accepts(&server);
}

#[tokio::test]
async fn output_items_without_ids_are_followed_by_their_output_index() {
    let mut sequence = created("resp_1").to_vec();
    sequence.extend([
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Checking."}),
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]}}),
        json!({"type": "response.output_item.added", "output_index": 1,
               "item": {"type": "function_call", "name": "get_weather", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"city\":"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "\"Oslo\"}"}),
        json!({"type": "response.output_item.done", "output_index": 1,
               "item": {"type": "function_call", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}),
        completed("resp_1", json!([]), usage_json(10, 0, 3, 0)),
    ]);
    let server = Server::start(vec![
        Reply::Sse(stream(sequence)),
        Reply::Sse(stream(vec![completed("resp_2", json!([]), Value::Null)])),
    ])
    .await;
    let model = model_for(&server, |c| c);
    let streamed = events(&model, request("Weather in Oslo?")).await;
    assert_eq!(
        streamed,
        vec![
            start(),
            text("Checking."),
            call_start(0, "", "get_weather"),
            call_delta(0, "{\"city\":"),
            call_delta(0, "\"Oslo\"}"),
            ModelEvent::ToolCallEnd { index: 0 },
            done(StopReason::ToolUse, usage(10, 3, 0)),
        ]
    );
    let reply = assemble(&streamed);
    let call = reply.tool_calls().next().unwrap().clone();
    assert_eq!(call.id.len(), 36, "a fresh id: {}", call.id);
    assert_eq!(call.arguments, json!({"city": "Oslo"}));

    // It goes back without item ids, under the id the call was given.
    let mut ask = request("Weather in Oslo?");
    ask.messages.push(reply.into());
    ask.messages
        .push(ToolResultMessage::new(&call, AgentToolResult::text("Rain")).into());
    all_events(&model, ask).await;
    assert_eq!(
        server.requests()[1].body["input"].as_array().unwrap()[1..],
        [
            json!({"type": "message", "role": "assistant", "content": "Checking."}),
            json!({"type": "function_call", "call_id": call.id, "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}),
            json!({"type": "function_call_output", "call_id": call.id, "output": "Rain"}),
        ]
    );
    assert_sdk_accepts(&server);
}

#[tokio::test]
async fn a_reasoning_item_the_next_request_cannot_carry_is_left_out_with_its_ids() {
    // A server that ignores `include`: the reasoning item comes without `encrypted_content`.
    let mut sequence = created("resp_1").to_vec();
    let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": []});
    sequence.extend([
        json!({"type": "response.output_item.added", "output_index": 0, "item": reasoning}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning}),
    ]);
    let (call, call_item) =
        call_events(1, "fc_1", "call_a", "get_weather", &["{\"city\":\"Oslo\"}"]);
    sequence.extend(call);
    sequence.push(completed(
        "resp_1",
        json!([reasoning, call_item]),
        usage_json(10, 0, 3, 2),
    ));
    let server = Server::start(vec![
        Reply::Sse(stream(sequence)),
        Reply::Sse(stream(vec![completed("resp_2", json!([]), Value::Null)])),
    ])
    .await;
    let model = model_for(&server, |c| c);
    let reply = assemble(&events(&model, request("Weather in Oslo?")).await);
    let call = reply.tool_calls().next().unwrap().clone();
    let mut ask = request("Weather in Oslo?");
    ask.messages.push(reply.into());
    ask.messages
        .push(ToolResultMessage::new(&call, AgentToolResult::text("Rain")).into());
    all_events(&model, ask).await;
    // Neither the reasoning item (the server did not store it) nor the call's item id (the API refuses an
    // item whose reasoning item is missing) goes; the unit tests pin the warning's text.
    assert_eq!(
        server.requests()[1].body["input"].as_array().unwrap()[1..],
        [
            json!({"type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}),
            json!({"type": "function_call_output", "call_id": "call_a", "output": "Rain"}),
        ]
    );
    assert_sdk_accepts(&server);
}

#[tokio::test]
async fn chained_responses_send_only_the_new_messages() {
    let server = Server::start(vec![
        Reply::Sse(stream(reasoning_turn())),
        Reply::Sse(stream(vec![completed("resp_2", json!([]), Value::Null)])),
    ])
    .await;
    let model = model_for(&server, |config| config.chain_responses());
    let mut ask = request("Weather in Tokyo?");
    ask.tools = vec![weather_tool()].into();
    let streamed = events(&model, ask.clone()).await;
    assert_eq!(
        streamed[streamed.len() - 2],
        block(json!({"type": "response", "id": "resp_1"}))
    );
    let reply = assemble(&streamed);
    let call = reply.tool_calls().next().unwrap().clone();
    ask.messages.push(reply.into());
    ask.messages
        .push(ToolResultMessage::new(&call, AgentToolResult::text("Sunny")).into());
    all_events(&model, ask).await;
    let sent = server.requests();
    assert_eq!(sent[0].body["store"], true);
    assert_eq!(sent[0].body.get("previous_response_id"), None);
    assert_eq!(sent[1].body["previous_response_id"], "resp_1");
    assert_eq!(
        sent[1].body["input"],
        json!([{"type": "function_call_output", "call_id": "call_a", "output": "Sunny"}])
    );
    assert_sdk_accepts(&server);
}

#[tokio::test]
async fn a_server_that_answers_with_one_json_response_is_read_whole() {
    let output = json!([
        {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "text": "Hi.", "annotations": []}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "get_weather",
         "arguments": "{\"city\":\"Oslo\"}", "status": "completed"}
    ]);
    let server = Server::start(vec![Reply::Status {
        status: "200 OK",
        headers: vec![],
        content_type: "application/json",
        body: response("resp_1", "completed", output, usage_json(9, 0, 4, 0)).to_string(),
    }])
    .await;
    let events = events(&model_for(&server, |c| c), request("hi")).await;
    assert_eq!(
        events,
        vec![
            start(),
            block(json!({"type": "message", "id": "msg_1"})),
            text("Hi."),
            block(json!({"type": "function_call", "id": "fc_1", "call_id": "call_a"})),
            call_start(0, "call_a", "get_weather"),
            call_delta(0, "{\"city\":\"Oslo\"}"),
            ModelEvent::ToolCallEnd { index: 0 },
            done(StopReason::ToolUse, usage(9, 4, 0)),
        ]
    );
}

#[tokio::test]
async fn strict_tools_go_with_strict_true() {
    let server = Server::start(vec![Reply::Sse(stream(vec![completed(
        "resp_1",
        json!([]),
        Value::Null,
    )]))])
    .await;
    let model = model_for(&server, |config| {
        config.strict_tools(true).encrypted_reasoning(false)
    });
    let mut ask = request("hi");
    ask.tools = vec![weather_tool()].into();
    all_events(&model, ask).await;
    let body = &server.requests()[0].body;
    assert_eq!(body["tools"][0]["strict"], true);
    assert_eq!(
        body["tools"][0]["parameters"]["additionalProperties"],
        false
    );
    assert_eq!(body.get("include"), None);
    assert_sdk_accepts(&server);
}

#[tokio::test]
async fn server_errors_are_retried_then_reported_with_the_server_message() {
    let server = Server::start(vec![Reply::Status {
        status: "500 Internal Server Error",
        headers: vec![],
        content_type: "application/json",
        body: json!({"error": {"message": "The server had an error", "type": "server_error"}})
            .to_string(),
    }])
    .await;
    let events = events(&model_for(&server, |c| c), request("hi")).await;
    assert_eq!(
        last_error(&events),
        format!(
            "POST {}/v1/responses failed: HTTP 500 Internal Server Error: The server had an error (3 attempts)",
            server.root()
        )
    );
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn the_sdk_check_refuses_a_request_the_sdk_does_not_accept() {
    // The check itself can fail: a function tool without `strict` (which the SDK's type requires), and a
    // key the SDK does not know.
    let refused = std::panic::catch_unwind(|| {
        assert_sdk_accepts_bodies(
            Request::Responses,
            &[json!({"model": "m", "stream": true, "input": [],
            "tools": [{"type": "function", "name": "f", "parameters": {}}]})],
        )
    });
    assert!(refused.is_err());
    let refused = std::panic::catch_unwind(|| {
        assert_sdk_accepts_bodies(
            Request::Responses,
            &[json!({"model": "m", "stream": true, "input": [], "stream_options": {"x": 1}})],
        )
    });
    assert!(refused.is_err());
}

#[test]
fn yiem_provider_openai_responses_selects_this_client() {
    let selected = yiem_core::llm::model_from_lookup(|name| match name {
        "YIEM_PROVIDER" => Some("openai-responses".into()),
        "OPENAI_API_KEY" => Some("sk-test".into()),
        _ => None,
    })
    .unwrap()
    .unwrap();
    assert_eq!(selected.model.name(), "gpt-5-mini");
    assert_eq!(
        selected.description,
        "gpt-5-mini at https://api.openai.com/v1/responses (Responses API)"
    );
    let local = yiem_core::llm::model_from_lookup(|name| match name {
        "YIEM_PROVIDER" => Some("openai-responses".into()),
        "YIEM_BASE_URL" => Some("http://127.0.0.1:8000/v1".into()),
        "YIEM_MODEL" => Some("gpt-oss-20b".into()),
        _ => None,
    })
    .unwrap()
    .unwrap();
    assert_eq!(
        local.description,
        "gpt-oss-20b at http://127.0.0.1:8000/v1/responses (Responses API)"
    );
    let error = yiem_core::llm::model_from_lookup(|name| {
        (name == "YIEM_PROVIDER").then(|| "openai-responses".into())
    })
    .err()
    .unwrap();
    assert_eq!(
        error.to_string(),
        "`OPENAI_API_KEY` is not set: set it to your API key"
    );
}

/// A tool `name` that answers "`name` ran for <customer>".
fn invoice_tool(name: &str) -> yiem_core::tool::ToolBuilder {
    let answer = format!("{name} ran");
    yiem_core::tool::AgentTool::builder(name)
        .description(format!("{name}, as its name says."))
        .input_schema(json!({"type": "object", "properties": {"customer": {"type": "string"}}}))
        .handler(move |_ctx: yiem_core::tool::ToolContext, args: Value| {
            let text = format!("{answer} for {}", args["customer"]);
            async move { text }
        })
}

/// The texts of an outcome's tool results, in order.
fn results_of(outcome: &yiem_core::agent::RunOutcome) -> Vec<String> {
    outcome
        .messages
        .iter()
        .filter_map(|message| match message {
            yiem_core::message::AgentMessage::ToolResult(result) => {
                Some(result.result.text_content())
            }
            _ => None,
        })
        .collect()
}

/// A server whose first reply is `output` (events, then the completed response's items) and whose
/// second is the text "Sent.".
async fn first_then_sent(events: Vec<Value>, output: Value) -> Server {
    let mut sequence = created("resp_1").to_vec();
    sequence.extend(events);
    sequence.push(completed("resp_1", output, usage_json(50, 0, 12, 0)));
    let follow_up = answered("Sent.", usage_json(90, 0, 2, 0));
    Server::start(vec![
        Reply::Sse(stream(sequence)),
        Reply::Sse(stream(follow_up)),
    ])
    .await
}

#[tokio::test]
async fn tool_search_sends_deferred_tools_marked_and_the_tool_it_found_runs_through_the_pipeline() {
    use yiem_core::{
        agent::{Agent, AgentSettings, RunStop},
        store::ToolStore,
    };
    let store = ToolStore::new("catalog");
    store.register(weather_tool()).unwrap();
    store
        .register(invoice_tool("search_tools").build().unwrap())
        .unwrap();
    for name in ["send_invoice", "void_invoice"] {
        store
            .register(invoice_tool(name).defer_loading().build().unwrap())
            .unwrap();
    }
    // OpenAI's hosted search: a `tool_search_call` item, a `tool_search_output` item with the loaded
    // definitions, then the call of the tool found.
    let search_call = json!({"type": "tool_search_call", "id": "tsc_1", "call_id": null, "execution": "server",
        "status": "completed", "arguments": {"query": "send an invoice"}});
    let search_output = json!({"type": "tool_search_output", "id": "tso_1", "call_id": null, "execution": "server",
        "status": "completed", "tools": [{"type": "function", "name": "send_invoice",
            "description": "send_invoice, as its name says.", "defer_loading": true,
            "parameters": {"type": "object", "properties": {"customer": {"type": "string"}}}, "strict": false}]});
    let (call, call_item) = call_events(
        2,
        "fc_1",
        "call_a",
        "send_invoice",
        &["{\"customer\":\"ada\"}"],
    );
    let mut events = Vec::new();
    for (index, item) in [(0, &search_call), (1, &search_output)] {
        events.push(
            json!({"type": "response.output_item.added", "output_index": index, "item": item}),
        );
        events.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
    }
    events.extend(call);
    let server = first_then_sent(events, json!([search_call, search_output, call_item])).await;
    // A model whose name does not tell: OpenAI's search asked for (GPT-5.4 and later get it by default).
    let agent = Agent::builder()
        .model(model_for(&server, |config| {
            config.tool_search(yiem_core::catalog::ToolSearchMode::Native)
        }))
        .tools(store)
        .build();
    let outcome = agent.prompt("Bill Ada.").await;
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(results_of(&outcome), ["send_invoice ran for \"ada\""]);
    assert_eq!(agent.run_state().loaded_tools(), ["send_invoice"]);

    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    for body in &bodies {
        let tools = body["tools"].as_array().unwrap();
        let kinds: Vec<String> = tools
            .iter()
            .map(|tool| {
                tool["name"]
                    .as_str()
                    .unwrap_or(tool["type"].as_str().unwrap())
                    .to_owned()
            })
            .collect();
        assert_eq!(
            kinds,
            ["get_weather", "tool_search", "send_invoice", "void_invoice"]
        );
        assert_eq!(tools[0].get("defer_loading"), None);
        assert_eq!(tools[2]["defer_loading"], true);
        assert_eq!(tools[3]["defer_loading"], true);
    }
    // The search's items go back as they came, before the call and its output.
    let input = bodies[1]["input"].as_array().unwrap();
    assert_eq!(input[1], search_call);
    assert_eq!(input[2], search_output);
    assert_eq!(input[3]["type"], "function_call");
    assert_eq!(input[4]["type"], "function_call_output");
    assert_sdk_accepts(&server);
}

#[tokio::test]
async fn programmatic_calling_sends_the_tool_and_allowed_callers_and_a_call_from_a_program_runs_through_the_pipeline()
 {
    use std::sync::{Arc, Mutex};
    use yiem_core::llm::ProgrammaticCalling;
    use yiem_core::{
        agent::{Agent, AgentSettings, RunStop},
        exec::{ToolCaller, ToolHooks},
        message::AgentMessage,
        store::ToolStore,
    };
    let store = ToolStore::new("weather");
    store.register(weather_tool()).unwrap();
    // The program item, then the call it made (`caller: {"type": "program", "caller_id"}`).
    let program = json!({"type": "program", "id": "prog_1", "call_id": "call_prog",
        "code": "console.log(await tools.get_weather({city: 'Tokyo'}))", "fingerprint": "fp_1"});
    let caller = json!({"type": "program", "caller_id": "call_prog"});
    let (mut call, mut call_item) = call_events(
        1,
        "fc_1",
        "call_a",
        "get_weather",
        &["{\"city\":\"Tokyo\"}"],
    );
    for event in &mut call {
        if event["item"]["type"] == "function_call" {
            event["item"]["caller"] = caller.clone();
        }
    }
    call_item["caller"] = caller.clone();
    let mut sequence = created("resp_1").to_vec();
    sequence
        .push(json!({"type": "response.output_item.added", "output_index": 0, "item": program}));
    sequence.push(json!({"type": "response.output_item.done", "output_index": 0, "item": program}));
    sequence.extend(call);
    sequence.push(completed(
        "resp_1",
        json!([program, call_item]),
        usage_json(50, 0, 12, 0),
    ));
    let follow_up = answered("Sunny.", usage_json(90, 0, 2, 0));
    let server = Server::start(vec![
        Reply::Sse(stream(sequence)),
        Reply::Sse(stream(follow_up)),
    ])
    .await;
    let seen: Arc<Mutex<Vec<Option<ToolCaller>>>> = Arc::default();
    let hooks = {
        let seen = Arc::clone(&seen);
        ToolHooks::new().before_tool_call(move |ctx| {
            seen.lock().unwrap().push(ctx.call.caller.clone());
            async { None }
        })
    };
    let agent = Agent::builder()
        .model(model_for(&server, |config| {
            config.programmatic_calling(ProgrammaticCalling::new())
        }))
        .tools(store)
        .tool_hooks(hooks)
        .build();
    let outcome = agent.prompt("Weather in Tokyo?").await;
    assert_eq!(outcome.stop, RunStop::Finished);

    // The call the program made ran through the pipeline, its hooks seeing who made it.
    let expected = ToolCaller::new("openai-responses", "program", "call_prog");
    assert_eq!(*seen.lock().unwrap(), [Some(expected.clone())]);
    let AgentMessage::Assistant(reply) = &outcome.messages[1] else {
        panic!("{:?}", outcome.messages[1]);
    };
    assert_eq!(reply.tool_calls().next().unwrap().caller, Some(expected));
    let AgentMessage::ToolResult(result) = &outcome.messages[2] else {
        panic!("{:?}", outcome.messages[2]);
    };
    assert_eq!(result.result.text_content(), "sunny");

    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 2);
    for body in &bodies {
        assert_eq!(body["tools"][0]["name"], "get_weather");
        assert_eq!(
            body["tools"][0]["allowed_callers"],
            json!(["direct", "programmatic"])
        );
        assert_eq!(
            body["tools"][1],
            json!({"type": "programmatic_tool_calling"})
        );
        assert_eq!(body["tools"].as_array().unwrap().len(), 2);
    }
    // The program item goes back as it came, then the call with its caller, then its output.
    let input = bodies[1]["input"].as_array().unwrap();
    assert_eq!(input[1], program);
    assert_eq!(input[2]["type"], "function_call");
    assert_eq!(input[2]["call_id"], "call_a");
    assert_eq!(input[2]["caller"], caller);
    assert_eq!(input[3]["type"], "function_call_output");
    assert_eq!(input[3]["call_id"], "call_a");
    assert_sdk_accepts(&server);
}

#[test]
fn a_call_from_a_program_round_trips_through_a_saved_run_and_a_direct_one_has_no_caller() {
    use yiem_core::{exec::ToolCaller, message::AgentMessage};
    let call = |call_id: &str, caller: Value| {
        json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
               "name": "get_weather", "arguments": "{\"city\":\"Lima\"}", "status": "completed",
               "caller": caller})
    };
    let output = json!([
        call(
            "call_a",
            json!({"type": "program", "caller_id": "call_prog"})
        ),
        call("call_b", json!({"type": "direct"})),
    ]);
    let body = json!({"type": "response.completed",
        "response": response("resp_1", "completed", output, usage_json(5, 0, 5, 0))});
    let events =
        yiem_core::llm::parse_responses_events_for_fuzzing([("", body.to_string().as_str())]);
    let reply = assemble(&events);
    let calls: Vec<&ToolCall> = reply.tool_calls().collect();
    assert_eq!(calls.len(), 2, "{events:?}");
    assert_eq!(
        calls[0].caller,
        Some(ToolCaller::new("openai-responses", "program", "call_prog"))
    );
    assert_eq!(
        calls[1].caller, None,
        "a direct caller is the model's own call"
    );
    let saved = serde_json::to_string(&AgentMessage::Assistant(reply.clone())).unwrap();
    let AgentMessage::Assistant(restored) = serde_json::from_str(&saved).unwrap() else {
        panic!("{saved}");
    };
    assert_eq!(restored, reply);
}

// ---------------------------------------------------------------------------------------------------
// Custom tools: free text in a grammar's language
// ---------------------------------------------------------------------------------------------------

const SQL_GRAMMAR: &str =
    "start: \"SELECT \" COLUMNS \" FROM \" TABLE\nCOLUMNS: /[a-z_, ]+/\nTABLE: /[a-z_\"]+/";

/// A tool whose input is a query in a lark grammar.
fn sql_tool() -> yiem_core::tool::AgentTool {
    yiem_core::tool::AgentTool::builder("run_sql")
        .description("Run a read-only SQL query.")
        .grammar(yiem_core::tool::GrammarSyntax::Lark, SQL_GRAMMAR)
        .handler(
            |_ctx: yiem_core::tool::ToolContext, args: Value| async move {
                format!("ran {}", args["input"].as_str().unwrap_or_default())
            },
        )
        .build()
        .unwrap()
}

/// The events of a custom tool call item, as OpenAI documents them: `response.output_item.added` with an
/// empty `input`, `response.custom_tool_call_input.delta`s, `response.custom_tool_call_input.done`, then
/// `response.output_item.done` with the whole input. `id` and `call_id` are left out when empty.
fn custom_call_events(
    index: u64,
    id: &str,
    call_id: &str,
    name: &str,
    pieces: &[&str],
) -> (Vec<Value>, Value) {
    let input: String = pieces.concat();
    let item = |input: &str| {
        let mut item =
            json!({"type": "custom_tool_call", "call_id": call_id, "name": name, "input": input});
        if id.is_empty() {
            item.as_object_mut().unwrap().remove("id");
        } else {
            item["id"] = json!(id);
        }
        if call_id.is_empty() {
            item.as_object_mut().unwrap().remove("call_id");
        }
        item
    };
    let mut events = vec![
        json!({"type": "response.output_item.added", "output_index": index,
                                 "item": item("")}),
    ];
    for piece in pieces {
        events.push(
            json!({"type": "response.custom_tool_call_input.delta", "item_id": id,
                           "output_index": index, "delta": piece}),
        );
    }
    let done_item = item(&input);
    events.extend([
        json!({"type": "response.custom_tool_call_input.done", "item_id": id, "output_index": index,
               "input": input}),
        json!({"type": "response.output_item.done", "output_index": index, "item": done_item}),
    ]);
    for event in &mut events {
        if id.is_empty() {
            event.as_object_mut().unwrap().remove("item_id");
        }
    }
    (events, done_item)
}

#[tokio::test]
async fn a_grammar_tool_goes_as_a_custom_tool_and_its_call_streams_its_text_and_goes_back_as_a_custom_tool_call()
 {
    let query = "SELECT name FROM \"users\"\n";
    let (call, call_item) = custom_call_events(
        0,
        "ctc_1",
        "call_sql",
        "run_sql",
        &["SELECT na", "me FROM \"users\"\n"],
    );
    let mut sequence = created("resp_1").to_vec();
    sequence.extend(call);
    sequence.push(completed(
        "resp_1",
        json!([call_item]),
        usage_json(60, 0, 12, 0),
    ));
    let follow_up = answered("Two users.", usage_json(90, 0, 4, 0));
    let server = Server::start(vec![
        Reply::Sse(stream(sequence)),
        Reply::Sse(stream(follow_up)),
    ])
    .await;
    let model = model_for(&server, |config| config);
    let mut ask = request("Who are the users?");
    ask.tools = vec![sql_tool()].into();

    let streamed = all_events(&model, ask.clone()).await;
    assert_eq!(
        streamed,
        vec![
            start(),
            block(json!({"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_sql"})),
            call_start(0, "call_sql", "run_sql"),
            call_delta(0, "{\"input\":\"SELECT na"),
            ModelEvent::ToolCallArguments {
                index: 0,
                arguments: json!({"input": "SELECT na"})
            },
            call_delta(0, "me FROM \\\"users\\\"\\n"),
            ModelEvent::ToolCallArguments {
                index: 0,
                arguments: json!({"input": query})
            },
            call_delta(0, "\"}"),
            ModelEvent::ToolCallArguments {
                index: 0,
                arguments: json!({"input": query})
            },
            ModelEvent::ToolCallEnd { index: 0 },
            done(StopReason::ToolUse, usage(60, 12, 0)),
        ]
    );
    let reply = assemble(&streamed);
    let calls: Vec<ToolCall> = reply.tool_calls().cloned().collect();
    assert_eq!(
        calls,
        [ToolCall::new(
            "call_sql",
            "run_sql",
            json!({"input": query})
        )]
    );

    // The call runs through the pipeline like any other: its arguments are `{"input": <text>}`.
    let result = sql_tool()
        .execute("call_sql", calls[0].arguments.clone())
        .await;
    assert_eq!(result.text_content(), format!("ran {query}"));
    ask.messages.push(reply.into());
    ask.messages
        .push(ToolResultMessage::new(&calls[0], AgentToolResult::text("2 rows")).into());
    let answer = assemble(&events(&model, ask).await);
    assert_eq!(answer.text_content(), "Two users.");

    let sent = server.requests();
    assert_eq!(
        sent[0].body["tools"],
        json!([{"type": "custom", "name": "run_sql", "description": "Run a read-only SQL query.",
                "format": {"type": "grammar", "syntax": "lark", "definition": SQL_GRAMMAR}}])
    );
    assert_eq!(
        sent[1].body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Who are the users?"}]},
            {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_sql", "name": "run_sql", "input": query},
            {"type": "custom_tool_call_output", "call_id": "call_sql", "output": "2 rows"}
        ])
    );
    assert_sdk_accepts(&server);
}

#[tokio::test]
async fn a_custom_tool_call_without_ids_amid_unknown_events_gets_a_fresh_id_and_still_goes_back_as_custom()
 {
    let (call, call_item) = custom_call_events(0, "", "", "run_sql", &["SELECT a FROM t"]);
    let mut sequence = created("resp_1").to_vec();
    sequence.push(json!({"type": "response.custom_tool_call_input.annotated", "output_index": 0}));
    sequence.extend(call);
    sequence.push(json!({"type": "response.something_new", "detail": {"x": 1}}));
    sequence.push(completed(
        "resp_1",
        json!([call_item]),
        usage_json(5, 0, 5, 0),
    ));
    let follow_up = answered("Done.", usage_json(9, 0, 1, 0));
    let server = Server::start(vec![
        Reply::Sse(stream(sequence)),
        Reply::Sse(stream(follow_up)),
    ])
    .await;
    let model = model_for(&server, |config| config);
    let mut ask = request("Query t.");
    ask.tools = vec![sql_tool()].into();

    let streamed = events(&model, ask.clone()).await;
    assert_eq!(
        streamed,
        vec![
            start(),
            block(json!({"type": "custom_tool_call", "call_id": ""})),
            call_start(0, "", "run_sql"),
            call_delta(0, "{\"input\":\"SELECT a FROM t"),
            call_delta(0, "\"}"),
            ModelEvent::ToolCallEnd { index: 0 },
            done(StopReason::ToolUse, usage(5, 5, 0)),
        ]
    );
    let reply = assemble(&streamed);
    let call = reply.tool_calls().next().unwrap().clone();
    assert!(
        !call.id.is_empty(),
        "a call without a call_id gets a fresh id"
    );
    assert_eq!(call.arguments, json!({"input": "SELECT a FROM t"}));

    ask.messages.push(reply.into());
    ask.messages
        .push(ToolResultMessage::new(&call, AgentToolResult::text("1 row")).into());
    assemble(&events(&model, ask).await);
    let sent = server.requests();
    assert_eq!(
        sent[1].body["input"][1],
        json!({"type": "custom_tool_call", "call_id": call.id, "name": "run_sql", "input": "SELECT a FROM t"})
    );
    assert_eq!(
        sent[1].body["input"][2],
        json!({"type": "custom_tool_call_output", "call_id": call.id, "output": "1 row"})
    );
    assert_sdk_accepts(&server);
}

#[tokio::test]
async fn a_custom_tool_call_in_a_whole_response_is_read_and_a_function_delta_for_it_is_an_error() {
    let whole = response(
        "resp_1",
        "completed",
        json!([{"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "run_sql",
                "input": "SELECT a FROM t"}]),
        usage_json(5, 0, 5, 0),
    );
    let server = Server::start(vec![Reply::Status {
        status: "200 OK",
        headers: vec![],
        content_type: "application/json",
        body: whole.to_string(),
    }])
    .await;
    let model = model_for(&server, |config| config);
    let reply = assemble(&events(&model, request("Query t.")).await);
    assert_eq!(
        reply.tool_calls().cloned().collect::<Vec<_>>(),
        [ToolCall::new(
            "call_1",
            "run_sql",
            json!({"input": "SELECT a FROM t"})
        )]
    );

    // A function call's arguments for a custom tool's call: the stream is wrong, said plainly.
    let (call, _) = custom_call_events(0, "ctc_1", "call_1", "run_sql", &[]);
    let mut sequence = created("resp_1").to_vec();
    sequence.push(call[0].clone());
    sequence.push(
        json!({"type": "response.function_call_arguments.delta", "item_id": "ctc_1",
                         "output_index": 0, "delta": "{}"}),
    );
    let server = Server::start(vec![Reply::Sse(stream(sequence))]).await;
    let model = model_for(&server, |config| config.retry(RetryPolicy::none()));
    let events = events(&model, request("Query t.")).await;
    assert!(
        last_error(&events).ends_with(
            "event 4: `response.function_call_arguments.delta` for output item `ctc_1`, which is not a \
             function call"
        ),
        "{}",
        last_error(&events)
    );
}

#[tokio::test]
async fn a_tool_choice_of_a_grammar_tool_names_it_as_custom() {
    let server = Server::start(vec![]).await;
    let model = model_for(&server, |config| config);
    let mut ask = request("Query t.");
    ask.tools = vec![sql_tool(), weather_tool()].into();
    ask.tool_choice = Some(yiem_core::llm::ToolChoice::Tool("run_sql".into()));
    let body = model.request_body(&ask).unwrap();
    assert_eq!(
        body["tool_choice"],
        json!({"type": "custom", "name": "run_sql"})
    );
    ask.tool_choice = Some(yiem_core::llm::ToolChoice::Allowed {
        tools: vec!["run_sql".into(), "get_weather".into()],
        required: true,
    });
    let allowed = model.request_body(&ask).unwrap();
    assert_eq!(
        allowed["tool_choice"]["tools"],
        json!([{"type": "custom", "name": "run_sql"}, {"type": "function", "name": "get_weather"}])
    );
    assert_sdk_accepts_bodies(Request::Responses, &[body, allowed]);
}

#[test]
fn a_custom_tool_call_round_trips_through_a_saved_message_and_still_goes_back_as_custom() {
    use yiem_core::message::AgentMessage;
    let output = json!([{"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1",
                         "name": "run_sql", "input": "SELECT a FROM t"}]);
    let body = json!({"type": "response.completed",
        "response": response("resp_1", "completed", output, usage_json(5, 0, 5, 0))});
    let events =
        yiem_core::llm::parse_responses_events_for_fuzzing([("", body.to_string().as_str())]);
    let reply = assemble(&events);
    let saved = serde_json::to_string(&AgentMessage::Assistant(reply.clone())).unwrap();
    let AgentMessage::Assistant(restored) = serde_json::from_str(&saved).unwrap() else {
        panic!("{saved}");
    };
    assert_eq!(restored, reply);
    // Without the tool in the request (the bare conversation), the item's marker says what it was.
    let call = restored.tool_calls().next().unwrap().clone();
    let result = ToolResultMessage::new(&call, AgentToolResult::text("1 row"));
    let input = yiem_core::llm::to_responses_input(&[restored.into(), result.into()]);
    assert_eq!(
        Value::Array(input),
        json!([
            {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "run_sql",
             "input": "SELECT a FROM t"},
            {"type": "custom_tool_call_output", "call_id": "call_1", "output": "1 row"}
        ])
    );
}

#[tokio::test]
async fn an_mcp_servers_deferred_tools_go_as_one_namespace_and_a_call_in_it_goes_back_naming_it() {
    use yiem_core::{
        agent::{Agent, AgentSettings, RunStop},
        store::ToolStore,
        tool::ToolNamespace,
    };
    let store = ToolStore::new("catalog");
    store.register(weather_tool()).unwrap();
    let billing = ToolNamespace::new("billing", "Invoices: send and void them.");
    for name in ["send_invoice", "void_invoice"] {
        let tool = invoice_tool(name)
            .namespace(billing.clone())
            .defer_loading();
        store.register(tool.build().unwrap()).unwrap();
    }
    // The model calls a tool of the namespace: its item names the namespace.
    let (call, mut call_item) = call_events(
        0,
        "fc_1",
        "call_a",
        "send_invoice",
        &["{\"customer\":\"ada\"}"],
    );
    let call: Vec<Value> = call
        .into_iter()
        .map(|mut event| {
            if let Some(item) = event.get_mut("item") {
                item["namespace"] = json!("billing");
            }
            event
        })
        .collect();
    call_item["namespace"] = json!("billing");
    let server = first_then_sent(call, json!([call_item])).await;
    let agent = Agent::builder()
        .model(model_for(&server, |config| {
            config.tool_search(yiem_core::catalog::ToolSearchMode::Native)
        }))
        .tools(store)
        .build();
    let outcome = agent.prompt("Bill Ada.").await;
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(results_of(&outcome), ["send_invoice ran for \"ada\""]);

    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    let tools = bodies[0]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 3, "{tools:?}");
    assert_eq!(tools[0]["name"], "get_weather");
    assert_eq!(tools[1], json!({"type": "tool_search"}));
    assert_eq!(tools[2]["type"], "namespace");
    assert_eq!(tools[2]["name"], "billing");
    assert_eq!(tools[2]["description"], "Invoices: send and void them.");
    let members = common::tool_names(&tools[2]["tools"]);
    assert_eq!(members, ["send_invoice", "void_invoice"]);
    assert_eq!(tools[2]["tools"][0]["defer_loading"], true);
    // The call goes back naming its namespace.
    let input = bodies[1]["input"].as_array().unwrap();
    let sent_call = input
        .iter()
        .find(|item| item["type"] == "function_call")
        .unwrap();
    assert_eq!(sent_call["namespace"], "billing");
    assert_eq!(sent_call["name"], "send_invoice");
    assert_sdk_accepts(&server);
}

#[test]
fn a_code_only_tool_is_offered_to_programs_alone_and_not_sent_without_programmatic_calling() {
    use yiem_core::llm::ProgrammaticCalling;
    let lookup = yiem_core::tool::AgentTool::builder("lookup")
        .description("Looks a record up.")
        .input_schema(json!({"type": "object", "properties": {"id": {"type": "integer"}}}))
        .code_only()
        .handler(|_ctx: yiem_core::tool::ToolContext, _args: Value| async move { "found" })
        .build()
        .unwrap();
    let mut request = request("Look record 7 up.");
    request.tools = vec![weather_tool(), lookup].into();
    let body_of = |config: OpenAiResponsesConfig| -> Value {
        OpenAiResponsesModel::new(config.api_key("sk-test"))
            .unwrap()
            .request_body(&request)
            .unwrap()
    };
    let config = || OpenAiResponsesConfig::new("gpt-test");
    let with = body_of(config().programmatic_calling(ProgrammaticCalling::new()));
    assert_eq!(with["tools"][0]["name"], "get_weather");
    assert_eq!(
        with["tools"][0]["allowed_callers"],
        json!(["direct", "programmatic"])
    );
    assert_eq!(with["tools"][1]["name"], "lookup");
    assert_eq!(with["tools"][1]["allowed_callers"], json!(["programmatic"]));
    assert_eq!(
        with["tools"][2],
        json!({"type": "programmatic_tool_calling"})
    );
    // Without programmatic calling the model could only call it directly, which is refused.
    let without = body_of(config());
    let names = common::tool_names(&without["tools"]);
    assert_eq!(names, ["get_weather"]);
    assert_sdk_accepts_bodies(Request::Responses, &[with, without]);
}
