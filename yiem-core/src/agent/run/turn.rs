//! The transitions of a turn: a drive's prompts, the step to take next, the model's reply, the results of
//! a batch, and stopping, interrupting or resuming a run.

use std::collections::BTreeMap;

use super::{AgentRun, Phase, RunStop, Step};
use crate::agent::resume::ResumeError;
use crate::ask::questions::PendingQuestion;
use crate::call::{ToolCall, ToolResultMessage};
use crate::decision::{PlannedCall, truncated_reason};
use crate::message::{AgentMessage, AssistantContent, AssistantMessage, StopReason, UserMessage};
use crate::result::{AgentToolResult, Usage};

impl AgentRun {
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
    /// [`Decision::AlwaysApprove`](crate::agent::Decision::AlwaysApprove) earlier in the run never wait. A reply cut off by the output limit has
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

    fn stop_with(&mut self, stop: RunStop) -> Step {
        self.phase = Phase::Stopped { stop: stop.clone() };
        Step::Stopped(stop)
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
