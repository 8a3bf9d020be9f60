//! The questions a batch's calls stop at when nobody can answer them at once: [`PendingQuestion`] (a
//! question as a run reports it) and [`AskedQuestions`] (the batch's asker: each call asks in a
//! [`Round`] of its own, the one bookkeeping MCP's `input_required` rounds use too, which gives back the
//! answers already given and stops the call at the first question without one). Below the executor and
//! the agent, which both use it; the agent's side (the answers a run keeps, the check of an answer
//! against its form, the saved run) is in `agent::asked`.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::ask::elicit::{
    Asker, ElicitError, Elicitation, ElicitationAnswer, HandlerAsker, LogLevel,
};
use crate::ask::round::{Given, Round, stopped};
use crate::ask::sample::{Sampling, SamplingAnswer};
use crate::call::ToolCall;

/// The member of a result's details that marks a call stopped at a question.
pub(crate) const STOPPED_AT_QUESTION: &str = "stopped_at_question";

/// A question a tool's call asked that waits for an answer ([`RunStop::AwaitingAnswer`]); answer it
/// with [`Agent::answer`](crate::agent::Agent::answer) (or [`AgentRun::answer`](crate::agent::AgentRun::answer)).
///
/// [`RunStop::AwaitingAnswer`]: crate::agent::RunStop::AwaitingAnswer
///
/// ```
/// use serde_json::json;
/// use yiem_core::agent::PendingQuestion;
///
/// let question: PendingQuestion = serde_json::from_value(json!({
///     "call_id": "c1", "tool_name": "merge", "key": "question-1",
///     "message": "Merge #12 into main?",
///     "schema": {"type": "object", "properties": {"delete_branch": {"type": "boolean"}}},
/// })).unwrap();
/// assert_eq!(question.key, "question-1");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PendingQuestion {
    /// The call that asked, as the model gave its id.
    pub call_id: String,
    /// The tool the call is for.
    pub tool_name: String,
    /// Which of the call's questions this is: `question-1` for its first, `question-2` for the one it
    /// asks once the first is answered, and so on.
    pub key: String,
    /// What is asked, written by the tool: escape it before showing it in a terminal.
    pub message: String,
    /// The form's schema (a flat object of strings, numbers, integers, booleans and enums).
    pub schema: Value,
}

/// The questions the calls of one batch stopped at, when the batch runs on an executor made by
/// [`ToolExecutor::pausing_on_questions`](crate::exec::ToolExecutor::pausing_on_questions): after the batch,
/// [`take`](Self::take) them and report them with
/// [`AgentRun::tools_ran_asking`](crate::agent::AgentRun::tools_ran_asking).
///
/// Inside, it is the batch's asker: each call gets its own, which answers the call's questions from the
/// questions answered so far (the same call, key, message and form), in the order it asks them, and stops
/// the call at the first question without one (recording it). Requests for a completion go to the
/// executor's sampling handler, if any.
#[derive(Clone)]
pub struct AskedQuestions {
    inner: Arc<QuestionsInner>,
}

struct QuestionsInner {
    handlers: HandlerAsker,
    /// The questions answered, with their answers, of each call that runs again.
    answers: Vec<(PendingQuestion, ElicitationAnswer)>,
    asked: Mutex<Vec<PendingQuestion>>,
}

impl AskedQuestions {
    /// A batch's asker, with the questions the calls that run again had answered.
    pub(crate) fn new(
        handlers: HandlerAsker,
        answers: Vec<(PendingQuestion, ElicitationAnswer)>,
    ) -> Self {
        AskedQuestions {
            inner: Arc::new(QuestionsInner {
                handlers,
                answers,
                asked: Mutex::default(),
            }),
        }
    }

    /// The questions the batch's calls stopped at (each once: a second call gives none).
    pub fn take(&self) -> Vec<PendingQuestion> {
        std::mem::take(
            &mut *self
                .inner
                .asked
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }
}

impl std::fmt::Debug for AskedQuestions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AskedQuestions")
            .field("answers", &self.inner.answers.len())
            .finish_non_exhaustive()
    }
}

impl Asker for AskedQuestions {
    fn elicit(
        &self,
        _question: Elicitation,
    ) -> BoxFuture<'static, Result<ElicitationAnswer, ElicitError>> {
        // Only a call of the batch asks, through its own asker (`for_call`).
        Box::pin(std::future::ready(Err(ElicitError::CannotAsk(
            "the question was asked outside a tool call of the agent's batch".into(),
        ))))
    }

    fn sample(&self, request: Sampling) -> BoxFuture<'static, Result<SamplingAnswer, ElicitError>> {
        self.inner.handlers.sample(request)
    }

    fn log(&self, _level: LogLevel, _logger: &str, _data: &Value) {}

    fn for_call(&self, call: &ToolCall) -> Option<Arc<dyn Asker>> {
        // The call's answers, each given back only to the very question it answered.
        let given = self
            .inner
            .answers
            .iter()
            .filter(|(answered, _)| answered.call_id == call.id)
            .map(|(answered, answer)| {
                let question = Form {
                    message: answered.message.clone(),
                    schema: answered.schema.clone(),
                };
                let given = Given {
                    question: Some(question),
                    answer: answer.clone(),
                };
                (answered.key.clone(), given)
            })
            .collect();
        Some(Arc::new(CallQuestions {
            batch: Arc::clone(&self.inner),
            call_id: call.id.clone(),
            tool_name: call.name.clone(),
            round: Round::new(given),
        }))
    }
}

/// A question as the run keeps it with its answer: the message and the form.
#[derive(Clone, Debug, PartialEq)]
struct Form {
    message: String,
    schema: Value,
}

/// One call's [`Asker`] in an [`AskedQuestions`] batch: its [`Round`], whose open question the batch
/// records for the run to report.
struct CallQuestions {
    batch: Arc<QuestionsInner>,
    call_id: String,
    tool_name: String,
    round: Round<Form, ElicitationAnswer>,
}

impl Asker for CallQuestions {
    fn elicit(
        &self,
        question: Elicitation,
    ) -> BoxFuture<'static, Result<ElicitationAnswer, ElicitError>> {
        // A call stopped at a question asks nothing more (it is being dropped).
        if self.round.stop().is_cancelled() {
            return Box::pin(stopped());
        }
        let key = self.round.next_key();
        let form = Form {
            message: question.message,
            schema: question.schema,
        };
        // The batch's list is held while the round decides: the round cancels the call's stop, and the
        // batch (on another thread) may end and `take` the questions as soon as it sees that, so the
        // question must be in the list before the lock is let go.
        let mut asked = self
            .batch
            .asked
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(mut answers) = self.round.answers(vec![(key, form)]) {
            return Box::pin(std::future::ready(Ok(answers.remove(0))));
        }
        for (key, form) in self.round.take_open() {
            asked.push(PendingQuestion {
                call_id: self.call_id.clone(),
                tool_name: self.tool_name.clone(),
                key,
                message: form.message,
                schema: form.schema,
            });
        }
        // The call is stopped here (see `stopped`), and runs again once the question is answered.
        Box::pin(stopped())
    }

    fn sample(&self, request: Sampling) -> BoxFuture<'static, Result<SamplingAnswer, ElicitError>> {
        self.batch.handlers.sample(request)
    }

    fn log(&self, _level: LogLevel, _logger: &str, _data: &Value) {}

    fn stopped(&self) -> Option<CancellationToken> {
        Some(self.round.stop().clone())
    }
}
