//! One tool call's whole life, as one value: [`Call`]. Every call runs the same steps in the same order,
//! whoever runs it — a batch of an executor (one call after another, or several at once), an agent, an MCP
//! request, or a caller with a tool in hand ([`AgentTool::execute`], [`ToolStore::execute`]), which is the
//! same path in an empty environment (no hooks, no events, no batch token). The executor only decides
//! *when* each step runs; *what* happens to a call is all here:
//!
//! 1. **new** ([`Call::new`]): look the tool up, open the call's span;
//! 2. **prepare** ([`Call::prepare`], then [`Call::let_through`] when there is a `before_tool_call` hook):
//!    emit `ToolExecutionStart`; a refused call (a denied approval) or an unknown tool ends here with its
//!    error result; the abort check; normalize the raw arguments (a JSON string is parsed, `null` is `{}`);
//!    the tool's `prepare` step; bind — parse into the argument type, the unknown-property check,
//!    `validate`, the handler's synchronous part; the abort check again; then the hook, which may block the
//!    call, and the abort check once more. Only the hook is awaited. A call that ends while preparing ends
//!    at once (step 4);
//! 3. **execute** ([`Call::execute`]): run the tool under its time limit (its own, else the executor's
//!    default) and the batch's token, on a task of its own, so that the limit and an abort hold even when
//!    the tool blocks its thread; then the `after_tool_call` hook, which may patch the result;
//! 4. **end**: record the span's outcome, emit `ToolExecutionEnd`;
//! 5. **finish** ([`Call::finish`]): the [`ToolResultMessage`], with its `MessageStart`/`MessageEnd`.
//!
//! No step fails: every problem, including a panic anywhere user code runs (the prepare step, `Deserialize`,
//! `validate`, a handler, a hook, an event sink, the drop of a future or of a panic payload), becomes the
//! call's error result, naming the tool and what went wrong.
//!
//! # Time limits and blocking tools
//!
//! On a multi-threaded tokio runtime each call runs on its own task, and the pipeline waits on that task
//! beside the timer and the batch's token. A call that does not finish by its limit gets its timeout result
//! at the limit even if it holds its thread (say, an `async fn` that calls `std::thread::sleep`); an abort
//! returns at once. Such a stuck task is detached: its token is cancelled, it is aborted at its next
//! `.await`, a warning is logged, and whatever it returns late is dropped. Write blocking work as a plain
//! `fn` tool, which runs on tokio's blocking pool and never holds an async thread.
//!
//! On a current-thread runtime there is no other thread to run the timer on, so a call runs inline: its
//!
//! This file holds the call and its steps in order; its parts: `steps` (what each step does: the call's
//! context, binding its arguments, the hooks), `watch` (running a bound call under its time limit, its
//! batch's token and its questions), `in_hand` (a call of a tool or a store in hand) and `errors` (the
//! error results of calls that did not run to their end).

mod errors;
mod in_hand;
mod steps;
mod watch;

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub(crate) use self::errors::unknown_tool;
use self::watch::in_span;
use crate::args::{ArgumentChecking, ArgumentError};
use crate::ask::elicit::Asker;
use crate::call::{ToolCall, ToolResultMessage, now_millis};
use crate::event::{AgentEvent, Emitter};
use crate::exec::hooks::ToolHooks;
use crate::guard;
pub(crate) use crate::journal::{CallJournal, CallRecord};
use crate::message::{AgentMessage, AssistantMessage};
use crate::result::AgentToolResult;
use crate::state::StateMap;
use crate::store::registry::{Found, ToolStore};
use crate::telemetry::{self, ToolFailure};
use crate::tool::context::ToolContext;
use crate::tool::definition::{AgentTool, Refusal, ToolFuture};

/// What the calls of one batch share. A call in hand runs in the empty one ([`CallEnv::IN_HAND`]).
#[derive(Default)]
pub(crate) struct CallEnv<'a> {
    pub(crate) hooks: ToolHooks,
    /// Where the call's events go; `None` for a call in hand.
    pub(crate) events: Option<Emitter>,
    /// The time limit of a call whose tool sets none.
    pub(crate) default_timeout: Option<Duration>,
    /// The message whose calls these are, for the hooks.
    pub(crate) assistant: Option<Arc<AssistantMessage>>,
    /// The batch's token: cancelling it aborts every call of the batch. `None` for a call in hand, which
    /// watches its context's own token. Borrowed from the batch's caller: cloning a token takes a lock.
    pub(crate) cancel: Option<Cow<'a, CancellationToken>>,
    /// Who the calls can ask and log to ([`ToolContext::elicit`]); `None`: nobody.
    pub(crate) asker: Option<Arc<dyn Asker>>,
    /// What the calls' programs run with (code mode); `None` when nothing.
    #[cfg(feature = "code-mode")]
    pub(crate) programs: Option<Arc<crate::program::Programs>>,
}

impl CallEnv<'_> {
    /// The environment of a call in hand: no hooks, no events, no default limit, no batch.
    pub(crate) const IN_HAND: &'static CallEnv<'static> = &CallEnv {
        hooks: ToolHooks {
            before: None,
            after: None,
        },
        events: None,
        default_timeout: None,
        assistant: None,
        cancel: None,
        asker: None,
        #[cfg(feature = "code-mode")]
        programs: None,
    };

    /// The emitter, when someone listens.
    fn observed(&self) -> Option<&Emitter> {
        self.events.as_ref().filter(|events| events.is_observed())
    }

    fn is_aborted(&self) -> bool {
        self.cancel
            .as_deref()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// The environment with nothing borrowed, for a run that outlives the batch's borrows (a journal's).
    fn owned(&self) -> CallEnv<'static> {
        CallEnv {
            hooks: self.hooks.clone(),
            events: self.events.clone(),
            default_timeout: self.default_timeout,
            assistant: self.assistant.clone(),
            cancel: self.cancel.as_deref().cloned().map(Cow::Owned),
            asker: self.asker.clone(),
            #[cfg(feature = "code-mode")]
            programs: self.programs.clone(),
        }
    }
}

/// One tool call, from its lookup to its result message (see the module docs). Its steps are functions
/// over its parts that hand each other their outcome — [`prepare`](Self::prepare) gives the [`Prepared`]
/// call that [`execute`](Self::execute) runs to its result, which [`finish`](Self::finish) makes into
/// the message — so the order of the steps is in their types.
pub(crate) struct Call {
    facts: Facts,
    span: tracing::Span,
    /// When the call started, read only for a span someone records.
    started: Option<Instant>,
    /// What preparing the call starts from (taken by it).
    start: Start,
    /// The arguments' problem, when they did not fit the tool (for [`AgentTool::try_execute`]).
    invalid: Option<Box<ArgumentError>>,
    /// When the call finished, as a journal recorded it (else the message is stamped when it is made).
    finished_at: Option<u64>,
}

/// What a call is, fixed from its start: the call, its tool, its store's state.
#[derive(Clone)]
struct Facts {
    subject: Subject,
    tool: Option<AgentTool>,
    /// The state of the call's store, for its context.
    state: Option<Arc<StateMap>>,
    /// How the call's store checks arguments.
    checking: ArgumentChecking,
}

/// The call itself.
#[derive(Clone)]
enum Subject {
    /// A model's call, shared with the call's events and hooks.
    Shared(Arc<ToolCall>),
    /// A call in hand, which nothing shares: its id and arguments (its name is its tool's).
    InHand {
        id: Cow<'static, str>,
        arguments: Value,
    },
}

/// What a call starts from, before it is prepared.
#[derive(Default)]
struct Start {
    /// Answer the call with this error instead of running it (a denied approval); no hook sees it.
    refused: Option<String>,
    /// The tool is not in the store: the error result, listing the tools.
    unknown: Option<String>,
    /// A context the caller made (a call in hand), else made by binding if the tool takes one.
    ctx: Option<ToolContext>,
}

/// A prepared call: ready to run, or ended while preparing (its end recorded and announced).
pub(crate) enum Prepared {
    /// Bound and let through by the hooks.
    Ready(Bound),
    /// Ended with this result.
    Ended(AgentToolResult),
}

impl Prepared {
    /// Whether the call is ready to run.
    pub(crate) fn is_ready(&self) -> bool {
        matches!(self, Prepared::Ready(_))
    }
}

/// A bound call, ready to run.
pub(crate) struct Bound {
    future: ToolFuture,
    /// The call's context, made only if the tool took one.
    ctx: Option<ToolContext>,
    /// The prepared arguments, kept only when a hook will look at them.
    args: Option<Arc<Value>>,
}

/// How a call ends.
enum Ending {
    /// Without running, with this error text.
    Refused(String),
    /// Without running: the arguments do not fit the tool.
    Invalid(Box<ArgumentError>),
}

impl From<Refusal> for Ending {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Arguments(error) => Ending::Invalid(error),
            other => Ending::Refused(other.to_string()),
        }
    }
}

impl Call {
    /// A call of a store's tool: looks the tool up and opens the call's span; nothing is emitted yet.
    pub(crate) fn new(store: &ToolStore, call: ToolCall) -> Call {
        let found = store.lookup(&call.name);
        let unknown = match &found.tool {
            None => Some(unknown_tool(store, &call.name)),
            Some(_) => None,
        };
        let Found {
            tool,
            state,
            checking,
        } = found;
        let call = Subject::Shared(Arc::new(call));
        Call::with(call, tool, Some(state), checking, None, unknown, None)
    }

    /// A call that will not run: preparing it gives an error result with `reason`, and no hook sees it.
    pub(crate) fn refused(store: &ToolStore, call: ToolCall, reason: String) -> Call {
        let Found {
            tool,
            state,
            checking,
        } = store.lookup(&call.name);
        let call = Subject::Shared(Arc::new(call));
        Call::with(call, tool, Some(state), checking, Some(reason), None, None)
    }

    /// A call of `tool` in hand: with what its store gives it (state, argument checking) when it came
    /// from one, or with a context the caller made.
    #[inline]
    pub(crate) fn in_hand(
        tool: AgentTool,
        call_id: Cow<'static, str>,
        args: Value,
        store: Option<Found>,
        ctx: Option<ToolContext>,
    ) -> Call {
        let subject = Subject::InHand {
            id: call_id,
            arguments: args,
        };
        let (state, checking) = match store {
            Some(found) => (Some(found.state), found.checking),
            None => (None, ArgumentChecking::default()),
        };
        Call::with(subject, Some(tool), state, checking, None, None, ctx)
    }

    #[inline]
    fn with(
        subject: Subject,
        tool: Option<AgentTool>,
        state: Option<Arc<StateMap>>,
        checking: ArgumentChecking,
        refused: Option<String>,
        unknown: Option<String>,
        ctx: Option<ToolContext>,
    ) -> Call {
        let facts = Facts {
            subject,
            tool,
            state,
            checking,
        };
        let span = telemetry::tool_span(facts.name(), facts.id());
        Call {
            facts,
            span,
            started: None,
            start: Start {
                refused,
                unknown,
                ctx,
            },
            invalid: None,
            finished_at: None,
        }
    }

    /// Whether the call's tool must run alone (a call that will not run never forces order).
    pub(crate) fn is_sequential(&self) -> bool {
        self.start.refused.is_none()
            && self
                .facts
                .tool
                .as_ref()
                .is_some_and(AgentTool::is_sequential)
    }

    /// Runs every step, one after another, to the call's result message.
    #[expect(clippy::manual_async_fn, reason = "an `async fn` holds the call twice")]
    pub(crate) fn run<'a>(
        mut self,
        env: &'a CallEnv<'a>,
        journal: Option<&'a dyn CallJournal>,
    ) -> impl Future<Output = ToolResultMessage> + 'a {
        // A block rather than an `async fn`, whose future would hold the call twice (as its argument,
        // and as the local it is moved into): a `Call` more to copy with every move of the future.
        async move {
            let prepared = match self.prepare(env) {
                Prepared::Ready(bound) if env.hooks.before.is_some() => {
                    self.let_through(bound, env).await
                }
                prepared => prepared,
            };
            let result = self.execute(prepared, env, journal).await;
            self.finish(result, env)
        }
    }

    /// Starts and prepares the call (steps 2 and, for a call that ends here, 4), all but the
    /// `before_tool_call` hook, which [`let_through`](Self::let_through) asks. Never fails. Nothing here
    /// awaits, so a call without that hook is prepared without a future of its own.
    pub(crate) fn prepare(&mut self, env: &CallEnv<'_>) -> Prepared {
        self.started = telemetry::tool_started(&self.span, || match &self.facts.subject {
            Subject::Shared(call) => Some(call.arguments.clone()),
            Subject::InHand { arguments, .. } => Some(arguments.clone()),
        });
        if let Some(events) = env.observed() {
            events.emit(AgentEvent::ToolExecutionStart {
                call: self.facts.shared(),
            });
        }
        let start = std::mem::take(&mut self.start);
        match self.span.in_scope(|| self.facts.bound(start, env)) {
            Ok(bound) => Prepared::Ready(bound),
            Err(ending) => Prepared::Ended(self.end_early(env, ending)),
        }
    }

    /// Asks the `before_tool_call` hook about a prepared call (the rest of step 2): ready when it lets the
    /// call through, else ended with why.
    pub(crate) async fn let_through(&mut self, bound: Bound, env: &CallEnv<'_>) -> Prepared {
        if let (Some(before), Some(args), Some(tool)) =
            (&env.hooks.before, &bound.args, &self.facts.tool)
        {
            let asked = in_span(&self.span, self.facts.before(tool, before, args, env)).await;
            if let Err(refusal) = asked {
                guard::drop_quietly(bound.future);
                return Prepared::Ended(self.end_early(env, Ending::Refused(refusal)));
            }
        }
        Prepared::Ready(bound)
    }

    /// Runs a ready call under its time limit and the batch's token, then `after_tool_call`, and ends it
    /// (steps 3 and 4), to its result; a call that ended while preparing gives the result it ended with.
    /// With a `journal`, the run and the hook go through it (on a replay it gives the recorded result and
    /// the call does not run).
    pub(crate) async fn execute(
        &mut self,
        prepared: Prepared,
        env: &CallEnv<'_>,
        journal: Option<&dyn CallJournal>,
    ) -> AgentToolResult {
        match journal {
            None => self.execute_here(prepared, env).await,
            Some(journal) => self.execute_journaled(prepared, env, journal).await,
        }
    }

    /// [`execute`](Self::execute) without a journal.
    #[expect(
        clippy::manual_async_fn,
        reason = "an `async fn` holds its arguments twice"
    )]
    fn execute_here(
        &mut self,
        prepared: Prepared,
        env: &CallEnv<'_>,
    ) -> impl Future<Output = AgentToolResult> {
        async move {
            match prepared {
                Prepared::Ready(bound) => {
                    let result = in_span(&self.span, self.facts.executed(bound, env)).await;
                    self.end(env, result)
                }
                Prepared::Ended(result) => result,
            }
        }
    }

    /// [`execute`](Self::execute) through a journal.
    async fn execute_journaled(
        &mut self,
        prepared: Prepared,
        env: &CallEnv<'_>,
        journal: &dyn CallJournal,
    ) -> AgentToolResult {
        match prepared {
            Prepared::Ready(bound) => {
                let (facts, owned) = (self.facts.clone(), env.owned());
                let run = Box::pin(async move {
                    let result = facts.executed(bound, &owned).await;
                    CallRecord {
                        result,
                        finished_at: now_millis(),
                    }
                });
                let call = self.facts.shared();
                let record = in_span(&self.span, journal.record(&call, run)).await;
                self.finished_at = Some(record.finished_at);
                self.end(env, record.result)
            }
            // A call that ended while preparing is recorded too, so that every call of a journaled
            // batch has its entry and its message the same stamp on a replay.
            Prepared::Ended(result) => {
                let record = CallRecord {
                    result,
                    finished_at: now_millis(),
                };
                let run = Box::pin(std::future::ready(record));
                let record = journal.record(&self.facts.shared(), run).await;
                self.finished_at = Some(record.finished_at);
                record.result
            }
        }
    }

    /// Ends the call (step 4), to its result: keeps the problem of arguments that did not fit, records
    /// the span's outcome and emits `ToolExecutionEnd`.
    fn end(&mut self, env: &CallEnv<'_>, result: AgentToolResult) -> AgentToolResult {
        let failure = result.is_error.then_some(ToolFailure::Failed);
        self.ended(env, result, failure)
    }

    /// Ends a call that did not run (step 4), to its error result; the problem of arguments that did not
    /// fit is kept (for [`AgentTool::try_execute`]).
    fn end_early(&mut self, env: &CallEnv<'_>, ending: Ending) -> AgentToolResult {
        let (result, failure) = match ending {
            Ending::Refused(reason) if self.facts.tool.is_none() => {
                (AgentToolResult::error(reason), Some(ToolFailure::NotFound))
            }
            Ending::Refused(reason) => (AgentToolResult::error(reason), Some(ToolFailure::Refused)),
            Ending::Invalid(error) => {
                let result = AgentToolResult::error(error.to_string());
                self.invalid = Some(error);
                (result, Some(ToolFailure::InvalidArguments))
            }
        };
        self.ended(env, result, failure)
    }

    /// Records the span's outcome and emits `ToolExecutionEnd`.
    fn ended(
        &mut self,
        env: &CallEnv<'_>,
        result: AgentToolResult,
        failure: Option<ToolFailure>,
    ) -> AgentToolResult {
        telemetry::tool_ended(
            &self.span,
            self.facts.name(),
            self.started,
            &result,
            failure,
        );
        let Some(events) = env.observed() else {
            return result;
        };
        let is_error = result.is_error;
        let shared = Arc::new(result);
        events.emit(AgentEvent::ToolExecutionEnd {
            call: self.facts.shared(),
            result: Arc::clone(&shared),
            is_error,
        });
        Arc::try_unwrap(shared).unwrap_or_else(|kept| (*kept).clone())
    }

    /// The message of the call's `result` (step 5), with its `MessageStart` and `MessageEnd`. The call's
    /// id and name move into the message when nothing else holds the call any more.
    pub(crate) fn finish(self, result: AgentToolResult, env: &CallEnv<'_>) -> ToolResultMessage {
        let timestamp = self.finished_at.unwrap_or_else(now_millis);
        let (tool_call_id, tool_name) = match self.facts.subject {
            Subject::Shared(call) => match Arc::try_unwrap(call) {
                Ok(call) => (call.id, call.name),
                Err(shared) => (shared.id.clone(), shared.name.clone()),
            },
            Subject::InHand { id, .. } => (
                id.into_owned(),
                self.facts
                    .tool
                    .as_ref()
                    .map_or_else(String::new, |tool| tool.name().to_owned()),
            ),
        };
        let message = ToolResultMessage {
            tool_call_id,
            tool_name,
            result,
            timestamp,
        };
        let Some(events) = env.observed() else {
            return message;
        };
        let shared = Arc::new(AgentMessage::ToolResult(message));
        events.emit(AgentEvent::MessageStart {
            message: Arc::clone(&shared),
        });
        events.emit(AgentEvent::MessageEnd {
            message: Arc::clone(&shared),
        });
        match Arc::try_unwrap(shared).unwrap_or_else(|kept| (*kept).clone()) {
            AgentMessage::ToolResult(message) => message,
            _ => unreachable!("the message was built as a tool result above"),
        }
    }

    /// Runs a call in hand to its result (nobody hooks a call in hand, so nothing is asked before it
    /// runs). Arguments that did not fit leave their problem in [`invalid`](Self::invalid); the result is
    /// its text.
    #[expect(
        clippy::manual_async_fn,
        reason = "an `async fn` holds its arguments twice"
    )]
    pub(crate) fn run_in_hand(&mut self) -> impl Future<Output = AgentToolResult> + Send + '_ {
        async move {
            let env = CallEnv::IN_HAND;
            let prepared = self.prepare(env);
            self.execute_here(prepared, env).await
        }
    }

    /// The problem of arguments that did not fit, once the call ended.
    pub(crate) fn invalid(&mut self) -> Option<ArgumentError> {
        self.invalid.take().map(|error| *error)
    }
}
