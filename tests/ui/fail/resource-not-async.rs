use yiem_core::mcp::resource;

/// The front page.
#[resource(uri = "docs://readme")]
fn readme() -> &'static str {
    "# Docs"
}

fn main() {}
