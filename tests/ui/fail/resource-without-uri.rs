use yiem_core::mcp::resource;

/// The front page.
#[resource]
async fn readme() -> &'static str {
    "# Docs"
}

fn main() {}
