//! Agents: the protocol as a step machine ([`AgentRun`]) and its one drive loop ([`drive()`], over the
//! [`Effects`] a driver performs), what an agent is made of ([`AgentConfig`], set through
//! [`AgentSettings`]), which calls wait for a person ([`ApprovalPolicy`], [`Decision`]), and the in-process
//! driver.
//!
//! [`Agent`] keeps the conversation, asks the model, executes the tool calls it returns, feeds the results
//! back, and loops until the model answers without tool calls, a batch terminates, a limit is reached or a
//! call waits for approval. It performs the effects of the drive loop in process over the step machine in
//! [`AgentRun`], which holds the run's whole state as a serializable value.
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
//! A call whose tool needs approval ([`AgentTool::needs_approval`](crate::tool::AgentTool::needs_approval), or an [`ApprovalPolicy`]) pauses the
//! run before any call of its batch runs; [`Agent::prompt`] returns with
//! [`RunStop::AwaitingApproval`]. [`Agent::resume`] with a [`Decision`] per call goes on. A tool's
//! question ([`ToolContext::elicit`](crate::tool::ToolContext::elicit)) pauses an agent that has no elicitation
//! handler the same way, with [`RunStop::AwaitingAnswer`]; [`Agent::answer`] goes on. A run stops at
//! its [`RunLimits`] (50 model calls by default) with a distinct [`RunStop`]; raise the limit with
//! [`Agent::set_limits`] and resume. [`Agent::run_state`] is the run as a value: save it as JSON, and
//! [`Agent::restore`] it into an agent with the same tools and model, in this process or another.
//!
//! # Events
//!
//! A call of `prompt` or `resume` emits, in order: `AgentStart`, `TurnStart`, `MessageStart`/`MessageEnd`
//! for each prompt, then per turn (its `TurnStart` first, but for the first turn's, which came already)
//! `MessageStart`, `MessageUpdate`s and `MessageEnd` for the assistant
//! message, the tool events of its calls (see [`ToolExecutor`](crate::exec::ToolExecutor)) and
//! `TurnEnd`; finally `AgentEnd` with every message it added. Every turn has its `TurnStart` and its `TurnEnd` (the seeds' trace lists only
//! the first `turn_start`; pi-agent-core emits one per turn, and so does yiem). A turn that waits for
//! approval ends when its batch has run, after the resume.

//
// This file holds [`Agent`] and its queues; its parts beside the protocol's: `builder` ([`AgentBuilder`]),
// `context` (what the hooks see and return), `driving` (the drive loop's effects performed in process),
// `config`, `drive`, `sampling`.

pub(crate) mod asked;
mod builder;
mod config;
mod context;
mod drive;
mod driving;
mod limits;
pub(crate) mod paused;
mod resume;
mod run;
mod sampling;
mod saved;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

pub use crate::approval::{ApprovalPolicy, Decision, PendingApproval};
pub use crate::ask::questions::{AskedQuestions, PendingQuestion};
pub use builder::AgentBuilder;
pub use config::{AgentConfig, AgentSettings};
pub use context::{AgentContext, NextTurnContext, TurnUpdate};
pub use drive::{Batch, Effects, Mail, Resumed, Waiting, drive};
pub use limits::{DEFAULT_MAX_TURNS, RunLimits};
pub use resume::ResumeError;
pub use run::{AgentRun, RUN_FORMAT_VERSION, RunStop, Step};
#[cfg(feature = "mcp-client")]
pub(crate) use saved::canonical_json;
pub use saved::{RunKey, RunMismatch, Signature};

use crate::event::{AgentEvent, EventStream};
use crate::llm::Model;
use crate::message::{AgentMessage, UserMessage};
use crate::store::registry::ToolStore;

/// What one call of [`Agent::prompt`] or [`Agent::resume`] did: the messages it added and why the run
/// stopped.
///
/// ```
/// use yiem_core::{agent::{Agent, RunStop}, llm::{ScriptedModel, ScriptedTurn}};
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

    /// The tools' questions waiting for an answer (empty unless the run waits for answers).
    pub fn pending_questions(&self) -> &[PendingQuestion] {
        match &self.stop {
            RunStop::AwaitingAnswer { questions } => questions,
            _ => &[],
        }
    }
}

struct State {
    model: Arc<dyn Model>,
    run: AgentRun,
}

/// What each new run starts with.
struct Shared {
    state: Mutex<State>,
    config: AgentConfig,
    /// What the tools' requests to the agent's own model may spend, and used, not yet counted in the
    /// run.
    sampled: Option<Arc<Mutex<sampling::SampleBudget>>>,
    /// The limits of the next runs: the configuration's until [`Agent::set_limits`] changes them.
    limits: Mutex<RunLimits>,
    conversation_id: String,
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
/// use yiem_core::{
///     agent::{Agent, AgentSettings, RunStop}, llm::{ScriptedModel, ScriptedTurn},
///     message::AgentMessage, store::ToolStore, tool,
/// };
///
/// /// Read a file.
/// #[tool]
/// async fn read_file() -> &'static str {
///     "hello from text.txt"
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let tools = ToolStore::new("demo");
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
/// use yiem_core::{
///     agent::{Agent, AgentRun, AgentSettings, Decision, RunStop},
///     llm::{ScriptedModel, ScriptedTurn}, store::ToolStore, tool,
/// };
///
/// /// Delete a file.
/// #[tool]
/// async fn delete() -> &'static str {
///     "deleted"
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let tools = || {
///     let tools = ToolStore::new("demo");
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
/// // Later, anywhere: the same tools, policy and model, and the saved run.
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([ScriptedTurn::text("Done.")]))
///     .tools(tools())
///     .require_approval(["delete"])
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
    /// Sends `text` as a user message and runs until the agent stops; returns what the run added and why
    /// it stopped. If a run is active, this one waits for it (and any prompt sent earlier) to finish first.
    pub async fn prompt(&self, text: impl Into<String>) -> RunOutcome {
        self.prompt_messages(vec![UserMessage::text(text)]).await
    }

    /// Like [`prompt`](Self::prompt), with messages of your own. A run that was waiting for approvals
    /// or answers is given up: its waiting calls get a "not run" result first, so the conversation
    /// stays valid.
    pub async fn prompt_messages(&self, prompts: Vec<UserMessage>) -> RunOutcome {
        let _turn = self.shared.run_lock.lock().await;
        let limits = *lock(&self.shared.limits);
        {
            let mut state = lock(&self.shared.state);
            let run = &mut state.run;
            // Calls that wait will not run: each gets a result that says so, and the run goes on.
            let waited_for = if run.pending_questions().is_empty() {
                "a new prompt came before the approval"
            } else {
                "a new prompt came before the answer to its question"
            };
            run.give_up_waiting(waited_for);
            run.set_limits(limits);
            run.set_stop_at_tools(self.shared.config.stop_at_tools.clone());
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

    /// Answers the question `key` of the call `call_id` that the run waits on
    /// ([`RunStop::AwaitingAnswer`]); once every question that waits has an answer, goes on (the calls
    /// that asked run again from the start with their answers) and returns what the run then did.
    /// Until then it returns at once, with no messages and the questions still waiting. An accepted
    /// answer must fit the question's form; on an error — no such question waits, an answer that does
    /// not fit (the field named) — the run is left as it was, still waiting. Waits for an active run
    /// to finish first.
    ///
    /// An agent pauses on a question when it has no elicitation handler
    /// ([`AgentSettings::elicitation`]); one with a handler asks it while the call waits instead.
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use serde_json::json;
    /// use yiem_core::agent::{AgentRun, AgentSettings, ResumeError, RunKey, RunStop};
    /// use yiem_core::ask::{ElicitError, ElicitationAnswer};
    /// use yiem_core::prelude::*;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Confirm {
    ///     delete_branch: bool,
    /// }
    ///
    /// /// Merge pull request #12.
    /// #[tool]
    /// async fn merge(ctx: ToolContext) -> Result<String, ElicitError> {
    ///     match ctx.elicit::<Confirm>("Merge #12 into main?").await? {
    ///         ElicitationAnswer::Accept(c) => Ok(format!("merged (branch deleted: {})", c.delete_branch)),
    ///         _ => Ok("not merged".into()),
    ///     }
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let tools = || {
    ///     let tools = ToolStore::new("demo");
    ///     tools.register(merge_tool()).unwrap();
    ///     tools
    /// };
    /// let key = RunKey::new([7; 32]);
    /// let agent = Agent::builder()
    ///     .model(ScriptedModel::new([ScriptedTurn::tool_call("merge", json!({}))]))
    ///     .tools(tools())
    ///     .build();
    /// let outcome = agent.prompt("merge it").await;
    /// let RunStop::AwaitingAnswer { questions } = &outcome.stop else { panic!("{:?}", outcome.stop) };
    /// assert_eq!((questions[0].key.as_str(), questions[0].message.as_str()), ("question-1", "Merge #12 into main?"));
    /// let saved = agent.run_state().to_json_signed(&key);
    ///
    /// // Later, anywhere: the same tools and model, and the saved run.
    /// let (run, _) = AgentRun::from_json_verified(&saved, &key).unwrap();
    /// let agent = Agent::builder()
    ///     .model(ScriptedModel::new([ScriptedTurn::text("Merged.")]))
    ///     .tools(tools())
    ///     .run(run)
    ///     .build();
    /// let (call, key) = (&questions[0].call_id, &questions[0].key);
    /// let wrong = json!({"delete_branch": "yes"}).as_object().unwrap().clone();
    /// let refused = agent.answer(call, key, ElicitationAnswer::Accept(wrong)).await.unwrap_err();
    /// assert!(matches!(refused, ResumeError::InvalidAnswer { field, .. } if field == "delete_branch"));
    ///
    /// let form = json!({"delete_branch": true}).as_object().unwrap().clone();
    /// let outcome = agent.answer(call, key, ElicitationAnswer::Accept(form)).await.unwrap();
    /// assert_eq!(outcome.stop, RunStop::Finished);
    /// assert_eq!(outcome.text(), "Merged.");
    /// # });
    /// ```
    pub async fn answer(
        &self,
        call_id: &str,
        key: &str,
        answer: crate::ask::elicit::ElicitationAnswer,
    ) -> Result<RunOutcome, ResumeError> {
        let _turn = self.shared.run_lock.lock().await;
        {
            let mut state = lock(&self.shared.state);
            let mut run = state.run.clone();
            run.answer(call_id, key, answer)?;
            state.run = run;
            if !state.run.pending_questions().is_empty() {
                let questions = state.run.pending_questions().to_vec();
                return Ok(RunOutcome {
                    messages: Vec::new(),
                    stop: RunStop::AwaitingAnswer { questions },
                });
            }
        }
        Ok(self.drive(None).await)
    }

    /// The current run as a value (save it with [`AgentRun::to_json`]). While a run is active this is
    /// the state after its last completed step.
    pub fn run_state(&self) -> AgentRun {
        lock(&self.shared.state).run.clone()
    }

    /// Replaces the agent's run with a saved one (its conversation included); [`resume`](Self::resume)
    /// goes on from there. Refused while a run is active. A run read without a valid tag
    /// ([`AgentRun::asks_again`]) waits for the calls this agent's approval policy asks about.
    pub fn restore(&self, run: AgentRun) -> Result<(), ResumeError> {
        let Ok(_idle) = self.shared.run_lock.try_lock() else {
            return Err(ResumeError::Busy);
        };
        lock(&self.shared.state).run = reapply_approvals(&self.shared.config, run);
        Ok(())
    }

    /// Changes the limits of the current run and of every run after it.
    pub fn set_limits(&self, limits: RunLimits) {
        *lock(&self.shared.limits) = limits;
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
        self.shared.config.events().subscribe()
    }

    /// Calls `sink` with every event, inline and in order.
    pub fn on_event(&self, sink: impl Fn(&AgentEvent) + Send + Sync + 'static) {
        self.shared.config.events().on_event(sink);
    }

    /// The conversation so far.
    pub fn messages(&self) -> Vec<AgentMessage> {
        lock(&self.shared.state).run.messages().to_vec()
    }

    /// The id of the agent's conversation (see [`AgentBuilder::conversation_id`]).
    pub fn conversation_id(&self) -> &str {
        &self.shared.conversation_id
    }

    /// A handle to the agent's tools: register more at any time; they are offered from the next turn on.
    pub fn tools(&self) -> ToolStore {
        self.shared.config.tools.clone()
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

/// A restored run read without a valid tag asks again about every call of its reply: the agent's policy
/// narrows that to the calls it asks about, over the tools the reply would run with.
fn reapply_approvals(config: &AgentConfig, mut run: AgentRun) -> AgentRun {
    if !run.asks_again() {
        return run;
    }
    let (_, offered) = config.context(run.system_prompt(), run.messages());
    run.reapply_approvals(|call| config.needs_approval(&offered, call));
    run
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").finish_non_exhaustive()
    }
}
