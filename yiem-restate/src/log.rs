//! The agent's events in the logs: one `tracing` line per event (target `yiem_restate::event`), inside the
//! span of the run, which names the conversation.

use yiem_core::{event::AgentEvent, message::AgentMessage};

/// Writes `event` to `tracing`: starts and ends at info, streaming updates at trace.
pub(crate) fn log_event(event: &AgentEvent) {
    match event {
        AgentEvent::AgentStart => tracing::info!(target: "yiem_restate::event", "run started"),
        AgentEvent::TurnStart => tracing::info!(target: "yiem_restate::event", "turn started"),
        AgentEvent::MessageStart { message } => {
            tracing::debug!(target: "yiem_restate::event", role = role(message), "message started");
        }
        AgentEvent::MessageUpdate { .. } => {
            tracing::trace!(target: "yiem_restate::event", "message updated");
        }
        AgentEvent::MessageEnd { message } => {
            tracing::info!(target: "yiem_restate::event", role = role(message), "message ended");
        }
        AgentEvent::ToolExecutionStart { call } => tracing::info!(
            target: "yiem_restate::event",
            tool = %call.name,
            call_id = %call.id,
            "tool call started"
        ),
        AgentEvent::ToolExecutionUpdate { call, .. } => tracing::trace!(
            target: "yiem_restate::event",
            tool = %call.name,
            call_id = %call.id,
            "tool call updated"
        ),
        AgentEvent::ToolExecutionEnd { call, is_error, .. } => tracing::info!(
            target: "yiem_restate::event",
            tool = %call.name,
            call_id = %call.id,
            is_error,
            "tool call ended"
        ),
        AgentEvent::TurnEnd { tool_results, .. } => tracing::info!(
            target: "yiem_restate::event",
            tool_results = tool_results.len(),
            "turn ended"
        ),
        AgentEvent::AgentEnd { messages } => tracing::info!(
            target: "yiem_restate::event",
            messages = messages.len(),
            "run ended"
        ),
        _ => tracing::debug!(target: "yiem_restate::event", ?event, "event"),
    }
}

fn role(message: &AgentMessage) -> &'static str {
    match message {
        AgentMessage::User(_) => "user",
        AgentMessage::Assistant(_) => "assistant",
        AgentMessage::ToolResult(_) => "tool_result",
        _ => "other",
    }
}
