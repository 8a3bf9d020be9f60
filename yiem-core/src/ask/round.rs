//! One run of a call that stops at the questions it has no answer to yet and runs again from the start
//! once they are answered: the bookkeeping that MCP's `input_required` rounds (`mcp::server`) and an
//! agent's paused questions ([`questions`](super::questions)) share. It owns the keys (the asker's own,
//! or `question-N` in the order a call asks one at a time), the answers given back (each only to the
//! very question it answered), the questions still open, an answer refused for not fitting its
//! question, and the stop of the call at the first question without an answer. Where the answers come
//! from and how the open questions reach whoever answers them is the surface's (the wire format and the
//! signed state are MCP's; the saved run is the agent's).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio_util::sync::CancellationToken;

/// An answer a round starts with, and the question it answered when that is known: it is given back
/// only to that question (asked again, another question under its key is open again).
#[derive(Clone, Debug)]
pub(crate) struct Given<Q, A> {
    pub(crate) question: Option<Q>,
    pub(crate) answer: A,
}

/// One run of a call: the answers it starts with, by key, and what it asks that has none.
#[derive(Debug)]
pub(crate) struct Round<Q, A> {
    given: BTreeMap<String, Given<Q, A>>,
    /// How many questions the call asked one at a time (`question-N`).
    numbered: AtomicUsize,
    /// The questions asked without an answer, by key, in the order asked.
    open: Mutex<Vec<(String, Q)>>,
    /// Why an answer given was refused (it does not fit its question), if one was.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    refused: Mutex<Option<String>>,
    /// Cancelled when the call asks a question without an answer, or one whose answer is refused.
    stop: CancellationToken,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<Q: PartialEq + Clone, A: Clone> Round<Q, A> {
    /// A run that starts with the answers `given`, by key.
    pub(crate) fn new(given: BTreeMap<String, Given<Q, A>>) -> Self {
        Round {
            given,
            numbered: AtomicUsize::new(0),
            open: Mutex::default(),
            refused: Mutex::default(),
            stop: CancellationToken::new(),
        }
    }

    /// The key of the next question the call asks on its own (`question-1`, `question-2`, ...): a call
    /// that runs again asks in the same order, so each finds its answer by it.
    pub(crate) fn next_key(&self) -> String {
        question_key(self.numbered.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// The answers to `questions`, in their order, when each has one given for that very question;
    /// otherwise the call stops (see [`stop`](Self::stop)) and the questions without one are open.
    pub(crate) fn answers(&self, questions: Vec<(String, Q)>) -> Option<Vec<A>> {
        let mut answers = Vec::with_capacity(questions.len());
        let mut unanswered = Vec::new();
        for (key, question) in questions {
            match self.given.get(&key) {
                Some(given) if given.question.as_ref().is_none_or(|q| *q == question) => {
                    answers.push(given.answer.clone());
                }
                _ => unanswered.push((key, question)),
            }
        }
        if unanswered.is_empty() {
            return Some(answers);
        }
        lock(&self.open).extend(unanswered);
        self.stop.cancel();
        None
    }

    /// Refuses the answer a question was given (it does not fit the question): the call stops, and
    /// whoever gave it is told `why`.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn refuse(&self, why: String) {
        lock(&self.refused).get_or_insert(why);
        self.stop.cancel();
    }

    /// Why an answer was refused, if one was.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn refused(&self) -> Option<String> {
        lock(&self.refused).clone()
    }

    /// The questions without an answer, in the order asked (each once: a second call gives none).
    pub(crate) fn take_open(&self) -> Vec<(String, Q)> {
        std::mem::take(&mut *lock(&self.open))
    }

    /// The answers the run started with.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn given(&self) -> &BTreeMap<String, Given<Q, A>> {
        &self.given
    }

    /// Cancelled when the call must stop where it is: it asked what has no answer yet, or an answer was
    /// refused. The call is then dropped, and runs again from the start once answered.
    pub(crate) fn stop(&self) -> &CancellationToken {
        &self.stop
    }
}

/// What a stopped call waits on: nothing, for ever (it is dropped once its stop is seen).
pub(crate) async fn stopped<T>() -> T {
    std::future::pending().await
}

/// The key of a call's question `number` (counted from 1), in the order the call asks one at a time: a
/// call that runs again once its questions are answered (an agent's paused call, an MCP client's
/// `input_required` round) finds each answer by it.
pub(crate) fn question_key(number: usize) -> String {
    format!("question-{number}")
}

/// The number of a question key (`question-3`: 3).
pub(crate) fn question_number(key: &str) -> Option<usize> {
    key.strip_prefix("question-")?
        .parse()
        .ok()
        .filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(given: &[(&str, Option<&str>, u32)]) -> Round<String, u32> {
        Round::new(
            given
                .iter()
                .map(|(key, question, answer)| {
                    let given = Given {
                        question: question.map(str::to_owned),
                        answer: *answer,
                    };
                    ((*key).to_owned(), given)
                })
                .collect(),
        )
    }

    fn asked(questions: &[(&str, &str)]) -> Vec<(String, String)> {
        questions
            .iter()
            .map(|(key, question)| ((*key).to_owned(), (*question).to_owned()))
            .collect()
    }

    #[test]
    fn every_question_answered_gives_the_answers_in_the_order_asked() {
        let round = round(&[("b", Some("B?"), 2), ("a", None, 1)]);
        assert_eq!(
            round.answers(asked(&[("a", "A?"), ("b", "B?")])),
            Some(vec![1, 2])
        );
        assert!(!round.stop().is_cancelled());
    }

    #[test]
    fn an_answer_to_another_question_under_the_key_leaves_it_open_with_the_unanswered() {
        let round = round(&[("a", Some("A?"), 1)]);
        assert_eq!(round.answers(asked(&[("a", "other?"), ("c", "C?")])), None);
        assert!(round.stop().is_cancelled());
        assert_eq!(round.take_open(), asked(&[("a", "other?"), ("c", "C?")]));
        assert!(round.take_open().is_empty());
    }

    #[test]
    fn questions_asked_one_at_a_time_are_numbered_from_one() {
        let round: Round<String, u32> = round(&[]);
        assert_eq!(round.next_key(), "question-1");
        assert_eq!(round.next_key(), "question-2");
        assert_eq!(question_number("question-2"), Some(2));
        assert_eq!(question_number("question-0"), None);
    }

    #[test]
    fn a_refused_answer_stops_the_call_and_keeps_the_first_reason() {
        let round = round(&[]);
        round.refuse("first".into());
        round.refuse("second".into());
        assert!(round.stop().is_cancelled());
        assert_eq!(round.refused().as_deref(), Some("first"));
    }
}
