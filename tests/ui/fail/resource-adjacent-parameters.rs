use yiem_core::mcp::resource;

/// Two parts.
#[resource(uri = "x://{a}{b}")]
async fn parts(a: String, b: String) -> String {
    a + &b
}

fn main() {}
