//! What an agent does, as `tracing` spans named and attributed after the OpenTelemetry semantic
//! conventions for generative AI (the `gen_ai.*` attributes of semantic conventions **v1.42.0**, since
//! kept in the `semantic-conventions-genai` repository): this module owns every such span, and the
//! pipeline, the model call and the agent drivers open and close theirs through it.
//!
//! | span | opened by | attributes |
//! |---|---|---|
//! | `invoke_agent` | each run of an [`Agent`](crate::agent::Agent) (a prompt or a resume) and each attempt of a durable run (yiem-restate: its start, and each replay after a crash or a wait, joined to the run's one trace) | `gen_ai.operation.name`, `gen_ai.conversation.id`, `gen_ai.provider.name`, `gen_ai.request.model`, `yiem.run.stop` |
//! | `chat {model}` | each model request ([`stream_reply`](crate::llm::stream_reply)) | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.response.model`, `gen_ai.response.finish_reasons` (with `otel`), `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `gen_ai.usage.cache_read.input_tokens`, `gen_ai.usage.cache_creation.input_tokens`, `error.type` |
//! | `execute_tool {tool}` | each tool call, whoever runs it (one place: the call's pipeline) | `gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type`, `error.type` |
//! | `tools/call {tool}` | an MCP server answering a call (feature `mcp`) | `mcp.method.name`, `gen_ai.operation.name`, `gen_ai.tool.name`, `jsonrpc.request.id` |
//!
//! A batch of tool calls is an event (`tool batch`, with its size and whether it runs at once) on the
//! span it runs in, a run that stops to wait for approvals records `yiem.run.stop = awaiting_approval`
//! and an event, and a model request that is retried gets an event per retry.
//!
//! # Why `tracing`
//!
//! The spans are `tracing` spans, not OpenTelemetry API calls: yiem already had one span per tool call,
//! and this keeps it the only one (it became `execute_tool`), a tool author's build gains no crate, and
//! without a subscriber a span costs one check of the callsite's interest. The `otel` feature bridges
//! them to OpenTelemetry with `tracing-opentelemetry`, whose `otel.name`, `otel.kind` and
//! `otel.status_code` fields name the span, set its kind and its status; it also records what a
//! `tracing` field cannot hold (the finish reasons as a string array), the metrics, and carries the
//! trace context across MCP (see `yiem_core::otel`). Any `tracing` subscriber sees the same spans.
//!
//! # Content
//!
//! Message text, tool arguments and results go on the spans only when content capture is on
//! ([`set_content_capture`], or `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` in the
//! environment), each cut to [`CONTENT_LIMIT`] characters. It is off by default: arguments and
//! conversations often hold what should not leave the machine. Credentials never do: an API key is a
//! request header, and no span records headers or a provider's configuration.
//!
//! ```
//! use yiem_core::telemetry;
//!
//! assert!(!telemetry::captures_content());
//! telemetry::set_content_capture(true);
//! assert!(telemetry::captures_content());
//! # telemetry::set_content_capture(false);
//! ```

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;

use crate::message::{AgentMessage, AssistantMessage, StopReason};
use crate::result::AgentToolResult;

/// The most characters of one piece of content (a message list, a call's arguments, a result) a span
/// records when content capture is on; longer content is cut and ends with `…`.
pub const CONTENT_LIMIT: usize = 4096;

/// The environment variable that turns content capture on (`true`), as OpenTelemetry's GenAI
/// instrumentations read it.
pub const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// 0: not decided yet (the environment decides on first use); 1: off; 2: on.
static CAPTURE: AtomicU8 = AtomicU8::new(0);

/// Turns content capture on or off for this process, whatever the environment says (see the module
/// docs).
pub fn set_content_capture(on: bool) {
    CAPTURE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
}

/// Whether spans record content: what [`set_content_capture`] set, else whether
/// [`CAPTURE_CONTENT_ENV`] is `true`.
pub fn captures_content() -> bool {
    match CAPTURE.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var(CAPTURE_CONTENT_ENV)
                .is_ok_and(|value| value.trim().eq_ignore_ascii_case("true"));
            // A setting made meanwhile wins.
            let _ = CAPTURE.compare_exchange(
                0,
                if on { 2 } else { 1 },
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            CAPTURE.load(Ordering::Relaxed) == 2
        }
        state => state == 2,
    }
}

/// `text` cut to [`CONTENT_LIMIT`] characters.
fn truncated(text: &str) -> &str {
    match text.char_indices().nth(CONTENT_LIMIT) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// `value` as JSON, cut to [`CONTENT_LIMIT`] characters (an ellipsis marks a cut).
fn content_of<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    let cut = truncated(&text);
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        text
    }
}

/// Whether spans of this span's kind are recorded, or metrics want the timing.
fn timed(span: &Span) -> Option<Instant> {
    (!span.is_disabled() || records_metrics()).then(Instant::now)
}

/// Whether the GenAI metrics are recorded (feature `otel`, turned on with `otel::set_metrics`).
fn records_metrics() -> bool {
    #[cfg(feature = "otel")]
    return crate::otel::records_metrics();
    #[cfg(not(feature = "otel"))]
    false
}

// ---- execute_tool ----------------------------------------------------------------------------------

/// The span of one tool call, opened when the call is made (the current span is its parent).
pub(crate) fn tool_span(name: &str, call_id: &str) -> Span {
    tracing::info_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {name}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %name,
        gen_ai.tool.call.id = %call_id,
        gen_ai.tool.type = "function",
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        "error.type" = Empty,
        outcome = Empty,
        duration_ms = Empty,
    )
}

/// The call starts: when it started (if anyone wants the time), and its arguments when content is
/// captured.
pub(crate) fn tool_started(
    span: &Span,
    arguments: impl FnOnce() -> Option<Value>,
) -> Option<Instant> {
    if !span.is_disabled()
        && captures_content()
        && let Some(arguments) = arguments()
    {
        span.record("gen_ai.tool.call.arguments", content_of(&arguments));
    }
    timed(span)
}

/// Why a tool call failed, as `error.type` says it (low cardinality: never the error's text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ToolFailure {
    /// No tool of that name.
    NotFound,
    /// The arguments did not fit the tool.
    InvalidArguments,
    /// The call did not run: denied, blocked by a hook, or its batch aborted.
    Refused,
    /// The tool ran and its result is an error (its own, a panic, its time limit).
    Failed,
}

impl ToolFailure {
    fn as_str(self) -> &'static str {
        match self {
            ToolFailure::NotFound => "tool_not_found",
            ToolFailure::InvalidArguments => "invalid_arguments",
            ToolFailure::Refused => "refused",
            ToolFailure::Failed => "tool_error",
        }
    }
}

/// The call ended with `result` (`failure` says why when it is an error).
pub(crate) fn tool_ended(
    span: &Span,
    name: &str,
    started: Option<Instant>,
    result: &AgentToolResult,
    failure: Option<ToolFailure>,
) {
    let seconds = started.map_or(0.0, |started| started.elapsed().as_secs_f64());
    #[cfg(feature = "otel")]
    if crate::otel::records_metrics() {
        crate::otel::metrics::tool_call(name, seconds, failure.map(ToolFailure::as_str));
    }
    #[cfg(not(feature = "otel"))]
    let _ = name;
    if span.is_disabled() {
        return;
    }
    span.record("outcome", if result.is_error { "error" } else { "ok" });
    span.record("duration_ms", seconds * 1000.0);
    if let Some(failure) = failure {
        span.record("error.type", failure.as_str());
        span.record("otel.status_code", "error");
    }
    if captures_content() {
        span.record(
            "gen_ai.tool.call.result",
            content_of(&result.text_content()),
        );
    }
}

/// A batch of `calls` tool calls starts, all at once (`concurrent`) or one after another: an event on
/// the current span.
pub(crate) fn batch(calls: usize, concurrent: bool) {
    tracing::info!(calls, concurrent, "tool batch");
}

/// The span of an MCP server's answer to one `tools/call` of `tool` (the request `request_id`); the
/// pipeline's `execute_tool` is its child.
#[cfg(feature = "mcp")]
pub(crate) fn mcp_tool_call(tool: &str, request_id: &impl std::fmt::Display) -> Span {
    tracing::info_span!(
        "tools/call",
        otel.name = %format_args!("tools/call {tool}"),
        otel.kind = "server",
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        jsonrpc.request.id = %request_id,
    )
}

// ---- chat ------------------------------------------------------------------------------------------

/// An open `chat` span: the span, the request's model and provider, and when it started.
pub(crate) struct Chat {
    span: Span,
    started: Option<Instant>,
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    provider: String,
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    model: String,
}

/// Opens the span of one model request (the current span is its parent), which sends `system_prompt`
/// and `messages`.
pub(crate) fn chat(
    provider: &str,
    model: &str,
    system_prompt: &str,
    messages: &[AgentMessage],
) -> Chat {
    let span = tracing::info_span!(
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = %provider,
        gen_ai.request.model = %model,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        gen_ai.system_instructions = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        "error.type" = Empty,
    );
    if !span.is_disabled() && captures_content() {
        if !system_prompt.is_empty() {
            span.record("gen_ai.system_instructions", content_of(system_prompt));
        }
        span.record("gen_ai.input.messages", content_of(messages));
    }
    let started = timed(&span);
    Chat {
        span,
        started,
        provider: provider.to_owned(),
        model: model.to_owned(),
    }
}

impl Chat {
    /// The span, to run the request in.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// The request ended with `reply`.
    pub(crate) fn ended(self, reply: &AssistantMessage) {
        let failed = matches!(reply.stop_reason, StopReason::Error | StopReason::Aborted);
        let error_type = match reply.stop_reason {
            StopReason::Error => Some("model_error"),
            StopReason::Aborted => Some("aborted"),
            _ => None,
        };
        #[cfg(feature = "otel")]
        if crate::otel::records_metrics() {
            crate::otel::metrics::chat(
                &self.provider,
                &self.model,
                &reply.model,
                &reply.usage,
                self.started
                    .map_or(0.0, |started| started.elapsed().as_secs_f64()),
                error_type,
            );
        }
        let span = &self.span;
        if span.is_disabled() {
            return;
        }
        let _ = self.started;
        span.record("gen_ai.response.model", reply.model.as_str());
        // As `i64`: OpenTelemetry has no unsigned integers, and the bridge would record a `u64` as text.
        let count = |tokens: u64| i64::try_from(tokens).unwrap_or(i64::MAX);
        let usage = &reply.usage;
        span.record("gen_ai.usage.input_tokens", count(usage.input_tokens));
        span.record("gen_ai.usage.output_tokens", count(usage.output_tokens));
        span.record(
            "gen_ai.usage.cache_read.input_tokens",
            count(usage.cache_read_tokens),
        );
        span.record(
            "gen_ai.usage.cache_creation.input_tokens",
            count(usage.cache_write_tokens),
        );
        if failed {
            span.record("error.type", error_type.unwrap_or("model_error"));
            span.record("otel.status_code", "error");
        }
        #[cfg(feature = "otel")]
        crate::otel::set_string_array(
            span,
            "gen_ai.response.finish_reasons",
            vec![finish_reason(reply.stop_reason).to_owned()],
        );
        if captures_content() {
            span.record("gen_ai.output.messages", content_of(&[reply]));
        }
    }
}

/// A reply's stop reason as a GenAI finish reason.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::Stop => "stop",
        StopReason::Length => "length",
        StopReason::ToolUse | StopReason::ToolUseTerminated => "tool_call",
        StopReason::Error => "error",
        StopReason::Aborted => "aborted",
        StopReason::Paused => "pause_turn",
    }
}

// ---- invoke_agent ----------------------------------------------------------------------------------

/// The span of one run of an agent — one prompt or resume of an [`Agent`](crate::agent::Agent), one attempt of
/// a durable run — in the conversation `conversation_id`, with the model it starts with. The current span
/// is its parent; drivers that carry a trace across processes set its parent (feature `otel`).
///
/// ```
/// let span = yiem_core::telemetry::invoke_agent("conversation-1", "scripted", "yiem.scripted");
/// let _entered = span.enter();
/// ```
pub fn invoke_agent(conversation_id: &str, model: &str, provider: &str) -> Span {
    tracing::info_span!(
        "invoke_agent",
        otel.name = "invoke_agent",
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.conversation.id = %conversation_id,
        gen_ai.provider.name = %provider,
        gen_ai.request.model = %model,
        yiem.run.stop = Empty,
        "error.type" = Empty,
    )
}

/// The run in `span` stopped: records why (`kind`, the snake-case name of its
/// [`RunStop`](crate::agent::RunStop)) and, for a failed run, the error type. Drivers call
/// [`RunStop::record`](crate::agent::RunStop::record), which gives both.
pub fn run_stopped(span: &Span, kind: &str, error_type: Option<&str>) {
    span.record("yiem.run.stop", kind);
    if let Some(error) = error_type {
        span.record("error.type", error);
        span.record("otel.status_code", "error");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_cut_at_the_limit_with_an_ellipsis() {
        let long = "é".repeat(CONTENT_LIMIT + 10);
        let cut = content_of(&long);
        assert_eq!(cut.chars().count(), CONTENT_LIMIT + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(content_of(&"short"), "\"short\"");
    }
}
