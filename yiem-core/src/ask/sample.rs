//! Asking a model for a completion on behalf of a tool or a server (sampling): the request ([`Sampling`]),
//! its answer ([`SamplingAnswer`]) and who answers ([`SamplingHandler`]).
//!
//! - A **tool** asks with [`ToolContext::sample`](crate::tool::ToolContext::sample). Over MCP the client's model
//!   answers (`sampling/createMessage`, when the client declared `sampling`); in an executor or an agent,
//!   the handler given to [`ToolExecutor::with_sampling`](crate::exec::ToolExecutor::with_sampling) — for an
//!   agent, [`AgentSettings::sampling`](crate::agent::AgentSettings::sampling), which can be the agent's own model
//!   ([`model_sampler`](crate::llm::model_sampler)).
//! - An **MCP server** asks an `mcp::McpClient`, which answers only when the application gives a handler
//!   to `McpClientBuilder::sampling`, which decides what model answers, within which limits. Without one
//!   the client does not declare sampling and refuses the requests.
//!
//! Sampling is deprecated by MCP's 2026-07-28 revision (SEP-2577); servers and clients of the earlier
//! revisions still use it, and a 2026-07-28 client that declares it is still asked (by `input_required`).
//!
//! ```no_run
//! # #[cfg(feature = "mcp-client")]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use yiem_core::{ask::{Sampling, SamplingAnswer}, mcp::McpClient};
//!
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

/// One message of the conversation to complete.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SampledMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// The message's text; content that is not text (images, audio, tool use) as its JSON.
    pub text: String,
}

/// A request for a completion, by an MCP server or a tool.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Sampling {
    /// Who asks: the MCP server's name as the client gives it, or, for a tool, the name of the store it
    /// runs in (empty when it runs in none).
    pub server: String,
    /// The conversation, oldest first, written by the server or the tool.
    pub messages: Vec<SampledMessage>,
    /// The system prompt the server asks for, if any.
    pub system_prompt: Option<String>,
    /// The most tokens the server wants.
    pub max_tokens: u32,
}

impl Sampling {
    /// A request to complete one user message, `prompt`, in at most `max_tokens` tokens.
    ///
    /// ```
    /// let request = yiem_core::ask::Sampling::prompt("Summarise: ...", 200).system_prompt("Be brief.");
    /// assert_eq!(request.messages[0].role, "user");
    /// ```
    pub fn prompt(prompt: impl Into<String>, max_tokens: u32) -> Self {
        Sampling {
            server: String::new(),
            messages: vec![SampledMessage::new("user", prompt)],
            system_prompt: None,
            max_tokens,
        }
    }

    /// The same request with the system prompt `prompt`.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }
}

impl SampledMessage {
    /// A message of `role` (`user` or `assistant`) saying `text`.
    pub fn new(role: impl Into<String>, text: impl Into<String>) -> Self {
        SampledMessage {
            role: role.into(),
            text: text.into(),
        }
    }
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
    /// Not answered (the user or the application's limits said no), with why: a server gets an error.
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

/// Answers a [`Sampling`] request. A closure `Fn(Sampling) -> impl Future<Output =
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
