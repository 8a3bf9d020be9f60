//! The server side of the MCP conformance suite (`@modelcontextprotocol/conformance`, as
//! `.ci/mcp-conformance-server` installs and runs it), on yiem's public server API and `#[tool]` only:
//! every tool the suite's tool, logging, elicitation, sampling, input-required and custom-header
//! scenarios call, and its resources and prompts.
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
//!
//! It also serves the Agent Skills in `examples/skills/` (SEP-2640), for the suite's `sep-2640-*`
//! scenarios: a skill with a subfolder and frontmatter beyond `name` and `description`, and a plain one.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use yiem_core::mcp::{
    ContentBlock, ContextStore, DEFAULT_MAX_SESSIONS, McpHttpServer, McpPrompt, McpServer,
    PromptContext, PromptMessage, ResourceContents, Role, SkillCatalog, prompt,
    register_all_prompts, register_all_resources, resource,
};
use yiem_core::{
    ask::{ElicitError, ElicitationAnswer, LogLevel, Questions, Root, Sampling, SamplingAnswer},
    store::ToolStore,
    tool,
    tool::{AgentTool, Content, ResourceInfo, State, ToolContext},
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

/// A static text resource.
#[resource(uri = "test://static-text", mime_type = "text/plain")]
async fn static_text() -> &'static str {
    "This is the content of the static text resource."
}

/// A static binary resource: a PNG image.
#[resource(uri = "test://static-binary", mime_type = "image/png")]
async fn static_binary() -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(RED_PIXEL_PNG)
        .expect("the pixel is base64")
}

/// A resource whose updates clients may subscribe to.
#[resource(uri = "test://watched-resource", mime_type = "text/plain")]
async fn watched_resource() -> &'static str {
    "This resource is watched."
}

/// Data for one ID, from the template `test://template/{id}/data`.
#[resource(
    uri = "test://template/{id}/data",
    mime_type = "application/json",
    complete(id = complete_id)
)]
async fn template_data(id: String) -> String {
    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string()
}

/// The IDs the template's `{id}` completes to.
fn complete_id(_typed: &str) -> Vec<String> {
    ["123", "124", "200"].map(String::from).to_vec()
}

/// A simple prompt without arguments.
#[prompt]
async fn test_simple_prompt() -> &'static str {
    "This is a simple prompt for testing."
}

#[derive(Deserialize, JsonSchema)]
struct TwoArgs {
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
}

/// A prompt with two arguments.
#[prompt(complete(arg1 = complete_arg1))]
async fn test_prompt_with_arguments(args: TwoArgs) -> String {
    format!(
        "Prompt with arguments: arg1='{}', arg2='{}'",
        args.arg1, args.arg2
    )
}

/// What `arg1` completes to.
fn complete_arg1(_typed: &str) -> Vec<String> {
    ["paris", "park", "party", "test", "testing"]
        .map(String::from)
        .to_vec()
}

#[derive(Deserialize, JsonSchema)]
struct EmbedArgs {
    /// URI of the resource to embed.
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

/// A prompt that embeds a resource.
#[prompt]
async fn test_prompt_with_embedded_resource(args: EmbedArgs) -> Vec<PromptMessage> {
    let resource =
        ResourceContents::text("Embedded resource content for testing.", args.resource_uri)
            .with_mime_type("text/plain");
    vec![
        PromptMessage::new(Role::User, ContentBlock::resource(resource)),
        PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
    ]
}

/// A prompt with an image.
#[prompt]
async fn test_prompt_with_image() -> Vec<PromptMessage> {
    vec![
        PromptMessage::new(Role::User, ContentBlock::image(RED_PIXEL_PNG, "image/png")),
        PromptMessage::new_text(Role::User, "Please analyze the image above."),
    ]
}

// The input-required scenarios (2026-07-28, SEP-2322): tools and a prompt that ask several questions
// at once under keys of their own (`ToolContext::ask`), answered by the client in `input_required`
// rounds whose state the server signs.

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Whether to go on.
    ok: bool,
}

#[derive(Deserialize, JsonSchema)]
struct Color {
    /// Your favorite color.
    color: String,
}

/// The URIs of roots, for a result.
fn listed(roots: &[Root]) -> String {
    roots
        .iter()
        .map(|root| root.uri.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The text of a completion, or why there is none.
fn completion(answer: SamplingAnswer) -> String {
    match answer {
        SamplingAnswer::Text { text, .. } => text,
        SamplingAnswer::Refuse(why) => format!("(refused: {why})"),
        _ => "(no completion)".into(),
    }
}

/// Ask the user's name under the key `user_name`.
#[tool]
async fn test_input_required_result_elicitation(ctx: ToolContext) -> Result<String, ElicitError> {
    let answers = ctx
        .ask(Questions::new().form::<Name>("user_name", "What is your name?"))
        .await?;
    Ok(match answers.form::<Name>("user_name")? {
        ElicitationAnswer::Accept(name) => format!("Hello, {}!", name.name),
        _ => "Hello, stranger!".into(),
    })
}

/// Ask the client's model a question under the key `capital_question`.
#[tool]
async fn test_input_required_result_sampling(ctx: ToolContext) -> Result<String, ElicitError> {
    let question = Sampling::prompt("What is the capital of France?", 100);
    let answers = ctx
        .ask(Questions::new().sample("capital_question", question))
        .await?;
    Ok(completion(answers.sample("capital_question")?))
}

/// List the client's roots under the key `client_roots`.
#[tool]
async fn test_input_required_result_list_roots(ctx: ToolContext) -> Result<String, ElicitError> {
    let answers = ctx.ask(Questions::new().roots("client_roots")).await?;
    Ok(format!(
        "Roots: {}",
        listed(&answers.roots("client_roots")?)
    ))
}

/// Ask for a confirmation; the answer comes back with the signed request state.
#[tool]
async fn test_input_required_result_request_state(ctx: ToolContext) -> Result<String, ElicitError> {
    let answers = ctx
        .ask(Questions::new().form::<Confirm>("confirm", "Please confirm"))
        .await?;
    Ok(match answers.form::<Confirm>("confirm")? {
        ElicitationAnswer::Accept(confirm) => format!("state-ok: confirmed={}", confirm.ok),
        _ => "state-ok: not confirmed".into(),
    })
}

/// Ask a form, a completion and the roots in one round.
#[tool]
async fn test_input_required_result_multiple_inputs(
    ctx: ToolContext,
) -> Result<String, ElicitError> {
    let answers = ctx
        .ask(
            Questions::new()
                .form::<Name>("user_name", "What is your name?")
                .sample("greeting", Sampling::prompt("Generate a greeting", 50))
                .roots("client_roots"),
        )
        .await?;
    let name = match answers.form::<Name>("user_name")? {
        ElicitationAnswer::Accept(name) => name.name,
        _ => "stranger".into(),
    };
    Ok(format!(
        "name: {name}; greeting: {}; roots: {}",
        completion(answers.sample("greeting")?),
        listed(&answers.roots("client_roots")?)
    ))
}

/// Ask in two rounds: the name, then the favorite color.
#[tool]
async fn test_input_required_result_multi_round(ctx: ToolContext) -> Result<String, ElicitError> {
    let first = ctx
        .ask(Questions::new().form::<Name>("step1", "Step 1: What is your name?"))
        .await?;
    let ElicitationAnswer::Accept(name) = first.form::<Name>("step1")? else {
        return Ok("no name given".into());
    };
    let second = ctx
        .ask(Questions::new().form::<Color>("step2", "Step 2: What is your favorite color?"))
        .await?;
    Ok(match second.form::<Color>("step2")? {
        ElicitationAnswer::Accept(color) => format!("{} likes {}", name.name, color.color),
        _ => format!("{} has no favorite color", name.name),
    })
}

/// Ask for a confirmation; a request state that was changed is refused.
#[tool]
async fn test_input_required_result_tampered_state(
    ctx: ToolContext,
) -> Result<String, ElicitError> {
    let answers = ctx
        .ask(Questions::new().form::<Confirm>("confirm", "Please confirm"))
        .await?;
    Ok(match answers.form::<Confirm>("confirm")? {
        ElicitationAnswer::Accept(confirm) => format!("confirmed={}", confirm.ok),
        _ => "not confirmed".into(),
    })
}

/// Ask a form and a completion: only what the request's capabilities allow is sent.
#[tool]
async fn test_input_required_result_capabilities(ctx: ToolContext) -> Result<String, ElicitError> {
    let answers = ctx
        .ask(
            Questions::new()
                .form::<Name>("user_name", "What is your name?")
                .sample("greeting", Sampling::prompt("Generate a greeting", 50)),
        )
        .await?;
    let name = match answers.form::<Name>("user_name") {
        Ok(ElicitationAnswer::Accept(name)) => name.name,
        Ok(_) => "stranger".into(),
        Err(why) => format!("(not asked: {why})"),
    };
    let greeting = answers
        .sample("greeting")
        .map_or_else(|why| format!("(not asked: {why})"), completion);
    Ok(format!("name: {name}; greeting: {greeting}"))
}

/// A prompt that asks what context to use before it answers.
#[prompt]
async fn test_input_required_result_prompt(
    ctx: PromptContext,
) -> Result<Vec<PromptMessage>, ElicitError> {
    let form = json!({
        "type": "object",
        "properties": {"context": {"type": "string"}},
        "required": ["context"],
    });
    let answers = ctx
        .ask(Questions::new().form_with_schema(
            "user_context",
            "What context should the prompt use?",
            form,
        ))
        .await?;
    let context = match answers.form::<Value>("user_context")? {
        ElicitationAnswer::Accept(form) => form["context"].as_str().unwrap_or("").to_owned(),
        _ => "none".into(),
    };
    Ok(vec![PromptMessage::new_text(
        Role::User,
        format!("Use this context: {context}"),
    )])
}

#[derive(Deserialize, JsonSchema)]
struct RegionArgs {
    /// The region; an HTTP client sends it as the `Mcp-Param-Region` header too (SEP-2243).
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

/// Echo the region a client sent in the body and, over HTTP, in the `Mcp-Param-Region` header.
#[tool]
async fn test_custom_header(args: RegionArgs) -> String {
    format!("region: {}", args.region)
}

/// What the trigger tools change: the served tools and resources/prompts.
#[derive(Clone)]
struct Served {
    tools: ToolStore,
    context: ContextStore,
}

/// How many tools and prompts the triggers added, for fresh names.
static ADDED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Add a tool, so that listening clients hear `notifications/tools/list_changed`.
#[tool]
async fn test_trigger_tool_change(State(served): State<Served>) -> Result<String, String> {
    let n = ADDED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let added = AgentTool::builder(format!("test_added_tool_{n}"))
        .description("A tool test_trigger_tool_change added.")
        .handler(|_, _| async { "added" })
        .build()
        .map_err(|error| error.to_string())?;
    served
        .tools
        .register(added)
        .map_err(|error| error.to_string())?;
    Ok(format!("added test_added_tool_{n}"))
}

/// Add a prompt, so that listening clients hear `notifications/prompts/list_changed`.
#[tool]
async fn test_trigger_prompt_change(State(served): State<Served>) -> Result<String, String> {
    let n = ADDED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let added = McpPrompt::new(format!("test_added_prompt_{n}"))
        .description("A prompt test_trigger_prompt_change added.");
    served
        .context
        .add_prompt(added)
        .map_err(|error| error.to_string())?;
    Ok(format!("added test_added_prompt_{n}"))
}

// The tasks extension's fixtures (SEP-2663): the `tasks-*` scenarios call these.

#[derive(Deserialize, JsonSchema)]
struct Greeting {
    /// Who to greet.
    name: String,
}

/// Greet someone (answered at once, never a task).
#[tool]
async fn greet(args: Greeting) -> String {
    format!("Hello, {}!", args.name)
}

#[derive(Deserialize, JsonSchema)]
struct Compute {
    /// How long the computation takes, in seconds.
    seconds: u64,
    /// A label for the result.
    #[serde(default)]
    label: String,
}

/// Compute for a while, as a task (cancelled by `tasks/cancel`).
#[tool(task)]
async fn slow_compute(args: Compute) -> String {
    tokio::time::sleep(std::time::Duration::from_secs(args.seconds)).await;
    format!("computed {} in {} s", args.label, args.seconds)
}

/// A job that always fails as a tool (a task that completes with `isError`); only as a task.
#[tool(task = "required")]
async fn failing_job() -> Result<String, String> {
    Err("Tool execution failed".into())
}

/// A job whose tool panics: its task fails with a protocol error.
#[tool(task)]
async fn protocol_error_job() -> String {
    panic!("the job broke")
}

#[derive(Deserialize, JsonSchema)]
struct FileName {
    /// The file to delete.
    filename: String,
}

/// The form of the tasks' questions.
fn confirmation() -> Value {
    json!({
        "type": "object",
        "properties": {
            "confirm": {"type": "boolean", "title": "Confirm"},
            "name": {"type": "string", "title": "Name"},
        },
    })
}

/// Delete a file once the user confirms (a task that asks).
#[tool(task)]
async fn confirm_delete(ctx: ToolContext, args: FileName) -> Result<String, ElicitError> {
    let question = format!("Delete {}?", args.filename);
    Ok(
        match ctx.elicit_with_schema(question, confirmation()).await? {
            ElicitationAnswer::Accept(answer)
                if answer.get("confirm") == Some(&Value::Bool(true)) =>
            {
                format!("Deleted {}", args.filename)
            }
            _ => format!("Kept {}", args.filename),
        },
    )
}

/// Ask two questions at once (a task with two questions pending together).
#[tool(task)]
async fn multi_input(ctx: ToolContext) -> Result<String, ElicitError> {
    let (first, second) = tokio::join!(
        ctx.elicit_with_schema("First value?", confirmation()),
        ctx.elicit_with_schema("Second value?", confirmation()),
    );
    let name = |answer: ElicitationAnswer| match answer {
        ElicitationAnswer::Accept(answer) => answer
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned(),
        _ => "-".to_owned(),
    };
    Ok(format!("Got {} and {}", name(first?), name(second?)))
}

/// Ask the user's name, then greet them as a task (the question comes before the task).
#[tool(task = "required_after_questions")]
async fn test_tool_with_task(ctx: ToolContext) -> Result<String, ElicitError> {
    Ok(match ctx.elicit::<Name>("What is your name?").await? {
        ElicitationAnswer::Accept(name) => format!("Hello, {}!", name.name),
        _ => "No name given".into(),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let served = ToolStore::new("yiem-conformance");
    let context = ContextStore::new("yiem-conformance");
    let store = served.clone().with_state(Served {
        tools: served,
        context: context.clone(),
    });
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
        test_trigger_tool_change_tool(),
        test_trigger_prompt_change_tool(),
        greet_tool(),
        slow_compute_tool(),
        failing_job_tool(),
        protocol_error_job_tool(),
        confirm_delete_tool(),
        multi_input_tool(),
        test_tool_with_task_tool(),
        test_input_required_result_elicitation_tool(),
        test_input_required_result_sampling_tool(),
        test_input_required_result_list_roots_tool(),
        test_input_required_result_request_state_tool(),
        test_input_required_result_multiple_inputs_tool(),
        test_input_required_result_multi_round_tool(),
        test_input_required_result_tampered_state_tool(),
        test_input_required_result_capabilities_tool(),
        test_custom_header_tool(),
    ] {
        store.register(tool)?;
    }
    register_all_resources(&context)?;
    register_all_prompts(&context)?;
    let server = McpServer::new(store)
        .server_info("yiem-conformance", env!("CARGO_PKG_VERSION"))
        .context(context)
        .skills(SkillCatalog::from_dir(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/skills"
        ))?);
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
