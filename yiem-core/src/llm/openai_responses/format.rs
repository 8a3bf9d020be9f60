//! The conversation in OpenAI's Responses API wire format: [`to_responses_input`] renders
//! [`AgentMessage`]s as the request's `input` items (the system prompt goes in the request's
//! `instructions`). No HTTP here; `OpenAiResponsesModel` sends what this makes.
//!
//! A reply from the Responses API keeps what only this API understands as
//! [`AssistantContent::ProviderBlock`]s named `"openai-responses"`, so it can go back as it came:
//!
//! - a **reasoning item** (`{"type": "reasoning", "id", "summary", "encrypted_content"}`), whole, as the
//!   stream's `response.output_item.done` gave it; its summary is also in a thinking block, to show;
//! - the **item ids** of a message (`{"type": "message", "id", "phase"?}`, before its text blocks) and
//!   of a function call (`{"type": "function_call", "id", "call_id"}`, before its tool call): the API
//!   pairs a reasoning item with the items that followed it by these ids;
//! - a **custom tool's call** (`{"type": "custom_tool_call", "id"?, "call_id"}`, before its tool call,
//!   also without an id): the call goes back as a `custom_tool_call`, and its result as a
//!   `custom_tool_call_output`;
//! - any **other output item** (a hosted tool's call, `web_search_call`, ...), whole;
//! - with `previous_response_id` on, the **response id** (`{"type": "response", "id"}`).
//!
//! Other providers never see these blocks, and this format leaves out theirs.

use serde_json::{Map, Value, json};

use crate::call::{ToolCall, ToolResultMessage};
use crate::content::Content;
use crate::llm::replay::{Turn, arguments_object, turns};
use crate::message::{AgentMessage, AssistantContent, AssistantMessage, UserMessage};

/// How [`AssistantContent::ProviderBlock`]s of this format name their provider.
pub(crate) const PROVIDER: &str = "openai-responses";

/// The conversation as the `input` items of a stateless Responses API request (`store: false`).
///
/// - A user message is `{"type": "message", "role": "user", "content": [...]}` with `input_text` and
///   `input_image` (a `data:` URL) parts.
/// - A reply goes back item by item, in order: its reasoning items whole (with their
///   `encrypted_content`), its text as an assistant `message` (with the message's id when the reply
///   came from this API, as `output_text` parts; otherwise as plain text), its calls as
///   `function_call` items (`call_id`, `name`, `arguments` as JSON text, the item's `id` when it
///   came from this API, and the `caller` of a call a program made) and hosted tools' items (a
///   `program` among them) unchanged. A call of a custom tool (a free-text tool: see
///   [`TextFormat`](crate::tool::TextFormat)) goes as a `custom_tool_call` (`call_id`, `name`, `input`: the
///   text of its arguments `{"input": "<text>"}`, the item's `id` when it came from this API): one the
///   API made as such, and (with [`OpenAiResponsesModel`](crate::llm::OpenAiResponsesModel)) every call of a
///   tool the request sends as a custom tool.
/// - A tool result is a `function_call_output` (a `custom_tool_call_output` for a custom tool's call)
///   with the call's `call_id`; its `output` is the text, or `input_text` and `input_image` parts when
///   the result has an image.
/// - Pairing and failed replies follow the same rules as [`to_openai_messages`](super::to_openai_messages):
///   unanswered calls and orphaned results are left out, and so is a reply that failed or was aborted,
///   or one that holds nothing but reasoning.
/// - A reasoning item without `encrypted_content` cannot be carried by a request that is not stored: it
///   is left out, with a warning (`tracing`) that says so, and the rest of its reply goes without item
///   ids (the API refuses an item whose reasoning item is missing).
///
/// ```
/// use serde_json::json;
/// use yiem_core::llm::to_responses_input;
/// use yiem_core::{
///     exec::ToolCall,
///     message::{AssistantContent, AssistantMessage, ToolResultMessage, UserMessage},
///     tool::AgentToolResult,
/// };
///
/// let call = ToolCall::new("call_1", "read", json!({"path": "a.txt"}));
/// let mut reply = AssistantMessage::default();
/// reply.content.push(AssistantContent::ToolCall(call.clone()));
/// let result = ToolResultMessage::new(&call, AgentToolResult::text("hello"));
///
/// let input = to_responses_input(&[UserMessage::text("what is in a.txt?").into(), reply.into(), result.into()]);
/// assert_eq!(serde_json::Value::Array(input), json!([
///     {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "what is in a.txt?"}]},
///     {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a.txt\"}"},
///     {"type": "function_call_output", "call_id": "call_1", "output": "hello"}
/// ]));
/// ```
pub fn to_responses_input(messages: &[AgentMessage]) -> Vec<Value> {
    let rendered = render(messages, 0, false, &|_| false);
    for note in &rendered.notes {
        tracing::warn!("{note}");
    }
    rendered.items
}

/// The input items, and what could not be carried, said for a person.
pub(crate) struct Rendered {
    pub items: Vec<Value>,
    pub notes: Vec<String>,
}

/// The input items of `messages[from..]` (the messages before `from` are the server's, with
/// `previous_response_id`; results that answer their calls still go). `stored`: the request is
/// stored, so reasoning items may go by id alone. `custom_tool`: whether the request sends the tool of
/// this name as a custom tool (then its calls go back as custom tools' calls, whoever made them).
pub(crate) fn render(
    messages: &[AgentMessage],
    from: usize,
    stored: bool,
    custom_tool: &dyn Fn(&str) -> bool,
) -> Rendered {
    // `turns` pairs calls and results over the whole conversation; only the turns of messages from
    // `from` on go (each turn borrows from its message, so its address says which message it is).
    let sent = messages[from.min(messages.len())..].as_ptr_range();
    let is_sent = |address: *const u8| {
        (sent.start as *const u8) <= address && address < (sent.end as *const u8)
    };
    let mut out = Rendered {
        items: Vec::new(),
        notes: Vec::new(),
    };
    // The ids of custom tools' calls: their results go back as `custom_tool_call_output`s.
    let mut custom_calls: Vec<&str> = Vec::new();
    for turn in turns(messages) {
        if let Turn::Assistant(reply, _) = &turn {
            custom_calls.extend(
                reply
                    .tool_calls()
                    .filter(|call| is_custom_call(reply, call, custom_tool))
                    .map(|call| call.id.as_str()),
            );
        }
        let address = match &turn {
            Turn::User(user) => *user as *const UserMessage as *const u8,
            Turn::Assistant(reply, _) => *reply as *const AssistantMessage as *const u8,
            Turn::ToolResult(result) => *result as *const ToolResultMessage as *const u8,
        };
        if !is_sent(address) {
            continue;
        }
        match turn {
            Turn::User(user) => out.items.extend(user_item(user)),
            Turn::Assistant(reply, calls) => {
                let answered: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
                assistant_items(reply, &answered, stored, custom_tool, &mut out);
            }
            Turn::ToolResult(result) => {
                let custom = custom_calls.contains(&result.tool_call_id.as_str());
                out.items.push(tool_output(result, custom));
            }
        }
    }
    out
}

/// The id of the response `reply` came from, when it was kept (`previous_response_id` on).
pub(crate) fn response_id(reply: &AssistantMessage) -> Option<&str> {
    reply.content.iter().find_map(|block| match block {
        AssistantContent::ProviderBlock { provider, block }
            if provider == PROVIDER && block["type"] == "response" =>
        {
            block["id"].as_str().filter(|id| !id.is_empty())
        }
        _ => None,
    })
}

fn content_parts(content: &[Content]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } if text.is_empty() => None,
            Content::Text { text } => Some(json!({"type": "input_text", "text": text})),
            Content::Image { data, mime_type } => Some(json!({
                "type": "input_image",
                "image_url": format!("data:{mime_type};base64,{data}"),
                "detail": "auto",
            })),
            Content::ResourceBlob { resource, blob }
                if resource.mime_type.as_deref() == Some("application/pdf") =>
            {
                let named = resource.name.as_deref();
                let from_uri = resource
                    .uri
                    .rsplit('/')
                    .next()
                    .filter(|name| !name.is_empty());
                Some(json!({
                    "type": "input_file",
                    "filename": named.or(from_uri).unwrap_or("file.pdf"),
                    "file_data": format!("data:application/pdf;base64,{blob}"),
                }))
            }
            other => other
                .described_for("OpenAI messages")
                .map(|text| json!({"type": "input_text", "text": text})),
        })
        .collect()
}

fn user_item(message: &UserMessage) -> Option<Value> {
    let parts = content_parts(&message.content);
    (!parts.is_empty()).then(|| json!({"type": "message", "role": "user", "content": parts}))
}

/// Whether `call` of `reply` goes back as a custom tool's call: the API made it as one (its marker says
/// so), or the request sends its tool as a custom tool.
fn is_custom_call(
    reply: &AssistantMessage,
    call: &ToolCall,
    custom_tool: &dyn Fn(&str) -> bool,
) -> bool {
    custom_tool(&call.name)
        || reply.content.iter().any(|block| match block {
            AssistantContent::ProviderBlock { provider, block } if provider == PROVIDER => {
                block["type"] == "custom_tool_call" && block["call_id"] == call.id.as_str()
            }
            _ => false,
        })
}

/// The text of a custom tool's call: the `input` of its arguments `{"input": "<text>"}`; arguments of
/// another shape go as their JSON text.
fn custom_input(call: &ToolCall) -> String {
    match &call.arguments {
        Value::Object(fields) => match fields.get(crate::grammar::INPUT) {
            Some(Value::String(text)) if fields.len() == 1 => text.clone(),
            _ => call.arguments.to_string(),
        },
        // Text that never parsed as arguments.
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn tool_output(result: &ToolResultMessage, custom: bool) -> Value {
    let content = result.content();
    let only_text = content
        .iter()
        .all(|block| matches!(block, Content::Text { .. }));
    let output = if !only_text {
        Value::Array(content_parts(content))
    } else {
        json!(crate::content::joined_text(content))
    };
    let kind = if custom {
        "custom_tool_call_output"
    } else {
        "function_call_output"
    };
    json!({"type": kind, "call_id": result.tool_call_id, "output": output})
}

/// An assistant message being gathered: its id and phase (when the reply came from this API) and its
/// text.
struct Pending {
    id: Option<String>,
    phase: Option<Value>,
    text: String,
}

impl Pending {
    fn item(self) -> Option<Value> {
        if self.text.is_empty() {
            return None;
        }
        let mut item = Map::new();
        item.insert("type".into(), json!("message"));
        item.insert("role".into(), json!("assistant"));
        match self.id {
            Some(id) => {
                item.insert("id".into(), json!(id));
                item.insert("status".into(), json!("completed"));
                item.insert(
                    "content".into(),
                    json!([{"type": "output_text", "text": self.text, "annotations": []}]),
                );
            }
            None => {
                item.insert("content".into(), json!(self.text));
            }
        }
        if let Some(phase) = self.phase {
            item.insert("phase".into(), phase);
        }
        Some(Value::Object(item))
    }
}

fn flush(pending: &mut Option<Pending>, items: &mut Vec<Value>) {
    if let Some(item) = pending.take().and_then(Pending::item) {
        items.push(item);
    }
}

/// Whether a reasoning item can go back: with its encrypted content, or by id to a server that stored it.
fn carriable(item: &Value, stored: bool) -> bool {
    let has_content = item
        .get("encrypted_content")
        .and_then(Value::as_str)
        .is_some_and(|content| !content.is_empty());
    has_content || (stored && item.get("id").and_then(Value::as_str).is_some())
}

fn assistant_items(
    reply: &AssistantMessage,
    answered: &[&str],
    stored: bool,
    custom_tool: &dyn Fn(&str) -> bool,
    out: &mut Rendered,
) {
    fn ours(block: &AssistantContent) -> Option<&Value> {
        match block {
            AssistantContent::ProviderBlock { provider, block } if provider == PROVIDER => {
                Some(block)
            }
            _ => None,
        }
    }
    // A reasoning item that cannot go takes the reply's item ids with it: the API refuses an item whose
    // reasoning item is missing.
    let mut keep_ids = true;
    for block in reply.content.iter().filter_map(ours) {
        if block["type"] == "reasoning" && !carriable(block, stored) {
            keep_ids = false;
            out.notes.push(format!(
                "reasoning item `{}` came without `encrypted_content`, and a request that is not stored \
                 (`store: false`) cannot carry it: it is left out, so the model does not see that \
                 reasoning, and the rest of its reply goes without item ids. Keep \
                 `OpenAiResponsesConfig::encrypted_reasoning` on (it asks for \
                 `include: [\"reasoning.encrypted_content\"]`), or store the responses",
                block["id"].as_str().unwrap_or("(no id)")
            ));
        }
    }
    let call_item_id = |call_id: &str| -> Option<&str> {
        reply.content.iter().filter_map(ours).find_map(|block| {
            let marks_a_call =
                block["type"] == "function_call" || block["type"] == "custom_tool_call";
            (marks_a_call && block["call_id"] == call_id)
                .then(|| block["id"].as_str())
                .flatten()
        })
    };
    // A namespaced tool's call (its item named the namespace) goes back naming it.
    let call_namespace = |call_id: &str| -> Option<&Value> {
        reply.content.iter().filter_map(ours).find_map(|block| {
            (block["type"] == "function_call" && block["call_id"] == call_id)
                .then(|| block.get("namespace"))
                .flatten()
        })
    };
    let mut items = Vec::new();
    let mut pending: Option<Pending> = None;
    for block in &reply.content {
        match block {
            AssistantContent::Text { text } => {
                pending
                    .get_or_insert_with(|| Pending {
                        id: None,
                        phase: None,
                        text: String::new(),
                    })
                    .text
                    .push_str(text);
            }
            AssistantContent::ToolCall(call) if answered.contains(&call.id.as_str()) => {
                flush(&mut pending, &mut items);
                let custom = is_custom_call(reply, call, custom_tool);
                let mut item = Map::new();
                let kind = if custom {
                    "custom_tool_call"
                } else {
                    "function_call"
                };
                item.insert("type".into(), json!(kind));
                if let Some(id) = call_item_id(&call.id).filter(|_| keep_ids) {
                    item.insert("id".into(), json!(id));
                }
                item.insert("call_id".into(), json!(call.id));
                if let Some(namespace) = call_namespace(&call.id) {
                    item.insert("namespace".into(), namespace.clone());
                }
                item.insert("name".into(), json!(call.name));
                if custom {
                    item.insert("input".into(), json!(custom_input(call)));
                } else {
                    item.insert(
                        "arguments".into(),
                        json!(arguments_object(call).to_string()),
                    );
                }
                // A program of OpenAI's programmatic tool calling made it: its caller goes back with it.
                if let Some(caller) = call.caller.as_ref().filter(|c| c.provider == PROVIDER) {
                    item.insert(
                        "caller".into(),
                        json!({"type": caller.kind, "caller_id": caller.id}),
                    );
                }
                items.push(Value::Object(item));
            }
            AssistantContent::ProviderBlock { provider, block } if provider == PROVIDER => {
                match block["type"].as_str() {
                    Some("message") => {
                        flush(&mut pending, &mut items);
                        pending = Some(Pending {
                            id: block["id"]
                                .as_str()
                                .filter(|id| keep_ids && !id.is_empty())
                                .map(str::to_owned),
                            phase: block.get("phase").filter(|p| !p.is_null()).cloned(),
                            text: String::new(),
                        });
                    }
                    // Item ids, read where the call is rendered; the response id goes in the request.
                    Some("function_call" | "custom_tool_call" | "response") => {}
                    Some("reasoning") => {
                        flush(&mut pending, &mut items);
                        if carriable(block, stored) {
                            items.push(block.clone());
                        }
                    }
                    _ => {
                        flush(&mut pending, &mut items);
                        items.push(block.clone());
                    }
                }
            }
            // Thinking (shown, and carried by the reasoning item), other providers' blocks, and calls
            // without a result.
            _ => {}
        }
    }
    flush(&mut pending, &mut items);
    // A reply of reasoning alone carries nothing to answer, and the API refuses a reasoning item
    // without the item that followed it.
    if items.iter().any(|item| item["type"] != "reasoning") {
        out.items.extend(items);
    }
}

/// A Responses API `usage` object: `input_tokens` (cached ones included), `output_tokens`, and the cached
/// tokens from `input_tokens_details.cached_tokens`.
pub(crate) fn usage_from_responses(usage: &Value) -> crate::result::Usage {
    let count = |value: Option<&Value>| value.and_then(Value::as_u64).unwrap_or(0);
    crate::result::Usage {
        input_tokens: count(usage.get("input_tokens")),
        output_tokens: count(usage.get("output_tokens")),
        cache_read_tokens: count(usage.pointer("/input_tokens_details/cached_tokens")),
        cache_write_tokens: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::ToolCall;
    use crate::message::StopReason;
    use crate::result::AgentToolResult;

    fn block(value: Value) -> AssistantContent {
        AssistantContent::ProviderBlock {
            provider: PROVIDER.into(),
            block: value,
        }
    }

    fn reasoning_reply(encrypted: Option<&str>) -> (AssistantMessage, ToolCall) {
        let call = ToolCall::new("call_1", "read", json!({"path": "a"}));
        let mut reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": []});
        if let Some(encrypted) = encrypted {
            reasoning["encrypted_content"] = json!(encrypted);
        }
        let reply = AssistantMessage {
            content: vec![
                AssistantContent::Thinking {
                    thinking: "Read a.".into(),
                    signature: None,
                },
                block(reasoning),
                block(json!({"type": "message", "id": "msg_1", "phase": "commentary"})),
                AssistantContent::Text {
                    text: "Reading.".into(),
                },
                block(json!({"type": "function_call", "id": "fc_1", "call_id": "call_1"})),
                AssistantContent::ToolCall(call.clone()),
            ],
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        };
        (reply, call)
    }

    #[test]
    fn a_reasoning_reply_goes_back_item_by_item_with_its_ids() {
        let (reply, call) = reasoning_reply(Some("gAAAA"));
        let result = ToolResultMessage::new(&call, AgentToolResult::text("x"));
        let rendered = render(&[reply.into(), result.into()], 0, false, &|_| false);
        assert!(rendered.notes.is_empty());
        assert_eq!(
            rendered.items,
            vec![
                json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"}),
                json!({"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                       "content": [{"type": "output_text", "text": "Reading.", "annotations": []}],
                       "phase": "commentary"}),
                json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read",
                       "arguments": "{\"path\":\"a\"}"}),
                json!({"type": "function_call_output", "call_id": "call_1", "output": "x"}),
            ]
        );
    }

    #[test]
    fn a_reasoning_item_without_encrypted_content_is_left_out_and_said_plainly() {
        let (reply, call) = reasoning_reply(None);
        let result = ToolResultMessage::new(&call, AgentToolResult::text("x"));
        let rendered = render(&[reply.into(), result.into()], 0, false, &|_| false);
        assert_eq!(
            rendered.items,
            vec![
                json!({"type": "message", "role": "assistant", "content": "Reading.",
                       "phase": "commentary"}),
                json!({"type": "function_call", "call_id": "call_1", "name": "read",
                       "arguments": "{\"path\":\"a\"}"}),
                json!({"type": "function_call_output", "call_id": "call_1", "output": "x"}),
            ]
        );
        assert_eq!(rendered.notes.len(), 1);
        assert!(
            rendered.notes[0].starts_with(
                "reasoning item `rs_1` came without `encrypted_content`, and a request that is not \
                 stored (`store: false`) cannot carry it: it is left out"
            ),
            "{}",
            rendered.notes[0]
        );
        // A stored conversation carries it by id.
        let (reply, _) = reasoning_reply(None);
        let stored = render(&[reply.into()], 0, true, &|_| false);
        assert!(stored.notes.is_empty());
    }

    #[test]
    fn a_reply_of_reasoning_alone_is_left_out() {
        let reply = AssistantMessage {
            content: vec![block(
                json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}),
            )],
            ..AssistantMessage::default()
        };
        assert!(
            render(&[reply.into()], 0, false, &|_| false)
                .items
                .is_empty()
        );
    }

    #[test]
    fn images_go_as_input_images_in_user_messages_and_tool_outputs() {
        let call = ToolCall::new("c", "shot", json!({}));
        let mut reply = AssistantMessage::default();
        reply.content.push(AssistantContent::ToolCall(call.clone()));
        let mut result = AgentToolResult::text("the screen:");
        result.content.push(Content::image("QUJD", "image/png"));
        let user = UserMessage {
            content: vec![Content::image("QUJD", "image/png")],
            timestamp: 0,
        };
        let items = to_responses_input(&[
            user.into(),
            reply.into(),
            ToolResultMessage::new(&call, result).into(),
        ]);
        let image = json!({"type": "input_image", "image_url": "data:image/png;base64,QUJD", "detail": "auto"});
        assert_eq!(items[0]["content"], json!([image]));
        assert_eq!(
            items[2]["output"],
            json!([{"type": "input_text", "text": "the screen:"}, image])
        );
    }
}

/// Every kind of block a tool can return, as each provider is sent it (issue 33).
#[cfg(test)]
mod content_kinds {
    use serde_json::json;

    use super::*;
    use crate::llm::replay::fixtures::result_of_every_kind;

    #[test]
    fn the_responses_api_gets_a_pdf_as_a_file_and_the_rest_as_text() {
        let output = tool_output(&result_of_every_kind(), false);
        assert_eq!(
            output["output"],
            json!([
                {"type": "input_text", "text": "said"},
                {"type": "input_text", "text": "[audio/wav audio (4 bytes) left out: OpenAI messages cannot carry audio]"},
                {"type": "input_text", "text": "[resource file:///notes/a.md]\n# A"},
                {"type": "input_file", "filename": "b.pdf", "file_data": "data:application/pdf;base64,JVBERg=="},
                {"type": "input_text", "text": "[resource file:///bin/c (application/octet-stream, 3 bytes) left out: OpenAI messages cannot carry files]"},
                {"type": "input_text", "text": "[resource link file:///notes/d.md: d.md]"},
            ])
        );
    }
}
