use serde::Deserialize;
use yiem_core::mcp::prompt;

#[derive(Deserialize)]
struct Args {
    name: String,
}

/// Greet someone.
#[prompt]
async fn greet(args: Args) -> String {
    args.name
}

fn main() {}
