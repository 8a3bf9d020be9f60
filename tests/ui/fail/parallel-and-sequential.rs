use yiem_core::tool;

/// Report the time.
#[tool(parallel, sequential)]
async fn now() -> String {
    String::new()
}

fn main() {}
