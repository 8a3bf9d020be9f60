use yiem_core::tool;

/// Greet someone.
#[tool]
async fn greet(name: &str) -> String {
    format!("hello {name}")
}

fn main() {}
