use yiem_core::tool;

/// Report the time.
#[tool(label = "Clock", label = "Time")]
async fn now() -> String {
    String::new()
}

fn main() {}
