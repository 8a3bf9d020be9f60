use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::tool;

#[derive(Deserialize, JsonSchema)]
struct Args {
    city: String,
}

fn check(args: &Args) -> bool {
    !args.city.is_empty()
}

/// Look up a city.
#[tool(validate = check)]
async fn lookup(args: Args) -> String {
    args.city
}

fn main() {}
