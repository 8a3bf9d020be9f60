//! What each step does to a call, over its [`Facts`]: the call's context, binding its arguments (every
//! step that runs user code under a guard), the `before_tool_call` hook, and the run itself with the
//! `after_tool_call` hook.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::errors::{code_only_refusal, not_run};
use super::watch::{Watching, run_bound};
use super::{Bound, CallEnv, Ending, Facts, Start, Subject};
use crate::args::ArgumentChecking;
use crate::ask::elicit::Asker;
use crate::call::ToolCall;
use crate::event::AgentEvent;
use crate::exec::hooks::{AfterToolCallContext, BeforeHook, BeforeToolCallContext};
use crate::guard::{self, Guarded};
use crate::result::AgentToolResult;
use crate::tool::context::{ContextSlot, ToolContext, UpdateFn};
use crate::tool::definition::{AgentTool, Refusal, ToolFuture};

impl Facts {
    /// The call's id.
    pub(super) fn id(&self) -> &str {
        match &self.subject {
            Subject::Shared(call) => &call.id,
            Subject::InHand { id, .. } => id,
        }
    }

    /// The called name: the tool's, for a call in hand.
    pub(super) fn name(&self) -> &str {
        match (&self.subject, &self.tool) {
            (Subject::Shared(call), _) => &call.name,
            (Subject::InHand { .. }, Some(tool)) => tool.name(),
            (Subject::InHand { .. }, None) => "",
        }
    }

    /// The call as its events and hooks share it (made now for a call in hand, which has neither).
    pub(super) fn shared(&self) -> Arc<ToolCall> {
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
    pub(super) fn bound(&self, start: Start, env: &CallEnv<'_>) -> Result<Bound, Ending> {
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
    pub(super) async fn before(
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
    pub(super) fn executed(
        &self,
        bound: Bound,
        env: &CallEnv<'_>,
    ) -> impl Future<Output = AgentToolResult> {
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
