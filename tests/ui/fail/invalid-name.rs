use yiem_core::tool;

/// Report the time.
#[tool(name = "current time")]
async fn now() -> String {
    String::new()
}

fn main() {}
