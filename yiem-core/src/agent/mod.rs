//! [`Agent`]: keeps the conversation, asks the model, executes the tool calls it returns, feeds the results
//! back, and loops until the model answers without tool calls, a batch terminates, a limit is reached or a
//! call waits for approval. It is a thin driver over the step machine in [`AgentRun`], which holds the
//! run's whole state as a serializable value.
//!
//! # Queues
//!
//! One run at a time. [`Agent::prompt`] while a run is active waits its turn (first come, first served)
//! and is never lost. [`Agent::steer`] injects a message after the current turn (its tool calls still
//! finish) and before the next model call. [`Agent::follow_up`] runs when the agent would otherwise stop;
//! follow-ups sent while idle wait for the end of the next run. [`Agent::abort`] cancels the current run:
//! a model stream stops, running tools are cancelled, and every tool call still gets a result. Dropping
//! the future of `prompt` (a caller's timeout, say) aborts the same way: every call of a running batch
//! gets an error result, the conversation stays valid for the next request, and the run can be resumed.
//!
//! # Approvals, limits, resuming
//!
//! A call whose tool needs approval ([`AgentTool::needs_approval`], or an [`ApprovalPolicy`]) pauses the
//! run before any call of its batch runs; [`Agent::prompt`] returns with
//! [`RunStop::AwaitingApproval`]. [`Agent::resume`] with a [`Decision`] per call goes on. A run stops at
//! its [`RunLimits`] (50 model calls by default) with a distinct [`RunStop`]; raise the limit with
//! [`Agent::set_limits`] and resume. [`Agent::run_state`] is the run as a value: save it as JSON, and
//! [`Agent::restore`] it into an agent with the same tools and model, in this process or another.
//!
//! # Events
//!
//! A call of `prompt` or `resume` emits, in order: `AgentStart`, `TurnStart`, `MessageStart`/`MessageEnd`
//! for each prompt, then per turn (its `TurnStart` first, but for the first turn's, which came already)
//! `MessageStart`, `MessageUpdate`s and `MessageEnd` for the assistant
//! message, the tool events of its calls (see [`ToolExecutor`]) and `TurnEnd`; finally `AgentEnd` with
//! every message it added. Every turn has its `TurnStart` and its `TurnEnd` (the seeds' trace lists only
//! the first `turn_start`; pi-agent-core emits one per turn, and so does yiem). A turn that waits for
//! approval ends when its batch has run, after the resume.

mod approval;
mod limits;
mod run;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

pub use approval::{ApprovalPolicy, Decision, PendingApproval, ResumeError};
pub use limits::{DEFAULT_MAX_TURNS, RunLimits};
pub use run::{AgentRun, RUN_FORMAT_VERSION, RunStop, Step};

use crate::call::ToolResultMessage;
use crate::event::{AgentEvent, EventBus, EventStream};
use crate::executor::{BatchMode, PlannedCall, ToolExecutor};
use crate::hooks::ToolHooks;
use crate::llm::{Model, ModelRequest, stream_reply};
use crate::message::{AgentMessage, AssistantMessage, StopReason, UserMessage};
use crate::registry::{ToolList, ToolStore};
use crate::tool::AgentTool;

/// What the model will see on its next call; `prepare_context` may change any of it.
#[derive(Clone, Debug)]
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
pub struct NextTurnContext {
    /// The turn's assistant message.
    pub message: AssistantMessage,
    /// The results of its tool calls.
    pub tool_results: Vec<ToolResultMessage>,
    /// The whole conversation.
    pub messages: Vec<AgentMessage>,
}

/// Changes `prepare_next_turn` makes before the next model call; `None` keeps a field as it is.
#[derive(Clone, Default)]
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

/// What one call of [`Agent::prompt`] or [`Agent::resume`] did: the messages it added and why the run
/// stopped.
///
/// ```
/// use yiem_core::{Agent, RunStop, ScriptedModel, ScriptedTurn};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let agent = Agent::builder().model(ScriptedModel::new([ScriptedTurn::text("hi")])).build();
/// let outcome = agent.prompt("hello").await;
/// assert_eq!(outcome.stop, RunStop::Finished);
/// assert_eq!(outcome.messages.len(), 2); // the prompt and the answer
/// assert_eq!(outcome.text(), "hi");
/// # });
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RunOutcome {
    /// The messages this call added, in order.
    pub messages: Vec<AgentMessage>,
    /// Why the run stopped.
    pub stop: RunStop,
}

impl RunOutcome {
    /// The text of the last assistant message this call added (empty if none).
    pub fn text(&self) -> String {
        AgentMessage::last_assistant_text(&self.messages)
    }

    /// The calls waiting for a decision (empty unless the run waits for approvals).
    pub fn pending_approvals(&self) -> &[PendingApproval] {
        match &self.stop {
            RunStop::AwaitingApproval { pending } => pending,
            _ => &[],
        }
    }
}

type PrepareContext = Arc<dyn Fn(&mut AgentContext) + Send + Sync>;
type PrepareNextTurn = Arc<dyn Fn(&NextTurnContext) -> Option<TurnUpdate> + Send + Sync>;

/// Builds an [`Agent`]. Start with [`Agent::builder`].
#[must_use]
pub struct AgentBuilder {
    system_prompt: String,
    model: Option<Arc<dyn Model>>,
    tools: ToolStore,
    executor: ToolExecutor,
    prepare_context: Option<PrepareContext>,
    prepare_next_turn: Option<PrepareNextTurn>,
    messages: Vec<AgentMessage>,
    approval: ApprovalPolicy,
    limits: RunLimits,
    stop_at_tools: Vec<String>,
    run: Option<AgentRun>,
}

impl AgentBuilder {
    /// The system prompt (default: "You are a helpful assistant.").
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

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

    /// The tools (a handle to `store`: tools registered there later are offered from the next turn on).
    pub fn tools(mut self, store: ToolStore) -> Self {
        self.tools = store;
        self
    }

    /// Runs every batch sequentially, or lets tools decide (the default).
    pub fn tool_execution(mut self, mode: BatchMode) -> Self {
        self.executor = self.executor.with_mode(mode);
        self
    }

    /// The time limit of tool calls whose tool sets none.
    pub fn default_tool_timeout(mut self, limit: std::time::Duration) -> Self {
        self.executor = self.executor.with_default_timeout(limit);
        self
    }

    /// At most `calls` tool calls run at once; results still come back in call order.
    pub fn max_concurrent_tool_calls(mut self, calls: usize) -> Self {
        self.executor = self.executor.with_max_concurrent_calls(calls);
        self
    }

    /// `before_tool_call` and `after_tool_call`.
    pub fn tool_hooks(mut self, hooks: ToolHooks) -> Self {
        self.executor = self.executor.with_hooks(hooks);
        self
    }

    /// Runs before each model call: filter tools, edit the prompt or the messages.
    pub fn prepare_context(
        mut self,
        hook: impl Fn(&mut AgentContext) + Send + Sync + 'static,
    ) -> Self {
        self.prepare_context = Some(Arc::new(hook));
        self
    }

    /// Runs after each turn: may change the prompt, the conversation or the model, or stop the run.
    pub fn prepare_next_turn(
        mut self,
        hook: impl Fn(&NextTurnContext) -> Option<TurnUpdate> + Send + Sync + 'static,
    ) -> Self {
        self.prepare_next_turn = Some(Arc::new(hook));
        self
    }

    /// Starts from an existing conversation.
    pub fn messages(mut self, messages: Vec<AgentMessage>) -> Self {
        self.messages = messages;
        self
    }

    /// Decides which calls wait for approval (default: those whose tool says it needs approval).
    pub fn approval_policy(mut self, policy: ApprovalPolicy) -> Self {
        self.approval = policy;
        self
    }

    /// Calls of these tools wait for approval, beside those whose tool asks for it.
    ///
    /// ```
    /// use yiem_core::{Agent, ScriptedModel};
    ///
    /// let agent = Agent::builder().model(ScriptedModel::new([])).require_approval(["bash", "write"]).build();
    /// # let _ = agent;
    /// ```
    pub fn require_approval(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.approval = ApprovalPolicy::for_tools(tools);
        self
    }

    /// The limits of each run (default: [`RunLimits::default`], 50 model calls).
    pub fn limits(mut self, limits: RunLimits) -> Self {
        self.limits = limits;
        self
    }

    /// At most `turns` model calls per run (`None` lifts the limit).
    pub fn max_turns(mut self, turns: Option<u32>) -> Self {
        self.limits.max_turns = turns;
        self
    }

    /// Ends a run after a result of any of these tools, with that result as the run's output
    /// ([`RunStop::StoppedAtTool`]).
    pub fn stop_at_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.stop_at_tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Starts from a saved run (see [`Agent::run_state`]); its conversation and system prompt replace
    /// those given here, and [`Agent::resume`] goes on where it stopped.
    pub fn run(mut self, run: AgentRun) -> Self {
        self.run = Some(run);
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
        let run = self.run.unwrap_or_else(|| {
            let mut run = AgentRun::new(self.system_prompt, self.messages);
            run.set_limits(self.limits);
            run.set_stop_at_tools(self.stop_at_tools.clone());
            run
        });
        Agent {
            shared: Arc::new(Shared {
                state: Mutex::new(State { model, run }),
                tools: self.tools,
                executor: self.executor,
                prepare_context: self.prepare_context,
                prepare_next_turn: self.prepare_next_turn,
                approval: self.approval,
                settings: Mutex::new(Settings {
                    limits: self.limits,
                    stop_at_tools: self.stop_at_tools,
                }),
                run_lock: tokio::sync::Mutex::new(()),
                steering: Mutex::default(),
                follow_ups: Mutex::default(),
                current: Mutex::default(),
            }),
        }
    }
}

struct State {
    model: Arc<dyn Model>,
    run: AgentRun,
}

/// What each new run starts with.
struct Settings {
    limits: RunLimits,
    stop_at_tools: Vec<String>,
}

struct Shared {
    state: Mutex<State>,
    tools: ToolStore,
    executor: ToolExecutor,
    prepare_context: Option<PrepareContext>,
    prepare_next_turn: Option<PrepareNextTurn>,
    approval: ApprovalPolicy,
    settings: Mutex<Settings>,
    run_lock: tokio::sync::Mutex<()>,
    steering: Mutex<VecDeque<UserMessage>>,
    follow_ups: Mutex<VecDeque<UserMessage>>,
    current: Mutex<Option<CancellationToken>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// An agent: a model, tools and a conversation. Cloning gives another handle to the same agent, so one
/// task can `steer` or `abort` while another awaits `prompt`.
///
/// ```
/// use serde_json::json;
/// use yiem_core::{Agent, AgentMessage, RunStop, ScriptedModel, ScriptedTurn, ToolStore, tool};
///
/// /// Read a file.
/// #[tool]
/// async fn read_file() -> &'static str {
///     "hello from text.txt"
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mut tools = ToolStore::new("demo");
/// tools.register(read_file_tool()).unwrap();
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([
///         ScriptedTurn::tool_call("read_file", json!({})),
///         ScriptedTurn::text("It says hello."),
///     ]))
///     .tools(tools)
///     .build();
/// let outcome = agent.prompt("what is in text.txt?").await;
/// assert_eq!(outcome.stop, RunStop::Finished);
/// // user, assistant (tool call), tool result, assistant (answer)
/// assert_eq!(outcome.messages.len(), 4);
/// assert_eq!(outcome.text(), "It says hello.");
/// # });
/// ```
///
/// A run that waits for approval, saved and resumed:
///
/// ```
/// use serde_json::json;
/// use yiem_core::{Agent, AgentRun, Decision, RunStop, ScriptedModel, ScriptedTurn, ToolStore, tool};
///
/// /// Delete a file.
/// #[tool]
/// async fn delete() -> &'static str {
///     "deleted"
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let tools = || {
///     let mut tools = ToolStore::new("demo");
///     tools.register(delete_tool()).unwrap();
///     tools
/// };
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([ScriptedTurn::tool_call("delete", json!({}))]))
///     .tools(tools())
///     .require_approval(["delete"])
///     .build();
/// let outcome = agent.prompt("delete it").await;
/// let call_id = outcome.pending_approvals()[0].call_id.clone();
/// let saved = agent.run_state().to_json();
///
/// // Later, anywhere: the same tools and model, and the saved run.
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([ScriptedTurn::text("Done.")]))
///     .tools(tools())
///     .run(AgentRun::from_json(&saved).unwrap())
///     .build();
/// let outcome = agent.resume([(call_id, Decision::Approve)]).await.unwrap();
/// assert_eq!(outcome.stop, RunStop::Finished);
/// assert_eq!(outcome.text(), "Done.");
/// # });
/// ```
#[derive(Clone)]
pub struct Agent {
    shared: Arc<Shared>,
}

impl Agent {
    /// Starts building an agent.
    pub fn builder() -> AgentBuilder {
        AgentBuilder {
            system_prompt: "You are a helpful assistant.".into(),
            model: None,
            tools: ToolStore::new("agent"),
            executor: ToolExecutor::new(),
            prepare_context: None,
            prepare_next_turn: None,
            messages: Vec::new(),
            approval: ApprovalPolicy::default(),
            limits: RunLimits::default(),
            stop_at_tools: Vec::new(),
            run: None,
        }
    }

    /// Sends `text` as a user message and runs until the agent stops; returns what the run added and why
    /// it stopped. If a run is active, this one waits for it (and any prompt sent earlier) to finish first.
    pub async fn prompt(&self, text: impl Into<String>) -> RunOutcome {
        self.prompt_messages(vec![UserMessage::text(text)]).await
    }

    /// Like [`prompt`](Self::prompt), with messages of your own. A run that was waiting for approvals
    /// is given up: its waiting calls get a "not run" result first, so the conversation stays valid.
    pub async fn prompt_messages(&self, prompts: Vec<UserMessage>) -> RunOutcome {
        let _turn = self.shared.run_lock.lock().await;
        let settings = {
            let settings = lock(&self.shared.settings);
            (settings.limits, settings.stop_at_tools.clone())
        };
        {
            let mut state = lock(&self.shared.state);
            let run = &mut state.run;
            give_up_waiting(run);
            run.set_limits(settings.0);
            run.set_stop_at_tools(settings.1);
        }
        self.drive(Some(prompts)).await
    }

    /// Goes on with a run that stopped: answers its pending approvals with `decisions` (by call id), or
    /// continues one a limit, an abort or a model error stopped (give no decisions). Waits for an active
    /// run to finish first. An error — a decision for a call that is not waiting, a finished run — leaves
    /// the run as it was.
    pub async fn resume(
        &self,
        decisions: impl IntoIterator<Item = (impl Into<String>, Decision)>,
    ) -> Result<RunOutcome, ResumeError> {
        let decisions: Vec<(String, Decision)> = decisions
            .into_iter()
            .map(|(id, decision)| (id.into(), decision))
            .collect();
        let _turn = self.shared.run_lock.lock().await;
        {
            let mut state = lock(&self.shared.state);
            let mut run = state.run.clone();
            if run.pending_approvals().is_empty() {
                if let Some((id, _)) = decisions.first() {
                    return Err(ResumeError::UnknownCall {
                        id: id.clone(),
                        waiting: Vec::new(),
                    });
                }
                run.resume()?;
            } else {
                run.decide(decisions)?;
            }
            state.run = run;
        }
        Ok(self.drive(None).await)
    }

    /// The current run as a value (save it with [`AgentRun::to_json`]). While a run is active this is
    /// the state after its last completed step.
    pub fn run_state(&self) -> AgentRun {
        lock(&self.shared.state).run.clone()
    }

    /// Replaces the agent's run with a saved one (its conversation included); [`resume`](Self::resume)
    /// goes on from there. Refused while a run is active.
    pub fn restore(&self, run: AgentRun) -> Result<(), ResumeError> {
        let Ok(_idle) = self.shared.run_lock.try_lock() else {
            return Err(ResumeError::Busy);
        };
        lock(&self.shared.state).run = run;
        Ok(())
    }

    /// Changes the limits of the current run and of every run after it.
    pub fn set_limits(&self, limits: RunLimits) {
        lock(&self.shared.settings).limits = limits;
        lock(&self.shared.state).run.set_limits(limits);
    }

    /// Injects `message` after the current turn (its tool calls still finish), before the next model call.
    pub fn steer(&self, message: impl Into<UserMessage>) {
        lock(&self.shared.steering).push_back(message.into());
    }

    /// Queues `message` to run when the agent would otherwise stop.
    pub fn follow_up(&self, message: impl Into<UserMessage>) {
        lock(&self.shared.follow_ups).push_back(message.into());
    }

    /// Cancels the current run, if any: the model stream stops, running tools are cancelled, and every tool
    /// call gets a result. Prompts waiting their turn still run.
    pub fn abort(&self) {
        if let Some(cancel) = lock(&self.shared.current).as_ref() {
            cancel.cancel();
        }
    }

    /// Whether a run is active.
    pub fn is_running(&self) -> bool {
        lock(&self.shared.current).is_some()
    }

    /// A stream of the agent's events from now on.
    pub fn subscribe(&self) -> EventStream {
        self.shared.executor.events().subscribe()
    }

    /// Calls `sink` with every event, inline and in order.
    pub fn on_event(&self, sink: impl Fn(&AgentEvent) + Send + Sync + 'static) {
        self.shared.executor.events().on_event(sink);
    }

    /// The conversation so far.
    pub fn messages(&self) -> Vec<AgentMessage> {
        lock(&self.shared.state).run.messages().to_vec()
    }

    /// A handle to the agent's tools: register more at any time; they are offered from the next turn on.
    pub fn tools(&self) -> ToolStore {
        self.shared.tools.clone()
    }

    /// Runs the step machine until the run stops, starting it with `prompts` if given.
    async fn drive(&self, prompts: Option<Vec<UserMessage>>) -> RunOutcome {
        let cancel = CancellationToken::new();
        *lock(&self.shared.current) = Some(cancel.clone());
        let mut driving = Driving {
            shared: &self.shared,
            cancel,
            events: self.shared.executor.events().clone(),
            added: Vec::new(),
            turn_open: false,
            offered: None,
            done: false,
        };
        let stop = driving.run(prompts).await;
        driving.done = true;
        let messages = std::mem::take(&mut driving.added);
        driving.events.emit(AgentEvent::AgentEnd {
            messages: messages.clone().into(),
        });
        RunOutcome { messages, stop }
    }
}

impl From<&str> for UserMessage {
    fn from(text: &str) -> Self {
        UserMessage::text(text)
    }
}

impl From<String> for UserMessage {
    fn from(text: String) -> Self {
        UserMessage::text(text)
    }
}

/// A run that waits for approvals when a new prompt comes: its calls will not run, and each gets a result
/// that says so, so the conversation stays valid.
fn give_up_waiting(run: &mut AgentRun) {
    let pending = run.pending_approvals().to_vec();
    if pending.is_empty() {
        return;
    }
    let decisions = pending.iter().map(|waiting| {
        (
            waiting.call_id.clone(),
            Decision::deny("a new prompt came before a decision"),
        )
    });
    if run.decide(decisions).is_ok() {
        run.interrupt("a new prompt came before the approval");
    }
}

/// One drive of the step machine. If its future is dropped mid-step, `Drop` cancels what runs and leaves
/// the run valid and stopped.
struct Driving<'a> {
    shared: &'a Shared,
    cancel: CancellationToken,
    events: EventBus,
    added: Vec<AgentMessage>,
    /// Whether `TurnStart` of the turn under way is out (the first turn's comes before the prompts).
    turn_open: bool,
    /// The tools the last model call was offered: the only ones its batch may run.
    offered: Option<ToolStore>,
    done: bool,
}

impl Drop for Driving<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.cancel.cancel();
            lock(&self.shared.state)
                .run
                .interrupt("the run was dropped before the call returned");
        }
        *lock(&self.shared.current) = None;
    }
}

impl Driving<'_> {
    async fn run(&mut self, prompts: Option<Vec<UserMessage>>) -> RunStop {
        self.events.emit(AgentEvent::AgentStart);
        if let Some(prompts) = prompts {
            self.events.emit(AgentEvent::TurnStart);
            self.turn_open = true;
            let from = self.len();
            lock(&self.shared.state).run.start(prompts);
            self.announce_from(from);
        }
        loop {
            // Between steps the loop lets the runtime run other tasks (a caller's timeout among them).
            tokio::task::yield_now().await;
            self.take_queues();
            let from = self.len();
            let step = lock(&self.shared.state).run.next_step();
            self.announce_from(from);
            match step {
                Step::CallModel => self.call_model().await,
                Step::RunTools { assistant, plan } => self.run_tools(assistant, plan).await,
                Step::Stopped(stop) => return stop,
            }
        }
    }

    fn len(&self) -> usize {
        lock(&self.shared.state).run.messages().len()
    }

    /// Messages the step machine added on its own (prompts, steering, a terminated reply): into the
    /// outcome, with their start and end events.
    fn announce_from(&mut self, from: usize) {
        let added: Vec<AgentMessage> = {
            let state = lock(&self.shared.state);
            state
                .run
                .messages()
                .get(from..)
                .unwrap_or_default()
                .to_vec()
        };
        for message in added {
            if self.events.is_observed() {
                let shared = Arc::new(message.clone());
                self.events.emit(AgentEvent::MessageStart {
                    message: Arc::clone(&shared),
                });
                self.events.emit(AgentEvent::MessageEnd { message: shared });
            }
            self.added.push(message);
        }
    }

    fn take_queues(&self) {
        let steering: Vec<UserMessage> = lock(&self.shared.steering).drain(..).collect();
        let follow_ups: Vec<UserMessage> = lock(&self.shared.follow_ups).drain(..).collect();
        if steering.is_empty() && follow_ups.is_empty() {
            return;
        }
        let mut state = lock(&self.shared.state);
        state.run.steer(steering);
        state.run.follow_up(follow_ups);
    }

    /// The context for the next model call, after `prepare_context`.
    fn context(&self) -> (AgentContext, Arc<dyn Model>) {
        let (mut context, model) = {
            let state = lock(&self.shared.state);
            let context = AgentContext {
                system_prompt: state.run.system_prompt().to_owned(),
                messages: state.run.messages().to_vec(),
                tools: self.shared.tools.tools(),
            };
            (context, Arc::clone(&state.model))
        };
        if let Some(prepare) = &self.shared.prepare_context {
            prepare(&mut context);
        }
        (context, model)
    }

    /// The tools that may run this turn: the store's, or those `prepare_context` offered.
    fn offered(&self, context: &AgentContext) -> ToolStore {
        if self.shared.prepare_context.is_none() {
            return self.shared.tools.clone();
        }
        self.shared.tools.offering(&context.tools)
    }

    async fn call_model(&mut self) {
        if !self.turn_open {
            self.events.emit(AgentEvent::TurnStart);
            self.turn_open = true;
        }
        let (context, model) = self.context();
        let reply = self.stream_reply(&model, &context).await;
        let offered = self.offered(&context);
        self.offered = Some(offered.clone());
        let ended = matches!(reply.stop_reason, StopReason::Error | StopReason::Aborted)
            || reply.tool_calls().next().is_none();
        self.added.push(AgentMessage::Assistant(reply.clone()));
        {
            let approval = &self.shared.approval;
            let mut state = lock(&self.shared.state);
            state.run.model_replied(reply.clone(), |call| {
                offered
                    .get(&call.name)
                    .and_then(|tool| approval.check(call, &tool))
            });
        }
        if ended {
            self.end_turn(reply, Vec::new());
        }
    }

    async fn run_tools(&mut self, assistant: AssistantMessage, plan: Vec<PlannedCall>) {
        // The tools offered with the reply; a run resumed in a new drive works them out once here.
        let offered = match self.offered.take() {
            Some(offered) => offered,
            None => self.offered(&self.context().0),
        };
        let batch = self
            .shared
            .executor
            .execute_plan(
                &offered,
                plan,
                Some(Arc::new(assistant.clone())),
                &self.cancel,
            )
            .await;
        self.added
            .extend(batch.messages.iter().cloned().map(AgentMessage::ToolResult));
        let from = self.len() + batch.messages.len();
        lock(&self.shared.state)
            .run
            .tools_ran(batch.messages.clone(), batch.terminate);
        self.end_turn(assistant.clone(), batch.messages.clone());
        self.announce_from(from);
        let goes_on = lock(&self.shared.state).run.stopped().is_none();
        if goes_on && self.cancel.is_cancelled() {
            lock(&self.shared.state).run.stop(RunStop::Aborted);
        } else if goes_on && self.next_turn(assistant, batch.messages) {
            lock(&self.shared.state).run.stop(RunStop::StoppedByHook);
        }
    }

    fn end_turn(&mut self, message: AssistantMessage, tool_results: Vec<ToolResultMessage>) {
        self.turn_open = false;
        self.events.emit(AgentEvent::TurnEnd {
            message: Arc::new(message),
            tool_results: tool_results.into(),
        });
    }

    /// Calls the model and streams its reply into message events.
    async fn stream_reply(
        &self,
        model: &Arc<dyn Model>,
        context: &AgentContext,
    ) -> AssistantMessage {
        let request = ModelRequest {
            system_prompt: context.system_prompt.clone(),
            messages: context.messages.clone(),
            // Without prepare_context the store's own list goes out, its serialized text shared by
            // every request until the store changes.
            tools: if self.shared.prepare_context.is_some() {
                ToolList::from(context.tools.clone())
            } else {
                self.shared.tools.tool_list()
            },
        };
        stream_reply(model.as_ref(), request, &self.cancel, &self.events).await
    }

    /// Runs `prepare_next_turn`; returns whether the run should stop.
    fn next_turn(&self, message: AssistantMessage, tool_results: Vec<ToolResultMessage>) -> bool {
        let Some(prepare) = &self.shared.prepare_next_turn else {
            return false;
        };
        let context = NextTurnContext {
            message,
            tool_results,
            messages: self.shared_messages(),
        };
        let Some(update) = prepare(&context) else {
            return false;
        };
        let mut state = lock(&self.shared.state);
        if let Some(prompt) = update.system_prompt {
            state.run.set_system_prompt(prompt);
        }
        if let Some(messages) = update.messages {
            state.run.set_messages(messages);
        }
        if let Some(model) = update.model {
            state.model = model;
        }
        update.stop
    }

    fn shared_messages(&self) -> Vec<AgentMessage> {
        lock(&self.shared.state).run.messages().to_vec()
    }
}
