//! The events a run's transitions queue for the drive loop to emit, and what one drive has done (its
//! messages, whether a turn is open, the clock it stamps its own messages with).

use super::AgentRun;
use crate::call::{ToolResultMessage, now_millis};
use crate::event::AgentEvent;
use crate::message::{AgentMessage, AssistantMessage};

impl AgentRun {
    /// Begins a drive: queues `AgentStart`. Events queued outside a drive (by a decision that ended a
    /// wait, say) are dropped, and the drive's list of added messages starts empty.
    pub fn begin(&mut self) {
        self.progress.events.clear();
        self.progress.added.clear();
        self.progress.turn_open = false;
        self.progress.events.push(AgentEvent::AgentStart);
    }

    /// Ends a drive: queues `AgentEnd` with the messages the drive added, and gives them.
    pub fn end(&mut self) -> Vec<AgentMessage> {
        let added = std::mem::take(&mut self.progress.added);
        self.progress.events.push(AgentEvent::AgentEnd {
            messages: added.clone().into(),
        });
        added
    }

    /// The events the transitions since the last call caused, in order: the [`drive`](crate::agent::drive()) loop
    /// emits them after each transition.
    pub(crate) fn take_events(&mut self) -> Vec<AgentEvent> {
        std::mem::take(&mut self.progress.events)
    }

    /// Stamps the messages the run makes itself (a terminated run's reply, the results of calls an abort
    /// cut) with `millis` instead of the clock, until set back to `None`: a durable driver journals the
    /// time, so that a replay makes the very same messages.
    pub fn set_clock(&mut self, millis: Option<u64>) {
        self.progress.clock = millis;
    }

    pub(super) fn now(&self) -> u64 {
        self.progress.clock.unwrap_or_else(now_millis)
    }

    /// Adds a message the run makes itself to the conversation, with its `MessageStart` and `MessageEnd`.
    pub(super) fn announce(&mut self, message: AgentMessage) {
        let shared = std::sync::Arc::new(message.clone());
        self.progress.events.push(AgentEvent::MessageStart {
            message: std::sync::Arc::clone(&shared),
        });
        self.progress
            .events
            .push(AgentEvent::MessageEnd { message: shared });
        self.progress.added.push(message.clone());
        self.messages.push(message);
    }

    /// Opens a turn, unless one is open.
    pub(super) fn open_turn(&mut self) {
        if !self.progress.turn_open {
            self.progress.turn_open = true;
            self.progress.events.push(AgentEvent::TurnStart);
        }
    }

    /// Closes the turn of `message`, with the results of its calls.
    pub(super) fn close_turn(
        &mut self,
        message: AssistantMessage,
        results: Vec<ToolResultMessage>,
    ) {
        self.progress.turn_open = false;
        self.progress.events.push(AgentEvent::TurnEnd {
            message: std::sync::Arc::new(message),
            tool_results: results.into(),
        });
    }
}
