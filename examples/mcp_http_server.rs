//! Serve your own tools over MCP's streamable HTTP transport, the way MCP servers are deployed: several
//! stateless replicas behind a load balancer, each answering any request, with a bearer token.
//!
//! ```text
//! MCP_TOKEN=s3cret cargo run --example mcp_http_server -- 127.0.0.1:8080
//! ```
//!
//! prints `listening on http://127.0.0.1:8080/mcp`; point a client at that URL with
//! `Authorization: Bearer s3cret` (without `MCP_TOKEN` no token is asked for). Ctrl-C stops it: running
//! calls are cancelled and answered, then it exits.

use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::mcp::{McpHttpServer, McpServer};
use yiem_core::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct SlugArgs {
    /// A title, such as "Hello, World!".
    title: String,
}

/// Turn a title into a URL slug: lowercase ASCII letters and digits joined by hyphens.
#[tool(parallel, read_only, idempotent, open_world = false)]
async fn slugify(args: SlugArgs) -> String {
    args.title
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_ascii_lowercase)
        .collect::<Vec<_>>()
        .join("-")
}

#[derive(Deserialize, JsonSchema)]
struct CollatzArgs {
    /// Where the sequence starts (at least 1).
    start: u64,
}

/// Count the steps of the Collatz sequence from a number down to 1, reporting progress every 10 steps.
#[tool(parallel, read_only, idempotent, open_world = false)]
async fn collatz_steps(ctx: ToolContext, args: CollatzArgs) -> Result<String, String> {
    if args.start == 0 {
        return Err("`start` must be at least 1".into());
    }
    let (mut n, mut steps) = (args.start, 0u64);
    while n != 1 {
        if ctx.is_cancelled() {
            return Err("cancelled".into());
        }
        n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
        steps += 1;
        if steps % 10 == 0 {
            ctx.update(format!("{steps} steps, at {n}"));
        }
    }
    Ok(format!("{} reaches 1 after {steps} steps", args.start))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let store = ToolStore::new("http-example");
    register_all_tools(&store)?;

    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(&address).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);

    let mut http = McpHttpServer::new(McpServer::new(store));
    if let Ok(token) = std::env::var("MCP_TOKEN") {
        http = http.bearer_token(token);
    }
    http.serve(listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}
