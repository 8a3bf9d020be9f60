use yiem_core::tool;

/// Report the time.
#[tool(description = "  ")]
async fn now() -> String {
    String::new()
}

fn main() {}
