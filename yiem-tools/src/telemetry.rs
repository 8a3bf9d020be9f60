//! The program's `tracing` subscriber: its log lines on stderr (`yiem mcp`), and yiem's GenAI spans and
//! metrics to an OTLP collector when one is named (`--otlp URL`, else `OTEL_EXPORTER_OTLP_ENDPOINT`),
//! sent on the way out — a normal exit, an error, or Ctrl-C — by [`shutdown`].

use std::sync::Mutex;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use yiem_core::otel::Otlp;

use crate::Failure;

/// The exporter, when there is one: taken and shut down once on the way out.
static EXPORTER: Mutex<Option<Otlp>> = Mutex::new(None);

/// What goes where.
pub(crate) struct Telemetry<'a> {
    /// The collector's base URL given on the command line (else the environment's).
    pub(crate) otlp: Option<&'a str>,
    /// Log lines on stderr (`yiem mcp`, whose stdout carries the protocol).
    pub(crate) logs: bool,
}

/// Installs the subscriber. Without logs and a collector, none is installed (nothing would be recorded).
pub(crate) fn init(telemetry: Telemetry<'_>) -> Result<(), Failure> {
    let otlp = match telemetry.otlp {
        Some(url) => Some(Otlp::new(url, "yiem")),
        None => Otlp::from_env("yiem").transpose(),
    }
    .transpose()
    .map_err(|error| crate::bad_input(error.to_string()))?;
    let logs = telemetry.logs.then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
    });
    let layer = otlp.as_ref().map(|otlp| otlp.layer());
    if logs.is_some() || layer.is_some() {
        let _ = tracing_subscriber::registry()
            .with(logs)
            .with(layer)
            .try_init();
    }
    *EXPORTER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = otlp;
    Ok(())
}

/// Sends what is left to the collector and stops exporting; a collector that cannot be reached is
/// reported on stderr, and does not change the exit code.
pub(crate) fn shutdown() {
    let exporter = EXPORTER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take();
    if let Some(exporter) = exporter
        && let Err(error) = exporter.shutdown()
    {
        say_err!("yiem: warning: {error}");
    }
}
