//! (feature `otel`) yiem's GenAI metrics are recorded only once turned on (`otel::set_metrics`), so a
//! build with `otel` and no meter provider pays nothing for them per call. A test binary of its own: it
//! installs the global meter provider and turns the process-wide switch.

use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use serde_json::json;
use yiem_core::{
    exec::{CancellationToken, ToolCall, ToolExecutor},
    otel,
    store::ToolStore,
    tool::AgentTool,
};

/// The names of the metrics `exporter` got so far.
fn exported(provider: &SdkMeterProvider, exporter: &InMemoryMetricExporter) -> Vec<String> {
    provider.force_flush().expect("the metrics are collected");
    let mut names: Vec<String> = exporter
        .get_finished_metrics()
        .expect("the exporter answers")
        .iter()
        .flat_map(|resource| resource.scope_metrics())
        .flat_map(|scope| scope.metrics())
        .map(|metric| metric.name().to_owned())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[tokio::test]
async fn tool_call_durations_are_recorded_only_once_metrics_are_turned_on() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    opentelemetry::global::set_meter_provider(provider.clone());
    let store = ToolStore::new("metrics");
    store
        .register(
            AgentTool::builder("echo")
                .description("Echoes.")
                .input_schema(json!({"type": "object", "properties": {}}))
                .handler(|_ctx, _args: serde_json::Value| async { "echoed" })
                .build()
                .unwrap(),
        )
        .unwrap();
    let executor = ToolExecutor::new();
    let cancel = CancellationToken::new();
    let call = |id: &str| vec![ToolCall::new(id, "echo", json!({}))];

    assert!(!otel::records_metrics(), "metrics are off by default");
    executor.execute(&store, call("c1"), &cancel).await;
    assert_eq!(
        exported(&provider, &exporter),
        Vec::<String>::new(),
        "no metric is recorded before `otel::set_metrics(true)`"
    );

    otel::set_metrics(true);
    executor.execute(&store, call("c2"), &cancel).await;
    assert_eq!(
        exported(&provider, &exporter),
        ["yiem.tool.call.duration"],
        "the tool call's duration is recorded once metrics are on"
    );
    otel::set_metrics(false);
}
