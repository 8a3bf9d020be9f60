//! (feature `otel`) yiem's [GenAI spans](crate::telemetry) in OpenTelemetry: the W3C trace context
//! carried across processes, what a `tracing` field cannot hold, the GenAI metrics, and (feature
//! `otel-otlp`) an OTLP exporter over HTTP/protobuf, [`Otlp`].
//!
//! The spans reach OpenTelemetry through `tracing-opentelemetry`'s layer, which must be in the
//! subscriber: [`Otlp::layer`] is one. The trace context crosses MCP as the 2026-07-28 revision of the
//! protocol carries it, in each request's `_meta` (`traceparent`, `tracestate`): an
//! [`McpClient`](crate::mcp::McpClient) call sends the context of the tool call it runs in, and an
//! [`McpServer`](crate::mcp::McpServer) makes its span of the call (`tools/call {tool}`, whose child is
//! the pipeline's `execute_tool`) a child of the one it received. [`traceparent`] and
//! [`set_remote_parent`] do the same for other carriers (yiem-restate journals a run's context, so a
//! run restarted after a crash stays one trace).
//!
//! # Metrics
//!
//! Recorded once turned on with [`set_metrics`] — [`Otlp::new`] turns them on with the meter provider
//! it installs — through the global meter provider (`opentelemetry::global`) under the meter `yiem`,
//! whether or not a span is recorded. Off by default, so that a build with `otel` and no meter provider
//! pays nothing for them per call: the semantic conventions'
//! `gen_ai.client.token.usage` (`{token}`, by `gen_ai.token.type`) and
//! `gen_ai.client.operation.duration` (seconds) for each model request, and yiem's
//! `yiem.tool.call.duration` (seconds, by `gen_ai.tool.name` and `error.type`) for each tool call. The
//! instruments are made on first use: install the meter provider before turning metrics on.
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! // Any tracing-opentelemetry layer: here one over the no-op tracer, in a program an `Otlp`'s.
//! let subscriber = tracing_subscriber::registry().with(tracing_opentelemetry::layer());
//! tracing::subscriber::with_default(subscriber, || {
//!     let span = tracing::info_span!("call");
//!     // No sampled trace here: nothing to carry.
//!     assert!(yiem_core::otel::traceparent(&span).is_none());
//! });
//! ```

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::{Array, StringValue, Value};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

#[cfg(feature = "otel-otlp")]
mod otlp;
#[cfg(feature = "otel-otlp")]
pub use otlp::{Otlp, OtlpError};

/// Whether yiem records its metrics.
static METRICS: AtomicBool = AtomicBool::new(false);

/// Turns the recording of yiem's GenAI metrics on or off for this process (see the module docs):
/// [`Otlp::new`] turns it on; a program that installs a global meter provider of its own turns it on
/// after that.
pub fn set_metrics(on: bool) {
    METRICS.store(on, Ordering::Relaxed);
}

/// Whether yiem records its metrics ([`set_metrics`]).
pub fn records_metrics() -> bool {
    METRICS.load(Ordering::Relaxed)
}

/// The W3C trace context of `span`: its `traceparent` and, when not empty, its `tracestate`. `None`
/// when the span is not recorded by OpenTelemetry (no layer, or filtered out) or has no valid context.
pub fn traceparent(span: &Span) -> Option<(String, Option<String>)> {
    let cx = span.context();
    let span_ref = cx.span();
    let context = span_ref.span_context();
    if !context.is_valid() {
        return None;
    }
    let parent = format!(
        "00-{}-{}-{:02x}",
        context.trace_id(),
        context.span_id(),
        context.trace_flags().to_u8()
    );
    let state = context.trace_state().header();
    Some((parent, (!state.is_empty()).then_some(state)))
}

/// Makes `span` a child of the remote span `traceparent` names (with its `tracestate`), before the span
/// is first entered. Returns whether it did: not for a malformed `traceparent` (it is ignored, as W3C
/// Trace Context says), a span already entered, or one OpenTelemetry does not record.
pub fn set_remote_parent(span: &Span, traceparent: &str, tracestate: Option<&str>) -> bool {
    let Some(context) = parse_traceparent(traceparent, tracestate) else {
        return false;
    };
    let cx = opentelemetry::Context::new().with_remote_span_context(context);
    span.set_parent(cx).is_ok()
}

/// A `traceparent` header (version `00`, or a later one read as `00`), with `tracestate`.
fn parse_traceparent(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let mut parts = traceparent.trim().split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |text: &str, len: usize| {
        text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    if !hex(version, 2) || version == "ff" || !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
        return None;
    }
    if version == "00" && parts.next().is_some() {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    let flags = TraceFlags::new(u8::from_str_radix(flags, 16).ok()? & TraceFlags::SAMPLED.to_u8());
    let state = tracestate
        .and_then(|state| state.parse::<TraceState>().ok())
        .unwrap_or_default();
    let context = SpanContext::new(trace_id, span_id, flags, true, state);
    context.is_valid().then_some(context)
}

/// Sets the string-array attribute `key` on `span` (a `tracing` field holds one value only).
pub(crate) fn set_string_array(span: &Span, key: &'static str, values: Vec<String>) {
    let values: Vec<StringValue> = values.into_iter().map(StringValue::from).collect();
    span.set_attribute(key, Value::Array(Array::String(values)));
}

/// The GenAI metrics (see the module docs).
pub(crate) mod metrics {
    use std::sync::OnceLock;

    use opentelemetry::KeyValue;
    use opentelemetry::metrics::Histogram;

    use crate::result::Usage;

    struct Instruments {
        tokens: Histogram<u64>,
        duration: Histogram<f64>,
        tool_duration: Histogram<f64>,
    }

    fn instruments() -> &'static Instruments {
        static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
        INSTRUMENTS.get_or_init(|| {
            let meter = opentelemetry::global::meter("yiem");
            Instruments {
                tokens: meter
                    .u64_histogram("gen_ai.client.token.usage")
                    .with_unit("{token}")
                    .with_description("Number of input and output tokens used")
                    .build(),
                duration: meter
                    .f64_histogram("gen_ai.client.operation.duration")
                    .with_unit("s")
                    .with_description("GenAI operation duration")
                    .build(),
                tool_duration: meter
                    .f64_histogram("yiem.tool.call.duration")
                    .with_unit("s")
                    .with_description("Duration of a tool call, from its start to its result")
                    .build(),
            }
        })
    }

    /// One model request.
    pub(crate) fn chat(
        provider: &str,
        model: &str,
        response_model: &str,
        usage: &Usage,
        seconds: f64,
        error_type: Option<&'static str>,
    ) {
        let instruments = instruments();
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", provider.to_owned()),
            KeyValue::new("gen_ai.request.model", model.to_owned()),
        ];
        if !response_model.is_empty() {
            attributes.push(KeyValue::new(
                "gen_ai.response.model",
                response_model.to_owned(),
            ));
        }
        let mut timed = attributes.clone();
        if let Some(error) = error_type {
            timed.push(KeyValue::new("error.type", error));
        }
        instruments.duration.record(seconds, &timed);
        if error_type.is_none() {
            for (kind, tokens) in [
                ("input", usage.input_tokens),
                ("output", usage.output_tokens),
            ] {
                let mut attributes = attributes.clone();
                attributes.push(KeyValue::new("gen_ai.token.type", kind));
                instruments.tokens.record(tokens, &attributes);
            }
        }
    }

    /// One tool call.
    /// (The tool's name is the one allocation: the attributes are an array on the stack.)
    pub(crate) fn tool_call(name: &str, seconds: f64, error_type: Option<&'static str>) {
        let operation = KeyValue::new("gen_ai.operation.name", "execute_tool");
        let tool = KeyValue::new("gen_ai.tool.name", name.to_owned());
        let duration = &instruments().tool_duration;
        match error_type {
            Some(error) => duration.record(
                seconds,
                &[operation, tool, KeyValue::new("error.type", error)],
            ),
            None => duration.record(seconds, &[operation, tool]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_is_read_only_when_well_formed() {
        let good = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let context = parse_traceparent(good, Some("vendor=value")).unwrap();
        assert_eq!(
            context.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert!(context.is_sampled() && context.is_remote());
        assert_eq!(context.trace_state().header(), "vendor=value");
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
        ] {
            assert!(parse_traceparent(bad, None).is_none(), "{bad}");
        }
    }
}
