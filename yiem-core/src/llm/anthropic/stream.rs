//! Reading Anthropic's Messages API stream: its events, in order, become [`ModelEvent`]s (`EventParser`, the
//! [`StreamParser`] the shared transport drives).

use super::format::{CONTAINER_BLOCK, PROVIDER};
use crate::call::ToolCaller;
use crate::llm::ModelEvent;
use crate::llm::transport::failure::{error_text, preview};
use crate::llm::transport::{self, EventData, StreamParser};
use crate::message::StopReason;
use crate::result::Usage;
use serde_json::{Value, json};

/// What a content block of the stream is, by the API's block index.
#[derive(Clone, Copy, PartialEq)]
enum Block {
    Text,
    Thinking,
    /// A tool call, with its position among the reply's calls.
    ToolUse(usize),
    /// A server-side block (`server_tool_use`, `web_search_tool_result`, ...), by its position in
    /// `EventParser::server`.
    Server(usize),
    Other,
}

/// A server-side block being streamed: the block `content_block_start` gave, and its input's pieces.
struct ServerBlock {
    block: Value,
    input: String,
    done: bool,
}

/// Turns Messages API stream events into [`ModelEvent`]s.
#[derive(Default)]
pub(crate) struct EventParser {
    blocks: Vec<(u64, Block)>,
    /// Calls started so far.
    calls: usize,
    /// Calls whose `ToolCallEnd` went out.
    closed: Vec<usize>,
    /// Server-side blocks, sent on as whole [`ModelEvent::ProviderBlock`]s when they stop.
    server: Vec<ServerBlock>,
    stop_reason: Option<String>,
    usage: Usage,
    /// The code-execution container the reply used (`message_start`'s or `message_delta`'s).
    container: Option<Value>,
    chunks: usize,
    stopped: bool,
}

impl EventParser {
    fn block(&self, index: u64) -> Block {
        self.blocks
            .iter()
            .rev()
            .find(|(i, _)| *i == index)
            .map_or(Block::Other, |(_, block)| *block)
    }

    fn read_usage(&mut self, usage: &Value) {
        let number = |key: &str| usage.get(key).and_then(Value::as_u64);
        if let Some(n) = number("input_tokens") {
            self.usage.input_tokens = n;
        }
        if let Some(n) = number("output_tokens") {
            self.usage.output_tokens = n;
        }
        if let Some(n) = number("cache_read_input_tokens") {
            self.usage.cache_read_tokens = n;
        }
        if let Some(n) = number("cache_creation_input_tokens") {
            self.usage.cache_write_tokens = n;
        }
    }

    fn read_container(&mut self, container: Option<&Value>) {
        if let Some(container) = container.filter(|container| container.is_object()) {
            self.container = Some(container.clone());
        }
    }

    /// The events that start content block `block` (a `content_block_start`'s `content_block`, or a
    /// whole block of a non-streaming body).
    fn start_block(&mut self, index: u64, block: &Value, events: &mut Vec<ModelEvent>) {
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
        let kind = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if !text("text").is_empty() {
                    events.push(ModelEvent::TextDelta(text("text").to_owned()));
                }
                Block::Text
            }
            Some("thinking") => {
                if !text("thinking").is_empty() {
                    events.push(ModelEvent::ThinkingDelta(text("thinking").to_owned()));
                }
                if !text("signature").is_empty() {
                    events.push(ModelEvent::ThinkingSignature(text("signature").to_owned()));
                }
                Block::Thinking
            }
            Some("redacted_thinking") => {
                events.push(ModelEvent::RedactedThinking(text("data").to_owned()));
                Block::Other
            }
            Some("tool_use") => {
                let slot = self.calls;
                self.calls += 1;
                events.push(ModelEvent::ToolCallStart {
                    index: slot,
                    id: text("id").to_owned(),
                    name: text("name").to_owned(),
                });
                // A call a program in the code-execution sandbox made names it (`direct` for the
                // model's own).
                if let Some(kind) = block
                    .pointer("/caller/type")
                    .and_then(Value::as_str)
                    .filter(|kind| *kind != "direct")
                {
                    let id = block.pointer("/caller/tool_id").and_then(Value::as_str);
                    events.push(ModelEvent::ToolCallCaller {
                        index: slot,
                        caller: ToolCaller::new(PROVIDER, kind, id.unwrap_or_default()),
                    });
                }
                // A streamed block starts with `input: {}` and sends its input as deltas; a whole block
                // carries it.
                if let Some(input) = block
                    .get("input")
                    .filter(|input| input.as_object().is_none_or(|object| !object.is_empty()))
                {
                    events.push(ModelEvent::ToolCallDelta {
                        index: slot,
                        arguments: input.to_string(),
                    });
                }
                Block::ToolUse(slot)
            }
            // Any other block is the server's own (its tools' calls and results, and types to come):
            // kept whole, so a paused turn can go back as it came.
            Some(_) => {
                self.server.push(ServerBlock {
                    block: block.clone(),
                    input: String::new(),
                    done: false,
                });
                Block::Server(self.server.len() - 1)
            }
            None => Block::Other,
        };
        self.blocks.push((index, kind));
    }

    /// Sends server block `slot` on, with its streamed input (if any) in place of the empty one.
    fn close_server_block(
        &mut self,
        slot: usize,
        events: &mut Vec<ModelEvent>,
    ) -> Result<(), String> {
        let chunks = self.chunks;
        let Some(server) = self.server.get_mut(slot).filter(|server| !server.done) else {
            return Ok(());
        };
        let input = match server.input.as_str() {
            "" => None,
            text => Some(serde_json::from_str::<Value>(text).map_err(|error| {
                format!(
                    "event {chunks}: the input of a `{}` block is not JSON ({error}): {}",
                    server.block["type"].as_str().unwrap_or_default(),
                    preview(text)
                )
            })?),
        };
        server.done = true;
        let mut block = std::mem::take(&mut server.block);
        if let Some(input) = input {
            block["input"] = input;
        }
        events.push(ModelEvent::ProviderBlock {
            provider: PROVIDER.into(),
            block,
        });
        Ok(())
    }

    fn close_call(&mut self, slot: usize, events: &mut Vec<ModelEvent>) {
        if !self.closed.contains(&slot) {
            self.closed.push(slot);
            events.push(ModelEvent::ToolCallEnd { index: slot });
        }
    }

    fn stream_event(&mut self, kind: &str, event: &mut Value) -> Result<Vec<ModelEvent>, String> {
        let mut events = Vec::new();
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(usage) = event.pointer("/message/usage") {
                    self.read_usage(usage);
                }
                self.read_container(event.pointer("/message/container"));
            }
            "content_block_start" => {
                let block = event.get("content_block").unwrap_or(&Value::Null);
                self.start_block(index, block, &mut events);
            }
            "content_block_delta" => {
                let mut none = Value::Null;
                let delta = event.get_mut("delta").unwrap_or(&mut none);
                let kind = delta.get("type").and_then(Value::as_str).map(str::to_owned);
                let mut text = |key: &str| transport::take_str(delta, key);
                match (kind.as_deref(), self.block(index)) {
                    (Some("text_delta"), _) => events.push(ModelEvent::TextDelta(text("text"))),
                    (Some("thinking_delta"), _) => {
                        events.push(ModelEvent::ThinkingDelta(text("thinking")))
                    }
                    (Some("signature_delta"), _) => {
                        events.push(ModelEvent::ThinkingSignature(text("signature")))
                    }
                    (Some("input_json_delta"), Block::ToolUse(slot)) => {
                        let piece = text("partial_json");
                        if !piece.is_empty() {
                            events.push(ModelEvent::ToolCallDelta {
                                index: slot,
                                arguments: piece,
                            });
                        }
                    }
                    (Some("input_json_delta"), Block::Server(slot)) => {
                        self.server[slot].input.push_str(&text("partial_json"));
                    }
                    (Some("input_json_delta"), _) => {
                        return Err(format!(
                            "event {}: an input_json_delta for block {index}, which is not a tool_use block",
                            self.chunks
                        ));
                    }
                    // Citations and other deltas carry nothing the reply keeps.
                    _ => {}
                }
            }
            "content_block_stop" => match self.block(index) {
                Block::ToolUse(slot) => self.close_call(slot, &mut events),
                Block::Server(slot) => self.close_server_block(slot, &mut events)?,
                _ => {}
            },
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(usage) = event.get("usage") {
                    self.read_usage(usage);
                }
                self.read_container(event.pointer("/delta/container"));
            }
            "message_stop" => self.stopped = true,
            "ping" => {}
            "error" => {
                return Err(format!(
                    "the server reported an error in the stream: {}",
                    error_text(event).unwrap_or_else(|| preview(&event.to_string()))
                ));
            }
            // New event types may be added (the API's versioning policy): skipped.
            _ => {}
        }
        Ok(events)
    }
}

impl StreamParser for EventParser {
    fn event(&mut self, name: &str, data: EventData) -> Result<Vec<ModelEvent>, String> {
        self.chunks += 1;
        let (kind, mut event) = transport::typed_event(self.chunks, name, data)?;
        self.stream_event(&kind, &mut event)
    }

    fn body(&mut self, mut data: EventData) -> Result<Vec<ModelEvent>, String> {
        self.chunks += 1;
        let mut message: Value = data
            .json()
            .map_err(|error| format!("the body is not JSON ({error}): {}", preview(&data)))?;
        if message.get("type").and_then(Value::as_str) == Some("error") {
            return self.stream_event("error", &mut message);
        }
        let mut events = Vec::new();
        if let Some(Value::Array(blocks)) = message.get("content") {
            for (index, block) in blocks.iter().enumerate() {
                self.start_block(index as u64, block, &mut events);
                match self.block(index as u64) {
                    Block::ToolUse(slot) => self.close_call(slot, &mut events),
                    Block::Server(slot) => self.close_server_block(slot, &mut events)?,
                    _ => {}
                }
            }
        }
        if let Some(usage) = message.get("usage") {
            self.read_usage(usage);
        }
        self.read_container(message.get("container"));
        self.stop_reason = message
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| Some("end_turn".into()));
        self.stopped = true;
        Ok(events)
    }

    fn ended(&self) -> bool {
        self.stopped
    }

    fn complete(&self) -> bool {
        self.stop_reason.is_some()
    }

    fn chunks(&self) -> usize {
        self.chunks
    }

    fn finish(&mut self) -> Vec<ModelEvent> {
        let mut events = Vec::new();
        for slot in 0..self.calls {
            self.close_call(slot, &mut events);
        }
        // A server block whose stop never came: sent on as it is, or not at all if its input is cut.
        for slot in 0..self.server.len() {
            if self.close_server_block(slot, &mut events).is_err() {
                events.push(ModelEvent::Error(format!(
                    "the stream ended inside a `{}` block",
                    self.server[slot].block["type"].as_str().unwrap_or_default()
                )));
                return events;
            }
        }
        // The container goes in the reply, for the request that answers its programs' calls.
        if let Some(Value::Object(mut container)) = self.container.take() {
            container.insert("type".into(), json!(CONTAINER_BLOCK));
            events.push(ModelEvent::ProviderBlock {
                provider: PROVIDER.into(),
                block: Value::Object(container),
            });
        }
        let stop_reason = match self.stop_reason.as_deref() {
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") | Some("model_context_window_exceeded") => StopReason::Length,
            Some("refusal") => {
                events.push(ModelEvent::Error(
                    "the model refused to answer (stop_reason \"refusal\")".into(),
                ));
                return events;
            }
            None if !self.stopped => {
                events.push(ModelEvent::Error(
                    "the stream ended before the reply was complete (no stop_reason)".into(),
                ));
                return events;
            }
            // `end_turn`, `stop_sequence`, `pause_turn`, and a `message_stop` without a stop reason.
            _ if self.calls > 0 => StopReason::ToolUse,
            Some("pause_turn") => StopReason::Paused,
            _ => StopReason::Stop,
        };
        events.push(ModelEvent::Done {
            stop_reason,
            usage: self.usage,
        });
        events
    }
}

/// Parses a stream of Messages API events (each its `event:` name and data) as the client would; for the
/// fuzz harness.
#[doc(hidden)]
pub fn parse_events_for_fuzzing<'a>(
    events: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<ModelEvent> {
    transport::parse_all(EventParser::default(), events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(events: &[&str]) -> Vec<ModelEvent> {
        let mut parser = EventParser::default();
        let mut out = Vec::new();
        for event in events {
            out.extend(parser.event("", (*event).into()).unwrap());
        }
        out.extend(parser.finish());
        out
    }

    #[test]
    fn stop_reasons_map() {
        let with = |reason: &str| {
            parse(&[&format!(
                r#"{{"type":"message_delta","delta":{{"stop_reason":"{reason}"}},"usage":{{"output_tokens":3}}}}"#
            )])
        };
        let done = |stop_reason| ModelEvent::Done {
            stop_reason,
            usage: Usage::new(0, 3),
        };
        assert_eq!(with("end_turn"), vec![done(StopReason::Stop)]);
        assert_eq!(with("stop_sequence"), vec![done(StopReason::Stop)]);
        assert_eq!(with("pause_turn"), vec![done(StopReason::Paused)]);
        assert_eq!(with("max_tokens"), vec![done(StopReason::Length)]);
        assert_eq!(with("tool_use"), vec![done(StopReason::ToolUse)]);
        assert_eq!(
            with("refusal"),
            vec![ModelEvent::Error(
                "the model refused to answer (stop_reason \"refusal\")".into()
            )]
        );
    }

    #[test]
    fn a_server_block_cut_inside_its_input_is_an_error_not_a_half_block() {
        let events = parse(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"Os"}}"#,
        ]);
        assert_eq!(
            events,
            vec![ModelEvent::Error(
                "the stream ended inside a `server_tool_use` block".into()
            )]
        );
    }

    #[test]
    fn a_delta_for_an_unknown_block_is_an_error_not_a_panic() {
        let mut parser = EventParser::default();
        let error = parser
            .event(
                "",
                r#"{"type":"content_block_delta","index":7,"delta":{"type":"input_json_delta","partial_json":"{"}}"#.into(),
            )
            .unwrap_err();
        assert!(error.contains("block 7"), "{error}");
    }
}
