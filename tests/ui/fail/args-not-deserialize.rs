use schemars::JsonSchema;
use yiem_core::tool;

#[derive(JsonSchema)]
struct Args {
    city: String,
}

/// Look up a city.
#[tool]
async fn lookup(args: Args) -> String {
    args.city
}

fn main() {}
