//! [`DurableAgent`]: what a durable agent is made of — the system prompt, the model (made per
//! conversation by a factory of the user's), the tools, the tool hooks, the events, the approval policy,
//! the limits and the retry policy of model steps — and [`DurableAgentBuilder`], which puts it together.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use restate_sdk::context::RunRetryPolicy;
use restate_sdk::endpoint::Endpoint;
use yiem_core::{
    AgentEvent, ApprovalPolicy, EventBus, Model, RunLimits, ToolExecutor, ToolHooks, ToolStore,
};

use crate::inbox::AgentInbox;
use crate::log::log_event;
use crate::step::StepDone;

type ModelFactory = dyn Fn(&str) -> Arc<dyn Model> + Send + Sync;
type StepObserver = dyn Fn(&StepDone) + Send + Sync;

pub(crate) struct Config {
    pub(crate) system_prompt: String,
    pub(crate) model: Arc<ModelFactory>,
    pub(crate) tools: ToolStore,
    pub(crate) hooks: ToolHooks,
    pub(crate) default_tool_timeout: Option<Duration>,
    pub(crate) events: EventBus,
    pub(crate) approval: ApprovalPolicy,
    pub(crate) limits: RunLimits,
    pub(crate) model_retry: RunRetryPolicy,
    pub(crate) on_step: Option<Arc<StepObserver>>,
}

/// An agent that runs as a Restate virtual object (`Agent`, keyed by conversation id), every model call
/// and every tool call a journaled step. Bind it with [`endpoint`](Self::endpoint) and serve that with
/// restate-sdk's `HttpServer`; register the deployment with the Restate server, and call it through the
/// ingress. See the [crate docs](crate) for the handlers.
///
/// ```
/// use yiem_core::{ScriptedModel, ScriptedTurn, ToolStore};
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
            .field("system_prompt", &self.config.system_prompt)
            .field("tools", &self.config.tools.names())
            .finish_non_exhaustive()
    }
}

impl DurableAgent {
    /// Starts building a durable agent.
    pub fn builder() -> DurableAgentBuilder {
        DurableAgentBuilder {
            system_prompt: "You are a helpful assistant.".into(),
            model: None,
            tools: ToolStore::new("agent"),
            hooks: ToolHooks::default(),
            default_tool_timeout: None,
            events: EventBus::new(),
            approval: ApprovalPolicy::default(),
            limits: RunLimits::default(),
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
        &self.config.events
    }
}

impl Config {
    /// An executor for one tool step. Each step has its own: the calls of one run go one after another
    /// anyway, and a call in one conversation must never wait for a call in another.
    pub(crate) fn executor(&self) -> ToolExecutor {
        let executor = ToolExecutor::new()
            .with_hooks(self.hooks.clone())
            .with_events(self.events.clone());
        match self.default_tool_timeout {
            Some(limit) => executor.with_default_timeout(limit),
            None => executor,
        }
    }
}

/// A failed model step is tried again after 100 ms, then 200 ms, 400 ms (doubling, at most 2 s), at
/// most 4 attempts in all; then the run stops with the model's error.
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
    system_prompt: String,
    model: Option<Arc<ModelFactory>>,
    tools: ToolStore,
    hooks: ToolHooks,
    default_tool_timeout: Option<Duration>,
    events: EventBus,
    approval: ApprovalPolicy,
    limits: RunLimits,
    model_retry: RunRetryPolicy,
    on_step: Option<Arc<StepObserver>>,
    log_events: bool,
}

impl DurableAgentBuilder {
    /// The system prompt of new conversations (default: "You are a helpful assistant.").
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// The model: `factory` gets the conversation id and gives the model for a run of it. It is called
    /// once per run and again in every process that replays it, so the model must not depend on what it
    /// answered before in this process (a real model does not; a scripted one should be a function of
    /// the request, [`ScriptedModel::from_fn`](yiem_core::ScriptedModel::from_fn)). Required.
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

    /// The tools.
    pub fn tools(mut self, store: ToolStore) -> Self {
        self.tools = store;
        self
    }

    /// `before_tool_call` and `after_tool_call`, as for the in-process agent. They run inside a tool's
    /// step, so a replayed step does not run them again.
    pub fn tool_hooks(mut self, hooks: ToolHooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// The time limit of tool calls whose tool sets none.
    pub fn default_tool_timeout(mut self, limit: Duration) -> Self {
        self.default_tool_timeout = Some(limit);
        self
    }

    /// Decides which calls wait for approval (default: those whose tool says it needs approval).
    pub fn approval_policy(mut self, policy: ApprovalPolicy) -> Self {
        self.approval = policy;
        self
    }

    /// Calls of these tools wait for approval, beside those whose tool asks for it.
    pub fn require_approval(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.approval = ApprovalPolicy::for_tools(tools);
        self
    }

    /// The limits of each run (default: [`RunLimits::default`], 50 model calls).
    pub fn limits(mut self, limits: RunLimits) -> Self {
        self.limits = limits;
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
        self.events.on_event(sink);
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
    /// If no model was given: that is a programming error, not a run-time condition.
    pub fn build(self) -> DurableAgent {
        let model = self
            .model
            .expect("DurableAgent::builder() needs .model(...) before .build()");
        if self.log_events {
            self.events.on_event(log_event);
        }
        DurableAgent {
            config: Arc::new(Config {
                system_prompt: self.system_prompt,
                model,
                tools: self.tools,
                hooks: self.hooks,
                default_tool_timeout: self.default_tool_timeout,
                events: self.events,
                approval: self.approval,
                limits: self.limits,
                model_retry: self.model_retry,
                on_step: self.on_step,
            }),
        }
    }
}
