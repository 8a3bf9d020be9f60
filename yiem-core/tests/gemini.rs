//! `GeminiModel` against a real HTTP server on 127.0.0.1 replaying the shapes of Gemini's
//! `streamGenerateContent?alt=sse` documentation (one `GenerateContentResponse` per `data:` event, parts
//! with `text`, `thought`, `functionCall` and `thoughtSignature`, `finishReason`, `usageMetadata`),
//! asserting the events streamed and the requests sent.

mod common;

use std::time::Duration;

use common::{
    Reply, Server, all_events, assemble, data, done, events, last_error, usage, weather_tool,
};
use serde_json::{Value, json};
use yiem_core::{
    exec::ToolCall,
    llm::{GeminiConfig, GeminiModel, ModelEvent, ModelRequest, RetryPolicy},
    message::{AssistantContent, StopReason, ToolResultMessage, UserMessage},
    tool::AgentToolResult,
};

fn model(server: &Server) -> GeminiModel {
    let config = GeminiConfig::new("AIza-test", "gemini-test")
        .base_url(format!("{}/v1beta", server.root()))
        .retry(RetryPolicy::new(
            3,
            Duration::from_millis(1),
            Duration::from_millis(10),
        ));
    GeminiModel::new(config).unwrap()
}

fn endpoint(server: &Server) -> String {
    format!(
        "POST {}/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
        server.root()
    )
}

fn request(text: &str) -> ModelRequest {
    ModelRequest::new("You are terse.", vec![UserMessage::text(text).into()])
}

/// One streamed `GenerateContentResponse`.
fn response(parts: Value, finish_reason: Option<&str>, usage: Option<(u64, u64, u64)>) -> String {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(reason) = finish_reason {
        candidate["finishReason"] = json!(reason);
    }
    let mut body = json!({"candidates": [candidate], "modelVersion": "gemini-test-001",
                          "responseId": "resp-1"});
    if let Some((prompt, candidates, thoughts)) = usage {
        body["usageMetadata"] = json!({"promptTokenCount": prompt, "candidatesTokenCount": candidates,
            "thoughtsTokenCount": thoughts, "totalTokenCount": prompt + candidates + thoughts});
    }
    data(body)
}

fn text_stream(text: &str) -> Reply {
    Reply::Sse(vec![response(
        json!([{"text": text}]),
        Some("STOP"),
        Some((8, 2, 0)),
    )])
}

fn start() -> ModelEvent {
    ModelEvent::Start {
        model: "gemini-test".into(),
    }
}

#[tokio::test]
async fn text_streams_in_order_with_usage_and_the_key_in_a_header() {
    let server = Server::start(vec![Reply::Sse(vec![
        response(json!([{"text": "Hello"}]), None, Some((8, 1, 0))),
        response(json!([{"text": " world"}]), Some("STOP"), Some((8, 2, 0))),
    ])])
    .await;
    assert_eq!(
        events(&model(&server), request("hi")).await,
        vec![
            start(),
            ModelEvent::TextDelta("Hello".into()),
            ModelEvent::TextDelta(" world".into()),
            done(StopReason::Stop, usage(8, 2)),
        ]
    );
    let sent = &server.requests()[0];
    assert_eq!(
        sent.request_line,
        "POST /v1beta/models/gemini-test:streamGenerateContent?alt=sse HTTP/1.1"
    );
    assert_eq!(sent.header("x-goog-api-key"), Some("AIza-test"));
    assert!(!sent.request_line.contains("key="));
    assert_eq!(
        sent.body,
        json!({
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "systemInstruction": {"parts": [{"text": "You are terse."}]}
        })
    );
}

#[tokio::test]
async fn thoughts_and_two_calls_with_a_signature_then_the_round_trip_sends_them_back() {
    let server = Server::start(vec![
        Reply::Sse(vec![
            response(
                json!([{"text": "Two cities, two calls.", "thought": true}]),
                None,
                None,
            ),
            // Gemini sends calls whole; it gives the first of parallel calls the signature, and here no ids.
            response(
                json!([{"functionCall": {"name": "get_weather", "args": {"city": "Tokyo"}},
                        "thoughtSignature": "CiIBVKhc7oDP"}]),
                None,
                None,
            ),
            response(
                json!([{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]),
                Some("STOP"),
                Some((40, 12, 30)),
            ),
        ]),
        text_stream("Sunny; unknown."),
    ])
    .await;
    let model = model(&server);
    let mut first = request("Weather in Tokyo and Paris?");
    first.tools = vec![weather_tool()].into();
    let all = all_events(&model, first.clone()).await;
    assert!(all.contains(&ModelEvent::ToolCallArguments {
        index: 1,
        arguments: json!({"city": "Paris"})
    }));
    let streamed: Vec<ModelEvent> = all
        .into_iter()
        .filter(|event| !matches!(event, ModelEvent::ToolCallArguments { .. }))
        .collect();
    let call = |index: usize, city: &str| {
        [
            ModelEvent::ToolCallStart {
                index,
                id: String::new(),
                name: "get_weather".into(),
            },
            ModelEvent::ToolCallDelta {
                index,
                arguments: json!({"city": city}).to_string(),
            },
            ModelEvent::ToolCallEnd { index },
        ]
    };
    let mut expected = vec![
        start(),
        ModelEvent::ThinkingDelta("Two cities, two calls.".into()),
        ModelEvent::ThinkingSignature("CiIBVKhc7oDP".into()),
    ];
    expected.extend(call(0, "Tokyo"));
    expected.extend(call(1, "Paris"));
    expected.push(done(StopReason::ToolUse, usage(40, 42)));
    assert_eq!(streamed, expected);

    let reply = assemble(&streamed);
    assert_eq!(
        reply.content[0],
        AssistantContent::Thinking {
            thinking: "Two cities, two calls.".into(),
            signature: Some("CiIBVKhc7oDP".into())
        }
    );
    let calls: Vec<ToolCall> = reply.tool_calls().cloned().collect();
    // Gemini gave no ids: each call got a fresh one, distinct.
    assert_eq!(calls[0].id.len(), 36);
    assert_ne!(calls[0].id, calls[1].id);

    let mut second = first;
    second.messages.push(reply.into());
    second
        .messages
        .push(ToolResultMessage::new(&calls[0], AgentToolResult::text("Sunny, 22 °C")).into());
    second
        .messages
        .push(ToolResultMessage::new(&calls[1], AgentToolResult::error("no data")).into());
    assert_eq!(
        events(&model, second).await.last(),
        Some(&done(StopReason::Stop, usage(8, 2)))
    );
    let sent = &server.requests()[1].body;
    assert_eq!(
        sent["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Weather in Tokyo and Paris?"}]},
            {"role": "model", "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Tokyo"}, "id": calls[0].id},
                 "thoughtSignature": "CiIBVKhc7oDP"},
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": calls[1].id}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_weather", "id": calls[0].id,
                                      "response": {"output": "Sunny, 22 °C"}}},
                {"functionResponse": {"name": "get_weather", "id": calls[1].id,
                                      "response": {"error": "no data"}}}
            ]}
        ])
    );
    assert_eq!(
        sent["tools"],
        json!([{"functionDeclarations": [{"name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {"type": "object",
                           "properties": {"city": {"type": "string", "description": "City name"}},
                           "required": ["city"]}}]}])
    );
}

#[tokio::test]
async fn a_call_id_from_gemini_is_kept_and_a_text_signature_goes_back_on_its_own_part() {
    let server = Server::start(vec![
        Reply::Sse(vec![
            response(
                json!([{"functionCall": {"id": "fc_7", "name": "get_weather", "args": {}}}]),
                None,
                None,
            ),
            response(
                json!([{"text": "Done.", "thoughtSignature": "SIGTEXT"}]),
                Some("STOP"),
                None,
            ),
        ]),
        text_stream("ok"),
    ])
    .await;
    let model = model(&server);
    let reply = assemble(&events(&model, request("hi")).await);
    let call = reply.tool_calls().next().unwrap().clone();
    assert_eq!(call.id, "fc_7");
    assert_eq!(reply.text_content(), "Done.");
    let mut next = request("hi");
    next.messages.push(reply.into());
    next.messages
        .push(ToolResultMessage::new(&call, AgentToolResult::text("x")).into());
    events(&model, next).await;
    assert_eq!(
        server.requests()[1].body["contents"][1],
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {}, "id": "fc_7"}},
            {"text": "Done."},
            {"text": "", "thoughtSignature": "SIGTEXT"}
        ]})
    );
}

#[tokio::test]
async fn an_error_object_mid_stream_ends_the_reply_with_its_message() {
    let server = Server::start(vec![Reply::Sse(vec![
        response(json!([{"text": "Par"}]), None, None),
        data(
            json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
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
                "{} failed: the server reported an error in the stream: The model is overloaded.",
                endpoint(&server)
            )),
        ]
    );
    assert!(yiem_core::llm::to_gemini_contents(&[assemble(&events).into()]).is_empty());
}

#[tokio::test]
async fn a_stream_that_stops_without_a_finish_reason_is_an_error() {
    let server = Server::start(vec![Reply::SseCut(vec![response(
        json!([{"text": "Hel"}]),
        None,
        None,
    )])])
    .await;
    let events = events(&model(&server), request("hi")).await;
    let text = last_error(&events);
    assert!(
        text.starts_with(&format!(
            "{} failed: the stream broke off after 1 chunk",
            endpoint(&server)
        )),
        "{text}"
    );
    let server = Server::start(vec![Reply::Sse(vec![response(
        json!([{"text": "Hel"}]),
        None,
        None,
    )])])
    .await;
    assert_eq!(
        crate::events(&model(&server), request("hi")).await.last(),
        Some(&ModelEvent::Error(format!(
            "{} failed: the stream ended after 1 chunk before the reply was complete",
            endpoint(&server)
        )))
    );
}

#[tokio::test]
async fn finish_reasons_map_and_safety_is_an_error() {
    let server = Server::start(vec![
        Reply::Sse(vec![response(
            json!([{"text": "cut"}]),
            Some("MAX_TOKENS"),
            Some((3, 100, 0)),
        )]),
        Reply::Sse(vec![response(json!([]), Some("SAFETY"), None)]),
        Reply::Sse(vec![data(
            json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}),
        )]),
    ])
    .await;
    let model = model(&server);
    assert_eq!(
        events(&model, request("a")).await.last(),
        Some(&done(StopReason::Length, usage(3, 100)))
    );
    assert_eq!(
        events(&model, request("b")).await.last(),
        Some(&ModelEvent::Error(format!(
            "{} failed: the server stopped the reply with finishReason \"SAFETY\"",
            endpoint(&server)
        )))
    );
    assert_eq!(
        events(&model, request("c")).await.last(),
        Some(&ModelEvent::Error(format!(
            "{} failed: the server blocked the prompt with blockReason \"PROHIBITED_CONTENT\"",
            endpoint(&server)
        )))
    );
}

#[tokio::test]
async fn a_429_with_retry_after_then_success_is_retried() {
    let server = Server::start(vec![
        Reply::Status {
            status: "429 Too Many Requests",
            headers: vec![("retry-after", "0")],
            content_type: "application/json",
            body: json!({"error": {"code": 429, "message": "Resource has been exhausted",
                                   "status": "RESOURCE_EXHAUSTED"}})
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
            done(StopReason::Stop, usage(8, 2))
        ]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
}

#[tokio::test]
async fn a_bad_key_is_reported_at_once_with_the_server_message() {
    let server = Server::start(vec![Reply::Status {
        status: "400 Bad Request",
        headers: vec![],
        content_type: "application/json",
        body: json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                               "status": "INVALID_ARGUMENT"}})
        .to_string(),
    }])
    .await;
    assert_eq!(
        events(&model(&server), request("hi")).await,
        vec![
            start(),
            ModelEvent::Error(format!(
                "{} failed: HTTP 400 Bad Request: API key not valid. Please pass a valid API key.",
                endpoint(&server)
            ))
        ]
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn garbage_in_the_stream_is_an_error() {
    let server = Server::start(vec![Reply::Sse(vec![
        response(json!([{"text": "a"}]), None, None),
        "data: {\"candidates\": [\n\n".into(),
    ])])
    .await;
    let events = events(&model(&server), request("hi")).await;
    let text = last_error(&events);
    assert!(
        text.starts_with(&format!(
            "{} failed: chunk 2 is not JSON",
            endpoint(&server)
        )),
        "{text}"
    );
}

#[tokio::test]
async fn a_json_array_body_from_a_server_that_does_not_stream_is_read() {
    let body = json!([
        {"candidates": [{"content": {"parts": [{"text": "One"}], "role": "model"}}]},
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}}],
                                     "role": "model"}, "finishReason": "STOP"}],
         "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 6}}
    ]);
    let server = Server::start(vec![Reply::Status {
        status: "200 OK",
        headers: vec![],
        content_type: "application/json",
        body: body.to_string(),
    }])
    .await;
    let reply = assemble(&events(&model(&server), request("hi")).await);
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(reply.text_content(), "One");
    assert_eq!(reply.usage, usage(4, 6));
    assert_eq!(
        reply.tool_calls().next().unwrap().arguments,
        json!({"city": "Rome"})
    );
}

/// Every Gemini golden of the dialect corpus (`tests/golden/gemini`, which `tests/tests/dialects.rs`
/// pins to the rewrite's output) that uses `parameters` is a `FunctionDeclaration` to Google's own SDK,
/// whose `Schema` refuses a field it does not have: the list of Gemini's fields is the SDK's, not a copy
/// of the rewrite's.
#[test]
fn the_gemini_goldens_fit_the_sdks_function_declaration() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/gemini");
    let mut bodies = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let golden: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        if golden.get("parameters").is_some() {
            bodies.push(golden);
        }
    }
    assert!(
        bodies.len() >= 20,
        "only {} goldens in {}",
        bodies.len(),
        dir.display()
    );
    common::sdk::assert_sdk_accepts_bodies(common::sdk::Request::GeminiFunction, &bodies);
}
