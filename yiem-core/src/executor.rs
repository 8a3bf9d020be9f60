//! Batches of tool calls: [`ToolExecutor`] runs them sequentially or concurrently, emits their events,
//! and always returns exactly one [`ToolResultMessage`] per call, in call order — also on abort.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::call::{ToolCall, ToolResultMessage};
use crate::event::{AgentEvent, EventBus};
use crate::hooks::ToolHooks;
use crate::message::{AgentMessage, AssistantMessage};
use crate::pipeline::{self, CallEnv, Prepared, ReadyCall};
use crate::registry::ToolStore;
use crate::result::AgentToolResult;
use crate::tool::{AgentTool, ExecutionMode};

/// The results of one batch.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallBatch {
    /// One message per call, in call order.
    pub messages: Vec<ToolResultMessage>,
    /// Whether the loop should stop: true only when the batch is not empty and every result asks to.
    pub terminate: bool,
}

/// Runs batches of tool calls through the pipeline.
///
/// A batch runs sequentially when the executor's mode is [`ExecutionMode::Sequential`] or any tool in it
/// is sequential; otherwise its prepared calls run concurrently, each on its own task (plain-fn tools on
/// blocking threads), so CPU-bound tools run in parallel on a multi-threaded runtime.
///
/// ```
/// use serde_json::json;
/// use yiem_core::{CancellationToken, ToolCall, ToolExecutor, ToolStore, tool};
///
/// /// Say hello.
/// #[tool(parallel)]
/// async fn hello() -> &'static str {
///     "hello"
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mut store = ToolStore::new("demo");
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
    mode: ExecutionMode,
    default_timeout: Option<Duration>,
    hooks: ToolHooks,
    events: EventBus,
}

impl ToolExecutor {
    /// An executor that runs batches in parallel where the tools allow, with no hooks and no time limit.
    pub fn new() -> Self {
        ToolExecutor {
            mode: ExecutionMode::Parallel,
            ..Self::default()
        }
    }

    /// Forces every batch to run sequentially ([`ExecutionMode::Sequential`]) or lets tools decide.
    pub fn with_mode(mut self, mode: ExecutionMode) -> Self {
        self.mode = mode;
        self
    }

    /// The time limit of calls whose tool sets none.
    pub fn with_default_timeout(mut self, limit: Duration) -> Self {
        self.default_timeout = Some(limit);
        self
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

    /// The bus this executor emits to: register sinks or subscribe here.
    pub fn events(&self) -> &EventBus {
        &self.events
    }

    /// The executor's mode.
    pub fn mode(&self) -> ExecutionMode {
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
        self.run_batch(store, calls, None, cancel).await
    }

    /// Executes the tool calls of `assistant`; hooks see the message.
    pub async fn execute_message(
        &self,
        store: &ToolStore,
        assistant: Arc<AssistantMessage>,
        cancel: &CancellationToken,
    ) -> ToolCallBatch {
        let calls = assistant.tool_calls().cloned().collect();
        self.run_batch(store, calls, Some(assistant), cancel).await
    }

    async fn run_batch(
        &self,
        store: &ToolStore,
        calls: Vec<ToolCall>,
        assistant: Option<Arc<AssistantMessage>>,
        cancel: &CancellationToken,
    ) -> ToolCallBatch {
        let env = CallEnv {
            hooks: self.hooks.clone(),
            events: self.events.clone(),
            default_timeout: self.default_timeout,
            assistant,
        };
        // Each tool is looked up once, here.
        let calls: Vec<(Arc<ToolCall>, Option<AgentTool>)> = calls
            .into_iter()
            .map(|call| {
                let tool = store.get(&call.name);
                (Arc::new(call), tool)
            })
            .collect();
        let sequential = self.mode == ExecutionMode::Sequential
            || calls.iter().any(|(_, tool)| {
                tool.as_ref()
                    .is_some_and(|tool| tool.execution_mode() == ExecutionMode::Sequential)
            });
        let results = if sequential {
            run_sequential(store, calls, &env, cancel).await
        } else {
            run_parallel(store, calls, &env, cancel).await
        };
        let terminate = !results.is_empty() && results.iter().all(|(_, terminate)| *terminate);
        ToolCallBatch {
            messages: results.into_iter().map(|(message, _)| message).collect(),
            terminate,
        }
    }
}

impl ToolExecutor {
    /// Answers every call with an error result built by `reason`, without running any (used when a reply's
    /// tool calls cannot be trusted, e.g. cut off by the output limit). Events are emitted as for a run.
    pub fn refuse(
        &self,
        calls: &[ToolCall],
        reason: impl Fn(&ToolCall) -> String,
    ) -> ToolCallBatch {
        let env = CallEnv {
            hooks: ToolHooks::default(),
            events: self.events.clone(),
            default_timeout: None,
            assistant: None,
        };
        let messages = calls
            .iter()
            .map(|call| {
                let call = Arc::new(call.clone());
                emit_start(&env, &call);
                let result = AgentToolResult::error(reason(&call));
                emit_end(&env, &call, &result);
                finish(&env, &call, result).0
            })
            .collect();
        ToolCallBatch {
            messages,
            terminate: false,
        }
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

/// One call's span: tool name, call id, outcome and duration.
fn call_span(call: &ToolCall) -> tracing::Span {
    tracing::info_span!(
        "tool_call",
        tool = %call.name,
        call_id = %call.id,
        outcome = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    )
}

fn record_outcome(span: &tracing::Span, result: &AgentToolResult, started: Instant) {
    if span.is_disabled() {
        return;
    }
    span.record("outcome", if result.is_error { "error" } else { "ok" });
    span.record("duration_ms", started.elapsed().as_secs_f64() * 1000.0);
}

fn emit_start(env: &CallEnv, call: &Arc<ToolCall>) {
    if env.events.is_observed() {
        env.events.emit(AgentEvent::ToolExecutionStart {
            call: Arc::clone(call),
        });
    }
}

fn emit_end(env: &CallEnv, call: &Arc<ToolCall>, result: &AgentToolResult) {
    if env.events.is_observed() {
        env.events.emit(AgentEvent::ToolExecutionEnd {
            call: Arc::clone(call),
            result: result.clone(),
            is_error: result.is_error,
        });
    }
}

/// Builds the result message and emits its start and end.
fn finish(env: &CallEnv, call: &ToolCall, result: AgentToolResult) -> (ToolResultMessage, bool) {
    let terminate = result.terminate;
    let message = ToolResultMessage::new(call, result);
    if env.events.is_observed() {
        let wrapped = AgentMessage::ToolResult(message.clone());
        env.events.emit(AgentEvent::MessageStart {
            message: wrapped.clone(),
        });
        env.events.emit(AgentEvent::MessageEnd { message: wrapped });
    }
    (message, terminate)
}

/// Runs one call to its end (start event, pipeline, end event) and returns its result.
async fn run_one(
    store: &ToolStore,
    tool: Option<AgentTool>,
    call: &Arc<ToolCall>,
    env: &CallEnv,
    cancel: &CancellationToken,
) -> AgentToolResult {
    let span = call_span(call);
    let started = Instant::now();
    emit_start(env, call);
    let result = async {
        if cancel.is_cancelled() {
            return pipeline::not_run(&call.name);
        }
        match pipeline::prepare(store, tool, call, env, cancel).await {
            Prepared::Immediate(result) => result,
            Prepared::Ready(ready) => pipeline::execute_and_finalize(ready, env).await,
        }
    }
    .instrument(span.clone())
    .await;
    record_outcome(&span, &result, started);
    emit_end(env, call, &result);
    result
}

async fn run_sequential(
    store: &ToolStore,
    calls: Vec<(Arc<ToolCall>, Option<AgentTool>)>,
    env: &CallEnv,
    cancel: &CancellationToken,
) -> Vec<(ToolResultMessage, bool)> {
    let mut results = Vec::with_capacity(calls.len());
    for (call, tool) in calls {
        let result = run_one(store, tool, &call, env, cancel).await;
        results.push(finish(env, &call, result));
    }
    results
}

/// A call of a parallel batch: finished during preparation, running on its own task, or (a lone call)
/// run in place.
enum Slot {
    Done(AgentToolResult),
    Running(AbortOnDrop),
    Inline(ReadyCall, tracing::Span, Instant),
}

/// A spawned call that is aborted if the batch itself is dropped, so no call outlives its batch.
struct AbortOnDrop(JoinHandle<AgentToolResult>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn run_parallel(
    store: &ToolStore,
    calls: Vec<(Arc<ToolCall>, Option<AgentTool>)>,
    env: &CallEnv,
    cancel: &CancellationToken,
) -> Vec<(ToolResultMessage, bool)> {
    // Every call is prepared (and started) before any runs, so a batch's events read: all starts, then the
    // ends as calls finish, then the results in call order.
    let mut slots = Vec::with_capacity(calls.len());
    for (call, tool) in &calls {
        let span = call_span(call);
        let started = Instant::now();
        emit_start(env, call);
        let prepared = if cancel.is_cancelled() {
            Prepared::Immediate(pipeline::not_run(&call.name))
        } else {
            pipeline::prepare(store, tool.clone(), call, env, cancel)
                .instrument(span.clone())
                .await
        };
        slots.push(match prepared {
            Prepared::Immediate(result) => {
                record_outcome(&span, &result, started);
                emit_end(env, call, &result);
                Slot::Done(result)
            }
            Prepared::Ready(ready) => Slot::Inline(ready, span, started),
        });
    }
    // A lone call gains nothing from a task of its own.
    let ready = slots
        .iter()
        .filter(|slot| matches!(slot, Slot::Inline(..)))
        .count();
    if ready > 1 {
        slots = slots
            .into_iter()
            .zip(&calls)
            .map(|(slot, (call, _))| match slot {
                Slot::Inline(ready, span, started) => {
                    let env = env.clone();
                    let call = Arc::clone(call);
                    Slot::Running(AbortOnDrop(tokio::spawn(async move {
                        let result = pipeline::execute_and_finalize(ready, &env)
                            .instrument(span.clone())
                            .await;
                        record_outcome(&span, &result, started);
                        emit_end(&env, &call, &result);
                        result
                    })))
                }
                other => other,
            })
            .collect();
    }
    let mut results = Vec::with_capacity(calls.len());
    for (slot, (call, _)) in slots.into_iter().zip(&calls) {
        let result = match slot {
            Slot::Done(result) => result,
            Slot::Running(mut handle) => match (&mut handle.0).await {
                Ok(result) => result,
                Err(error) => {
                    // The pipeline catches panics itself; this is the runtime shutting down under us.
                    let result = AgentToolResult::error(format!(
                        "tool `{}` did not finish: {error}",
                        call.name
                    ));
                    emit_end(env, call, &result);
                    result
                }
            },
            Slot::Inline(ready, span, started) => {
                let result = pipeline::execute_and_finalize(ready, env)
                    .instrument(span.clone())
                    .await;
                record_outcome(&span, &result, started);
                emit_end(env, call, &result);
                result
            }
        };
        results.push((result, Arc::clone(call)));
    }
    results
        .into_iter()
        .map(|(result, call)| finish(env, &call, result))
        .collect()
}
