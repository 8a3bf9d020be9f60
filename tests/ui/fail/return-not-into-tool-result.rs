use yiem_core::tool;

/// Count the stars.
#[tool]
async fn stars() -> u64 {
    42
}

fn main() {}
