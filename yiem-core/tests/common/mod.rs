//! A real HTTP/1.1 server on 127.0.0.1 for the provider tests: each connection gets the next scripted
//! [`Reply`] (SSE chunked, until close, cut, stalled, silent, or any status), and every request is
//! recorded with its headers and JSON body.
#![allow(dead_code)]

pub mod sdk;
#[cfg(all(
    feature = "openai-responses",
    feature = "anthropic",
    feature = "gemini"
))]
pub mod streams;

/// Compares `value`, pretty-printed, with the golden file `tests/golden/<name>`; `YIEM_BLESS=1` rewrites
/// the file first.
pub fn golden(name: &str, value: &Value) {
    let text = serde_json::to_string_pretty(value).unwrap() + "\n";
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("YIEM_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        text,
        expected,
        "{} differs (YIEM_BLESS=1 rewrites it)",
        path.display()
    );
}

/// Python virtualenvs for the outside programs (llmock, the providers' SDKs): the helper every crate's
/// tests share.
#[path = "../../../tests/src/venv.rs"]
pub mod venv;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use yiem_core::{
    exec::CancellationToken,
    llm::{MessageAssembler, Model, ModelEvent, ModelRequest},
    message::{AssistantMessage, StopReason, Usage},
    tool::{AgentTool, ToolContext},
};

/// What the server answers to one request.
#[derive(Clone)]
pub enum Reply {
    /// 200 `text/event-stream` with `Transfer-Encoding: chunked`: each piece is written (and flushed) as
    /// one HTTP chunk, then the terminating zero chunk.
    Sse(Vec<String>),
    /// 200 `text/event-stream` without a length: the pieces, then the server closes the connection
    /// (`Connection: close` framing, as simple servers do).
    SseUntilClose(Vec<String>),
    /// 200 `text/event-stream`, chunked: the pieces, then the connection drops without the terminating
    /// chunk (a stream cut by the network).
    SseCut(Vec<String>),
    /// 200 `text/event-stream`, chunked: the pieces, then silence with the connection held open.
    SseStall(Vec<String>),
    /// 200 `text/event-stream`, chunked: the pieces, then `keep` again and again (a keep-alive
    /// comment, say), each 5 ms after the last, until the client hangs up.
    SseForever(Vec<String>, String),
    /// No answer at all; the connection is held open.
    Silence,
    /// Any status with extra headers and a body.
    Status {
        status: &'static str,
        headers: Vec<(&'static str, &'static str)>,
        content_type: &'static str,
        body: String,
    },
}

/// A request as the server saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub request_line: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub struct Server {
    pub port: u16,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
    /// Signalled each time a request has been read.
    pub arrived: Arc<Notify>,
}

impl Server {
    /// Serves `replies` in order, one per connection; the last one repeats forever.
    pub async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Notify::new());
        let (log, signal) = (Arc::clone(&requests), Arc::clone(&arrived));
        tokio::spawn(async move {
            let mut served = 0;
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let reply = replies[served.min(replies.len() - 1)].clone();
                served += 1;
                let (log, signal) = (Arc::clone(&log), Arc::clone(&signal));
                tokio::spawn(async move {
                    serve(socket, reply, log, signal).await;
                });
            }
        });
        Server {
            port,
            requests,
            arrived,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn root(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    reply: Reply,
    log: Arc<Mutex<Vec<Recorded>>>,
    arrived: Arc<Notify>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    log.lock().unwrap().push(request);
    arrived.notify_one();
    let sse_head = |chunked: bool| {
        let framing = if chunked {
            "Transfer-Encoding: chunked\r\n"
        } else {
            ""
        };
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n\
             {framing}Connection: close\r\n\r\n"
        )
    };
    match reply {
        Reply::Sse(pieces) => {
            write(&mut socket, &sse_head(true)).await;
            for piece in pieces {
                write_chunk(&mut socket, &piece).await;
            }
            write(&mut socket, "0\r\n\r\n").await;
        }
        Reply::SseUntilClose(pieces) => {
            write(&mut socket, &sse_head(false)).await;
            for piece in pieces {
                write(&mut socket, &piece).await;
            }
        }
        Reply::SseCut(pieces) => {
            write(&mut socket, &sse_head(true)).await;
            for piece in pieces {
                write_chunk(&mut socket, &piece).await;
            }
        }
        Reply::SseStall(pieces) => {
            write(&mut socket, &sse_head(true)).await;
            for piece in pieces {
                write_chunk(&mut socket, &piece).await;
            }
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        Reply::SseForever(pieces, keep) => {
            write(&mut socket, &sse_head(true)).await;
            for piece in pieces {
                write_chunk(&mut socket, &piece).await;
            }
            let chunk = format!("{:x}\r\n{keep}\r\n", keep.len());
            while socket.write_all(chunk.as_bytes()).await.is_ok() && socket.flush().await.is_ok() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        Reply::Silence => tokio::time::sleep(Duration::from_secs(3600)).await,
        Reply::Status {
            status,
            headers,
            content_type,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            write(&mut socket, &head).await;
            write(&mut socket, &body).await;
        }
    }
    let _ = socket.shutdown().await;
}

async fn write(socket: &mut TcpStream, text: &str) {
    let _ = socket.write_all(text.as_bytes()).await;
    let _ = socket.flush().await;
}

async fn write_chunk(socket: &mut TcpStream, piece: &str) {
    write(socket, &format!("{:x}\r\n{piece}\r\n", piece.len())).await;
}

/// Reads one HTTP/1.1 request: the head up to the blank line, then `Content-Length` bytes of body.
async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let mut piece = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let n = socket.read(&mut piece).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&piece[..n]);
    };
    let head = String::from_utf8(buffer[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut piece).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&piece[..n]);
    }
    Some(Recorded {
        request_line,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// One SSE event with a JSON payload, as servers write it.
pub fn data(payload: Value) -> String {
    format!("data: {payload}\n\n")
}

/// One SSE event with an `event:` name and a JSON payload (Anthropic's shape).
pub fn named(event: &str, payload: Value) -> String {
    format!("event: {event}\ndata: {payload}\n\n")
}

/// A tool with one required string argument, for the request bodies.
pub fn weather_tool() -> AgentTool {
    AgentTool::builder("get_weather")
        .description("Current weather for a city.")
        .input_schema(serde_json::json!({
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"]
        }))
        .handler(|_ctx: ToolContext, _args: Value| async move { "sunny" })
        .build()
        .unwrap()
}

/// Every event of one reply (30 s at most).
pub async fn all_events(model: &dyn Model, request: ModelRequest) -> Vec<ModelEvent> {
    tokio::time::timeout(
        Duration::from_secs(30),
        model.stream(request, CancellationToken::new()).collect(),
    )
    .await
    .expect("the stream ended")
}

/// The events of one reply, without the `ToolCallArguments` that follow argument deltas (they have
/// their own tests).
pub async fn events(model: &dyn Model, request: ModelRequest) -> Vec<ModelEvent> {
    let mut all = all_events(model, request).await;
    all.retain(|event| !matches!(event, ModelEvent::ToolCallArguments { .. }));
    all
}

/// The message the events make.
pub fn assemble(events: &[ModelEvent]) -> AssistantMessage {
    let mut assembler = MessageAssembler::new();
    for event in events {
        assembler.apply(event.clone());
    }
    assembler.finish()
}

/// The text of the last event, which must be an error.
pub fn last_error(events: &[ModelEvent]) -> &str {
    match events.last() {
        Some(ModelEvent::Error(text)) => text,
        _ => panic!("the reply did not end in an error: {events:?}"),
    }
}

/// Usage with only the input and output counts.
pub fn usage(input: u64, output: u64) -> Usage {
    Usage::new(input, output)
}

/// The `Done` event.
pub fn done(stop_reason: StopReason, usage: Usage) -> ModelEvent {
    ModelEvent::Done { stop_reason, usage }
}

/// The `name` of each tool of a request's `tools` array, in order.
pub fn tool_names(tools: &Value) -> Vec<&str> {
    tools
        .as_array()
        .expect("a list of tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a named tool"))
        .collect()
}
