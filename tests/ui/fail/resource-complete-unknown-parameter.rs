use yiem_core::mcp::resource;

fn ids(_typed: &str) -> Vec<String> {
    Vec::new()
}

/// One user.
#[resource(uri = "users://{id}", complete(name = ids))]
async fn user(id: String) -> String {
    id
}

fn main() {}
