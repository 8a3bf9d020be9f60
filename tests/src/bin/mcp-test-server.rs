//! The MCP server the `mcp` integration tests (Rust and Python) drive over stdio: a few tools made to be
//! asserted on, served with a `before_tool_call` hook, and logs at `info` on stderr so the tests can check
//! that nothing but protocol reaches stdout.
//!
//! `learn` adds a tool to the served store, so the clients can see `notifications/tools/list_changed`.
//!
//! `mcp-test-server --http ADDR [--max-body BYTES]` serves the same over streamable HTTP instead (the
//! `mcp_http` tests), with the bearer token in `MCP_TEST_TOKEN` when it is set; it prints
//! `listening on http://ADDR/mcp` on stderr and stops when its stdin closes.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use yiem_core::mcp::{McpHttpServer, McpServer};
use yiem_core::{
    exec::{Block, ToolExecutor, ToolHooks},
    store::{ToolStore, register_all_tools},
    tool,
    tool::{AgentTool, Content, Json, State, ToolContext},
};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    /// `a + b`.
    sum: i64,
}

/// Add two integers.
#[tool(parallel, read_only, idempotent, open_world = false)]
async fn add(args: AddArgs) -> Json<Sum> {
    Json(Sum {
        sum: args.a + args.b,
    })
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

/// Send the text back unchanged.
#[tool(label = "Echo Text", parallel)]
async fn echo(args: EchoArgs) -> String {
    args.text
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// How many steps to count.
    steps: u32,
}

/// Count up, reporting each step as progress.
#[tool(parallel)]
async fn count_up(ctx: ToolContext, args: CountArgs) -> String {
    for step in 1..=args.steps {
        ctx.update(format!("step {step} of {}", args.steps));
    }
    format!("counted to {}", args.steps)
}

/// A one-pixel PNG, with a caption.
#[tool(parallel)]
async fn pixel() -> Vec<Content> {
    vec![
        Content::text("a 1x1 PNG"),
        Content::image("iVBORw0KGgo=", "image/png"),
    ]
}

/// A sound, a file and a link, with a caption: every kind of block beside text and images.
#[tool(parallel)]
async fn media() -> Vec<Content> {
    vec![
        Content::text("a sound, a note and a link"),
        Content::audio("UklGRg==", "audio/wav"),
        Content::resource_text("file:///notes/today.md", "# Today"),
        Content::resource_blob("file:///notes/today.pdf", "JVBERg==", "application/pdf"),
        Content::resource_link("file:///notes/yesterday.md", "yesterday.md"),
    ]
}

/// Always refused by the server's `before_tool_call` hook.
#[tool]
async fn forbidden() -> &'static str {
    "the hook let me through"
}

#[derive(Deserialize, JsonSchema)]
struct WaitArgs {
    /// A directory for marker files: `started` when the call begins, `finished` if it runs to its end,
    /// `cancelled` if it is stopped after its token was cancelled.
    markers: PathBuf,
    /// How long to work before finishing.
    millis: u64,
}

/// Work for a while, leaving marker files that show how the call ended.
#[tool(parallel, destructive = false)]
async fn slow_job(ctx: ToolContext, args: WaitArgs) -> Result<String, std::io::Error> {
    std::fs::write(args.markers.join("started"), "")?;
    let mut stopped = StoppedMarker {
        ctx: ctx.clone(),
        path: args.markers.join("cancelled"),
        finished: false,
    };
    tokio::select! {
        () = ctx.cancelled() => return Ok("saw the cancellation".into()),
        () = tokio::time::sleep(Duration::from_millis(args.millis)) => {}
    }
    std::fs::write(args.markers.join("finished"), "")?;
    stopped.finished = true;
    Ok("finished".into())
}

/// Writes its marker when the call is dropped (the executor drops a cancelled call) with its token
/// cancelled: proof the call stopped because of the cancellation.
struct StoppedMarker {
    ctx: ToolContext,
    path: PathBuf,
    finished: bool,
}

impl Drop for StoppedMarker {
    fn drop(&mut self) {
        if !self.finished && self.ctx.is_cancelled() {
            let _ = std::fs::write(&self.path, "");
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct StepArgs {
    /// A directory shared by the calls that must not overlap.
    markers: PathBuf,
    /// How long to hold it.
    millis: u64,
}

/// Hold a directory alone for a while; sequential, so no other call runs meanwhile.
#[tool]
async fn exclusive_step(args: StepArgs) -> Result<String, std::io::Error> {
    let busy = args.markers.join("busy");
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&busy)
    {
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            return Ok("overlapped another call".into());
        }
        Err(error) => return Err(error),
    }
    tokio::time::sleep(Duration::from_millis(args.millis)).await;
    std::fs::remove_file(&busy)?;
    Ok("ran alone".into())
}

/// The store this server serves, as state of the tool that adds to it.
struct Served(ToolStore);

/// Add the tool `greet` to this server; the client is told that the list changed.
#[tool]
async fn learn(State(served): State<Served>) -> Result<String, String> {
    let store = served.0.clone();
    if store.get("greet").is_some() {
        return Ok("`greet` is here already".into());
    }
    let greet = AgentTool::builder("greet")
        .description("Greet someone by name.")
        .input_schema(serde_json::json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Who to greet."}},
            "required": ["name"]
        }))
        .parallel()
        .handler(|_, args: serde_json::Value| async move {
            format!("hello, {}", args["name"].as_str().unwrap_or_default())
        })
        .build()
        .map_err(|error| error.to_string())?;
    store.register(greet).map_err(|error| error.to_string())?;
    Ok("learned `greet`".into())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
        .init();
    let served = ToolStore::new("yiem-test");
    let store = served.clone().with_state(Served(served));
    register_all_tools(&store)?;
    let hooks = ToolHooks::new().before_tool_call(|ctx| async move {
        (ctx.call.name == "forbidden")
            .then(|| Block::new("`forbidden` is refused by the server's policy"))
    });
    let server = McpServer::new(store)
        .server_info("yiem-test", "0.0.1")
        .executor(ToolExecutor::new().with_hooks(hooks));
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|arg| arg == name)
            .and_then(|at| args.get(at + 1))
    };
    let Some(address) = flag("--http") else {
        server.serve_stdio().await?;
        return Ok(());
    };
    let mut http = McpHttpServer::new(server);
    if let Ok(token) = std::env::var("MCP_TEST_TOKEN") {
        http = http.bearer_token(token);
    }
    if let Some(bytes) = flag("--max-body") {
        http = http.max_body_bytes(bytes.parse()?);
    }
    let listener = tokio::net::TcpListener::bind(address.as_str()).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    // The test holds stdin open; closing it (or the test dying) shuts the server down.
    let stdin_closed = async {
        let mut sink = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::stdin(), &mut sink).await;
    };
    http.serve(listener, stdin_closed).await?;
    Ok(())
}
