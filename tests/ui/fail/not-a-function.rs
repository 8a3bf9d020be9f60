use yiem_core::tool;

/// Not a function.
#[tool]
struct Weather;

fn main() {}
