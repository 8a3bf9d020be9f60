//! The conversation in Anthropic's Messages API wire format: [`to_anthropic_messages`] renders
//! [`AgentMessage`]s as the request's `messages` (the system prompt goes in the request's `system`
//! field). No HTTP here; `AnthropicModel` sends what this makes.

use serde_json::{Map, Value, json};

use crate::call::ToolResultMessage;
use crate::content::Content;
use crate::llm::replay::{Turn, arguments_object, merged_by_role, turns};
use crate::message::{AgentMessage, AssistantContent, AssistantMessage, UserMessage};

/// How [`AssistantContent::ProviderBlock`]s of this format name their provider.
pub(crate) const PROVIDER: &str = "anthropic";

/// The type of the provider block that keeps a reply's code-execution container (`{"type":
/// "container", "id", "expires_at"}`); it is not a content block, and is not sent back as one.
pub(crate) const CONTAINER_BLOCK: &str = "container";

/// The container a request must name: the one of the last reply, when a program in it called tools
/// (their results answer that program, which waits in its container).
pub(crate) fn container_to_reuse(messages: &[AgentMessage]) -> Option<&str> {
    let reply = messages.iter().rev().find_map(|message| match message {
        AgentMessage::Assistant(reply) => Some(reply),
        _ => None,
    })?;
    let programmatic = reply
        .tool_calls()
        .any(|call| call.caller.as_ref().is_some_and(|c| c.provider == PROVIDER));
    if !programmatic {
        return None;
    }
    reply.content.iter().find_map(|block| match block {
        AssistantContent::ProviderBlock { provider, block }
            if provider == PROVIDER && block["type"] == CONTAINER_BLOCK =>
        {
            block["id"].as_str()
        }
        _ => None,
    })
}

/// The conversation as the `messages` of a Messages API request.
///
/// - A user message is `{"role": "user", "content": [...]}` with `text` and `image` (base64) blocks.
/// - An assistant message sends its blocks in order: `thinking` blocks **with their signature**, unchanged
///   (the API checks them; a thinking block without a signature, from another provider, is left out),
///   `redacted_thinking` blocks with their data, `text` blocks (empty ones left out: the API refuses
///   them) and `tool_use` blocks with `input` as an object (arguments that are not a JSON object, from a
///   reply cut at the output limit, are sent as `{}`) and, for a call a program in Anthropic's
///   code-execution sandbox made, its `caller`.
/// - Tool results are `tool_result` blocks (`tool_use_id`, `content` as text and image blocks,
///   `is_error: true` for a failed call) in a user message; results and user text that follow each
///   other share one user message, as the API wants roles to alternate.
/// - Pairing and failed replies follow the same rules as [`to_openai_messages`](super::to_openai_messages):
///   unanswered calls and orphaned results are left out, and so is a reply that failed or was aborted.
///
/// ```
/// use serde_json::json;
/// use yiem_core::llm::to_anthropic_messages;
/// use yiem_core::{
///     exec::ToolCall,
///     message::{AssistantContent, AssistantMessage, ToolResultMessage, UserMessage},
///     tool::AgentToolResult,
/// };
///
/// let call = ToolCall::new("toolu_1", "read", json!({"path": "a.txt"}));
/// let mut reply = AssistantMessage::default();
/// reply.content.push(AssistantContent::Thinking { thinking: "Read it.".into(), signature: Some("sig".into()) });
/// reply.content.push(AssistantContent::ToolCall(call.clone()));
/// let result = ToolResultMessage::new(&call, AgentToolResult::error("no such file"));
///
/// let messages = to_anthropic_messages(&[UserMessage::text("what is in a.txt?").into(), reply.into(), result.into()]);
/// assert_eq!(serde_json::Value::Array(messages), json!([
///     {"role": "user", "content": [{"type": "text", "text": "what is in a.txt?"}]},
///     {"role": "assistant", "content": [
///         {"type": "thinking", "thinking": "Read it.", "signature": "sig"},
///         {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.txt"}}
///     ]},
///     {"role": "user", "content": [
///         {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
///          "content": [{"type": "text", "text": "no such file"}]}
///     ]}
/// ]));
/// ```
pub fn to_anthropic_messages(messages: &[AgentMessage]) -> Vec<Value> {
    let rendered = turns(messages).into_iter().map(|turn| match turn {
        Turn::User(user) => ("user", user_blocks(user)),
        Turn::Assistant(assistant, calls) => {
            let ids: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
            ("assistant", assistant_blocks(assistant, &ids))
        }
        Turn::ToolResult(result) => ("user", vec![tool_result(result)]),
    });
    merged_by_role(rendered, "content")
}

fn content_blocks(content: &[Content]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } if text.is_empty() => None,
            Content::Text { text } => Some(json!({"type": "text", "text": text})),
            Content::Image { data, mime_type } => Some(json!({
                "type": "image",
                "source": {"type": "base64", "media_type": mime_type, "data": data}
            })),
            Content::ResourceBlob { resource, blob } => match resource.mime_type.as_deref() {
                Some(mime_type) if mime_type.starts_with("image/") => Some(json!({
                    "type": "image",
                    "source": {"type": "base64", "media_type": mime_type, "data": blob}
                })),
                Some("application/pdf") => Some(json!({
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": blob}
                })),
                _ => block
                    .described_for("Anthropic messages")
                    .map(|text| json!({"type": "text", "text": text})),
            },
            other => other
                .described_for("Anthropic messages")
                .map(|text| json!({"type": "text", "text": text})),
        })
        .collect()
}

fn user_blocks(message: &UserMessage) -> Vec<Value> {
    content_blocks(&message.content)
}

fn assistant_blocks(message: &AssistantMessage, answered: &[&str]) -> Vec<Value> {
    let mut blocks = Vec::new();
    for block in &message.content {
        match block {
            AssistantContent::Thinking {
                thinking,
                signature: Some(signature),
            } => blocks
                .push(json!({"type": "thinking", "thinking": thinking, "signature": signature})),
            AssistantContent::Thinking { .. } => {}
            AssistantContent::RedactedThinking { data } => {
                blocks.push(json!({"type": "redacted_thinking", "data": data}))
            }
            AssistantContent::Text { text } if text.is_empty() => {}
            AssistantContent::Text { text } => blocks.push(json!({"type": "text", "text": text})),
            AssistantContent::ToolCall(call) if answered.contains(&call.id.as_str()) => {
                let mut block = json!({
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": arguments_object(call),
                });
                // A program in Anthropic's sandbox made it: its caller goes back with it.
                if let Some(caller) = call.caller.as_ref().filter(|c| c.provider == PROVIDER) {
                    block["caller"] = json!({"type": caller.kind, "tool_id": caller.id});
                }
                blocks.push(block)
            }
            AssistantContent::ToolCall(_) => {}
            AssistantContent::ProviderBlock { block, .. } if block["type"] == CONTAINER_BLOCK => {}
            AssistantContent::ProviderBlock { provider, block } if provider == PROVIDER => {
                blocks.push(block.clone())
            }
            _ => {}
        }
    }
    // A reply of thinking alone carries nothing to answer.
    let has_answer = blocks.iter().any(|block| {
        !matches!(
            block["type"].as_str(),
            Some("thinking" | "redacted_thinking")
        )
    });
    if has_answer { blocks } else { Vec::new() }
}

fn tool_result(result: &ToolResultMessage) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), json!("tool_result"));
    block.insert("tool_use_id".into(), json!(result.tool_call_id));
    let content = content_blocks(result.content());
    if !content.is_empty() {
        block.insert("content".into(), Value::Array(content));
    }
    if result.is_error() {
        block.insert("is_error".into(), json!(true));
    }
    Value::Object(block)
}

/// Every kind of block a tool can return, as each provider is sent it (issue 33).
#[cfg(test)]
mod content_kinds {
    use serde_json::json;

    use super::*;
    use crate::llm::replay::fixtures::{every_kind, result_of_every_kind};

    #[test]
    fn anthropic_gets_a_pdf_as_a_document_and_the_rest_as_text() {
        assert_eq!(
            content_blocks(&every_kind()),
            [
                json!({"type": "text", "text": "said"}),
                json!({"type": "text", "text": "[audio/wav audio (4 bytes) left out: Anthropic messages cannot carry audio]"}),
                json!({"type": "text", "text": "[resource file:///notes/a.md]\n# A"}),
                json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERg=="}}),
                json!({"type": "text", "text": "[resource file:///bin/c (application/octet-stream, 3 bytes) left out: Anthropic messages cannot carry files]"}),
                json!({"type": "text", "text": "[resource link file:///notes/d.md: d.md]"}),
            ]
        );
        assert_eq!(
            tool_result(&result_of_every_kind())["content"][3]["type"],
            "document"
        );
    }
}
