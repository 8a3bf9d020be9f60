//! Every accepted signature, async and plain.
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::{tool, tool::ToolContext};

#[derive(Deserialize, JsonSchema)]
struct Args {
    n: i32,
}

/// Async, arguments only.
#[tool]
async fn async_args(args: Args) -> String {
    args.n.to_string()
}

/// Async, context and arguments.
#[tool]
async fn async_ctx_args(ctx: ToolContext, args: Args) -> String {
    format!("{} {}", ctx.call_id(), args.n)
}

/// Async, nothing.
#[tool]
async fn async_nothing() -> String {
    "nothing".into()
}

/// Async, context only.
#[tool]
async fn async_ctx(ctx: yiem_core::tool::ToolContext) -> String {
    ctx.call_id().to_owned()
}

/// Plain, arguments only.
#[tool]
fn plain_args(args: Args) -> String {
    args.n.to_string()
}

/// Plain, context and arguments.
#[tool]
fn plain_ctx_args(ctx: ToolContext, args: Args) -> String {
    format!("{} {}", ctx.call_id(), args.n)
}

/// Plain, nothing.
#[tool]
fn plain_nothing() -> String {
    "nothing".into()
}

/// Plain, context only.
#[tool]
fn plain_ctx(ctx: ToolContext) -> String {
    ctx.call_id().to_owned()
}

/// Destructured arguments.
#[tool]
async fn destructured(Args { n }: Args) -> String {
    n.to_string()
}

#[tokio::main]
async fn main() {
    let args = json!({"n": 7});
    assert_eq!(async_args_tool().execute("c", args.clone()).await.text_content(), "7");
    assert_eq!(async_ctx_args_tool().execute("c", args.clone()).await.text_content(), "c 7");
    assert_eq!(async_nothing_tool().execute("c", json!({})).await.text_content(), "nothing");
    assert_eq!(async_ctx_tool().execute("c", json!({})).await.text_content(), "c");
    assert_eq!(plain_args_tool().execute("c", args.clone()).await.text_content(), "7");
    assert_eq!(plain_ctx_args_tool().execute("c", args.clone()).await.text_content(), "c 7");
    assert_eq!(plain_nothing_tool().execute("c", json!({})).await.text_content(), "nothing");
    assert_eq!(plain_ctx_tool().execute("c", json!({})).await.text_content(), "c");
    assert_eq!(destructured_tool().execute("c", args).await.text_content(), "7");
}
