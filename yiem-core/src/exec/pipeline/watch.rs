//! Running a bound call to its end: on a task of its own beside the timer, the batch's token and the
//! call's question (a multi-threaded runtime), or in place; a panic, the time limit, an abort or a
//! question without an answer each become the call's error result (the module docs: time limits and
//! blocking tools).

use std::future::Future;
use std::time::Duration;

use futures::future::Either;
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use tracing::instrument::Instrumented;

use super::errors::{aborted, panicked, stopped_at_question};
use crate::guard::{self, Guarded};
use crate::result::AgentToolResult;
use crate::tool::context::ToolContext;
use crate::tool::definition::{AgentTool, ToolFuture};

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
pub(super) fn run_bound(
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
pub(super) struct Watching<'a> {
    /// The batch's token (else the context's own is watched).
    pub(super) abort: Option<&'a CancellationToken>,
    pub(super) ctx: Option<&'a ToolContext>,
    pub(super) limit: Option<Duration>,
    pub(super) name: &'a str,
    pub(super) call_id: &'a str,
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

async fn sleep_or_never(limit: Option<Duration>) {
    match limit {
        Some(limit) => tokio::time::sleep(limit).await,
        None => std::future::pending().await,
    }
}

/// `future`, entered in `span` at every poll — unless nobody records the span: then it runs as it is,
/// without `Instrumented`'s clone of the span and its checks at every poll.
pub(super) fn in_span<F: Future>(span: &tracing::Span, future: F) -> Either<F, Instrumented<F>> {
    if span.is_disabled() {
        Either::Left(future)
    } else {
        Either::Right(future.instrument(span.clone()))
    }
}
