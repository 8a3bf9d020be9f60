use yiem_core::mcp::resource;

/// A number.
#[resource(uri = "numbers://one")]
async fn one() -> u32 {
    1
}

fn main() {}
