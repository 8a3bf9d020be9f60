//! The `restate-agent` service's spans, for the trace tests: an OpenTelemetry span exporter that appends
//! each span to a file as it ends (a JSON line: trace id, span id, parent span id, name, the process id),
//! so what a process recorded before it was killed is there, and [`read`], which reads them back.
//!
//! The layer exports yiem's spans only (targets `yiem*`, `INFO` and above), as `yiem_core::otel::Otlp`'s
//! does; the processor is the simple one, which exports each span when it ends, in the thread that ends it.

use std::io::Write;
use std::path::{Path, PathBuf};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde_json::{Value, json};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

/// Where the service writes its spans, one JSON line each, when set.
pub const SPANS_ENV: &str = "YIEM_RESTATE_SPANS";

/// An exporter that appends each span to a file.
#[derive(Debug)]
struct SpanFile(PathBuf);

impl SpanExporter for SpanFile {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        let mut lines = String::new();
        for span in batch {
            let line = json!({
                "trace": span.span_context.trace_id().to_string(),
                "span": span.span_context.span_id().to_string(),
                "parent": span.parent_span_id.to_string(),
                "name": span.name,
                "process": std::process::id(),
            });
            lines.push_str(&format!("{line}\n"));
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.0)
            .expect("the spans file opens");
        // One write per batch, so lines of two threads never interleave.
        file.write_all(lines.as_bytes())
            .expect("the spans are written");
        std::future::ready(Ok(()))
    }
}

/// The tracer provider that writes to `path`, and the `tracing` layer that feeds it. Keep the provider
/// for as long as spans should be written.
pub fn layer<S>(path: &Path) -> (SdkTracerProvider, impl Layer<S> + Send + Sync + 'static)
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
{
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(SpanFile(path.to_owned()))
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("restate-agent"))
        .with_filter(Targets::new().with_target("yiem", LevelFilter::INFO));
    (provider, layer)
}

/// A span as the service wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    /// The trace id, 32 hex digits.
    pub trace: String,
    /// The span id, 16 hex digits.
    pub span: String,
    /// The parent's span id; all zeros for a root.
    pub parent: String,
    /// The span's name (`invoke_agent`, `chat scripted`, `execute_tool get_weather`, ...).
    pub name: String,
    /// The process that recorded it.
    pub process: u64,
}

impl Exported {
    /// Whether the span is a root (it has no parent).
    pub fn is_root(&self) -> bool {
        self.parent.bytes().all(|b| b == b'0')
    }
}

/// The spans written to `path` so far.
pub fn read(path: &Path) -> Vec<Exported> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|line| {
            let span: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("a span line is JSON ({e}): {line}"));
            let field = |name: &str| span[name].as_str().unwrap_or_default().to_owned();
            Exported {
                trace: field("trace"),
                span: field("span"),
                parent: field("parent"),
                name: field("name"),
                process: span["process"].as_u64().unwrap_or_default(),
            }
        })
        .collect()
}
