//! The per-call pipeline: **prepare** (find the tool, normalize, validate, `before_tool_call`, abort
//! check), **execute** (run with the call's cancellation token, time limit and update channel) and
//! **finalize** (`after_tool_call`). No phase fails: each problem becomes the call's error result.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::call::ToolCall;
use crate::context::ToolContext;
use crate::event::{AgentEvent, EventBus};
use crate::hooks::{AfterToolCallContext, BeforeToolCallContext, ToolHooks};
use crate::message::AssistantMessage;
use crate::registry::ToolStore;
use crate::result::AgentToolResult;
use crate::suggest;
use crate::tool::{AgentTool, ToolFuture, panic_message};

/// What every call of a batch shares.
#[derive(Clone)]
pub(crate) struct CallEnv {
    pub hooks: ToolHooks,
    pub events: EventBus,
    pub default_timeout: Option<Duration>,
    pub assistant: Option<Arc<AssistantMessage>>,
}

/// A call whose arguments are valid and whose hooks let it through, ready to run.
pub(crate) struct ReadyCall {
    pub call: Arc<ToolCall>,
    pub tool: AgentTool,
    /// The prepared arguments, kept only when a hook will look at them.
    pub args: Option<Arc<Value>>,
    future: ToolFuture,
    ctx: ToolContext,
}

/// The outcome of preparing a call.
pub(crate) enum Prepared {
    /// The call ends here with this (error) result.
    Immediate(AgentToolResult),
    /// The call may run.
    Ready(ReadyCall),
}

/// Prepares `call`. Never fails: an unknown tool, bad arguments, a blocking or failing hook, or an abort
/// becomes an immediate error result.
///
/// `tool` is the store's tool of that name, looked up once by the caller.
pub(crate) async fn prepare(
    store: &ToolStore,
    tool: Option<AgentTool>,
    call: &Arc<ToolCall>,
    env: &CallEnv,
    cancel: &CancellationToken,
) -> Prepared {
    let Some(tool) = tool else {
        return Prepared::Immediate(AgentToolResult::error(unknown_tool(store, &call.name)));
    };
    let args = match tool.prepare_arguments(&call.arguments) {
        Ok(args) => args,
        Err(error) => return Prepared::Immediate(AgentToolResult::error(error.to_string())),
    };
    let ctx = call_context(call, cancel, &env.events);
    let future = match tool.bind(&args, ctx.clone()) {
        Ok(future) => future,
        Err(error) => return Prepared::Immediate(AgentToolResult::error(error.to_string())),
    };
    let hooked = env.hooks.before.is_some() || env.hooks.after.is_some();
    let args = hooked.then(|| Arc::new(args.into_owned()));
    if let (Some(before), Some(args)) = (&env.hooks.before, &args) {
        let hook_ctx = BeforeToolCallContext {
            call: Arc::clone(call),
            args: Arc::clone(args),
            tool: tool.clone(),
            assistant: env.assistant.clone(),
        };
        match AssertUnwindSafe(before(hook_ctx)).catch_unwind().await {
            Ok(Ok(None)) => {}
            Ok(Ok(Some(block))) => {
                return Prepared::Immediate(AgentToolResult::error(block.reason));
            }
            Ok(Err(error)) => {
                return Prepared::Immediate(AgentToolResult::error(format!(
                    "the before_tool_call hook failed for tool `{}`: {error}",
                    call.name
                )));
            }
            Err(panic) => {
                return Prepared::Immediate(AgentToolResult::error(format!(
                    "the before_tool_call hook panicked for tool `{}`: {}",
                    call.name,
                    panic_message(panic.as_ref())
                )));
            }
        }
    }
    if cancel.is_cancelled() {
        return Prepared::Immediate(not_run(&call.name));
    }
    Prepared::Ready(ReadyCall {
        call: Arc::clone(call),
        tool,
        args,
        future,
        ctx,
    })
}

/// Runs a prepared call and finalizes its result.
pub(crate) async fn execute_and_finalize(ready: ReadyCall, env: &CallEnv) -> AgentToolResult {
    let ReadyCall {
        call,
        tool,
        args,
        future,
        ctx,
    } = ready;
    let result = tool.run(future, &ctx, env.default_timeout).await;
    let (Some(after), Some(args)) = (&env.hooks.after, args) else {
        return result;
    };
    let hook_ctx = AfterToolCallContext {
        call: Arc::clone(&call),
        args,
        tool,
        is_error: result.is_error,
        result: result.clone(),
        assistant: env.assistant.clone(),
    };
    match AssertUnwindSafe(after(hook_ctx)).catch_unwind().await {
        Ok(Ok(None)) => result,
        Ok(Ok(Some(patch))) => patch.apply(result),
        Ok(Err(error)) => AgentToolResult::error(format!(
            "the after_tool_call hook failed for tool `{}`: {error}",
            call.name
        )),
        Err(panic) => AgentToolResult::error(format!(
            "the after_tool_call hook panicked for tool `{}`: {}",
            call.name,
            panic_message(panic.as_ref())
        )),
    }
}

/// The context of one call: a child of the batch's token, and updates that become events (dropped once
/// the call has ended).
fn call_context(
    call: &Arc<ToolCall>,
    cancel: &CancellationToken,
    events: &EventBus,
) -> ToolContext {
    let ctx = ToolContext::new(call.id.as_str()).with_parent(cancel.clone());
    if !events.is_observed() {
        return ctx;
    }
    let events = events.clone();
    let call = Arc::clone(call);
    ctx.with_updates(move |partial| {
        events.emit(AgentEvent::ToolExecutionUpdate {
            call: Arc::clone(&call),
            partial,
        })
    })
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
