//! The conversation in the OpenAI chat-completions wire format: [`to_openai_messages`] renders the system
//! prompt and [`AgentMessage`]s as the request's `messages` array, [`assistant_from_openai`] reads a
//! non-streaming reply back into an [`AssistantMessage`]. [`MessageFormat`] lets a user replace the first
//! (the seeds' `formatMsgForLLM` hook) on an `OpenAiModel` (feature `openai`). Nothing here needs HTTP, so it
//! is in every build.

use serde_json::{Map, Value, json};

use crate::call::{ToolCall, ToolResultMessage, now_millis};
use crate::content::Content;
use crate::llm::replay::{Turn, result_text, turns};
use crate::message::{AgentMessage, AssistantContent, AssistantMessage, StopReason, UserMessage};
use crate::result::Usage;

/// Renders the conversation as the `messages` array of a chat-completions request.
///
/// [`OpenAiFormat`] is the default; any `Fn(&str, &[AgentMessage]) -> Vec<Value>` is one too, so a user can
/// wrap the default (add a cache marker, merge messages, drop old turns) without a new type.
///
/// ```
/// use serde_json::{Value, json};
/// use yiem_core::llm::{MessageFormat, to_openai_messages};
/// use yiem_core::message::{AgentMessage, UserMessage};
///
/// // The default, with every system prompt sent as a `developer` message.
/// let format = |system: &str, messages: &[AgentMessage]| -> Vec<Value> {
///     let mut out = to_openai_messages(system, messages);
///     if let Some(first) = out.first_mut().filter(|m| m["role"] == "system") {
///         first["role"] = json!("developer");
///     }
///     out
/// };
/// let messages = format.messages("Be brief.", &[UserMessage::text("hi").into()]);
/// assert_eq!(messages[0], json!({"role": "developer", "content": "Be brief."}));
/// ```
pub trait MessageFormat: Send + Sync {
    /// The `messages` array for `system_prompt` followed by `messages`.
    fn messages(&self, system_prompt: &str, messages: &[AgentMessage]) -> Vec<Value>;
}

/// The default [`MessageFormat`]: [`to_openai_messages`].
///
/// ```
/// use yiem_core::llm::{MessageFormat, OpenAiFormat};
/// use yiem_core::message::UserMessage;
///
/// let messages = OpenAiFormat.messages("", &[UserMessage::text("hi").into()]);
/// assert_eq!(messages, vec![serde_json::json!({"role": "user", "content": "hi"})]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenAiFormat;

impl MessageFormat for OpenAiFormat {
    fn messages(&self, system_prompt: &str, messages: &[AgentMessage]) -> Vec<Value> {
        to_openai_messages(system_prompt, messages)
    }
}

impl<F> MessageFormat for F
where
    F: Fn(&str, &[AgentMessage]) -> Vec<Value> + Send + Sync,
{
    fn messages(&self, system_prompt: &str, messages: &[AgentMessage]) -> Vec<Value> {
        self(system_prompt, messages)
    }
}

/// The system prompt and the conversation as OpenAI chat messages.
///
/// - The system prompt becomes `{"role": "system"}` first; an empty prompt is left out.
/// - A user message's content is a string when it is all text (text blocks joined with newlines), else an
///   array of `text` and `image_url` (a `data:` URL) parts.
/// - An assistant message sends its text as `content` (`""` when it only calls tools: strict servers
///   refuse `null`) and its calls as
///   `tool_calls`, each with its `arguments` as a JSON **string**. Thinking blocks are not sent back. A
///   call whose arguments are a string that is not JSON (a reply cut off by the output limit) is sent with
///   `"{}"`: servers such as llama.cpp and vLLM parse earlier calls' arguments and refuse the whole request
///   otherwise; the call's error result tells the model what happened.
/// - Calls and results are sent in pairs, as servers require: a call that no tool result answers (from a
///   reply that failed or was aborted while it streamed) is left out, and so is a result whose call is
///   not in an earlier assistant message. An assistant message left with neither text nor calls is left
///   out.
/// - A reply that failed or was aborted (`StopReason::Error` or `Aborted`, e.g. a stream cut mid-reply) is
///   left out whole: its text is partial, and replaying it would present it as something the model
///   finished saying.
/// - A tool result becomes `{"role": "tool", "tool_call_id", "content"}` with its text; an image in a
///   result is replaced by a note, since tool messages carry only text.
///
/// ```
/// use serde_json::json;
/// use yiem_core::llm::to_openai_messages;
/// use yiem_core::{
///     exec::ToolCall,
///     message::{AssistantContent, AssistantMessage, ToolResultMessage, UserMessage},
///     tool::AgentToolResult,
/// };
///
/// let call = ToolCall::new("call_1", "read", json!({"path": "a.txt"}));
/// let mut reply = AssistantMessage::default();
/// reply.content.push(AssistantContent::Thinking { thinking: "I should read it".into(), signature: None });
/// reply.content.push(AssistantContent::ToolCall(call.clone()));
/// let result = ToolResultMessage::new(&call, AgentToolResult::text("hello"));
///
/// let messages = to_openai_messages(
///     "You read files.",
///     &[UserMessage::text("what is in a.txt?").into(), reply.into(), result.into()],
/// );
/// assert_eq!(
///     serde_json::Value::Array(messages),
///     json!([
///         {"role": "system", "content": "You read files."},
///         {"role": "user", "content": "what is in a.txt?"},
///         {"role": "assistant", "content": "", "tool_calls": [
///             {"id": "call_1", "type": "function",
///              "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}}
///         ]},
///         {"role": "tool", "tool_call_id": "call_1", "content": "hello"}
///     ])
/// );
/// ```
pub fn to_openai_messages(system_prompt: &str, messages: &[AgentMessage]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system_prompt.is_empty() {
        out.push(json!({"role": "system", "content": system_prompt}));
    }
    for turn in turns(messages) {
        match turn {
            Turn::User(user) => out.push(user_message(user)),
            Turn::Assistant(assistant, calls) => out.extend(assistant_message(assistant, &calls)),
            Turn::ToolResult(result) => out.push(tool_message(result)),
        }
    }
    out
}

fn user_message(message: &UserMessage) -> Value {
    let all_text = message
        .content
        .iter()
        .all(|block| matches!(block, Content::Text { .. }));
    let content = if all_text {
        Value::String(message.text_content())
    } else {
        Value::Array(
            message
                .content
                .iter()
                .map(|block| match block {
                    Content::Text { text } => json!({"type": "text", "text": text}),
                    Content::Image { data, mime_type } => json!({
                        "type": "image_url",
                        "image_url": {"url": format!("data:{mime_type};base64,{data}")}
                    }),
                    Content::Audio { data, mime_type }
                        if matches!(&**mime_type, "audio/wav" | "audio/mpeg" | "audio/mp3") =>
                    {
                        let format = if &**mime_type == "audio/wav" { "wav" } else { "mp3" };
                        json!({"type": "input_audio", "input_audio": {"data": data, "format": format}})
                    }
                    other => json!({
                        "type": "text",
                        "text": other.described_for("OpenAI messages").unwrap_or_default()
                    }),
                })
                .collect(),
        )
    };
    json!({"role": "user", "content": content})
}

fn assistant_message(message: &AssistantMessage, calls: &[&ToolCall]) -> Option<Value> {
    let text = message.text_content();
    let calls: Vec<Value> = calls.iter().map(|call| openai_tool_call(call)).collect();
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut out = Map::new();
    out.insert("role".into(), json!("assistant"));
    // A reply of tool calls alone is sent with `""`, not `null`: strict servers (llama-cpp-python's
    // pydantic models) refuse `null`, and every common server accepts the empty string.
    out.insert("content".into(), Value::String(text));
    if !calls.is_empty() {
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(out))
}

fn openai_tool_call(call: &ToolCall) -> Value {
    let arguments = match &call.arguments {
        Value::Null => "{}".to_owned(),
        Value::String(text) if text.trim().is_empty() => "{}".to_owned(),
        Value::String(text) if serde_json::from_str::<Value>(text).is_ok() => text.clone(),
        Value::String(_) => "{}".to_owned(),
        other => other.to_string(),
    };
    json!({
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments}
    })
}

fn tool_message(result: &ToolResultMessage) -> Value {
    let text = result_text(result, "tool messages");
    json!({"role": "tool", "tool_call_id": result.tool_call_id, "content": text})
}

/// Reads an OpenAI assistant reply: a chat message (`{"role": "assistant", "content", "tool_calls"}`) or a
/// whole non-streaming response (`{"choices": [{"message", "finish_reason"}], "usage", "model"}`).
///
/// Lenient like the streaming client: `content` may be a string, `null` or an array of parts (text parts
/// are kept, and `tool_call`/`tool_calls` blocks among them are read as calls, as
/// [`extract_tool_calls`] does); `reasoning_content` or `reasoning` becomes a thinking block; the legacy
/// `function_call` is a call when no `tool_calls` is present (servers that mirror a call into both fields
/// would otherwise run it twice); arguments may be a JSON string or an object (a string that is JSON is
/// parsed, one that is not is kept as text and fails when the call runs); a call without an id gets a fresh
/// UUID. The stop reason comes from `finish_reason` (`length` → `Length`, `tool_calls`/`function_call` →
/// `ToolUse`, `content_filter` → `Error`); without one it is `ToolUse` when there are calls, else `Stop`.
///
/// ```
/// use serde_json::json;
/// use yiem_core::llm::assistant_from_openai;
/// use yiem_core::message::StopReason;
///
/// let reply = assistant_from_openai(&json!({
///     "model": "gpt-4o-mini",
///     "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
///         "role": "assistant",
///         "content": "Checking.",
///         "tool_calls": [{"id": "call_1", "type": "function",
///                         "function": {"name": "get_weather", "arguments": "{\"city\":\"Tokyo\"}"}}]
///     }}],
///     "usage": {"prompt_tokens": 20, "completion_tokens": 7}
/// }));
/// assert_eq!(reply.text_content(), "Checking.");
/// assert_eq!(reply.stop_reason, StopReason::ToolUse);
/// assert_eq!(reply.tool_calls().next().unwrap().arguments, json!({"city": "Tokyo"}));
/// assert_eq!(reply.usage.input_tokens, 20);
/// assert_eq!(reply.model, "gpt-4o-mini");
/// ```
pub fn assistant_from_openai(reply: &Value) -> AssistantMessage {
    let choice = reply
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|choices| choices.first());
    let message = match choice {
        Some(choice) => choice.get("message").unwrap_or(&Value::Null),
        None => reply,
    };
    let mut content = Vec::new();
    for key in ["reasoning_content", "reasoning"] {
        if let Some(thinking) = message.get(key).and_then(Value::as_str)
            && !thinking.is_empty()
        {
            content.push(AssistantContent::Thinking {
                thinking: thinking.to_owned(),
                signature: None,
            });
            break;
        }
    }
    let mut calls = Vec::new();
    match message.get("content") {
        Some(Value::String(text)) if !text.is_empty() => {
            content.push(AssistantContent::Text { text: text.clone() })
        }
        Some(parts @ Value::Array(list)) => {
            for part in list {
                if part.get("type").and_then(Value::as_str) == Some("text")
                    && let Some(text) = part.get("text").and_then(Value::as_str)
                {
                    content.push(AssistantContent::Text {
                        text: text.to_owned(),
                    });
                }
            }
            calls.extend(extract_tool_calls(parts));
        }
        _ => {}
    }
    let has_tool_calls =
        matches!(message.get("tool_calls"), Some(Value::Array(list)) if !list.is_empty());
    if has_tool_calls {
        let mut bare = Map::new();
        bare.insert("tool_calls".into(), message["tool_calls"].clone());
        calls.extend(extract_tool_calls(&Value::Object(bare)));
    }
    // The legacy `function_call` is read only without `tool_calls`: servers that mirror the first call
    // into it (llama-cpp-python) would otherwise run that call twice.
    if !has_tool_calls
        && let Some(function) = message.get("function_call").filter(|f| f.is_object())
    {
        calls.extend(extract_tool_calls(
            &json!({"tool_calls": [{"function": function}]}),
        ));
    }
    for mut call in calls {
        call.arguments = parsed_arguments(call.arguments);
        content.push(AssistantContent::ToolCall(call));
    }
    let has_calls = content
        .iter()
        .any(|block| matches!(block, AssistantContent::ToolCall(_)));
    let finish_reason = choice
        .and_then(|choice| choice.get("finish_reason"))
        .and_then(Value::as_str);
    let (stop_reason, error) = match finish_reason {
        Some("length") => (StopReason::Length, None),
        Some("content_filter") => (
            StopReason::Error,
            Some("the server stopped the reply with finish_reason \"content_filter\"".to_owned()),
        ),
        _ if has_calls => (StopReason::ToolUse, None),
        _ => (StopReason::Stop, None),
    };
    AssistantMessage {
        content,
        stop_reason,
        usage: reply
            .get("usage")
            .map(usage_from_openai)
            .unwrap_or_default(),
        model: reply
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        error,
        timestamp: now_millis(),
    }
}

/// A string that holds JSON becomes that JSON; anything else stays as it is.
fn parsed_arguments(arguments: Value) -> Value {
    match arguments {
        Value::String(text) if text.trim().is_empty() => Value::Object(Map::new()),
        Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        Value::Null => Value::Object(Map::new()),
        other => other,
    }
}

/// An OpenAI `usage` object: `prompt_tokens` (cached ones included), `completion_tokens`, and the cached
/// tokens from `prompt_tokens_details.cached_tokens` (OpenAI, vLLM) or `prompt_cache_hit_tokens` (DeepSeek).
pub(crate) fn usage_from_openai(usage: &Value) -> Usage {
    let count = |value: Option<&Value>| value.and_then(Value::as_u64).unwrap_or(0);
    Usage::new(
        count(usage.get("prompt_tokens")),
        count(usage.get("completion_tokens")),
    )
    .cache(
        count(
            usage
                .pointer("/prompt_tokens_details/cached_tokens")
                .or_else(|| usage.get("prompt_cache_hit_tokens")),
        ),
        0,
    )
}

/// Reads the tool calls out of an assistant message in OpenAI's wire shapes, as the seeds do: a
/// `{"type": "tool_calls", "tool_calls": [...]}` block (each call `{"id", "function": {"name",
/// "arguments"}}`), a single `{"type": "tool_call", "id", "name", "arguments"}` block, or a whole chat
/// message `{"role": "assistant", "tool_calls": [...]}`. `value` is such a message or an array of blocks.
///
/// Arguments are kept as sent (object or JSON string): a string that is not JSON becomes an error result for
/// that call when it runs, not a failure here. A call without an id gets a fresh UUID.
///
/// ```
/// use serde_json::json;
/// use yiem_core::llm::extract_tool_calls;
///
/// let blocks = json!([
///     {"type": "text", "text": "checking"},
///     {"type": "tool_calls", "tool_calls": [
///         {"id": "call_1", "function": {"name": "get_weather", "arguments": "{\"city\":\"Tokyo\"}"}}
///     ]},
///     {"type": "tool_call", "name": "get_time", "arguments": {"zone": "Asia/Tokyo"}}
/// ]);
/// let calls = extract_tool_calls(&blocks);
/// assert_eq!(calls.len(), 2);
/// assert_eq!(calls[0].id, "call_1");
/// assert_eq!(calls[1].name, "get_time");
/// assert_eq!(calls[1].id.len(), 36); // a fresh UUID
/// ```
pub fn extract_tool_calls(value: &Value) -> Vec<ToolCall> {
    let mut calls = Vec::new();
    match value {
        Value::Array(blocks) => {
            for block in blocks {
                extract_block(block, &mut calls);
            }
        }
        Value::Object(message) => match message.get("tool_calls") {
            Some(Value::Array(list)) if message.get("type").is_none() => {
                calls.extend(list.iter().map(openai_call));
            }
            _ => extract_block(value, &mut calls),
        },
        _ => {}
    }
    calls
}

fn extract_block(block: &Value, calls: &mut Vec<ToolCall>) {
    match block.get("type").and_then(Value::as_str) {
        Some("tool_calls") => {
            if let Some(Value::Array(list)) = block.get("tool_calls") {
                calls.extend(list.iter().map(openai_call));
            }
        }
        Some("tool_call") | Some("function") if block.get("function").is_some() => {
            calls.push(openai_call(block))
        }
        Some("tool_call") => calls.push(ToolCall {
            id: call_id(block),
            name: block
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            arguments: block.get("arguments").cloned().unwrap_or(Value::Null),
            caller: None,
        }),
        _ => {}
    }
}

/// `{"id", "type": "function", "function": {"name", "arguments"}}`.
fn openai_call(entry: &Value) -> ToolCall {
    let function = entry.get("function").unwrap_or(entry);
    ToolCall {
        id: call_id(entry),
        name: function
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        arguments: function.get("arguments").cloned().unwrap_or(Value::Null),
        caller: None,
    }
}

fn call_id(entry: &Value) -> String {
    match entry.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => crate::id::fresh_uuid(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::AgentToolResult;

    #[test]
    fn user_message_with_an_image_is_sent_as_parts() {
        let user = UserMessage {
            content: vec![
                Content::text("what is this?"),
                Content::image("QUJD", "image/png"),
            ],
            timestamp: 0,
        };
        assert_eq!(
            to_openai_messages("", &[user.into()]),
            vec![json!({"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
            ]})]
        );
    }

    fn answer(id: &str) -> AgentMessage {
        let call = ToolCall::new(id, "any", json!({}));
        ToolResultMessage::new(&call, AgentToolResult::text(format!("result {id}"))).into()
    }

    #[test]
    fn assistant_text_and_calls_are_sent_with_string_arguments_and_without_thinking() {
        let reply = AssistantMessage {
            content: vec![
                AssistantContent::Thinking {
                    thinking: "hmm".into(),
                    signature: None,
                },
                AssistantContent::Text {
                    text: "Copying.".into(),
                },
                AssistantContent::ToolCall(ToolCall::new("a", "read", json!({"path": "t.txt"}))),
                AssistantContent::ToolCall(ToolCall::new("b", "list", Value::Null)),
                AssistantContent::ToolCall(ToolCall::new(
                    "c",
                    "write",
                    json!("{\"path\":\"t.md\"}"),
                )),
                AssistantContent::ToolCall(ToolCall::new("d", "write", json!("{\"path\":\"t."))),
            ],
            ..AssistantMessage::default()
        };
        let conversation = [
            reply.into(),
            answer("a"),
            answer("b"),
            answer("c"),
            answer("d"),
        ];
        assert_eq!(
            to_openai_messages("", &conversation)[0],
            json!({"role": "assistant", "content": "Copying.", "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"t.txt\"}"}},
                    {"id": "b", "type": "function", "function": {"name": "list", "arguments": "{}"}},
                    {"id": "c", "type": "function", "function": {"name": "write", "arguments": "{\"path\":\"t.md\"}"}},
                    {"id": "d", "type": "function", "function": {"name": "write", "arguments": "{}"}}
            ]})
        );
    }

    #[test]
    fn failed_replies_unanswered_calls_and_orphaned_results_are_left_out() {
        let failed = AssistantMessage {
            content: vec![
                AssistantContent::Text {
                    text: "Let me".into(),
                },
                AssistantContent::ToolCall(ToolCall::new("partial", "write", json!("{\"pa"))),
            ],
            stop_reason: StopReason::Error,
            ..AssistantMessage::default()
        };
        let only_call = AssistantMessage {
            content: vec![AssistantContent::ToolCall(ToolCall::new(
                "cut",
                "read",
                json!({}),
            ))],
            stop_reason: StopReason::Aborted,
            ..AssistantMessage::default()
        };
        let conversation = [
            failed.into(),
            only_call.into(),
            answer("stray"),
            UserMessage::text("go on").into(),
        ];
        // The failed reply's partial text is not replayed as something the model finished saying.
        assert_eq!(
            to_openai_messages("", &conversation),
            vec![json!({"role": "user", "content": "go on"})]
        );
    }

    #[test]
    fn empty_assistant_replies_are_left_out() {
        let failed = AssistantMessage {
            stop_reason: StopReason::Error,
            error: Some("HTTP 500".into()),
            ..AssistantMessage::default()
        };
        let thinking_only = AssistantMessage {
            content: vec![AssistantContent::Thinking {
                thinking: "...".into(),
                signature: None,
            }],
            ..AssistantMessage::default()
        };
        assert_eq!(
            to_openai_messages("sys", &[failed.into(), thinking_only.into()]),
            vec![json!({"role": "system", "content": "sys"})]
        );
    }

    #[test]
    fn tool_results_carry_text_and_a_note_for_images() {
        let call = ToolCall::new("call_9", "shot", json!({}));
        let mut result = AgentToolResult::text("the screen:");
        result.content.push(Content::image("QUJD", "image/png"));
        let error = ToolResultMessage::new(&call, AgentToolResult::error("no display"));
        let mut reply = AssistantMessage::default();
        reply.content.push(AssistantContent::ToolCall(call.clone()));
        let conversation = [
            reply.into(),
            ToolResultMessage::new(&call, result).into(),
            error.into(),
        ];
        assert_eq!(
            to_openai_messages("", &conversation)[1..],
            [
                json!({"role": "tool", "tool_call_id": "call_9",
                       "content": "the screen:\n[image/png image (3 bytes) left out: tool messages cannot carry images]"}),
                json!({"role": "tool", "tool_call_id": "call_9", "content": "no display"}),
            ]
        );
    }

    #[test]
    fn reply_message_without_ids_with_object_arguments_and_reasoning_is_read() {
        let reply = assistant_from_openai(&json!({
            "role": "assistant",
            "content": "",
            "reasoning_content": "think first",
            "tool_calls": [{"function": {"name": "read", "arguments": {"path": "a"}}},
                           {"function": {"name": "list", "arguments": "not json"}}]
        }));
        assert_eq!(reply.stop_reason, StopReason::ToolUse);
        assert_eq!(
            reply.content[0],
            AssistantContent::Thinking {
                thinking: "think first".into(),
                signature: None
            }
        );
        let calls: Vec<&ToolCall> = reply.tool_calls().collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "read");
        assert_eq!(calls[0].arguments, json!({"path": "a"}));
        assert_eq!(calls[0].id.len(), 36);
        assert_eq!(calls[1].arguments, json!("not json"));
        assert_ne!(calls[0].id, calls[1].id);
    }

    #[test]
    fn legacy_function_call_and_content_parts_are_read() {
        let reply = assistant_from_openai(&json!({"choices": [{
            "finish_reason": "function_call",
            "message": {"role": "assistant",
                        "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
                        "function_call": {"name": "time", "arguments": "{}"}}
        }]}));
        assert_eq!(reply.text_content(), "one\ntwo");
        assert_eq!(reply.stop_reason, StopReason::ToolUse);
        assert_eq!(reply.tool_calls().next().unwrap().name, "time");
        assert_eq!(reply.tool_calls().next().unwrap().arguments, json!({}));
    }

    #[test]
    fn finish_reasons_map_to_stop_reasons() {
        let with = |finish: &str| {
            assistant_from_openai(&json!({"choices": [{"finish_reason": finish,
                "message": {"role": "assistant", "content": "x"}}]}))
        };
        assert_eq!(with("stop").stop_reason, StopReason::Stop);
        assert_eq!(with("length").stop_reason, StopReason::Length);
        let filtered = with("content_filter");
        assert_eq!(filtered.stop_reason, StopReason::Error);
        assert_eq!(
            filtered.error.as_deref(),
            Some("the server stopped the reply with finish_reason \"content_filter\"")
        );
    }

    #[test]
    fn usage_reads_cached_tokens() {
        assert_eq!(
            usage_from_openai(&json!({"prompt_tokens": 100, "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 64}})),
            Usage::new(100, 5).cache(64, 0)
        );
        assert_eq!(
            usage_from_openai(&json!({"prompt_tokens": 9, "prompt_cache_hit_tokens": 3}))
                .cache_read_tokens,
            3
        );
    }
}
