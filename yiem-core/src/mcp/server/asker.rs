//! The server's asker: a call's questions, sampling requests and log messages carried to the client,
//! by requests (before 2026-07-28) or as `input_required` rounds (2026-07-28).

use std::collections::BTreeMap;

#[allow(deprecated)]
// roots: deprecated by 2026-07-28 (SEP-2577), which the earlier revisions have
use rmcp::model::ListRootsRequest;

use super::state;
use super::*;
use crate::ask::elicit::ask_in_turn;
use crate::ask::elicit::batch::{Answer, Answers, Question, Root, fitted};
use crate::ask::round::{Given, Round, stopped};
use crate::mcp::convert::{answer_of, elicit_params, sampled, sampling_params};

/// The client of one call, as the call's [`Asker`]: questions go out as `elicitation/create` requests
/// (or, to a client of the 2026-07-28 revision, as the call's `input_required` answer, see [`Rounds`]),
/// log messages as `notifications/message` (in order, through one forwarder, all sent before the
/// result).
#[allow(deprecated)] // logging: see the `use` above
pub(super) struct ClientAsker {
    peer: Peer<RoleServer>,
    /// Why nobody can be asked, if nobody can.
    cannot_ask: Option<&'static str>,
    /// Why no model can be asked for a completion, if none can.
    cannot_sample: Option<&'static str>,
    /// Set for a client that is asked by `input_required` rather than by a request.
    rounds: Option<Arc<Rounds>>,
    level: Level,
    /// To the call's forwarder: its log messages and its progress.
    logs: mpsc::UnboundedSender<Forward>,
    /// What the call has logged so far, against its bounds.
    budget: Arc<LogBudget>,
    /// Whether the request asked for progress (it carries a `progressToken`).
    takes_progress: bool,
}

/// The lowest level of log message a call sends.
pub(super) enum Level {
    /// The connection's, which `logging/setLevel` changes (revisions before 2026-07-28).
    Connection(Arc<Mutex<LogLevel>>),
    /// The request's own (`_meta` `io.modelcontextprotocol/logLevel`, 2026-07-28); none: no messages.
    Request(Option<LogLevel>),
}

/// The questions of one request (`tools/call`, `prompts/get`) of a client of the 2026-07-28 revision,
/// which has no requests from server to client: the request is answered `input_required` with its
/// questions, and the client sends it again with their answers (SEP-2322). The call then runs again
/// from the start, in a new [`Round`] that starts with every answer given so far (carried in the signed
/// `requestState`, see `state`). Questions asked one at a time are keyed by the order asked
/// (`question-1`, ...), a batch's by the asker's keys; an answer is given back only to the question it
/// answered (by its fingerprint), and one that does not fit it is refused (`-32602`).
pub(super) struct Rounds {
    pub(super) round: Round<String, Value>,
    /// Whether the request declares form elicitation, sampling, and roots.
    forms: bool,
    samples: bool,
    roots: bool,
    /// Every question the request asked, by key: what goes to the client if it is open.
    sent: Mutex<BTreeMap<String, InputRequest>>,
    /// The capability a question asked alone needed that the request did not declare, if one did.
    missing: Mutex<Option<&'static str>>,
}

/// Why a question of a batch is not sent to a client of 2026-07-28 whose request did not declare
/// `capability`.
fn undeclared(capability: &str) -> ElicitError {
    let why = format!(
        "the request did not declare the `{capability}` capability \
         (`io.modelcontextprotocol/clientCapabilities`), so the question was not sent"
    );
    match capability {
        "sampling" => ElicitError::CannotSample(why),
        "roots" => ElicitError::CannotListRoots(why),
        _ => ElicitError::CannotAsk(why),
    }
}

impl Rounds {
    fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        mutex
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The capability `question` needs that the request did not declare, if any.
    fn needs(&self, question: &InputRequest) -> Option<&'static str> {
        match question {
            InputRequest::Elicitation(_) => (!self.forms).then_some("elicitation"),
            InputRequest::CreateMessage(_) => (!self.samples).then_some("sampling"),
            InputRequest::ListRoots(_) => (!self.roots).then_some("roots"),
            _ => None,
        }
    }

    /// The answers to `questions` (by key), when each has one; otherwise the call stops, and the
    /// questions without one go to the client.
    async fn answers(&self, questions: Vec<(String, InputRequest)>) -> Vec<Value> {
        let mut asked = Vec::with_capacity(questions.len());
        {
            let mut sent = Self::lock(&self.sent);
            for (key, question) in questions {
                let print =
                    state::fingerprint(&serde_json::to_value(&question).unwrap_or_default());
                sent.insert(key.clone(), question);
                asked.push((key, print));
            }
        }
        match self.round.answers(asked) {
            Some(answers) => answers,
            None => stopped().await,
        }
    }

    /// The answer to a question asked alone, under the next `question-N` key. A question the request's
    /// capabilities do not allow ends the request with `-32021` (see [`missing`](Self::missing)).
    pub(super) async fn ask(&self, question: InputRequest) -> (String, Value) {
        if let Some(capability) = self.needs(&question) {
            *Self::lock(&self.missing) = Some(capability);
            self.round.stop().cancel();
            return stopped().await;
        }
        let key = self.round.next_key();
        let mut answers = self.answers(vec![(key.clone(), question)]).await;
        (key, answers.remove(0))
    }

    /// Stops the call with `refusal` for the client (`-32602`): an answer it gave does not fit.
    async fn refuse<T>(&self, refusal: ElicitError) -> T {
        self.round.refuse(refusal.to_string());
        stopped().await
    }

    /// The capability the call needed and the request did not declare.
    pub(super) fn missing(&self) -> Option<&'static str> {
        *Self::lock(&self.missing)
    }

    /// The questions asked without an answer, for the client to answer, and the signed state that
    /// carries the answers so far and binds the next ones to them.
    pub(super) fn questions(
        &self,
        key: &state::StateKey,
        method: &str,
        name: &str,
    ) -> (InputRequests, String) {
        let open = self.round.take_open();
        let sent = Self::lock(&self.sent);
        let questions: InputRequests = open
            .iter()
            .filter_map(|(key, _)| Some((key.clone(), sent.get(key)?.clone())))
            .collect();
        let state = key.seal(method, name, self.round.given(), open.into_iter().collect());
        (questions, state)
    }
}

/// What one call has logged, against [`MAX_LOG_MESSAGES_PER_CALL`] and [`MAX_LOG_BYTES_PER_CALL`]: a tool
/// that logs in a loop cannot flood the client or fill the server's memory.
#[derive(Default)]
pub(super) struct LogBudget {
    messages: std::sync::atomic::AtomicUsize,
    bytes: std::sync::atomic::AtomicUsize,
    dropped: std::sync::atomic::AtomicUsize,
}

impl LogBudget {
    /// Counts a message of `data`: whether it is within the bounds (else it is counted as dropped).
    pub(super) fn take(&self, data: &Value) -> bool {
        let size = match data {
            Value::String(text) => text.len(),
            other => other.to_string().len(),
        };
        let messages = self.messages.fetch_add(1, Ordering::Relaxed) + 1;
        let bytes = self.bytes.fetch_add(size, Ordering::Relaxed) + size;
        let within = messages <= MAX_LOG_MESSAGES_PER_CALL && bytes <= MAX_LOG_BYTES_PER_CALL;
        if !within {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        within
    }
}

/// Whether a notification reached the client; one that did not is logged (the client went away), and
/// the call's forwarder stops sending.
pub(super) fn delivered(outcome: Result<(), rmcp::service::ServiceError>) -> bool {
    match outcome {
        Ok(()) => true,
        Err(error) => {
            tracing::debug!(%error, "could not send a notification to the MCP client");
            false
        }
    }
}

/// The forwarder of one call's log messages, run beside the call in its task.
pub(super) struct Forwarding {
    /// Sends the call's log messages and progress to the client, in order, until the [`Forward::End`]
    /// sent by `end`.
    pub(super) forwarder: futures::future::BoxFuture<'static, ()>,
    pub(super) end: mpsc::UnboundedSender<Forward>,
}

/// What a call's forwarder reads: the call's log messages and updates, then the call's end.
#[allow(deprecated)] // logging: see the `use` above
pub(super) enum Forward {
    Log(LoggingMessageNotificationParam),
    /// An update of the call, for a request that carries a `progressToken`.
    Progress(Arc<AgentToolResult>),
    /// The call is over: what is logged after this is dropped.
    End,
}

/// Whether `capabilities` include form elicitation (a bare `elicitation: {}` means form, as the
/// specification keeps it compatible).
pub(super) fn asks_forms(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

pub(super) const NO_SAMPLING: &str = "the MCP client did not declare the `sampling` capability, so its model cannot be asked over this \
     connection";

pub(super) const NO_ELICITATION: &str = "the MCP client did not declare the `elicitation` capability (form \
     mode), so no person can be asked over this connection";

impl ClientAsker {
    #[allow(deprecated)] // logging: see the `use` above
    pub(super) fn open(
        server: &McpServer,
        context: &RequestContext<RoleServer>,
        answers: BTreeMap<String, Given<String, Value>>,
    ) -> (Arc<dyn Asker>, Forwarding, Option<Arc<Rounds>>) {
        let (logs, mut receiver) = mpsc::unbounded_channel();
        let budget = Arc::new(LogBudget::default());
        let dropped = Arc::clone(&budget);
        let peer = context.peer.clone();
        let progress_token = context.meta.get_progress_token();
        let takes_progress = progress_token.is_some();
        // Run beside the call, in its task (see `McpServer::call`): a task of its own would cost every
        // call a spawn, and a hop to it and back at the end, though most calls log nothing.
        let forwarder = Box::pin(async move {
            let send = async |message| delivered(peer.notify_logging_message(message).await);
            let mut progress: u32 = 0;
            loop {
                let sent = match receiver.recv().await {
                    Some(Forward::Log(message)) => send(message).await,
                    // Only a request with a token takes progress (see `ClientAsker::takes_progress`).
                    Some(Forward::Progress(partial)) => match &progress_token {
                        Some(token) => {
                            // The count goes up by one per update; the message is the update's text.
                            progress += 1;
                            let mut notification =
                                ProgressNotificationParam::new(token.clone(), f64::from(progress));
                            let text = partial.text_content();
                            if !text.is_empty() {
                                notification = notification.with_message(text);
                            }
                            delivered(peer.notify_progress(notification).await)
                        }
                        None => true,
                    },
                    Some(Forward::End) | None => break,
                };
                if !sent {
                    return;
                }
            }
            let dropped = dropped.dropped.load(Ordering::Relaxed);
            if dropped > 0 {
                let mut note = LoggingMessageNotificationParam::new(
                    rmcp::model::LoggingLevel::Warning,
                    Value::String(format!(
                        "{dropped} more log messages of this call were dropped: a call sends at most \
                         {MAX_LOG_MESSAGES_PER_CALL} messages and {MAX_LOG_BYTES_PER_CALL} bytes of them"
                    )),
                );
                note.logger = Some("yiem".into());
                send(note).await;
            }
        });
        let modern = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let (cannot_ask, cannot_sample, rounds, level) = if modern {
            // No requests to the client: its questions go back as `input_required`, which any
            // transport carries, to a client that says in the request that it answers forms.
            // A question the request's declared capabilities do not allow ends the call with
            // `-32021` (see `Rounds::missing`): the revision forbids relying on undeclared ones.
            let capabilities = context.meta.client_capabilities().unwrap_or_default();
            let rounds = Arc::new(Rounds {
                round: Round::new(answers),
                forms: asks_forms(&capabilities),
                samples: capabilities.sampling.is_some(),
                roots: capabilities.roots.is_some(),
                sent: Mutex::default(),
                missing: Mutex::default(),
            });
            let level = context
                .meta
                .log_level()
                .and_then(|level| serde_json::to_value(level).ok())
                .and_then(|level| serde_json::from_value(level).ok());
            (None, None, Some(rounds), Level::Request(level))
        } else {
            // The transport decides first (the stateless HTTP server cannot carry an answer back),
            // then what the client declared when it connected.
            let (cannot_ask, cannot_sample) = match server.config.cannot_ask {
                Some(why) => (Some(why), Some(why)),
                None => {
                    let peer = &context.peer;
                    let forms = peer
                        .supported_elicitation_modes()
                        .contains(&rmcp::service::ElicitationMode::Form);
                    let samples = peer
                        .peer_info()
                        .is_some_and(|client| client.capabilities.sampling.is_some());
                    (
                        (!forms).then_some(NO_ELICITATION),
                        (!samples).then_some(NO_SAMPLING),
                    )
                }
            };
            let level = Level::Connection(Arc::clone(&server.log_level));
            (cannot_ask, cannot_sample, None, level)
        };
        let end = logs.clone();
        let asker = ClientAsker {
            peer: context.peer.clone(),
            cannot_ask,
            cannot_sample,
            rounds: rounds.clone(),
            level,
            logs,
            budget,
            takes_progress,
        };
        (Arc::new(asker), Forwarding { forwarder, end }, rounds)
    }
}

impl Asker for ClientAsker {
    fn elicit(
        &self,
        question: Elicitation,
    ) -> futures::future::BoxFuture<'static, Result<ElicitationAnswer, ElicitError>> {
        let peer = self.peer.clone();
        let cannot_ask = self.cannot_ask;
        let rounds = self.rounds.clone();
        Box::pin(async move {
            if let Some(why) = cannot_ask {
                return Err(ElicitError::CannotAsk(why.to_owned()));
            }
            let params = elicit_params(&question)?;
            let Some(rounds) = rounds else {
                let answer = peer
                    .create_elicitation(params)
                    .await
                    .map_err(|error| ElicitError::Failed(error.to_string()))?;
                return answer_of(answer);
            };
            let (key, answer) = rounds
                .ask(InputRequest::Elicitation(ElicitRequest::new(params)))
                .await;
            match form_answer(&key, &question.schema, answer) {
                Ok(answer) => Ok(answer),
                Err(refusal) => rounds.refuse(refusal).await,
            }
        })
    }

    #[allow(deprecated)] // sampling: see the `use` above
    fn sample(
        &self,
        request: Sampling,
    ) -> futures::future::BoxFuture<'static, Result<SamplingAnswer, ElicitError>> {
        let peer = self.peer.clone();
        let cannot_sample = self.cannot_sample;
        let rounds = self.rounds.clone();
        Box::pin(async move {
            if let Some(why) = cannot_sample {
                return Err(ElicitError::CannotSample(why.to_owned()));
            }
            let params = sampling_params(&request)?;
            let Some(rounds) = rounds else {
                return match peer.create_message(params).await {
                    Ok(answer) => sampled(
                        "the client's answer",
                        serde_json::to_value(answer).unwrap_or_default(),
                    ),
                    Err(rmcp::service::ServiceError::McpError(error)) => {
                        Ok(SamplingAnswer::Refuse(error.message.into_owned()))
                    }
                    Err(error) => Err(ElicitError::Failed(error.to_string())),
                };
            };
            let (key, answer) = rounds
                .ask(InputRequest::CreateMessage(CreateMessageRequest::new(
                    params,
                )))
                .await;
            match sampled(&format!("the client's answer `{key}`"), answer) {
                Ok(answer) => Ok(answer),
                Err(refusal) => rounds.refuse(refusal).await,
            }
        })
    }

    fn ask<'a>(
        &'a self,
        server: &'a str,
        questions: Vec<(String, Question)>,
    ) -> futures::future::BoxFuture<'a, Answers> {
        Box::pin(async move {
            match &self.rounds {
                Some(rounds) => ask_in_round(rounds, questions).await,
                None => self.ask_by_requests(server, questions).await,
            }
        })
    }

    fn takes_progress(&self) -> bool {
        self.takes_progress
    }

    fn progress(&self, partial: &Arc<AgentToolResult>) {
        // A send fails only once the call is over, when nobody reads its progress any more.
        let _ = self.logs.send(Forward::Progress(Arc::clone(partial)));
    }

    #[allow(deprecated)] // logging: see the `use` above
    fn log(&self, level: LogLevel, logger: &str, data: &Value) {
        let wanted = match &self.level {
            Level::Connection(wanted) => Some(
                *wanted
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()),
            ),
            Level::Request(wanted) => *wanted,
        };
        if wanted.is_none_or(|wanted| level < wanted) {
            return;
        }
        let Ok(level) = serde_json::to_value(level).and_then(serde_json::from_value) else {
            return;
        };
        if !self.budget.take(data) {
            return;
        }
        let mut message = LoggingMessageNotificationParam::new(level, data.clone());
        message.logger = Some(logger.to_owned());
        // A send fails only once the call is over, when nobody reads the log any more.
        let _ = self.logs.send(Forward::Log(message));
    }
}

/// The answer `key` to a form `schema`, from a client's elicitation result: refused when it is none,
/// or does not fit the form.
fn form_answer(key: &str, schema: &Value, answer: Value) -> Result<ElicitationAnswer, ElicitError> {
    let answer = serde_json::from_value::<ElicitResult>(answer).map_err(|error| {
        ElicitError::InvalidAnswer(format!(
            "the client's answer `{key}` is not an elicitation result: {error}"
        ))
    })?;
    fitted(key, schema, answer_of(answer)?)
}

/// The roots of a client's `roots/list` result (`{"roots": [{"uri": ..., "name": ...}]}`).
fn roots_of(key: &str, result: Value) -> Result<Vec<Root>, ElicitError> {
    #[derive(serde::Deserialize)]
    struct Listed {
        roots: Vec<Root>,
    }
    serde_json::from_value::<Listed>(result)
        .map(|listed| listed.roots)
        .map_err(|error| {
            ElicitError::InvalidAnswer(format!(
                "the client's answer `{key}` is not a roots list: {error}"
            ))
        })
}

/// A batch asked of a client of 2026-07-28: every question its request's capabilities allow goes out
/// in one round, under its key; the others are answered with why they were not sent.
#[allow(deprecated)] // sampling and roots: see the `use` above
async fn ask_in_round(rounds: &Rounds, questions: Vec<(String, Question)>) -> Answers {
    let mut answers = Answers::new();
    let mut sent = Vec::new();
    let mut kinds = Vec::new();
    for (key, question) in questions {
        let request = match &question {
            Question::Form { message, schema } => {
                elicit_params(&Elicitation::new("", message.clone(), schema.clone()))
                    .map(|params| InputRequest::Elicitation(ElicitRequest::new(params)))
            }
            Question::Sample(request) => sampling_params(request)
                .map(|params| InputRequest::CreateMessage(CreateMessageRequest::new(params))),
            Question::Roots => Ok(InputRequest::ListRoots(ListRootsRequest::default())),
        };
        match request {
            Ok(request) => match rounds.needs(&request) {
                Some(capability) => answers = answers.with(key, Err(undeclared(capability))),
                None => {
                    sent.push((key, request));
                    kinds.push(question);
                }
            },
            Err(error) => answers = answers.with(key, Err(error)),
        }
    }
    if sent.is_empty() {
        return answers;
    }
    let keys: Vec<String> = sent.iter().map(|(key, _)| key.clone()).collect();
    let given = rounds.answers(sent).await;
    for ((key, question), answer) in keys.into_iter().zip(kinds).zip(given) {
        let decoded = match question {
            Question::Form { schema, .. } => form_answer(&key, &schema, answer).map(Answer::Form),
            Question::Sample(_) => {
                sampled(&format!("the client's answer `{key}`"), answer).map(Answer::Sample)
            }
            _ => roots_of(&key, answer).map(Answer::Roots),
        };
        match decoded {
            Ok(answer) => answers = answers.with(key, Ok(answer)),
            Err(refusal) => return rounds.refuse(refusal).await,
        }
    }
    answers
}

impl ClientAsker {
    /// A batch asked of a client of an earlier revision: one request each, in order, each only if the
    /// client declared its capability (else its answer says why).
    #[allow(deprecated)] // sampling and roots: see the `use` above
    async fn ask_by_requests(&self, server: &str, questions: Vec<(String, Question)>) -> Answers {
        ask_in_turn(self, server, questions, |key| {
            Box::pin(self.list_roots(key))
        })
        .await
    }

    /// The client's roots (`roots/list`), if it declared the `roots` capability.
    #[allow(deprecated)] // roots: see the `use` above
    async fn list_roots(&self, key: String) -> Result<Vec<Root>, ElicitError> {
        if let Some(why) = self.cannot_ask {
            return Err(ElicitError::CannotListRoots(why.to_owned()));
        }
        let declared = self
            .peer
            .peer_info()
            .is_some_and(|client| client.capabilities.roots.is_some());
        if !declared {
            return Err(ElicitError::CannotListRoots(
                "the MCP client did not declare the `roots` capability".into(),
            ));
        }
        let listed = self
            .peer
            .list_roots()
            .await
            .map_err(|error| ElicitError::Failed(error.to_string()))?;
        roots_of(&key, serde_json::to_value(listed).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_of_the_wrong_shape_are_refused_naming_their_key() {
        let form = serde_json::json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
        fn refused<T: std::fmt::Debug>(answer: Result<T, ElicitError>) -> String {
            answer.unwrap_err().to_string()
        }
        assert_eq!(
            refused(form_answer("confirm", &form, serde_json::json!(12345))),
            "the user's answer does not fit the question: the client's answer `confirm` is not an \
             elicitation result: invalid type: integer `12345`, expected struct ElicitResult"
        );
        assert_eq!(
            refused(form_answer(
                "confirm",
                &form,
                serde_json::json!({"action": "accept", "content": {"ok": "yes"}})
            )),
            "the user's answer does not fit the question: the field `ok` of the answer `confirm` does \
             not fit the form: expected a boolean, got the string \"yes\""
        );
        assert_eq!(
            refused(roots_of(
                "client_roots",
                serde_json::json!({"roots": "file:///src"})
            )),
            "the user's answer does not fit the question: the client's answer `client_roots` is not a \
             roots list: invalid type: string \"file:///src\", expected a sequence"
        );
        let roots = roots_of(
            "client_roots",
            serde_json::json!({"roots": [{"uri": "file:///src", "name": "src"}]}),
        )
        .unwrap();
        assert_eq!(roots, [Root::new("file:///src").name("src")]);
    }
}
