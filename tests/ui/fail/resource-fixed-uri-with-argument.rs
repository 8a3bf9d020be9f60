use yiem_core::mcp::resource;

/// The front page.
#[resource(uri = "docs://readme")]
async fn readme(lang: String) -> String {
    lang
}

fn main() {}
