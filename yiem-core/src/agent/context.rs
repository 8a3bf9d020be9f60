//! What the agent's hooks see and return: the context a model call is made from (`prepare_context` may
//! change it), the turn `prepare_next_turn` sees, and the changes it makes.

use std::sync::Arc;

use super::{AgentRun, RunStop};
use crate::call::ToolResultMessage;
use crate::llm::Model;
use crate::message::{AgentMessage, AssistantMessage};
use crate::tool::definition::AgentTool;

/// What the model will see on its next call; `prepare_context` may change any of it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AgentContext {
    /// The system prompt.
    pub system_prompt: String,
    /// The conversation.
    pub messages: Vec<AgentMessage>,
    /// The tools offered (and the only ones that can run this turn).
    pub tools: Vec<AgentTool>,
}

/// What `prepare_next_turn` sees after a turn.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct NextTurnContext {
    /// The turn's assistant message.
    pub message: AssistantMessage,
    /// The results of its tool calls.
    pub tool_results: Vec<ToolResultMessage>,
    /// The whole conversation.
    pub messages: Vec<AgentMessage>,
}

impl NextTurnContext {
    /// What a driver shows `prepare_next_turn` after the turn of `message`, whose calls gave
    /// `tool_results`, in the conversation `messages`.
    pub fn new(
        message: AssistantMessage,
        tool_results: Vec<ToolResultMessage>,
        messages: Vec<AgentMessage>,
    ) -> Self {
        NextTurnContext {
            message,
            tool_results,
            messages,
        }
    }
}

/// Changes `prepare_next_turn` makes before the next model call; `None` keeps a field as it is.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct TurnUpdate {
    /// A new system prompt.
    pub system_prompt: Option<String>,
    /// A new conversation (e.g. compacted).
    pub messages: Option<Vec<AgentMessage>>,
    /// Another model.
    pub model: Option<Arc<dyn Model>>,
    /// End the run after this turn.
    pub stop: bool,
}

impl TurnUpdate {
    /// An update that changes nothing yet.
    pub fn new() -> Self {
        TurnUpdate::default()
    }

    /// A new system prompt.
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// A new conversation (e.g. compacted).
    #[must_use]
    pub fn messages(mut self, messages: Vec<AgentMessage>) -> Self {
        self.messages = Some(messages);
        self
    }

    /// Another model from the next model call on.
    #[must_use]
    pub fn model(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// Ends the run after this turn.
    #[must_use]
    pub fn stopping(mut self) -> Self {
        self.stop = true;
        self
    }

    /// Applies the update to `run`, as every driver does: the system prompt, the conversation (refused,
    /// as by [`AgentRun::set_messages`], while calls wait or run) and the stop
    /// ([`RunStop::StoppedByHook`]). Gives back the model it names, for the driver to use from the next
    /// model call on, and whether the conversation was replaced.
    pub fn apply(self, run: &mut AgentRun) -> (Option<Arc<dyn Model>>, bool) {
        if let Some(prompt) = self.system_prompt {
            run.set_system_prompt(prompt);
        }
        let replaced = match self.messages {
            Some(messages) => run.set_messages(messages),
            None => false,
        };
        if self.stop {
            run.stop(RunStop::StoppedByHook);
        }
        (self.model, replaced)
    }
}

impl std::fmt::Debug for TurnUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnUpdate").finish_non_exhaustive()
    }
}
