//! [`AgentRun`]: one agent run as a plain, serializable value — the conversation, the pending tool calls,
//! the turn count and usage, the queued messages and why the run waits — and the step machine that
//! advances it.
//!
//! The step machine does no I/O. It is the agent protocol: a driver asks [`AgentRun::next_step`] what to
//! do, does it (calls the model, runs a batch) and reports back with [`AgentRun::model_replied`] or
//! [`AgentRun::tools_ran`] (or [`AgentRun::tools_ran_asking`], with the questions calls stopped at); a
//! person answers pending approvals with [`AgentRun::decide`] and tools' questions with
//! [`AgentRun::answer`]. Every
//! transition queues the [`AgentEvent`](crate::event::AgentEvent)s it causes (a turn's start and end, the messages the run adds
//! itself, a drive's start and end), which the [`drive`](crate::agent::drive()) loop emits after each one; the
//! events of the work it performs (the model's streamed reply, the tools' calls) come from that work.
//! The loop owns the sequence; [`Agent`](crate::agent::Agent) and the durable runner of `yiem-restate`
//! perform its [`Effects`](super::Effects). A test may step the machine by hand.
//!
//! A drive reads: [`begin`](AgentRun::begin), [`start`](AgentRun::start) with the prompts (or a resume),
//! then steps until one stops the run, then [`end`](AgentRun::end), which gives the messages the drive
//! added.
//!
//! This file holds the run's state ([`AgentRun`], its phase) and its plain getters and setters; its parts:
//! `stop` (why a run stopped, what the driver does next), `turn` (the transitions of a turn: prompts, the
//! model's reply, a batch's results, stopping), `waits` (which calls wait, and the decisions and answers
//! that end a wait), `events` (the events the transitions queue, and a drive's bookkeeping) and `json`
//! (the saved shape, and reading a run back checked against its conversation).

mod events;
mod json;
mod stop;
mod turn;
mod waits;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use self::stop::{RunStop, Step};
use crate::agent::asked::{Answer, Asked};
use crate::agent::limits::RunLimits;
use crate::agent::paused::Paused;
use crate::approval::{Decision, PendingApproval};
use crate::ask::questions::PendingQuestion;
use crate::decision::PlannedCall;
use crate::event::AgentEvent;
use crate::message::{AgentMessage, AssistantMessage, UserMessage};
use crate::result::Usage;

/// The format version [`AgentRun`] writes and reads.
pub const RUN_FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
enum Phase {
    CallModel,
    AwaitingApproval {
        assistant: usize,
        pending: Vec<PendingApproval>,
        decisions: BTreeMap<String, Decision>,
    },
    AwaitingAnswer {
        assistant: usize,
        questions: Vec<PendingQuestion>,
        answers: BTreeMap<String, Answer>,
    },
    RunTools {
        assistant: usize,
        plan: Vec<PlannedCall>,
    },
    Stopped {
        stop: RunStop,
    },
}

/// One agent run as a value: serialize it, hand it to another process, and resume it there with the same
/// tools and model. The step machine is described in the source's module docs (`agent/run/mod.rs`), the saved shape in `agent/run/json.rs`'s.
///
/// ```
/// use serde_json::json;
/// use yiem_core::{
///     agent::{AgentRun, RunStop, Step}, exec::ToolCall,
///     message::{AssistantMessage, AssistantContent, UserMessage},
/// };
///
/// let mut run = AgentRun::new("You are terse.", Vec::new());
/// run.start(vec![UserMessage::text("delete build/")]);
/// assert_eq!(run.next_step(), Step::CallModel);
///
/// // The model asks for `bash`, which needs approval: the run waits before running anything.
/// let mut reply = AssistantMessage::default();
/// reply.content.push(AssistantContent::ToolCall(ToolCall::new("c1", "bash", json!({"command": "rm -r build"}))));
/// run.model_replied(reply, |call| (call.name == "bash").then(|| "runs a command".to_owned()));
/// let Step::Stopped(RunStop::AwaitingApproval { pending }) = run.next_step() else { panic!() };
/// assert_eq!(pending[0].call_id, "c1");
///
/// // It survives a trip through JSON, and goes on with a decision.
/// let mut run = AgentRun::from_json(&run.to_json()).unwrap();
/// run.decide([("c1".to_owned(), yiem_core::agent::Decision::deny("keep it"))]).unwrap();
/// let Step::RunTools { plan, .. } = run.next_step() else { panic!() };
/// assert!(matches!(&plan[0], yiem_core::exec::PlannedCall::Refuse { reason, .. } if reason == "the user denied this call: keep it"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgentRun {
    version: u32,
    system_prompt: String,
    messages: Vec<AgentMessage>,
    turns: u32,
    usage: Usage,
    limits: RunLimits,
    stop_at_tools: Vec<String>,
    steering: Vec<UserMessage>,
    follow_ups: Vec<UserMessage>,
    always_approved: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    loaded_tools: Vec<String>,
    phase: Phase,
    /// Code-mode programs that paused in the batch that waits or runs.
    #[serde(skip_serializing_if = "Paused::is_empty")]
    paused: Paused,
    /// Calls that stopped at questions in the batch that waits or runs again, and its other results.
    #[serde(skip_serializing_if = "Asked::is_empty")]
    asked: Asked,
    #[serde(skip)]
    progress: Progress,
}

/// What the current drive of a run has done that belongs to no saved run: the events its transitions
/// caused and the driver has not taken yet, whether a turn is open, the messages added since the drive
/// began, and the time the run stamps its own messages with (a durable driver journals it). None of it is
/// saved, and two runs that differ only here are equal.
#[derive(Clone, Debug, Default)]
struct Progress {
    events: Vec<AgentEvent>,
    turn_open: bool,
    added: Vec<AgentMessage>,
    clock: Option<u64>,
    /// Read without a valid tag while calls wait: every call of the reply waits, until a driver applies
    /// its approval policy ([`AgentRun::reapply_approvals`]).
    reapply: bool,
}

impl PartialEq for Progress {
    fn eq(&self, _: &Progress) -> bool {
        true
    }
}

impl AgentRun {
    /// A run over `messages` that has not started: [`start`](Self::start) begins it.
    pub fn new(system_prompt: impl Into<String>, messages: Vec<AgentMessage>) -> Self {
        AgentRun {
            version: RUN_FORMAT_VERSION,
            system_prompt: system_prompt.into(),
            messages,
            turns: 0,
            usage: Usage::default(),
            limits: RunLimits::default(),
            stop_at_tools: Vec::new(),
            steering: Vec::new(),
            follow_ups: Vec::new(),
            always_approved: Vec::new(),
            loaded_tools: Vec::new(),
            phase: Phase::Stopped {
                stop: RunStop::Finished,
            },
            paused: Paused::default(),
            asked: Asked::default(),
            progress: Progress::default(),
        }
    }

    /// Queues messages to add before the next model call.
    pub fn steer(&mut self, messages: impl IntoIterator<Item = UserMessage>) {
        self.steering.extend(messages);
    }

    /// Queues messages to send when the run would otherwise finish.
    pub fn follow_up(&mut self, messages: impl IntoIterator<Item = UserMessage>) {
        self.follow_ups.extend(messages);
    }

    /// The system prompt.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// Replaces the system prompt (from the next model call on).
    pub fn set_system_prompt(&mut self, prompt: impl Into<String>) {
        self.system_prompt = prompt.into();
    }

    /// The conversation.
    pub fn messages(&self) -> &[AgentMessage] {
        &self.messages
    }

    /// Replaces the conversation (e.g. compacted), between steps. Only while the run is not waiting on
    /// a reply's calls: a run waiting for approvals or about to run a batch keeps its conversation, and
    /// this returns `false`.
    pub fn set_messages(&mut self, messages: Vec<AgentMessage>) -> bool {
        if matches!(
            self.phase,
            Phase::AwaitingApproval { .. } | Phase::AwaitingAnswer { .. } | Phase::RunTools { .. }
        ) {
            return false;
        }
        self.messages = messages;
        true
    }

    /// Model calls made in this run.
    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// Counts `usage` spent for the run outside its own model calls (a tool's request to the agent's
    /// model, say) toward its usage and its limits, which the next step checks.
    pub fn add_usage(&mut self, usage: &Usage) {
        self.usage.add(usage);
    }

    /// Tokens the model reported in this run.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The run's limits.
    pub fn limits(&self) -> RunLimits {
        self.limits
    }

    /// Changes the run's limits (raise them, then [`resume`](Self::resume) a run a limit stopped).
    pub fn set_limits(&mut self, limits: RunLimits) {
        self.limits = limits;
    }

    /// The tools whose result ends the run (the stop policy).
    pub fn stop_at_tools(&self) -> &[String] {
        &self.stop_at_tools
    }

    /// Ends the run after a result of any of these tools, with that result as its output.
    pub fn set_stop_at_tools(&mut self, tools: impl IntoIterator<Item = impl Into<String>>) {
        self.stop_at_tools = tools.into_iter().map(Into::into).collect();
    }

    /// The tools approved for the rest of the run ([`Decision::AlwaysApprove`]), in the order they were
    /// approved: their calls, the model's own and a code-mode program's, do not wait.
    pub fn always_approved(&self) -> &[String] {
        &self.always_approved
    }

    /// The tools the model has reached in this run, in the order it reached them: the tools it called and
    /// those a tool search found (a `search_tools` result's, or a provider's own). A request sends the
    /// deferred ones among them after the tools that are not deferred (see [`catalog`](crate::catalog)).
    pub fn loaded_tools(&self) -> &[String] {
        &self.loaded_tools
    }

    /// Adds `names` to [`loaded_tools`](Self::loaded_tools), those not there yet, in order.
    pub fn load_tools(&mut self, names: impl IntoIterator<Item = String>) {
        for name in names {
            if !self.loaded_tools.contains(&name) {
                self.loaded_tools.push(name);
            }
        }
    }

    /// Why the run stopped, or `None` while it goes on.
    pub fn stopped(&self) -> Option<RunStop> {
        match &self.phase {
            Phase::Stopped { stop } => Some(stop.clone()),
            Phase::AwaitingApproval { pending, .. } => Some(RunStop::AwaitingApproval {
                pending: pending.clone(),
            }),
            Phase::AwaitingAnswer { questions, .. } => Some(RunStop::AwaitingAnswer {
                questions: questions.clone(),
            }),
            _ => None,
        }
    }

    fn assistant(&self, index: usize) -> &AssistantMessage {
        match &self.messages[index] {
            AgentMessage::Assistant(message) => message,
            _ => unreachable!("a phase points at an assistant message (checked when read)"),
        }
    }
}
