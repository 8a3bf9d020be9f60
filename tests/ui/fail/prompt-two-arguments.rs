use yiem_core::mcp::prompt;

/// Greet someone.
#[prompt]
async fn greet(name: String, mood: String) -> String {
    format!("{name} {mood}")
}

fn main() {}
