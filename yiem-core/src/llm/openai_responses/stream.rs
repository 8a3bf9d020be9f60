//! Reading OpenAI's Responses API stream: its events, in order, become [`ModelEvent`]s (`EventParser`, the
//! [`StreamParser`] the shared transport drives).

use super::format::{PROVIDER, usage_from_responses};
use crate::call::ToolCaller;
use crate::llm::ModelEvent;
use crate::llm::transport::failure::{error_text, preview};
use crate::llm::transport::{self, EventData, StreamParser};
use crate::message::StopReason;
use crate::result::Usage;
use serde_json::{Value, json};

/// What an output item of the stream is.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Message,
    /// A function call (or, `custom`, a custom tool's call), with its position among the reply's calls.
    Call {
        slot: usize,
        custom: bool,
    },
    Reasoning,
    Other,
}

/// One output item of the reply, as far as the stream has told.
struct Item {
    output_index: Option<u64>,
    /// Its id (empty when the server sent none: it is then found by `output_index`).
    id: String,
    kind: Kind,
    /// Whether text, thinking or argument deltas came for it (then its `.done` event repeats them).
    streamed: bool,
    /// The summary part the last thinking delta belonged to.
    summary_index: Option<u64>,
    done: bool,
}

/// How the response ended.
#[derive(Clone, PartialEq)]
enum End {
    Completed,
    Incomplete(String),
}

/// Turns Responses API stream events into [`ModelEvent`]s.
#[derive(Default)]
pub(crate) struct EventParser {
    items: Vec<Item>,
    /// Calls started so far.
    calls: usize,
    /// Calls whose `ToolCallEnd` went out.
    closed: Vec<usize>,
    /// Custom tools' calls, whose text goes out as the arguments `{"input": "<text>"}`: the calls, and
    /// those whose `{"input":"` went out.
    custom: Vec<usize>,
    opened: Vec<usize>,
    refusal: String,
    response_id: String,
    keep_response_id: bool,
    end: Option<End>,
    usage: Usage,
    chunks: usize,
}

impl EventParser {
    /// A parser for one reply; `keep_response_id`: the reply's id goes into the message, for the
    /// next request's `previous_response_id`.
    pub(super) fn new(keep_response_id: bool) -> Self {
        EventParser {
            keep_response_id,
            ..EventParser::default()
        }
    }

    /// The item an event names by `item_id`, else by `output_index`.
    fn find(&self, event: &Value) -> Option<usize> {
        let id = event.get("item_id").and_then(Value::as_str).unwrap_or("");
        if !id.is_empty()
            && let Some(found) = self.items.iter().rposition(|item| item.id == id)
        {
            return Some(found);
        }
        let index = event.get("output_index").and_then(Value::as_u64)?;
        self.items
            .iter()
            .rposition(|item| item.output_index == Some(index))
    }

    /// The item `item` (at `output_index`) starts, with its events.
    fn added(
        &mut self,
        output_index: Option<u64>,
        item: &Value,
        events: &mut Vec<ModelEvent>,
    ) -> usize {
        let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
        let id = text("id").to_owned();
        let kind = match text("type") {
            "message" => {
                if !id.is_empty() {
                    let mut marker = json!({"type": "message", "id": id});
                    if let Some(phase) = item.get("phase").filter(|p| !p.is_null()) {
                        marker["phase"] = phase.clone();
                    }
                    events.push(self.block(marker));
                }
                Kind::Message
            }
            kind @ ("function_call" | "custom_tool_call") => {
                let slot = self.calls;
                self.calls += 1;
                let custom = kind == "custom_tool_call";
                // A custom tool's call is marked even without an id: it goes back as a
                // `custom_tool_call`, not a `function_call`.
                // A call of a namespaced tool keeps its namespace, which goes back with it.
                let namespace = item
                    .get("namespace")
                    .filter(|namespace| namespace.is_string());
                if !id.is_empty() || custom || namespace.is_some() {
                    let mut marker = json!({"type": kind, "call_id": text("call_id")});
                    if !id.is_empty() {
                        marker["id"] = json!(id);
                    }
                    if let Some(namespace) = namespace {
                        marker["namespace"] = namespace.clone();
                    }
                    events.push(self.block(marker));
                }
                if custom {
                    self.custom.push(slot);
                }
                events.push(ModelEvent::ToolCallStart {
                    index: slot,
                    id: text("call_id").to_owned(),
                    name: text("name").to_owned(),
                });
                // A call a program made names it (`direct` for the model's own).
                if let Some(kind) = item
                    .pointer("/caller/type")
                    .and_then(Value::as_str)
                    .filter(|kind| *kind != "direct")
                {
                    let id = item.pointer("/caller/caller_id").and_then(Value::as_str);
                    events.push(ModelEvent::ToolCallCaller {
                        index: slot,
                        caller: ToolCaller::new(PROVIDER, kind, id.unwrap_or_default()),
                    });
                }
                Kind::Call { slot, custom }
            }
            "reasoning" => Kind::Reasoning,
            _ => Kind::Other,
        };
        let mut entry = Item {
            output_index,
            id,
            kind,
            streamed: false,
            summary_index: None,
            done: false,
        };
        if let Kind::Call { slot, custom } = kind {
            let arguments = text(if custom { "input" } else { "arguments" });
            if !arguments.is_empty() {
                entry.streamed = true;
                self.call_piece(slot, arguments.to_owned(), events);
            }
        }
        self.items.push(entry);
        self.items.len() - 1
    }

    /// The events of a finished item (`response.output_item.done`, or an item of a whole response).
    fn item_done(&mut self, output_index: Option<u64>, item: &Value, events: &mut Vec<ModelEvent>) {
        let by = json!({"item_id": item.get("id"), "output_index": output_index});
        let slot = match self.find(&by).filter(|&found| !self.items[found].done) {
            Some(found) => found,
            None => self.added(output_index, item, events),
        };
        let entry = &mut self.items[slot];
        entry.done = true;
        let (kind, streamed) = (entry.kind, entry.streamed);
        match kind {
            Kind::Message => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") if !streamed => {
                            if let Some(text) = part.get("text").and_then(Value::as_str)
                                && !text.is_empty()
                            {
                                events.push(ModelEvent::TextDelta(text.to_owned()));
                            }
                        }
                        Some("refusal") if self.refusal.is_empty() => {
                            self.refusal = part
                                .get("refusal")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned();
                        }
                        _ => {}
                    }
                }
            }
            Kind::Call { slot, custom } => {
                let field = if custom { "input" } else { "arguments" };
                if !streamed
                    && let Some(arguments) = item.get(field).and_then(Value::as_str)
                    && !arguments.is_empty()
                {
                    self.call_piece(slot, arguments.to_owned(), events);
                }
                self.close_call(slot, events);
            }
            Kind::Reasoning => {
                if !streamed {
                    let summary: Vec<&str> = item
                        .get("summary")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|part| part.get("text").and_then(Value::as_str))
                        .filter(|text| !text.is_empty())
                        .collect();
                    if !summary.is_empty() {
                        events.push(ModelEvent::ThinkingDelta(summary.join("\n\n")));
                    }
                }
                events.push(self.block(item.clone()));
            }
            Kind::Other if item.get("type").and_then(Value::as_str).is_some() => {
                events.push(self.block(item.clone()));
            }
            Kind::Other => {}
        }
    }

    fn block(&self, block: Value) -> ModelEvent {
        ModelEvent::ProviderBlock {
            provider: PROVIDER.into(),
            block,
        }
    }

    fn close_call(&mut self, slot: usize, events: &mut Vec<ModelEvent>) {
        if !self.closed.contains(&slot) {
            if self.custom.contains(&slot) {
                // The text's end closes the arguments `{"input": "<text>"}`.
                self.call_piece(slot, String::new(), events);
                events.push(ModelEvent::ToolCallDelta {
                    index: slot,
                    arguments: "\"}".into(),
                });
            }
            self.closed.push(slot);
            events.push(ModelEvent::ToolCallEnd { index: slot });
        }
    }

    /// The next piece of call `slot`'s arguments: JSON text for a function call, the text itself for a
    /// custom tool's call, whose arguments are `{"input": "<text>"}` (each piece escaped as JSON string
    /// content, so the arguments parse as they grow, and partial-argument events show the text so far).
    fn call_piece(&mut self, slot: usize, piece: String, events: &mut Vec<ModelEvent>) {
        if !self.custom.contains(&slot) {
            if !piece.is_empty() {
                events.push(ModelEvent::ToolCallDelta {
                    index: slot,
                    arguments: piece,
                });
            }
            return;
        }
        let mut arguments = String::new();
        if !self.opened.contains(&slot) {
            self.opened.push(slot);
            arguments.push_str("{\"input\":\"");
        }
        if !piece.is_empty() {
            let quoted = Value::from(piece).to_string();
            arguments.push_str(&quoted[1..quoted.len() - 1]);
        }
        if !arguments.is_empty() {
            events.push(ModelEvent::ToolCallDelta {
                index: slot,
                arguments,
            });
        }
    }

    /// The item a delta event belongs to, marked as streamed.
    fn streamed(&mut self, event: &Value) -> Option<&mut Item> {
        let found = self.find(event)?;
        let item = &mut self.items[found];
        item.streamed = true;
        Some(item)
    }

    /// The end of the response (`response.completed`, `.incomplete`, or a whole response body): its
    /// usage and status, and any output item the stream did not show.
    fn ended(&mut self, response: &Value, events: &mut Vec<ModelEvent>) -> Result<(), String> {
        if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
            self.usage = usage_from_responses(usage);
        }
        if let Some(id) = response.get("id").and_then(Value::as_str) {
            self.response_id = id.to_owned();
        }
        // A server that sends only the final response (or a whole body): its items now.
        if self.items.is_empty()
            && let Some(Value::Array(output)) = response.get("output")
        {
            for (index, item) in output.iter().enumerate() {
                self.item_done(Some(index as u64), item, events);
            }
        }
        match response.get("status").and_then(Value::as_str) {
            Some("failed") => return Err(failure(response)),
            Some("incomplete") => {
                let reason = response
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown");
                self.end = Some(End::Incomplete(reason.to_owned()));
            }
            _ => self.end = Some(End::Completed),
        }
        Ok(())
    }

    fn stream_event(&mut self, kind: &str, event: &mut Value) -> Result<Vec<ModelEvent>, String> {
        let mut events = Vec::new();
        let output_index = event.get("output_index").and_then(Value::as_u64);
        match kind {
            "response.created" | "response.in_progress" | "response.queued" => {
                if let Some(id) = event.pointer("/response/id").and_then(Value::as_str) {
                    self.response_id = id.to_owned();
                }
            }
            "response.output_item.added" => {
                let item = event.get("item").unwrap_or(&Value::Null);
                self.added(output_index, item, &mut events);
            }
            "response.output_item.done" => {
                let item = event.get("item").unwrap_or(&Value::Null);
                self.item_done(output_index, item, &mut events);
            }
            "response.output_text.delta" => {
                self.streamed(event);
                let delta = transport::take_str(event, "delta");
                if !delta.is_empty() {
                    events.push(ModelEvent::TextDelta(delta));
                }
            }
            "response.refusal.delta" => {
                if let Some(delta) = event.get("delta").and_then(Value::as_str) {
                    self.refusal.push_str(delta);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let part = event
                    .get("summary_index")
                    .or_else(|| event.get("content_index"))
                    .and_then(Value::as_u64);
                let delta = event.get("delta").and_then(Value::as_str).unwrap_or("");
                let new_part = match self.streamed(event) {
                    Some(item) => {
                        let before = item.summary_index.replace(part.unwrap_or(0));
                        before.is_some_and(|before| Some(before) != part)
                    }
                    None => false,
                };
                if new_part {
                    events.push(ModelEvent::ThinkingDelta("\n\n".into()));
                }
                if !delta.is_empty() {
                    events.push(ModelEvent::ThinkingDelta(delta.to_owned()));
                }
            }
            "response.function_call_arguments.delta"
            | "response.function_call_arguments.done"
            | "response.custom_tool_call_input.delta"
            | "response.custom_tool_call_input.done" => {
                let chunks = self.chunks;
                let for_custom = kind.starts_with("response.custom_tool_call_input.");
                let Some(found) = self.find(event) else {
                    return Err(format!(
                        "event {chunks}: `{kind}` for output item {}, which the stream never started",
                        describe(event)
                    ));
                };
                let slot = match self.items[found].kind {
                    Kind::Call { slot, custom } if custom == for_custom => slot,
                    _ => {
                        return Err(format!(
                            "event {chunks}: `{kind}` for output item {}, which is not a {}",
                            describe(event),
                            if for_custom {
                                "custom tool call"
                            } else {
                                "function call"
                            }
                        ));
                    }
                };
                let item = &mut self.items[found];
                let whole = if for_custom { "input" } else { "arguments" };
                let piece = if kind.ends_with(".delta") {
                    item.streamed = true;
                    transport::take_str(event, "delta")
                } else if !item.streamed {
                    // Sent whole, without deltas.
                    item.streamed = true;
                    transport::take_str(event, whole)
                } else {
                    String::new()
                };
                if !piece.is_empty() {
                    self.call_piece(slot, piece, &mut events);
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let mut response = event.get_mut("response").map_or(Value::Null, Value::take);
                if kind == "response.failed" {
                    return Err(failure(&response));
                }
                if kind == "response.incomplete"
                    && let Value::Object(object) = &mut response
                {
                    object.insert("status".into(), json!("incomplete"));
                }
                self.ended(&response, &mut events)?;
            }
            "error" => {
                return Err(format!(
                    "the server reported an error in the stream: {}",
                    error_text(event).unwrap_or_else(|| preview(&event.to_string()))
                ));
            }
            // Events this client does not use (content parts, annotations, hosted tools' progress) and
            // types to come: skipped.
            other => tracing::trace!(event = other, "skipping a Responses API event"),
        }
        Ok(events)
    }
}

/// How an event names its output item, for error texts.
fn describe(event: &Value) -> String {
    match (
        event.get("item_id").and_then(Value::as_str),
        event.get("output_index").and_then(Value::as_u64),
    ) {
        (Some(id), _) if !id.is_empty() => format!("`{id}`"),
        (_, Some(index)) => format!("at output_index {index}"),
        _ => "(no id, no output_index)".into(),
    }
}

/// The text of a failed response: `the response failed: <message> (<code>)`.
fn failure(response: &Value) -> String {
    let error = response.get("error").unwrap_or(&Value::Null);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| preview(&error.to_string()));
    match error.get("code").and_then(Value::as_str) {
        Some(code) => format!("the response failed: {message} ({code})"),
        None => format!("the response failed: {message}"),
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
        let response: Value = data
            .json()
            .map_err(|error| format!("the body is not JSON ({error}): {}", preview(&data)))?;
        if let Some(error) = response.get("error").filter(|e| !e.is_null())
            && response.get("status").is_none()
        {
            return Err(format!(
                "the server reported an error: {}",
                error_text(error).unwrap_or_else(|| preview(&error.to_string()))
            ));
        }
        let mut events = Vec::new();
        self.ended(&response, &mut events)?;
        Ok(events)
    }

    fn ended(&self) -> bool {
        self.end.is_some()
    }

    fn complete(&self) -> bool {
        self.end.is_some()
    }

    fn chunks(&self) -> usize {
        self.chunks
    }

    fn finish(&mut self) -> Vec<ModelEvent> {
        let mut events = Vec::new();
        for slot in 0..self.calls {
            self.close_call(slot, &mut events);
        }
        if !self.refusal.is_empty() {
            events.push(ModelEvent::Error(format!(
                "the model refused to answer: {}",
                self.refusal
            )));
            return events;
        }
        let stop_reason = match &self.end {
            None => {
                events.push(ModelEvent::Error(
                    "the stream ended before the reply was complete (no response.completed)".into(),
                ));
                return events;
            }
            Some(End::Incomplete(reason)) if reason == "max_output_tokens" => StopReason::Length,
            Some(End::Incomplete(reason)) => {
                events.push(ModelEvent::Error(format!(
                    "the server stopped the reply: response.incomplete ({reason})"
                )));
                return events;
            }
            Some(End::Completed) if self.calls > 0 => StopReason::ToolUse,
            Some(End::Completed) => StopReason::Stop,
        };
        if self.keep_response_id && !self.response_id.is_empty() {
            events.push(self.block(json!({"type": "response", "id": self.response_id})));
        }
        events.push(ModelEvent::Done {
            stop_reason,
            usage: self.usage,
        });
        events
    }
}

/// Parses a stream of Responses API events (each its `event:` name and data) as the client would; for
/// the fuzz harness.
#[doc(hidden)]
pub fn parse_events_for_fuzzing<'a>(
    events: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<ModelEvent> {
    transport::parse_all(EventParser::default(), events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(events: &[Value]) -> Vec<ModelEvent> {
        let data: Vec<String> = events.iter().map(Value::to_string).collect();
        transport::parse_all(
            EventParser::default(),
            data.iter().map(|data| ("", data.as_str())),
        )
    }

    #[test]
    fn incomplete_replies_map_to_length_or_an_error() {
        let incomplete = |reason: &str| {
            parse(&[json!({"type": "response.incomplete", "response": {
                "status": "incomplete", "incomplete_details": {"reason": reason},
                "usage": {"input_tokens": 5, "output_tokens": 7}}})])
        };
        assert_eq!(
            incomplete("max_output_tokens"),
            vec![ModelEvent::Done {
                stop_reason: StopReason::Length,
                usage: Usage::new(5, 7)
            }]
        );
        assert_eq!(
            incomplete("content_filter"),
            vec![ModelEvent::Error(
                "the server stopped the reply: response.incomplete (content_filter)".into()
            )]
        );
    }

    #[test]
    fn arguments_for_an_item_never_started_are_an_error_not_a_panic() {
        let events = parse(&[json!({"type": "response.function_call_arguments.delta",
            "item_id": "fc_9", "output_index": 3, "delta": "{"})]);
        assert_eq!(
            events,
            vec![ModelEvent::Error(
                "event 1: `response.function_call_arguments.delta` for output item `fc_9`, which the \
                 stream never started"
                    .into()
            )]
        );
    }

    #[test]
    fn a_final_response_alone_gives_its_items() {
        let events = parse(&[json!({"type": "response.completed", "response": {
        "id": "resp_1", "status": "completed",
        "output": [
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Hi.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f",
             "arguments": "{}", "status": "completed"}
        ]}})]);
        assert_eq!(
            events,
            vec![
                ModelEvent::ProviderBlock {
                    provider: PROVIDER.into(),
                    block: json!({"type": "message", "id": "msg_1"})
                },
                ModelEvent::TextDelta("Hi.".into()),
                ModelEvent::ProviderBlock {
                    provider: PROVIDER.into(),
                    block: json!({"type": "function_call", "id": "fc_1", "call_id": "call_1"})
                },
                ModelEvent::ToolCallStart {
                    index: 0,
                    id: "call_1".into(),
                    name: "f".into()
                },
                ModelEvent::ToolCallDelta {
                    index: 0,
                    arguments: "{}".into()
                },
                ModelEvent::ToolCallEnd { index: 0 },
                ModelEvent::Done {
                    stop_reason: StopReason::ToolUse,
                    usage: Usage::default()
                },
            ]
        );
    }
}
