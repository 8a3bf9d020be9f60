//! `AnthropicModel` against a real HTTP server on 127.0.0.1 replaying the event shapes of Anthropic's
//! "Streaming Messages" documentation (`message_start`, `content_block_*` with `text_delta`,
//! `input_json_delta`, `thinking_delta`, `signature_delta`, `message_delta`, `message_stop`, `ping`,
//! `error`), asserting the events streamed and the requests sent.

mod common;

use std::time::Duration;

use common::{
    Reply, Server, all_events, assemble, done, events, last_error, named, usage, weather_tool,
};
use serde_json::{Value, json};
use yiem_core::{
    exec::ToolCall,
    llm::{AnthropicConfig, AnthropicModel, ModelEvent, ModelRequest, RetryPolicy},
    message::{AssistantContent, StopReason, ToolResultMessage, UserMessage},
    tool::{AgentTool, AgentToolResult},
};

fn model(server: &Server) -> AnthropicModel {
    let config = AnthropicConfig::new("sk-ant-test", "claude-test")
        .base_url(server.root())
        .retry(RetryPolicy::new(
            3,
            Duration::from_millis(1),
            Duration::from_millis(10),
        ));
    AnthropicModel::new(config).unwrap()
}

fn endpoint(server: &Server) -> String {
    format!("POST {}/v1/messages", server.root())
}

fn request(text: &str) -> ModelRequest {
    ModelRequest::new("You are terse.", vec![UserMessage::text(text).into()])
}

fn message_start(input_tokens: u64) -> String {
    named(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message", "role": "assistant",
            "content": [], "model": "claude-test-20250514", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1}
        }}),
    )
}

fn block_start(index: u64, block: Value) -> String {
    named(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn delta(index: u64, delta: Value) -> String {
    named(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn block_stop(index: u64) -> String {
    named(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

fn message_delta(stop_reason: &str, output_tokens: u64) -> String {
    named(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": output_tokens}}),
    )
}

fn message_stop() -> String {
    named("message_stop", json!({"type": "message_stop"}))
}

fn ping() -> String {
    named("ping", json!({"type": "ping"}))
}

fn text_stream(text: &str) -> Reply {
    Reply::Sse(vec![
        message_start(25),
        block_start(0, json!({"type": "text", "text": ""})),
        ping(),
        delta(0, json!({"type": "text_delta", "text": text})),
        block_stop(0),
        message_delta("end_turn", 15),
        message_stop(),
    ])
}

fn start() -> ModelEvent {
    ModelEvent::Start {
        model: "claude-test".into(),
    }
}

#[tokio::test]
async fn text_with_pings_and_usage_streams_in_order_with_the_api_headers() {
    let server = Server::start(vec![Reply::Sse(vec![
        message_start(25),
        block_start(0, json!({"type": "text", "text": ""})),
        ping(),
        delta(0, json!({"type": "text_delta", "text": "Hello"})),
        delta(0, json!({"type": "text_delta", "text": "!"})),
        block_stop(0),
        message_delta("end_turn", 15),
        message_stop(),
    ])])
    .await;
    assert_eq!(
        events(&model(&server), request("hi")).await,
        vec![
            start(),
            ModelEvent::TextDelta("Hello".into()),
            ModelEvent::TextDelta("!".into()),
            done(StopReason::Stop, usage(25, 15)),
        ]
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.request_line, "POST /v1/messages HTTP/1.1");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-test",
            "max_tokens": 4096,
            "system": "You are terse.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "stream": true
        })
    );
}

#[tokio::test]
async fn thinking_and_two_tool_calls_split_across_chunks_then_the_round_trip_sends_them_back() {
    // One SSE event split across two HTTP chunks, as a proxy may write it.
    let split = delta(
        2,
        json!({"type": "input_json_delta", "partial_json": "\"Tok"}),
    );
    let (head, tail) = split.split_at(30);
    let server = Server::start(vec![
        Reply::Sse(vec![
            message_start(472),
            block_start(0, json!({"type": "thinking", "thinking": ""})),
            delta(
                0,
                json!({"type": "thinking_delta", "thinking": "I need the weather "}),
            ),
            delta(
                0,
                json!({"type": "thinking_delta", "thinking": "in two cities."}),
            ),
            delta(
                0,
                json!({"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}),
            ),
            block_stop(0),
            block_start(1, json!({"type": "text", "text": ""})),
            delta(1, json!({"type": "text_delta", "text": "Checking both."})),
            block_stop(1),
            block_start(
                2,
                json!({"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {}}),
            ),
            delta(2, json!({"type": "input_json_delta", "partial_json": ""})),
            delta(
                2,
                json!({"type": "input_json_delta", "partial_json": "{\"city\": "}),
            ),
            head.to_owned(),
            tail.to_owned(),
            delta(
                2,
                json!({"type": "input_json_delta", "partial_json": "yo\"}"}),
            ),
            block_stop(2),
            block_start(
                3,
                json!({"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {}}),
            ),
            delta(
                3,
                json!({"type": "input_json_delta", "partial_json": "{\"city\": \"Paris\"}"}),
            ),
            block_stop(3),
            message_delta("tool_use", 89),
            message_stop(),
        ]),
        text_stream("Sunny in Tokyo; Paris is down."),
    ])
    .await;
    let model = model(&server);
    let mut first = request("Weather in Tokyo and Paris?");
    first.tools = vec![weather_tool()].into();
    let all = all_events(&model, first.clone()).await;
    let partials: Vec<&Value> = all
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ToolCallArguments {
                index: 0,
                arguments,
            } => Some(arguments),
            _ => None,
        })
        .collect();
    assert_eq!(
        partials,
        [
            &json!({}),
            &json!({"city": "Tok"}),
            &json!({"city": "Tokyo"})
        ]
    );
    let streamed: Vec<ModelEvent> = all
        .into_iter()
        .filter(|event| !matches!(event, ModelEvent::ToolCallArguments { .. }))
        .collect();
    assert_eq!(
        streamed,
        vec![
            start(),
            ModelEvent::ThinkingDelta("I need the weather ".into()),
            ModelEvent::ThinkingDelta("in two cities.".into()),
            ModelEvent::ThinkingSignature("EqQBCgIYAhIM1gbcDa9GJwZA2b3h".into()),
            ModelEvent::TextDelta("Checking both.".into()),
            ModelEvent::ToolCallStart {
                index: 0,
                id: "toolu_01".into(),
                name: "get_weather".into()
            },
            ModelEvent::ToolCallDelta {
                index: 0,
                arguments: "{\"city\": ".into()
            },
            ModelEvent::ToolCallDelta {
                index: 0,
                arguments: "\"Tok".into()
            },
            ModelEvent::ToolCallDelta {
                index: 0,
                arguments: "yo\"}".into()
            },
            ModelEvent::ToolCallEnd { index: 0 },
            ModelEvent::ToolCallStart {
                index: 1,
                id: "toolu_02".into(),
                name: "get_weather".into()
            },
            ModelEvent::ToolCallDelta {
                index: 1,
                arguments: "{\"city\": \"Paris\"}".into()
            },
            ModelEvent::ToolCallEnd { index: 1 },
            done(StopReason::ToolUse, usage(472, 89)),
        ]
    );
    let reply = assemble(&streamed);
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(
        reply.content[0],
        AssistantContent::Thinking {
            thinking: "I need the weather in two cities.".into(),
            signature: Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3h".into())
        }
    );
    let calls: Vec<ToolCall> = reply.tool_calls().cloned().collect();
    assert_eq!(calls[0].arguments, json!({"city": "Tokyo"}));
    assert_eq!(calls[1].arguments, json!({"city": "Paris"}));

    // The next turn: the thinking goes back unchanged with its signature, the calls as tool_use, the
    // results as tool_result blocks in one user message, the failed one marked.
    let mut second = first;
    second.messages.push(reply.into());
    second
        .messages
        .push(ToolResultMessage::new(&calls[0], AgentToolResult::text("Sunny, 22 °C")).into());
    second.messages.push(
        ToolResultMessage::new(&calls[1], AgentToolResult::error("weather service down")).into(),
    );
    assert_eq!(
        events(&model, second).await.last(),
        Some(&done(StopReason::Stop, usage(25, 15)))
    );
    // Both requests (the thinking block with its signature, the calls, their results) fit the
    // official SDK's request type.
    common::sdk::assert_sdk_accepts(common::sdk::Request::Anthropic, &server);
    let sent = &server.requests()[1].body;
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Tokyo and Paris?"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I need the weather in two cities.",
                 "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"},
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Tokyo"}},
                {"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {"city": "Paris"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01",
                 "content": [{"type": "text", "text": "Sunny, 22 °C"}]},
                {"type": "tool_result", "tool_use_id": "toolu_02", "is_error": true,
                 "content": [{"type": "text", "text": "weather service down"}]}
            ]}
        ])
    );
    assert_eq!(
        sent["tools"],
        json!([{"name": "get_weather", "description": "Current weather for a city.",
                "input_schema": {"type": "object",
                                 "properties": {"city": {"type": "string", "description": "City name"}},
                                 "required": ["city"]}}])
    );
}

#[tokio::test]
async fn redacted_thinking_is_kept_and_sent_back_as_it_came() {
    let server = Server::start(vec![
        Reply::Sse(vec![
            message_start(10),
            block_start(
                0,
                json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}),
            ),
            block_stop(0),
            block_start(1, json!({"type": "text", "text": ""})),
            delta(1, json!({"type": "text_delta", "text": "Done."})),
            block_stop(1),
            message_delta("end_turn", 4),
            message_stop(),
        ]),
        text_stream("ok"),
    ])
    .await;
    let model = model(&server);
    let reply = assemble(&events(&model, request("hi")).await);
    assert_eq!(
        reply.content[0],
        AssistantContent::RedactedThinking {
            data: "EmwKAhgBEgy3va3pzix".into()
        }
    );
    let mut next = request("hi");
    next.messages.push(reply.into());
    next.messages.push(UserMessage::text("and?").into());
    events(&model, next).await;
    assert_eq!(
        server.requests()[1].body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "text", "text": "Done."}
        ]})
    );
}

#[tokio::test]
async fn an_error_event_mid_stream_ends_the_reply_with_its_message() {
    let server = Server::start(vec![Reply::Sse(vec![
        message_start(10),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "Par"})),
        named(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    ])])
    .await;
    let events = events(&model(&server), request("hi")).await;
    assert_eq!(
        events,
        vec![
            start(),
            ModelEvent::TextDelta("Par".into()),
            ModelEvent::Error(format!(
                "{} failed: the server reported an error in the stream: Overloaded",
                endpoint(&server)
            )),
        ]
    );
    // The partial text is not replayed next turn: the reply failed.
    let reply = assemble(&events);
    assert_eq!(reply.stop_reason, StopReason::Error);
    assert!(yiem_core::llm::to_anthropic_messages(&[reply.into()]).is_empty());
}

#[tokio::test]
async fn a_cut_stream_is_an_error_naming_how_far_it_got() {
    let server = Server::start(vec![Reply::SseCut(vec![
        message_start(10),
        block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {}}),
        ),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"ci"}),
        ),
    ])])
    .await;
    let events = events(&model(&server), request("hi")).await;
    let text = last_error(&events);
    assert!(
        text.starts_with(&format!(
            "{} failed: the stream broke off after 3 chunks",
            endpoint(&server)
        )),
        "{text}"
    );
    assert_eq!(server.requests().len(), 1, "a started reply is not retried");
}

#[tokio::test]
async fn a_stream_that_ends_without_message_stop_or_stop_reason_is_an_error() {
    let server = Server::start(vec![Reply::Sse(vec![
        message_start(10),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "Hel"})),
    ])])
    .await;
    assert_eq!(
        events(&model(&server), request("hi")).await.last(),
        Some(&ModelEvent::Error(format!(
            "{} failed: the stream ended after 3 chunks before the reply was complete",
            endpoint(&server)
        )))
    );
}

#[tokio::test]
async fn a_429_and_a_529_are_retried_honouring_retry_after_then_succeed() {
    let server = Server::start(vec![
        Reply::Status {
            status: "429 Too Many Requests",
            headers: vec![("retry-after", "0")],
            content_type: "application/json",
            body: json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
                .to_string(),
        },
        Reply::Status {
            status: "529 Overloaded",
            headers: vec![],
            content_type: "application/json",
            body: json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                .to_string(),
        },
        text_stream("fine"),
    ])
    .await;
    assert_eq!(
        events(&model(&server), request("hi")).await,
        vec![
            start(),
            ModelEvent::TextDelta("fine".into()),
            done(StopReason::Stop, usage(25, 15))
        ]
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_529_forever_is_reported_with_the_server_message_and_the_attempts() {
    let server = Server::start(vec![Reply::Status {
        status: "529 Overloaded",
        headers: vec![],
        content_type: "application/json",
        body:
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                .to_string(),
    }])
    .await;
    assert_eq!(
        events(&model(&server), request("hi")).await,
        vec![
            start(),
            ModelEvent::Error(format!(
                "{} failed: HTTP 529 <unknown status code>: Overloaded (4 attempts)",
                endpoint(&server)
            ))
        ]
    );
}

#[tokio::test]
async fn an_invalid_request_error_is_reported_at_once() {
    let server = Server::start(vec![Reply::Status {
        status: "400 Bad Request",
        headers: vec![],
        content_type: "application/json",
        body: json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "messages: roles must alternate"}})
        .to_string(),
    }])
    .await;
    assert_eq!(
        events(&model(&server), request("hi")).await,
        vec![
            start(),
            ModelEvent::Error(format!(
                "{} failed: HTTP 400 Bad Request: messages: roles must alternate",
                endpoint(&server)
            ))
        ]
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn garbage_in_the_stream_is_an_error_not_a_skip() {
    let server = Server::start(vec![Reply::Sse(vec![
        message_start(10),
        "event: content_block_start\ndata: {\"type\": \"content_block_st\n\n".into(),
    ])])
    .await;
    let events = events(&model(&server), request("hi")).await;
    let text = last_error(&events);
    assert!(
        text.starts_with(&format!(
            "{} failed: event 2 is not JSON",
            endpoint(&server)
        )),
        "{text}"
    );
}

#[tokio::test]
async fn max_tokens_with_a_pending_call_stops_with_length() {
    let server = Server::start(vec![Reply::Sse(vec![
        message_start(10),
        block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}),
        ),
        delta(
            0,
            json!({"type": "input_json_delta", "partial_json": "{\"city\": \"To"}),
        ),
        message_delta("max_tokens", 4096),
        message_stop(),
    ])])
    .await;
    let events = events(&model(&server), request("hi")).await;
    assert_eq!(
        events[events.len() - 2..],
        [
            ModelEvent::ToolCallEnd { index: 0 },
            done(StopReason::Length, usage(10, 4096))
        ]
    );
}

#[tokio::test]
async fn a_server_that_answers_with_one_json_message_is_read() {
    let server = Server::start(vec![Reply::Status {
        status: "200 OK",
        headers: vec![],
        content_type: "application/json",
        body: json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
                {"type": "text", "text": "Calling."},
                {"type": "tool_use", "id": "toolu_5", "name": "get_weather", "input": {"city": "Oslo"}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 7, "output_tokens": 3}})
        .to_string(),
    }])
    .await;
    let reply = assemble(&events(&model(&server), request("hi")).await);
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(reply.usage, usage(7, 3));
    assert_eq!(
        reply.content[0],
        AssistantContent::Thinking {
            thinking: "hm".into(),
            signature: Some("sig".into())
        }
    );
    assert_eq!(
        reply.tool_calls().next().unwrap().arguments,
        json!({"city": "Oslo"})
    );
}

#[test]
fn a_base_url_that_is_not_http_is_refused() {
    let error =
        AnthropicModel::new(AnthropicConfig::new("k", "claude").base_url("api.anthropic.com"))
            .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the base URL `api.anthropic.com` must start with http:// or https://"
    );
    let model = AnthropicModel::new(
        AnthropicConfig::new("k", "claude").base_url("http://gateway.test/anthropic/v1/"),
    )
    .unwrap();
    assert_eq!(
        model.endpoint(),
        "http://gateway.test/anthropic/v1/messages"
    );
}

/// A server tool's long turn: `server_tool_use` (its input streamed) and `web_search_tool_result` come
/// back with `pause_turn`; the agent sends them back unchanged and the model goes on in a second turn.
#[tokio::test]
async fn a_paused_turn_goes_back_with_its_server_blocks_and_the_agent_lets_the_model_go_on() {
    let search_result = json!({
        "type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
        "content": [{"type": "web_search_result", "url": "https://example.com/oslo",
                     "title": "Oslo weather", "encrypted_content": "EqgfCioIARgB", "page_age": null}]
    });
    let server = Server::start(vec![
        Reply::Sse(vec![
            message_start(30),
            block_start(0, json!({"type": "text", "text": ""})),
            delta(0, json!({"type": "text_delta", "text": "Let me search."})),
            block_stop(0),
            block_start(
                1,
                json!({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {}}),
            ),
            delta(1, json!({"type": "input_json_delta", "partial_json": "{\"query\": \"Oslo"})),
            delta(1, json!({"type": "input_json_delta", "partial_json": " weather\"}"})),
            block_stop(1),
            block_start(2, search_result.clone()),
            block_stop(2),
            message_delta("pause_turn", 12),
            message_stop(),
        ]),
        text_stream("Oslo is 21 °C."),
    ])
    .await;
    let agent = yiem_core::agent::Agent::builder()
        .model(model(&server))
        .build();
    let outcome = agent.prompt("Weather in Oslo?").await;
    assert_eq!(outcome.stop, yiem_core::agent::RunStop::Finished);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the paused turn was continued once");
    let server_use = json!({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
                            "input": {"query": "Oslo weather"}});
    assert_eq!(
        requests[1].body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me search."}, server_use, search_result
            ]}
        ])
    );
    let replies: Vec<_> = outcome
        .messages
        .iter()
        .filter_map(|message| match message {
            yiem_core::message::AgentMessage::Assistant(reply) => {
                Some((reply.stop_reason, reply.text_content()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        replies,
        [
            (StopReason::Paused, "Let me search.".to_owned()),
            (StopReason::Stop, "Oslo is 21 °C.".to_owned())
        ]
    );
    assert_eq!(agent.run_state().turns(), 2);
}

#[tokio::test]
async fn prompt_caching_puts_breakpoints_on_the_last_tool_and_the_system_prompt_and_reports_cache_use()
 {
    let server = Server::start(vec![Reply::Sse(vec![
        named(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "content": [],
                "model": "claude-test", "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 12, "cache_creation_input_tokens": 2048,
                          "cache_read_input_tokens": 4096, "output_tokens": 1}}}),
        ),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "ok"})),
        block_stop(0),
        message_delta("end_turn", 3),
        named("message_stop", json!({"type": "message_stop"})),
    ])])
    .await;
    let config = AnthropicConfig::new("sk-ant-test", "claude-test")
        .base_url(server.root())
        .prompt_cache(yiem_core::llm::PromptCache::FiveMinutes);
    let model = AnthropicModel::new(config).unwrap();
    let second = AgentTool::builder("get_time")
        .description("The time in a zone.")
        .input_schema(json!({"type": "object", "properties": {}}))
        .handler(|_ctx: yiem_core::tool::ToolContext, _args: Value| async move { "noon" })
        .build()
        .unwrap();
    let mut ask = request("hi");
    ask.tools = vec![weather_tool(), second].into();
    let streamed = events(&model, ask).await;
    assert_eq!(
        streamed.last(),
        Some(&done(
            StopReason::Stop,
            yiem_core::message::Usage::new(12, 3).cache(4096, 2048)
        ))
    );
    let body = &server.requests()[0].body;
    common::sdk::assert_sdk_accepts(common::sdk::Request::Anthropic, &server);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(body["tools"][0].get("cache_control"), None);
    assert_eq!(
        body["tools"][1]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

/// A store of `get_weather` (not deferred), a local `search_tools` and two deferred invoice tools.
fn catalog_store() -> yiem_core::store::ToolStore {
    let store = yiem_core::store::ToolStore::new("catalog");
    store.register(weather_tool()).unwrap();
    let plain = |name: &str, description: &str| {
        let answer = format!("{name} ran");
        AgentTool::builder(name)
            .description(description)
            .input_schema(json!({"type": "object", "properties": {"customer": {"type": "string"}}}))
            .handler(move |_ctx: yiem_core::tool::ToolContext, args: Value| {
                let text = format!("{answer} for {}", args["customer"]);
                async move { text }
            })
    };
    store
        .register(plain("search_tools", "The local search.").build().unwrap())
        .unwrap();
    store
        .register(
            plain("send_invoice", "Send an invoice.")
                .defer_loading()
                .build()
                .unwrap(),
        )
        .unwrap();
    store
        .register(
            plain("void_invoice", "Void an invoice.")
                .defer_loading()
                .build()
                .unwrap(),
        )
        .unwrap();
    store
}

#[tokio::test]
async fn tool_search_sends_deferred_tools_marked_and_the_tool_it_found_runs_through_the_pipeline() {
    use yiem_core::agent::{Agent, AgentSettings, RunStop};
    let server = Server::start(vec![
        Reply::Sse(vec![
            message_start(40),
            block_start(
                0,
                json!({"type": "server_tool_use", "id": "srvtoolu_01", "name": "tool_search_tool_bm25", "input": {}}),
            ),
            delta(
                0,
                json!({"type": "input_json_delta", "partial_json": "{\"query\": \"send an invoice\"}"}),
            ),
            block_stop(0),
            block_start(
                1,
                json!({"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_01", "content": {
                    "type": "tool_search_tool_search_result",
                    "tool_references": [{"type": "tool_reference", "tool_name": "send_invoice"}]
                }}),
            ),
            block_stop(1),
            block_start(
                2,
                json!({"type": "tool_use", "id": "toolu_01", "name": "send_invoice", "input": {}}),
            ),
            delta(
                2,
                json!({"type": "input_json_delta", "partial_json": "{\"customer\": \"ada\"}"}),
            ),
            block_stop(2),
            message_delta("tool_use", 30),
            message_stop(),
        ]),
        text_stream("Sent."),
    ])
    .await;
    // A model whose name does not tell: Anthropic's search asked for.
    let config = AnthropicConfig::new("sk-ant-test", "claude-test")
        .base_url(server.root())
        .tool_search(yiem_core::catalog::ToolSearchMode::Native);
    let agent = Agent::builder()
        .model(AnthropicModel::new(config).unwrap())
        .tools(catalog_store())
        .build();
    let outcome = agent.prompt("Bill Ada.").await;
    assert_eq!(outcome.stop, RunStop::Finished);
    let ran: Vec<&ToolResultMessage> = outcome
        .messages
        .iter()
        .filter_map(|message| match message {
            yiem_core::message::AgentMessage::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect();
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0].result.text_content(), "send_invoice ran for \"ada\"");
    assert_eq!(
        agent.run_state().loaded_tools(),
        ["send_invoice"],
        "the tool_reference and the call both name it"
    );

    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 2);
    // Both requests: the tool that is not deferred, Anthropic's search in place of the local one, and
    // every deferred tool marked — the same list, so the cached prefix holds.
    for body in &bodies {
        let tools = body["tools"].as_array().unwrap();
        let names = common::tool_names(&body["tools"]);
        assert_eq!(
            names,
            [
                "get_weather",
                "tool_search_tool_bm25",
                "send_invoice",
                "void_invoice"
            ]
        );
        assert_eq!(tools[1]["type"], "tool_search_tool_bm25_20251119");
        assert_eq!(tools[0].get("defer_loading"), None);
        assert_eq!(tools[2]["defer_loading"], true);
        assert_eq!(tools[3]["defer_loading"], true);
    }
    // The server's blocks go back as they came, before the call and its result.
    let reply = &bodies[1]["messages"][1]["content"];
    assert_eq!(reply[0]["type"], "server_tool_use");
    assert_eq!(reply[0]["input"], json!({"query": "send an invoice"}));
    assert_eq!(reply[1]["type"], "tool_search_tool_result");
    assert_eq!(
        reply[1]["content"]["tool_references"][0]["tool_name"],
        "send_invoice"
    );
    assert_eq!(reply[2]["type"], "tool_use");
    common::sdk::assert_sdk_accepts_bodies(common::sdk::Request::Anthropic, &bodies);
}

#[tokio::test]
async fn anthropic_tool_search_is_chosen_by_the_model_and_the_local_search_goes_otherwise() {
    use yiem_core::catalog::{RequestTools, ToolSearchMode};
    let store = catalog_store();
    let lists = RequestTools::of(&store, &[]);
    let mut request = request("Bill Ada.");
    request.tools = lists.tools;
    request.deferred = lists.deferred;
    let names = |model: &str, mode: ToolSearchMode| -> Vec<String> {
        let config = AnthropicConfig::new("sk-ant-test", model).tool_search(mode);
        let body = AnthropicModel::new(config)
            .unwrap()
            .request_body(&request)
            .unwrap();
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let native = [
        "get_weather",
        "tool_search_tool_bm25",
        "send_invoice",
        "void_invoice",
    ];
    let local = ["get_weather", "search_tools"];
    for model in [
        "claude-sonnet-4-5-20250929",
        "claude-opus-4-6",
        "claude-haiku-5",
    ] {
        assert_eq!(names(model, ToolSearchMode::Auto), native, "{model}");
        assert_eq!(names(model, ToolSearchMode::Local), local, "{model}");
    }
    for model in [
        "claude-3-5-sonnet-20241022",
        "claude-sonnet-4-20250514",
        "claude-test",
    ] {
        assert_eq!(names(model, ToolSearchMode::Auto), local, "{model}");
        assert_eq!(names(model, ToolSearchMode::Native), native, "{model}");
    }
}

#[tokio::test]
async fn programmatic_calling_sends_the_code_execution_tool_and_a_call_from_code_runs_through_the_pipeline()
 {
    use std::sync::{Arc, Mutex};
    use yiem_core::llm::ProgrammaticCalling;
    use yiem_core::{
        agent::{Agent, AgentSettings, RunStop},
        exec::{ToolCaller, ToolHooks},
    };
    let server = Server::start(vec![
        Reply::Sse(vec![
            message_start(40),
            block_start(
                0,
                json!({"type": "server_tool_use", "id": "srvtoolu_01", "name": "code_execution", "input": {}}),
            ),
            delta(
                0,
                json!({"type": "input_json_delta", "partial_json": "{\"code\": \"print(await get_weather(city='Tokyo'))\"}"}),
            ),
            block_stop(0),
            block_start(
                1,
                json!({"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {},
                       "caller": {"type": "code_execution_20260120", "tool_id": "srvtoolu_01"}}),
            ),
            delta(
                1,
                json!({"type": "input_json_delta", "partial_json": "{\"city\": \"Tokyo\"}"}),
            ),
            block_stop(1),
            named(
                "message_delta",
                json!({"type": "message_delta",
                       "delta": {"stop_reason": "tool_use", "stop_sequence": null,
                                 "container": {"id": "container_01", "expires_at": "2026-01-15T14:30:00Z"}},
                       "usage": {"output_tokens": 30}}),
            ),
            message_stop(),
        ]),
        text_stream("Tokyo is sunny."),
    ])
    .await;
    let store = yiem_core::store::ToolStore::new("weather");
    store.register(weather_tool()).unwrap();
    let seen: Arc<Mutex<Vec<Option<ToolCaller>>>> = Arc::default();
    let hooks = {
        let seen = Arc::clone(&seen);
        ToolHooks::new().before_tool_call(move |ctx| {
            seen.lock().unwrap().push(ctx.call.caller.clone());
            async { None }
        })
    };
    let config = AnthropicConfig::new("sk-ant-test", "claude-test")
        .base_url(server.root())
        .programmatic_calling(ProgrammaticCalling::new());
    let agent = Agent::builder()
        .model(AnthropicModel::new(config).unwrap())
        .tools(store)
        .tool_hooks(hooks)
        .build();
    let outcome = agent.prompt("Weather in Tokyo?").await;
    assert_eq!(outcome.stop, RunStop::Finished);

    // The call the program made ran through the pipeline, its hooks seeing who made it.
    let caller = ToolCaller::new("anthropic", "code_execution_20260120", "srvtoolu_01");
    assert_eq!(*seen.lock().unwrap(), [Some(caller.clone())]);
    let yiem_core::message::AgentMessage::Assistant(reply) = &outcome.messages[1] else {
        panic!("{:?}", outcome.messages[1]);
    };
    let call = reply.tool_calls().next().unwrap();
    assert_eq!(call.caller, Some(caller));
    let yiem_core::message::AgentMessage::ToolResult(result) = &outcome.messages[2] else {
        panic!("{:?}", outcome.messages[2]);
    };
    assert_eq!(result.result.text_content(), "sunny");

    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 2);
    // Both requests: the tool marked callable from code, then the code-execution tool.
    for body in &bodies {
        assert_eq!(
            body["tools"][0]["allowed_callers"],
            json!(["direct", "code_execution_20260120"])
        );
        assert_eq!(
            body["tools"][1],
            json!({"type": "code_execution_20260120", "name": "code_execution"})
        );
        assert_eq!(body["tools"].as_array().unwrap().len(), 2);
    }
    assert_eq!(bodies[0].get("container"), None);
    // The answer goes to the program's container, the call back with its caller, the program's block
    // as it came.
    assert_eq!(bodies[1]["container"], "container_01");
    let reply = &bodies[1]["messages"][1]["content"];
    assert_eq!(reply.as_array().unwrap().len(), 2, "{reply}");
    assert_eq!(reply[0]["type"], "server_tool_use");
    assert_eq!(
        reply[0]["input"],
        json!({"code": "print(await get_weather(city='Tokyo'))"})
    );
    assert_eq!(
        reply[1],
        json!({"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Tokyo"},
               "caller": {"type": "code_execution_20260120", "tool_id": "srvtoolu_01"}})
    );
    assert_eq!(
        bodies[1]["messages"][2]["content"][0]["tool_use_id"],
        "toolu_01"
    );
    common::sdk::assert_sdk_accepts_bodies(common::sdk::Request::Anthropic, &bodies);
}

#[tokio::test]
async fn programmatic_calling_marks_the_tools_not_destructive_or_those_named() {
    use yiem_core::llm::ProgrammaticCalling;
    use yiem_core::tool::ToolAnnotations;
    let destructive = AgentTool::builder("delete_city")
        .description("Deletes a city.")
        .input_schema(json!({"type": "object", "properties": {}}))
        .annotations(ToolAnnotations::default().destructive(true))
        .handler(|_ctx: yiem_core::tool::ToolContext, _args: Value| async move { "gone" })
        .build()
        .unwrap();
    let mut request = request("Weather in Tokyo?");
    request.tools = vec![weather_tool(), destructive].into();
    let callers = |calling: ProgrammaticCalling| -> Vec<Value> {
        let config =
            AnthropicConfig::new("sk-ant-test", "claude-test").programmatic_calling(calling);
        sdk_checked_body(config, &request)["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool.get("allowed_callers").cloned().unwrap_or(Value::Null))
            .collect()
    };
    let both = json!(["direct", "code_execution_20260120"]);
    assert_eq!(
        callers(ProgrammaticCalling::new()),
        [both.clone(), Value::Null, Value::Null]
    );
    assert_eq!(
        callers(ProgrammaticCalling::new().callable_tools(["delete_city"])),
        [Value::Null, both, Value::Null]
    );
    // Off by default: no code-execution tool, no callers.
    let body = model_without_server().request_body(&request).unwrap();
    assert_eq!(body["tools"].as_array().unwrap().len(), 2);
    assert!(!body.to_string().contains("allowed_callers"));
}

/// A tool only a program may call.
fn code_only_lookup() -> AgentTool {
    AgentTool::builder("lookup")
        .description("Looks a record up.")
        .input_schema(json!({"type": "object", "properties": {"id": {"type": "integer"}}}))
        .code_only()
        .handler(|_ctx: yiem_core::tool::ToolContext, _args: Value| async move { "found" })
        .build()
        .unwrap()
}

#[test]
fn a_code_only_tool_is_offered_to_the_newest_sandbox_alone_and_not_sent_without_one() {
    use yiem_core::llm::{CodeExecutionVersion, ProgrammaticCalling};
    let mut request = request("Look record 7 up.");
    request.tools = vec![weather_tool(), code_only_lookup()].into();
    let body_of = |config: AnthropicConfig| sdk_checked_body(config, &request);
    let callers = |body: &Value| -> Vec<Value> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool.get("allowed_callers").cloned().unwrap_or(Value::Null))
            .collect()
    };
    let config = || AnthropicConfig::new("sk-ant-test", "claude-test");

    // The newest code-execution tool by default; the code-only tool is the sandbox's alone.
    let body = body_of(config().programmatic_calling(ProgrammaticCalling::new()));
    assert_eq!(
        callers(&body),
        [
            json!(["direct", "code_execution_20260120"]),
            json!(["code_execution_20260120"]),
            Value::Null
        ]
    );
    assert_eq!(
        body["tools"][2],
        json!({"type": "code_execution_20260120", "name": "code_execution"})
    );
    // Code-only is the tool's own rule: a list of callable tools that leaves it out does not make it
    // direct, nor take it from the sandbox.
    let named = ProgrammaticCalling::new().callable_tools(["get_weather"]);
    let body = body_of(config().programmatic_calling(named));
    assert_eq!(callers(&body)[1], json!(["code_execution_20260120"]));
    // The older version, chosen.
    let body = body_of(
        config()
            .programmatic_calling(ProgrammaticCalling::new())
            .code_execution(CodeExecutionVersion::V20250825),
    );
    assert_eq!(
        callers(&body),
        [
            json!(["direct", "code_execution_20250825"]),
            json!(["code_execution_20250825"]),
            Value::Null
        ]
    );
    assert_eq!(body["tools"][2]["type"], "code_execution_20250825");
    // Without a sandbox the model could only call it directly, which is refused: it is not sent.
    let body = body_of(config());
    let names = common::tool_names(&body["tools"]);
    assert_eq!(names, ["get_weather"]);
}

fn model_without_server() -> AnthropicModel {
    AnthropicModel::new(AnthropicConfig::new("sk-ant-test", "claude-test")).unwrap()
}

#[test]
fn a_reply_with_a_call_from_code_round_trips_through_a_saved_run() {
    use yiem_core::{exec::ToolCaller, message::AgentMessage};
    let events = anthropic_events_of_a_call_from_code();
    let reply = assemble(&events);
    let saved = serde_json::to_string(&AgentMessage::Assistant(reply.clone())).unwrap();
    let AgentMessage::Assistant(restored) = serde_json::from_str(&saved).unwrap() else {
        panic!("{saved}");
    };
    assert_eq!(restored, reply);
    let calls: Vec<&ToolCall> = restored.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[1].caller, None,
        "a direct caller is the model's own call"
    );
    assert_eq!(
        calls[0].caller,
        Some(ToolCaller::new(
            "anthropic",
            "code_execution_20260120",
            "srvtoolu_02"
        ))
    );
    // A call the model made itself is saved as before: no `caller` key.
    let direct = ToolCall::new("toolu_9", "get_weather", json!({"city": "Oslo"}));
    assert_eq!(
        serde_json::to_value(&direct).unwrap(),
        json!({"id": "toolu_9", "name": "get_weather", "arguments": {"city": "Oslo"}})
    );
}

/// A reply's events: a call from a `code_execution_20260120` program, then one the model made itself
/// (`direct`).
fn anthropic_events_of_a_call_from_code() -> Vec<ModelEvent> {
    let events = [
        json!({"type": "content_block_start", "index": 0, "content_block":
            {"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {"city": "Lima"},
             "caller": {"type": "code_execution_20260120", "tool_id": "srvtoolu_02"}}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block":
            {"type": "tool_use", "id": "toolu_03", "name": "get_weather", "input": {"city": "Oslo"},
             "caller": {"type": "direct"}}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ]
    .map(|event| event.to_string());
    yiem_core::llm::parse_anthropic_events_for_fuzzing(
        events.iter().map(|data| ("", data.as_str())),
    )
}

/// The body `config`'s model sends for `request`, checked by the Anthropic SDK's types.
fn sdk_checked_body(config: AnthropicConfig, request: &ModelRequest) -> Value {
    let body = AnthropicModel::new(config)
        .unwrap()
        .request_body(request)
        .unwrap();
    common::sdk::assert_sdk_accepts_bodies(
        common::sdk::Request::Anthropic,
        std::slice::from_ref(&body),
    );
    body
}
