//! A [`Model`] as the [`SamplingHandler`] of a tool's requests for a completion
//! ([`ToolContext::sample`](crate::tool::ToolContext::sample)): [`model_sampler`].

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{Model, ModelRequest, stream_reply};
use crate::event::EventBus;
use crate::message::{AgentMessage, AssistantMessage, StopReason, UserMessage};
use crate::sample::{Sampling, SamplingAnswer, SamplingHandler};

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

/// What the tools of one batch may spend on the agent's own model: the run's usage and limits when the
/// batch started, and what the batch's requests used since. The agent sets it before each batch and
/// counts the requests' usage into the run after it.
#[derive(Debug, Default)]
pub(crate) struct SampleBudget {
    /// The run's usage so far, this batch's requests included.
    pub(crate) total: crate::result::Usage,
    pub(crate) limits: crate::agent::RunLimits,
    /// The usage of each of this batch's requests, not yet counted in the run.
    pub(crate) sampled: Vec<crate::result::Usage>,
}

/// [`model_sampler`] that counts each request against the run's token limits as it goes: a request
/// made once the run's usage (its model calls and the requests before it) has reached a limit is
/// refused without asking the model, and each answered request's usage is kept in `budget` for the run
/// ([`AgentBuilder::sampling_by_own_model`](crate::agent::AgentBuilder::sampling_by_own_model)).
pub(crate) fn counting_sampler(
    model: Arc<dyn Model>,
    budget: Arc<std::sync::Mutex<SampleBudget>>,
) -> impl SamplingHandler {
    move |request: Sampling| {
        let model = Arc::clone(&model);
        let budget = Arc::clone(&budget);
        async move {
            let lock = || {
                budget
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
            };
            let reached = {
                let budget = lock();
                budget.limits.usage_exceeded(&budget.total)
            };
            if let Some(detail) = reached {
                return SamplingAnswer::Refuse(format!(
                    "the run's token limit is reached ({detail}); the model was not asked"
                ));
            }
            let (answer, usage) = sample(model.as_ref(), request).await;
            let mut budget = lock();
            budget.total.add(&usage);
            budget.sampled.push(usage);
            answer
        }
    }
}

/// The answer to `request`, and what the model reported using for it.
async fn sample(model: &dyn Model, request: Sampling) -> (SamplingAnswer, crate::result::Usage) {
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
