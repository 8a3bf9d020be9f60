//! The server's questions for the user (MCP elicitation), as an [`McpClient`](super::McpClient) answers
//! them: the application gives an [`ElicitationHandler`] to
//! [`McpClientBuilder::elicitation`](super::McpClientBuilder::elicitation), and the client fills in
//! the schema's defaults for the fields the answer leaves out (SEP-1034).
//!
//! ```no_run
//! use yiem_core::mcp::{ElicitationAnswer, McpClient};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = McpClient::http("http://127.0.0.1:8000/mcp")
//!     .elicitation(|question: yiem_core::mcp::Elicitation| async move {
//!         println!("{} asks: {}", question.server, question.message);
//!         // Accept with nothing filled in: every field with a default gets it.
//!         ElicitationAnswer::Accept(serde_json::Map::new())
//!     })
//!     .connect()
//!     .await?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::pin::Pin;

use serde_json::{Map, Value};

/// A question from a server: the message for the user and the form's schema (a flat JSON object
/// schema of strings, numbers, integers, booleans and enums, per the MCP spec).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Elicitation {
    /// The server's name, as the client gives it.
    pub server: String,
    /// What the server asks, written by the server: escape it before showing it in a terminal.
    pub message: String,
    /// The requested schema (`{"type":"object","properties":{…},"required":[…]}`).
    pub schema: Value,
}

/// The user's answer to an [`Elicitation`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ElicitationAnswer {
    /// The user answered; fields left out that have a `default` in the schema get it.
    Accept(Map<String, Value>),
    /// The user declined to answer.
    Decline,
    /// The user dismissed the question without choosing.
    Cancel,
}

/// Answers a server's [`Elicitation`]. A closure `Fn(Elicitation) -> impl Future<Output =
/// ElicitationAnswer>` is one.
pub trait ElicitationHandler: Send + Sync + 'static {
    /// Asks the user and returns the answer.
    fn elicit(
        &self,
        question: Elicitation,
    ) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + 'static>>;
}

impl<F, Fut> ElicitationHandler for F
where
    F: Fn(Elicitation) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ElicitationAnswer> + Send + 'static,
{
    fn elicit(
        &self,
        question: Elicitation,
    ) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + 'static>> {
        Box::pin(self(question))
    }
}

/// `content` with every property of `schema` that it leaves out and that has a `default` set to
/// that default (SEP-1034).
pub(super) fn with_defaults(mut content: Map<String, Value>, schema: &Value) -> Map<String, Value> {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if let Some(default) = property.get("default")
                && !content.contains_key(name)
            {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    content
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_fill_only_the_fields_left_out() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "email": {"type": "string"},
        }});
        let answer = json!({"name": "Ada"}).as_object().cloned().unwrap();
        assert_eq!(
            Value::Object(with_defaults(answer, &schema)),
            json!({"name": "Ada", "age": 30})
        );
    }
}
