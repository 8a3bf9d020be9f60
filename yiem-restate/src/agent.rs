//! [`DurableAgent`]: what a durable agent is made of — an [`AgentConfig`], the same value an in-process
//! agent is made of (system prompt, tools and their executor, approval policy, limits, stop rules, hooks),
//! plus what only a durable run has: the model made per conversation by a factory of the user's, the retry
//! policy of model steps and an observer of steps — and [`DurableAgentBuilder`], which puts it together
//! (its shared setters are [`AgentSettings`]'s).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use restate_sdk::context::RunRetryPolicy;
use restate_sdk::endpoint::Endpoint;
use yiem_core::{
    agent::{AgentConfig, AgentSettings},
    event::{AgentEvent, EventBus},
    llm::Model,
};

use crate::inbox::AgentInbox;
use crate::log::log_event;
use crate::step::StepDone;

type ModelFactory = dyn Fn(&str) -> Arc<dyn Model> + Send + Sync;
type StepObserver = dyn Fn(&StepDone) + Send + Sync;

pub(crate) struct Config {
    /// What the agent is made of, as for an in-process agent. Its executor is the one every batch of
    /// every conversation runs on, so its concurrency cap holds across them.
    pub(crate) agent: AgentConfig,
    pub(crate) model: Arc<ModelFactory>,
    pub(crate) model_retry: RunRetryPolicy,
    pub(crate) on_step: Option<Arc<StepObserver>>,
}

/// An agent that runs as a Restate virtual object (`Agent`, keyed by conversation id), every model call
/// and every tool call a journaled step. Bind it with [`endpoint`](Self::endpoint) and serve that with
/// restate-sdk's `HttpServer`; register the deployment with the Restate server, and call it through the
/// ingress. See the [crate docs](crate) for the handlers.
///
/// ```
/// use yiem_core::{agent::AgentSettings, llm::{ScriptedModel, ScriptedTurn}, store::ToolStore};
/// use yiem_restate::DurableAgent;
///
/// let agent = DurableAgent::builder()
///     .system_prompt("You keep notes.")
///     .model(|_conversation| ScriptedModel::from_fn(|_| ScriptedTurn::text("noted")))
///     .tools(ToolStore::new("notes"))
///     .build();
/// let endpoint = agent.endpoint();
/// # let _ = endpoint;
/// ```
#[derive(Clone)]
pub struct DurableAgent {
    pub(crate) config: Arc<Config>,
}

impl fmt::Debug for DurableAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableAgent")
            .field("config", &self.config.agent)
            .finish_non_exhaustive()
    }
}

impl DurableAgent {
    /// Starts building a durable agent.
    pub fn builder() -> DurableAgentBuilder {
        DurableAgentBuilder {
            config: AgentConfig::default(),
            model: None,
            model_retry: default_model_retry(),
            on_step: None,
            log_events: true,
        }
    }

    /// The Restate endpoint with the agent object (`Agent`) and its mailbox (`AgentInbox`, private to the
    /// ingress).
    pub fn endpoint(self) -> Endpoint {
        Endpoint::builder().bind(self).bind(AgentInbox).build()
    }

    /// The bus the agent's events go to (the same events as the in-process agent's).
    pub fn events(&self) -> &EventBus {
        self.config.agent.events()
    }
}

fn default_model_retry() -> RunRetryPolicy {
    RunRetryPolicy::new()
        .initial_delay(Duration::from_millis(100))
        .exponentiation_factor(2.0)
        .max_delay(Duration::from_secs(2))
        .max_attempts(4)
}

/// Builds a [`DurableAgent`]. Start with [`DurableAgent::builder`].
#[must_use]
pub struct DurableAgentBuilder {
    config: AgentConfig,
    model: Option<Arc<ModelFactory>>,
    model_retry: RunRetryPolicy,
    on_step: Option<Arc<StepObserver>>,
    log_events: bool,
}

impl AgentSettings for DurableAgentBuilder {
    fn settings(&mut self) -> &mut AgentConfig {
        &mut self.config
    }
}

impl DurableAgentBuilder {
    /// The model: `factory` gets the conversation id and gives the model for a run of it. It is called
    /// once per attempt of a run: when it starts, and again whenever it is replayed (after a crash, or
    /// resuming after a wait for approval, in whatever process), so the model must not depend on what it
    /// answered before in this process (a real model does not; a scripted one should be a function of
    /// the request, [`ScriptedModel::from_fn`](yiem_core::llm::ScriptedModel::from_fn)). Required.
    pub fn model<M: Model + 'static>(
        mut self,
        factory: impl Fn(&str) -> M + Send + Sync + 'static,
    ) -> Self {
        self.model = Some(Arc::new(move |key: &str| {
            Arc::new(factory(key)) as Arc<dyn Model>
        }));
        self
    }

    /// The model, from a factory of shared models.
    pub fn shared_model(
        mut self,
        factory: impl Fn(&str) -> Arc<dyn Model> + Send + Sync + 'static,
    ) -> Self {
        self.model = Some(Arc::new(factory));
        self
    }

    /// How a failed model step (a reply with stop reason `error`) is retried before the run stops with
    /// that error (default: 4 attempts, 100 ms doubling to at most 2 s). A tool's error result is a
    /// result the model reads, never a retry.
    pub fn model_retry(mut self, policy: RunRetryPolicy) -> Self {
        self.model_retry = policy;
        self
    }

    /// Calls `observer` after each step is durable (its result journaled and acknowledged by Restate),
    /// in step order, also for steps a replay returns from the journal.
    pub fn on_step(mut self, observer: impl Fn(&StepDone) + Send + Sync + 'static) -> Self {
        self.on_step = Some(Arc::new(observer));
        self
    }

    /// Calls `sink` with every event, inline and in order.
    pub fn on_event(self, sink: impl Fn(&AgentEvent) + Send + Sync + 'static) -> Self {
        self.config.events().on_event(sink);
        self
    }

    /// Whether events also go to `tracing` (target `yiem_restate::event`; default: yes).
    pub fn log_events(mut self, log: bool) -> Self {
        self.log_events = log;
        self
    }

    /// Builds the agent.
    ///
    /// # Panics
    ///
    /// If no model was given, or code mode was set (`.code_mode(...)`, which `yiem-core`'s `code-mode`
    /// feature offers) on a build of this crate without its own `code-mode` feature, which journals a
    /// program's calls: those are programming errors, not run-time conditions.
    pub fn build(self) -> DurableAgent {
        let model = self
            .model
            .expect("DurableAgent::builder() needs .model(...) before .build()");
        #[cfg(not(feature = "code-mode"))]
        if self.config.has_code_mode() {
            panic!(
                "this DurableAgent has code mode set, but yiem-restate was built without its \
                 `code-mode` feature, which runs it: add `features = [\"code-mode\"]` to the \
                 yiem-restate dependency"
            );
        }
        if self.log_events {
            self.config.events().on_event(log_event);
        }
        #[cfg(feature = "code-mode")]
        self.config.install_code_mode();
        DurableAgent {
            config: Arc::new(Config {
                agent: self.config,
                model,
                model_retry: self.model_retry,
                on_step: self.on_step,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    /// Its own `code-mode` feature off while yiem-core's is on (this crate's dev-dependencies turn it
    /// on): code mode set is refused, not left out unsaid.
    #[cfg(not(feature = "code-mode"))]
    #[test]
    #[should_panic(expected = "built without its `code-mode` feature")]
    fn code_mode_without_the_feature_that_runs_it_is_refused() {
        use yiem_core::code::CodeMode;
        use yiem_core::{
            agent::AgentSettings,
            llm::{ScriptedModel, ScriptedTurn},
        };
        let _ = super::DurableAgent::builder()
            .model(|_conversation| ScriptedModel::from_fn(|_| ScriptedTurn::text("hi")))
            .code_mode(CodeMode::new())
            .build();
    }
}
