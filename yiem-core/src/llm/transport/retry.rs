//! [`RetryPolicy`]: when and after how long a failed model request is sent again, shared by every
//! provider. Retried: HTTP 429, 5xx (Anthropic's 529 "overloaded" included) unless the body is a
//! validation error, connection failures, and accepted responses that break before their first event.
//! The server's `retry-after-ms` / `Retry-After` (seconds or an HTTP date) replaces the backoff; the jitter comes from
//! the crate's own random source (no `uuid`).

use std::time::{Duration, SystemTime};

/// How failed requests are retried: HTTP 429 and 5xx answers, connection failures, and accepted responses
/// that break before their first chunk. The wait before retry `n` (from 1) is `initial_delay * 2^(n-1)`,
/// capped at `max_delay`, times a random factor between 0.5 and 1 (jitter); a `Retry-After` (seconds or a date) or
/// `retry-after-ms` header from the server replaces it. A server that asks for a longer wait than
/// `max_delay` is not retried: the error says what it asked for. Nothing is retried once a response has
/// started streaming.
///
/// ```
/// use std::time::Duration;
/// use yiem_core::llm::RetryPolicy;
///
/// let policy = RetryPolicy::default().max_retries(5);
/// assert_eq!(policy.initial_delay, Duration::from_millis(500));
/// assert_eq!(RetryPolicy::none().max_retries, 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt (default 3, so at most 4 attempts).
    pub max_retries: u32,
    /// The wait before the first retry (default 500 ms).
    pub initial_delay: Duration,
    /// The longest wait between attempts (default 30 s).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::new(3, Duration::from_millis(500), Duration::from_secs(30))
    }
}

impl RetryPolicy {
    /// At most `max_retries` retries, waiting `initial_delay` before the first and doubling (with
    /// jitter) up to `max_delay`.
    pub fn new(max_retries: u32, initial_delay: Duration, max_delay: Duration) -> Self {
        RetryPolicy {
            max_retries,
            initial_delay,
            max_delay,
        }
    }

    /// At most `max_retries` retries, waiting as before.
    #[must_use]
    pub fn max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// No retries: the first failure is final.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The backoff before retry `retry` (1 for the first), with jitter.
    pub(crate) fn backoff(&self, retry: u32) -> Duration {
        let doubled = self
            .initial_delay
            .saturating_mul(1u32 << retry.saturating_sub(1).min(20));
        let capped = doubled.min(self.max_delay);
        let random = (crate::id::random_u64() >> 11) as f64 / (1u64 << 53) as f64;
        capped.mul_f64(0.5 + 0.5 * random)
    }
}

/// Whether an answer with `status` may be sent again: 429 and 5xx, except a 5xx whose body is a
/// validation error (see [`is_validation_error`]).
pub(crate) fn is_retryable(status: u16, body: &[u8]) -> bool {
    status == 429 || ((500..600).contains(&status) && !is_validation_error(body))
}

/// Whether an error body says the request itself was invalid (pydantic's and FastAPI's wording, which
/// llama-cpp-python and other Python servers answer with a 500), so sending it again cannot help.
pub(crate) fn is_validation_error(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body).to_ascii_lowercase();
    [
        "validation error",
        "input should be",
        "field required",
        "value is not a valid",
    ]
    .iter()
    .any(|marker| text.contains(marker))
}

/// The wait an answer asks for: `retry-after-ms`, or `Retry-After` in seconds or as an HTTP date (a date
/// already past asks for no wait). Read defensively, since any server may send anything: a number too
/// large for a `Duration` (`1e300`, `18446744073709551616`, `inf`) is [`Duration::MAX`], which no policy
/// allows, so the request is not retried; a negative, NaN or unreadable value is ignored (the policy's
/// own backoff applies).
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let seconds =
        |n: f64| (n >= 0.0).then(|| Duration::try_from_secs_f64(n).unwrap_or(Duration::MAX));
    let millis = text("retry-after-ms").and_then(|t| t.parse::<f64>().ok());
    if let Some(wait) = millis.and_then(|ms| seconds(ms / 1000.0)) {
        return Some(wait);
    }
    let value = text("retry-after")?;
    match value.parse::<f64>() {
        Ok(n) => seconds(n),
        Err(_) => httpdate::parse_http_date(value)
            .ok()
            .map(|at| at.duration_since(SystemTime::now()).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_headers_are_read() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut date = reqwest::header::HeaderMap::new();
        date.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&date), Some(Duration::ZERO));
        date.insert("retry-after", "not a date".parse().unwrap());
        assert_eq!(retry_after(&date), None);
        let future = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3600));
        date.insert("retry-after", future.parse().unwrap());
        let wait = retry_after(&date).unwrap();
        assert!(wait > Duration::from_secs(3500) && wait <= Duration::from_secs(3600));
    }

    #[test]
    fn retry_after_values_past_a_duration_or_below_zero_never_panic() {
        for (name, value, expected) in [
            ("retry-after", "1e300", Some(Duration::MAX)),
            ("retry-after", "18446744073709551616", Some(Duration::MAX)),
            ("retry-after", "inf", Some(Duration::MAX)),
            ("retry-after-ms", "1e300", Some(Duration::MAX)),
            ("retry-after", "-1", None),
            ("retry-after", "NaN", None),
            ("retry-after-ms", "-5", None),
            ("retry-after", "0.25", Some(Duration::from_millis(250))),
        ] {
            let mut headers = reqwest::header::HeaderMap::new();
            headers.insert(name, value.parse().unwrap());
            assert_eq!(retry_after(&headers), expected, "{name}: {value}");
        }
    }

    #[test]
    fn backoff_doubles_and_is_capped_with_jitter() {
        let policy = RetryPolicy::new(10, Duration::from_millis(100), Duration::from_millis(350));
        for _ in 0..50 {
            let first = policy.backoff(1);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let second = policy.backoff(2);
            assert!(second >= Duration::from_millis(100) && second <= Duration::from_millis(200));
            let late = policy.backoff(9);
            assert!(late >= Duration::from_millis(175) && late <= Duration::from_millis(350));
        }
    }

    #[test]
    fn overloaded_and_server_errors_are_retried_but_validation_errors_are_not() {
        assert!(is_retryable(429, b""));
        assert!(is_retryable(
            529,
            br#"{"type":"error","error":{"type":"overloaded_error"}}"#
        ));
        assert!(is_retryable(503, b"upstream down"));
        assert!(!is_retryable(500, b"1 validation error for Request"));
        assert!(!is_retryable(400, b""));
        assert!(!is_retryable(401, b""));
    }
}
