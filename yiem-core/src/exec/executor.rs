//! Batches of tool calls: [`ToolExecutor`] decides when each call of a batch runs — one after another, or
//! several at once — and returns exactly one [`ToolResultMessage`] per call, in call order, also on abort.
//! What happens to each call is its [`Call`](crate::exec::pipeline)'s; this module only schedules the steps of
//! calls (permits, the order across batches, results in call order).
//!
//! # Order across batches
//!
//! Batches that share an executor (an MCP server answering several requests at once, say) share its
//! ordering too: a sequential call never overlaps another call of the same executor, while parallel calls
//! overlap freely. A sequential tool that runs a batch on the executor that runs it would wait for itself;
//! give such a tool an executor of its own.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::ask::elicit::{Asker, ElicitationHandler, HandlerAsker};
use crate::ask::questions::{AskedQuestions, STOPPED_AT_QUESTION};
use crate::ask::sample::SamplingHandler;
use crate::call::{ToolCall, ToolResultMessage};
use crate::decision::PlannedCall;
use crate::event::EventBus;
use crate::exec::hooks::ToolHooks;
use crate::exec::order::{Alone, Order, Shared};
use crate::exec::pipeline::{Call, CallEnv, CallJournal, Prepared};
use crate::message::AssistantMessage;
use crate::store::registry::ToolStore;

/// How an executor runs the calls of a batch.
///
/// ```
/// use yiem_core::exec::BatchMode;
///
/// assert_eq!(BatchMode::default(), BatchMode::ToolsDecide);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BatchMode {
    /// Each tool decides: a batch of parallel tools runs concurrently; one sequential tool in a batch makes
    /// the whole batch run in order.
    #[default]
    ToolsDecide,
    /// Every batch runs one call after another, whatever its tools allow.
    Sequential,
}

/// The results of one batch.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolCallBatch {
    /// One message per call, in call order.
    pub messages: Vec<ToolResultMessage>,
    /// Whether the loop should stop: true only when the batch is not empty and every result asks to.
    pub terminate: bool,
}

impl ToolCallBatch {
    /// Whether a call of the batch stopped at a question that had no answer yet (on an executor made by
    /// [`ToolExecutor::pausing_on_questions`]): its result's details say so. A function of the results
    /// alone, so a durable driver that replays recorded results decides the same way whether to read
    /// the questions it journaled.
    pub fn stopped_at_questions(&self) -> bool {
        self.messages.iter().any(|message| {
            message.result.details().get(STOPPED_AT_QUESTION)
                == Some(&serde_json::Value::Bool(true))
        })
    }
}

/// Runs batches of tool calls through the pipeline.
///
/// A batch runs sequentially when the executor's mode is [`BatchMode::Sequential`] or any tool in it is
/// sequential; otherwise its prepared calls run concurrently. On a multi-threaded runtime every call runs
/// on a task of its own (plain-fn tools on blocking threads), so CPU-bound tools run in parallel, and a
/// call's time limit and the batch's abort hold even for a tool that blocks its thread.
///
/// ```
/// use serde_json::json;
/// use yiem_core::{exec::{CancellationToken, ToolCall, ToolExecutor}, store::ToolStore, tool};
///
/// /// Say hello.
/// #[tool(parallel)]
/// async fn hello() -> &'static str {
///     "hello"
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = ToolStore::new("demo");
/// store.register(hello_tool()).unwrap();
/// let calls = vec![
///     ToolCall::new("1", "hello", json!({})),
///     ToolCall::new("2", "helo", json!({})),
/// ];
/// let batch = ToolExecutor::new().execute(&store, calls, &CancellationToken::new()).await;
/// assert_eq!(batch.messages[0].text_content(), "hello");
/// assert_eq!(
///     batch.messages[1].text_content(),
///     "tool `helo` not found. Did you mean `hello`? Available tools: hello"
/// );
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct ToolExecutor {
    mode: BatchMode,
    default_timeout: Option<Duration>,
    hooks: ToolHooks,
    events: EventBus,
    /// Sequential calls hold it for writing, parallel ones for reading (see the module docs).
    order: Arc<Order>,
    /// At most this many calls of this executor run at once (permits are handed out in call order).
    limit: Option<Arc<Semaphore>>,
    max_calls: Option<usize>,
    /// Who the calls can ask ([`with_elicitation`](Self::with_elicitation)).
    asker: Option<Arc<dyn Asker>>,
    /// The handlers behind `asker`.
    handlers: HandlerAsker,
    /// What code-mode programs run with: where their calls are journaled
    /// ([`journaling_program_calls`](Self::journaling_program_calls)), which resume.
    #[cfg(feature = "code-mode")]
    programs: crate::program::Programs,
}

impl ToolExecutor {
    /// An executor that lets each tool decide how it runs, with no hooks and no default time limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets how batches run ([`BatchMode::ToolsDecide`] by default).
    pub fn with_mode(mut self, mode: BatchMode) -> Self {
        self.mode = mode;
        self
    }

    /// The time limit of calls whose tool sets none.
    pub fn with_default_timeout(mut self, limit: Duration) -> Self {
        self.default_timeout = Some(limit);
        self
    }

    /// The time limit of calls whose tool sets none, if any (an MCP server's approval waits as long).
    #[cfg(feature = "mcp")]
    pub(crate) fn default_timeout(&self) -> Option<Duration> {
        self.default_timeout
    }

    /// The hooks run around every call.
    pub fn with_hooks(mut self, hooks: ToolHooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Emits to `events` (share one bus between an agent and its executor).
    pub fn with_events(mut self, events: EventBus) -> Self {
        self.events = events;
        self
    }

    /// Runs at most `calls` tool calls at once across this executor's batches; the others wait their turn
    /// in call order, and results still come back in call order. `0` is taken as `1`.
    ///
    /// ```
    /// use yiem_core::exec::ToolExecutor;
    ///
    /// let executor = ToolExecutor::new().with_max_concurrent_calls(4);
    /// assert_eq!(executor.max_concurrent_calls(), Some(4));
    /// ```
    pub fn with_max_concurrent_calls(mut self, calls: usize) -> Self {
        let calls = calls.clamp(1, Semaphore::MAX_PERMITS);
        self.limit = Some(Arc::new(Semaphore::new(calls)));
        self.max_calls = Some(calls);
        self
    }

    /// Answers the questions the calls ask with [`ToolContext::elicit`](crate::tool::ToolContext::elicit)
    /// with `handler` (without one, a question is [`ElicitError::CannotAsk`](crate::ask::ElicitError)). An
    /// agent's calls run on its executor, so this is how an agent's tools reach a person; an MCP server
    /// asks its client instead.
    ///
    /// ```
    /// use yiem_core::{ask::ElicitationAnswer, exec::ToolExecutor};
    ///
    /// let executor = ToolExecutor::new().with_elicitation(|question: yiem_core::ask::Elicitation| async move {
    ///     eprintln!("a tool asks: {}", question.message);
    ///     ElicitationAnswer::Decline
    /// });
    /// # let _ = executor;
    /// ```
    pub fn with_elicitation(mut self, handler: impl ElicitationHandler) -> Self {
        self.handlers.elicitation = Some(Arc::new(handler));
        self.asker = Some(Arc::new(self.handlers.clone()));
        self
    }

    /// Answers the calls' requests for a completion ([`ToolContext::sample`](crate::tool::ToolContext::sample))
    /// with `handler` (without one, a request is [`ElicitError::CannotAsk`](crate::ask::ElicitError)); an MCP
    /// server asks its client's model instead. For an agent's own model, see
    /// [`model_sampler`](crate::llm::model_sampler).
    ///
    /// ```
    /// use yiem_core::{ask::{Sampling, SamplingAnswer}, exec::ToolExecutor};
    ///
    /// let executor = ToolExecutor::new().with_sampling(|request: Sampling| async move {
    ///     SamplingAnswer::text(format!("{} messages read", request.messages.len()), "a-stand-in")
    /// });
    /// # let _ = executor;
    /// ```
    pub fn with_sampling(mut self, handler: impl SamplingHandler) -> Self {
        self.handlers.sampling = Some(Arc::new(handler));
        self.asker = Some(Arc::new(self.handlers.clone()));
        self
    }

    /// An executor with this one's settings — mode, default time limit, hooks, events and cap — whose
    /// order and cap are its own: its batches do not wait for this executor's, nor these for its. The
    /// durable runner gives each run one, so that conversations never wait for each other while the
    /// calls of one run share its cap and order.
    ///
    /// ```
    /// use yiem_core::exec::ToolExecutor;
    ///
    /// let shared = ToolExecutor::new().with_max_concurrent_calls(2);
    /// assert_eq!(shared.fresh().max_concurrent_calls(), Some(2));
    /// ```
    pub fn fresh(&self) -> ToolExecutor {
        let executor = ToolExecutor {
            order: Arc::default(),
            limit: None,
            max_calls: None,
            ..self.clone()
        };
        match self.max_calls {
            Some(calls) => executor.with_max_concurrent_calls(calls),
            None => executor,
        }
    }

    /// For a driver of the agent protocol that pauses on tools' questions, as [`Agent`](crate::agent::Agent)
    /// does without an elicitation handler: this executor (the same order, cap and sampling handler)
    /// whose calls stop at a question that has no answer yet, and the [`AskedQuestions`] that collects
    /// those questions. `answers` are the questions answered so far, with their answers
    /// ([`AgentRun::question_answers`](crate::agent::AgentRun::question_answers)); each goes back only to the
    /// very question it answered. `None` when this executor has an elicitation handler
    /// ([`with_elicitation`](Self::with_elicitation)): its calls ask the handler instead.
    ///
    /// ```
    /// use yiem_core::{ask::ElicitationAnswer, exec::ToolExecutor};
    ///
    /// let (pausing, asked) = ToolExecutor::new().pausing_on_questions(Vec::new()).unwrap();
    /// assert!(asked.take().is_empty());
    /// # let _ = pausing;
    /// let handled = ToolExecutor::new()
    ///     .with_elicitation(|_question: yiem_core::ask::Elicitation| async { ElicitationAnswer::Decline });
    /// assert!(handled.pausing_on_questions(Vec::new()).is_none());
    /// ```
    pub fn pausing_on_questions(
        &self,
        answers: Vec<(
            crate::ask::questions::PendingQuestion,
            crate::ask::elicit::ElicitationAnswer,
        )>,
    ) -> Option<(ToolExecutor, AskedQuestions)> {
        if self.handlers.elicitation.is_some() {
            return None;
        }
        let questions = AskedQuestions::new(self.handlers.clone(), answers);
        let executor = ToolExecutor {
            asker: Some(Arc::new(questions.clone())),
            ..self.clone()
        };
        Some((executor, questions))
    }

    /// For a driver that journals each call (a durable one, which runs a batch with
    /// [`execute_plan_journaled`](Self::execute_plan_journaled)): this executor (the same order, cap and
    /// handlers) whose calls that run a program — code mode's `run_code` (see [`crate::code`]) — run
    /// each batch of their program's calls journaled in `journal`, one record per call of the program
    /// (ids `<run_code call id>/code/<n>`), so that a replay gives the program its calls' recorded results
    /// instead of running them again. Without it a program's calls run unjournaled, inside the `run_code`
    /// call's own record.
    ///
    /// ```
    /// use yiem_core::exec::{CallJournal, CallRecord, ToolCall, ToolExecutor};
    /// use futures::future::BoxFuture;
    ///
    /// /// Records nothing: runs every call.
    /// struct Passing;
    /// impl CallJournal for Passing {
    ///     fn record<'a>(
    ///         &'a self,
    ///         _call: &ToolCall,
    ///         run: BoxFuture<'static, CallRecord>,
    ///     ) -> BoxFuture<'a, CallRecord> {
    ///         run
    ///     }
    /// }
    ///
    /// let executor = ToolExecutor::new().journaling_program_calls(std::sync::Arc::new(Passing));
    /// # let _ = executor;
    /// ```
    #[cfg(feature = "code-mode")]
    pub fn journaling_program_calls(&self, journal: Arc<dyn CallJournal>) -> ToolExecutor {
        let mut executor = self.clone();
        executor.programs.journal = Some(journal);
        executor
    }

    /// This executor, whose `run_code` calls resume the programs of `resumes` (by call id): what
    /// `AgentConfig::ready_programs` gives a driver's batch.
    #[cfg(feature = "code-mode")]
    pub(crate) fn resuming_programs(
        &self,
        resumes: std::collections::HashMap<String, crate::program::ProgramResume>,
    ) -> ToolExecutor {
        let mut executor = self.clone();
        executor.programs.resumes = Arc::new(resumes);
        executor
    }

    /// The cap set by [`with_max_concurrent_calls`](Self::with_max_concurrent_calls), if any.
    pub fn max_concurrent_calls(&self) -> Option<usize> {
        self.max_calls
    }

    /// The bus this executor emits to: register sinks or subscribe here.
    pub fn events(&self) -> &EventBus {
        &self.events
    }

    /// The executor's mode.
    pub fn mode(&self) -> BatchMode {
        self.mode
    }

    /// Executes `calls` against `store`. Cancelling `cancel` aborts the batch: running calls are cancelled,
    /// calls not yet run get an "aborted" error result, and finished calls keep theirs.
    pub async fn execute(
        &self,
        store: &ToolStore,
        calls: Vec<ToolCall>,
        cancel: &CancellationToken,
    ) -> ToolCallBatch {
        self.run_in(store, calls, &self.env(None, cancel), None)
            .await
    }

    /// Executes the tool calls of `assistant`; hooks see the message.
    pub async fn execute_message(
        &self,
        store: &ToolStore,
        assistant: Arc<AssistantMessage>,
        cancel: &CancellationToken,
    ) -> ToolCallBatch {
        let calls = assistant.tool_calls().cloned().collect();
        self.run_in(store, calls, &self.env(Some(assistant), cancel), None)
            .await
    }

    /// Executes a planned batch: calls to run go through the pipeline, refused ones get their error result
    /// without running; one result per call, in plan order, as for [`execute`](Self::execute).
    pub async fn execute_plan(
        &self,
        store: &ToolStore,
        plan: Vec<PlannedCall>,
        assistant: Option<Arc<AssistantMessage>>,
        cancel: &CancellationToken,
    ) -> ToolCallBatch {
        self.run_in(store, plan, &self.env(assistant, cancel), None)
            .await
    }

    /// Like [`execute_plan`](Self::execute_plan), with each call's run recorded in `journal`: the calls
    /// run as they would without it (concurrently where the batch allows, under this executor's cap and
    /// order), and a driver that replays gets each recorded result back instead of running the call
    /// again.
    pub async fn execute_plan_journaled(
        &self,
        store: &ToolStore,
        plan: Vec<PlannedCall>,
        assistant: Option<Arc<AssistantMessage>>,
        cancel: &CancellationToken,
        journal: &dyn CallJournal,
    ) -> ToolCallBatch {
        let env = self.env(assistant, cancel);
        self.run_in(store, plan, &env, Some(journal)).await
    }

    /// Executes `calls` as [`execute`](Self::execute) does, their questions and log messages going to
    /// `asker` (an MCP server's client) instead of this executor's handler.
    #[cfg(feature = "mcp")]
    pub(crate) async fn execute_asking(
        &self,
        store: &ToolStore,
        calls: Vec<ToolCall>,
        cancel: &CancellationToken,
        asker: Arc<dyn Asker>,
    ) -> ToolCallBatch {
        let mut env = self.env(None, cancel);
        env.asker = Some(asker);
        self.run_in(store, calls, &env, None).await
    }

    fn env<'a>(
        &self,
        assistant: Option<Arc<AssistantMessage>>,
        cancel: &'a CancellationToken,
    ) -> CallEnv<'a> {
        CallEnv {
            hooks: self.hooks.clone(),
            events: Some(self.events.emitter()),
            default_timeout: self.default_timeout,
            assistant,
            cancel: Some(Cow::Borrowed(cancel)),
            asker: self.asker.clone(),
            #[cfg(feature = "code-mode")]
            programs: (!self.programs.is_empty()).then(|| Arc::new(self.programs.clone())),
        }
    }

    /// Schedules the calls of one batch in `env`: all at once when every tool of the batch allows it and
    /// there is more than one, else one after another.
    async fn run_in<C: IntoCall>(
        &self,
        store: &ToolStore,
        calls: Vec<C>,
        env: &CallEnv<'_>,
        journal: Option<&dyn CallJournal>,
    ) -> ToolCallBatch {
        // A call must run alone when the executor is sequential or its tool is, and then its whole batch
        // runs one call after another. A call alone in its batch finds that out once it is made.
        let alone = self.mode == BatchMode::Sequential
            || calls.len() > 1
                && calls
                    .iter()
                    .any(|call| call.runs().is_some_and(|name| store.is_sequential(name)));
        let concurrent = calls.len() > 1 && !alone;
        crate::telemetry::batch(calls.len(), concurrent);
        let messages = if concurrent {
            let calls = calls.into_iter().map(|call| call.into_call(store));
            self.run_concurrent(calls.collect(), env, journal).await
        } else {
            // Each call is made when its turn comes: a batch run one call after another holds no list
            // of calls.
            let mut messages = Vec::with_capacity(calls.len());
            for call in calls {
                let call = call.into_call(store);
                let alone = alone || call.is_sequential();
                let turn = self.turn(alone).await;
                messages.push(call.run(env, journal).await);
                drop(turn);
            }
            messages
        };
        batch_of(messages)
    }

    /// A permit to run, when the executor has a cap. The semaphore is fair and never closed, so permits go
    /// out in the order they are asked for, and acquiring cannot fail.
    async fn permit(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        match &self.limit {
            Some(limit) => limit.acquire().await.ok(),
            None => None,
        }
    }

    /// A turn to run one call, held until the call's message is made (see the module docs): each call's
    /// events (start, end, its message) come before the next call starts. A call `alone` holds the
    /// executor to itself and needs no permit; any other runs beside other batches' parallel calls, with a
    /// permit when there is a cap.
    async fn turn(&self, alone: bool) -> Turn<'_> {
        if alone {
            Turn::Alone {
                _held: self.order.alone().await,
            }
        } else {
            Turn::Shared {
                _held: self.order.shared().await,
                _permit: self.permit().await,
            }
        }
    }

    /// Every call started and prepared in call order before any runs, then the ready ones all at once; so
    /// a batch's events read: the starts (a call refused while preparing ends at once), the ends as calls
    /// finish, then the result messages in call order.
    async fn run_concurrent(
        &self,
        calls: Vec<Call>,
        env: &CallEnv<'_>,
        journal: Option<&dyn CallJournal>,
    ) -> Vec<ToolResultMessage> {
        let mut prepared = Vec::with_capacity(calls.len());
        for mut call in calls {
            let ready = match call.prepare(env) {
                Prepared::Ready(bound) if env.hooks.before.is_some() => {
                    call.let_through(bound, env).await
                }
                prepared => prepared,
            };
            prepared.push((call, ready));
        }
        let ended = {
            let _alongside = self.order.shared().await;
            // `join_all` polls in call order, so permits go out in call order.
            join_all(prepared.into_iter().map(|(mut call, ready)| async move {
                let _permit = match ready.is_ready() {
                    true => self.permit().await,
                    false => None,
                };
                let result = call.execute(ready, env, journal).await;
                (call, result)
            }))
            .await
        };
        ended
            .into_iter()
            .map(|(call, result)| call.finish(result, env))
            .collect()
    }
}

/// A call's turn to run (see [`ToolExecutor::turn`]): held, never read.
enum Turn<'a> {
    /// The executor held to this call alone.
    Alone { _held: Alone<'a> },
    /// The executor shared with other parallel calls, and a permit when it has a cap.
    Shared {
        _held: Shared<'a>,
        _permit: Option<tokio::sync::SemaphorePermit<'a>>,
    },
}

/// What a batch is given: the model's calls, or a plan's (calls to run, and calls refused with their
/// reason). Each becomes its [`Call`] when the batch comes to it.
trait IntoCall {
    /// The name of the tool the call will run; `None` for a call that will not run (a refused one,
    /// which never forces the batch's order).
    fn runs(&self) -> Option<&str>;

    /// The call, looked up in `store`.
    fn into_call(self, store: &ToolStore) -> Call;
}

impl IntoCall for ToolCall {
    fn runs(&self) -> Option<&str> {
        Some(&self.name)
    }

    fn into_call(self, store: &ToolStore) -> Call {
        Call::new(store, self)
    }
}

impl IntoCall for PlannedCall {
    fn runs(&self) -> Option<&str> {
        match self {
            PlannedCall::Run { call } => Some(&call.name),
            PlannedCall::Refuse { .. } => None,
        }
    }

    fn into_call(self, store: &ToolStore) -> Call {
        match self {
            PlannedCall::Run { call } => Call::new(store, call),
            PlannedCall::Refuse { call, reason } => Call::refused(store, call, reason),
        }
    }
}

/// A batch's results: it asks the agent to stop only when it has results and every one of them asks.
fn batch_of(messages: Vec<ToolResultMessage>) -> ToolCallBatch {
    let terminate = !messages.is_empty() && messages.iter().all(|m| m.result.terminate);
    ToolCallBatch {
        messages,
        terminate,
    }
}

/// Executes a batch with a fresh [`ToolExecutor`]; see there.
pub async fn execute_tool_calls(
    store: &ToolStore,
    calls: Vec<ToolCall>,
    cancel: &CancellationToken,
) -> ToolCallBatch {
    ToolExecutor::new().execute(store, calls, cancel).await
}
