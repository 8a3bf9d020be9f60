use yiem_core::tool;

/// Report the time.
#[tool(timeout_ms = 0)]
async fn now() -> String {
    String::new()
}

fn main() {}
