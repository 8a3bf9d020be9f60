//! A weather-and-notes agent as a durable Restate service, offline (its model is scripted: a function of
//! the conversation). `publish_note` needs approval, so a run that publishes waits for a person.
//!
//! ```text
//! npx @restatedev/restate-server                     # the server: ingress :8080, admin :9070
//! cargo run -p yiem-restate --example durable_weather # this service, on :9080
//! npx @restatedev/restate deployments register http://localhost:9080
//! curl localhost:8080/Agent/trip/start --json '{"prompt": "weather in Oslo"}'
//! curl localhost:8080/Agent/trip/start/send --json '{"prompt": "publish the weather in Oslo"}'
//! curl localhost:8080/Agent/trip/conversation          # shows the waiting call
//! curl localhost:8080/Agent/trip/approve --json '{"decisions": [{"call_id": "call_2", "decision": "approve"}]}'
//! ```

use restate_sdk::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::{
    agent::AgentSettings,
    llm::{ModelRequest, ScriptedModel, ScriptedTurn},
    message::AgentMessage,
    store::ToolStore,
    tool,
};
use yiem_restate::DurableAgent;

#[derive(Deserialize, JsonSchema)]
struct WeatherArgs {
    /// City name, e.g. "Oslo".
    city: String,
}

/// The current weather of a city.
#[tool(parallel, read_only)]
async fn get_weather(args: WeatherArgs) -> String {
    format!("{}: 12 °C, light rain", args.city)
}

#[derive(Deserialize, JsonSchema)]
struct NoteArgs {
    /// The note's text.
    text: String,
}

/// Publish a note to the team (asks a person first).
#[tool(needs_approval)]
async fn publish_note(args: NoteArgs) -> String {
    format!("published: {}", args.text)
}

/// The offline model: asks for the weather of the city named in the prompt (and to publish it, if the
/// prompt says so), then reports what the tools said.
fn model() -> ScriptedModel {
    ScriptedModel::from_fn(|request: &ModelRequest| match request.messages.last() {
        Some(AgentMessage::User(user)) => {
            let text = user.text_content();
            let city = text.rsplit(' ').next().unwrap_or("Oslo").to_owned();
            if text.starts_with("publish") {
                ScriptedTurn::tool_calls([
                    ("get_weather", json!({"city": city})),
                    (
                        "publish_note",
                        json!({"text": format!("the weather in {city}")}),
                    ),
                ])
            } else {
                ScriptedTurn::tool_call("get_weather", json!({"city": city}))
            }
        }
        _ => {
            let results: Vec<String> = request
                .messages
                .iter()
                .rev()
                .map_while(|message| match message {
                    AgentMessage::ToolResult(result) => Some(result.text_content()),
                    _ => None,
                })
                .collect();
            ScriptedTurn::text(results.into_iter().rev().collect::<Vec<_>>().join("; "))
        }
    })
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt().init();
    let tools = ToolStore::new("weather-and-notes");
    tools.register(get_weather_tool()).expect("a valid tool");
    tools.register(publish_note_tool()).expect("a valid tool");
    let agent = DurableAgent::builder()
        .system_prompt("You report the weather and publish notes.")
        .model(|_conversation| model())
        .tools(tools)
        .build();
    let address = std::env::var("YIEM_RESTATE_LISTEN").unwrap_or_else(|_| "127.0.0.1:9080".into());
    HttpServer::new(agent.endpoint())
        .listen_and_serve(address.parse().expect("YIEM_RESTATE_LISTEN is an address"))
        .await;
}
