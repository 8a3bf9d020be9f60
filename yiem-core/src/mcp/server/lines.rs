//! The line-level guard between a byte stream and rmcp: every line a client sends is checked before rmcp
//! reads it, so that what rmcp would drop in silence gets a JSON-RPC error instead — text that is not
//! JSON (`-32700`, id `null`), a request rmcp cannot decode (`-32602` for a method with bad params,
//! `-32600` otherwise, with the request's id), and a line over the size limit (`-32600` naming the limit,
//! with the request's id when the line has one, so the client's call fails instead of waiting: the id is
//! picked out of the line as it streams past, in constant memory, wherever it stands).
//! Notifications that cannot be read get no answer, as JSON-RPC says. The HTTP server checks each request
//! body with the same [`check`].

use rmcp::model::ClientJsonRpcMessage;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The longest line read, in bytes (rmcp's own limit for newline-delimited JSON).
pub(super) const MAX_LINE: usize = 16 * 1024 * 1024;

/// The two ends rmcp serves on, and the tasks that move bytes between them and the client.
pub(super) struct Guarded {
    /// What rmcp reads: the client's lines that it can decode.
    pub to_rmcp: DuplexStream,
    /// What rmcp writes: forwarded to the client with the guard's own error responses.
    pub from_rmcp: DuplexStream,
    /// Ends when the client's stream has ended and every response is written.
    pub done: JoinHandle<()>,
    /// Cancelled when the client's stream has ended (its stdin closed, say).
    pub input_ended: CancellationToken,
}

/// Puts the guard between `reader`/`writer` and rmcp.
pub(super) fn guard<R, W>(reader: R, writer: W) -> Guarded
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (rmcp_in, mut to_rmcp) = tokio::io::duplex(1 << 16);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 16);
    let (errors, mut error_lines) = mpsc::unbounded_channel::<String>();
    let input_ended = CancellationToken::new();
    let ended = input_ended.clone();
    let inbound = tokio::spawn(async move {
        let mut reader = BufReader::new(reader);
        let mut line = Vec::new();
        loop {
            line.clear();
            match read_line(&mut reader, &mut line).await {
                Ok(Line::End) | Err(_) => break,
                Ok(Line::TooLong(length, id)) => {
                    let _ = errors.send(error_response(
                        &id.unwrap_or(Value::Null),
                        -32600,
                        &format!(
                            "the request is {length} bytes or more; the limit is {MAX_LINE} bytes"
                        ),
                    ));
                }
                Ok(Line::Complete) => match check(&line) {
                    Check::Pass => {
                        line.push(b'\n');
                        if to_rmcp.write_all(&line).await.is_err() {
                            break;
                        }
                    }
                    Check::Answer(response) => {
                        let _ = errors.send(response);
                    }
                    Check::Skip => {}
                },
            }
        }
        // The client is gone: rmcp sees the end of its input and stops.
        ended.cancel();
        let _ = to_rmcp.shutdown().await;
    });
    let done = tokio::spawn(async move {
        let mut writer = writer;
        let mut responses = BufReader::new(from_rmcp).lines();
        let mut rmcp_open = true;
        loop {
            let line = tokio::select! {
                line = responses.next_line(), if rmcp_open => match line {
                    Ok(Some(line)) => line,
                    _ => {
                        rmcp_open = false;
                        continue;
                    }
                },
                error = error_lines.recv() => match error {
                    Some(line) => line,
                    None if rmcp_open => {
                        // No more errors can come; keep forwarding rmcp's output.
                        match responses.next_line().await {
                            Ok(Some(line)) => line,
                            _ => break,
                        }
                    }
                    None => break,
                },
                else => break,
            };
            if writer.write_all(line.as_bytes()).await.is_err()
                || writer.write_all(b"\n").await.is_err()
                || writer.flush().await.is_err()
            {
                break;
            }
        }
        let _ = inbound.await;
    });
    Guarded {
        to_rmcp: rmcp_in,
        from_rmcp: rmcp_out,
        done,
        input_ended,
    }
}

enum Line {
    Complete,
    /// The line's length, and its request's id when it has one.
    TooLong(usize, Option<Value>),
    End,
}

/// Reads one line (without its newline) into `line`, never holding more than [`MAX_LINE`] bytes: a longer
/// line is read to its end and dropped.
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> std::io::Result<Line> {
    let mut dropped = 0usize;
    let mut id = IdScan::default();
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(if dropped > 0 {
                Line::TooLong(dropped, id.id())
            } else if line.is_empty() {
                Line::End
            } else {
                Line::Complete
            });
        }
        let (take, ends) = match buffer.iter().position(|&b| b == b'\n') {
            Some(at) => (at, true),
            None => (buffer.len(), false),
        };
        if dropped > 0 || line.len() + take > MAX_LINE {
            id.feed(line);
            id.feed(&buffer[..take]);
            dropped += line.len() + take;
            line.clear();
        } else {
            line.extend_from_slice(&buffer[..take]);
        }
        reader.consume(take + usize::from(ends));
        if ends {
            return Ok(if dropped > 0 {
                Line::TooLong(dropped, id.id())
            } else {
                Line::Complete
            });
        }
    }
}

/// Picks the `id` of a JSON-RPC request out of its bytes as they stream past, holding only the id
/// itself (at most [`IdScan::MAX_ID`] bytes): the top-level object's member `"id"`, whether it comes
/// first or last. A line that is not such an object has no id.
#[derive(Default)]
struct IdScan {
    /// How deep in arrays and objects the scan is (1: in the top-level object).
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// At depth 1, whether the next string is a member's name.
    expect_name: bool,
    /// The member name being read (its first bytes), and whether the member is `id`.
    name: Vec<u8>,
    is_id: bool,
    /// The raw value of `id` being read, and the last one read whole.
    value: Option<Vec<u8>>,
    found: Option<Vec<u8>>,
    /// The line is not an object: no id.
    broken: bool,
}

impl IdScan {
    const MAX_ID: usize = 1024;

    fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if self.broken {
                return;
            }
            self.step(byte);
        }
    }

    fn step(&mut self, byte: u8) {
        if let Some(value) = &mut self.value {
            let ends = !self.in_string && self.depth == 1 && matches!(byte, b',' | b'}');
            if !ends {
                if value.len() < Self::MAX_ID {
                    value.push(byte);
                } else {
                    // Longer than any id worth answering: forget it.
                    self.value = None;
                    self.is_id = false;
                }
            } else {
                self.found = self.value.take();
            }
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                if self.depth == 1 && self.expect_name {
                    self.expect_name = false;
                    self.is_id = self.name == b"id";
                }
            } else if self.depth == 1 && self.expect_name && self.name.len() < 3 {
                self.name.push(byte);
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_name {
                    self.name.clear();
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 && byte == b'[' {
                    self.broken = true;
                }
                self.depth += 1;
                if self.depth == 1 {
                    self.expect_name = true;
                }
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' if self.depth == 1 && self.is_id && self.value.is_none() => {
                self.is_id = false;
                self.value = Some(Vec::new());
            }
            b',' if self.depth == 1 => self.expect_name = true,
            _ => {}
        }
    }

    /// The id read, when it is a string or a number.
    fn id(&self) -> Option<Value> {
        let raw = self.found.as_deref()?;
        serde_json::from_slice::<Value>(raw)
            .ok()
            .filter(|id| id.is_string() || id.is_number())
    }
}

pub(super) enum Check {
    /// rmcp can read it.
    Pass,
    /// The guard answers it with this response.
    Answer(String),
    /// Nothing to answer (a blank line, an unreadable notification).
    Skip,
}

pub(super) fn check(line: &[u8]) -> Check {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Check::Skip;
    }
    let decoded = serde_json::from_slice::<ClientJsonRpcMessage>(line);
    let Err(problem) = decoded else {
        return Check::Pass;
    };
    let message: Value = match serde_json::from_slice(line) {
        Ok(message) => message,
        Err(error) => {
            return Check::Answer(error_response(
                &Value::Null,
                -32700,
                &format!("parse error: the request is not JSON ({error})"),
            ));
        }
    };
    let Some(id) = message
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
    else {
        // A notification (or a request without a usable id): JSON-RPC answers neither.
        return match message.get("id") {
            Some(_) => Check::Answer(error_response(
                &Value::Null,
                -32600,
                "invalid request: `id` must be a string or a number",
            )),
            None => Check::Skip,
        };
    };
    Check::Answer(match message.get("method").and_then(Value::as_str) {
        // Known with other params, the method's params are what is wrong; otherwise the method is.
        Some(method) if decodes_without_params(&message) => error_response(
            id,
            -32602,
            &format!("invalid params for `{method}`: {problem}"),
        ),
        Some(method) => error_response(id, -32601, &format!("method not found: `{method}`")),
        None => error_response(
            id,
            -32600,
            "invalid request: a JSON-RPC request needs `jsonrpc: \"2.0\"`, an `id` and a `method`",
        ),
    })
}

fn decodes_without_params(message: &Value) -> bool {
    let mut bare = message.clone();
    if let Some(object) = bare.as_object_mut() {
        object.remove("params");
    }
    serde_json::from_value::<ClientJsonRpcMessage>(bare).is_ok()
}

fn error_response(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(line: &str, cut: usize) -> Option<Value> {
        let mut scan = IdScan::default();
        for chunk in line.as_bytes().chunks(cut) {
            scan.feed(chunk);
        }
        scan.id()
    }

    #[test]
    fn the_id_is_found_first_last_or_between_in_any_cut_and_nowhere_else() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":9,"method":"tools/call"}"#,
                Some(json!(9)),
            ),
            (
                r#"{"method":"tools/call","params":{"id":1,"a":[{"id":2}]},"id":"s-1"}"#,
                Some(json!("s-1")),
            ),
            (
                r#"{ "params" : {"text":"\"id\":3,"} , "id" : 4 }"#,
                Some(json!(4)),
            ),
            (r#"{"params":{"id":5},"method":"x"}"#, None),
            (r#"{"id":null,"method":"x"}"#, None),
            (r#"{"id":{"nested":1}}"#, None),
            (r#"[{"id":6}]"#, None),
            (r#"{"idx":7,"method":"x"}"#, None),
        ];
        for (line, id) in cases {
            for cut in [1, 2, 3, 7, line.len()] {
                assert_eq!(id_of(line, cut), id, "{line} cut every {cut}");
            }
        }
    }
}
