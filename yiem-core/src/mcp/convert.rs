//! The conversions between yiem's values and MCP's, both ways: results, questions and their answers,
//! sampling requests and completions. The server and the client each use one direction.

#[cfg(feature = "mcp-client")]
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, ContentBlock, ElicitRequestParams, ElicitResult, ElicitationAction, Resource,
    ResourceContents,
};
// Sampling is deprecated by SEP-2577 (the 2026-07-28 revision), but the earlier revisions have it.
#[allow(deprecated)]
use rmcp::model::CreateMessageRequestParams;
#[cfg(feature = "mcp-client")]
use rmcp::model::ErrorCode;
#[cfg(feature = "mcp-client")]
#[allow(deprecated)]
use rmcp::model::{
    CreateMessageResult, Role, SamplingContent, SamplingMessage, SamplingMessageContentBlock,
};
use serde_json::Value;

use crate::ask::elicit::{ElicitError, Elicitation, ElicitationAnswer};
#[cfg(feature = "mcp-client")]
use crate::ask::sample::SampledMessage;
use crate::ask::sample::{Sampling, SamplingAnswer};
use crate::call::ToolResultMessage;
use crate::content::Content;
#[cfg(feature = "mcp-client")]
use crate::content::ResourceInfo;
#[cfg(feature = "mcp-client")]
use crate::result::AgentToolResult;

// server side: yiem's values to MCP's, and the client's answers back

/// The `elicitation/create` parameters of `question` (form mode).
pub(crate) fn elicit_params(question: &Elicitation) -> Result<ElicitRequestParams, ElicitError> {
    serde_json::from_value::<ElicitRequestParams>(serde_json::json!({
        "mode": "form",
        "message": question.message,
        "requestedSchema": question.schema,
    }))
    .map_err(|error| ElicitError::InvalidQuestion(error.to_string()))
}

/// The `sampling/createMessage` parameters of `request`.
#[allow(deprecated)] // sampling: see the `use` above
pub(crate) fn sampling_params(
    request: &Sampling,
) -> Result<CreateMessageRequestParams, ElicitError> {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|message| {
            let role = if message.role == "assistant" {
                "assistant"
            } else {
                "user"
            };
            serde_json::json!({"role": role, "content": {"type": "text", "text": message.text}})
        })
        .collect();
    let mut params = serde_json::json!({"messages": messages, "maxTokens": request.max_tokens});
    if let Some(system) = &request.system_prompt {
        params["systemPrompt"] = Value::String(system.clone());
    }
    serde_json::from_value(params).map_err(|error| ElicitError::InvalidQuestion(error.to_string()))
}

/// The completion in a client's `sampling/createMessage` result (its text blocks, and the model), or
/// the refusal in an error it answered with.
pub(crate) fn sampled(what: &str, answer: Value) -> Result<SamplingAnswer, ElicitError> {
    if let Some(message) = answer.get("message").and_then(Value::as_str)
        && answer.get("code").is_some()
    {
        return Ok(SamplingAnswer::Refuse(message.to_owned()));
    }
    let blocks = match answer.get("content") {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(block @ Value::Object(_)) => vec![block.clone()],
        _ => {
            return Err(ElicitError::InvalidAnswer(format!(
                "{what} is not a sampling result (no `content`)"
            )));
        }
    };
    let text: Vec<&str> = blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    let model = answer
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Ok(SamplingAnswer::text(text.join("\n"), model))
}

/// The answer the client gave to a question.
pub(crate) fn answer_of(answer: ElicitResult) -> Result<ElicitationAnswer, ElicitError> {
    Ok(match answer.action {
        ElicitationAction::Accept => match answer.content {
            Some(Value::Object(content)) => ElicitationAnswer::Accept(content),
            None => ElicitationAnswer::Accept(serde_json::Map::new()),
            Some(other) => {
                return Err(ElicitError::InvalidAnswer(format!(
                    "the client answered with {other}, not an object of fields"
                )));
            }
        },
        ElicitationAction::Decline => ElicitationAnswer::Decline,
        _ => ElicitationAnswer::Cancel,
    })
}

pub(crate) fn call_tool_result(message: ToolResultMessage) -> CallToolResult {
    let mut result = message.result;
    let structured = result.take_structured_content();
    let content = result
        .content
        .into_iter()
        .map(|block| match block {
            Content::Text { text } => ContentBlock::text(text),
            Content::Image { data, mime_type } => ContentBlock::image(data, mime_type),
            Content::Audio { data, mime_type } => ContentBlock::audio(data, mime_type),
            Content::ResourceText { resource, text } => {
                ContentBlock::resource(ResourceContents::TextResourceContents {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    text,
                    meta: None,
                })
            }
            Content::ResourceBlob { resource, blob } => {
                ContentBlock::resource(ResourceContents::BlobResourceContents {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    blob,
                    meta: None,
                })
            }
            Content::ResourceLink { resource } => {
                // A link's name is required on the wire: the last part of its URI when none was given.
                let name = resource.name.clone().unwrap_or_else(|| {
                    let last = resource.uri.rsplit('/').next().unwrap_or_default();
                    last.to_owned()
                });
                let mut link = Resource::new(resource.uri, name);
                link.description = resource.description;
                link.mime_type = resource.mime_type;
                ContentBlock::resource_link(link)
            }
        })
        .collect();
    let mut answer = if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    answer.structured_content = structured;
    answer
}

// client side: the server's values to yiem's, and yiem's answers back
#[cfg(feature = "mcp-client")]
/// The message and the form's schema of a form elicitation; this client answers no other kind.
pub(crate) fn form_of(request: ElicitRequestParams) -> Result<(String, Value), ErrorData> {
    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema,
        ..
    } = request
    else {
        return Err(ErrorData::invalid_params(
            "this client answers form elicitations only",
            None,
        ));
    };
    let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
    Ok((message, schema))
}

#[cfg(feature = "mcp-client")]
/// The messages of a sampling request, as text (content that is not text as its JSON).
#[allow(deprecated)]
pub(crate) fn sampled_messages(params: &CreateMessageRequestParams) -> Vec<SampledMessage> {
    params
        .messages
        .iter()
        .map(|message| {
            let blocks = match &message.content {
                SamplingContent::Single(block) => std::slice::from_ref(block),
                SamplingContent::Multiple(blocks) => blocks.as_slice(),
            };
            let text = blocks
                .iter()
                .map(|block| match block {
                    SamplingMessageContentBlock::Text(text) => text.text.clone(),
                    other => serde_json::to_string(other).unwrap_or_default(),
                })
                .collect::<Vec<_>>()
                .join("\n");
            let role = match message.role {
                Role::Assistant => "assistant",
                _ => "user",
            };
            SampledMessage::new(role, text)
        })
        .collect()
}

#[cfg(feature = "mcp-client")]
/// The elicitation result of `answer` to the form `schema`: an accepted answer's fields with the
/// schema's defaults filled in where it leaves them out (SEP-1034).
pub(crate) fn elicit_result(answer: ElicitationAnswer, schema: &Value) -> ElicitResult {
    match answer {
        ElicitationAnswer::Accept(content) => ElicitResult::new(ElicitationAction::Accept)
            .with_content(Value::Object(with_defaults(content, schema))),
        ElicitationAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
        _ => ElicitResult::new(ElicitationAction::Cancel),
    }
}

#[cfg(feature = "mcp-client")]
/// A server's sampling request, as the [`Sampling`] a handler or a call answers, from `server`.
#[allow(deprecated)]
pub(crate) fn sampling_of(server: String, params: CreateMessageRequestParams) -> Sampling {
    Sampling {
        server,
        messages: sampled_messages(&params),
        system_prompt: params.system_prompt,
        max_tokens: params.max_tokens,
    }
}

#[cfg(feature = "mcp-client")]
/// The `sampling/createMessage` result of `answer`: the completion, or the refusal as an error.
#[allow(deprecated)]
pub(crate) fn message_result(answer: SamplingAnswer) -> Result<CreateMessageResult, ErrorData> {
    match answer {
        SamplingAnswer::Text { text, model } => Ok(CreateMessageResult::new(
            SamplingMessage::new(Role::Assistant, SamplingMessageContentBlock::text(text)),
            model,
        )
        .with_stop_reason(CreateMessageResult::STOP_REASON_END_TURN)),
        // -1: the user rejected the request, as the spec's example has it.
        SamplingAnswer::Refuse(reason) => Err(ErrorData::new(ErrorCode(-1), reason, None)),
    }
}

#[cfg(feature = "mcp-client")]
/// A tool result from the server's.
pub(crate) fn from_mcp(result: CallToolResult) -> AgentToolResult {
    let mut content: Vec<Content> = result
        .content
        .into_iter()
        .map(|block| match block {
            ContentBlock::Text(text) => Content::text(text.text),
            ContentBlock::Image(image) => Content::image(image.data, image.mime_type),
            ContentBlock::Audio(audio) => Content::audio(audio.data, audio.mime_type),
            ContentBlock::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => Content::ResourceText {
                    resource: Box::new(ResourceInfo {
                        mime_type,
                        ..ResourceInfo::new(uri)
                    }),
                    text,
                },
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => Content::ResourceBlob {
                    resource: Box::new(ResourceInfo {
                        mime_type,
                        ..ResourceInfo::new(uri)
                    }),
                    blob,
                },
                other => Content::text(serde_json::to_string(&other).unwrap_or_default()),
            },
            ContentBlock::ResourceLink(link) => Content::ResourceLink {
                resource: Box::new(ResourceInfo {
                    name: Some(link.name),
                    description: link.description,
                    mime_type: link.mime_type,
                    ..ResourceInfo::new(link.uri)
                }),
            },
            other => Content::text(serde_json::to_string(&other).unwrap_or_default()),
        })
        .collect();
    if content.is_empty()
        && let Some(structured) = &result.structured_content
    {
        content.push(Content::text(structured.to_string()));
    }
    let mut answer = AgentToolResult::with_content(content);
    answer.is_error = result.is_error.unwrap_or(false);
    match result.structured_content {
        Some(structured) => answer.with_structured_content(structured),
        None => answer,
    }
}

/// `content` with every property of `schema` that it leaves out and that has a `default` set to
/// that default (SEP-1034).
#[cfg(feature = "mcp-client")]
fn with_defaults(
    mut content: serde_json::Map<String, Value>,
    schema: &Value,
) -> serde_json::Map<String, Value> {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if let Some(default) = property.get("default")
                && !content.contains_key(name)
            {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    content
}

#[cfg(test)]
#[cfg(feature = "mcp-client")]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_fill_only_the_fields_left_out() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "email": {"type": "string"},
        }});
        let answer = json!({"name": "Ada"}).as_object().cloned().unwrap();
        assert_eq!(
            Value::Object(with_defaults(answer, &schema)),
            json!({"name": "Ada", "age": 30})
        );
    }
}
