use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::tool;

#[derive(Deserialize, JsonSchema)]
struct Args {
    city: String,
}

fn normalize(raw: String) -> String {
    raw
}

/// Look up a city.
#[tool(prepare = normalize)]
async fn lookup(args: Args) -> String {
    args.city
}

fn main() {}
