use yiem_core::mcp::prompt;

/// Say a number.
#[prompt]
async fn number() -> u32 {
    1
}

fn main() {}
