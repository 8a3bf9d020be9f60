//! The MCP server the approval and elicitation tests (`tests/tests/mcp_asking.rs`) drive with the official
//! Python SDK: three tools that reach the person behind the client, served over stdio, or over streamable
//! HTTP with `--http ADDR` (it prints `listening on http://ADDR/mcp` on stderr and stops when its stdin
//! closes).
//!
//! - `remove` needs approval: it deletes the file at `path`, so a test sees whether it ran;
//! - `pick_color` asks which color (`ToolContext::elicit`) and says what the answer was;
//! - `chatty` logs at `debug`, `info` and `warning` (`ToolContext::log`);
//! - `repaint` needs approval and then asks which color, so a client is asked twice in one call;
//! - `summarise` asks the client's model for a completion (`ToolContext::sample`);
//! - `count_cups` asks for a number of cups (an integer from 1 to 10) and says what answer it got;
//! - `flood` logs 5000 times and `big_audio` returns 50 MB, against the server's bounds;
//! - `grow` registers one more tool, `grown`, so the tool list changes;
//! - `greet_all` asks four questions in one round under its own keys (`ToolContext::ask`): a name, a
//!   number of cups, a greeting from the client's model and the client's roots;
//! - the prompt `focus` asks what to focus on (`McpPrompt::asking`).
//!
//! `--allow NAME` (repeatable) lets calls of that tool run without asking; `--timeout-ms N` gives calls a
//! time limit; `--list-ttl-ms N` lets 2026-07-28 clients keep `tools/list` answers that long; `--sessions` gives HTTP clients
//! of revisions before 2026-07-28 sessions (at most 2 at once, so a test can reach the limit).

use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::mcp::{
    ContextStore, McpHttpServer, McpPrompt, McpServer, PromptContext, PromptError, PromptMessage,
    Role,
};
use yiem_core::{
    ask::{ElicitError, ElicitationAnswer, LogLevel, Questions, Sampling, SamplingAnswer},
    store::ToolStore,
    tool,
    tool::ToolContext,
};

#[derive(Deserialize, JsonSchema)]
struct RemoveArgs {
    /// The file to delete.
    path: String,
}

/// Delete a file.
#[tool(needs_approval, destructive)]
async fn remove(args: RemoveArgs) -> Result<String, std::io::Error> {
    std::fs::remove_file(&args.path)?;
    Ok(format!("removed {}", args.path))
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Color {
    Red,
    Green,
    Blue,
}

#[derive(Deserialize, JsonSchema)]
struct Pick {
    /// The color to paint with.
    color: Color,
    /// Whether to use the bright shade.
    bright: bool,
}

/// Ask the user for a color and paint with it.
#[tool]
async fn pick_color(ctx: ToolContext) -> Result<String, ElicitError> {
    Ok(
        match ctx
            .elicit::<Pick>("Which color should I paint with?")
            .await?
        {
            ElicitationAnswer::Accept(pick) => {
                format!("painted in {} (bright: {})", pick.color.name(), pick.bright)
            }
            ElicitationAnswer::Decline => "the user declined to pick a color".into(),
            _ => "the user dismissed the question".into(),
        },
    )
}

/// Repaint the wall after the user approves, in the color they pick.
#[tool(needs_approval)]
async fn repaint(ctx: ToolContext) -> Result<String, ElicitError> {
    match ctx.elicit::<Pick>("Which color for the wall?").await? {
        ElicitationAnswer::Accept(pick) => Ok(format!(
            "repainted in {} (bright: {})",
            pick.color.name(),
            pick.bright
        )),
        _ => Ok("the user did not pick a color".into()),
    }
}

impl Color {
    fn name(&self) -> &'static str {
        match self {
            Color::Red => "red",
            Color::Green => "green",
            Color::Blue => "blue",
        }
    }
}

/// Ask the client's model to summarise a note.
#[tool]
async fn summarise(ctx: ToolContext) -> Result<String, ElicitError> {
    let request = Sampling::prompt("Summarise: the build is green.", 40).system_prompt("Be brief.");
    Ok(match ctx.sample(request).await? {
        SamplingAnswer::Text { text, model } => format!("summary by {model}: {text}"),
        SamplingAnswer::Refuse(why) => format!("no summary: {why}"),
        _ => "no summary".into(),
    })
}

/// Ask how many cups to pour, and say the answer as it reached the tool.
#[tool]
async fn count_cups(ctx: ToolContext) -> Result<String, ElicitError> {
    let form = serde_json::json!({
        "type": "object",
        "properties": {"cups": {"type": "integer", "minimum": 1, "maximum": 10}},
        "required": ["cups"],
    });
    Ok(
        match ctx.elicit_with_schema("How many cups?", form).await? {
            ElicitationAnswer::Accept(answer) => {
                format!("poured {}", serde_json::Value::Object(answer))
            }
            _ => "poured nothing".into(),
        },
    )
}

#[derive(Deserialize, JsonSchema)]
struct Name {
    /// Your name.
    name: String,
}

/// Ask, in one round, the user's name, how many cups (1 to 10), a greeting from their model and the
/// client's roots, each under its own key, and say every answer as it reached the tool.
#[tool]
async fn greet_all(ctx: ToolContext) -> Result<String, ElicitError> {
    let cups = serde_json::json!({
        "type": "object",
        "properties": {"cups": {"type": "integer", "minimum": 1, "maximum": 10}},
        "required": ["cups"],
    });
    let answers = ctx
        .ask(
            Questions::new()
                .form::<Name>("user_name", "What is your name?")
                .form_with_schema("cups", "How many cups?", cups)
                .sample("greeting", Sampling::prompt("Write a greeting", 20))
                .roots("client_roots"),
        )
        .await?;
    let name = match answers.form::<Name>("user_name")? {
        ElicitationAnswer::Accept(name) => name.name,
        _ => "nobody".into(),
    };
    let cups = match answers.form::<serde_json::Value>("cups")? {
        ElicitationAnswer::Accept(cups) => cups["cups"].to_string(),
        _ => "none".into(),
    };
    let greeting = match answers.sample("greeting") {
        Ok(SamplingAnswer::Text { text, .. }) => text,
        Ok(_) => "refused".into(),
        Err(why) => format!("not asked ({why})"),
    };
    let roots = match answers.roots("client_roots") {
        Ok(roots) => roots
            .iter()
            .map(|root| root.uri.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        Err(why) => format!("not asked ({why})"),
    };
    Ok(format!(
        "name={name} cups={cups} greeting={greeting} roots={roots}"
    ))
}

/// A prompt that asks what to focus on before it answers.
fn focus_prompt() -> McpPrompt {
    McpPrompt::new("focus")
        .description("Review with a focus the user picks.")
        .asking(|_arguments, ctx: PromptContext| async move {
            let answers = ctx
                .ask(Questions::new().form::<Focus>("focus", "What should the review focus on?"))
                .await
                .map_err(|error| PromptError::Failed(error.to_string()))?;
            let focus = match answers.form::<Focus>("focus") {
                Ok(ElicitationAnswer::Accept(focus)) => focus.topic,
                _ => "everything".into(),
            };
            Ok(vec![PromptMessage::new_text(
                Role::User,
                format!("Review the change, focusing on {focus}."),
            )])
        })
}

#[derive(Deserialize, JsonSchema)]
struct Focus {
    /// What to focus on.
    topic: String,
}

/// The store served, for `grow` to register into.
static STORE: std::sync::OnceLock<ToolStore> = std::sync::OnceLock::new();

/// Register one more tool, `grown`.
#[tool]
async fn grow() -> Result<&'static str, yiem_core::store::RegistrationError> {
    let grown = yiem_core::tool::AgentTool::builder("grown")
        .description("A tool registered while the server runs.")
        .handler(|_, _| async { "grown" })
        .build()
        .expect("a valid tool");
    STORE
        .get()
        .expect("the store is set before serving")
        .register(grown)?;
    Ok("registered `grown`")
}

/// Log five thousand times.
#[tool]
async fn flood(ctx: ToolContext) -> &'static str {
    for n in 0..5000 {
        ctx.log(LogLevel::Info, format!("line {n}"));
    }
    "flooded"
}

/// Return 50 MB of audio.
#[tool]
async fn big_audio() -> Vec<yiem_core::tool::Content> {
    vec![yiem_core::tool::Content::audio(
        "A".repeat(50_000_000),
        "audio/wav",
    )]
}

/// Do some work and log about it.
#[tool]
async fn chatty(ctx: ToolContext) -> &'static str {
    ctx.log(LogLevel::Debug, "looking closely");
    ctx.log(LogLevel::Info, "starting");
    ctx.log(LogLevel::Warning, serde_json::json!({"disk": "low"}));
    "done"
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = ToolStore::new("yiem-asking");
    store.register(remove_tool())?;
    store.register(pick_color_tool())?;
    store.register(chatty_tool())?;
    store.register(repaint_tool())?;
    store.register(summarise_tool())?;
    store.register(count_cups_tool())?;
    store.register(flood_tool())?;
    store.register(big_audio_tool())?;
    store.register(grow_tool())?;
    store.register(greet_all_tool())?;
    let _ = STORE.set(store.clone());
    let args: Vec<String> = std::env::args().skip(1).collect();
    let values = |name: &str| -> Vec<String> {
        args.windows(2)
            .filter(|pair| pair[0] == name)
            .map(|pair| pair[1].clone())
            .collect()
    };
    let mut executor = yiem_core::exec::ToolExecutor::new();
    if let Some(millis) = values("--timeout-ms").pop() {
        executor = executor.with_default_timeout(std::time::Duration::from_millis(millis.parse()?));
    }
    let context = ContextStore::new("yiem-asking");
    context.add_prompt(focus_prompt())?;
    let mut server = McpServer::new(store).executor(executor).context(context);
    if let Some(millis) = values("--list-ttl-ms").pop() {
        server = server.list_ttl(std::time::Duration::from_millis(millis.parse()?));
    }
    let server = server
        .server_info("yiem-asking", "0.0.1")
        .allowed_tools(values("--allow"));
    let Some(address) = values("--http").pop() else {
        server.serve_stdio().await?;
        return Ok(());
    };
    let listener = tokio::net::TcpListener::bind(address.as_str()).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    // The test holds stdin open; closing it (or the test dying) shuts the server down.
    let stdin_closed = async {
        let mut sink = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::stdin(), &mut sink).await;
    };
    let mut http = McpHttpServer::new(server);
    if args.iter().any(|arg| arg == "--sessions") {
        http = http.sessions(2);
    }
    http.serve(listener, stdin_closed).await?;
    Ok(())
}
