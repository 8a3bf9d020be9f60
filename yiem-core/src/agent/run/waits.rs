//! What waits for a person: which calls of a reply wait for approval, the decisions that end that wait,
//! and the answers to the questions calls stopped at.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{AgentRun, Phase};
use crate::agent::asked::Answer;
use crate::agent::resume::ResumeError;
use crate::approval::{Decision, PendingApproval, planned};
use crate::ask::elicit::ElicitationAnswer;
use crate::ask::questions::PendingQuestion;
use crate::call::ToolCall;
use crate::decision::PlannedCall;
use crate::message::{AgentMessage, AssistantContent};

impl AgentRun {
    /// The phase after a reply whose `calls` may run: waiting for the calls `needs_approval` asks about
    /// (calls of tools approved for the rest of the run never wait), or running them all.
    pub(super) fn approvals(
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

    /// Answers the question `key` of the call `call_id` ([`RunStop::AwaitingAnswer`](super::RunStop::AwaitingAnswer)). An accepted
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

    /// The calls waiting for a decision (empty unless the run waits for approvals).
    pub fn pending_approvals(&self) -> &[PendingApproval] {
        match &self.phase {
            Phase::AwaitingApproval { pending, .. } => pending,
            _ => &[],
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
}
