use yiem_core::tool;

/// Build the report.
#[tool(task = "sometimes")]
async fn report() -> String {
    String::new()
}

fn main() {}
