//! Every accepted return type.
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use yiem_core::{tool, tool::{AgentToolResult, Content, Json}};

#[derive(Serialize, JsonSchema)]
struct Point {
    x: i32,
}

/// Returns `String`.
#[tool]
async fn owned() -> String {
    "owned".into()
}

/// Returns `&'static str`.
#[tool]
async fn borrowed() -> &'static str {
    "borrowed"
}

/// Returns nothing.
#[tool]
async fn unit() {}

/// Returns `()` explicitly from a plain fn.
#[tool]
fn unit_plain() -> () {}

/// Returns a full result.
#[tool]
async fn full() -> AgentToolResult {
    AgentToolResult::text("full").with_terminate(true)
}

/// Returns structured output.
#[tool]
async fn structured() -> Json<Point> {
    Json(Point { x: 1 })
}

/// Returns content blocks.
#[tool]
async fn blocks() -> Vec<Content> {
    vec![Content::text("a"), Content::image("AAAA", "image/png")]
}

/// Returns a result with an io error.
#[tool]
async fn fallible() -> Result<Json<Point>, std::io::Error> {
    Err(std::io::Error::other("disk on fire"))
}

/// Returns a result with a string error from a plain fn.
#[tool]
fn fallible_plain() -> Result<&'static str, String> {
    Ok("fine")
}

#[tokio::main]
async fn main() {
    let none = json!({});
    assert_eq!(owned_tool().execute("c", none.clone()).await.text_content(), "owned");
    assert_eq!(borrowed_tool().execute("c", none.clone()).await.text_content(), "borrowed");
    assert!(unit_tool().execute("c", none.clone()).await.content.is_empty());
    assert!(unit_plain_tool().execute("c", none.clone()).await.content.is_empty());
    assert!(full_tool().execute("c", none.clone()).await.terminate);
    assert_eq!(structured_tool().execute("c", none.clone()).await.structured_content(), Some(&json!({"x": 1})));
    assert_eq!(blocks_tool().execute("c", none.clone()).await.content.len(), 2);
    let failed = fallible_tool().execute("c", none.clone()).await;
    assert!(failed.is_error);
    assert_eq!(failed.text_content(), "disk on fire");
    assert!(fallible_tool().output_schema().is_some());
    assert_eq!(fallible_plain_tool().execute("c", none).await.text_content(), "fine");
}
