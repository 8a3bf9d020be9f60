use yiem_core::mcp::resource;

/// One user.
#[resource(uri = "users://{id}")]
async fn user(id: String, name: String) -> String {
    format!("{id} {name}")
}

fn main() {}
