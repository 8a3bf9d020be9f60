use yiem_core::mcp::prompt;

#[prompt]
async fn hello() -> &'static str {
    "Say hello."
}

fn main() {}
