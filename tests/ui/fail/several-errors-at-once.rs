use yiem_core::tool;

/// Every attribute here is wrong; all of them are reported at once.
#[tool(name = "bad name", timeout_ms = -1, parallel, sequential, colour)]
async fn now() -> String {
    String::new()
}

fn main() {}
