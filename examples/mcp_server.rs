//! Serve your own tools to any MCP client (Claude Desktop, Cursor, IDEs) over stdio: define them with
//! `#[tool]`, then three lines in `main` register and serve them.
//!
//! Build it with `cargo build --example mcp_server`, then point the client at
//! `target/debug/examples/mcp_server` (the README shows Claude Desktop's configuration). Logs go to stderr;
//! stdout carries nothing but the protocol.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use yiem_core::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct TextArgs {
    /// The text to analyse.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct TextStats {
    /// Words, separated by whitespace.
    words: usize,
    /// Lines.
    lines: usize,
    /// Unicode characters.
    characters: usize,
}

/// Count the words, lines and characters of a text.
#[tool(
    label = "Text Statistics",
    parallel,
    read_only,
    idempotent,
    open_world = false
)]
async fn text_stats(args: TextArgs) -> Json<TextStats> {
    Json(TextStats {
        words: args.text.split_whitespace().count(),
        lines: args.text.lines().count(),
        characters: args.text.chars().count(),
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Scale {
    /// Degrees Celsius.
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
}

#[derive(Deserialize, JsonSchema)]
struct ConvertArgs {
    /// The temperature to convert.
    value: f64,
    /// The scale `value` is in; the result is in the other one.
    from: Scale,
}

/// Convert a temperature between Celsius and Fahrenheit.
#[tool(parallel, read_only, idempotent, open_world = false)]
async fn convert_temperature(args: ConvertArgs) -> String {
    match args.from {
        Scale::Celsius => format!("{:.1} °F", args.value * 9.0 / 5.0 + 32.0),
        Scale::Fahrenheit => format!("{:.1} °C", (args.value - 32.0) * 5.0 / 9.0),
    }
}

#[derive(Deserialize, JsonSchema)]
struct PrimesArgs {
    /// Find the primes up to and including this number (at most 100,000).
    limit: u32,
}

/// List the prime numbers up to a limit, reporting progress as it sieves.
#[tool(parallel, read_only, idempotent, open_world = false)]
fn primes_up_to(ctx: ToolContext, args: PrimesArgs) -> Result<String, String> {
    let limit = args.limit as usize;
    if limit > 100_000 {
        return Err(format!(
            "{limit} is above the limit of 100,000: ask for fewer"
        ));
    }
    let mut composite = vec![false; limit + 1];
    let mut primes = Vec::new();
    for n in 2..=limit {
        if ctx.is_cancelled() {
            return Err("cancelled".into());
        }
        if composite[n] {
            continue;
        }
        primes.push(n.to_string());
        for multiple in (n * n..=limit).step_by(n) {
            composite[multiple] = true;
        }
        if primes.len() % 1_000 == 0 {
            ctx.update(format!("{} primes so far, up to {n}", primes.len()));
        }
    }
    Ok(format!("{} primes: {}", primes.len(), primes.join(", ")))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs to stderr: an MCP client reads stdout as protocol.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing_subscriber::filter::LevelFilter::WARN)
        .init();

    let store = ToolStore::new("yiem-example");
    register_all_tools(&store)?;
    yiem_core::mcp::serve_stdio(store).await?;
    Ok(())
}
