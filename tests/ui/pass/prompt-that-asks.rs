use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::ask::{ElicitError, ElicitationAnswer, Questions};
use yiem_core::mcp::{PromptContext, prompt};

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The topic.
    topic: String,
}

#[derive(Deserialize, JsonSchema)]
struct Depth {
    /// How deep to go.
    level: u8,
}

/// Explain a topic as deeply as the user asks.
#[prompt]
async fn explain(args: Args, ctx: PromptContext) -> Result<String, ElicitError> {
    let answers = ctx.ask(Questions::new().form::<Depth>("depth", "How deep?")).await?;
    let level = match answers.form::<Depth>("depth")? {
        ElicitationAnswer::Accept(depth) => depth.level,
        _ => 1,
    };
    Ok(format!("Explain {} at depth {level}.", args.topic))
}

/// Ask what to say, then say it.
#[prompt]
async fn say(ctx: yiem_core::mcp::PromptContext) -> Result<String, ElicitError> {
    let _ = ctx.ask(Questions::new()).await?;
    Ok("Say it.".into())
}

fn main() {
    assert_eq!(explain_prompt().name(), "explain");
    assert_eq!(say_prompt().name(), "say");
}
