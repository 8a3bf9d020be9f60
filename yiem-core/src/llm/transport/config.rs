//! [`ClientConfig`]: what every provider's client is configured with (where requests go, the key, the
//! model, extra body fields, the tool choice, retries, timeouts and limits), held by each provider's
//! configuration beside its own fields; [`ConfigError`]: why a client could not be configured.

use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

use super::retry::RetryPolicy;
use crate::llm::ToolChoice;

/// The settings every provider's client shares, held as `client` by `OpenAiConfig`,
/// `OpenAiResponsesConfig`, `AnthropicConfig` and `GeminiConfig` (features permitting), whose
/// setters (`.base_url(..)`, `.api_key(..)`, `.retry(..)`, `.timeouts(..)`, ...) write it. Its `Debug`
/// never shows the API key.
///
/// ```
/// # #[cfg(feature = "openai")] {
/// use std::time::Duration;
/// use yiem_core::llm::{OpenAiConfig, RetryPolicy};
///
/// let config = OpenAiConfig::new("http://localhost:11434/v1", "llama3.2")
///     .api_key("sk-test")
///     .retry(RetryPolicy::none())
///     .reply_timeout(Duration::from_secs(60))
///     .extra("temperature", serde_json::json!(0.2));
/// assert_eq!(config.client.model, "llama3.2");
/// assert_eq!(config.client.retry.max_retries, 0);
/// assert_eq!(config.client.reply_timeout, Duration::from_secs(60));
/// assert!(!format!("{:?}", config.client).contains("sk-test"));
/// # }
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct ClientConfig {
    /// The base URL; each provider appends its path (see its configuration).
    pub base_url: String,
    /// The API key, sent in the provider's header (`Authorization: Bearer <key>`, `x-api-key`,
    /// `x-goog-api-key`); local OpenAI-compatible servers need none.
    pub api_key: Option<String>,
    /// The model name sent with each request.
    pub model: String,
    /// More request fields, merged into every body; they override the client's own fields of the same
    /// name.
    pub extra_body: Map<String, Value>,
    /// Which tools the model may or must call, in requests that carry tools (default
    /// [`ToolChoice::Auto`]: nothing is sent).
    pub tool_choice: ToolChoice,
    /// Retries on 429, 5xx (Anthropic's 529 included) and connection failures.
    pub retry: RetryPolicy,
    /// The longest wait for a TCP (and TLS) connection (default 30 s).
    pub connect_timeout: Duration,
    /// The longest wait for the response headers after sending a request (default 300 s; local servers
    /// may load the model first).
    pub response_timeout: Duration,
    /// The longest silence between two pieces of a streaming body (default 300 s).
    pub idle_timeout: Duration,
    /// The longest time to read one whole reply, from its response headers to its end (default 30
    /// minutes).
    pub reply_timeout: Duration,
    /// The largest event of a stream, or body of a server that does not stream, in bytes (default
    /// 64 MiB).
    pub max_event_bytes: usize,
}

impl ClientConfig {
    /// The settings for `model` at `base_url`, without an API key, with the default retries, timeouts and
    /// limits.
    pub(crate) fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        ClientConfig {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            extra_body: Map::new(),
            tool_choice: ToolChoice::Auto,
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(30),
            response_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(300),
            reply_timeout: super::DEFAULT_REPLY_TIMEOUT,
            max_event_bytes: super::DEFAULT_MAX_EVENT_BYTES,
        }
    }

    /// Adds the [`extra_body`](Self::extra_body) fields to a request's `body`, over its own.
    pub(crate) fn add_extra(&self, body: &mut Map<String, Value>) {
        for (key, value) in &self.extra_body {
            body.insert(key.clone(), value.clone());
        }
    }
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("extra_body", &self.extra_body)
            .field("tool_choice", &self.tool_choice)
            .field("retry", &self.retry)
            .field("connect_timeout", &self.connect_timeout)
            .field("response_timeout", &self.response_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("reply_timeout", &self.reply_timeout)
            .field("max_event_bytes", &self.max_event_bytes)
            .finish()
    }
}

/// Why a model client could not be configured.
///
/// ```
/// use yiem_core::llm::ConfigError;
///
/// let error = ConfigError::InvalidBaseUrl { url: "localhost:8080".into() };
/// assert_eq!(error.to_string(), "the base URL `localhost:8080` must start with http:// or https://");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The base URL was not given.
    #[error("`{variable}` is not set: set it to {expected}")]
    MissingBaseUrl {
        /// The environment variable read.
        variable: &'static str,
        /// What it should hold, with an example.
        expected: &'static str,
    },
    /// The API key was not given (providers that always need one).
    #[error("`{variable}` is not set: set it to your API key")]
    MissingApiKey {
        /// The environment variable read.
        variable: &'static str,
    },
    /// The base URL is not an http(s) URL.
    #[error("the base URL `{url}` must start with http:// or https://")]
    InvalidBaseUrl {
        /// The URL given.
        url: String,
    },
    /// `YIEM_PROVIDER` names a provider this build does not have.
    #[error(
        "`YIEM_PROVIDER` is `{name}`, which this build does not know: use one of {known}, or offline"
    )]
    UnknownProvider {
        /// The name given.
        name: String,
        /// The providers of this build.
        known: String,
    },
    /// The HTTP client could not be built (e.g. the TLS backend failed to start).
    #[error("could not build the HTTP client: {0}")]
    Client(String),
}
