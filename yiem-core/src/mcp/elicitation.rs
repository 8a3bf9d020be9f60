//! The server's questions for the user (MCP elicitation), as an [`McpClient`](super::McpClient) answers
//! them: the application gives an [`ElicitationHandler`](crate::ask::ElicitationHandler) to
//! [`McpClientBuilder::elicitation`](super::McpClientBuilder::elicitation), and the client fills in
//! the schema's defaults for the fields the answer leaves out (SEP-1034).
//!
//! ```no_run
//! use yiem_core::{ask::{Elicitation, ElicitationAnswer}, mcp::McpClient};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = McpClient::http("http://127.0.0.1:8000/mcp")
//!     .elicitation(|question: Elicitation| async move {
//!         println!("{} asks: {}", question.server, question.message);
//!         // Accept with nothing filled in: every field with a default gets it.
//!         ElicitationAnswer::Accept(serde_json::Map::new())
//!     })
//!     .connect()
//!     .await?;
//! # Ok(()) }
//! ```

use serde_json::{Map, Value};

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
