//! The server side of the MCP conformance suite's logging and elicitation scenarios, on yiem's public
//! server API: `test_tool_with_logging`, `test_elicitation`, `test_elicitation_sep1034_defaults` and
//! `test_simple_text`, served over streamable HTTP on the address given (default `127.0.0.1:3001`) until
//! Ctrl-C. Run by hand against `conformance server --url http://ADDR/mcp --scenario NAME`
//! (`@modelcontextprotocol/conformance@0.2.0-alpha.12`, as `.ci/mcp-conformance` installs it).
//!
//! `logging-set-level`, `tools-call-with-logging` and `tools-call-simple-text` pass.
//! `tools-call-elicitation` and `elicitation-sep1034-defaults` fail: `McpHttpServer` is stateless, and a
//! stateless request cannot receive the client's answer to `elicitation/create` (rmcp refuses a JSON-RPC
//! response posted without a session), so the tools get `ElicitError::CannotAsk` instead of asking.
//! Elicitation works over stdio (`McpServer::serve_stdio`), where the tests drive it with the Python SDK.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::mcp::{McpHttpServer, McpServer};
use yiem_core::{ElicitError, ElicitationAnswer, LogLevel, ToolContext, ToolStore, tool};

/// Send three log messages while running.
#[tool]
async fn test_tool_with_logging(ctx: ToolContext) -> &'static str {
    ctx.log(LogLevel::Info, "Tool execution started");
    ctx.log(LogLevel::Info, "Tool processing data");
    ctx.log(LogLevel::Info, "Tool execution completed");
    "Tool with logging executed successfully"
}

/// Return simple text.
#[tool]
async fn test_simple_text() -> &'static str {
    "This is a simple text response for testing."
}

#[derive(Deserialize, JsonSchema)]
struct ElicitArgs {
    /// What to ask.
    message: String,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Info {
    /// Your name.
    username: String,
    /// Your email address.
    email: String,
}

/// Ask the user for their information.
#[tool]
async fn test_elicitation(ctx: ToolContext, args: ElicitArgs) -> Result<String, ElicitError> {
    Ok(match ctx.elicit::<Info>(args.message).await? {
        ElicitationAnswer::Accept(info) => format!("User accepted: {}", info.username),
        ElicitationAnswer::Decline => "User declined".into(),
        _ => "User cancelled".into(),
    })
}

/// Ask with a form whose fields all have defaults (SEP-1034).
#[tool]
async fn test_elicitation_sep1034_defaults(ctx: ToolContext) -> Result<String, ElicitError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": true},
        },
    });
    let answer = ctx.elicit_with_schema(
        "Please review and update the form fields with defaults",
        schema,
    );
    Ok(match answer.await? {
        ElicitationAnswer::Accept(content) => format!("Elicitation completed: {}", json!(content)),
        _ => "Elicitation not accepted".into(),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = ToolStore::new("yiem-conformance");
    store.register(test_tool_with_logging_tool())?;
    store.register(test_simple_text_tool())?;
    store.register(test_elicitation_tool())?;
    store.register(test_elicitation_sep1034_defaults_tool())?;
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3001".into());
    let listener = tokio::net::TcpListener::bind(address.as_str()).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    McpHttpServer::new(McpServer::new(store))
        .serve(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
