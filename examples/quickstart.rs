//! The shortest tour of yiem: define tools with `#[tool]`, collect them with `register_all_tools`, and
//! execute calls the way a model would send them — including bad ones, which get an error result the model
//! can act on instead of crashing anything.
//!
//! Run it with `cargo run --example quickstart`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct WeatherArgs {
    /// City name, e.g. "Tokyo".
    city: String,
    /// Temperature unit; metric when left out.
    #[serde(default)]
    unit: Option<Unit>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Metric,
    Imperial,
}

/// Fetch the current weather for a city.
#[tool(label = "Weather Lookup", parallel, read_only)]
async fn get_weather(args: WeatherArgs) -> Result<String, String> {
    let celsius = match args.city.as_str() {
        "Tokyo" => 18.0,
        "Oslo" => -3.0,
        other => return Err(format!("no weather data for `{other}`; try Tokyo or Oslo")),
    };
    Ok(match args.unit {
        Some(Unit::Imperial) => format!("{}: {:.0} °F", args.city, celsius * 1.8 + 32.0),
        _ => format!("{}: {celsius:.0} °C", args.city),
    })
}

#[derive(Deserialize, JsonSchema)]
struct StatsArgs {
    /// The numbers to summarise.
    values: Vec<f64>,
}

#[derive(serde::Serialize, JsonSchema)]
struct Stats {
    count: usize,
    mean: f64,
}

/// Count and average a list of numbers.
#[tool(parallel)]
fn stats(ctx: ToolContext, args: StatsArgs) -> Json<Stats> {
    ctx.update(format!("summarising {} values", args.values.len()));
    let count = args.values.len();
    let mean = args.values.iter().sum::<f64>() / count.max(1) as f64;
    Json(Stats { count, mean })
}

#[tokio::main]
async fn main() {
    let store = ToolStore::new("quickstart");
    let names = register_all_tools(&store).expect("tool names are unique");
    println!("registered: {}", names.join(", "));
    println!(
        "schema of get_weather:\n{}\n",
        serde_json::to_string_pretty(store.get("get_weather").unwrap().input_schema()).unwrap()
    );

    let calls = [
        ("list_tools", json!({})),
        ("get_weather", json!({"city": "Tokyo"})),
        (
            "get_weather",
            json!("{\"city\": \"Oslo\", \"unit\": \"imperial\"}"),
        ),
        ("stats", json!({"values": [1.0, 2.0, 4.5]})),
        ("get_weather", json!({"city": "Atlantis"})),
        ("get_weather", json!({"town": "Tokyo"})),
        ("stats", json!({"values": "1, 2, 3"})),
    ];
    for (index, (name, args)) in calls.into_iter().enumerate() {
        let tool = store.get(name).expect("registered above");
        let result = tool.execute(format!("call-{index}"), args.clone()).await;
        let marker = if result.is_error { "error" } else { "ok" };
        println!(
            "{name}({args}) -> [{marker}]\n  {}",
            result.text_content().replace('\n', "\n  ")
        );
    }
}
