//! An MCP server over stdio that misbehaves on purpose, for the client's limits (`tests/mcp_client.rs`):
//! `mcp-bad-server MODE`, speaking line-delimited JSON-RPC by hand.
//!
//! - `silent`: reads every line and never answers, `initialize` included.
//! - `no-list`: completes the handshake and never answers `tools/list`.
//! - `deep LEVELS`: lists one tool whose input schema nests `LEVELS` properties deep (`2 × LEVELS − 1`
//!   objects).
//! - `endless`: every `tools/list` page has one new tool and a `nextCursor`.
//! - `duplicate`: lists `echo`, `other` and `echo` again.
//! - `mixed`: lists `echo` (a required `query`, an optional boolean `verbose`), `lookup_user` (whose
//!   `profile` is a `$ref` to a network address, never served) and `bad name!`; a `tools/call` answers
//!   with the arguments it got, as JSON text.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("silent");
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
            continue; // a notification
        };
        let answer = match (mode, method) {
            ("silent", _) => continue,
            (_, "initialize") => json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bad", "version": "0"},
            })
            .to_string(),
            ("no-list", "tools/list") => continue,
            ("deep", "tools/list") => {
                let levels: usize = args[1].parse().expect("deep LEVELS");
                // Written as text: a serializer would recurse once per level.
                let nested = format!(
                    "{}{{}}{}",
                    r#"{"type":"object","properties":{"a":"#.repeat(levels - 1),
                    "}}".repeat(levels - 1)
                );
                format!(r#"{{"tools":[{{"name":"deep","inputSchema":{nested}}}]}}"#)
            }
            ("endless", "tools/list") => {
                let page: u64 = message["params"]["cursor"]
                    .as_str()
                    .and_then(|cursor| cursor.parse().ok())
                    .unwrap_or(0);
                json!({
                    "tools": [{"name": format!("t{page}"), "inputSchema": {"type": "object"}}],
                    "nextCursor": (page + 1).to_string(),
                })
                .to_string()
            }
            ("duplicate", "tools/list") => {
                let tools = ["echo", "other", "echo"]
                    .map(|name| json!({"name": name, "inputSchema": {"type": "object"}}));
                json!({ "tools": tools }).to_string()
            }
            ("mixed", "tools/list") => json!({"tools": [
                {"name": "echo", "inputSchema": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}, "verbose": {"type": "boolean"}},
                    "required": ["query"],
                }},
                {"name": "lookup_user", "inputSchema": {
                    "type": "object",
                    "$defs": {"userId": {"type": "string"}},
                    "properties": {
                        "id": {"$ref": "#/$defs/userId"},
                        "profile": {"$ref": "http://127.0.0.1:9/profile-schema.json"},
                    },
                    "required": ["id"],
                }},
                {"name": "bad name!", "inputSchema": {"type": "object"}},
            ]})
            .to_string(),
            ("mixed", "tools/call") => json!({"content": [
                {"type": "text", "text": message["params"]["arguments"].to_string()},
            ]})
            .to_string(),
            _ => json!({}).to_string(),
        };
        let response = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{answer}}}"#);
        if writeln!(stdout, "{response}").is_err() || stdout.flush().is_err() {
            return;
        }
    }
}
