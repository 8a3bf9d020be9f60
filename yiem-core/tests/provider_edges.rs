//! The four provider clients at the edges of what a server may send, each against a real HTTP server on
//! 127.0.0.1: a retry delay past what a `Duration` holds, error texts of megabytes or echoing the API
//! key, an event past the size bound, a stream of keep-alive comments that never ends, and one delta of
//! many megabytes in small chunks (read in linear time).

mod common;

use std::time::Duration;

use yiem_core::llm::{ModelEvent, ModelRequest, RetryPolicy};
use yiem_core::message::{AssistantMessage, UserMessage};

use common::streams::{Limits, PROVIDERS, Provider};
use common::{Reply, Server, all_events, assemble};

fn request() -> ModelRequest {
    ModelRequest::new("You are terse.", vec![UserMessage::text("hi").into()])
}

fn status(status: &'static str, headers: Vec<(&'static str, &'static str)>, body: String) -> Reply {
    Reply::Status {
        status,
        headers,
        content_type: "application/json",
        body,
    }
}

async fn reply(
    provider: Provider,
    replies: Vec<Reply>,
    limits: Limits,
) -> (Vec<ModelEvent>, Server) {
    let server = Server::start(replies).await;
    let model = provider.model(&server, limits);
    let events = all_events(model.as_ref(), request()).await;
    (events, server)
}

/// The text of the reply's last event, which must be an error (a failure shows at most 300 characters of
/// what came instead: some replies hold megabytes).
fn last_error(events: &[ModelEvent]) -> &str {
    match events.last() {
        Some(ModelEvent::Error(text)) => text,
        other => {
            let shown: String = format!("{other:?}").chars().take(300).collect();
            panic!("the reply did not end in an error but in {shown}")
        }
    }
}

fn is_done(events: &[ModelEvent]) -> bool {
    matches!(events.last(), Some(ModelEvent::Done { .. }))
}

// ---- Retry-After ----

#[tokio::test]
async fn a_retry_delay_past_what_a_duration_holds_is_not_retried_and_never_panics() {
    for provider in PROVIDERS {
        for header in [
            ("retry-after", "1e300"),
            ("retry-after", "18446744073709551616"),
            ("retry-after-ms", "1e300"),
            ("retry-after", "inf"),
        ] {
            let replies = vec![
                status(
                    "429 Too Many Requests",
                    vec![header],
                    r#"{"error":{"message":"slow down"}}"#.into(),
                ),
                Reply::Sse(provider.text("late")),
            ];
            let (events, server) = reply(provider, replies, Limits::default()).await;
            let error = last_error(&events);
            assert!(
                error.contains("HTTP 429 Too Many Requests: slow down (not retried: the server asked to retry longer than any wait can be, more than the 30 s allowed)"),
                "{provider:?} {header:?}: {error}"
            );
            assert_eq!(server.requests().len(), 1, "{provider:?} {header:?}");
        }
    }
}

#[tokio::test]
async fn a_negative_or_nan_retry_delay_is_ignored_for_the_policy_s_backoff() {
    for provider in PROVIDERS {
        for header in [
            ("retry-after", "-1"),
            ("retry-after", "NaN"),
            ("retry-after-ms", "-5"),
        ] {
            let replies = vec![
                status("429 Too Many Requests", vec![header], "{}".into()),
                Reply::Sse(provider.text("now")),
            ];
            let (events, server) = reply(provider, replies, Limits::default()).await;
            assert!(is_done(&events), "{provider:?} {header:?}: {events:?}");
            assert_eq!(server.requests().len(), 2, "{provider:?} {header:?}");
        }
    }
}

#[tokio::test]
async fn a_retry_date_past_the_cap_is_not_retried_and_one_already_past_is_retried_at_once() {
    let later: &'static str = Box::leak(
        httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(7200))
            .into_boxed_str(),
    );
    for provider in PROVIDERS {
        let replies = vec![
            status(
                "503 Service Unavailable",
                vec![("retry-after", later)],
                "{}".into(),
            ),
            Reply::Sse(provider.text("late")),
        ];
        let (events, server) = reply(provider, replies, Limits::default()).await;
        let error = last_error(&events);
        assert!(
            error.contains("(not retried: the server asked to retry after 71"),
            "{provider:?}: {error}"
        );
        assert_eq!(server.requests().len(), 1);

        let replies = vec![
            status(
                "503 Service Unavailable",
                vec![("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")],
                "{}".into(),
            ),
            Reply::Sse(provider.text("now")),
        ];
        let (events, server) = reply(provider, replies, Limits::default()).await;
        assert!(is_done(&events), "{provider:?}: {events:?}");
        assert_eq!(server.requests().len(), 2);
    }
}

// ---- error texts: bounded, credentials redacted ----

/// The longest error a request may end with: the bound, its note and the request's URL.
const MAX_ERROR: usize = 2200;

#[tokio::test]
async fn a_401_that_echoes_the_api_key_never_shows_it() {
    for provider in PROVIDERS {
        let key = provider.key();
        let body = format!(
            r#"{{"error":{{"message":"invalid credentials: Authorization: Bearer {key}, x-api-key: {key}, x-goog-api-key: {key}"}}}}"#
        );
        let (events, _server) = reply(
            provider,
            vec![status("401 Unauthorized", vec![], body)],
            Limits::default(),
        )
        .await;
        let error = last_error(&events);
        assert!(!error.contains(key), "{provider:?}: {error}");
        assert!(
            error.contains(
                "invalid credentials: Authorization: Bearer <redacted>, x-api-key: <redacted>"
            ),
            "{provider:?}: {error}"
        );
    }
}

/// `error` is within the bound, cut with the note.
fn assert_bounded(provider: Provider, error: &str) {
    assert!(
        error.chars().count() < MAX_ERROR,
        "{provider:?}: {} chars",
        error.len()
    );
    assert!(
        error.ends_with("more bytes left out)"),
        "{provider:?}: {error}"
    );
}

#[tokio::test]
async fn an_error_body_of_megabytes_is_bounded_with_a_note() {
    for provider in PROVIDERS {
        let message = "overloaded ".repeat(500_000);
        let body = serde_json::json!({"error": {"message": message}}).to_string();
        let (events, _server) = reply(
            provider,
            vec![status("400 Bad Request", vec![], body)],
            Limits::default(),
        )
        .await;
        let error = last_error(&events);
        assert_bounded(provider, error);
        assert!(
            error.contains("HTTP 400 Bad Request: overloaded overloaded"),
            "{provider:?}"
        );
    }
}

#[tokio::test]
async fn an_error_event_of_megabytes_in_the_stream_is_bounded_and_redacted() {
    for provider in PROVIDERS {
        let message = format!("echo {} ", provider.key()).repeat(200_000);
        let (events, _server) = reply(
            provider,
            vec![Reply::Sse(provider.error_in_stream(&message))],
            Limits::default(),
        )
        .await;
        let error = last_error(&events);
        assert_bounded(provider, error);
        assert!(!error.contains(provider.key()), "{provider:?}");
        assert!(
            error.contains("echo <redacted> echo <redacted>"),
            "{provider:?}: {error}"
        );
    }
}

#[tokio::test]
async fn a_failed_response_of_megabytes_is_bounded() {
    let provider = Provider::Responses;
    let message = "x".repeat(5 << 20);
    let mut events = provider.error_in_stream("unused");
    events.pop();
    events.push(common::named(
        "response.failed",
        serde_json::json!({"type": "response.failed", "sequence_number": 1, "response": {"id": "resp_1",
            "status": "failed", "output": [], "error": {"code": "server_error", "message": message}}}),
    ));
    let (events, _server) = reply(provider, vec![Reply::Sse(events)], Limits::default()).await;
    let error = last_error(&events);
    assert!(error.chars().count() < MAX_ERROR, "{} chars", error.len());
    assert!(error.contains("the response failed: xxxx"), "{error}");
}

// ---- the stream's bounds ----

#[tokio::test]
async fn an_event_past_the_size_bound_ends_the_reply_with_a_clear_error() {
    for provider in PROVIDERS {
        let limits = Limits {
            max_event_bytes: Some(1 << 20),
            ..Limits::default()
        };
        let big = "a".repeat(2 << 20);
        let (events, _server) =
            reply(provider, vec![Reply::Sse(provider.text(&big))], limits).await;
        let error = last_error(&events);
        assert!(
            error.contains("an event of the stream is larger than the 1048576 bytes allowed"),
            "{provider:?}: {error}"
        );
        // Under the bound, the same reply is read whole.
        let (events, _server) = reply(
            provider,
            vec![Reply::Sse(provider.text(&big[..1 << 19]))],
            limits,
        )
        .await;
        assert!(is_done(&events), "{provider:?}");
    }
}

#[tokio::test]
async fn a_stream_of_keep_alive_comments_ends_at_the_reply_timeout() {
    for provider in PROVIDERS {
        let limits = Limits {
            reply_timeout: Some(Duration::from_millis(300)),
            ..Limits::default()
        };
        // The reply starts, then only comments come.
        let mut started = provider.error_in_stream("unused");
        started.pop();
        let forever = Reply::SseForever(started, ": keep-alive\n\n".into());
        let (events, _server) = reply(provider, vec![forever], limits).await;
        let error = last_error(&events);
        assert!(
            error
                .contains("the reply went on for longer than the 300 ms allowed for a whole reply"),
            "{provider:?}: {error}"
        );
    }
}

/// `pieces` cut into HTTP chunks of about `size` bytes (each ends at a character's end).
fn chunked(pieces: Vec<String>, size: usize) -> Vec<String> {
    let whole = pieces.concat();
    let mut chunks = Vec::new();
    let mut rest = whole.as_str();
    while !rest.is_empty() {
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (chunk, after) = rest.split_at(cut);
        chunks.push(chunk.to_owned());
        rest = after;
    }
    chunks
}

/// The message `provider`'s client makes of `events` sent in HTTP chunks of 16 KB, read within a minute
/// (a hang guard, not a measure: see the benches).
async fn read_in_a_minute(provider: Provider, events: Vec<String>) -> AssistantMessage {
    let server = Server::start(vec![Reply::Sse(chunked(events, 16 << 10))]).await;
    let model = provider.model(&server, Limits::default());
    let events = tokio::time::timeout(
        Duration::from_secs(60),
        futures::StreamExt::collect::<Vec<_>>(
            model.stream(request(), yiem_core::exec::CancellationToken::new()),
        ),
    )
    .await
    .unwrap_or_else(|_| panic!("{provider:?}: the reply was not read in a minute"));
    assert!(is_done(&events), "{provider:?}");
    assemble(&events)
}

#[tokio::test]
async fn a_delta_of_sixteen_megabytes_in_small_chunks_is_read_in_linear_time_and_exactly() {
    // Read quadratically (each chunk re-reading the pending line), this took minutes; linearly, a
    // second or two in a debug build. Every 4 KB holds every kind of escape: the client decodes a long
    // delta within the event's own buffer.
    let text = format!("{}abcd\"\\\n\té😀\u{1}x", "abcdefgh".repeat(510)).repeat(4096);
    for provider in PROVIDERS {
        let message = read_in_a_minute(provider, provider.text(&text)).await;
        assert!(message.text_content() == text, "{provider:?}");

        let arguments = serde_json::json!({ "city": text[..8 << 20] }).to_string();
        let message = read_in_a_minute(provider, provider.tool_call(&[&arguments])).await;
        let calls: Vec<_> = message.tool_calls().collect();
        assert_eq!(calls.len(), 1, "{provider:?}");
        assert!(
            calls[0].arguments["city"] == text[..8 << 20],
            "{provider:?}"
        );
    }
}

#[tokio::test]
async fn the_retry_policy_still_retries_a_plain_429() {
    for provider in PROVIDERS {
        let replies = vec![
            status(
                "429 Too Many Requests",
                vec![("retry-after-ms", "1")],
                "{}".into(),
            ),
            Reply::Sse(provider.text("ok")),
        ];
        let limits = Limits {
            retry: RetryPolicy::new(1, Duration::from_millis(1), Duration::from_millis(10)),
            ..Limits::default()
        };
        let (events, server) = reply(provider, replies, limits).await;
        assert!(is_done(&events), "{provider:?}: {events:?}");
        assert_eq!(server.requests().len(), 2);
    }
}
