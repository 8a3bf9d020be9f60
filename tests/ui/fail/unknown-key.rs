use yiem_core::tool;

/// Report the time.
#[tool(paralel)]
async fn now() -> String {
    String::new()
}

fn main() {}
