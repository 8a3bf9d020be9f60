use yiem_core::mcp::prompt;

/// Greet someone.
#[prompt(name = "say hello")]
async fn greet() -> &'static str {
    "Hello."
}

fn main() {}
