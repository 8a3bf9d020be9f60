use yiem_core::tool;

/// Say yes.
#[tool(grammar(regex = "yes|no"))]
async fn answer() -> String {
    String::new()
}

fn main() {}
