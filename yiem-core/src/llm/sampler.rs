//! A [`Model`] as the [`SamplingHandler`] of a tool's requests for a completion
//! ([`ToolContext::sample`](crate::tool::ToolContext::sample)): [`model_sampler`].

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{Model, ModelRequest, stream_reply};
use crate::ask::sample::{Sampling, SamplingAnswer, SamplingHandler};
use crate::event::EventBus;
use crate::message::{AgentMessage, AssistantMessage, StopReason, UserMessage};

/// Answers requests for a completion with `model`, as it is configured: its own output limit holds (a
/// request's `max_tokens` cannot raise it), no tools are offered, and the answer is the reply's text. A
/// request the model fails is refused with the model's error, for the tool to read.
///
/// Give it to an agent ([`AgentSettings::sampling`](crate::agent::AgentSettings::sampling)) to let its tools
/// ask the agent's own model; a scripted model stands in for a real one here:
///
/// ```
/// use std::sync::Arc;
/// use yiem_core::llm::{ScriptedModel, ScriptedTurn, model_sampler};
/// use yiem_core::ask::{Sampling, SamplingAnswer, SamplingHandler};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let model = Arc::new(ScriptedModel::new([ScriptedTurn::text("three words here")]));
/// let sampler = model_sampler(model);
/// let answer = sampler.sample(Sampling::prompt("Say three words.", 20)).await;
/// assert_eq!(answer, SamplingAnswer::text("three words here", "scripted"));
/// # });
/// ```
pub fn model_sampler(model: Arc<dyn Model>) -> impl SamplingHandler {
    move |request: Sampling| {
        let model = Arc::clone(&model);
        async move { sample(model.as_ref(), request).await.0 }
    }
}

/// The answer to `request`, and what the model reported using for it.
pub(crate) async fn sample(
    model: &dyn Model,
    request: Sampling,
) -> (SamplingAnswer, crate::result::Usage) {
    let messages = request
        .messages
        .into_iter()
        .map(|message| match message.role.as_str() {
            "assistant" => AgentMessage::Assistant(AssistantMessage::text(message.text)),
            _ => AgentMessage::User(UserMessage::text(message.text)),
        })
        .collect();
    let request = ModelRequest {
        system_prompt: request.system_prompt.unwrap_or_default(),
        messages,
        ..ModelRequest::default()
    };
    // A span of its own (`chat {model}`), with its usage, like every model request.
    let reply = stream_reply(model, request, &CancellationToken::new(), &EventBus::new()).await;
    let answer = match reply.stop_reason {
        StopReason::Error | StopReason::Aborted => SamplingAnswer::Refuse(format!(
            "the model `{}` failed to answer: {}",
            model.name(),
            reply.error.as_deref().unwrap_or("no reason given")
        )),
        _ => SamplingAnswer::text(reply.text_content(), model.name()),
    };
    (answer, reply.usage)
}
