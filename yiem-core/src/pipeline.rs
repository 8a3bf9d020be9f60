//! One tool call's whole path, in the order it happens. The executor only decides *when* each step runs
//! (one call after another, or several at once); *what* happens to a call is all here:
//!
//! 1. **start** ([`Call::new`], [`Call::start`]): look the tool up, open the call's span, emit
//!    `ToolExecutionStart`;
//! 2. **prepare** ([`Call::prepare`]): an unknown tool gives an error result listing the tools; normalize
//!    the raw arguments (a JSON string is parsed, `null` is `{}`); the tool's `prepare` step; bind — parse
//!    into the argument type, the unknown-property check, `validate`, the handler's synchronous part; the
//!    abort check; the `before_tool_call` hook, which may block the call, and the abort check again;
//! 3. **execute** ([`Ready::execute`]): run the tool under its time limit (its own, else the executor's
//!    default) and the batch's token, on a task of its own, so that the limit and an abort hold even when
//!    the tool blocks its thread; then the `after_tool_call` hook, which may patch the result;
//! 4. **end** ([`Call::end`]): record the span's outcome, emit `ToolExecutionEnd`;
//! 5. **message** ([`Call::message`]): the [`ToolResultMessage`], with its `MessageStart`/`MessageEnd`.
//!
//! No step fails: every problem, including a panic anywhere user code runs (the prepare step, `Deserialize`,
//! `validate`, a handler, a hook, the drop of a future or of a panic payload), becomes the call's error
//! result, naming the tool and what went wrong.
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

use crate::args::ArgumentError;
use crate::call::{ToolCall, ToolResultMessage};
use crate::context::{ContextSlot, ToolContext};
use crate::event::{AgentEvent, Emitter};
use crate::guard::{self, Guarded};
use crate::hooks::{AfterHook, AfterToolCallContext, BeforeHook, BeforeToolCallContext, ToolHooks};
use crate::message::{AgentMessage, AssistantMessage};
use crate::registry::ToolStore;
use crate::result::AgentToolResult;
use crate::state::StateMap;
use crate::suggest;
use crate::tool::{AgentTool, Refusal, ToolFuture};

/// What every call of a batch shares.
#[derive(Clone)]
pub(crate) struct CallEnv {
    pub hooks: ToolHooks,
    pub events: Emitter,
    pub default_timeout: Option<Duration>,
    pub assistant: Option<Arc<AssistantMessage>>,
}

/// A call that has started: its tool looked up, its span open, its start event out.
pub(crate) struct Call {
    call: Arc<ToolCall>,
    tool: Option<AgentTool>,
    /// The store's state, for the call's context.
    state: Arc<StateMap>,
    /// Set when the call is answered with this error instead of running (e.g. a denied approval).
    refusal: Option<String>,
    span: tracing::Span,
    /// When the call started (set by [`start`](Self::start)).
    started: Option<Instant>,
}

/// What preparing a call gave.
pub(crate) enum Prepared {
    /// The call ends here with this (error) result.
    Done(AgentToolResult),
    /// The call may run.
    Ready(Ready),
}

/// A call whose arguments bound, ready to run once the `before_tool_call` hook, if any, lets it through.
pub(crate) struct Ready {
    call: Arc<ToolCall>,
    tool: AgentTool,
    /// The prepared arguments, kept only when a hook will look at them.
    args: Option<Arc<Value>>,
    future: ToolFuture,
    /// The call's context, made only if the tool took one.
    ctx: Option<ToolContext>,
    span: tracing::Span,
}

impl Call {
    /// Looks the tool up and opens the call's span; nothing is emitted yet.
    pub(crate) fn new(store: &ToolStore, call: ToolCall) -> Call {
        let (tool, state) = store.lookup(&call.name);
        let call = Arc::new(call);
        let span = tracing::info_span!(
            "tool_call",
            tool = %call.name,
            call_id = %call.id,
            outcome = tracing::field::Empty,
            duration_ms = tracing::field::Empty,
        );
        Call {
            call,
            tool,
            state,
            refusal: None,
            span,
            started: None,
        }
    }

    /// A call that will not run: preparing it gives an error result with `reason`, and no hook sees it.
    pub(crate) fn refused(store: &ToolStore, call: ToolCall, reason: String) -> Call {
        Call {
            refusal: Some(reason),
            ..Call::new(store, call)
        }
    }

    /// Starts the call (step 1): emits `ToolExecutionStart`, and starts its clock when its span is
    /// recorded.
    pub(crate) fn start(&mut self, env: &CallEnv) {
        // The clock is read only for a span someone records.
        if !self.span.is_disabled() {
            self.started = Some(Instant::now());
        }
        if env.events.is_observed() {
            env.events.emit(AgentEvent::ToolExecutionStart {
                call: Arc::clone(&self.call),
            });
        }
    }

    /// Whether the call's tool must run alone (an unknown tool runs nothing, so it never forces order).
    pub(crate) fn is_sequential(&self) -> bool {
        self.refusal.is_none()
            && self
                .tool
                .as_ref()
                .is_some_and(|tool| tool.execution_mode() == crate::tool::ExecutionMode::Sequential)
    }

    /// Prepares the call (step 2 of the module docs). Never fails.
    pub(crate) async fn prepare(
        &self,
        store: &ToolStore,
        env: &CallEnv,
        cancel: &CancellationToken,
    ) -> Prepared {
        in_span(&self.span, self.prepare_inner(store, env, cancel)).await
    }

    async fn prepare_inner(
        &self,
        store: &ToolStore,
        env: &CallEnv,
        cancel: &CancellationToken,
    ) -> Prepared {
        match self.prepare_now(store, env, cancel) {
            Either::Left(prepared) => prepared,
            Either::Right(hook) => hook.await,
        }
    }

    /// Preparing as far as it goes without awaiting anything: the prepared call, or — when there is a
    /// `before_tool_call` hook — the hook's step, still to be awaited.
    fn prepare_now<'a>(
        &'a self,
        store: &ToolStore,
        env: &'a CallEnv,
        cancel: &'a CancellationToken,
    ) -> Either<Prepared, impl Future<Output = Prepared> + 'a> {
        match self.bind_call(store, env, cancel) {
            Ok(ready) => match &env.hooks.before {
                Some(hook) => Either::Right(ready.before(hook, env, cancel)),
                None => Either::Left(Prepared::Ready(ready)),
            },
            Err(result) => Either::Left(Prepared::Done(result)),
        }
    }

    /// The synchronous part of preparing: everything up to the `before_tool_call` hook, then the abort
    /// check. An error is the call's result.
    fn bind_call(
        &self,
        store: &ToolStore,
        env: &CallEnv,
        cancel: &CancellationToken,
    ) -> Result<Ready, AgentToolResult> {
        let call = &self.call;
        if let Some(reason) = &self.refusal {
            return Err(AgentToolResult::error(reason.clone()));
        }
        if cancel.is_cancelled() {
            return Err(not_run(&call.name));
        }
        let Some(tool) = &self.tool else {
            return Err(AgentToolResult::error(unknown_tool(store, &call.name)));
        };
        let hooked = env.hooks.before.is_some() || env.hooks.after.is_some();
        let (bound, ctx) = {
            let mut make = || ToolContext::for_call(call, cancel, env.events.bus(), &self.state);
            let mut slot = ContextSlot::Lazy(&mut make);
            let bound = bind(tool, &call.arguments, &mut slot, hooked);
            (bound, slot.into_made())
        };
        let (future, args) = match bound {
            Ok(bound) => bound,
            Err(refusal) => return Err(AgentToolResult::error(refusal.to_string())),
        };
        // Binding ran user code: the batch may have been aborted meanwhile, and a call of an aborted
        // batch must not start.
        if cancel.is_cancelled() {
            guard::drop_quietly(future);
            return Err(not_run(&call.name));
        }
        Ok(Ready {
            call: Arc::clone(call),
            tool: tool.clone(),
            args,
            future,
            ctx,
            span: self.span.clone(),
        })
    }

    /// Ends the call (step 4): records the span's outcome and emits `ToolExecutionEnd`.
    pub(crate) fn end(&self, env: &CallEnv, result: AgentToolResult) -> AgentToolResult {
        if !self.span.is_disabled() {
            self.span
                .record("outcome", if result.is_error { "error" } else { "ok" });
            self.span.record(
                "duration_ms",
                self.started
                    .map_or(0.0, |started| started.elapsed().as_secs_f64() * 1000.0),
            );
        }
        if !env.events.is_observed() {
            return result;
        }
        let is_error = result.is_error;
        let shared = Arc::new(result);
        env.events.emit(AgentEvent::ToolExecutionEnd {
            call: Arc::clone(&self.call),
            result: Arc::clone(&shared),
            is_error,
        });
        Arc::try_unwrap(shared).unwrap_or_else(|kept| (*kept).clone())
    }

    /// The call's result message (step 5), with its `MessageStart` and `MessageEnd`. The call's id and name
    /// move into the message when nothing else holds the call any more.
    pub(crate) fn message(self, env: &CallEnv, result: AgentToolResult) -> ToolResultMessage {
        let message = match Arc::try_unwrap(self.call) {
            Ok(call) => ToolResultMessage {
                tool_call_id: call.id,
                tool_name: call.name,
                result,
                timestamp: crate::call::now_millis(),
            },
            Err(shared) => ToolResultMessage::new(&shared, result),
        };
        if !env.events.is_observed() {
            return message;
        }
        let shared = Arc::new(AgentMessage::ToolResult(message));
        env.events.emit(AgentEvent::MessageStart {
            message: Arc::clone(&shared),
        });
        env.events.emit(AgentEvent::MessageEnd {
            message: Arc::clone(&shared),
        });
        match Arc::try_unwrap(shared).unwrap_or_else(|kept| (*kept).clone()) {
            AgentMessage::ToolResult(message) => message,
            _ => unreachable!("the message was built as a tool result above"),
        }
    }

    /// Runs the call from preparation to its ended result (steps 2 to 4), for one call at a time.
    pub(crate) async fn run(
        &self,
        store: &ToolStore,
        env: &CallEnv,
        cancel: &CancellationToken,
    ) -> AgentToolResult {
        // One span entry around both steps, each awaited in place.
        let steps = async {
            // `prepare_inner`, in place rather than as a future of its own.
            let prepared = match self.prepare_now(store, env, cancel) {
                Either::Left(prepared) => prepared,
                Either::Right(hook) => hook.await,
            };
            match prepared {
                Prepared::Done(result) => result,
                // Nothing was awaited since the abort check at the end of preparing.
                Prepared::Ready(ready) => ready.execute_inner(env, cancel, true).await,
            }
        };
        let result = in_span(&self.span, steps).await;
        self.end(env, result)
    }
}

impl Ready {
    /// The `before_tool_call` hook, which may block the call; then the abort check again, since the hook
    /// may have taken its time.
    async fn before(
        self,
        before: &BeforeHook,
        env: &CallEnv,
        cancel: &CancellationToken,
    ) -> Prepared {
        // The arguments are kept whenever there is a hook.
        let Some(args) = &self.args else {
            return Prepared::Ready(self);
        };
        let call = &self.call;
        let hook_ctx = BeforeToolCallContext {
            call: Arc::clone(call),
            args: Arc::clone(args),
            tool: self.tool.clone(),
            assistant: env.assistant.clone(),
        };
        let outcome = match guard::catch(|| before(hook_ctx)) {
            Ok(hook) => Guarded::new(hook).await,
            Err(panic) => Err(panic),
        };
        let refusal = match outcome {
            Ok(Ok(None)) if cancel.is_cancelled() => Some(not_run(&call.name)),
            Ok(Ok(None)) => None,
            Ok(Ok(Some(block))) => Some(AgentToolResult::error(block.reason)),
            Ok(Err(error)) => Some(AgentToolResult::error(format!(
                "the before_tool_call hook failed for tool `{}`: {error}",
                call.name
            ))),
            Err(panic) => Some(AgentToolResult::error(format!(
                "the before_tool_call hook panicked for tool `{}`: {panic}",
                call.name
            ))),
        };
        match refusal {
            Some(result) => {
                guard::drop_quietly(self.future);
                Prepared::Done(result)
            }
            None => Prepared::Ready(self),
        }
    }

    /// Runs the call under its time limit and the batch's token, then `after_tool_call` (step 3).
    /// `abort_checked`: the batch's token was looked at with nothing awaited since (preparing ends with
    /// that check), so it need not be looked at again before the tool starts.
    pub(crate) async fn execute(
        self,
        env: &CallEnv,
        cancel: &CancellationToken,
        abort_checked: bool,
    ) -> AgentToolResult {
        let span = self.span.clone();
        in_span(&span, self.execute_inner(env, cancel, abort_checked)).await
    }

    async fn execute_inner(
        self,
        env: &CallEnv,
        cancel: &CancellationToken,
        abort_checked: bool,
    ) -> AgentToolResult {
        let Ready {
            call,
            tool,
            args,
            future,
            ctx,
            span: _,
        } = self;
        let watch = Watch::batch(&tool, env, cancel, abort_checked);
        let result = run_bound(&tool, future, ctx.as_ref(), &call.id, watch).await;
        match (&env.hooks.after, args) {
            (Some(hook), Some(args)) => after(hook, env, call, tool, args, result).await,
            _ => result,
        }
    }
}

/// The `after_tool_call` hook, which may patch the result.
async fn after(
    after: &AfterHook,
    env: &CallEnv,
    call: Arc<ToolCall>,
    tool: AgentTool,
    args: Arc<Value>,
    result: AgentToolResult,
) -> AgentToolResult {
    let hook_ctx = AfterToolCallContext {
        call: Arc::clone(&call),
        args,
        tool,
        is_error: result.is_error,
        result: result.clone(),
        assistant: env.assistant.clone(),
    };
    let outcome = match guard::catch(|| after(hook_ctx)) {
        Ok(hook) => Guarded::new(hook).await,
        Err(panic) => Err(panic),
    };
    match outcome {
        Ok(Ok(None)) => result,
        Ok(Ok(Some(patch))) => patch.apply(result),
        Ok(Err(error)) => AgentToolResult::error(format!(
            "the after_tool_call hook failed for tool `{}`: {error}",
            call.name
        )),
        Err(panic) => AgentToolResult::error(format!(
            "the after_tool_call hook panicked for tool `{}`: {panic}",
            call.name
        )),
    }
}

/// Running a tool in hand, outside any batch: the same path, without hooks and events.
impl AgentTool {
    /// Executes the tool directly (no hooks, no events): useful in tests and scripts. Never fails: bad
    /// arguments, an error, a panic or a timeout each become an error result. The future is `Send` when
    /// `call_id` is.
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
        call_id: impl Into<Box<str>>,
        args: Value,
    ) -> impl Future<Output = AgentToolResult> {
        // The call's own future, not one wrapped around it.
        execute_in_hand(self, call_id, args, None)
    }

    /// Like [`execute`](Self::execute), with a context of your own (cancellation token, update receiver).
    pub async fn execute_with(&self, ctx: ToolContext, args: Value) -> AgentToolResult {
        match self.try_execute(ctx, args).await {
            Ok(result) => result,
            Err(error) => AgentToolResult::error(error.to_string()),
        }
    }

    /// Like [`execute_with`](Self::execute_with), but arguments that do not fit come back as the
    /// [`ArgumentError`], so a caller (a command line, say) can tell bad input from a failed run.
    ///
    /// ```
    /// use serde_json::json;
    /// use yiem_core::{AgentTool, ToolContext};
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
        match bind_in_hand(self, ContextSlot::Made(ctx), &args) {
            Ok((future, ctx)) => {
                let call_id = ctx.as_ref().map_or("", ToolContext::call_id);
                let watch = Watch::limit(self.timeout());
                Ok(run_bound(self, future, ctx.as_ref(), call_id, watch).await)
            }
            Err(Refusal::Arguments(error)) => Err(*error),
            Err(refusal) => Ok(AgentToolResult::error(refusal.to_string())),
        }
    }
}

/// Running one call through a store in hand: the store's tool, with the store's state.
impl ToolStore {
    /// Executes the tool called `name` with the store's [state](ToolStore::with_state), outside any batch
    /// (no hooks, no events), as [`AgentTool::execute`] does. An unknown name is an error result listing
    /// the tools. Useful in tests; an agent runs its calls through a [`ToolExecutor`](crate::ToolExecutor).
    ///
    /// ```
    /// use yiem_core::{AgentTool, ToolStore};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let mut store = ToolStore::new("agent");
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
        call_id: impl Into<Box<str>>,
        name: &str,
        args: Value,
    ) -> AgentToolResult {
        let (tool, state) = self.lookup(name);
        let Some(tool) = tool else {
            return AgentToolResult::error(unknown_tool(self, name));
        };
        execute_in_hand(&tool, call_id, args, Some(&state)).await
    }

    /// A context for the call `call_id` of one of this store's tools in hand, with the store's
    /// [state](ToolStore::with_state): for [`AgentTool::execute_with`] and [`AgentTool::try_execute`].
    ///
    /// ```
    /// use yiem_core::{State, ToolStore, tool};
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
    pub fn context(&self, call_id: impl Into<Box<str>>) -> ToolContext {
        let (_, state) = self.lookup("");
        ToolContext::new(call_id).with_state_map(state)
    }
}

/// Runs a call of `tool` in hand (no hooks, no events), for [`AgentTool::execute`] and
/// [`ToolStore::execute`]: its context is made only if the tool takes one, with `state` when the call goes
/// through a store.
async fn execute_in_hand(
    tool: &AgentTool,
    call_id: impl Into<Box<str>>,
    args: Value,
    state: Option<&Arc<StateMap>>,
) -> AgentToolResult {
    let mut id = LazyId::new(call_id, tool);
    let mut make = || {
        let ctx = ToolContext::new(id.take());
        match state {
            Some(state) => ctx.with_state_map(Arc::clone(state)),
            None => ctx,
        }
    };
    // Bound here, before the one `.await`, so no inner future is moved into this one.
    let bound = bind_in_hand(tool, ContextSlot::Lazy(&mut make), &args);
    drop(args);
    match bound {
        // Nothing to watch: no time limit, and no context whose token could be cancelled.
        Ok((future, None)) if tool.timeout().is_none() => Guarded::new(future)
            .await
            .unwrap_or_else(|panic| panicked(tool.name(), panic)),
        Ok((future, ctx)) => {
            let watch = Watch::limit(tool.timeout());
            run_bound(tool, future, ctx.as_ref(), id.of(&ctx), watch).await
        }
        Err(refusal) => AgentToolResult::error(refusal.to_string()),
    }
}

/// Binds a call of `tool` in hand (no hooks, no events), before anything is awaited: its future and its
/// context, if the tool took one or the caller gave one.
#[inline]
fn bind_in_hand(
    tool: &AgentTool,
    mut slot: ContextSlot<'_>,
    args: &Value,
) -> Result<(ToolFuture, Option<ToolContext>), Refusal> {
    let bound = bind(tool, args, &mut slot, false);
    bound.map(|(future, _)| (future, slot.into_made()))
}

/// The id of a call in hand whose context is made only if its tool takes one. Without a context the id
/// is kept as text only when the tool has a time limit, the one case that logs it (a call that overruns
/// its limit): otherwise a call of a tool that takes no context copies nothing of its id.
struct LazyId<I> {
    pending: Option<I>,
    kept: Option<Box<str>>,
}

impl<I: Into<Box<str>>> LazyId<I> {
    fn new(call_id: I, tool: &AgentTool) -> Self {
        let mut pending = Some(call_id);
        let kept = tool.timeout().and_then(|_| pending.take()).map(Into::into);
        LazyId { pending, kept }
    }

    /// The id, for the context being made.
    fn take(&mut self) -> Box<str> {
        self.kept
            .take()
            .or_else(|| self.pending.take().map(Into::into))
            .unwrap_or_default()
    }

    /// The id for the log: the context's, else the one kept without a context.
    fn of<'a>(&'a self, ctx: &'a Option<ToolContext>) -> &'a str {
        match ctx {
            Some(ctx) => ctx.call_id(),
            None => self.kept.as_deref().unwrap_or_default(),
        }
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
) -> Result<(ToolFuture, Option<Arc<Value>>), Refusal> {
    let name = tool.name();
    // JSON text goes straight into the argument type when nothing needs the arguments as a `Value`.
    if let Value::String(text) = raw
        && !keep_args
    {
        let bound = guard::catch(|| tool.bind_text(text, ctx)).map_err(|panic| {
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
    let future = guard::catch(|| tool.bind(&args, ctx)).map_err(|panic| {
        Refusal::Panicked(format!(
            "tool `{name}` panicked while its call was prepared: {panic}"
        ))
    })??;
    let args = keep_args.then(|| Arc::new(args.into_owned()));
    Ok((future, args))
}

/// What a running call is watched for: the batch's token (else the context's own), and the time limit.
struct Watch<'a> {
    abort: Option<&'a CancellationToken>,
    /// `abort` was looked at just now, with nothing awaited since.
    abort_checked: bool,
    limit: Option<Duration>,
}

impl<'a> Watch<'a> {
    /// A call of a batch: the batch's token, and the tool's time limit, else the executor's default.
    fn batch(
        tool: &AgentTool,
        env: &CallEnv,
        cancel: &'a CancellationToken,
        abort_checked: bool,
    ) -> Self {
        Watch {
            abort: Some(cancel),
            abort_checked,
            limit: tool.timeout().or(env.default_timeout),
        }
    }

    /// A call in hand: its context's token, if it has one, and `limit`.
    fn limit(limit: Option<Duration>) -> Self {
        Watch {
            abort: None,
            abort_checked: false,
            limit,
        }
    }
}

/// Runs a bound call to its end: a panic, the time limit, or cancellation (of `abort`, else of the
/// context's own token) each become an error result. Updates stop at the end. `ctx` is the call's
/// context if the tool took one (a tool that took none cannot see its token or send updates).
async fn run_bound(
    tool: &AgentTool,
    future: ToolFuture,
    ctx: Option<&ToolContext>,
    call_id: &str,
    watch: Watch<'_>,
) -> AgentToolResult {
    let Watch {
        abort,
        abort_checked,
        limit,
    } = watch;
    let name = tool.name();
    let aborted =
        || AgentToolResult::error(format!("tool `{name}` was aborted before it finished"));
    let close = || {
        if let Some(ctx) = ctx {
            ctx.close_updates();
        }
    };
    let cancelled = match abort {
        Some(_) if abort_checked => false,
        Some(token) => token.is_cancelled(),
        None => ctx.is_some_and(ToolContext::is_cancelled),
    };
    if cancelled {
        close();
        guard::drop_quietly(future);
        return aborted();
    }
    let timed_out = |limit: Option<Duration>| {
        if let Some(ctx) = ctx {
            ctx.cancellation_token().cancel();
        }
        let ms = limit.map_or(0, |d| d.as_millis());
        AgentToolResult::error(format!("tool `{name}` timed out after {ms} ms"))
    };
    let panicked = |panic: String| panicked(name, panic);
    // The runtime is asked only when there is a limit or a token to watch: a call in hand with neither
    // (the common `execute`) pays nothing for it.
    let watched =
        limit.is_some() || abort.is_some() || ctx.is_some_and(ToolContext::can_be_cancelled);
    let own_task = watched
        && !tool.runs_on_blocking_pool()
        && Handle::try_current()
            .is_ok_and(|rt| rt.runtime_flavor() != RuntimeFlavor::CurrentThread);
    let result = if own_task {
        // Dropping this future (the batch dropped, a caller's timeout) aborts the task and cancels the
        // call's token, so no call outlives its batch.
        let mut task = AbortOnDrop {
            task: tokio::spawn(future),
            token: ctx.map(|ctx| ctx.cancellation_token().clone()),
        };
        // Cancellation wins a tie: a call cancelled while running is reported as aborted, even if the
        // tool noticed the token and returned on its own.
        let outcome = tokio::select! {
            biased;
            () = wait_cancelled(abort, ctx) => Err(aborted()),
            joined = &mut task.task => Ok(joined),
            () = sleep_or_never(limit) => Err(timed_out(limit)),
        };
        match outcome {
            Ok(Ok(result)) => result,
            Ok(Err(error)) if error.is_panic() => panicked(guard::message_of(error.into_panic())),
            Ok(Err(error)) => {
                AgentToolResult::error(format!("tool `{name}` did not finish: {error}"))
            }
            Err(result) => {
                drop(task);
                tracing::warn!(
                    tool = name,
                    call_id,
                    "the call did not finish in time; its task was detached and its late result will be dropped"
                );
                result
            }
        }
    } else {
        let mut guarded = Guarded::new(future);
        // Most tools finish on their first poll: no timer, no waiter on the token.
        match futures::poll!(&mut guarded) {
            std::task::Poll::Ready(outcome) => outcome.unwrap_or_else(panicked),
            std::task::Poll::Pending => {
                let limit = limit.filter(|_| Handle::try_current().is_ok());
                let outcome = tokio::select! {
                    biased;
                    () = wait_cancelled(abort, ctx) => Err(aborted()),
                    outcome = &mut guarded => Ok(outcome),
                    () = sleep_or_never(limit) => Err(timed_out(limit)),
                };
                // A future stopped early is dropped here, under the guard.
                drop(guarded);
                match outcome {
                    Ok(outcome) => outcome.unwrap_or_else(panicked),
                    Err(result) => result,
                }
            }
        }
    };
    close();
    result
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

/// The result of a call whose tool panicked while it ran.
fn panicked(name: &str, panic: String) -> AgentToolResult {
    AgentToolResult::error(format!("tool `{name}` panicked: {panic}"))
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

async fn sleep_or_never(limit: Option<Duration>) {
    match limit {
        Some(limit) => tokio::time::sleep(limit).await,
        None => std::future::pending().await,
    }
}

/// The result of a call that never ran because the batch was aborted.
pub(crate) fn not_run(name: &str) -> AgentToolResult {
    AgentToolResult::error(format!("tool `{name}` was not run: the batch was aborted"))
}

/// The text for a call of a tool the store does not have: the name, the closest match, every name.
pub(crate) fn unknown_tool(store: &ToolStore, name: &str) -> String {
    let names = store.names();
    if names.is_empty() {
        return format!("tool `{name}` not found: no tools are available");
    }
    let suggestion = suggest::did_you_mean(name, names.iter())
        .map(|closest| format!(" Did you mean `{closest}`?"))
        .unwrap_or_default();
    format!(
        "tool `{name}` not found.{suggestion} Available tools: {}",
        names.join(", ")
    )
}
