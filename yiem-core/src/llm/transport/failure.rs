//! The texts of failed model requests, shared by every provider: the server's message found in an error
//! body, previews of bad input, durations and attempt counts for people, and the cause chain of an error.

use std::time::Duration;

use serde_json::Value;

/// The error message in a response body (which may be cut short).
pub(crate) fn server_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "(empty response body)".into();
    }
    // A body cut at the read limit is JSON cut short: its message is read as far as it goes.
    serde_json::from_str::<Value>(text)
        .ok()
        .or_else(|| super::partial::partial_arguments(text))
        .and_then(|value| error_text(&value))
        .unwrap_or_else(|| preview(text))
}

/// `error.message` (OpenAI, Anthropic, Gemini), `error` (a string), `message` or `detail`; for a JSON
/// array (Gemini answers errors of a non-SSE stream as one), its first element's.
pub(crate) fn error_text(value: &Value) -> Option<String> {
    let string = |v: &Value| match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    };
    if let Value::Array(items) = value {
        return items.first().and_then(error_text);
    }
    if let Some(error) = value.get("error")
        && let Some(text) = string(error).or_else(|| error.get("message").and_then(string))
    {
        return Some(text);
    }
    value.get("message").and_then(string).or_else(|| {
        value
            .get("detail")
            .map(|d| string(d).unwrap_or_else(|| d.to_string()))
    })
}

/// At most 300 characters of `text`.
pub(crate) fn preview(text: &str) -> String {
    const MAX: usize = 300;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// `text` with every one of `secrets` replaced by `<redacted>`.
pub(crate) fn redacted(text: &str, secrets: &[&str]) -> String {
    let mut text = text.to_owned();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        if text.contains(secret) {
            text = text.replace(secret, "<redacted>");
        }
    }
    text
}

/// `text` cut to at most `max` characters, with a note saying how much was left out.
pub(crate) fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!(
            "{}… ({} more bytes left out)",
            &text[..cut],
            text.len() - cut
        ),
        None => text.to_owned(),
    }
}

/// " (N attempts)" when there was more than one.
pub(crate) fn attempts(n: u32) -> String {
    if n > 1 {
        format!(" ({n} attempts)")
    } else {
        String::new()
    }
}

/// `1 chunk`, `3 chunks`.
pub(crate) fn chunk_count(n: usize) -> String {
    if n == 1 {
        "1 chunk".into()
    } else {
        format!("{n} chunks")
    }
}

/// A duration for people: `300 s`, `1.5 s`, `200 ms`.
pub(crate) fn seconds(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        format!("{} ms", duration.as_millis())
    } else if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// The innermost cause of an error (`Connection refused (os error 111)`), which says what happened better
/// than the wrappers above it.
pub(crate) fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

/// An error and all its causes, joined with `: `.
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut current = error;
    while let Some(source) = current.source() {
        text.push_str(": ");
        text.push_str(&source.to_string());
        current = source;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_messages_are_found_in_common_error_bodies() {
        assert_eq!(
            server_message(br#"{"error":{"message":"Rate limit reached","type":"requests"}}"#),
            "Rate limit reached"
        );
        assert_eq!(
            server_message(br#"{"error":"model 'x' not found"}"#),
            "model 'x' not found"
        );
        assert_eq!(
            server_message(br#"{"object":"error","message":"bad model"}"#),
            "bad model"
        );
        assert_eq!(
            server_message(br#"{"detail":[{"msg":"field required"}]}"#),
            r#"[{"msg":"field required"}]"#
        );
        assert_eq!(
            server_message(
                br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            server_message(br#"[{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}]"#),
            "Resource exhausted"
        );
        assert_eq!(server_message(b"upstream down\n"), "upstream down");
        assert_eq!(server_message(b"  "), "(empty response body)");
        assert_eq!(preview(&"x".repeat(400)).chars().count(), 301);
    }

    #[test]
    fn texts_are_bounded_and_secrets_redacted() {
        assert_eq!(bounded("héllo", 10), "héllo");
        assert_eq!(bounded("héllo", 2), "hé… (3 more bytes left out)");
        assert_eq!(
            redacted("Authorization: Bearer sk-1 and sk-1", &["sk-1", ""]),
            "Authorization: Bearer <redacted> and <redacted>"
        );
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(seconds(Duration::from_millis(200)), "200 ms");
        assert_eq!(seconds(Duration::from_secs(300)), "300 s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
    }
}
