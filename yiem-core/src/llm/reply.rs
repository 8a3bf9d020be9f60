//! [`stream_reply`]: one model call, from request to finished [`AssistantMessage`], with the message events
//! an agent emits while the reply streams. The agent loop calls it for every turn; a driver of its own
//! (one that journals each model call, say) calls it to get the same reply and the same events.

use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{MessageAssembler, Model, ModelRequest};
use crate::event::{AgentEvent, EventBus};
use crate::message::{AgentMessage, AssistantMessage, StopReason};
use crate::telemetry;

/// Calls `model` with `request` and assembles its reply, in a `chat` span ([`telemetry`]). While it streams, `events` gets
/// `MessageStart`, a `MessageUpdate` per delta and `MessageEnd` (nothing is built when no one observes the
/// bus). Cancelling `cancel` stops the stream: the reply ends with [`StopReason::Aborted`]. A reply that
/// names no model gets `model.name()`. Never fails: a failed request is a reply with
/// [`StopReason::Error`] and its error text.
///
/// ```
/// use yiem_core::{
///     event::EventBus, exec::CancellationToken, llm::{ModelRequest, ScriptedModel, ScriptedTurn},
///     message::StopReason,
/// };
/// use yiem_core::llm::stream_reply;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let model = ScriptedModel::new([ScriptedTurn::text("hello")]);
/// let reply = stream_reply(&model, ModelRequest::default(), &CancellationToken::new(), &EventBus::new()).await;
/// assert_eq!(reply.text_content(), "hello");
/// assert_eq!(reply.stop_reason, StopReason::Stop);
/// # });
/// ```
pub async fn stream_reply(
    model: &dyn Model,
    request: ModelRequest,
    cancel: &CancellationToken,
    events: &EventBus,
) -> AssistantMessage {
    let chat = telemetry::chat(
        model.provider_name(),
        model.name(),
        &request.system_prompt,
        &request.messages,
    );
    let replying = reply_of(model, request, cancel, events);
    let reply = if chat.span().is_disabled() {
        replying.await
    } else {
        replying.instrument(chat.span().clone()).await
    };
    chat.ended(&reply);
    reply
}

/// [`stream_reply`], in the request's `chat` span.
async fn reply_of(
    model: &dyn Model,
    request: ModelRequest,
    cancel: &CancellationToken,
    events: &EventBus,
) -> AssistantMessage {
    let mut stream = model.stream(request, cancel.clone());
    let mut assembler = MessageAssembler::new();
    let observed = events.is_observed();
    let mut started = false;
    loop {
        let event = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            event = stream.next() => event,
        };
        let Some(event) = event else { break };
        let delta = assembler.apply(event);
        if observed && !started {
            started = true;
            events.emit(AgentEvent::MessageStart {
                message: assembler.snapshot(),
            });
        }
        if let (true, Some(delta)) = (observed, delta) {
            events.emit(AgentEvent::MessageUpdate {
                message: assembler.snapshot(),
                delta,
            });
        }
        if assembler.is_done() {
            break;
        }
        // A stream that is always ready must not keep the runtime (and a caller's timeout) waiting.
        tokio::task::coop::consume_budget().await;
    }
    let mut message = assembler.finish();
    if message.model.is_empty() {
        message.model = model.name().to_owned();
    }
    if cancel.is_cancelled() {
        message.stop_reason = StopReason::Aborted;
        message.error = Some("the run was aborted while the model was answering".into());
    }
    if observed && !started {
        events.emit(AgentEvent::MessageStart {
            message: Arc::new(AgentMessage::Assistant(message.clone())),
        });
    }
    if observed {
        events.emit(AgentEvent::MessageEnd {
            message: Arc::new(AgentMessage::Assistant(message.clone())),
        });
    }
    message
}
