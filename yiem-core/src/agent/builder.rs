//! [`AgentBuilder`]: an [`Agent`]'s model, where its conversation starts, and its configuration.

use std::sync::{Arc, Mutex};

use super::{
    Agent, AgentConfig, AgentRun, AgentSettings, Shared, State, reapply_approvals, sampling,
};
use crate::llm::Model;
use crate::message::AgentMessage;

impl Agent {
    /// Starts building an agent.
    pub fn builder() -> AgentBuilder {
        AgentBuilder {
            config: AgentConfig::default(),
            model: None,
            messages: Vec::new(),
            run: None,
            conversation_id: None,
            sampling_by_own_model: false,
        }
    }
}

/// Builds an [`Agent`]: the model, where its conversation starts, and the [`AgentConfig`] (whose setters,
/// shared with the durable runner's builder, come from [`AgentSettings`]).
#[must_use]
pub struct AgentBuilder {
    config: AgentConfig,
    model: Option<Arc<dyn Model>>,
    messages: Vec<AgentMessage>,
    run: Option<AgentRun>,
    conversation_id: Option<String>,
    sampling_by_own_model: bool,
}

impl AgentSettings for AgentBuilder {
    fn settings(&mut self) -> &mut AgentConfig {
        &mut self.config
    }
}

impl AgentBuilder {
    /// The model. Required.
    pub fn model(mut self, model: impl Model + 'static) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    /// The model, already shared.
    pub fn shared_model(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// Lets the agent's tools ask its own model for a completion ([`ToolContext::sample`](crate::tool::ToolContext::sample)),
    /// within the run's accounts: what each request uses is added to the run's usage
    /// ([`AgentRun::usage`]), so the run's token limits ([`RunLimits`](super::RunLimits)) hold for it too
    /// (a run past them stops before its next model call). A handler given with
    /// [`AgentSettings::sampling`] is replaced.
    ///
    /// ```
    /// use yiem_core::{agent::Agent, llm::{ScriptedModel, ScriptedTurn}};
    ///
    /// let agent = Agent::builder()
    ///     .model(ScriptedModel::new([ScriptedTurn::text("hi")]))
    ///     .sampling_by_own_model()
    ///     .build();
    /// # let _ = agent;
    /// ```
    pub fn sampling_by_own_model(mut self) -> Self {
        self.sampling_by_own_model = true;
        self
    }

    /// Starts from an existing conversation.
    pub fn messages(mut self, messages: Vec<AgentMessage>) -> Self {
        self.messages = messages;
        self
    }

    /// Starts from a saved run (see [`Agent::run_state`]); its conversation and system prompt replace
    /// those given here, and [`Agent::resume`] goes on where it stopped. A run read without a valid tag
    /// ([`AgentRun::asks_again`]) waits for the calls this agent's approval policy asks about.
    pub fn run(mut self, run: AgentRun) -> Self {
        self.run = Some(run);
        self
    }

    /// The id of the conversation, on every run's `invoke_agent` span as `gen_ai.conversation.id`
    /// (see [`telemetry`](crate::telemetry)); by default a fresh UUID per agent.
    pub fn conversation_id(mut self, id: impl Into<String>) -> Self {
        self.conversation_id = Some(id.into());
        self
    }

    /// Builds the agent.
    ///
    /// # Panics
    ///
    /// If no model was given: that is a programming error, not a run-time condition.
    pub fn build(self) -> Agent {
        let model = self
            .model
            .expect("Agent::builder() needs .model(...) before .build()");
        let mut config = self.config;
        let sampled = self.sampling_by_own_model.then(Arc::default);
        if let Some(used) = &sampled {
            let sampler = sampling::counting_sampler(Arc::clone(&model), Arc::clone(used));
            config.executor = config.executor.clone().with_sampling(sampler);
        }
        #[cfg(feature = "code-mode")]
        config.install_code_mode();
        let run = self.run.map(|run| reapply_approvals(&config, run));
        let run = run.unwrap_or_else(|| {
            let mut run = AgentRun::new(config.system_prompt.clone(), self.messages);
            run.set_limits(config.limits);
            run.set_stop_at_tools(config.stop_at_tools.clone());
            run
        });
        Agent {
            shared: Arc::new(Shared {
                state: Mutex::new(State { model, run }),
                limits: Mutex::new(config.limits),
                config,
                sampled,
                conversation_id: self.conversation_id.unwrap_or_else(crate::id::fresh_uuid),
                run_lock: tokio::sync::Mutex::new(()),
                steering: Mutex::default(),
                follow_ups: Mutex::default(),
                current: Mutex::default(),
            }),
        }
    }
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder").finish_non_exhaustive()
    }
}
