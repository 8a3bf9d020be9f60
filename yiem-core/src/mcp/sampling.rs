//! A server asking the client's model for a completion (MCP sampling), as an
//! [`McpClient`](super::McpClient) answers it: only when the application gives a [`SamplingHandler`] to
//! [`McpClientBuilder::sampling`](super::McpClientBuilder::sampling), which decides what model answers,
//! within which limits. Without one the client does not declare sampling and refuses the requests.
//!
//! Sampling is deprecated by the 2026-07-28 revision (SEP-2577); servers of the earlier revisions still
//! use it.
//!
//! ```no_run
//! use yiem_core::mcp::{McpClient, Sampling, SamplingAnswer};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = McpClient::http("http://127.0.0.1:8000/mcp")
//!     .sampling(|request: Sampling| async move {
//!         if request.max_tokens > 1_000 {
//!             return SamplingAnswer::Refuse("this client samples at most 1000 tokens".into());
//!         }
//!         SamplingAnswer::text("a summary", "my-model")
//!     })
//!     .connect()
//!     .await?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::pin::Pin;

/// One message of the conversation a server wants completed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SampledMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// The message's text; content that is not text (images, audio, tool use) as its JSON.
    pub text: String,
}

/// A server's request for a completion.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Sampling {
    /// The server's name, as the client gives it.
    pub server: String,
    /// The conversation, oldest first, written by the server.
    pub messages: Vec<SampledMessage>,
    /// The system prompt the server asks for, if any.
    pub system_prompt: Option<String>,
    /// The most tokens the server wants.
    pub max_tokens: u32,
}

/// The answer to a [`Sampling`] request.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SamplingAnswer {
    /// The completion, and the model that wrote it.
    Text {
        /// The assistant's text.
        text: String,
        /// The model's name.
        model: String,
    },
    /// Not answered (the user or the application's limits said no), with why: the server gets an error.
    Refuse(String),
}

impl SamplingAnswer {
    /// A completion `text` written by `model`.
    pub fn text(text: impl Into<String>, model: impl Into<String>) -> Self {
        SamplingAnswer::Text {
            text: text.into(),
            model: model.into(),
        }
    }
}

/// Answers a server's [`Sampling`] request. A closure `Fn(Sampling) -> impl Future<Output =
/// SamplingAnswer>` is one.
pub trait SamplingHandler: Send + Sync + 'static {
    /// Completes the conversation, or refuses.
    fn sample(
        &self,
        request: Sampling,
    ) -> Pin<Box<dyn Future<Output = SamplingAnswer> + Send + 'static>>;
}

impl<F, Fut> SamplingHandler for F
where
    F: Fn(Sampling) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = SamplingAnswer> + Send + 'static,
{
    fn sample(
        &self,
        request: Sampling,
    ) -> Pin<Box<dyn Future<Output = SamplingAnswer> + Send + 'static>> {
        Box::pin(self(request))
    }
}
