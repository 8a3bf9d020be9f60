use yiem_core::tool;

/// Touches raw memory.
#[tool]
unsafe fn dangerous() -> &'static str {
    "boom"
}

fn main() {}
