//! [`ConfigError`]: why a provider's client (OpenAI, Anthropic, Gemini) could not be configured.

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
