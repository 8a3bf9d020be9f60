//! The server side of the MCP conformance suite (`@modelcontextprotocol/conformance`, as
//! `.ci/mcp-conformance-server` installs and runs it), on yiem's public server API and `#[tool]` only:
//! every tool the suite's tool, logging, elicitation and sampling scenarios call.
//!
//! ```text
//! cargo run -p examples --example mcp_conformance_server -- --http 127.0.0.1:3001   # streamable HTTP
//! cargo run -p examples --example mcp_conformance_server                            # stdio
//! ```
//!
//! Over HTTP it serves with sessions (`McpHttpServer::sessions`), so that clients of the revisions
//! before 2026-07-28, which the suite's elicitation and sampling scenarios speak, can be asked; clients of
//! 2026-07-28 are served without a session and asked by `input_required` answers. It prints
//! `listening on http://ADDR/mcp` on stderr and serves until Ctrl-C.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use yiem_core::mcp::{DEFAULT_MAX_SESSIONS, McpHttpServer, McpServer};
use yiem_core::{
    ask::{ElicitError, ElicitationAnswer, LogLevel, Sampling, SamplingAnswer},
    store::ToolStore,
    tool,
    tool::{AgentTool, Content, ResourceInfo, ToolContext},
};

/// A 1×1 red pixel, as PNG.
const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A WAV file of one silent sample (8 kHz, 8-bit, mono).
const SILENT_WAV: &str = "UklGRiUAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQEAAACA";

/// An embedded text resource with its MIME type.
fn embedded(uri: &str, mime_type: &str, text: &str) -> Content {
    Content::ResourceText {
        resource: Box::new(ResourceInfo::new(uri).mime_type(mime_type)),
        text: text.into(),
    }
}

/// Return simple text.
#[tool]
async fn test_simple_text() -> &'static str {
    "This is a simple text response for testing."
}

/// Return an image.
#[tool]
async fn test_image_content() -> Vec<Content> {
    vec![Content::image(RED_PIXEL_PNG, "image/png")]
}

/// Return audio.
#[tool]
async fn test_audio_content() -> Vec<Content> {
    vec![Content::audio(SILENT_WAV, "audio/wav")]
}

/// Return an embedded resource.
#[tool]
async fn test_embedded_resource() -> Vec<Content> {
    vec![embedded(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )]
}

/// Return text, an image and an embedded resource together.
#[tool]
async fn test_multiple_content_types() -> Vec<Content> {
    vec![
        Content::text("Multiple content types test:"),
        Content::image(RED_PIXEL_PNG, "image/png"),
        embedded(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        ),
    ]
}

/// Fail on purpose, with a message.
#[tool]
async fn test_error_handling() -> Result<String, String> {
    Err("This tool intentionally returns an error for testing".into())
}

/// Report progress three times, then finish.
#[tool]
async fn test_tool_with_progress(ctx: ToolContext) -> &'static str {
    for step in ["0%", "50%", "100%"] {
        ctx.update(format!("progress {step}"));
    }
    "Progress test completed"
}

/// Send three log messages while running.
#[tool]
async fn test_tool_with_logging(ctx: ToolContext) -> &'static str {
    ctx.log(LogLevel::Info, "Tool execution started");
    ctx.log(LogLevel::Info, "Tool processing data");
    ctx.log(LogLevel::Info, "Tool execution completed");
    "Tool with logging executed successfully"
}

#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the client's model.
    prompt: String,
}

/// Ask the client's model to complete a prompt.
#[tool]
async fn test_sampling(ctx: ToolContext, args: SamplingArgs) -> Result<String, String> {
    match ctx.sample(Sampling::prompt(args.prompt, 100)).await {
        Ok(SamplingAnswer::Text { text, .. }) => Ok(format!("LLM response: {text}")),
        Ok(SamplingAnswer::Refuse(why)) => Err(format!("the client refused to sample: {why}")),
        Ok(_) => Err("the client's answer was neither a completion nor a refusal".into()),
        Err(error) => Err(error.to_string()),
    }
}

#[derive(Deserialize, JsonSchema)]
struct ElicitArgs {
    /// The message to show the user.
    message: String,
}

#[derive(Deserialize, JsonSchema)]
struct Info {
    /// User's response
    username: String,
    /// User's email address
    email: String,
}

/// Ask the user for their name and email.
#[tool]
async fn test_elicitation(ctx: ToolContext, args: ElicitArgs) -> Result<String, ElicitError> {
    Ok(match ctx.elicit::<Info>(args.message).await? {
        ElicitationAnswer::Accept(info) => format!(
            "User response: action=accept, content={}",
            json!({"username": info.username, "email": info.email})
        ),
        ElicitationAnswer::Decline => "User response: action=decline".into(),
        _ => "User response: action=cancel".into(),
    })
}

#[derive(Deserialize, JsonSchema)]
struct Name {
    /// Your name.
    name: String,
}

/// Ask the user's name (a 2026-07-28 client is asked by an `input_required` answer; one that did not
/// declare `elicitation` gets `-32021`).
#[tool]
async fn test_streaming_elicitation(ctx: ToolContext) -> Result<String, ElicitError> {
    Ok(match ctx.elicit::<Name>("What is your name?").await? {
        ElicitationAnswer::Accept(name) => format!("Hello, {}!", name.name),
        _ => "No name given".into(),
    })
}

/// Needs the client's `sampling` capability: it asks the client's model first.
#[tool]
async fn test_missing_capability(ctx: ToolContext) -> Result<String, ElicitError> {
    ctx.sample(Sampling::prompt("Say hello.", 10)).await?;
    Ok("sampled".into())
}

/// Log at info (sent only to a client that asked for log messages).
#[tool]
async fn test_logging_tool(ctx: ToolContext) -> &'static str {
    ctx.log(LogLevel::Info, "a log message");
    "logged"
}

/// The text of an elicitation's outcome, as the SEP-1034 and SEP-1330 scenarios read it.
fn completed(answer: ElicitationAnswer) -> String {
    match answer {
        ElicitationAnswer::Accept(content) => {
            format!(
                "Elicitation completed: action=accept, content={}",
                Value::Object(content)
            )
        }
        ElicitationAnswer::Decline => "Elicitation completed: action=decline, content={}".into(),
        _ => "Elicitation completed: action=cancel, content={}".into(),
    }
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
    let answer = ctx
        .elicit_with_schema(
            "Please review and update the form fields with defaults",
            schema,
        )
        .await?;
    Ok(completed(answer))
}

/// Ask with every kind of enum field (SEP-1330).
#[tool]
async fn test_elicitation_sep1330_enums(ctx: ToolContext) -> Result<String, ElicitError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"},
            ]}},
        },
    });
    let answer = ctx
        .elicit_with_schema("Please select options from the enum fields", schema)
        .await?;
    Ok(completed(answer))
}

/// The suite's JSON Schema 2020-12 tool: its input schema is kept as written, keyword for keyword.
fn json_schema_2020_12_tool() -> AgentTool {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                              "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false,
    });
    AgentTool::builder("json_schema_2020_12_tool")
        .description("Tool with JSON Schema 2020-12 features")
        .input_schema(schema)
        .handler(|_, _| async { "ok" })
        .build()
        .expect("the suite's schema is a valid JSON Schema 2020-12 object schema")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let store = ToolStore::new("yiem-conformance");
    for tool in [
        test_simple_text_tool(),
        test_image_content_tool(),
        test_audio_content_tool(),
        test_embedded_resource_tool(),
        test_multiple_content_types_tool(),
        test_error_handling_tool(),
        test_tool_with_progress_tool(),
        test_tool_with_logging_tool(),
        test_sampling_tool(),
        test_elicitation_tool(),
        test_elicitation_sep1034_defaults_tool(),
        test_elicitation_sep1330_enums_tool(),
        json_schema_2020_12_tool(),
        test_streaming_elicitation_tool(),
        test_missing_capability_tool(),
        test_logging_tool_tool(),
    ] {
        store.register(tool)?;
    }
    let server =
        McpServer::new(store).server_info("yiem-conformance", env!("CARGO_PKG_VERSION"));
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(address) = args
        .windows(2)
        .find(|pair| pair[0] == "--http")
        .map(|pair| pair[1].clone())
    else {
        server.serve_stdio().await?;
        return Ok(());
    };
    let listener = tokio::net::TcpListener::bind(address.as_str()).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    McpHttpServer::new(server)
        .sessions(DEFAULT_MAX_SESSIONS)
        .serve(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
