use yiem_core::mcp::resource;

/// The front page.
#[resource(uri = "docs://readme", mime = "text/plain")]
async fn readme() -> &'static str {
    "# Docs"
}

fn main() {}
