//! [`AgentRun`]: one agent run as a plain, serializable value — the conversation, the pending tool calls,
//! the turn count and usage, the queued messages and why the run waits — and the step machine that
//! advances it.
//!
//! The step machine does no I/O. It is the agent protocol: a driver asks [`AgentRun::next_step`] what to
//! do, does it (calls the model, runs a batch) and reports back with [`AgentRun::model_replied`] or
//! [`AgentRun::tools_ran`] (or [`AgentRun::tools_ran_asking`], with the questions calls stopped at); a
//! person answers pending approvals with [`AgentRun::decide`] and tools' questions with
//! [`AgentRun::answer`]. Every
//! transition queues the [`AgentEvent`]s it causes (a turn's start and end, the messages the run adds
//! itself, a drive's start and end), which the [`drive`](crate::agent::drive()) loop emits after each one; the
//! events of the work it performs (the model's streamed reply, the tools' calls) come from that work.
//! The loop owns the sequence; [`Agent`](crate::agent::Agent) and the durable runner of `yiem-restate`
//! perform its [`Effects`](super::Effects). A test may step the machine by hand.
//!
//! A drive reads: [`begin`](AgentRun::begin), [`start`](AgentRun::start) with the prompts (or a resume),
//! then steps until one stops the run, then [`end`](AgentRun::end), which gives the messages the drive
//! added.
//!
//! # The saved shape
//!
//! [`AgentRun::to_json`] writes one object: `version` (the format, [`RUN_FORMAT_VERSION`]),
//! `system_prompt`, `messages` (the conversation, as [`AgentMessage`] serializes), `turns`, `usage`,
//! `limits`, `stop_at_tools`, `steering`, `follow_ups`, `always_approved` (tool names), `loaded_tools` (left out when empty: see [`AgentRun::loaded_tools`]), and `phase`, tagged
//! by `state`: `call_model`, `awaiting_approval` (with `assistant`, the index of the message whose calls
//! wait, `pending` and the `decisions` given so far), `awaiting_answer` (with `assistant`, the
//! `questions` that wait and the `answers` given so far), `run_tools` (with the `plan`) or `stopped`
//! (with the [`RunStop`]). A batch whose calls stopped at questions keeps, in `asked` (left out when
//! empty), the results of its other calls and the answers each call that asked has had (see
//! `agent/asked.rs`); such a run is read back only with a valid tag. [`AgentRun::to_json_signed`] adds `tag`, the integrity tag of everything else (its
//! definition, and what a run read back is checked against: the module docs of `agent/saved.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::asked::{Answer, Asked};
use super::limits::RunLimits;
use super::paused::Paused;
use super::resume::ResumeError;
use super::saved::{self, RunKey, RunMismatch, Signature};
use crate::approval::{Decision, PendingApproval, planned};
use crate::ask::elicit::ElicitationAnswer;
use crate::ask::questions::PendingQuestion;
use crate::call::{ToolCall, ToolResultMessage, now_millis};
use crate::decision::{PlannedCall, truncated_reason};
use crate::event::AgentEvent;
use crate::message::{AgentMessage, AssistantContent, AssistantMessage, StopReason, UserMessage};
use crate::result::{AgentToolResult, Usage};

/// The format version [`AgentRun`] writes and reads.
pub const RUN_FORMAT_VERSION: u32 = 1;

/// Why a run stopped, and whether it can go on.
///
/// ```
/// use yiem_core::agent::RunStop;
///
/// assert!(RunStop::TurnLimit { turns: 50 }.is_resumable());
/// assert!(!RunStop::Finished.is_resumable());
/// assert_eq!(serde_json::to_value(RunStop::Aborted).unwrap()["reason"], "aborted");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStop {
    /// The model answered without tool calls, and no message was queued.
    Finished,
    /// Every result of the last batch asked the loop to stop.
    Terminated,
    /// A tool named in the stop policy returned; its result is the run's output.
    StoppedAtTool {
        /// That tool's result.
        result: Box<ToolResultMessage>,
    },
    /// Calls of the last reply wait for a decision; none of its calls has run.
    AwaitingApproval {
        /// The calls that wait, in call order.
        pending: Vec<PendingApproval>,
    },
    /// Calls of the last batch stopped at a question for the user; the batch's other calls have their
    /// results. Answer each question ([`Agent::answer`](crate::agent::Agent::answer)): the calls that asked run
    /// again from the start with the answers.
    AwaitingAnswer {
        /// The questions that wait, one per call that asked, in call order.
        questions: Vec<PendingQuestion>,
    },
    /// The run made as many model calls as its limit allows.
    TurnLimit {
        /// The model calls made.
        turns: u32,
    },
    /// The run used as many tokens as its limit allows.
    UsageLimit {
        /// The tokens used.
        usage: Usage,
        /// Which limit, in words.
        detail: String,
    },
    /// `prepare_next_turn` asked the run to stop.
    StoppedByHook,
    /// The run was aborted (or the caller stopped waiting); every call has its result.
    Aborted,
    /// The model's reply failed.
    Error {
        /// What went wrong.
        message: String,
    },
}

impl RunStop {
    /// Whether [`AgentRun::resume`] can continue the run (after raising a limit, say): true for limits,
    /// aborts, model errors and hook stops; false for a finished run (prompt again) and for one waiting
    /// for approvals (decide instead) or answers (answer instead).
    pub fn is_resumable(&self) -> bool {
        matches!(
            self,
            RunStop::TurnLimit { .. }
                | RunStop::UsageLimit { .. }
                | RunStop::StoppedByHook
                | RunStop::Aborted
                | RunStop::Error { .. }
        )
    }

    /// Records on `span` (an `invoke_agent` span) why the run stopped, with an event for a run that
    /// waits for approvals or answers, and the error type of a failed run.
    pub fn record(&self, span: &tracing::Span) {
        if span.is_disabled() {
            return;
        }
        let (kind, error) = match self {
            RunStop::Finished => ("finished", None),
            RunStop::Terminated => ("terminated", None),
            RunStop::AwaitingApproval { pending } => {
                span.in_scope(|| {
                    tracing::info!(pending = pending.len(), "the run waits for approvals")
                });
                ("awaiting_approval", None)
            }
            RunStop::AwaitingAnswer { questions } => {
                span.in_scope(|| {
                    tracing::info!(questions = questions.len(), "the run waits for answers")
                });
                ("awaiting_answer", None)
            }
            RunStop::StoppedAtTool { .. } => ("stopped_at_tool", None),
            RunStop::TurnLimit { .. } => ("turn_limit", None),
            RunStop::UsageLimit { .. } => ("usage_limit", None),
            RunStop::StoppedByHook => ("stopped_by_hook", None),
            RunStop::Aborted => ("aborted", Some("aborted")),
            RunStop::Error { .. } => ("error", Some("model_error")),
        };
        crate::telemetry::run_stopped(span, kind, error);
    }

    fn describe(&self) -> &'static str {
        match self {
            RunStop::Finished => "finished",
            RunStop::Terminated => "was terminated by its tools",
            RunStop::StoppedAtTool { .. } => "stopped at a tool's result",
            RunStop::AwaitingApproval { .. } => "waits for approvals",
            RunStop::AwaitingAnswer { .. } => "waits for answers to its tools' questions",
            _ => "stopped",
        }
    }
}

/// What the driver does next. See [`AgentRun::next_step`]. Exhaustive: the [`drive`](crate::agent::drive())
/// loop matches it in one place, so a new step is a compile error there.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Call the model with [`AgentRun::system_prompt`] and [`AgentRun::messages`]; report its reply with
    /// [`AgentRun::model_replied`].
    CallModel,
    /// Run these calls of `assistant` (one result each, in plan order) and report them with
    /// [`AgentRun::tools_ran`].
    RunTools {
        /// The reply the calls belong to.
        assistant: AssistantMessage,
        /// The calls, each to run or to refuse.
        plan: Vec<PlannedCall>,
    },
    /// The run stopped; see the reason.
    Stopped(RunStop),
}

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
/// tools and model. The step machine and the saved shape are described in the source's module docs (`agent/run.rs`).
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

/// A run without its messages, for storage that grows by appending (see [`AgentRun::appended_since`]).
#[derive(Serialize)]
struct Header<'a> {
    version: u32,
    system_prompt: &'a str,
    /// How many messages the run has.
    messages: usize,
    turns: u32,
    usage: Usage,
    limits: RunLimits,
    stop_at_tools: &'a [String],
    steering: &'a [UserMessage],
    follow_ups: &'a [UserMessage],
    always_approved: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    loaded_tools: &'a [String],
    phase: &'a Phase,
    #[serde(skip_serializing_if = "Paused::is_empty")]
    paused: &'a Paused,
    #[serde(skip_serializing_if = "Asked::is_empty")]
    asked: &'a Asked,
}

/// The fields of a saved run, read once its version is known.
#[derive(Deserialize)]
struct Saved {
    system_prompt: String,
    messages: Vec<AgentMessage>,
    turns: u32,
    usage: Usage,
    limits: RunLimits,
    #[serde(default)]
    stop_at_tools: Vec<String>,
    #[serde(default)]
    steering: Vec<UserMessage>,
    #[serde(default)]
    follow_ups: Vec<UserMessage>,
    #[serde(default)]
    always_approved: Vec<String>,
    #[serde(default)]
    loaded_tools: Vec<String>,
    phase: Phase,
    #[serde(default)]
    paused: Paused,
    #[serde(default)]
    asked: Asked,
}

/// Read as [`AgentRun::from_json`] reads a run: checked, and not trusted for its grants.
impl<'de> Deserialize<'de> for AgentRun {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        AgentRun::from_value(value, false).map_err(serde::de::Error::custom)
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

    fn now(&self) -> u64 {
        self.progress.clock.unwrap_or_else(now_millis)
    }

    /// Adds a message the run makes itself to the conversation, with its `MessageStart` and `MessageEnd`.
    fn announce(&mut self, message: AgentMessage) {
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
    fn open_turn(&mut self) {
        if !self.progress.turn_open {
            self.progress.turn_open = true;
            self.progress.events.push(AgentEvent::TurnStart);
        }
    }

    /// Closes the turn of `message`, with the results of its calls.
    fn close_turn(&mut self, message: AssistantMessage, results: Vec<ToolResultMessage>) {
        self.progress.turn_open = false;
        self.progress.events.push(AgentEvent::TurnEnd {
            message: std::sync::Arc::new(message),
            tool_results: results.into(),
        });
    }

    /// Starts a new run on the same conversation: appends `prompts`, resets the turn count, usage and
    /// always-approved tools, and asks for the model next. Queued messages stay queued.
    pub fn start(&mut self, prompts: Vec<UserMessage>) {
        self.open_turn();
        for prompt in prompts {
            self.announce(AgentMessage::User(prompt));
        }
        self.turns = 0;
        self.usage = Usage::default();
        self.always_approved.clear();
        self.phase = Phase::CallModel;
    }

    /// What to do next. Before a model call this checks the limits (a limit reached stops the run) and
    /// moves queued steering messages into the conversation.
    pub fn next_step(&mut self) -> Step {
        match &self.phase {
            Phase::CallModel => {
                if self.limits.turn_limit_reached(self.turns) {
                    return self.stop_with(RunStop::TurnLimit { turns: self.turns });
                }
                if let Some(detail) = self.limits.usage_exceeded(&self.usage) {
                    return self.stop_with(RunStop::UsageLimit {
                        usage: self.usage,
                        detail,
                    });
                }
                for message in std::mem::take(&mut self.steering) {
                    self.announce(AgentMessage::User(message));
                }
                self.open_turn();
                Step::CallModel
            }
            Phase::RunTools { assistant, plan } => Step::RunTools {
                assistant: self.assistant(*assistant).clone(),
                plan: plan.clone(),
            },
            Phase::AwaitingApproval { pending, .. } => Step::Stopped(RunStop::AwaitingApproval {
                pending: pending.clone(),
            }),
            Phase::AwaitingAnswer { questions, .. } => Step::Stopped(RunStop::AwaitingAnswer {
                questions: questions.clone(),
            }),
            Phase::Stopped { stop } => Step::Stopped(stop.clone()),
        }
    }

    /// Records the model's reply to [`Step::CallModel`]. `needs_approval` says, for each of its tool
    /// calls, whether it must wait for a decision (`Some(reason)`); calls of tools approved with
    /// [`Decision::AlwaysApprove`] earlier in the run never wait. A reply cut off by the output limit has
    /// its calls refused (their arguments may be truncated) without asking.
    pub fn model_replied(
        &mut self,
        reply: AssistantMessage,
        needs_approval: impl Fn(&ToolCall) -> Option<String>,
    ) {
        self.turns = self.turns.saturating_add(1);
        self.usage.add(&reply.usage);
        let assistant = self.messages.len();
        let calls: Vec<ToolCall> = reply.tool_calls().cloned().collect();
        self.load_tools(crate::catalog::reached_by(&reply));
        let stop_reason = reply.stop_reason;
        let error = reply.error.clone();
        // The reply ends its turn when it asks for no tools, or failed.
        if calls.is_empty() || matches!(stop_reason, StopReason::Error | StopReason::Aborted) {
            self.close_turn(reply.clone(), Vec::new());
        }
        self.progress
            .added
            .push(AgentMessage::Assistant(reply.clone()));
        self.messages.push(AgentMessage::Assistant(reply));
        self.phase = match stop_reason {
            StopReason::Error => Phase::Stopped {
                stop: RunStop::Error {
                    message: error.unwrap_or_else(|| "the model's reply failed".into()),
                },
            },
            StopReason::Aborted => Phase::Stopped {
                stop: RunStop::Aborted,
            },
            // A paused turn is not an answer: the model goes on from the reply it sent.
            StopReason::Paused if calls.is_empty() => Phase::CallModel,
            _ if calls.is_empty() => self.after_answer(),
            StopReason::Length => Phase::RunTools {
                assistant,
                plan: calls
                    .into_iter()
                    .map(|call| PlannedCall::Refuse {
                        reason: truncated_reason(&call.name),
                        call,
                    })
                    .collect(),
            },
            _ => self.approvals(assistant, calls, needs_approval),
        };
    }

    /// The phase after a reply whose `calls` may run: waiting for the calls `needs_approval` asks about
    /// (calls of tools approved for the rest of the run never wait), or running them all.
    fn approvals(
        &mut self,
        assistant: usize,
        calls: Vec<ToolCall>,
        needs_approval: impl Fn(&ToolCall) -> Option<String>,
    ) -> Phase {
        self.progress.reapply = false;
        let pending: Vec<PendingApproval> = calls
            .iter()
            .filter(|call| !self.always_approved.contains(&call.name))
            .filter_map(|call| {
                needs_approval(call).map(|reason| PendingApproval {
                    call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    reason,
                })
            })
            .collect();
        if pending.is_empty() {
            Phase::RunTools {
                assistant,
                plan: calls
                    .into_iter()
                    .map(|call| PlannedCall::Run { call })
                    .collect(),
            }
        } else {
            Phase::AwaitingApproval {
                assistant,
                pending,
                decisions: BTreeMap::new(),
            }
        }
    }

    /// Whether the run was read without a valid tag while calls of its reply waited or were about to run,
    /// and every one of them now waits for a decision, until [`reapply_approvals`](Self::reapply_approvals)
    /// applies a policy.
    pub fn asks_again(&self) -> bool {
        self.progress.reapply && matches!(self.phase, Phase::AwaitingApproval { .. })
    }

    /// For a run read without a valid tag, whose every waiting call asks again: applies the driver's
    /// approval policy to the calls of its reply, as when the reply came, so that only the calls it asks
    /// about wait (and, when it asks about none, the batch runs). Call it once, after reading the run and
    /// before a person is asked; [`Agent`](crate::agent::Agent) does. Any other run is left as it is.
    pub fn reapply_approvals(&mut self, needs_approval: impl Fn(&ToolCall) -> Option<String>) {
        if !std::mem::take(&mut self.progress.reapply) {
            return;
        }
        let Phase::AwaitingApproval {
            assistant,
            decisions,
            ..
        } = &self.phase
        else {
            return;
        };
        if !decisions.is_empty() {
            return;
        }
        let assistant = *assistant;
        let calls: Vec<ToolCall> = self.assistant(assistant).tool_calls().cloned().collect();
        self.phase = self.approvals(assistant, calls, needs_approval);
    }

    /// Records the results of [`Step::RunTools`], one per planned call (a call without one gets an error
    /// result, so the conversation stays valid). With `terminate`, the run ends with a reply built from the
    /// results; a result of a tool in the stop policy ends it with that result as its output.
    pub fn tools_ran(&mut self, results: Vec<ToolResultMessage>, terminate: bool) {
        self.tools_ran_asking(results, terminate, Vec::new());
    }

    /// Records the results of [`Step::RunTools`] as [`tools_ran`](Self::tools_ran) does, when calls of
    /// the batch stopped at `questions` (a driver that pauses on questions collects them while the batch
    /// runs): the run then waits for their answers ([`RunStop::AwaitingAnswer`]), keeping the results of
    /// the batch's other calls, which do not run again. Without questions this is `tools_ran`.
    pub fn tools_ran_asking(
        &mut self,
        results: Vec<ToolResultMessage>,
        terminate: bool,
        questions: Vec<PendingQuestion>,
    ) {
        let Phase::RunTools { assistant, .. } = &self.phase else {
            for result in results {
                self.progress
                    .added
                    .push(AgentMessage::ToolResult(result.clone()));
                self.messages.push(AgentMessage::ToolResult(result));
            }
            return;
        };
        let now = self.now();
        let assistant = *assistant;
        let calls: Vec<ToolCall> = self.assistant(assistant).tool_calls().cloned().collect();
        if self.paused.is_empty() && !questions.is_empty() {
            let questions = self.asked.stop(results.clone(), questions, &calls);
            if !questions.is_empty() {
                // Calls wait on questions: the batch waits with them.
                self.phase = Phase::AwaitingAnswer {
                    assistant,
                    questions,
                    answers: BTreeMap::new(),
                };
                return;
            }
        }
        let terminate = terminate && self.asked.kept_terminate();
        let results = self.asked.merged(results, &calls);
        let results = match self.paused.pause(results) {
            Ok(results) => results,
            Err(pending) => {
                // A program waits for a decision inside a call of this batch: the batch waits with it.
                self.phase = Phase::AwaitingApproval {
                    assistant,
                    pending,
                    decisions: BTreeMap::new(),
                };
                return;
            }
        };
        let results = self.paused.merged(results, &calls);
        let Phase::RunTools { plan, .. } = &self.phase else {
            unreachable!("checked above")
        };
        let missing: Vec<ToolResultMessage> = plan
            .iter()
            .map(PlannedCall::call)
            .filter(|call| !results.iter().any(|result| result.tool_call_id == call.id))
            .map(|call| ToolResultMessage {
                timestamp: now,
                ..ToolResultMessage::new(
                    call,
                    AgentToolResult::error(format!(
                        "tool call `{}` got no result from the driver that ran it",
                        call.name
                    )),
                )
            })
            .collect();
        let results: Vec<ToolResultMessage> = results.into_iter().chain(missing).collect();
        let loaded: Vec<String> = results
            .iter()
            .flat_map(|result| result.result.loaded_tool_names().iter().cloned())
            .collect();
        self.load_tools(loaded);
        for result in &results {
            let message = AgentMessage::ToolResult(result.clone());
            self.progress.added.push(message.clone());
            self.messages.push(message);
        }
        self.close_turn(self.assistant(assistant).clone(), results.clone());
        self.phase = if terminate {
            let reply = terminated_reply(self.assistant(assistant), &results, now);
            self.announce(AgentMessage::Assistant(reply));
            Phase::Stopped {
                stop: RunStop::Terminated,
            }
        } else if let Some(result) = results
            .iter()
            .find(|result| self.stop_at_tools.contains(&result.tool_name))
        {
            Phase::Stopped {
                stop: RunStop::StoppedAtTool {
                    result: Box::new(result.clone()),
                },
            }
        } else {
            Phase::CallModel
        };
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

    /// Answers pending approvals by call id. Once every pending call has a decision, the batch is planned:
    /// approved calls run (with edited arguments, which the conversation then records), denied ones get
    /// `the user denied this call: <reason>`, and calls that needed no approval run as they are. Decisions
    /// may come in several parts. On an error — an id that is not pending, a call decided twice, a run
    /// that is not waiting — nothing changes.
    pub fn decide(
        &mut self,
        decisions: impl IntoIterator<Item = (String, Decision)>,
    ) -> Result<(), ResumeError> {
        let decisions: Vec<(String, Decision)> = decisions.into_iter().collect();
        let Phase::AwaitingApproval {
            assistant,
            pending,
            decisions: decided,
        } = &mut self.phase
        else {
            return match decisions.first() {
                Some((id, _)) => Err(ResumeError::UnknownCall {
                    id: id.clone(),
                    waiting: Vec::new(),
                }),
                None => Ok(()),
            };
        };
        for (index, (id, _)) in decisions.iter().enumerate() {
            if !pending.iter().any(|waiting| &waiting.call_id == id) {
                return Err(ResumeError::UnknownCall {
                    id: id.clone(),
                    waiting: pending.iter().map(|p| p.call_id.clone()).collect(),
                });
            }
            if decided.contains_key(id) || decisions[..index].iter().any(|(seen, _)| seen == id) {
                return Err(ResumeError::DuplicateDecision { id: id.clone() });
            }
        }
        let assistant = *assistant;
        self.progress.reapply = false;
        for (id, decision) in decisions {
            if decision == Decision::AlwaysApprove
                && let Some(waiting) = pending.iter().find(|p| p.call_id == id)
                && !self.always_approved.contains(&waiting.tool_name)
            {
                self.always_approved.push(waiting.tool_name.clone());
            }
            decided.insert(id, decision);
        }
        // Calls of a tool approved for the rest of the run need no decision of their own.
        for waiting in pending.iter() {
            if self.always_approved.contains(&waiting.tool_name) {
                decided
                    .entry(waiting.call_id.clone())
                    .or_insert(Decision::Approve);
            }
        }
        if pending.iter().any(|p| !decided.contains_key(&p.call_id)) {
            return Ok(());
        }
        let decided = std::mem::take(decided);
        if !self.paused.is_empty() {
            // Paused programs run again with their decisions; the batch's other calls have their results.
            let calls: Vec<ToolCall> = self.assistant(assistant).tool_calls().cloned().collect();
            let plan = self
                .paused
                .decided(&decided, &calls)
                .into_iter()
                .map(|call| PlannedCall::Run { call })
                .collect();
            self.phase = Phase::RunTools { assistant, plan };
            return Ok(());
        }
        let AgentMessage::Assistant(reply) = &mut self.messages[assistant] else {
            unreachable!("an awaiting phase points at the assistant message whose calls wait")
        };
        let mut plan = Vec::new();
        for block in &mut reply.content {
            let AssistantContent::ToolCall(call) = block else {
                continue;
            };
            let planned = planned(call.clone(), decided.get(&call.id));
            // Edited arguments: the conversation records what runs.
            *call = planned.call().clone();
            plan.push(planned);
        }
        self.phase = Phase::RunTools { assistant, plan };
        Ok(())
    }

    /// Answers the question `key` of the call `call_id` ([`RunStop::AwaitingAnswer`]). An accepted
    /// answer must fit the question's form (fields left out get the form's defaults). Once every
    /// question that waits has an answer, the calls that asked run again from the start, their
    /// questions answered in the order they ask them; the batch's other calls keep their results. On
    /// an error — no such question waits, it was answered already, an answer that does not fit (the
    /// field named) — nothing changes.
    ///
    /// ```
    /// use serde_json::json;
    /// use yiem_core::{agent::{AgentRun, ResumeError}, ask::ElicitationAnswer};
    ///
    /// let mut run = AgentRun::new("system", Vec::new());
    /// let refused = run.answer("c1", "question-1", ElicitationAnswer::Decline).unwrap_err();
    /// assert!(matches!(refused, ResumeError::UnknownQuestion { .. }));
    /// ```
    pub fn answer(
        &mut self,
        call_id: &str,
        key: &str,
        answer: ElicitationAnswer,
    ) -> Result<(), ResumeError> {
        let Phase::AwaitingAnswer {
            assistant,
            questions,
            answers,
        } = &mut self.phase
        else {
            return Err(ResumeError::UnknownQuestion {
                call_id: call_id.to_owned(),
                key: key.to_owned(),
                waiting: Vec::new(),
            });
        };
        let Some(question) = questions
            .iter()
            .find(|q| q.call_id == call_id && q.key == key)
        else {
            return Err(ResumeError::UnknownQuestion {
                call_id: call_id.to_owned(),
                key: key.to_owned(),
                waiting: questions
                    .iter()
                    .map(|q| format!("{}/{}", q.call_id, q.key))
                    .collect(),
            });
        };
        if answers.contains_key(call_id) {
            return Err(ResumeError::DuplicateAnswer {
                call_id: call_id.to_owned(),
                key: key.to_owned(),
            });
        }
        let answer = Answer::kept(question.check_answer(answer)?);
        answers.insert(call_id.to_owned(), answer);
        if questions.iter().any(|q| !answers.contains_key(&q.call_id)) {
            return Ok(());
        }
        let assistant = *assistant;
        let answers = std::mem::take(answers);
        let questions = std::mem::take(questions);
        let calls: Vec<ToolCall> = self.assistant(assistant).tool_calls().cloned().collect();
        let plan = self
            .asked
            .answered(answers, &questions, &calls)
            .into_iter()
            .map(|call| PlannedCall::Run { call })
            .collect();
        self.phase = Phase::RunTools { assistant, plan };
        Ok(())
    }

    /// The questions the calls of the batch about to run had answered, each with its answer, in call
    /// order and in the order asked: the calls that stopped at questions and run again. A driver that
    /// pauses on questions hands them to the batch's asker, which gives an answer back only to the very
    /// question it answered (the same call, key, message and form).
    pub fn question_answers(&self) -> Vec<(PendingQuestion, ElicitationAnswer)> {
        match &self.phase {
            Phase::RunTools { assistant, .. } => {
                let calls: Vec<ToolCall> =
                    self.assistant(*assistant).tool_calls().cloned().collect();
                self.asked.answers(&calls)
            }
            _ => Vec::new(),
        }
    }

    /// The questions waiting for an answer (empty unless the run waits for answers).
    pub fn pending_questions(&self) -> &[PendingQuestion] {
        match &self.phase {
            Phase::AwaitingAnswer { questions, .. } => questions,
            _ => &[],
        }
    }

    /// Continues a run that stopped for a reason that allows it ([`RunStop::is_resumable`]): the model is
    /// asked next (raise the limit first if one stopped it). A run waiting for approvals or about to run
    /// a batch is left as it is. A finished run gives [`ResumeError::NothingToResume`].
    pub fn resume(&mut self) -> Result<(), ResumeError> {
        match &self.phase {
            Phase::Stopped { stop } if stop.is_resumable() => {
                self.phase = Phase::CallModel;
                Ok(())
            }
            Phase::Stopped { stop } => Err(ResumeError::NothingToResume(stop.describe().into())),
            _ => Ok(()),
        }
    }

    /// Stops the run with `stop` (a driver's decision: an abort, a hook).
    pub fn stop(&mut self, stop: RunStop) {
        self.phase = Phase::Stopped { stop };
    }

    /// Stops a run whose step was cut short (its driver was dropped): a batch that was running gets an
    /// error result for every call, with `reason`, so the conversation stays valid; the run stops as
    /// [`RunStop::Aborted`] and can be resumed. A run that waits or has stopped is left as it is.
    pub fn interrupt(&mut self, reason: &str) {
        match &self.phase {
            Phase::RunTools { plan, .. } => {
                let now = self.now();
                let results = plan
                    .iter()
                    .map(|planned| {
                        let call = planned.call();
                        ToolResultMessage {
                            timestamp: now,
                            ..ToolResultMessage::new(
                                call,
                                AgentToolResult::error(format!(
                                    "tool call `{}` was cancelled: {reason}",
                                    call.name
                                )),
                            )
                        }
                    })
                    .collect();
                self.tools_ran(results, false);
                self.stop(RunStop::Aborted);
            }
            Phase::CallModel => self.stop(RunStop::Aborted),
            Phase::AwaitingApproval { .. }
            | Phase::AwaitingAnswer { .. }
            | Phase::Stopped { .. } => {}
        }
    }

    /// Gives up a wait for approvals (a new prompt came first, say): no call of the reply runs, not even
    /// one already approved; each gets a result that says it was cancelled, with `reason`, so the
    /// conversation stays valid, and the run stops as [`RunStop::Aborted`]. A wait for answers is given
    /// up the same way: the calls that asked get that result, the batch's other calls keep theirs. A
    /// run that does not wait is left as it is.
    pub fn give_up_waiting(&mut self, reason: &str) {
        let (assistant, asking) = match &self.phase {
            Phase::AwaitingApproval { assistant, .. } => (*assistant, None),
            Phase::AwaitingAnswer {
                assistant,
                questions,
                ..
            } => (
                *assistant,
                Some(
                    questions
                        .iter()
                        .map(|q| q.call_id.clone())
                        .collect::<Vec<_>>(),
                ),
            ),
            _ => return,
        };
        let plan = self
            .assistant(assistant)
            .tool_calls()
            .filter(|call| asking.as_ref().is_none_or(|ids| ids.contains(&call.id)))
            .map(|call| PlannedCall::Refuse {
                call: call.clone(),
                reason: reason.to_owned(),
            })
            .collect();
        self.phase = Phase::RunTools { assistant, plan };
        self.interrupt(reason);
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

    /// The code-mode programs of the batch about to run that resume after a pause: per `run_code` call
    /// id, the calls the program made before (the journal its replay feeds back) and the decisions on the
    /// calls that waited. A driver hands them to its code mode before running the batch.
    pub fn program_resumes(&self) -> Vec<(String, Value, BTreeMap<String, Decision>)> {
        match &self.phase {
            Phase::RunTools { .. } => self.paused.resumes(),
            _ => Vec::new(),
        }
    }

    /// The calls waiting for a decision (empty unless the run waits for approvals).
    pub fn pending_approvals(&self) -> &[PendingApproval] {
        match &self.phase {
            Phase::AwaitingApproval { pending, .. } => pending,
            _ => &[],
        }
    }

    /// The run as JSON (its shape: the module docs of `agent/run.rs`).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a run holds only JSON-representable values")
    }

    /// The run as JSON with its integrity tag made with `key`: [`from_json_verified`](Self::from_json_verified)
    /// with the same key keeps its grants (the decisions given, the tools approved for the rest of the
    /// run, a batch about to run).
    ///
    /// ```
    /// use yiem_core::{agent::{AgentRun, RunKey, Signature}, message::UserMessage};
    ///
    /// let key = RunKey::new([42; 32]);
    /// let mut run = AgentRun::new("system", Vec::new());
    /// run.start(vec![UserMessage::text("hi")]);
    /// let saved = run.to_json_signed(&key);
    /// let (back, signature) = AgentRun::from_json_verified(&saved, &key).unwrap();
    /// assert_eq!((back, signature), (run.clone(), Signature::Valid));
    ///
    /// // Changed by hand (here: the system prompt), it is no longer the key's.
    /// let edited = saved.replace("\"system\"", "\"be evil\"");
    /// let (_, signature) = AgentRun::from_json_verified(&edited, &key).unwrap();
    /// assert_eq!(signature, Signature::Invalid);
    /// ```
    pub fn to_json_signed(&self, key: &RunKey) -> String {
        let mut value =
            serde_json::to_value(self).expect("a run holds only JSON-representable values");
        let tag = key.tag(&value);
        if let Value::Object(fields) = &mut value {
            fields.insert(saved::TAG.to_owned(), Value::String(tag));
        }
        value.to_string()
    }

    /// Reads a run written by [`to_json`](Self::to_json) (or any serializer of [`AgentRun`]). A state of
    /// another format version, or one that is not a run, is an error that says which; so is a run that
    /// disagrees with its own conversation ([`ResumeError::Mismatch`]). The run is not trusted for
    /// anything its conversation does not show: its grants (decisions given, tools approved for the rest
    /// of the run, a batch about to run) are dropped, and every call of a reply that waits or was about
    /// to run waits for a decision again. [`from_json_verified`](Self::from_json_verified) keeps them for a
    /// run tagged with the application's key.
    pub fn from_json(text: &str) -> Result<AgentRun, ResumeError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ResumeError::InvalidState(e.to_string()))?;
        AgentRun::from_value(value, false)
    }

    /// Reads a run as [`from_json`](Self::from_json) does, and checks its tag against `key`: with the
    /// key's tag ([`Signature::Valid`]) the run keeps its grants; without a tag, or with another, it keeps
    /// its conversation and asks again, as [`from_json`](Self::from_json) reads it.
    pub fn from_json_verified(
        text: &str,
        key: &RunKey,
    ) -> Result<(AgentRun, Signature), ResumeError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ResumeError::InvalidState(e.to_string()))?;
        let signature = match value.get(saved::TAG) {
            None => Signature::Missing,
            Some(Value::String(tag)) if key.verify(&value, tag) => Signature::Valid,
            Some(_) => Signature::Invalid,
        };
        let run = AgentRun::from_value(value, signature == Signature::Valid)?;
        Ok((run, signature))
    }

    /// The run as storage that grows by appending, as a driver that saves after every step writes it (the
    /// durable runner does): the run without its messages — every other field, with `messages` replaced by
    /// their count, so it does not grow with the conversation — and the messages from `from` on.
    /// [`from_appended`](Self::from_appended) reads it back.
    ///
    /// ```
    /// use yiem_core::{agent::AgentRun, message::UserMessage};
    ///
    /// let mut run = AgentRun::new("system", Vec::new());
    /// run.start(vec![UserMessage::text("hi")]);
    /// let (header, new) = run.appended_since(0);
    /// assert_eq!(header["messages"], 1);
    /// assert_eq!(new.len(), 1);
    /// let back = AgentRun::from_appended(header, new.to_vec()).unwrap();
    /// assert_eq!(back, run);
    /// ```
    pub fn appended_since(&self, from: usize) -> (Value, &[AgentMessage]) {
        let header = Header {
            version: self.version,
            system_prompt: &self.system_prompt,
            messages: self.messages.len(),
            turns: self.turns,
            usage: self.usage,
            limits: self.limits,
            stop_at_tools: &self.stop_at_tools,
            steering: &self.steering,
            follow_ups: &self.follow_ups,
            always_approved: &self.always_approved,
            loaded_tools: &self.loaded_tools,
            phase: &self.phase,
            paused: &self.paused,
            asked: &self.asked,
        };
        let header =
            serde_json::to_value(header).expect("a run holds only JSON-representable values");
        (header, self.messages.get(from..).unwrap_or_default())
    }

    /// A run from the header [`appended_since`](Self::appended_since) wrote and all its messages, in
    /// order; checked against its conversation as [`from_json`](Self::from_json) checks a saved run, and
    /// refused when the count of messages is not the header's. The storage is trusted, as the state of
    /// the durable runner's object is (only the runner writes it): the run keeps its grants. Read a run
    /// from storage a person can edit with [`from_json_verified`](Self::from_json_verified).
    pub fn from_appended(
        mut header: Value,
        messages: Vec<AgentMessage>,
    ) -> Result<AgentRun, ResumeError> {
        let count = header.get("messages").and_then(Value::as_u64);
        if count != Some(messages.len() as u64) {
            return Err(ResumeError::InvalidState(format!(
                "its header counts {} messages, and {} were found",
                count.map_or_else(|| "no".to_owned(), |count| count.to_string()),
                messages.len()
            )));
        }
        let messages =
            serde_json::to_value(messages).map_err(|e| ResumeError::InvalidState(e.to_string()))?;
        match &mut header {
            Value::Object(fields) => {
                fields.insert("messages".to_owned(), messages);
            }
            _ => {
                return Err(ResumeError::InvalidState(
                    "its header is not a JSON object".into(),
                ));
            }
        }
        AgentRun::from_value(header, true)
    }

    /// A run from its saved object, checked against its conversation; a run not `trusted` loses its
    /// grants.
    fn from_value(value: Value, trusted: bool) -> Result<AgentRun, ResumeError> {
        let version = match value.get("version") {
            Some(Value::Number(number)) => number.as_u64(),
            _ => None,
        };
        let Some(version) = version else {
            return Err(ResumeError::InvalidState(
                "it has no `version` (a whole number): is it a run saved by AgentRun::to_json?"
                    .into(),
            ));
        };
        if version != u64::from(RUN_FORMAT_VERSION) {
            return Err(ResumeError::UnknownVersion {
                found: version,
                supported: RUN_FORMAT_VERSION,
            });
        }
        let saved: Saved =
            serde_json::from_value(value).map_err(|e| ResumeError::InvalidState(e.to_string()))?;
        let mut run = AgentRun {
            version: RUN_FORMAT_VERSION,
            system_prompt: saved.system_prompt,
            messages: saved.messages,
            turns: saved.turns,
            usage: saved.usage,
            limits: saved.limits,
            stop_at_tools: saved.stop_at_tools,
            steering: saved.steering,
            follow_ups: saved.follow_ups,
            always_approved: saved.always_approved,
            loaded_tools: saved.loaded_tools,
            phase: saved.phase,
            paused: saved.paused,
            asked: saved.asked,
            progress: Progress::default(),
        };
        run.check()?;
        if !trusted && !run.paused.is_empty() {
            return Err(ResumeError::InvalidState(
                "it holds a paused program's recorded calls, which only a run with a valid tag may carry: \
                 save it with AgentRun::to_json_signed and read it with AgentRun::from_json_verified"
                    .into(),
            ));
        }
        if !trusted && !run.asked.is_empty() {
            return Err(ResumeError::InvalidState(
                "it holds answers to tools' questions and the results of calls that ran, which only a run \
                 with a valid tag may carry: save it with AgentRun::to_json_signed and read it with \
                 AgentRun::from_json_verified"
                    .into(),
            ));
        }
        if !trusted {
            run.drop_grants();
        }
        Ok(run)
    }

    /// Checks what the conversation decides against it: the calls that wait or run are the last reply's,
    /// pending entries and the plan show them as they will run, decisions answer pending calls, and every
    /// other call has exactly one result.
    fn check(&self) -> Result<(), RunMismatch> {
        if !self.asked.is_empty() && !self.paused.is_empty() {
            return Err(RunMismatch::Asked(
                "a batch waits on questions and on paused programs at once".into(),
            ));
        }
        let waiting = match &self.phase {
            Phase::AwaitingAnswer {
                assistant,
                questions,
                answers,
            } => {
                let calls = saved::waiting_calls(&self.messages, *assistant)?;
                if questions.is_empty() {
                    return Err(RunMismatch::Asked("`phase.questions` is empty".into()));
                }
                self.asked.check(&calls, Some((questions, answers)), &[])?;
                Some(*assistant)
            }
            Phase::RunTools { assistant, plan } if !self.asked.is_empty() => {
                let calls = saved::waiting_calls(&self.messages, *assistant)?;
                let planned: Vec<&ToolCall> = plan.iter().map(PlannedCall::call).collect();
                self.asked.check(&calls, None, &planned)?;
                Some(*assistant)
            }
            Phase::AwaitingApproval {
                assistant,
                pending,
                decisions,
            } => {
                let calls = saved::waiting_calls(&self.messages, *assistant)?;
                if pending.is_empty() {
                    return Err(RunMismatch::NothingPending);
                }
                if !self.paused.is_empty() {
                    self.paused.check(&calls, pending, &[])?;
                }
                for (index, waiting) in pending.iter().enumerate() {
                    if !self.paused.is_empty() {
                        // Checked above: the calls of paused programs.
                        break;
                    }
                    let call_id = waiting.call_id.clone();
                    let twice = pending[..index].iter().any(|p| p.call_id == call_id);
                    let Some(call) = calls
                        .iter()
                        .find(|call| call.id == call_id)
                        .filter(|_| !twice)
                    else {
                        return Err(RunMismatch::PendingCall { index, call_id });
                    };
                    let field = if call.name != waiting.tool_name {
                        "tool_name"
                    } else if call.arguments != waiting.arguments {
                        "arguments"
                    } else {
                        continue;
                    };
                    return Err(RunMismatch::PendingDiffers {
                        index,
                        call_id,
                        field,
                    });
                }
                if let Some(call_id) = decisions
                    .keys()
                    .find(|id| !pending.iter().any(|p| &p.call_id == *id))
                {
                    return Err(RunMismatch::Decision {
                        call_id: call_id.clone(),
                    });
                }
                Some(*assistant)
            }
            Phase::RunTools { assistant, plan } if !self.paused.is_empty() => {
                let calls = saved::waiting_calls(&self.messages, *assistant)?;
                let planned: Vec<&ToolCall> = plan.iter().map(PlannedCall::call).collect();
                self.paused.check(&calls, &[], &planned)?;
                Some(*assistant)
            }
            Phase::RunTools { assistant, plan } => {
                let calls = saved::waiting_calls(&self.messages, *assistant)?;
                for (index, (planned, call)) in plan.iter().zip(&calls).enumerate() {
                    if planned.call() != *call {
                        return Err(RunMismatch::PlanCall {
                            index,
                            call_id: planned.call().id.clone(),
                        });
                    }
                }
                if plan.len() != calls.len() {
                    return Err(RunMismatch::PlanLength {
                        planned: plan.len(),
                        made: calls.len(),
                    });
                }
                Some(*assistant)
            }
            Phase::Stopped {
                stop: RunStop::AwaitingApproval { .. },
            } => return Err(RunMismatch::StopAwaiting),
            Phase::Stopped {
                stop: RunStop::AwaitingAnswer { .. },
            } => return Err(RunMismatch::StopAwaitingAnswer),
            Phase::CallModel | Phase::Stopped { .. } if !self.asked.is_empty() => {
                return Err(RunMismatch::Asked(
                    "`asked` holds calls, but no batch waits or runs".into(),
                ));
            }
            Phase::CallModel | Phase::Stopped { .. } if !self.paused.is_empty() => {
                return Err(RunMismatch::Paused(
                    "`paused` holds programs, but no batch waits or runs".into(),
                ));
            }
            Phase::CallModel | Phase::Stopped { .. } => None,
        };
        saved::check_results(&self.messages, waiting)
    }

    /// Drops what would let a call run without a person, for a run read without a valid tag: the tools
    /// approved for the rest of the run, the decisions given, and a batch planned to run; every call of
    /// a reply that waits, or was about to run, waits for a decision again (a driver narrows that to its
    /// policy's, [`reapply_approvals`](Self::reapply_approvals)). A plan that only refuses calls (a reply
    /// cut off by the output limit) grants nothing and is kept.
    fn drop_grants(&mut self) {
        self.always_approved.clear();
        let assistant = match &self.phase {
            Phase::AwaitingApproval { assistant, .. } => *assistant,
            Phase::RunTools { assistant, plan }
                if plan.iter().any(|p| matches!(p, PlannedCall::Run { .. })) =>
            {
                *assistant
            }
            _ => return,
        };
        let pending = self
            .assistant(assistant)
            .tool_calls()
            .map(|call| PendingApproval {
                call_id: call.id.clone(),
                tool_name: call.name.clone(),
                arguments: call.arguments.clone(),
                reason: "asked again: the saved run does not carry this application's signature"
                    .to_owned(),
            })
            .collect();
        self.phase = Phase::AwaitingApproval {
            assistant,
            pending,
            decisions: BTreeMap::new(),
        };
        self.progress.reapply = true;
    }

    /// What the run does after an answer without tool calls: queued messages go next, else it finishes.
    fn after_answer(&mut self) -> Phase {
        if self.steering.is_empty() {
            let follow_ups = std::mem::take(&mut self.follow_ups);
            self.steering.extend(follow_ups);
        }
        if self.steering.is_empty() {
            Phase::Stopped {
                stop: RunStop::Finished,
            }
        } else {
            Phase::CallModel
        }
    }

    fn stop_with(&mut self, stop: RunStop) -> Step {
        self.phase = Phase::Stopped { stop: stop.clone() };
        Step::Stopped(stop)
    }

    fn assistant(&self, index: usize) -> &AssistantMessage {
        match &self.messages[index] {
            AgentMessage::Assistant(message) => message,
            _ => unreachable!("a phase points at an assistant message (checked when read)"),
        }
    }
}

/// The reply that ends a run whose last batch asked to terminate: the tool results' text, as in the seeds.
fn terminated_reply(
    message: &AssistantMessage,
    results: &[ToolResultMessage],
    now: u64,
) -> AssistantMessage {
    let mut content = vec![AssistantContent::Text {
        text: "Tool execution completed.".into(),
    }];
    for result in results {
        for text in result.content().iter().filter_map(|block| block.as_text()) {
            content.push(AssistantContent::Text {
                text: text.to_owned(),
            });
        }
    }
    AssistantMessage {
        content,
        stop_reason: StopReason::ToolUseTerminated,
        usage: message.usage,
        model: message.model.clone(),
        error: results
            .iter()
            .any(|result| result.is_error())
            .then(|| "One or more tool calls failed".to_owned()),
        timestamp: now,
    }
}
