use yiem_core::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {
    city: String,
}

/// Report the weather.
#[tool(example = {"city": "Oslo"})]
async fn weather(args: Args) -> String {
    args.city
}

fn main() {}
