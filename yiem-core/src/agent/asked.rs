//! Questions a tool asks while an agent runs it with nobody to answer at once (no
//! [`ElicitationHandler`](crate::ask::ElicitationHandler)): the run pauses on them as it pauses for an
//! approval. This module owns what that takes — the question as the run reports it
//! ([`PendingQuestion`]), the answers and results the run keeps while it waits ([`Asked`], part of the
//! saved run) and the check of an answer against its question's form. The batch's asker that stops a
//! call at a question without an answer is below the executor, in `questions`.
//!
//! The model is the MCP server's `input_required` rounds: a call that asks a question without an answer
//! is stopped there (its future dropped, as a cancelled call's), the batch's other calls finish, and the
//! run waits. Once every question has an answer, the calls that asked run again **from the start**, and
//! their questions are answered in the order they are asked (keys `question-1`, `question-2`, ...): a
//! tool must ask the same questions in the same order each time, and what it does before a question is
//! done again on every round. The results of the batch's other calls are kept, and those calls do not
//! run again. An answer is given back only to the very question it answered: a call that asks another
//! question at that place when it runs again (another message or form) is stopped there and asked again,
//! and the answers from that place on are dropped.
//!
//! The answers given so far are consent a person gave, which the conversation cannot vouch for, and the
//! kept results are what calls returned; so a run that carries them is read back only with a valid tag
//! (see `saved.rs`), and is checked against its reply: the keys are not saved but derived from the order
//! of the answers, and the question that waits is the next one of its call.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::resume::ResumeError;
use super::saved::RunMismatch;
use crate::ask::elicit::{ElicitationAnswer, fit};
use crate::ask::questions::PendingQuestion;
use crate::ask::round::question_key as key;
use crate::ask::round::question_number;
use crate::call::{ToolCall, ToolResultMessage};

impl PendingQuestion {
    /// Checks `answer` against this question's form, as [`AgentRun::answer`](crate::agent::AgentRun::answer)
    /// does: an accepted answer's fields must be the form's, of their types and among their choices;
    /// fields left out get the form's defaults (the answer given back has them); a required field
    /// missing, or one that does not fit, is [`ResumeError::InvalidAnswer`] naming the field. A driver
    /// that takes answers somewhere else (a mailbox) checks them with this before the run does.
    ///
    /// ```
    /// use serde_json::json;
    /// use yiem_core::{agent::{PendingQuestion, ResumeError}, ask::ElicitationAnswer};
    ///
    /// let question: PendingQuestion = serde_json::from_value(json!({
    ///     "call_id": "c1", "tool_name": "t", "key": "question-1", "message": "How many?",
    ///     "schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    /// })).unwrap();
    /// let wrong = json!({"n": "two"}).as_object().unwrap().clone();
    /// let refused = question.check_answer(ElicitationAnswer::Accept(wrong)).unwrap_err();
    /// assert!(matches!(refused, ResumeError::InvalidAnswer { field, .. } if field == "n"));
    /// assert!(question.check_answer(ElicitationAnswer::Decline).is_ok());
    /// ```
    pub fn check_answer(
        &self,
        answer: ElicitationAnswer,
    ) -> Result<ElicitationAnswer, ResumeError> {
        match answer {
            ElicitationAnswer::Accept(content) => fit(&self.schema, content)
                .map(ElicitationAnswer::Accept)
                .map_err(|(field, reason)| ResumeError::InvalidAnswer {
                    call_id: self.call_id.clone(),
                    key: self.key.clone(),
                    field,
                    reason,
                }),
            other => Ok(other),
        }
    }
}

/// An answer as the run keeps it (`{"action": "accept", "content": {…}}`, `decline`, `cancel`: the
/// shape of MCP's elicitation result).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub(super) enum Answer {
    Accept { content: Map<String, Value> },
    Decline,
    Cancel,
}

impl Answer {
    /// The answer as the run keeps it.
    pub(super) fn kept(answer: ElicitationAnswer) -> Answer {
        match answer {
            ElicitationAnswer::Accept(content) => Answer::Accept { content },
            ElicitationAnswer::Decline => Answer::Decline,
            ElicitationAnswer::Cancel => Answer::Cancel,
        }
    }

    fn to_answer(&self) -> ElicitationAnswer {
        match self {
            Answer::Accept { content } => ElicitationAnswer::Accept(content.clone()),
            Answer::Decline => ElicitationAnswer::Decline,
            Answer::Cancel => ElicitationAnswer::Cancel,
        }
    }
}

/// What a run keeps while calls of its batch wait for answers, and while they run again.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct Asked {
    /// Results of the batch's calls that finished.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    done: Vec<ToolResultMessage>,
    /// The calls that asked, in call order, with the answers to their questions so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    calls: Vec<AskingCall>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct AskingCall {
    call_id: String,
    /// The answers to its questions, in the order it asked them (the first is `question-1`'s).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    answers: Vec<Answered>,
}

/// One answer, with the question it answers (given back only to that question).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Answered {
    message: String,
    schema: Value,
    answer: Answer,
}

impl Asked {
    pub(super) fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Keeps a batch whose calls stopped at `questions`: the results of its other calls, and each call
    /// that asked (with the answers it had). Gives back the questions, with their tool names from the
    /// reply's `calls` and in its order; the calls that asked had answers to every earlier question.
    /// Questions of no call of the reply are dropped; when none is left, nothing is kept.
    pub(super) fn stop(
        &mut self,
        results: Vec<ToolResultMessage>,
        mut questions: Vec<PendingQuestion>,
        calls: &[ToolCall],
    ) -> Vec<PendingQuestion> {
        questions.retain(|q| calls.iter().any(|call| call.id == q.call_id));
        questions.sort_by_key(|q| calls.iter().position(|call| call.id == q.call_id));
        questions.dedup_by(|a, b| a.call_id == b.call_id);
        if questions.is_empty() {
            // No call of this batch asked: nothing is kept.
            return questions;
        }
        for question in &mut questions {
            if let Some(call) = calls.iter().find(|call| call.id == question.call_id) {
                question.tool_name.clone_from(&call.name);
            }
            match self
                .calls
                .iter_mut()
                .find(|c| c.call_id == question.call_id)
            {
                // Asked again where it had an answer (it asked otherwise this time): the answers from
                // there on go.
                Some(asking) => {
                    let earlier = question_number(&question.key).map_or(0, |n| n - 1);
                    asking.answers.truncate(earlier);
                }
                None => self.calls.push(AskingCall {
                    call_id: question.call_id.clone(),
                    answers: Vec::new(),
                }),
            }
        }
        // A call that asked before and finished this time is done.
        self.calls
            .retain(|c| questions.iter().any(|q| q.call_id == c.call_id));
        self.calls
            .sort_by_key(|c| calls.iter().position(|call| call.id == c.call_id));
        self.done.extend(
            results
                .into_iter()
                .filter(|r| !questions.iter().any(|q| q.call_id == r.tool_call_id)),
        );
        questions
    }

    /// Records the answers to the `questions` that waited; gives the calls to run again, in call order.
    pub(super) fn answered(
        &mut self,
        mut answers: BTreeMap<String, Answer>,
        questions: &[PendingQuestion],
        calls: &[ToolCall],
    ) -> Vec<ToolCall> {
        for question in questions {
            let answer = answers.remove(&question.call_id);
            let asking = self
                .calls
                .iter_mut()
                .find(|c| c.call_id == question.call_id);
            if let (Some(answer), Some(asking)) = (answer, asking) {
                asking.answers.push(Answered {
                    message: question.message.clone(),
                    schema: question.schema.clone(),
                    answer,
                });
            }
        }
        calls
            .iter()
            .filter(|call| self.calls.iter().any(|c| c.call_id == call.id))
            .cloned()
            .collect()
    }

    /// The number of the question the call `call_id` asks next (one more than its answers).
    pub(super) fn next_number(&self, call_id: &str) -> Option<usize> {
        self.calls
            .iter()
            .find(|c| c.call_id == call_id)
            .map(|c| c.answers.len() + 1)
    }

    /// The questions each asking call had answered, with their answers, in call order and in the
    /// order asked; `calls` gives the tool names.
    pub(super) fn answers(&self, calls: &[ToolCall]) -> Vec<(PendingQuestion, ElicitationAnswer)> {
        let mut all = Vec::new();
        for asking in &self.calls {
            let tool_name = calls
                .iter()
                .find(|call| call.id == asking.call_id)
                .map(|call| call.name.clone())
                .unwrap_or_default();
            for (index, answered) in asking.answers.iter().enumerate() {
                all.push((
                    PendingQuestion {
                        call_id: asking.call_id.clone(),
                        tool_name: tool_name.clone(),
                        key: key(index + 1),
                        message: answered.message.clone(),
                        schema: answered.schema.clone(),
                    },
                    answered.answer.to_answer(),
                ));
            }
        }
        all
    }

    /// Whether every kept result asked the loop to stop (a batch terminates only when all its results
    /// do, those kept from before its calls asked included).
    pub(super) fn kept_terminate(&self) -> bool {
        self.done.iter().all(|result| result.result.terminate)
    }

    /// The results of the batch: the kept ones and `results`, in the order of the reply's `calls`.
    /// Forgets what was kept.
    pub(super) fn merged(
        &mut self,
        results: Vec<ToolResultMessage>,
        calls: &[ToolCall],
    ) -> Vec<ToolResultMessage> {
        if self.calls.is_empty() && self.done.is_empty() {
            return results;
        }
        let mut all: Vec<ToolResultMessage> = std::mem::take(&mut self.done);
        all.extend(results);
        self.calls.clear();
        let mut merged = Vec::with_capacity(all.len());
        for call in calls {
            if let Some(index) = all.iter().position(|r| r.tool_call_id == call.id) {
                merged.push(all.remove(index));
            }
        }
        merged.extend(all);
        merged
    }

    /// Checks the kept state against the reply's `calls`, the questions that wait (`waiting`, with the
    /// answers given so far) or the calls about to run again (`planned`): each asking call is a call of
    /// the reply, every other call of the reply has one kept result, a waiting question is the next one
    /// of an asking call (and every asking call has one), and the plan runs exactly the asking calls.
    pub(super) fn check(
        &self,
        calls: &[&ToolCall],
        waiting: Option<(&[PendingQuestion], &BTreeMap<String, Answer>)>,
        planned: &[&ToolCall],
    ) -> Result<(), RunMismatch> {
        let field = |what: String| Err(RunMismatch::Asked(what));
        for (index, asking) in self.calls.iter().enumerate() {
            if !calls.iter().any(|call| call.id == asking.call_id) {
                return field(format!(
                    "`asked.calls[{index}]` names `{}`, which is not a call of the last reply",
                    asking.call_id
                ));
            }
        }
        let asked = |id: &str| self.calls.iter().filter(|c| c.call_id == id).count() == 1;
        let open = ("asked", "a call that asked");
        super::saved::kept_or_open(calls, &self.done, self.calls.len(), asked, open)
            .or_else(field)?;
        if let Some((questions, answers)) = waiting {
            if questions.len() != self.calls.len() {
                return field(format!(
                    "{} questions wait and {} calls asked: each call that asked waits on one question",
                    questions.len(),
                    self.calls.len()
                ));
            }
            for (index, question) in questions.iter().enumerate() {
                let Some(call) = calls.iter().find(|call| call.id == question.call_id) else {
                    return field(format!(
                        "`phase.questions[{index}]` names call `{}`, which the last reply did not make",
                        question.call_id
                    ));
                };
                let twice = questions[..index]
                    .iter()
                    .any(|q| q.call_id == question.call_id);
                let Some(number) = self.next_number(&question.call_id).filter(|_| !twice) else {
                    return field(format!(
                        "`phase.questions[{index}]` is for call `{}`, which did not ask (or is asked twice)",
                        question.call_id
                    ));
                };
                if question.key != key(number) {
                    return field(format!(
                        "`phase.questions[{index}].key` is `{}`: call `{}` has {} answers, so it waits on `{}`",
                        question.key,
                        question.call_id,
                        number - 1,
                        key(number)
                    ));
                }
                if question.tool_name != call.name {
                    return field(format!(
                        "`phase.questions[{index}].tool_name` differs from call `{}` of the last reply",
                        question.call_id
                    ));
                }
            }
            if let Some(call_id) = answers
                .keys()
                .find(|id| !questions.iter().any(|q| &q.call_id == *id))
            {
                return field(format!(
                    "`phase.answers` answers call `{call_id}`, which waits on no question"
                ));
            }
        }
        for call in planned {
            if !self.calls.iter().any(|c| c.call_id == call.id) || !calls.contains(call) {
                return field(format!(
                    "the plan runs call `{}`, which is not a call that asked, as the reply made it",
                    call.id
                ));
            }
        }
        if waiting.is_none() && planned.len() != self.calls.len() {
            return field("the plan does not run again every call that asked".to_owned());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::ask::elicit::fit;

    fn form() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "minimum": 1},
                "size": {"type": "string", "enum": ["small", "large"]},
                "gift": {"type": "boolean", "default": false},
            },
            "required": ["count", "size", "gift"],
        })
    }

    fn content(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn an_answer_that_fits_gets_the_defaults_of_the_fields_left_out() {
        let fitted = fit(&form(), content(json!({"count": 2, "size": "large"}))).unwrap();
        assert_eq!(
            serde_json::Value::Object(fitted),
            json!({"count": 2, "size": "large", "gift": false})
        );
    }

    #[test]
    fn a_field_of_the_wrong_type_is_named() {
        let refused = fit(&form(), content(json!({"count": "two", "size": "large"}))).unwrap_err();
        assert_eq!(
            refused,
            (
                "count".to_owned(),
                "expected an integer, got the string \"two\"".to_owned()
            )
        );
    }

    #[test]
    fn a_choice_not_offered_an_unknown_field_and_a_missing_one_are_named() {
        let not_offered = fit(&form(), content(json!({"count": 1, "size": "huge"}))).unwrap_err();
        assert_eq!(not_offered.0, "size");
        assert_eq!(
            not_offered.1,
            "`huge` is not one of its choices (small, large)"
        );
        let unknown = fit(
            &form(),
            content(json!({"count": 1, "size": "small", "colour": "red"})),
        )
        .unwrap_err();
        assert_eq!(unknown.0, "colour");
        let missing = fit(&form(), content(json!({"size": "small"}))).unwrap_err();
        assert_eq!(
            missing,
            (
                "count".to_owned(),
                "it is required and was not given".to_owned()
            )
        );
        let below = fit(&form(), content(json!({"count": 0, "size": "small"}))).unwrap_err();
        assert_eq!(below.0, "count");
    }
}
