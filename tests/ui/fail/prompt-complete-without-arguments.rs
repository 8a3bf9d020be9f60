use yiem_core::mcp::prompt;

fn names(_typed: &str) -> Vec<String> {
    Vec::new()
}

/// Greet someone.
#[prompt(complete(name = names))]
async fn greet() -> &'static str {
    "Hello."
}

fn main() {}
