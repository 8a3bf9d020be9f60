//! The conversation in Gemini's `generateContent` wire format: [`to_gemini_contents`] renders
//! [`AgentMessage`]s as the request's `contents` (the system prompt goes in `systemInstruction`). No HTTP
//! here; `GeminiModel` sends what this makes.

use serde_json::{Map, Value, json};

use crate::call::ToolResultMessage;
use crate::content::Content;
use crate::llm::replay::{Turn, arguments_object, merged_by_role, result_text, turns};
use crate::message::{AgentMessage, AssistantContent, AssistantMessage, UserMessage};

/// The conversation as the `contents` of a `generateContent` request.
///
/// - A user message is `{"role": "user", "parts": [...]}` with `text` and `inlineData` (base64) parts.
/// - An assistant message is `{"role": "model"}` with its text as `text` parts and its calls as
///   `functionCall` parts (`name`, `args` as an object — `{}` for arguments that are not one — and `id`).
///   Thought signatures go back on the part they came with: a signature block just before a call rides on
///   that `functionCall` part; any other (a signature Gemini sent on a text part or alone) is a
///   `{"text": "", "thoughtSignature"}` part where it stood. Thought text is not sent back (Gemini needs
///   only the signatures).
/// - Tool results are `functionResponse` parts (`name`, `id`, and `response: {"output": text}` or
///   `{"error": text}` for a failed call) in a user content; images in results are replaced by a note.
///   Contents of the same role that follow each other are merged.
/// - Pairing and failed replies follow the same rules as [`to_openai_messages`](super::to_openai_messages).
///
/// ```
/// use serde_json::json;
/// use yiem_core::llm::to_gemini_contents;
/// use yiem_core::{
///     exec::ToolCall,
///     message::{AssistantContent, AssistantMessage, ToolResultMessage, UserMessage},
///     tool::AgentToolResult,
/// };
///
/// let call = ToolCall::new("c1", "read", json!({"path": "a.txt"}));
/// let mut reply = AssistantMessage::default();
/// reply.content.push(AssistantContent::Thinking { thinking: String::new(), signature: Some("sig".into()) });
/// reply.content.push(AssistantContent::ToolCall(call.clone()));
/// let result = ToolResultMessage::new(&call, AgentToolResult::text("hello"));
///
/// let contents = to_gemini_contents(&[UserMessage::text("read a.txt").into(), reply.into(), result.into()]);
/// assert_eq!(serde_json::Value::Array(contents), json!([
///     {"role": "user", "parts": [{"text": "read a.txt"}]},
///     {"role": "model", "parts": [
///         {"functionCall": {"name": "read", "args": {"path": "a.txt"}, "id": "c1"}, "thoughtSignature": "sig"}
///     ]},
///     {"role": "user", "parts": [
///         {"functionResponse": {"name": "read", "id": "c1", "response": {"output": "hello"}}}
///     ]}
/// ]));
/// ```
pub fn to_gemini_contents(messages: &[AgentMessage]) -> Vec<Value> {
    let rendered = turns(messages).into_iter().map(|turn| match turn {
        Turn::User(user) => ("user", user_parts(user)),
        Turn::Assistant(assistant, calls) => {
            let ids: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
            ("model", model_parts(assistant, &ids))
        }
        Turn::ToolResult(result) => ("user", vec![function_response(result)]),
    });
    merged_by_role(rendered, "parts")
}

fn user_parts(message: &UserMessage) -> Vec<Value> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } if text.is_empty() => None,
            Content::Text { text } => Some(json!({"text": text})),
            Content::Image { data, mime_type } => {
                Some(json!({"inlineData": {"mimeType": mime_type, "data": data}}))
            }
            Content::Audio { data, mime_type } => {
                Some(json!({"inlineData": {"mimeType": mime_type, "data": data}}))
            }
            Content::ResourceBlob { resource, blob } if resource.mime_type.is_some() => {
                Some(json!({"inlineData": {"mimeType": resource.mime_type, "data": blob}}))
            }
            other => other
                .described_for("Gemini messages")
                .map(|text| json!({"text": text})),
        })
        .collect()
}

fn model_parts(message: &AssistantMessage, answered: &[&str]) -> Vec<Value> {
    let mut parts = Vec::new();
    let mut blocks = message.content.iter().peekable();
    let mut has_answer = false;
    while let Some(block) = blocks.next() {
        match block {
            AssistantContent::Thinking {
                signature: Some(signature),
                ..
            } => match blocks.peek() {
                Some(AssistantContent::ToolCall(call)) if answered.contains(&call.id.as_str()) => {
                    blocks.next();
                    let mut part = function_call(call);
                    part.insert("thoughtSignature".into(), json!(signature));
                    parts.push(Value::Object(part));
                    has_answer = true;
                }
                _ => parts.push(json!({"text": "", "thoughtSignature": signature})),
            },
            AssistantContent::Text { text } if !text.is_empty() => {
                parts.push(json!({"text": text}));
                has_answer = true;
            }
            AssistantContent::ToolCall(call) if answered.contains(&call.id.as_str()) => {
                parts.push(Value::Object(function_call(call)));
                has_answer = true;
            }
            _ => {}
        }
    }
    if has_answer { parts } else { Vec::new() }
}

fn function_call(call: &crate::call::ToolCall) -> Map<String, Value> {
    let mut part = Map::new();
    part.insert(
        "functionCall".into(),
        json!({"name": call.name, "args": arguments_object(call), "id": call.id}),
    );
    part
}

fn function_response(result: &ToolResultMessage) -> Value {
    let text = result_text(result, "function responses here");
    let key = if result.is_error() { "error" } else { "output" };
    json!({"functionResponse": {
        "name": result.tool_name,
        "id": result.tool_call_id,
        "response": {key: text}
    }})
}

/// Every kind of block a tool can return, as each provider is sent it (issue 33).
#[cfg(test)]
mod content_kinds {
    use serde_json::json;

    use super::*;
    use crate::llm::replay::fixtures::{every_kind, result_of_every_kind};

    #[test]
    fn gemini_gets_audio_and_files_inline_and_notes_in_function_responses() {
        let mut user = UserMessage::text("");
        user.content = every_kind();
        assert_eq!(
            user_parts(&user),
            [
                json!({"text": "said"}),
                json!({"inlineData": {"mimeType": "audio/wav", "data": "UklGRg=="}}),
                json!({"text": "[resource file:///notes/a.md]\n# A"}),
                json!({"inlineData": {"mimeType": "application/pdf", "data": "JVBERg=="}}),
                json!({"inlineData": {"mimeType": "application/octet-stream", "data": "AAEC"}}),
                json!({"text": "[resource link file:///notes/d.md: d.md]"}),
            ]
        );
        let response = function_response(&result_of_every_kind());
        let text = response["functionResponse"]["response"]["output"]
            .as_str()
            .unwrap();
        assert!(text.starts_with("said\n[audio/wav audio (4 bytes) left out: function responses here cannot carry audio]\n[resource file:///notes/a.md]\n# A\n"), "{text}");
    }
}
