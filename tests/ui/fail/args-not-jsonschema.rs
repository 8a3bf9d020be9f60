use serde::Deserialize;
use yiem_core::tool;

#[derive(Deserialize)]
struct Args {
    city: String,
}

/// Look up a city.
#[tool]
async fn lookup(args: Args) -> String {
    args.city
}

fn main() {}
