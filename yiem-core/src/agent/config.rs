//! [`AgentConfig`]: what an agent is made of, whichever driver performs its runs — the system prompt, the
//! tools and how they run (an executor: hooks, default time limit, concurrency cap, batch mode, events),
//! the approval policy, the limits, the stop rules and the hooks around each turn — and [`AgentSettings`],
//! the one set of setters that the in-process [`AgentBuilder`](super::AgentBuilder), the durable runner's
//! builder and `AgentConfig` itself share.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::limits::RunLimits;
use super::{AgentContext, NextTurnContext, TurnUpdate};
use crate::approval::ApprovalPolicy;
use crate::call::ToolCall;
use crate::catalog::RequestTools;
use crate::event::EventBus;
use crate::exec::executor::{BatchMode, ToolExecutor};
use crate::exec::hooks::ToolHooks;
use crate::llm::{ModelRequest, ToolChoice};
use crate::store::registry::ToolStore;

pub(crate) type PrepareContext = Arc<dyn Fn(&mut AgentContext) + Send + Sync>;
pub(crate) type PrepareNextTurn = Arc<dyn Fn(&NextTurnContext) -> Option<TurnUpdate> + Send + Sync>;

/// What an agent is made of, whichever driver performs its runs. One value feeds both the in-process
/// [`Agent`](crate::agent::Agent) and the durable runner of `yiem-restate`; the setters are those of
/// [`AgentSettings`].
///
/// ```
/// use yiem_core::{agent::{AgentConfig, AgentSettings}, store::ToolStore};
///
/// let config = AgentConfig::new()
///     .system_prompt("You are terse.")
///     .tools(ToolStore::new("demo"))
///     .require_approval(["bash"])
///     .max_turns(Some(10));
/// assert_eq!(config.system_prompt_text(), "You are terse.");
/// assert_eq!(config.run_limits().max_turns, Some(10));
/// ```
#[derive(Clone)]
pub struct AgentConfig {
    pub(crate) system_prompt: String,
    pub(crate) tools: ToolStore,
    pub(crate) executor: ToolExecutor,
    pub(crate) approval: ApprovalPolicy,
    pub(crate) limits: RunLimits,
    pub(crate) stop_at_tools: Vec<String>,
    pub(crate) prepare_context: Option<PrepareContext>,
    pub(crate) prepare_next_turn: Option<PrepareNextTurn>,
    pub(crate) tool_choice: Option<ToolChoice>,
    #[cfg(feature = "code-mode")]
    pub(crate) code_mode: Option<crate::code::CodeMode>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            system_prompt: "You are a helpful assistant.".into(),
            tools: ToolStore::new("agent"),
            executor: ToolExecutor::new(),
            approval: ApprovalPolicy::default(),
            limits: RunLimits::default(),
            stop_at_tools: Vec::new(),
            prepare_context: None,
            prepare_next_turn: None,
            tool_choice: None,
            #[cfg(feature = "code-mode")]
            code_mode: None,
        }
    }
}

impl AgentConfig {
    /// The defaults: "You are a helpful assistant.", no tools, tools decide how their batch runs, the
    /// tools' own approvals, [`RunLimits::default`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The system prompt.
    pub fn system_prompt_text(&self) -> &str {
        &self.system_prompt
    }

    /// The tools.
    pub fn tool_store(&self) -> &ToolStore {
        &self.tools
    }

    /// The executor every batch of the agent runs on: one for all its runs, so its concurrency cap and
    /// its order hold across them.
    pub fn executor(&self) -> &ToolExecutor {
        &self.executor
    }

    /// The bus the agent's events go to.
    pub fn events(&self) -> &EventBus {
        self.executor.events()
    }

    /// The limits of each run.
    pub fn run_limits(&self) -> RunLimits {
        self.limits
    }

    /// The tools whose result ends a run.
    pub fn stop_tools(&self) -> &[String] {
        &self.stop_at_tools
    }

    /// Why `call` waits for a person, if it does: its tool among `offered` asks for approval, or the
    /// policy says so. A call of a tool that is not offered waits for nothing (it gets an error result).
    ///
    /// The policy sees the arguments the tool will run with: decoded from a JSON string and through the
    /// tool's `prepare` step, by the same function the call's own path uses. (Arguments that do not decode
    /// are shown as they came; the call then ends with an error result and runs nothing.)
    pub fn needs_approval(&self, offered: &ToolStore, call: &ToolCall) -> Option<String> {
        let tool = offered.get(&call.name)?;
        self.approval.waits(call, &tool, &[])
    }

    /// What the model sees next — the system prompt, the conversation and the tools — after
    /// `prepare_context`, and the store of the tools it offers (the only ones that can run this turn).
    pub fn context(
        &self,
        system_prompt: &str,
        messages: &[crate::message::AgentMessage],
    ) -> (AgentContext, ToolStore) {
        let mut context = AgentContext {
            system_prompt: system_prompt.to_owned(),
            messages: messages.to_vec(),
            tools: self.tools.tools(),
        };
        match &self.prepare_context {
            Some(prepare) => {
                prepare(&mut context);
                let offered = self.tools.offering(&context.tools);
                (context, offered)
            }
            None => (context, self.tools.clone()),
        }
    }

    /// The tool lists of a request made from `context` when the model has reached `loaded`
    /// ([`AgentRun::loaded_tools`](crate::agent::AgentRun::loaded_tools)): the tools sent and the deferred ones
    /// not found yet (see [`catalog`](crate::catalog)). Without `prepare_context` they are the store's
    /// own, made once per store version and set of loaded tools, their serialized text shared by every
    /// request until either changes.
    ///
    /// With code mode, `run_code` among the tools sent declares the callable tools sent with it: the
    /// deferred ones only once loaded, and those registered after the agent was built.
    pub fn request_tools(&self, context: &AgentContext, loaded: &[String]) -> RequestTools {
        #[cfg_attr(not(feature = "code-mode"), allow(unused_mut))]
        let mut lists = if self.prepare_context.is_some() {
            RequestTools::of_offered(&self.tools, &context.tools, loaded)
        } else {
            RequestTools::of(&self.tools, loaded)
        };
        #[cfg(feature = "code-mode")]
        if let Some(mode) = &self.code_mode {
            lists.tools = mode.declare_in(&lists.tools);
        }
        lists
    }

    /// The tool choice of every model request (see [`AgentSettings::tool_choice`]); `None` leaves it to
    /// the model's provider configuration.
    pub fn tool_choice_setting(&self) -> Option<&ToolChoice> {
        self.tool_choice.as_ref()
    }

    /// The model request made from `context` (what [`context`](Self::context) returned) when the model
    /// has reached `loaded`: its prompt, its conversation, its tools
    /// ([`request_tools`](Self::request_tools)) and the agent's tool choice. Every driver asks the model
    /// with it.
    pub fn model_request(&self, context: AgentContext, loaded: &[String]) -> ModelRequest {
        let RequestTools { tools, deferred } = self.request_tools(&context, loaded);
        ModelRequest {
            tools,
            deferred,
            system_prompt: context.system_prompt,
            messages: context.messages,
            tool_choice: self.tool_choice.clone(),
        }
    }

    /// What `prepare_next_turn` makes of a finished turn, if there is such a hook and it has something to
    /// say.
    pub fn next_turn(&self, context: &NextTurnContext) -> Option<TurnUpdate> {
        self.prepare_next_turn
            .as_ref()
            .and_then(|hook| hook(context))
    }

    /// Whether a `prepare_next_turn` hook is set.
    pub fn has_next_turn_hook(&self) -> bool {
        self.prepare_next_turn.is_some()
    }

    /// Whether code mode is set (always `false` without the `code-mode` feature): a driver that cannot
    /// run it refuses such a configuration rather than leave `run_code` out unsaid.
    #[cfg(feature = "code-mode")]
    pub fn has_code_mode(&self) -> bool {
        self.code_mode.is_some()
    }

    /// Whether code mode is set (always `false` without the `code-mode` feature): a driver that cannot
    /// run it refuses such a configuration rather than leave `run_code` out unsaid.
    #[cfg(not(feature = "code-mode"))]
    pub fn has_code_mode(&self) -> bool {
        false
    }

    /// The code mode set with [`AgentSettings::code_mode`], if any.
    #[cfg(feature = "code-mode")]
    pub fn code_mode_setting(&self) -> Option<&crate::code::CodeMode> {
        self.code_mode.as_ref()
    }

    /// The executor to run the batch `run` is about to run (`plan`, its [`Step::RunTools`](crate::agent::Step))
    /// on: `executor`, its `run_code` calls readied — a program that paused for approval resumes with
    /// its recorded calls and the decisions, and every program knows the tools the run approved for the
    /// rest of it. What it readies is this batch's alone, so runs that share the configuration never
    /// take each other's programs. Every driver runs its batches on it; without code mode it is
    /// `executor` itself.
    #[cfg(feature = "code-mode")]
    pub fn ready_programs(
        &self,
        executor: &ToolExecutor,
        run: &crate::agent::AgentRun,
        plan: &[crate::decision::PlannedCall],
    ) -> ToolExecutor {
        match &self.code_mode {
            Some(mode) => executor.resuming_programs(mode.ready(
                plan,
                run.program_resumes(),
                run.always_approved(),
            )),
            None => executor.clone(),
        }
    }

    /// Adds the `run_code` tool of the code mode, if one is set, to the tools (replacing one registered
    /// before): its programs call the tools through a fresh copy of the executor (same hooks, events and
    /// time limit) and wait for approvals as this configuration's policy says. A driver calls it once,
    /// when it is built.
    #[cfg(feature = "code-mode")]
    pub fn install_code_mode(&self) {
        if let Some(mode) = &self.code_mode {
            self.tools.remove(crate::code::RUN_CODE);
            let tool = mode.tool(&self.tools, self.executor.fresh(), self.approval.clone());
            let _ = self.tools.register(tool);
        }
    }
}

impl fmt::Debug for AgentConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentConfig")
            .field("system_prompt", &self.system_prompt)
            .field("tools", &self.tools.names())
            .field("executor", &self.executor)
            .field("limits", &self.limits)
            .field("stop_at_tools", &self.stop_at_tools)
            .field("prepare_context", &self.prepare_context.is_some())
            .field("prepare_next_turn", &self.prepare_next_turn.is_some())
            .field("tool_choice", &self.tool_choice)
            .finish_non_exhaustive()
    }
}

/// The setters of an [`AgentConfig`], written once and shared by every builder of an agent: `AgentConfig`
/// itself, [`Agent::builder`](crate::agent::Agent::builder) and the durable runner's builder. In scope through
/// `use yiem_core::agent::AgentSettings` (or the [`prelude`](crate::prelude)).
///
/// ```
/// use yiem_core::{agent::{Agent, AgentSettings}, llm::ScriptedModel};
///
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([]))
///     .require_approval(["bash", "write"])
///     .build();
/// # let _ = agent;
/// ```
pub trait AgentSettings: Sized {
    /// The settings being built: what a builder implements to get the setters.
    fn settings(&mut self) -> &mut AgentConfig;

    /// Every setting at once, replacing those set so far.
    fn config(mut self, config: AgentConfig) -> Self {
        *self.settings() = config;
        self
    }

    /// The system prompt (default: "You are a helpful assistant.").
    fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.settings().system_prompt = prompt.into();
        self
    }

    /// The tools (a handle to `store`: tools registered there later are offered from the next turn on).
    fn tools(mut self, store: ToolStore) -> Self {
        self.settings().tools = store;
        self
    }

    /// Runs every batch sequentially, or lets tools decide (the default).
    fn tool_execution(mut self, mode: BatchMode) -> Self {
        let settings = self.settings();
        settings.executor = settings.executor.clone().with_mode(mode);
        self
    }

    /// The time limit of tool calls whose tool sets none.
    fn default_tool_timeout(mut self, limit: Duration) -> Self {
        let settings = self.settings();
        settings.executor = settings.executor.clone().with_default_timeout(limit);
        self
    }

    /// At most `calls` tool calls run at once, across the agent's runs; results still come back in call
    /// order.
    fn max_concurrent_tool_calls(mut self, calls: usize) -> Self {
        let settings = self.settings();
        settings.executor = settings.executor.clone().with_max_concurrent_calls(calls);
        self
    }

    /// `before_tool_call` and `after_tool_call`.
    fn tool_hooks(mut self, hooks: ToolHooks) -> Self {
        let settings = self.settings();
        settings.executor = settings.executor.clone().with_hooks(hooks);
        self
    }

    /// Answers the questions the agent's tools ask ([`ToolContext::elicit`](crate::tool::ToolContext::elicit))
    /// with `handler`, which reaches the person however the program can (a terminal, a UI). The run
    /// does not pause while the handler works: it is one await inside the call, under the call's time
    /// limit. Without one, an in-process [`Agent`](crate::agent::Agent) pauses on the question as on an
    /// approval ([`RunStop::AwaitingAnswer`](crate::agent::RunStop::AwaitingAnswer), answered with
    /// [`Agent::answer`](crate::agent::Agent::answer)), and so does the durable runner of `yiem-restate`; a
    /// bare [`ToolExecutor`](crate::exec::ToolExecutor) without one gives the tool
    /// [`ElicitError::CannotAsk`](crate::ask::ElicitError).
    fn elicitation(mut self, handler: impl crate::ask::elicit::ElicitationHandler) -> Self {
        let settings = self.settings();
        settings.executor = settings.executor.clone().with_elicitation(handler);
        self
    }

    /// Answers the agent's tools' requests for a completion
    /// ([`ToolContext::sample`](crate::tool::ToolContext::sample)) with `handler`; `llm::model_sampler(model)`
    /// lets them ask the agent's own model. Without one, such a request is
    /// [`ElicitError::CannotAsk`](crate::ask::ElicitError). Like a question, it is one await inside the call,
    /// under the call's time limit.
    fn sampling(mut self, handler: impl crate::ask::sample::SamplingHandler) -> Self {
        let settings = self.settings();
        settings.executor = settings.executor.clone().with_sampling(handler);
        self
    }

    /// Runs before each model call: filter tools, edit the prompt or the messages.
    fn prepare_context(mut self, hook: impl Fn(&mut AgentContext) + Send + Sync + 'static) -> Self {
        self.settings().prepare_context = Some(Arc::new(hook));
        self
    }

    /// Runs after each turn: may change the prompt, the conversation or the model, or stop the run.
    fn prepare_next_turn(
        mut self,
        hook: impl Fn(&NextTurnContext) -> Option<TurnUpdate> + Send + Sync + 'static,
    ) -> Self {
        self.settings().prepare_next_turn = Some(Arc::new(hook));
        self
    }

    /// Decides which calls wait for approval (default: those whose tool says it needs approval).
    fn approval_policy(mut self, policy: ApprovalPolicy) -> Self {
        self.settings().approval = policy;
        self
    }

    /// Calls of these tools wait for approval, beside those whose tool asks for it.
    fn require_approval(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.settings().approval = ApprovalPolicy::for_tools(tools);
        self
    }

    /// The limits of each run (default: [`RunLimits::default`], 50 model calls).
    fn limits(mut self, limits: RunLimits) -> Self {
        self.settings().limits = limits;
        self
    }

    /// At most `turns` model calls per run (`None` lifts the limit).
    fn max_turns(mut self, turns: Option<u32>) -> Self {
        self.settings().limits.max_turns = turns;
        self
    }

    /// Which tools the model may or must call, in every request of the agent's runs, whatever its
    /// provider: it overrides the provider configuration's own (`.tool_choice(..)`), which stays the
    /// default. [`ToolChoice`] says how each provider takes each choice.
    ///
    /// ```
    /// use yiem_core::llm::ToolChoice;
    /// use yiem_core::agent::{AgentConfig, AgentSettings};
    ///
    /// let config = AgentConfig::new().tool_choice(ToolChoice::Allowed {
    ///     tools: vec!["search".into(), "read".into()],
    ///     required: true,
    /// });
    /// assert!(matches!(config.tool_choice_setting(), Some(ToolChoice::Allowed { .. })));
    /// ```
    fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.settings().tool_choice = Some(choice);
        self
    }

    /// Gives the model the `run_code` tool: it writes one program that calls many tools, each call
    /// through the pipeline, with approvals inside the program (see [`crate::code`]). The tool is added
    /// to the store when the agent is built; in each request it declares the callable tools that request
    /// sends ([`request_tools`](AgentConfig::request_tools)).
    #[cfg(feature = "code-mode")]
    fn code_mode(mut self, mode: crate::code::CodeMode) -> Self {
        self.settings().code_mode = Some(mode);
        self
    }

    /// Ends a run after a result of any of these tools, with that result as the run's output
    /// ([`RunStop::StoppedAtTool`](crate::agent::RunStop::StoppedAtTool)).
    fn stop_at_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.settings().stop_at_tools = tools.into_iter().map(Into::into).collect();
        self
    }
}

impl AgentSettings for AgentConfig {
    fn settings(&mut self) -> &mut AgentConfig {
        self
    }
}
