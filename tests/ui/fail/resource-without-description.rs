use yiem_core::mcp::resource;

#[resource(uri = "docs://readme")]
async fn readme() -> &'static str {
    "# Docs"
}

fn main() {}
