use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::{tool, tool::ToolContext};

#[derive(Deserialize, JsonSchema)]
struct Args {
    city: String,
}

/// Look up a city.
#[tool]
async fn lookup(args: Args, ctx: ToolContext) -> String {
    format!("{} {}", args.city, ctx.call_id())
}

fn main() {}
