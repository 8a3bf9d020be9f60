//! [`AgentInbox`]: the mailbox of one conversation, a second virtual object under the same key. While a
//! run holds the agent object (its exclusive `start`), steering messages, follow-ups, aborts and approval
//! decisions cannot queue behind it; they land here instead, and the run reads them between steps with a
//! journaled call, so a replay sees exactly what the first attempt saw. Its handlers are short and
//! exclusive, so concurrent senders are serialized, and private to the ingress: clients talk to the
//! agent object, which forwards.

use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use yiem_core::{
    agent::{Decision, PendingApproval, PendingQuestion},
    message::UserMessage,
};

use crate::api::{CallAnswer, CallDecision};

const MAIL: &str = "mail";
const WAITING: &str = "waiting";

/// Something sent to a conversation while its run goes on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Mail {
    /// Add after the current turn, before the next model call.
    Steer { message: UserMessage },
    /// Send when the run would otherwise finish.
    FollowUp { message: UserMessage },
    /// Stop the run at the next step boundary.
    Abort,
}

/// A run waiting for decisions or answers: the awakeable that resumes it and the calls or questions
/// that wait.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Waiting {
    pub(crate) awakeable: String,
    #[serde(default)]
    pub(crate) pending: Vec<PendingApproval>,
    #[serde(default)]
    pub(crate) questions: Vec<PendingQuestion>,
}

/// What resolves a waiting run's awakeable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub(crate) enum Answer {
    /// Every waiting call has its decision.
    Decided { decisions: Vec<(String, Decision)> },
    /// Every waiting question has its answer (checked against its form).
    Answered { answers: Vec<CallAnswer> },
    /// The run was aborted while it waited.
    Abort,
}

/// The mailbox object (Restate name `AgentInbox`, keyed by conversation id). Bound by
/// [`DurableAgent::endpoint`](crate::DurableAgent::endpoint); not called by clients.
pub struct AgentInbox;

#[restate_sdk::object(name = "AgentInbox", ingress_private, client_visibility = "pub(crate)")]
impl AgentInbox {
    /// Queues `mail`; an abort while the run waits for decisions resumes it at once.
    #[handler]
    async fn post(&self, ctx: ObjectContext<'_>, Json(mail): Json<Mail>) -> HandlerResult<()> {
        if mail == Mail::Abort
            && let Some(Json(waiting)) = ctx.get::<Json<Waiting>>(WAITING).await?
        {
            ctx.clear(WAITING);
            ctx.resolve_awakeable(&waiting.awakeable, Json(Answer::Abort));
            return Ok(());
        }
        let mut mail_box = ctx
            .get::<Json<Vec<Mail>>>(MAIL)
            .await?
            .map(|Json(mail)| mail)
            .unwrap_or_default();
        mail_box.push(mail);
        ctx.set(MAIL, Json(mail_box));
        Ok(())
    }

    /// Everything queued, in the order it came; the box is empty afterwards.
    #[handler]
    async fn take(&self, ctx: ObjectContext<'_>) -> HandlerResult<Json<Vec<Mail>>> {
        let mail = ctx
            .get::<Json<Vec<Mail>>>(MAIL)
            .await?
            .map(|Json(mail)| mail)
            .unwrap_or_default();
        if !mail.is_empty() {
            ctx.clear(MAIL);
        }
        Ok(Json(mail))
    }

    /// The run waits for decisions on `waiting.pending` (or answers to `waiting.questions`); `decide`
    /// (or `answer`) resolves `waiting.awakeable`. An abort queued before the run got here resumes it at
    /// once.
    #[handler]
    async fn wait(
        &self,
        ctx: ObjectContext<'_>,
        Json(waiting): Json<Waiting>,
    ) -> HandlerResult<()> {
        let mut mail = ctx
            .get::<Json<Vec<Mail>>>(MAIL)
            .await?
            .map(|Json(mail)| mail)
            .unwrap_or_default();
        if let Some(at) = mail.iter().position(|mail| *mail == Mail::Abort) {
            mail.remove(at);
            ctx.set(MAIL, Json(mail));
            ctx.resolve_awakeable(&waiting.awakeable, Json(Answer::Abort));
            return Ok(());
        }
        ctx.set(WAITING, Json(waiting));
        Ok(())
    }

    /// Answers the waiting calls. Every waiting call needs a decision (but calls of a tool another
    /// decision always-approves); an unknown id, a call decided twice, a missing decision or a run
    /// that does not wait is a terminal error that says which, and nothing changes.
    #[handler]
    async fn decide(
        &self,
        ctx: ObjectContext<'_>,
        Json(decisions): Json<Vec<CallDecision>>,
    ) -> HandlerResult<u32> {
        let waiting = ctx
            .get::<Json<Waiting>>(WAITING)
            .await?
            .map(|Json(waiting)| waiting)
            .filter(|waiting| !waiting.pending.is_empty());
        let Some(waiting) = waiting else {
            return Err(TerminalError::new(format!(
                "conversation `{}` has no call waiting for approval",
                ctx.key()
            ))
            .into());
        };
        check_decisions(&waiting.pending, &decisions).map_err(TerminalError::new)?;
        ctx.clear(WAITING);
        let count = decisions.len() as u32;
        let decisions = decisions
            .into_iter()
            .map(|decided| (decided.call_id, decided.decision))
            .collect();
        ctx.resolve_awakeable(&waiting.awakeable, Json(Answer::Decided { decisions }));
        Ok(count)
    }

    /// Answers the waiting questions. Every waiting question needs an answer that fits its form; an
    /// unknown question, one answered twice, a missing answer, one that does not fit (the field named)
    /// or a run that waits on no question is a terminal error that says which, and nothing changes.
    #[handler]
    async fn answer(
        &self,
        ctx: ObjectContext<'_>,
        Json(answers): Json<Vec<CallAnswer>>,
    ) -> HandlerResult<u32> {
        let waiting = ctx
            .get::<Json<Waiting>>(WAITING)
            .await?
            .map(|Json(waiting)| waiting)
            .filter(|waiting| !waiting.questions.is_empty());
        let Some(waiting) = waiting else {
            return Err(TerminalError::new(format!(
                "conversation `{}` has no question waiting for an answer",
                ctx.key()
            ))
            .into());
        };
        let answers = check_answers(&waiting.questions, answers).map_err(TerminalError::new)?;
        ctx.clear(WAITING);
        let count = answers.len() as u32;
        ctx.resolve_awakeable(&waiting.awakeable, Json(Answer::Answered { answers }));
        Ok(count)
    }
}

/// Whether `answers` answer `questions` exactly, each fitting its form: the message says what is
/// wrong. Gives the answers as the run takes them (defaults filled in).
pub(crate) fn check_answers(
    questions: &[PendingQuestion],
    answers: Vec<CallAnswer>,
) -> Result<Vec<CallAnswer>, String> {
    let waiting = || {
        questions
            .iter()
            .map(|q| format!("`{}` of `{}` ({})", q.key, q.call_id, q.tool_name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut checked: Vec<CallAnswer> = Vec::with_capacity(answers.len());
    for given in answers {
        let Some(question) = questions
            .iter()
            .find(|q| q.call_id == given.call_id && q.key == given.key)
        else {
            return Err(format!(
                "no question `{}` of call `{}` waits for an answer (waiting: {})",
                given.key,
                given.call_id,
                waiting()
            ));
        };
        if checked.iter().any(|seen| seen.call_id == given.call_id) {
            return Err(format!(
                "question `{}` of call `{}` was given two answers; give each waiting question one",
                given.key, given.call_id
            ));
        }
        let answer = question
            .check_answer(given.answer)
            .map_err(|error| error.to_string())?;
        checked.push(CallAnswer { answer, ..given });
    }
    let missing: Vec<String> = questions
        .iter()
        .filter(|q| !checked.iter().any(|given| given.call_id == q.call_id))
        .map(|q| format!("`{}` of `{}` ({})", q.key, q.call_id, q.tool_name))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "every waiting question needs an answer; missing: {}",
            missing.join(", ")
        ));
    }
    Ok(checked)
}

/// Whether `decisions` answer `pending` exactly: the message says what is wrong.
pub(crate) fn check_decisions(
    pending: &[PendingApproval],
    decisions: &[CallDecision],
) -> Result<(), String> {
    let waiting = || {
        pending
            .iter()
            .map(|call| format!("`{}` ({})", call.call_id, call.tool_name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (index, decided) in decisions.iter().enumerate() {
        if !pending.iter().any(|call| call.call_id == decided.call_id) {
            return Err(format!(
                "no call with id `{}` is waiting for approval (waiting: {})",
                decided.call_id,
                waiting()
            ));
        }
        if decisions[..index]
            .iter()
            .any(|seen| seen.call_id == decided.call_id)
        {
            return Err(format!(
                "call `{}` was given two decisions; give each waiting call one",
                decided.call_id
            ));
        }
    }
    let always: Vec<&str> = decisions
        .iter()
        .filter(|decided| decided.decision == Decision::AlwaysApprove)
        .filter_map(|decided| pending.iter().find(|call| call.call_id == decided.call_id))
        .map(|call| call.tool_name.as_str())
        .collect();
    let missing: Vec<String> = pending
        .iter()
        .filter(|call| !always.contains(&call.tool_name.as_str()))
        .filter(|call| {
            !decisions
                .iter()
                .any(|decided| decided.call_id == call.call_id)
        })
        .map(|call| format!("`{}` ({})", call.call_id, call.tool_name))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "every waiting call needs a decision; missing: {}",
            missing.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn waiting(id: &str, tool: &str) -> PendingApproval {
        PendingApproval::new(id, tool, json!({}), "asks")
    }

    fn decided(id: &str, decision: Decision) -> CallDecision {
        CallDecision {
            call_id: id.into(),
            decision,
        }
    }

    #[test]
    fn a_decision_for_every_waiting_call_is_accepted() {
        let pending = [waiting("c1", "publish"), waiting("c2", "bash")];
        let decisions = [
            decided("c2", Decision::deny("no")),
            decided("c1", Decision::Approve),
        ];
        assert_eq!(check_decisions(&pending, &decisions), Ok(()));
    }

    #[test]
    fn an_unknown_call_is_refused_with_the_waiting_ones() {
        let pending = [waiting("c1", "publish")];
        assert_eq!(
            check_decisions(&pending, &[decided("c9", Decision::Approve)]),
            Err("no call with id `c9` is waiting for approval (waiting: `c1` (publish))".into())
        );
    }

    #[test]
    fn a_call_decided_twice_is_refused() {
        let pending = [waiting("c1", "publish")];
        let twice = [
            decided("c1", Decision::Approve),
            decided("c1", Decision::deny("no")),
        ];
        assert_eq!(
            check_decisions(&pending, &twice),
            Err("call `c1` was given two decisions; give each waiting call one".into())
        );
    }

    #[test]
    fn a_waiting_call_without_a_decision_is_named() {
        let pending = [waiting("c1", "publish"), waiting("c2", "bash")];
        assert_eq!(
            check_decisions(&pending, &[decided("c1", Decision::Approve)]),
            Err("every waiting call needs a decision; missing: `c2` (bash)".into())
        );
    }

    #[test]
    fn always_approving_a_tool_answers_its_other_calls() {
        let pending = [
            waiting("c1", "publish"),
            waiting("c2", "publish"),
            waiting("c3", "bash"),
        ];
        let decisions = [
            decided("c1", Decision::AlwaysApprove),
            decided("c3", Decision::Approve),
        ];
        assert_eq!(check_decisions(&pending, &decisions), Ok(()));
    }
}
