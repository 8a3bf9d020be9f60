//! A scripted model on loopback for the `yiem chat` tests: a one-thread HTTP server that answers each
//! request with the next scripted SSE reply (in the OpenAI, Anthropic or Gemini format the test wrote) and
//! records the request bodies. A reply can hold back the rest of its stream until the test opens a gate,
//! so a test can see text on screen while the stream is still open.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// A piece of a scripted reply.
pub enum Part {
    /// Bytes to send as they are.
    Bytes(String),
    /// Wait until the matching [`Gate`] opens (or is dropped).
    Wait(Receiver<()>),
}

/// Lets a held-back reply go on.
pub struct Gate(Sender<()>);

impl Gate {
    /// A gate and the part that waits for it.
    pub fn new() -> (Gate, Part) {
        let (open, wait) = channel();
        (Gate(open), Part::Wait(wait))
    }

    /// Lets the reply go on.
    pub fn open(self) {
        let _ = self.0.send(());
    }
}

/// The server: its base URL and the request bodies it received.
pub struct ModelServer {
    /// `http://127.0.0.1:PORT/v1`.
    pub url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl ModelServer {
    /// Serves `replies` in order; a request beyond them gets a 500 that says the script ran out.
    pub fn start(replies: Vec<Vec<Part>>) -> ModelServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        std::thread::spawn(move || {
            let mut replies = replies.into_iter();
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some(body) = read_request(&stream) else {
                    continue;
                };
                recorded.lock().unwrap().push(body);
                let Some(parts) = replies.next() else {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n\
                         Content-Length: 41\r\nConnection: close\r\n\r\n{{\"error\":{{\"message\":\"script ran out\"}}}}"
                    );
                    continue;
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                );
                for part in parts {
                    match part {
                        Part::Bytes(bytes) => {
                            let _ = stream.write_all(bytes.as_bytes());
                            let _ = stream.flush();
                        }
                        Part::Wait(gate) => {
                            let _ = gate.recv();
                        }
                    }
                }
            }
        });
        ModelServer { url, requests }
    }

    /// The request bodies received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|body| serde_json::from_str(body).unwrap())
            .collect()
    }

    /// The raw request bodies received so far, in order.
    pub fn raw_requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

fn read_request(stream: &std::net::TcpStream) -> Option<String> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().ok()?;
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut request = vec![0; length];
    reader.read_exact(&mut request).ok()?;
    String::from_utf8(request).ok()
}

/// An OpenAI chat-completions SSE body of `chunks`, ended by `[DONE]`.
pub fn sse(chunks: &[Value]) -> String {
    let mut body: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// One OpenAI SSE event (no `[DONE]`).
pub fn event(chunk: Value) -> String {
    format!("data: {chunk}\n\n")
}

/// An OpenAI text delta chunk.
pub fn text(text: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {"content": text}}]})
}

/// The end of an OpenAI reply, with its usage.
pub fn finish(reason: &str, prompt_tokens: u64, completion_tokens: u64) -> Value {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}],
           "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                     "total_tokens": prompt_tokens + completion_tokens}})
}

/// A whole OpenAI reply that says `words`.
pub fn says(words: &str) -> Vec<Part> {
    vec![Part::Bytes(sse(&[text(words), finish("stop", 10, 3)]))]
}

/// A whole OpenAI reply that calls `tool` with `arguments` (streamed in two pieces).
pub fn calls(id: &str, tool: &str, arguments: Value) -> Vec<Part> {
    let arguments = arguments.to_string();
    let (head, tail) = arguments.split_at(arguments.len() / 2);
    vec![Part::Bytes(sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": id, "type": "function", "function": {"name": tool, "arguments": ""}}
        ]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": head}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": tail}}]}}]}),
        finish("tool_calls", 20, 5),
    ]))]
}
