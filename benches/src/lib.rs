//! The fixtures of the yiem benchmarks: one tool, `add {a: i64, b: i64, note: Option<String>}`, written
//! the way each toolkit's users write it, and the floor they are measured against.
//!
//! - [`floor`]: a hand-written `match` on the name, `serde_json::from_value` (or `from_str`) and a call;
//! - [`floor_batch`]: the same by hand for the pipeline's input and output — a list of calls in, one
//!   stamped result message per call out, the four events of each call to a sink — and nothing else;
//! - yiem: [`add_tool`], from `#[tool]`;
//! - rmcp 3.11: [`RmcpServer`], a `#[tool_router]` with one `#[tool]` method, called through its
//!   `ToolRouter`;
//! - rig 0.44: [`RigAdd`], an implementation of `rig_core::tool::Tool`, called through
//!   `rig_agent::tool::ToolSet::execute` (0.44 calls it `execute`; older versions called it `call`).
//!
//! Each runs the same function, [`add_impl`], so the differences are what the toolkit adds around it.

use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRoute;
use rmcp::handler::server::tool::{ToolCallContext, ToolRouter};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, JsonObject, NumberOrString,
};
use rmcp::service::{Peer, RequestContext, RoleServer, RunningService};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use yiem_core::{tool, tool::AgentTool};

/// The arguments of `add`, shared by every toolkit.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct AddArgs {
    /// The first addend.
    pub a: i64,
    /// The second addend.
    pub b: i64,
    /// A note to append to the sum.
    pub note: Option<String>,
}

/// The body of `add`: the same work behind every toolkit.
pub fn add_impl(args: AddArgs) -> String {
    let sum = args.a + args.b;
    match args.note {
        Some(note) => format!("{sum} ({note})"),
        None => sum.to_string(),
    }
}

/// The arguments every call sends.
pub fn arguments() -> Value {
    serde_json::json!({"a": 40, "b": 2, "note": "answer"})
}

/// The same arguments as a JSON string (the OpenAI wire format).
pub fn arguments_string() -> String {
    arguments().to_string()
}

/// The answer every call must give.
pub const ANSWER: &str = "42 (answer)";

/// Add two integers.
#[tool(parallel)]
pub async fn add(args: AddArgs) -> String {
    add_impl(args)
}

/// The floor: what a program with one hard-wired tool would write by hand.
pub mod catalog;

pub mod floor {
    use super::{AddArgs, add_impl};
    use serde_json::Value;

    /// `match` + `serde_json::from_value` + call.
    pub async fn dispatch_value(name: &str, args: Value) -> Result<String, String> {
        match name {
            "add" => match serde_json::from_value::<AddArgs>(args) {
                Ok(args) => Ok(add_impl(args)),
                Err(error) => Err(error.to_string()),
            },
            other => Err(format!("unknown tool {other}")),
        }
    }

    /// `match` + `serde_json::from_str` + call.
    pub async fn dispatch_str(name: &str, args: &str) -> Result<String, String> {
        match name {
            "add" => match serde_json::from_str::<AddArgs>(args) {
                Ok(args) => Ok(add_impl(args)),
                Err(error) => Err(error.to_string()),
            },
            other => Err(format!("unknown tool {other}")),
        }
    }
}

/// The pipeline's floor: what [`ToolExecutor::execute`](yiem_core::exec::ToolExecutor::execute) does for a call
/// that every promise lets through, written by hand for the one tool. The same input (the caller's
/// `Vec<ToolCall>`), the same output (one result message per call, the call's id and name moved in, stamped
/// now; the list reuses the calls' allocation) and the same four events with shared payloads to a sink —
/// and nothing else: no unwind guards, spans, order, abort check, time limit, hooks, unknown-property check
/// or boxed future. What the pipeline costs above this is what those promises cost.
pub mod floor_batch {
    use std::sync::Arc;

    use serde::Deserialize;
    use serde_json::Value;
    use yiem_core::{
        event::AgentEvent,
        exec::ToolCall,
        message::{AgentMessage, ToolResultMessage},
        tool::AgentToolResult,
    };

    use super::{AddArgs, add_impl};

    /// Runs `calls` one after another, each call's events to `sink`.
    pub async fn dispatch(
        calls: Vec<ToolCall>,
        sink: &(dyn Fn(&AgentEvent) + Sync),
    ) -> Vec<ToolResultMessage> {
        calls.into_iter().map(|call| one(call, sink)).collect()
    }

    fn one(call: ToolCall, sink: &(dyn Fn(&AgentEvent) + Sync)) -> ToolResultMessage {
        let call = Arc::new(call);
        sink(&AgentEvent::ToolExecutionStart {
            call: Arc::clone(&call),
        });
        let result = match call.name.as_str() {
            "add" => {
                // The event holds the call, so its arguments are read where they are.
                let parsed = match &call.arguments {
                    Value::String(text) => serde_json::from_str::<AddArgs>(text),
                    args => AddArgs::deserialize(args),
                };
                match parsed {
                    Ok(args) => AgentToolResult::text(add_impl(args)),
                    Err(error) => AgentToolResult::error(error.to_string()),
                }
            }
            other => AgentToolResult::error(format!("unknown tool {other}")),
        };
        let is_error = result.is_error;
        let result = Arc::new(result);
        sink(&AgentEvent::ToolExecutionEnd {
            call: Arc::clone(&call),
            result: Arc::clone(&result),
            is_error,
        });
        let result = Arc::try_unwrap(result).unwrap_or_else(|kept| (*kept).clone());
        let call = Arc::try_unwrap(call).unwrap_or_else(|kept| (*kept).clone());
        // `ToolResultMessage` is `#[non_exhaustive]`: stamp it through its constructor (an empty call,
        // no allocation) and move the call's id and name in, as before.
        let mut message = ToolResultMessage::new(&ToolCall::new("", "", Value::Null), result);
        message.tool_call_id = call.id;
        message.tool_name = call.name;
        let message = Arc::new(AgentMessage::ToolResult(message));
        sink(&AgentEvent::MessageStart {
            message: Arc::clone(&message),
        });
        sink(&AgentEvent::MessageEnd {
            message: Arc::clone(&message),
        });
        match Arc::try_unwrap(message).unwrap_or_else(|kept| (*kept).clone()) {
            AgentMessage::ToolResult(message) => message,
            _ => unreachable!("built as a tool result above"),
        }
    }
}

/// A filler tool for the scale benchmarks: `add`'s schema and handler under another name, built at run
/// time (`AgentTool::builder`), since `#[tool]` names are fixed at compile time.
pub fn yiem_filler(name: &str) -> AgentTool {
    AgentTool::builder(name)
        .description("Add two integers.")
        .input_schema(schemars::schema_for!(AddArgs).to_value())
        .parallel()
        .handler(|_ctx, args: Value| async move {
            serde_json::from_value::<AddArgs>(args)
                .map(add_impl)
                .map_err(|e| e.to_string())
        })
        .build()
        .expect("the filler definition is valid")
}

/// The rmcp server: one `#[tool]` method in a `#[tool_router]`.
#[derive(Clone)]
pub struct RmcpServer {
    /// The router `#[tool_router]` builds.
    pub tool_router: ToolRouter<RmcpServer>,
}

#[rmcp::tool_router(server_handler)]
impl RmcpServer {
    /// A server with the `add` tool.
    pub fn new() -> Self {
        RmcpServer {
            tool_router: Self::tool_router(),
        }
    }

    /// Add two integers.
    #[rmcp::tool(description = "Add two integers.")]
    async fn add(&self, Parameters(args): Parameters<AddArgs>) -> String {
        add_impl(args)
    }
}

impl Default for RmcpServer {
    fn default() -> Self {
        Self::new()
    }
}

/// A filler route for rmcp's router: `add`'s schema under another name.
pub fn rmcp_filler(name: String) -> ToolRoute<RmcpServer> {
    let schema = match schemars::schema_for!(AddArgs).to_value() {
        Value::Object(map) => map,
        _ => unreachable!("a struct's schema is an object"),
    };
    let attr = rmcp::model::Tool::new(
        Cow::Owned(name),
        "Add two integers.",
        Arc::new(schema) as Arc<JsonObject>,
    );
    ToolRoute::new_dyn(attr, |_ctx: ToolCallContext<'_, RmcpServer>| {
        Box::pin(async { Ok(CallToolResult::default().into()) })
    })
}

/// What rmcp needs to call a tool outside a transport loop: the server and a peer for the request
/// context. The peer comes from serving the server on an in-memory pipe that nobody writes to.
pub struct RmcpHarness {
    /// The server whose router is called.
    pub server: RmcpServer,
    peer: Peer<RoleServer>,
    _running: RunningService<RoleServer, RmcpServer>,
    _client_end: tokio::io::DuplexStream,
}

impl RmcpHarness {
    /// Starts the harness; call inside a Tokio runtime.
    pub fn new(server: RmcpServer) -> Self {
        let (server_end, client_end) = tokio::io::duplex(64 * 1024);
        let running = rmcp::service::serve_directly(server.clone(), server_end, None);
        let peer = running.peer().clone();
        RmcpHarness {
            server,
            peer,
            _running: running,
            _client_end: client_end,
        }
    }

    /// The context rmcp's service loop builds for each request (a fresh cancellation token and
    /// extensions, a clone of the peer).
    pub fn request_context(&self) -> RequestContext<RoleServer> {
        RequestContext::new(NumberOrString::Number(1), self.peer.clone())
    }

    /// `ToolRouter::call` for `name` with an arguments object.
    pub async fn call(
        &self,
        name: &'static str,
        args: JsonObject,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let params = CallToolRequestParams::new(name).with_arguments(args);
        let ctx = ToolCallContext::new(&self.server, params, self.request_context());
        self.server.tool_router.call(ctx).await
    }
}

/// The rig tool: an implementation of `rig_core::tool::Tool`.
#[derive(Clone, Copy, Debug, Default)]
pub struct RigAdd;

impl rig_core::tool::Tool for RigAdd {
    const NAME: &'static str = "add";
    type Args = AddArgs;
    type Output = String;
    type Error = Infallible;

    fn description(&self) -> String {
        "Add two integers.".to_owned()
    }

    fn parameters(&self) -> Value {
        schemars::schema_for!(AddArgs).to_value()
    }

    async fn call(
        &self,
        _context: &mut rig_core::tool::ToolContext,
        args: AddArgs,
    ) -> Result<String, Infallible> {
        Ok(add_impl(args))
    }
}

/// A filler tool for rig's `ToolSet`: `add`'s schema under another name (`Tool::NAME` is a constant, so
/// tools named at run time are `DynamicTool`s).
pub fn rig_filler(name: String) -> rig_core::tool::DynamicTool {
    rig_core::tool::DynamicTool::new(
        rig_core::message::ToolName::new(name).expect("a name"),
        "Add two integers.",
        schemars::schema_for!(AddArgs).to_value(),
        |_args| Box::pin(async { Ok(rig_core::tool::ToolOutput::text("0")) }),
    )
}

/// The JSON object of the arguments, as rmcp takes them.
pub fn arguments_object() -> JsonObject {
    match arguments() {
        Value::Object(map) => map,
        _ => unreachable!("the arguments are an object"),
    }
}

/// The two MCP HTTP servers of the HTTP benchmarks (`http_load`, `http_count`) and their one request.
///
/// Both serve [`add`] statelessly with JSON answers, rmcp's `StreamableHttpService` on a hyper HTTP/1.1
/// loop: yiem's `McpHttpServer` (with its checks), and rmcp's own `#[tool_router]` server ([`RmcpServer`]).
pub mod http {
    use std::sync::Arc;

    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    use hyper::client::conn::http1::SendRequest;
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    use tokio::net::TcpListener;
    use yiem_core::mcp::{DEFAULT_HEADER_READ_TIMEOUT, McpHttpServer, McpServer};
    use yiem_core::store::{ToolStore, register_all_tools};

    use super::{ANSWER, RmcpServer, arguments};

    /// Starts yiem's `McpHttpServer` on a loopback port, on the current runtime; returns its address.
    pub async fn yiem_server() -> String {
        let store = ToolStore::new("bench");
        register_all_tools(&store).expect("the bench tools register");
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let server = McpHttpServer::new(McpServer::new(store));
        tokio::spawn(server.serve(listener, std::future::pending()));
        address
    }

    /// How [`rmcp_server`] serves rmcp's `StreamableHttpService`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum RmcpHttp {
        /// A server, its `#[tool_router]` included, built per request (as rmcp's examples write it).
        PerRequest,
        /// One server built once and cloned per request (as yiem's `McpHttpServer` does).
        Shared,
        /// `Shared`, behind hyper's header-read time limit at yiem's default (yiem's server always has
        /// one: a client that sends a request's head slowly, or idles between requests, is cut off).
        Guarded,
    }

    /// Starts rmcp's `StreamableHttpService` over [`RmcpServer`] on a loopback port, on the current
    /// runtime, served as `how` says; returns its address.
    pub async fn rmcp_server(how: RmcpHttp) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true);
        let built = RmcpServer::new();
        let service = StreamableHttpService::new(
            move || {
                Ok(match how {
                    RmcpHttp::PerRequest => RmcpServer::new(),
                    RmcpHttp::Shared | RmcpHttp::Guarded => built.clone(),
                })
            },
            Arc::new(NeverSessionManager::default()),
            config,
        );
        let mut http1 = hyper::server::conn::http1::Builder::new();
        if how == RmcpHttp::Guarded {
            http1
                .timer(TokioTimer::new())
                .header_read_timeout(DEFAULT_HEADER_READ_TIMEOUT);
        }
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let service = TowerToHyperService::new(service.clone());
                tokio::spawn(http1.serve_connection(TokioIo::new(stream), service));
            }
        });
        address
    }

    /// One `tools/call` of `add` on `sender`'s connection, its answer read and checked (HTTP 200,
    /// `42 (answer)`, not an error).
    pub async fn call(
        sender: &mut SendRequest<Full<Bytes>>,
        address: &str,
        id: usize,
    ) -> Result<(), String> {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                      "params": {"name": "add", "arguments": arguments()}});
        let request = hyper::Request::post("/mcp")
            .header("host", address)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-06-18")
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        sender.ready().await.map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let text = String::from_utf8_lossy(&body);
        if status != 200 || !text.contains(ANSWER) || text.contains("\"isError\":true") {
            return Err(format!("{status}: {text}"));
        }
        Ok(())
    }
}

/// The replies of `benches/provider_streams.rs` and `src/bin/provider-stream-count.rs` (issue 50): one
/// reply per provider client from a server on 127.0.0.1, whose single text delta (or single tool-call
/// argument delta, `{"city": "<text>"}`) is as long as asked, sent as one body the socket delivers in pieces.
pub mod provider_streams {
    use std::ops::Range;
    use std::sync::Arc;

    use futures::StreamExt;
    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;
    use yiem_core::exec::CancellationToken;
    use yiem_core::llm::{
        AnthropicConfig, AnthropicModel, GeminiConfig, GeminiModel, Model, ModelEvent,
        ModelRequest, OpenAiConfig, OpenAiModel, OpenAiResponsesConfig, OpenAiResponsesModel,
    };
    use yiem_core::message::UserMessage;

    /// The sizes measured, by label.
    pub const SIZES: [(&str, usize); 3] =
        [("512KB", 512 << 10), ("4MB", 4 << 20), ("32MB", 32 << 20)];

    /// The text of a delta of `bytes` bytes.
    pub fn text(bytes: usize) -> String {
        "abcdefgh".repeat(bytes / 8)
    }

    /// One whole reply of `model`, `Start` to `Done`; its number of events.
    pub async fn stream_once(model: &dyn Model, what: &str) -> usize {
        let request = ModelRequest::new("", vec![UserMessage::text("hi").into()]);
        let events: Vec<ModelEvent> = model
            .stream(request, CancellationToken::new())
            .collect()
            .await;
        assert!(
            matches!(events.last(), Some(ModelEvent::Done { .. })),
            "{what}: {:?}",
            events.last()
        );
        events.len()
    }

    pub const PROVIDERS: [&str; 4] = ["openai", "responses", "anthropic", "gemini"];

    /// The floor of one reply: its body, from the same server, read with reqwest into one buffer as it
    /// arrives (grown as the pieces come, as a stream's reader must), and the delta's bytes (at `delta`
    /// in the body) taken out of that buffer as a `String` without parsing — the least any client does:
    /// receive the bytes into new memory. The string's length.
    pub async fn floor_once(http: &reqwest::Client, root: &str, delta: Range<usize>) -> usize {
        let mut response = http.post(root).body("{}").send().await.unwrap();
        let mut body = Vec::new();
        while let Some(piece) = response.chunk().await.unwrap() {
            body.extend_from_slice(&piece);
        }
        body.truncate(delta.end);
        body.drain(..delta.start);
        String::from_utf8(body).unwrap().len()
    }

    /// Where `text` (a [`text`] delta) first is in the body of `response` (a whole HTTP response, as
    /// [`reply`] makes it): where its first bytes first are (a needle of 32 MB is slow to search for).
    pub fn delta_range(response: &str, text: &str) -> Range<usize> {
        let body = &response[response.find("\r\n\r\n").unwrap() + 4..];
        let start = body.find(&text[..text.len().min(64)]).unwrap();
        assert_eq!(&body[start..start + text.len()], text);
        start..start + text.len()
    }

    fn data(payload: Value) -> String {
        format!("data: {payload}\n\n")
    }

    fn named(event: &str, payload: Value) -> String {
        format!("event: {event}\ndata: {payload}\n\n")
    }

    /// A reply of `provider` with one text delta of `text`, or one argument delta of `{"city": text}`.
    pub fn reply(provider: &str, text: &str, call: bool) -> String {
        let arguments = json!({ "city": text }).to_string();
        let events = match (provider, call) {
            ("openai", false) => vec![
                data(
                    json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}),
                ),
                data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
                "data: [DONE]\n\n".into(),
            ],
            ("openai", true) => vec![
                data(
                    json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1",
                    "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}, "finish_reason": null}]}),
                ),
                data(
                    json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
                    "function": {"arguments": arguments}}]}, "finish_reason": null}]}),
                ),
                data(
                    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
                ),
                "data: [DONE]\n\n".into(),
            ],
            ("responses", false) => vec![
                named(
                    "response.output_item.added",
                    json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"type": "message", "id": "m1", "role": "assistant", "content": []}}),
                ),
                named(
                    "response.output_text.delta",
                    json!({"type": "response.output_text.delta", "item_id": "m1",
                    "output_index": 0, "content_index": 0, "delta": text}),
                ),
                named(
                    "response.completed",
                    json!({"type": "response.completed", "response": {"id": "r1",
                    "status": "completed", "output": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
                ),
            ],
            ("responses", true) => vec![
                named(
                    "response.output_item.added",
                    json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"type": "function_call", "id": "f1", "call_id": "c1", "name": "get_weather", "arguments": ""}}),
                ),
                named(
                    "response.function_call_arguments.delta",
                    json!({"type": "response.function_call_arguments.delta",
                    "item_id": "f1", "output_index": 0, "delta": arguments}),
                ),
                named(
                    "response.output_item.done",
                    json!({"type": "response.output_item.done", "output_index": 0,
                    "item": {"type": "function_call", "id": "f1", "call_id": "c1", "name": "get_weather", "arguments": arguments}}),
                ),
                named(
                    "response.completed",
                    json!({"type": "response.completed", "response": {"id": "r1",
                    "status": "completed", "output": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
                ),
            ],
            ("anthropic", call) => {
                let (block, delta, stop) = if call {
                    (
                        json!({"type": "tool_use", "id": "c1", "name": "get_weather", "input": {}}),
                        json!({"type": "input_json_delta", "partial_json": arguments}),
                        "tool_use",
                    )
                } else {
                    (
                        json!({"type": "text", "text": ""}),
                        json!({"type": "text_delta", "text": text}),
                        "end_turn",
                    )
                };
                vec![
                    named(
                        "message_start",
                        json!({"type": "message_start", "message": {"id": "m1", "type": "message",
                        "role": "assistant", "content": [], "model": "claude", "usage": {"input_tokens": 1, "output_tokens": 1}}}),
                    ),
                    named(
                        "content_block_start",
                        json!({"type": "content_block_start", "index": 0, "content_block": block}),
                    ),
                    named(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
                    ),
                    named(
                        "content_block_stop",
                        json!({"type": "content_block_stop", "index": 0}),
                    ),
                    named(
                        "message_delta",
                        json!({"type": "message_delta", "delta": {"stop_reason": stop},
                        "usage": {"output_tokens": 1}}),
                    ),
                    named("message_stop", json!({"type": "message_stop"})),
                ]
            }
            ("gemini", call) => {
                let part = if call {
                    json!({"functionCall": {"name": "get_weather", "args": {"city": text}}})
                } else {
                    json!({"text": text})
                };
                vec![data(
                    json!({"candidates": [{"content": {"role": "model", "parts": [part]},
                    "finishReason": "STOP", "index": 0}]}),
                )]
            }
            _ => unreachable!(),
        };
        let body = events.concat();
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    }

    /// A server on 127.0.0.1 that answers every request with `response`; its address.
    pub async fn serve(response: Arc<String>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let response = Arc::clone(&response);
                tokio::spawn(async move {
                    // The request: its head, then as many bytes as it says.
                    let mut read = Vec::new();
                    let mut piece = [0u8; 8192];
                    loop {
                        let Ok(n) = socket.read(&mut piece).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        read.extend_from_slice(&piece[..n]);
                        if let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&read[..end]).to_ascii_lowercase();
                            let length: usize = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|n| n.trim().parse().ok())
                                .unwrap_or(0);
                            if read.len() >= end + 4 + length {
                                break;
                            }
                        }
                    }
                    let _ = socket.write_all(response.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        address
    }

    pub fn model(provider: &str, root: &str) -> Arc<dyn Model> {
        match provider {
            "openai" => Arc::new(
                OpenAiModel::new(OpenAiConfig::new(format!("{root}/v1"), "gpt").api_key("sk"))
                    .unwrap(),
            ),
            "responses" => Arc::new(
                OpenAiResponsesModel::new(
                    OpenAiResponsesConfig::new("gpt")
                        .base_url(format!("{root}/v1"))
                        .api_key("sk"),
                )
                .unwrap(),
            ),
            "anthropic" => Arc::new(
                AnthropicModel::new(AnthropicConfig::new("sk", "claude").base_url(root)).unwrap(),
            ),
            "gemini" => Arc::new(
                GeminiModel::new(
                    GeminiConfig::new("key", "gemini").base_url(format!("{root}/v1beta")),
                )
                .unwrap(),
            ),
            _ => unreachable!(),
        }
    }
}
