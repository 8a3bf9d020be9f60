use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::tool;

#[derive(Deserialize, JsonSchema)]
struct Origin {
    city: String,
}

#[derive(Deserialize, JsonSchema)]
struct Destination {
    city: String,
}

/// Plan a trip.
#[tool]
async fn plan(from: Origin, to: Destination) -> String {
    format!("{} -> {}", from.city, to.city)
}

fn main() {}
