use yiem_core::tool;

/// Look a record up.
#[tool(code_only = true)]
async fn lookup() -> String {
    String::new()
}

fn main() {}
