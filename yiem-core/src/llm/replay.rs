//! Which parts of a conversation are sent back to a model, whatever its wire format: calls and results
//! go in pairs (providers refuse a call without its result and a result without its call), and a reply
//! that failed or was aborted is left out whole (its text is partial; replaying it would present it as
//! something the model finished saying). Each provider's format renders the [`Turn`]s this yields.

use std::collections::HashSet;

use crate::call::{ToolCall, ToolResultMessage};
use crate::message::{AgentMessage, AssistantMessage, StopReason, UserMessage};

/// One message to render, after the pairing rules.
pub(crate) enum Turn<'a> {
    User(&'a UserMessage),
    /// A finished reply, with the calls of it that a result answers.
    Assistant(&'a AssistantMessage, Vec<&'a ToolCall>),
    /// A result whose call was sent.
    ToolResult(&'a ToolResultMessage),
}

/// The turns of `messages` to send, in order.
pub(crate) fn turns(messages: &[AgentMessage]) -> Vec<Turn<'_>> {
    let answered: HashSet<&str> = messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut sent_calls: HashSet<&str> = HashSet::new();
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            AgentMessage::User(user) => out.push(Turn::User(user)),
            AgentMessage::Assistant(assistant)
                if matches!(
                    assistant.stop_reason,
                    StopReason::Error | StopReason::Aborted
                ) => {}
            AgentMessage::Assistant(assistant) => {
                let calls: Vec<&ToolCall> = assistant
                    .tool_calls()
                    .filter(|call| answered.contains(call.id.as_str()))
                    .collect();
                sent_calls.extend(calls.iter().map(|call| call.id.as_str()));
                out.push(Turn::Assistant(assistant, calls));
            }
            AgentMessage::ToolResult(result) => {
                if sent_calls.contains(result.tool_call_id.as_str()) {
                    out.push(Turn::ToolResult(result));
                }
            }
        }
    }
    out
}

/// A tool result's content as text, each image replaced by a note saying where images cannot go
/// (`in`: "tool messages").
pub(crate) fn result_text(result: &ToolResultMessage, carrier: &str) -> String {
    result
        .content()
        .iter()
        .map(|block| match block {
            crate::content::Content::Text { text } => text.clone(),
            other => other.described_for(carrier).unwrap_or_default(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Messages of `(role, items)` as `{"role", <key>: items}` objects, those of one role that follow each
/// other merged into one (Anthropic and Gemini want roles to alternate), empty ones left out.
#[cfg(any(feature = "anthropic", feature = "gemini"))]
pub(crate) fn merged_by_role(
    messages: impl IntoIterator<Item = (&'static str, Vec<serde_json::Value>)>,
    key: &str,
) -> Vec<serde_json::Value> {
    use serde_json::Value;
    let mut out: Vec<Value> = Vec::new();
    for (role, items) in messages {
        if items.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(Value::Array(existing)) = last.get_mut(key) {
                    existing.extend(items);
                }
            }
            _ => out.push(serde_json::json!({"role": role, key: items})),
        }
    }
    out
}

/// A call's arguments as a JSON object for formats that carry them as one (Anthropic's `input`,
/// Gemini's `args`): a JSON string is parsed; text that is not a JSON object (a reply cut off by the
/// output limit) becomes `{}`, and the call's error result tells the model what happened.
#[cfg(any(
    feature = "anthropic",
    feature = "gemini",
    feature = "openai-responses"
))]
pub(crate) fn arguments_object(call: &ToolCall) -> serde_json::Value {
    use serde_json::Value;
    match &call.arguments {
        Value::Object(_) => call.arguments.clone(),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(object @ Value::Object(_)) => object,
            _ => Value::Object(Default::default()),
        },
        _ => Value::Object(Default::default()),
    }
}

/// What the providers' tests of content share: a result with every kind of block. (Each provider's tests
/// are built only with its feature, so a build may use neither function.)
#[cfg(test)]
#[allow(dead_code)]
pub(crate) mod fixtures {
    use serde_json::json;

    use crate::call::ToolCall;
    use crate::call::ToolResultMessage;
    use crate::content::Content;
    use crate::content::ResourceInfo;
    use crate::result::AgentToolResult;

    pub(crate) fn every_kind() -> Vec<Content> {
        vec![
            Content::text("said"),
            Content::audio("UklGRg==", "audio/wav"),
            Content::resource_text("file:///notes/a.md", "# A"),
            Content::ResourceBlob {
                resource: Box::new(
                    ResourceInfo::new("file:///docs/b.pdf").mime_type("application/pdf"),
                ),
                blob: "JVBERg==".into(),
            },
            Content::resource_blob("file:///bin/c", "AAEC", "application/octet-stream"),
            Content::resource_link("file:///notes/d.md", "d.md"),
        ]
    }

    pub(crate) fn result_of_every_kind() -> ToolResultMessage {
        let call = ToolCall {
            id: "call_1".into(),
            name: "fetch".into(),
            arguments: json!({}),
            caller: None,
        };
        let mut result = AgentToolResult::text("said");
        result.content = every_kind().into();
        ToolResultMessage::new(&call, result)
    }
}
