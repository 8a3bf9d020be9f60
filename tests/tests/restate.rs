//! Durable agents on a real Restate server (`@restatedev/restate-server`, pinned, from npm): the
//! `restate-agent` service binary runs the scenario of `yiem_tests::durable`, and the tests talk to it
//! through the ingress, kill it with SIGKILL at step boundaries, start it again and count the tools'
//! side effects. Each test has a server of its own; they run one at a time (two cores, one server each
//! is plenty).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use yiem_tests::durable::{EFFECTS_ENV, RELEASE_ENV, STARTED_ENV};
use yiem_tests::poll::wait_until;
use yiem_tests::restate::{PATIENCE, RestateServer, Service, TempDir, free_port};

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_restate-agent"))
}

/// The tools' side effects, one line each, sorted.
fn effects(file: &Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// The six effects of a `three turns` run, each once.
fn three_turn_effects() -> Vec<String> {
    let mut lines = vec![
        r#"call_1 get_weather {"city":"Oslo"}"#.to_owned(),
        r#"call_2 add_note {"text":"note 1"}"#.to_owned(),
        r#"call_1 get_weather {"city":"Bergen"}"#.to_owned(),
        r#"call_2 add_note {"text":"note 2"}"#.to_owned(),
        r#"call_1 get_weather {"city":"Paris"}"#.to_owned(),
        r#"call_2 add_note {"text":"note 3"}"#.to_owned(),
    ];
    lines.sort();
    lines
}

/// The messages without their timestamps, which differ between runs.
fn without_timestamps(mut value: Value) -> Value {
    match &mut value {
        Value::Object(map) => {
            map.remove("timestamp");
            for member in map.values_mut() {
                *member = without_timestamps(member.take());
            }
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                *item = without_timestamps(item.take());
            }
        }
        _ => {}
    }
    value
}

fn roles(messages: &Value) -> Vec<String> {
    messages
        .as_array()
        .expect("messages are an array")
        .iter()
        .map(|message| message["role"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// A service started with the scenario's files in `dir`, registered with `server`.
async fn service(server: &RestateServer, dir: &TempDir, port: u16, stop_at: Option<&str>) -> Service {
    let effects = dir.join("effects");
    let started = dir.join("started");
    let release = dir.join("release");
    let marker = dir.join("marker");
    let service = Service::start(
        &binary(),
        port,
        &[
            (EFFECTS_ENV, effects.as_path()),
            (STARTED_ENV, started.as_path()),
            (RELEASE_ENV, release.as_path()),
            ("YIEM_RESTATE_MARKER", marker.as_path()),
        ],
        stop_at,
    )
    .await;
    server.register(&service.uri).await;
    service
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_turn_run_with_two_tools_per_turn_completes() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = RestateServer::start().await;
    let dir = TempDir::new("restate-three");
    let _service = service(&server, &dir, free_port(), None).await;

    let (status, report) = server
        .call("three", "start", Some(json!({"prompt": "three turns"})))
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"], json!({"reason": "finished"}));
    assert_eq!(
        report["text"],
        "done: sunny in Oslo | noted: note 1 | sunny in Bergen | noted: note 2 | sunny in Paris | noted: note 3"
    );
    // The prompt, then three turns of (assistant, two results), then the answer.
    assert_eq!(
        roles(&report["messages"]),
        [
            "user", "assistant", "tool_result", "tool_result", "assistant", "tool_result",
            "tool_result", "assistant", "tool_result", "tool_result", "assistant"
        ]
    );
    assert_eq!(effects(&dir.join("effects")), three_turn_effects());
    let view = server.conversation("three").await;
    assert_eq!(view["messages"], report["messages"]);
    assert_eq!(view["stop"], json!({"reason": "finished"}));
}
