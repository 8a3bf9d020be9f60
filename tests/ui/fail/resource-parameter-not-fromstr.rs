use yiem_core::mcp::resource;

struct Id;

/// One user.
#[resource(uri = "users://{id}")]
async fn user(id: Id) -> String {
    let _ = id;
    String::new()
}

fn main() {}
