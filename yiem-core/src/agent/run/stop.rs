//! Why a run stopped ([`RunStop`]) and what its driver does next ([`Step`]): the step machine's outcomes.

use serde::{Deserialize, Serialize};

use crate::approval::PendingApproval;
use crate::ask::questions::PendingQuestion;
use crate::call::ToolResultMessage;
use crate::decision::PlannedCall;
use crate::message::AssistantMessage;
use crate::result::Usage;

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
    /// Whether [`AgentRun::resume`](super::AgentRun::resume) can continue the run (after raising a limit, say): true for limits,
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

    pub(super) fn describe(&self) -> &'static str {
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

/// What the driver does next. See [`AgentRun::next_step`](super::AgentRun::next_step). Exhaustive: the [`drive`](crate::agent::drive())
/// loop matches it in one place, so a new step is a compile error there.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Call the model with [`AgentRun::system_prompt`](super::AgentRun::system_prompt) and [`AgentRun::messages`](super::AgentRun::messages); report its reply with
    /// [`AgentRun::model_replied`](super::AgentRun::model_replied).
    CallModel,
    /// Run these calls of `assistant` (one result each, in plan order) and report them with
    /// [`AgentRun::tools_ran`](super::AgentRun::tools_ran).
    RunTools {
        /// The reply the calls belong to.
        assistant: AssistantMessage,
        /// The calls, each to run or to refuse.
        plan: Vec<PlannedCall>,
    },
    /// The run stopped; see the reason.
    Stopped(RunStop),
}
