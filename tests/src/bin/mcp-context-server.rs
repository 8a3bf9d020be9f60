//! The MCP server the `mcp_context` tests drive with the official Python SDK over stdio: resources (text,
//! bytes, a typed template, one that fails, one over the result bound), prompts (typed arguments, an
//! enum's completions, a function's completions) and two tools that change what is served, so a client
//! sees `notifications/resources/updated` and `notifications/prompts/list_changed`.

use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::mcp::{
    ContextStore, McpPrompt, McpServer, PromptMessage, Role, prompt, register_all_prompts,
    register_all_resources, resource,
};
use yiem_core::{store::ToolStore, tool, tool::State};

/// The notes' front page.
#[resource(uri = "notes://readme", mime_type = "text/markdown")]
async fn readme() -> &'static str {
    "# Notes\n"
}

/// The notes' logo, as bytes.
#[resource(uri = "notes://logo", mime_type = "image/png")]
async fn logo() -> Vec<u8> {
    vec![0x89, b'P', b'N', b'G']
}

/// One note, by its number.
#[resource(uri = "notes://notes/{id}", complete(id = note_ids))]
async fn note(id: u32) -> String {
    format!("note {id}")
}

fn note_ids(_typed: &str) -> Vec<String> {
    (1..=120).map(|id| id.to_string()).collect()
}

/// A resource whose read fails.
#[resource(uri = "notes://broken")]
async fn broken() -> Result<String, String> {
    Err("the disk is on fire".to_owned())
}

/// A resource larger than the server's result bound (1 KiB here).
#[resource(uri = "notes://huge")]
async fn huge() -> String {
    "x".repeat(4096)
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Language {
    Rust,
    Python,
    Ruby,
}

#[derive(Deserialize, JsonSchema)]
struct ReviewArgs {
    /// The code to review.
    code: String,
    /// Its language.
    language: Language,
    /// How many findings at most.
    #[serde(default)]
    limit: Option<u32>,
}

/// Review a piece of code.
#[prompt(title = "Code review")]
async fn review(args: ReviewArgs) -> Vec<PromptMessage> {
    let language = match args.language {
        Language::Rust => "Rust",
        Language::Python => "Python",
        Language::Ruby => "Ruby",
    };
    vec![
        PromptMessage::new_text(
            Role::User,
            format!("Review this {language}:\n{}", args.code),
        ),
        PromptMessage::new_text(
            Role::Assistant,
            format!("At most {} findings.", args.limit.unwrap_or(3)),
        ),
    ]
}

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

/// Greet someone by name.
#[prompt(complete(name = names))]
async fn greet(args: GreetArgs) -> String {
    format!("Say hello to {}.", args.name)
}

fn names(_typed: &str) -> Vec<String> {
    ["Ada", "Alan", "Grace"].map(String::from).to_vec()
}

/// Tell subscribers that `notes://readme` changed.
#[tool]
async fn touch_readme(State(context): State<ContextStore>) -> &'static str {
    context.updated("notes://readme");
    "touched"
}

/// Add the prompt `farewell`.
#[tool]
async fn add_farewell(State(context): State<ContextStore>) -> String {
    let farewell = McpPrompt::new("farewell")
        .description("Say goodbye.")
        .get(|_| async { Ok(vec![PromptMessage::new_text(Role::User, "Goodbye.")]) });
    match context.add_prompt(farewell) {
        Ok(()) => "added".to_owned(),
        Err(error) => error.to_string(),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let context = ContextStore::new("notes");
    register_all_resources(&context)?;
    register_all_prompts(&context)?;
    let tools = ToolStore::new("notes").with_state(context.clone());
    tools.register(touch_readme_tool())?;
    tools.register(add_farewell_tool())?;
    McpServer::new(tools)
        .server_info("notes", "0.0.1")
        .max_result_bytes(1024)
        .context(context)
        .serve_stdio()
        .await?;
    Ok(())
}
