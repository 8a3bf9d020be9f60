//! The dispatch variants of `benches/dispatch.rs`, run N times in a row for
//! `valgrind --tool=callgrind --toggle-collect='*run_all*'`: instruction counts do not depend on the load
//! of the machine, so they cross-check the timed ratios. The inputs are built before `run_all`, so only the
//! dispatch is counted.
//!
//! ```text
//! cargo build --release --bin dispatch-count
//! valgrind --tool=callgrind --toggle-collect='*run_all*' target/release/dispatch-count yiem_execute_value 10000
//! ```
//!
//! `benches/callgrind.sh` runs every variant and prints instructions per call.

use std::future::Future;
use std::hint::black_box;

use rig_agent::tool::ToolSet;
use serde_json::Value;
use yiem_benches::{
    RigAdd, RmcpHarness, RmcpServer, add_tool, arguments, arguments_object, arguments_string,
    floor, floor_batch,
};
use yiem_core::{
    exec::{CancellationToken, ToolCall, ToolExecutor},
    store::ToolStore,
};

const VARIANTS: &[&str] = &[
    "floor_value",
    "floor_batch_value",
    "yiem_execute_value",
    "yiem_get_execute_value",
    "yiem_pipeline_value",
    "yiem_pipeline_quiet_value",
    "rmcp_value",
    "rig_value",
    "floor_string",
    "floor_batch_string",
    "yiem_execute_string",
    "yiem_get_execute_string",
    "yiem_pipeline_string",
    "yiem_pipeline_quiet_string",
    "rmcp_string",
    "rig_string",
];

/// With the `otel` feature: the pipeline with every span exported (see [`otel`]).
#[cfg(feature = "otel")]
const OTEL_VARIANTS: &[&str] = &["yiem_pipeline_otel_value", "yiem_pipeline_otel_string"];
#[cfg(not(feature = "otel"))]
const OTEL_VARIANTS: &[&str] = &[];

/// A live OpenTelemetry pipeline for yiem's spans, installed as the global `tracing` subscriber: the
/// `tracing-opentelemetry` layer over yiem's targets (as `yiem_core::otel::Otlp::layer` filters), an SDK
/// tracer provider, and a simple span processor, which hands each span to the exporter when it ends, in
/// the thread that ends it, so callgrind counts all of it inside `run_all`. The exporter drops what it
/// gets: what is measured is everything up to the wire (the bridge, the SDK's span, the processor), not
/// the OTLP encoding and the request, which a batch processor makes on a thread of its own.
#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
    use tracing_subscriber::Layer;
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    /// Takes every span and keeps none.
    #[derive(Debug)]
    struct Discard;

    impl SpanExporter for Discard {
        fn export(
            &self,
            batch: Vec<SpanData>,
        ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
            std::hint::black_box(batch);
            std::future::ready(Ok(()))
        }
    }

    /// Installs the pipeline; keep the provider while spans are recorded.
    pub(crate) fn install() -> SdkTracerProvider {
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(Discard)
            .build();
        let layer = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("yiem"))
            .with_filter(Targets::new().with_target("yiem", LevelFilter::INFO));
        tracing_subscriber::registry()
            .with(layer)
            .try_init()
            .expect("no subscriber was installed before");
        provider
    }
}

/// Awaits `f` on every input, in one `block_on`. The function callgrind collects in.
#[inline(never)]
fn run_all<I, F, Fut>(runtime: &tokio::runtime::Runtime, inputs: Vec<I>, f: F)
where
    F: Fn(I) -> Fut,
    Fut: Future,
{
    runtime.block_on(async {
        for input in inputs {
            black_box(f(input).await);
        }
    });
}

fn main() {
    let mut argv = std::env::args().skip(1);
    let (Some(variant), Some(n)) = (argv.next(), argv.next()) else {
        eprintln!(
            "usage: dispatch-count VARIANT N\nvariants: {} {}",
            VARIANTS.join(" "),
            OTEL_VARIANTS.join(" ")
        );
        std::process::exit(2);
    };
    let n: usize = n.parse().expect("N is a number");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = ToolStore::new("bench");
    store.register(add_tool()).unwrap();
    let tool = store.get("add").unwrap();
    let executor = ToolExecutor::new();
    executor.events().on_event(|event| {
        black_box(event);
    });
    // The same executor without any observer: what the events cost is the difference.
    let quiet = ToolExecutor::new();
    let cancel = CancellationToken::new();
    let rmcp = runtime.block_on(async { RmcpHarness::new(RmcpServer::new()) });
    let mut rig = ToolSet::default();
    rig.add_tool(RigAdd);
    let values = || (0..n).map(|_| arguments()).collect::<Vec<_>>();
    let strings = || (0..n).map(|_| arguments_string()).collect::<Vec<_>>();
    let string_values = || {
        (0..n)
            .map(|_| Value::String(arguments_string()))
            .collect::<Vec<_>>()
    };
    let calls = |args: fn() -> Value| {
        (0..n)
            .map(|_| vec![ToolCall::new("c", "add", args())])
            .collect::<Vec<_>>()
    };
    let rig_call = |args: String| async {
        let mut context = rig_core::tool::ToolContext::default();
        rig.execute("add", args, &mut context).await
    };
    let (tool, store, executor, quiet, cancel, rmcp) =
        (&tool, &store, &executor, &quiet, &cancel, &rmcp);
    match variant.as_str() {
        "floor_value" => run_all(&runtime, values(), |args| async {
            floor::dispatch_value(black_box("add"), args).await
        }),
        "floor_string" => run_all(&runtime, strings(), |args| async move {
            floor::dispatch_str(black_box("add"), &args).await
        }),
        "floor_batch_value" | "floor_batch_string" => {
            let inputs = if variant.ends_with("value") {
                calls(arguments)
            } else {
                calls(|| Value::String(arguments_string()))
            };
            let sink = |event: &yiem_core::event::AgentEvent| {
                black_box(event);
            };
            run_all(&runtime, inputs, |calls| {
                floor_batch::dispatch(calls, &sink)
            })
        }
        "yiem_execute_value" => run_all(&runtime, values(), |args| tool.execute("c", args)),
        "yiem_execute_string" => run_all(&runtime, string_values(), |args| tool.execute("c", args)),
        "yiem_get_execute_value" | "yiem_get_execute_string" => {
            let inputs = if variant.ends_with("value") {
                values()
            } else {
                string_values()
            };
            run_all(&runtime, inputs, |args| async {
                let tool = store.get(black_box("add")).unwrap();
                tool.execute("c", args).await
            })
        }
        "yiem_pipeline_value"
        | "yiem_pipeline_string"
        | "yiem_pipeline_quiet_value"
        | "yiem_pipeline_quiet_string" => {
            let inputs = if variant.ends_with("value") {
                calls(arguments)
            } else {
                calls(|| Value::String(arguments_string()))
            };
            let executor = if variant.contains("quiet") {
                quiet
            } else {
                executor
            };
            run_all(&runtime, inputs, |calls| {
                executor.execute(store, calls, cancel)
            })
        }
        #[cfg(feature = "otel")]
        "yiem_pipeline_otel_value" | "yiem_pipeline_otel_string" => {
            let inputs = if variant.ends_with("value") {
                calls(arguments)
            } else {
                calls(|| Value::String(arguments_string()))
            };
            let _provider = otel::install();
            run_all(&runtime, inputs, |calls| {
                executor.execute(store, calls, cancel)
            })
        }
        "rmcp_value" => run_all(
            &runtime,
            (0..n).map(|_| arguments_object()).collect(),
            |args| rmcp.call("add", args),
        ),
        "rmcp_string" => run_all(&runtime, strings(), |args| async move {
            let args = serde_json::from_str(&args).unwrap();
            rmcp.call("add", args).await
        }),
        "rig_value" => run_all(&runtime, values(), |args| rig_call(args.to_string())),
        "rig_string" => run_all(&runtime, strings(), rig_call),
        other => {
            eprintln!(
                "unknown variant {other}; variants: {} {}{}",
                VARIANTS.join(" "),
                OTEL_VARIANTS.join(" "),
                if OTEL_VARIANTS.is_empty() {
                    "(yiem_pipeline_otel_* need --features otel)"
                } else {
                    ""
                }
            );
            std::process::exit(2);
        }
    }
}
