use yiem_core::tool;

#[derive(Debug)]
struct Oops;

/// Fail quietly.
#[tool]
async fn fail() -> Result<String, Oops> {
    Err(Oops)
}

fn main() {}
