//! [`Otlp`]: spans and metrics to an OTLP endpoint over HTTP/protobuf.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

/// How long the exporter waits for the endpoint, per request.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why an [`Otlp`] exporter could not be made or flushed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// The endpoint is not an `http://` or `https://` URL.
    #[error(
        "the OTLP endpoint `{endpoint}` is not an http:// or https:// URL; give the collector's base URL, \
         e.g. http://localhost:4318 (or Phoenix's http://localhost:6006)"
    )]
    Endpoint {
        /// The endpoint as given.
        endpoint: String,
    },
    /// The exporter could not be built.
    #[error("could not build the OTLP exporter for `{endpoint}`: {detail}")]
    Build {
        /// The endpoint.
        endpoint: String,
        /// What the exporter said.
        detail: String,
    },
    /// Spans or metrics could not all be sent when flushing.
    #[error("could not send what was recorded to `{endpoint}`: {detail}")]
    Flush {
        /// The endpoint.
        endpoint: String,
        /// What the exporter said.
        detail: String,
    },
}

/// An OTLP exporter over HTTP/protobuf for yiem's spans and metrics: a tracer provider with a batch
/// span processor, and (unless left out) a meter provider, installed as the global one, with yiem's
/// metrics turned on ([`set_metrics`](crate::otel::set_metrics)).
/// Put [`layer`](Self::layer) in your `tracing` subscriber; [`shutdown`](Self::shutdown) (or dropping
/// it) sends what is left.
///
/// ```no_run
/// use tracing_subscriber::layer::SubscriberExt;
/// use tracing_subscriber::util::SubscriberInitExt;
/// use yiem_core::otel::Otlp;
///
/// let otlp = Otlp::new("http://localhost:6006", "my-agent").unwrap();
/// tracing_subscriber::registry().with(otlp.layer()).init();
/// // ... run agents ...
/// otlp.shutdown().unwrap();
/// ```
#[derive(Debug)]
pub struct Otlp {
    endpoint: String,
    tracer: SdkTracerProvider,
    /// `None`: metrics are not exported.
    meter: Option<SdkMeterProvider>,
}

impl Otlp {
    /// The environment variable with the collector's base URL (the OpenTelemetry SDKs' own).
    pub const ENDPOINT_ENV: &'static str = "OTEL_EXPORTER_OTLP_ENDPOINT";

    /// The environment variable that, set to `none`, keeps metrics home (the OpenTelemetry SDKs' own):
    /// for a backend that takes traces only, such as Arize Phoenix.
    pub const METRICS_EXPORTER_ENV: &'static str = "OTEL_METRICS_EXPORTER";

    /// An exporter of spans and metrics to the collector at `endpoint`, a base URL (`/v1/traces` and
    /// `/v1/metrics` are added), for the service `service_name`. Metrics are left out when
    /// [`METRICS_EXPORTER_ENV`](Self::METRICS_EXPORTER_ENV) is `none`.
    pub fn new(endpoint: &str, service_name: &str) -> Result<Otlp, OtlpError> {
        let metrics = !std::env::var(Self::METRICS_EXPORTER_ENV)
            .is_ok_and(|value| value.trim().eq_ignore_ascii_case("none"));
        Otlp::with_signals(endpoint, service_name, metrics)
    }

    /// An exporter of spans only, for a backend that takes no metrics (Arize Phoenix, say).
    pub fn traces_only(endpoint: &str, service_name: &str) -> Result<Otlp, OtlpError> {
        Otlp::with_signals(endpoint, service_name, false)
    }

    fn with_signals(endpoint: &str, service_name: &str, metrics: bool) -> Result<Otlp, OtlpError> {
        let base = endpoint.trim().trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(OtlpError::Endpoint {
                endpoint: endpoint.to_owned(),
            });
        }
        let build = |detail: String| OtlpError::Build {
            endpoint: base.to_owned(),
            detail,
        };
        let resource = Resource::builder()
            .with_service_name(service_name.to_owned())
            .build();
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(format!("{base}/v1/traces"))
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|error| build(error.to_string()))?;
        let meter = match metrics {
            true => {
                let exporter = opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                    .with_endpoint(format!("{base}/v1/metrics"))
                    .with_timeout(EXPORT_TIMEOUT)
                    .build()
                    .map_err(|error| build(error.to_string()))?;
                let meter = SdkMeterProvider::builder()
                    .with_reader(PeriodicReader::builder(exporter).build())
                    .with_resource(resource.clone())
                    .build();
                opentelemetry::global::set_meter_provider(meter.clone());
                crate::otel::set_metrics(true);
                Some(meter)
            }
            false => None,
        };
        let tracer = SdkTracerProvider::builder()
            .with_batch_exporter(spans)
            .with_resource(resource)
            .build();
        Ok(Otlp {
            endpoint: base.to_owned(),
            tracer,
            meter,
        })
    }

    /// An exporter to the endpoint in [`ENDPOINT_ENV`](Self::ENDPOINT_ENV), or `None` when it is not
    /// set (or empty).
    pub fn from_env(service_name: &str) -> Result<Option<Otlp>, OtlpError> {
        match std::env::var(Self::ENDPOINT_ENV) {
            Ok(endpoint) if !endpoint.trim().is_empty() => {
                Otlp::new(&endpoint, service_name).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The base URL spans and metrics go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The `tracing` layer that exports yiem's spans and events (those of `yiem*` targets, `INFO` and
    /// above) through this exporter. For other crates' spans too, make a layer of your own with
    /// [`tracer_provider`](Self::tracer_provider).
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        // A target matches by prefix: `yiem` is `yiem_core`, `yiem_restate`, the `yiem` program.
        let targets = Targets::new().with_target("yiem", LevelFilter::INFO);
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer.tracer("yiem"))
            .with_filter(targets)
    }

    /// The tracer provider, for a layer of your own.
    pub fn tracer_provider(&self) -> &SdkTracerProvider {
        &self.tracer
    }

    /// Sends every span and metric recorded so far.
    pub fn flush(&self) -> Result<(), OtlpError> {
        let traced = self.tracer.force_flush();
        let measured = self
            .meter
            .as_ref()
            .map_or(Ok(()), |meter| meter.force_flush());
        self.flushed(traced, measured)
    }

    /// What flushing both providers came to: the spans' failure first.
    fn flushed(
        &self,
        traced: opentelemetry_sdk::error::OTelSdkResult,
        measured: opentelemetry_sdk::error::OTelSdkResult,
    ) -> Result<(), OtlpError> {
        let failed =
            |signal: &str, error: opentelemetry_sdk::error::OTelSdkError| OtlpError::Flush {
                endpoint: self.endpoint.clone(),
                detail: format!(
                    "the {signal} did not go through ({error}){}",
                    if signal == "metrics" {
                        "; for a backend that takes traces only, set OTEL_METRICS_EXPORTER=none"
                    } else {
                        ""
                    }
                ),
            };
        traced.map_err(|error| failed("spans", error))?;
        measured.map_err(|error| failed("metrics", error))
    }

    /// Sends what is left and stops exporting. Called on drop too (errors then go unreported).
    pub fn shutdown(&self) -> Result<(), OtlpError> {
        let traced = self.tracer.shutdown();
        let measured = self.meter.as_ref().map_or(Ok(()), |meter| meter.shutdown());
        let already = |result: opentelemetry_sdk::error::OTelSdkResult| match result {
            Err(opentelemetry_sdk::error::OTelSdkError::AlreadyShutdown) => Ok(()),
            other => other,
        };
        self.flushed(already(traced), already(measured))
    }
}

impl Drop for Otlp {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
