//! The whole agent loop with two tools, printing events as they happen.
//!
//! Offline by default: a scripted model plays the LLM, so this runs anywhere with no key.
//!
//! ```sh
//! cargo run --example weather
//! ```
//!
//! Against a real OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter):
//!
//! ```sh
//! YIEM_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... YIEM_MODEL=gpt-4o-mini \
//!     cargo run --example weather -- "What's the weather in Oslo, in Fahrenheit?"
//! ```
//!
//! Or natively against OpenAI's Responses API, Anthropic or Gemini (`*_BASE_URL` points at a proxy or a
//! test server):
//!
//! ```sh
//! YIEM_PROVIDER=openai-responses OPENAI_API_KEY=sk-... YIEM_MODEL=gpt-5-mini cargo run --example weather
//! YIEM_PROVIDER=anthropic ANTHROPIC_API_KEY=sk-ant-... cargo run --example weather
//! YIEM_PROVIDER=gemini GEMINI_API_KEY=... YIEM_MODEL=gemini-2.5-flash cargo run --example weather
//! ```
//!
//! A run that ends in a model error prints it and exits 1; a misconfigured provider exits 2.

use std::io::Write;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::message::StopReason;
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
    /// Degrees Celsius.
    Metric,
    /// Degrees Fahrenheit.
    Imperial,
}

/// Fetch the current weather for a city.
#[tool(label = "Weather Lookup", parallel, read_only)]
async fn get_weather(args: WeatherArgs) -> Result<String, String> {
    let (celsius, sky) = match args.city.to_lowercase().as_str() {
        "tokyo" => (18.0, "light rain"),
        "oslo" => (-3.0, "snow"),
        "lima" => (24.0, "sunny"),
        _ => {
            return Err(format!(
                "no weather data for `{}`; try Tokyo, Oslo or Lima",
                args.city
            ));
        }
    };
    Ok(match args.unit {
        Some(Unit::Imperial) => format!("{}: {:.0} °F, {sky}", args.city, celsius * 1.8 + 32.0),
        _ => format!("{}: {celsius:.0} °C, {sky}", args.city),
    })
}

#[derive(Deserialize, JsonSchema)]
struct TimeArgs {
    /// City name.
    city: String,
}

/// Tell the local time in a city.
#[tool(label = "Local Time", parallel, read_only)]
async fn get_local_time(args: TimeArgs) -> Result<String, String> {
    let offset = match args.city.to_lowercase().as_str() {
        "tokyo" => 9,
        "oslo" => 1,
        "lima" => -5,
        _ => return Err(format!("unknown city `{}`", args.city)),
    };
    Ok(format!("{}: UTC{offset:+}", args.city))
}

/// Plays the LLM offline: asks for both tools, then answers from their results.
fn scripted() -> ScriptedModel {
    ScriptedModel::from_fn(|request: &ModelRequest| {
        let results: Vec<String> = request
            .messages
            .iter()
            .rev()
            .take_while(|message| !matches!(message, AgentMessage::User(_)))
            .filter_map(|message| match message {
                AgentMessage::ToolResult(result) => Some(result.text_content()),
                _ => None,
            })
            .collect();
        if results.is_empty() {
            ScriptedTurn::tool_calls([
                ("get_weather", json!({"city": "Tokyo"})),
                ("get_local_time", json!({"city": "Tokyo"})),
            ])
            .and_text("Let me look that up.")
        } else {
            let mut facts = results;
            facts.reverse();
            ScriptedTurn::text(format!("Here is what I found — {}.", facts.join("; ")))
        }
    })
}

#[tokio::main]
async fn main() {
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "What's the weather and the local time in Tokyo?".to_owned());
    let tools = ToolStore::new("weather");
    tools.register(get_weather_tool()).unwrap();
    tools.register(get_local_time_tool()).unwrap();

    let builder = Agent::builder()
        .system_prompt("You answer questions about weather and time. Use the tools; be brief.")
        .tools(tools);
    // The provider comes from the environment (YIEM_PROVIDER and its key; see
    // `yiem_core::llm::model_from_env`); offline by default.
    let agent = match yiem_core::llm::model_from_env() {
        Ok(Some(selected)) => {
            eprintln!("[using {}]", selected.description);
            builder.shared_model(selected.model).build()
        }
        Ok(None) => {
            eprintln!(
                "[offline: scripted model; set YIEM_PROVIDER (openai, openai-responses, anthropic, gemini) and its key for a real one]"
            );
            builder.model(scripted()).build()
        }
        Err(error) => {
            eprintln!("error: the model is misconfigured: {error}");
            std::process::exit(2);
        }
    };
    agent.on_event(print_event);
    let added = agent.prompt(question).await;
    // A run that ended in a model error says so, and the program fails with it.
    let failed = added
        .messages
        .iter()
        .rev()
        .find_map(|message| match message {
            AgentMessage::Assistant(reply) if reply.stop_reason == StopReason::Error => Some(
                reply
                    .error
                    .clone()
                    .unwrap_or_else(|| "the model failed".to_owned()),
            ),
            _ => None,
        });
    if let Some(error) = failed {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

fn print_event(event: &AgentEvent) {
    let mut out = std::io::stdout().lock();
    let _ = match event {
        AgentEvent::AgentStart => writeln!(out, "● agent start"),
        AgentEvent::TurnStart => writeln!(out, "● turn start"),
        AgentEvent::MessageStart { message } => match &**message {
            AgentMessage::User(user) => writeln!(out, "user: {}", user.text_content()),
            AgentMessage::Assistant(_) => write!(out, "assistant: "),
            _ => Ok(()),
        },
        AgentEvent::MessageUpdate { delta, .. } => match delta["type"].as_str() {
            Some("text_delta") => write!(out, "{}", delta["text"].as_str().unwrap_or_default()),
            _ => Ok(()),
        },
        AgentEvent::MessageEnd { message } => match &**message {
            AgentMessage::Assistant(reply) if reply.stop_reason == StopReason::Error => {
                writeln!(out, "(no answer: the model failed)")
            }
            AgentMessage::Assistant(reply) => {
                let calls: Vec<String> = reply
                    .tool_calls()
                    .map(|c| format!("{}({})", c.name, c.arguments))
                    .collect();
                if calls.is_empty() {
                    writeln!(out)
                } else {
                    writeln!(out, "\n  asks for: {}", calls.join(", "))
                }
            }
            _ => Ok(()),
        },
        AgentEvent::ToolExecutionStart { call } => {
            writeln!(out, "  → {} {}", call.name, call.arguments)
        }
        AgentEvent::ToolExecutionEnd {
            call,
            result,
            is_error,
        } => {
            let mark = if *is_error { "✗" } else { "✓" };
            writeln!(out, "  {mark} {}: {}", call.name, result.text_content())
        }
        AgentEvent::TurnEnd { .. } => writeln!(out, "● turn end"),
        AgentEvent::AgentEnd { messages } => {
            writeln!(out, "● agent end ({} new messages)", messages.len())
        }
        _ => Ok(()),
    };
    let _ = out.flush();
}
