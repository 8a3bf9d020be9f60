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
//! limit and an abort take effect at its next `.await`. Without any tokio runtime, time limits do not apply.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::Either;
use serde_json::Value;
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use tracing::instrument::Instrumented;

use crate::args::{ArgumentChecking, ArgumentError};
use crate::ask::elicit::Asker;
use crate::call::{ToolCall, ToolResultMessage, now_millis};
use crate::event::{AgentEvent, Emitter};
use crate::exec::hooks::{AfterToolCallContext, BeforeHook, BeforeToolCallContext, ToolHooks};
use crate::guard::{self, Guarded};
pub(crate) use crate::journal::{CallJournal, CallRecord};
use crate::message::{AgentMessage, AssistantMessage};
use crate::result::AgentToolResult;
use crate::state::StateMap;
use crate::store::registry::{Found, ToolStore};
use crate::suggest;
use crate::telemetry::{self, ToolFailure};
use crate::tool::context::{ContextSlot, ToolContext, UpdateFn};
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

impl Facts {
    /// The call's id.
    fn id(&self) -> &str {
        match &self.subject {
            Subject::Shared(call) => &call.id,
            Subject::InHand { id, .. } => id,
        }
    }

    /// The called name: the tool's, for a call in hand.
    fn name(&self) -> &str {
        match (&self.subject, &self.tool) {
            (Subject::Shared(call), _) => &call.name,
            (Subject::InHand { .. }, Some(tool)) => tool.name(),
            (Subject::InHand { .. }, None) => "",
        }
    }

    /// The call as its events and hooks share it (made now for a call in hand, which has neither).
    fn shared(&self) -> Arc<ToolCall> {
        match &self.subject {
            Subject::Shared(call) => Arc::clone(call),
            Subject::InHand { id, arguments } => Arc::new(ToolCall {
                id: id.to_string(),
                name: self.name().to_owned(),
                arguments: arguments.clone(),
                caller: None,
            }),
        }
    }

    /// The call's context, made when the tool takes one: a child of the batch's token, its partial results
    /// to the batch's events, the store's state, who it can ask.
    fn context(&self, env: &CallEnv<'_>) -> ToolContext {
        let state = self.state.as_ref();
        match &self.subject {
            Subject::Shared(call) => {
                // An asker that keeps something per call (an agent's paused questions) gets its own.
                let own = env.asker.as_ref().and_then(|asker| asker.for_call(call));
                let asker = own.as_ref().or(env.asker.as_ref());
                let ctx = ToolContext::for_call(
                    call,
                    env.cancel.as_deref(),
                    updates(env, call, asker),
                    state,
                    asker,
                );
                #[cfg(feature = "code-mode")]
                if let Some(programs) = &env.programs {
                    return ctx.with_programs(Arc::clone(programs));
                }
                ctx
            }
            Subject::InHand { id, .. } => {
                let ctx = ToolContext::new(id.clone());
                match state {
                    Some(state) => ctx.with_state_map(Arc::clone(state)),
                    None => ctx,
                }
            }
        }
    }

    /// Binds the call: its future, its context (if made), and the prepared arguments when a hook will see
    /// them; or why the call ends.
    fn bound(&self, start: Start, env: &CallEnv<'_>) -> Result<Bound, Ending> {
        let Start {
            refused,
            unknown,
            ctx,
        } = start;
        if let Some(reason) = refused {
            return Err(Ending::Refused(reason));
        }
        if env.is_aborted() {
            return Err(Ending::Refused(not_run(self.name())));
        }
        let (Some(tool), None) = (&self.tool, unknown.as_ref()) else {
            return Err(Ending::Refused(unknown.unwrap_or_default()));
        };
        // A code-only tool called by the model itself (no program made the call).
        if let Subject::Shared(call) = &self.subject
            && tool.is_code_only()
            && call.caller.is_none()
        {
            return Err(Ending::Refused(code_only_refusal(tool.name())));
        }
        let hooked = env.hooks.before.is_some() || env.hooks.after.is_some();
        let arguments = match &self.subject {
            Subject::Shared(call) => &call.arguments,
            Subject::InHand { arguments, .. } => arguments,
        };
        let mut make = || self.context(env);
        let mut slot = match ctx {
            Some(ctx) => ContextSlot::Made(ctx),
            None => ContextSlot::Lazy(&mut make),
        };
        let (future, args) =
            bind(tool, arguments, &mut slot, hooked, self.checking).map_err(Ending::from)?;
        let ctx = slot.into_made();
        // Binding ran user code: the batch may have been aborted meanwhile, and a call of an aborted
        // batch must not start.
        if env.is_aborted() {
            guard::drop_quietly(future);
            return Err(Ending::Refused(not_run(self.name())));
        }
        Ok(Bound { future, ctx, args })
    }

    /// Lets the `before_tool_call` hook see the call: `Err` with the refusal when it blocks, fails or
    /// panics, or when the batch was aborted while it ran.
    async fn before(
        &self,
        tool: &AgentTool,
        before: &BeforeHook,
        args: &Arc<Value>,
        env: &CallEnv<'_>,
    ) -> Result<(), String> {
        let name = self.name();
        let hook_ctx = BeforeToolCallContext {
            call: self.shared(),
            args: Arc::clone(args),
            tool: tool.clone(),
            assistant: env.assistant.clone(),
        };
        let outcome = match guard::catch(|| before(hook_ctx)) {
            Ok(hook) => Guarded::new(hook).await,
            Err(panic) => Err(panic),
        };
        match outcome {
            // The hook may have taken its time: the abort check again.
            Ok(Ok(None)) if env.is_aborted() => Err(not_run(name)),
            Ok(Ok(None)) => Ok(()),
            Ok(Ok(Some(block))) => Err(block.reason),
            Ok(Err(error)) => Err(format!(
                "the before_tool_call hook failed for tool `{name}`: {error}"
            )),
            Err(panic) => Err(format!(
                "the before_tool_call hook panicked for tool `{name}`: {panic}"
            )),
        }
    }

    /// Runs a bound call (see [`run_bound`]), then lets the `after_tool_call` hook see its result.
    #[expect(
        clippy::manual_async_fn,
        reason = "an `async fn` holds its arguments twice"
    )]
    fn executed(&self, bound: Bound, env: &CallEnv<'_>) -> impl Future<Output = AgentToolResult> {
        async move {
            let Some(tool) = &self.tool else {
                return AgentToolResult::error(format!("tool `{}` not found", self.name()));
            };
            let watching = Watching {
                abort: env.cancel.as_deref(),
                ctx: bound.ctx.as_ref(),
                limit: tool.timeout().or(env.default_timeout),
                name: tool.name(),
                call_id: self.id(),
            };
            let result = run_bound(tool, bound.future, watching).await;
            let (Some(after), Some(args)) = (&env.hooks.after, bound.args) else {
                return result;
            };
            let hook_ctx = AfterToolCallContext {
                call: self.shared(),
                args,
                tool: tool.clone(),
                is_error: result.is_error,
                result: result.clone(),
                assistant: env.assistant.clone(),
            };
            let outcome = match guard::catch(|| after(hook_ctx)) {
                Ok(hook) => Guarded::new(hook).await,
                Err(panic) => Err(panic),
            };
            let name = self.name();
            match outcome {
                Ok(Ok(None)) => result,
                Ok(Ok(Some(patch))) => patch.apply(result),
                Ok(Err(error)) => AgentToolResult::error(format!(
                    "the after_tool_call hook failed for tool `{name}`: {error}"
                )),
                Err(panic) => AgentToolResult::error(format!(
                    "the after_tool_call hook panicked for tool `{name}`: {panic}"
                )),
            }
        }
    }
}

/// What the model reads when it calls a code-only tool directly.
fn code_only_refusal(name: &str) -> String {
    format!(
        "tool `{name}` can only be called from code, not directly: call it from a program (in \
         `run_code`, or in your code-execution tool)"
    )
}

/// Where a call's partial results go: to its asker when that takes progress (an MCP client that asked
/// for it), and as `ToolExecutionUpdate` events when someone listens; `None` when nowhere.
fn updates(
    env: &CallEnv<'_>,
    call: &Arc<ToolCall>,
    asker: Option<&Arc<dyn Asker>>,
) -> Option<Box<UpdateFn>> {
    let events = env.observed().cloned();
    let asker = asker.filter(|asker| asker.takes_progress()).cloned();
    if events.is_none() && asker.is_none() {
        return None;
    }
    let call = Arc::clone(call);
    Some(Box::new(move |partial| {
        let partial = Arc::new(partial);
        if let Some(asker) = &asker {
            asker.progress(&partial);
        }
        if let Some(events) = &events {
            events.emit(AgentEvent::ToolExecutionUpdate {
                call: Arc::clone(&call),
                partial,
            });
        }
    }))
}

/// Running a tool in hand, outside any batch: the same `Call` as a batch's, in an empty environment.
impl AgentTool {
    /// Executes the tool directly (no hooks, no events): useful in tests and scripts. Never fails: bad
    /// arguments, an error, a panic or a timeout each become an error result. The future is `Send` when
    /// `call_id` is.
    ///
    /// Approval is the caller's decision here: a call in hand is a program deciding to run the tool, so
    /// a tool that [needs approval](Self::needs_approval) runs without asking anyone. Where a model
    /// decides, the caller asks first — an [`Agent`](crate::agent::Agent) pauses, an
    /// `mcp::McpServer` asks its client, `yiem tools call` asks on the terminal — or
    /// asks itself before calling this (see [`ToolStore::execute`]). Nobody can be asked from inside the
    /// call either: a tool's [`ToolContext::elicit`] gets [`ElicitError::CannotAsk`](crate::ask::ElicitError).
    ///
    /// ```
    /// use yiem_core::tool;
    ///
    /// /// Say hi.
    /// #[tool]
    /// async fn hi() -> &'static str {
    ///     "hi"
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let tool = hi_tool();
    /// let result = tokio::spawn(async move { tool.execute("c1", serde_json::json!({})).await });
    /// assert_eq!(result.await.unwrap().text_content(), "hi");
    /// # });
    /// ```
    pub fn execute(
        &self,
        call_id: impl Into<Cow<'static, str>>,
        args: Value,
    ) -> impl Future<Output = AgentToolResult> + Send + 'static {
        // The call is made when the future first runs: what a caller moves until then is the tool, the
        // id and the arguments, not the whole call's future.
        let (tool, call_id) = (self.clone(), call_id.into());
        async move {
            let mut call = Call::in_hand(tool, call_id, args, None, None);
            call.run_in_hand().await
        }
    }

    /// Like [`execute`](Self::execute), with a context of your own (cancellation token, update receiver).
    pub async fn execute_with(&self, ctx: ToolContext, args: Value) -> AgentToolResult {
        self.try_execute(ctx, args).await.unwrap_or_else(invalid)
    }

    /// Like [`execute_with`](Self::execute_with), but arguments that do not fit come back as the
    /// [`ArgumentError`], so a caller (a command line, say) can tell bad input from a failed run.
    ///
    /// ```
    /// use serde_json::json;
    /// use yiem_core::tool::{AgentTool, ToolContext};
    ///
    /// let echo = AgentTool::builder("echo")
    ///     .description("Repeat the given text.")
    ///     .input_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
    ///     .handler(|_, args: serde_json::Value| async move { args["text"].to_string() })
    ///     .build()
    ///     .unwrap();
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let refused = echo.try_execute(ToolContext::new("c1"), json!({"text": 1})).await;
    /// assert!(refused.unwrap_err().to_string().starts_with("invalid arguments for tool `echo`"));
    /// # });
    /// ```
    pub async fn try_execute(
        &self,
        ctx: ToolContext,
        args: Value,
    ) -> Result<AgentToolResult, ArgumentError> {
        let call_id = Cow::Owned(ctx.call_id().to_owned());
        let mut call = Call::in_hand(self.clone(), call_id, args, None, Some(ctx));
        let result = call.run_in_hand().await;
        match call.invalid() {
            Some(error) => Err(error),
            None => Ok(result),
        }
    }
}

/// Running one call through a store in hand: the store's tool, with the store's state.
impl ToolStore {
    /// Executes the tool called `name` with the store's [state](ToolStore::with_state), outside any batch
    /// (no hooks, no events), as [`AgentTool::execute`] does. An unknown name is an error result listing
    /// the tools. Useful in tests; an agent runs its calls through a [`ToolExecutor`](crate::exec::ToolExecutor).
    ///
    /// Approval is the caller's decision: a tool that [needs approval](AgentTool::needs_approval) runs
    /// here without anyone being asked, because the code that calls this is the one deciding. Code that
    /// runs calls a model chose asks first:
    ///
    /// ```
    /// use yiem_core::{store::ToolStore, tool::AgentTool};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = ToolStore::new("files");
    /// let delete = AgentTool::builder("delete")
    ///     .description("Delete a file.")
    ///     .needs_approval()
    ///     .handler(|_, _| async { "deleted" })
    ///     .build()
    ///     .unwrap();
    /// store.register(delete).unwrap();
    ///
    /// // A call the model asked for: this program asks its user before running it.
    /// let user_says_yes = |tool: &str| tool != "delete"; // stands in for a real prompt
    /// let tool = store.get("delete").unwrap();
    /// let result = if tool.needs_approval() && !user_says_yes(tool.name()) {
    ///     None
    /// } else {
    ///     Some(store.execute("c1", "delete", serde_json::json!({})).await)
    /// };
    /// assert!(result.is_none());
    ///
    /// // Called in hand, the caller has decided: it runs.
    /// assert_eq!(store.execute("c2", "delete", serde_json::json!({})).await.text_content(), "deleted");
    /// # });
    /// ```
    ///
    /// ```
    /// use yiem_core::{store::ToolStore, tool::AgentTool};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = ToolStore::new("agent");
    /// store
    ///     .register(AgentTool::builder("ping").description("Pong.").handler(|_, _| async { "pong" }).build().unwrap())
    ///     .unwrap();
    /// assert_eq!(store.execute("c1", "ping", serde_json::json!({})).await.text_content(), "pong");
    /// assert_eq!(
    ///     store.execute("c2", "pong", serde_json::json!({})).await.text_content(),
    ///     "tool `pong` not found. Did you mean `ping`? Available tools: ping"
    /// );
    /// # });
    /// ```
    pub async fn execute(
        &self,
        call_id: impl Into<Cow<'static, str>>,
        name: &str,
        args: Value,
    ) -> AgentToolResult {
        let found = self.lookup(name);
        let Some(tool) = found.tool.clone() else {
            return AgentToolResult::error(unknown_tool(self, name));
        };
        let mut call = Call::in_hand(tool, call_id.into(), args, Some(found), None);
        call.run_in_hand().await
    }

    /// A context for the call `call_id` of one of this store's tools in hand, with the store's
    /// [state](ToolStore::with_state): for [`AgentTool::execute_with`] and [`AgentTool::try_execute`].
    ///
    /// ```
    /// use yiem_core::prelude::*;
    ///
    /// struct Greeting(&'static str);
    ///
    /// /// Greet.
    /// #[tool]
    /// async fn greet(State(greeting): State<Greeting>) -> &'static str {
    ///     greeting.0
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = ToolStore::new("a").with_state(Greeting("hi"));
    /// let result = greet_tool().try_execute(store.context("c1"), serde_json::json!({})).await;
    /// assert_eq!(result.unwrap().text_content(), "hi");
    /// # });
    /// ```
    pub fn context(&self, call_id: impl Into<Cow<'static, str>>) -> ToolContext {
        let state = self.lookup("").state;
        ToolContext::new(call_id).with_state_map(state)
    }
}

/// Normalizes, prepares and binds `raw` for `tool`, every step under a guard. Returns the call's future
/// and, when `keep_args`, the prepared arguments for the hooks. The call's context is made only if the
/// tool takes one.
#[inline]
fn bind(
    tool: &AgentTool,
    raw: &Value,
    ctx: &mut ContextSlot<'_>,
    keep_args: bool,
    checking: ArgumentChecking,
) -> Result<(ToolFuture, Option<Arc<Value>>), Refusal> {
    let name = tool.name();
    // JSON text goes straight into the argument type when nothing needs the arguments as a `Value`.
    if let Value::String(text) = raw
        && !keep_args
    {
        let bound = guard::catch(|| tool.bind_text(text, ctx, checking)).map_err(|panic| {
            Refusal::Panicked(format!(
                "tool `{name}` panicked while its call was prepared: {panic}"
            ))
        })?;
        if let Some(bound) = bound {
            return bound.map(|future| (future, None));
        }
    }
    // An object needs no normalizing, and without a prepare step it is bound as it came.
    let args = if raw.is_object() && !tool.has_prepare_step() {
        Cow::Borrowed(raw)
    } else {
        guard::catch(|| tool.prepare_arguments(raw))
            .map_err(|panic| {
                Refusal::Panicked(format!(
                    "the prepare step of tool `{name}` panicked: {panic}"
                ))
            })?
            .map_err(Refusal::from)?
    };
    let future = guard::catch(|| tool.bind(&args, ctx, checking)).map_err(|panic| {
        Refusal::Panicked(format!(
            "tool `{name}` panicked while its call was prepared: {panic}"
        ))
    })??;
    let args = keep_args.then(|| Arc::new(args.into_owned()));
    Ok((future, args))
}

/// Runs a bound call to its end: a panic, the time limit, or cancellation (of `abort`, else of the
/// context's own token) each become an error result. Updates stop at the end. `ctx` is the call's
/// context if the tool took one (a tool that took none cannot see its token or send updates).
///
/// Most calls finish without waiting: a call with nothing to watch is simply awaited, and one run in
/// place is polled once before anything is set up. Only a call that must wait is watched ([`watched`]),
/// boxed, so that the timer and the waits it needs are not carried by every call's future.
#[expect(
    clippy::manual_async_fn,
    reason = "an `async fn` holds its arguments twice"
)]
fn run_bound(
    tool: &AgentTool,
    future: ToolFuture,
    mut watching: Watching<'_>,
) -> impl Future<Output = AgentToolResult> {
    async move {
        let name = tool.name();
        let cancelled = match watching.abort {
            Some(token) => token.is_cancelled(),
            None => watching.ctx.is_some_and(ToolContext::is_cancelled),
        };
        let result = if cancelled {
            guard::drop_quietly(future);
            aborted(name)
        } else if watching.limit.is_none()
            && watching.abort.is_none()
            && !watching.ctx.is_some_and(ToolContext::can_be_cancelled)
        {
            // Nothing to watch (the common `execute`): the runtime is not asked at all.
            Guarded::new(future)
                .await
                .unwrap_or_else(|panic| panicked(name, panic))
        } else if !tool.runs_on_blocking_pool()
            && Handle::try_current()
                .is_ok_and(|rt| rt.runtime_flavor() != RuntimeFlavor::CurrentThread)
        {
            // Dropping the task (the batch dropped, a caller's timeout) aborts it and cancels the call's
            // token, so no call outlives its batch.
            // The task runs in the call's span (entered around this future), so what the tool does, an MCP
            // request say, is the call's child.
            let task = AbortOnDrop {
                task: tokio::spawn(in_span(&tracing::Span::current(), future)),
                token: watching.ctx.map(|ctx| ctx.cancellation_token().clone()),
            };
            Box::pin(watched(Work::Task(task), watching)).await
        } else {
            // Most tools finish on their first poll: no timer, no waiter on the token.
            let mut guarded = Guarded::new(future);
            if let std::task::Poll::Ready(outcome) = futures::poll!(&mut guarded) {
                outcome.unwrap_or_else(|panic| panicked(name, panic))
            } else {
                // Without a runtime there is no timer: the limit does not apply.
                watching.limit = watching.limit.filter(|_| Handle::try_current().is_ok());
                Box::pin(watched(Work::InPlace(guarded), watching)).await
            }
        };
        if let Some(ctx) = watching.ctx {
            ctx.close_updates();
        }
        result
    }
}

/// What a running call is watched for: the batch's token (else the context's own), the time limit, and
/// what names the call in its errors and logs.
#[derive(Clone, Copy)]
struct Watching<'a> {
    /// The batch's token (else the context's own is watched).
    abort: Option<&'a CancellationToken>,
    ctx: Option<&'a ToolContext>,
    limit: Option<Duration>,
    name: &'a str,
    call_id: &'a str,
}

/// Where a watched call runs: on a task of its own, or polled in place.
enum Work {
    Task(AbortOnDrop),
    InPlace(Guarded<ToolFuture>),
}

impl Work {
    /// The call's result once it finishes.
    async fn finished(&mut self, name: &str) -> AgentToolResult {
        match self {
            Work::Task(task) => match (&mut task.task).await {
                Ok(result) => result,
                Err(error) if error.is_panic() => {
                    panicked(name, guard::message_of(error.into_panic()))
                }
                Err(error) => {
                    AgentToolResult::error(format!("tool `{name}` did not finish: {error}"))
                }
            },
            Work::InPlace(guarded) => guarded.await.unwrap_or_else(|panic| panicked(name, panic)),
        }
    }
}

/// Waits for `work` beside the token and the timer. Cancellation wins a tie: a call cancelled while
/// running is reported as aborted, even if the tool noticed the token and returned on its own. A call
/// stopped early is dropped under its guard; a stuck task is detached, and its late result dropped.
async fn watched(mut work: Work, watching: Watching<'_>) -> AgentToolResult {
    let Watching {
        abort,
        ctx,
        limit,
        name,
        call_id,
    } = watching;
    let question = ctx.and_then(ToolContext::question_stop);
    let outcome = tokio::select! {
        biased;
        () = wait_cancelled(abort, ctx) => Err(aborted(name)),
        () = wait_question(question.as_ref()) => Err(stopped_at_question(name)),
        result = work.finished(name) => Ok(result),
        () = sleep_or_never(limit) => {
            if let Some(ctx) = ctx {
                ctx.cancellation_token().cancel();
            }
            let ms = limit.map_or(0, |d| d.as_millis());
            Err(AgentToolResult::error(format!("tool `{name}` timed out after {ms} ms")))
        }
    };
    match outcome {
        Ok(result) => result,
        Err(result) => {
            if let Work::Task(_) = work {
                tracing::warn!(
                    tool = name,
                    call_id,
                    "the call did not finish in time; its task was detached and its late result will be dropped"
                );
            }
            drop(work);
            result
        }
    }
}

/// `future`, entered in `span` at every poll — unless nobody records the span: then it runs as it is,
/// without `Instrumented`'s clone of the span and its checks at every poll.
fn in_span<F: Future>(span: &tracing::Span, future: F) -> Either<F, Instrumented<F>> {
    if span.is_disabled() {
        Either::Left(future)
    } else {
        Either::Right(future.instrument(span.clone()))
    }
}

/// The result of a call in hand whose arguments did not fit.
fn invalid(error: ArgumentError) -> AgentToolResult {
    AgentToolResult::error(error.to_string())
}

/// The result of a call that was aborted before its tool finished.
fn aborted(name: &str) -> AgentToolResult {
    AgentToolResult::error(format!("tool `{name}` was aborted before it finished"))
}

/// The result of a call whose tool panicked while it ran.
fn panicked(name: &str, panic: String) -> AgentToolResult {
    AgentToolResult::error(format!("tool `{name}` panicked: {panic}")).mark_panicked()
}

/// A call's task, aborted (and its token cancelled) when dropped.
struct AbortOnDrop {
    task: tokio::task::JoinHandle<AgentToolResult>,
    token: Option<CancellationToken>,
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if !self.task.is_finished() {
            if let Some(token) = &self.token {
                token.cancel();
            }
            self.task.abort();
        }
    }
}

async fn wait_cancelled(abort: Option<&CancellationToken>, ctx: Option<&ToolContext>) {
    match (abort, ctx) {
        (Some(token), _) => token.cancelled().await,
        (None, Some(ctx)) => ctx.cancelled().await,
        (None, None) => std::future::pending().await,
    }
}

async fn wait_question(question: Option<&CancellationToken>) {
    match question {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

/// The result of a call stopped at a question without an answer (the run keeps the question, and the
/// call runs again from the start once it is answered).
fn stopped_at_question(name: &str) -> AgentToolResult {
    AgentToolResult::error(format!(
        "tool `{name}` stopped at a question for the user; it runs again from the start once answered"
    ))
    .with_details(serde_json::json!({ crate::ask::questions::STOPPED_AT_QUESTION: true }))
}

async fn sleep_or_never(limit: Option<Duration>) {
    match limit {
        Some(limit) => tokio::time::sleep(limit).await,
        None => std::future::pending().await,
    }
}

/// The result of a call that never ran because the batch was aborted.
fn not_run(name: &str) -> String {
    format!("tool `{name}` was not run: the batch was aborted")
}

/// The most tool names an unknown-tool result lists.
const LISTED_TOOLS: usize = 50;

/// The text for a call of a tool the store does not have: the name, the closest match (of every tool,
/// deferred ones included), and the names the model can see — at most [`LISTED_TOOLS`], deferred tools
/// only counted, so a catalog of thousands stays a short message.
pub(crate) fn unknown_tool(store: &ToolStore, name: &str) -> String {
    let names = store.names();
    if names.is_empty() {
        return format!("tool `{name}` not found: no tools are available");
    }
    let suggestion = suggest::did_you_mean(name, names.iter())
        .map(|closest| format!(" Did you mean `{closest}`?"))
        .unwrap_or_default();
    let (shown, deferred): (Vec<&String>, Vec<&String>) =
        names.iter().partition(|name| !store.is_deferred(name));
    let mut text = format!("tool `{name}` not found.{suggestion} Available tools: ");
    for (at, name) in shown.iter().take(LISTED_TOOLS).enumerate() {
        if at > 0 {
            text.push_str(", ");
        }
        text.push_str(name);
    }
    if shown.len() > LISTED_TOOLS {
        text.push_str(&format!(", and {} more", shown.len() - LISTED_TOOLS));
    }
    if !deferred.is_empty() {
        let how = if store.contains(crate::store::registry::SEARCH_TOOLS) {
            format!("find them with `{}`", crate::catalog::SEARCH_TOOLS)
        } else {
            "they are not listed".to_owned()
        };
        text.push_str(&format!(" ({} more not shown: {how})", deferred.len()));
    }
    text
}
