use yiem_core::tool;

/// Report the time.
#[tool(timeout_ms = "5s")]
async fn now() -> String {
    String::new()
}

fn main() {}
