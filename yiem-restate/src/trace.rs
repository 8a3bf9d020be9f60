//! The run's trace: one per run, across crashes, restarts and suspensions. Each attempt of a run (the
//! first call of its `start` handler, and every replay of it: after a crash, or resuming after a wait for
//! approval, in whatever process) opens an [`invoke_agent`](yiem_core::telemetry::invoke_agent) span. The
//! first attempt journals its span's W3C trace context as the step `trace`, so that span is the run's
//! root; a later attempt reads the context back from the journal and opens its span as a child of it
//! (feature `otel`), instead of starting a trace of its own. So a run that survived a crash is one trace,
//! whichever processes ran it.
//!
//! The step is journaled with or without the `otel` feature and with or without an OpenTelemetry layer
//! (it then carries nothing), so the journal is the same whatever a process has compiled in or installed:
//! a deployment can change either between attempts of a run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use tracing::Span;

/// The name of the journaled step that holds the run's trace context.
const STEP: &str = "trace";

/// A W3C trace context, as journaled.
#[derive(Debug, Serialize, Deserialize)]
struct TraceContext {
    traceparent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tracestate: Option<String>,
}

/// Makes `span` (an attempt's `invoke_agent`, not yet entered) part of its run's trace: the root, on the
/// run's first attempt; else a child of the root the first attempt journaled.
pub(crate) async fn join_run(ctx: &ObjectContext<'_>, span: &Span) -> Result<(), HandlerError> {
    let first = Arc::new(AtomicBool::new(false));
    let (ran, root) = (Arc::clone(&first), span.clone());
    let Json(context) = ctx
        .run(move || async move {
            // Only the run's first attempt gets here: a replay returns what it journaled.
            ran.store(true, Ordering::Relaxed);
            Ok(Json(context_of(&root)))
        })
        .name(STEP)
        .await?;
    if !first.load(Ordering::Relaxed)
        && let Some(context) = context
    {
        continue_trace(span, &context);
    }
    Ok(())
}

#[cfg(feature = "otel")]
fn context_of(span: &Span) -> Option<TraceContext> {
    yiem_core::otel::traceparent(span).map(|(traceparent, tracestate)| TraceContext {
        traceparent,
        tracestate,
    })
}

#[cfg(not(feature = "otel"))]
fn context_of(_span: &Span) -> Option<TraceContext> {
    None
}

#[cfg(feature = "otel")]
fn continue_trace(span: &Span, context: &TraceContext) {
    let joined = yiem_core::otel::set_remote_parent(
        span,
        &context.traceparent,
        context.tracestate.as_deref(),
    );
    if !joined && !span.is_disabled() {
        tracing::warn!(
            traceparent = %context.traceparent,
            "this attempt of the run could not join the run's trace (a malformed traceparent in the \
             journal, or no OpenTelemetry layer in the subscriber): its spans are a trace of their own"
        );
    }
}

#[cfg(not(feature = "otel"))]
fn continue_trace(_span: &Span, _context: &TraceContext) {}
