use yiem_core::tool;

/// Runs at compile time, which a tool cannot.
#[tool]
const fn constant() -> &'static str {
    "fixed"
}

fn main() {}
