//! Durable agents on a real Restate server (`@restatedev/restate-server`, pinned, from npm): the
//! `restate-agent` service binary runs the scenario of `yiem_restate_tests::durable`, and the tests talk to it
//! through the ingress, kill it with SIGKILL at step boundaries, start it again and count the tools'
//! side effects. Each test has a server of its own; they run one at a time (two cores, one server each
//! is plenty).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

use yiem_core::agent::{Agent, AgentSettings, Decision, RunStop};
use yiem_restate_tests::durable::{
    self, EFFECTS_ENV, EVENTS_ENV, FIRST_ENV, RELEASE_ENV, STARTED_ENV,
};
use yiem_restate_tests::server::{PATIENCE, RestateServer, Service, TempDir, free_port};
use yiem_restate_tests::spans::{self, Exported, SPANS_ENV};
use yiem_tests::poll::wait_until;

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
        r#"call_3 get_weather {"city":"Bergen"}"#.to_owned(),
        r#"call_4 add_note {"text":"note 2"}"#.to_owned(),
        r#"call_5 get_weather {"city":"Paris"}"#.to_owned(),
        r#"call_6 add_note {"text":"note 3"}"#.to_owned(),
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
async fn service(
    server: &RestateServer,
    dir: &TempDir,
    port: u16,
    stop_at: Option<&str>,
) -> Service {
    service_with(server, dir, port, stop_at, false).await
}

/// [`service`], with `first` set: the barrier scenario's first process.
async fn service_with(
    server: &RestateServer,
    dir: &TempDir,
    port: u16,
    stop_at: Option<&str>,
    first: bool,
) -> Service {
    let effects = dir.join("effects");
    let started = dir.join("started");
    let release = dir.join("release");
    let marker = dir.join("marker");
    let events = dir.join("events");
    let spans = dir.join("spans");
    let mut env = vec![
        (EFFECTS_ENV, effects.as_path()),
        (STARTED_ENV, started.as_path()),
        (RELEASE_ENV, release.as_path()),
        ("YIEM_RESTATE_MARKER", marker.as_path()),
        (EVENTS_ENV, events.as_path()),
        (SPANS_ENV, spans.as_path()),
    ];
    if first {
        env.push((FIRST_ENV, dir.0.as_path()));
    }
    let service = Service::start(&binary(), port, &env, stop_at).await;
    server.register(&service.uri).await;
    service
}

/// What most tests start with: the test's turn, a server, a folder and a service registered with it.
struct Setup {
    _alone: tokio::sync::MutexGuard<'static, ()>,
    server: RestateServer,
    dir: TempDir,
    _service: Service,
}

async fn setup(name: &str) -> Setup {
    let alone = ONE_AT_A_TIME.lock().await;
    let server = RestateServer::start().await;
    let dir = TempDir::new(name);
    let service = service(&server, &dir, free_port(), None).await;
    Setup {
        _alone: alone,
        server,
        dir,
        _service: service,
    }
}

/// Polls `conversation` until its run stopped for `reason`: the view.
async fn wait_for_stop(server: &RestateServer, conversation: &str, reason: &str) -> Value {
    let mut view = Value::Null;
    for _ in 0..(PATIENCE.as_millis() / 50) {
        view = server.conversation(conversation).await;
        if view["stop"]["reason"] == reason {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(view["stop"]["reason"], reason, "{view}");
    view
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_turn_run_with_two_tools_per_turn_completes() {
    let Setup { server, dir, .. } = &setup("restate-three").await;

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
            "user",
            "assistant",
            "tool_result",
            "tool_result",
            "assistant",
            "tool_result",
            "tool_result",
            "assistant",
            "tool_result",
            "tool_result",
            "assistant"
        ]
    );
    assert_eq!(effects(&dir.join("effects")), three_turn_effects());
    let view = server.conversation("three").await;
    assert_eq!(view["messages"], report["messages"]);
    assert_eq!(view["stop"], json!({"reason": "finished"}));
}

/// Runs `three turns` on `conversation` with the service stopped at `boundary`: waits for the marker,
/// SIGKILLs the service, starts it again, and waits for the run. The report, the effects and the
/// conversation (without timestamps).
async fn crash_at(
    server: &RestateServer,
    conversation: &str,
    boundary: &str,
) -> (Value, Vec<String>, Value) {
    let dir = TempDir::new("restate-crash");
    let port = free_port();
    let doomed = service(server, &dir, port, Some(boundary)).await;
    let invocation = server.send_prompt(conversation, "three turns").await;
    let marker = dir.join("marker");
    assert!(
        wait_until(|| marker.exists(), PATIENCE).await,
        "the service never reached `{boundary}`"
    );
    doomed.kill();
    let _again = service(server, &dir, port, None).await;
    let (status, report) = server.attach(&invocation).await;
    assert_eq!(status, 200, "after a crash at `{boundary}`: {report}");
    let messages = without_timestamps(server.conversation(conversation).await["messages"].clone());
    (report, effects(&dir.join("effects")), messages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_at_every_step_boundary_completes_with_each_effect_once() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = RestateServer::start().await;
    let dir = TempDir::new("restate-baseline");
    let baseline_service = service(&server, &dir, free_port(), None).await;
    let (status, baseline) = server
        .call("baseline", "start", Some(json!({"prompt": "three turns"})))
        .await;
    assert_eq!(status, 200, "{baseline}");
    assert_eq!(effects(&dir.join("effects")), three_turn_effects());
    let baseline_conversation =
        without_timestamps(server.conversation("baseline").await["messages"].clone());
    baseline_service.kill();

    for boundary in [
        // After the first model call.
        "model 1",
        // In the middle of a tool batch: its first call is durable, its second has not run.
        "turn 1 tool get_weather call_1",
        // After a batch: both calls durable, the next model call not made.
        "turn 1 tool add_note call_2",
        // In the middle of the last batch, and after the last model call.
        "turn 3 tool get_weather call_5",
        "model 4",
    ] {
        let conversation = format!("crash-{}", boundary.replace(' ', "-"));
        let (report, effects, conversation) = crash_at(&server, &conversation, boundary).await;
        assert_eq!(
            report["stop"],
            json!({"reason": "finished"}),
            "at `{boundary}`"
        );
        assert_eq!(report["text"], baseline["text"], "at `{boundary}`");
        assert_eq!(
            effects,
            three_turn_effects(),
            "each effect once, killed at `{boundary}`"
        );
        assert_eq!(
            conversation, baseline_conversation,
            "the same conversation, killed at `{boundary}`"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_question_suspends_the_run_survives_a_restart_and_resumes_with_the_answer() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = RestateServer::start().await;
    let dir = TempDir::new("restate-question");
    let port = free_port();
    let first = service(&server, &dir, port, None).await;
    let invocation = server.send_prompt("question", "ship").await;

    // The run waits on the question; the batch's other call ran, the one that asked did not go on.
    let waiting = wait_for_stop(&server, "question", "awaiting_answer").await;
    let question = &waiting["pending_questions"][0];
    assert_eq!(question["call_id"], "call_1", "{waiting}");
    assert_eq!(question["tool_name"], "ship");
    assert_eq!(question["key"], "question-1");
    assert_eq!(question["message"], "Ship it?");
    assert_eq!(
        effects(&dir.join("effects")),
        [r#"call_2 add_note {"text":"shipping"}"#]
    );

    // No process holds the run: the service dies and comes back.
    first.kill();
    let _second = service(&server, &dir, port, None).await;

    // An answer that does not fit the form is refused with the field named; the run still waits.
    let (status, refused) = server
        .call(
            "question",
            "answer",
            Some(json!({"answers": [{
                "call_id": "call_1", "key": "question-1", "action": "accept", "content": {"really": "yes"}
            }]})),
        )
        .await;
    assert!(status >= 400, "{status} {refused}");
    assert!(
        refused
            .to_string()
            .contains("field `really`: expected a boolean"),
        "{refused}"
    );
    // So is an answer to a question that does not wait.
    let (status, unknown) = server
        .call(
            "question",
            "answer",
            Some(json!({"answers": [{"call_id": "call_1", "key": "question-2", "action": "decline"}]})),
        )
        .await;
    assert!(status >= 400, "{status} {unknown}");
    assert!(
        unknown
            .to_string()
            .contains("no question `question-2` of call `call_1` waits for an answer"),
        "{unknown}"
    );

    // The answer resumes it, in the new process: the call runs again with it, the note does not.
    let (status, taken) = server
        .call(
            "question",
            "answer",
            Some(json!({"answers": [{
                "call_id": "call_1", "key": "question-1", "action": "accept", "content": {"really": true}
            }]})),
        )
        .await;
    assert_eq!(status, 200, "{taken}");
    assert_eq!(taken, 1);
    let (status, report) = server.attach(&invocation).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"], json!({"reason": "finished"}));
    assert_eq!(
        report["text"],
        r#"done: shipped: {"really":true} | noted: shipping"#
    );
    assert_eq!(
        effects(&dir.join("effects")),
        [
            r#"call_1 ship {"really":true}"#,
            r#"call_2 add_note {"text":"shipping"}"#,
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_suspends_survives_a_restart_and_resumes_through_the_ingress() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = RestateServer::start().await;
    let dir = TempDir::new("restate-approval");
    let port = free_port();
    let first = service(&server, &dir, port, None).await;
    let invocation = server.send_prompt("approval", "publish").await;

    // The run waits: the conversation shows the waiting call, and nothing ran.
    let waiting = wait_for_stop(&server, "approval", "awaiting_approval").await;
    assert_eq!(
        waiting["pending_approvals"][0]["tool_name"], "publish",
        "{waiting}"
    );
    assert_eq!(waiting["pending_approvals"][0]["call_id"], "call_1");
    assert!(
        effects(&dir.join("effects")).is_empty(),
        "no call ran before the decision"
    );

    // No process holds the run: the service dies and comes back.
    first.kill();
    let _second = service(&server, &dir, port, None).await;

    // A wrong decision is refused and says why; the run still waits.
    let (status, refused) = server
        .call(
            "approval",
            "approve",
            Some(json!({"decisions": [{"call_id": "call_9", "decision": "approve"}]})),
        )
        .await;
    assert!(status >= 400, "{status} {refused}");
    let refused = refused.to_string();
    assert!(
        refused.contains(
            "no call with id `call_9` is waiting for approval (waiting: `call_1` (publish))"
        ),
        "{refused}"
    );

    // An edit resumes it, in the new process.
    let (status, taken) = server
        .call(
            "approval",
            "approve",
            Some(json!({"decisions": [{
                "call_id": "call_1",
                "decision": "approve_with",
                "arguments": {"text": "the short version"}
            }]})),
        )
        .await;
    assert_eq!(status, 200, "{taken}");
    assert_eq!(taken, 1);
    let (status, report) = server.attach(&invocation).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"], json!({"reason": "finished"}));
    assert_eq!(
        report["text"],
        "done: published: the short version | noted: published"
    );
    assert_eq!(
        effects(&dir.join("effects")),
        [
            r#"call_1 publish {"text":"the short version"}"#,
            r#"call_2 add_note {"text":"published"}"#,
        ]
    );
    // A second decision finds nothing waiting.
    let (status, late) = server
        .call(
            "approval",
            "approve",
            Some(json!({"decisions": [{"call_id": "call_1", "decision": "approve"}]})),
        )
        .await;
    assert!(status >= 400, "{status} {late}");
    assert!(
        late.to_string()
            .contains("conversation `approval` has no call waiting for approval"),
        "{late}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_conversations_stay_independent_and_a_steer_lands_after_the_turn() {
    let Setup { server, dir, .. } = &setup("restate-two").await;

    let slow = server.send_prompt("slow", "slow").await;
    let started = dir.join("started");
    assert!(
        wait_until(|| started.exists(), PATIENCE).await,
        "the slow tool never started"
    );
    // While `slow` sits in its tool call: another conversation runs to the end, and a steer queues.
    let (status, other) = server
        .call("other", "start", Some(json!({"prompt": "three turns"})))
        .await;
    assert_eq!(status, 200, "{other}");
    assert_eq!(other["stop"], json!({"reason": "finished"}));
    let (status, steered) = server
        .call("slow", "steer", Some(json!({"text": "and the wind?"})))
        .await;
    assert_eq!(status, 200, "{steered}");
    std::fs::write(dir.join("release"), b"go").unwrap();

    let (status, report) = server.attach(&slow).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"], json!({"reason": "finished"}));
    // The steer came after the turn's tool result, before the next model call.
    assert_eq!(
        roles(&report["messages"]),
        ["user", "assistant", "tool_result", "user", "assistant"]
    );
    assert_eq!(report["messages"][2]["content"][0]["text"], "released");
    assert_eq!(report["messages"][3]["content"][0]["text"], "and the wind?");
    assert_eq!(report["text"], "you said: and the wind?");
    // Neither conversation saw the other's messages.
    let other_view = server.conversation("other").await;
    assert_eq!(other_view["messages"].as_array().unwrap().len(), 11);
    assert!(!other_view["messages"].to_string().contains("wind"));
    let mut expected = three_turn_effects();
    expected.push("call_1 wait_for_release {}".to_owned());
    expected.sort();
    assert_eq!(effects(&dir.join("effects")), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_model_step_is_retried_by_its_policy_and_then_stops_the_run_with_its_error() {
    let Setup { server, dir, .. } = &setup("restate-retry").await;

    // Two failures, then an answer: three attempts of one step, one reply in the conversation.
    let (status, report) = server
        .call("flaky", "start", Some(json!({"prompt": "flaky"})))
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"], json!({"reason": "finished"}));
    assert_eq!(report["text"], "steady now");
    assert_eq!(roles(&report["messages"]), ["user", "assistant"]);
    assert_eq!(effects(&dir.join("effects")), ["model flaky"; 3]);

    // Always failing: the default policy's four attempts, then the run stops with the model's error.
    let (status, report) = server
        .call("broken", "start", Some(json!({"prompt": "broken"})))
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"]["reason"], "error", "{report}");
    let message = report["stop"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("401 the key is wrong"), "{message}");
    let broken = effects(&dir.join("effects"))
        .into_iter()
        .filter(|line| line == "model broken")
        .count();
    assert_eq!(broken, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_stops_a_run_at_the_next_step_and_one_waiting_for_approval_at_once() {
    let Setup { server, dir, .. } = &setup("restate-abort").await;

    // During a tool call: the call finishes, the model is not called again.
    let slow = server.send_prompt("slow", "slow").await;
    let started = dir.join("started");
    assert!(
        wait_until(|| started.exists(), PATIENCE).await,
        "the slow tool never started"
    );
    let (status, body) = server.call("slow", "abort", None).await;
    assert_eq!(status, 200, "{body}");
    std::fs::write(dir.join("release"), b"go").unwrap();
    let (status, report) = server.attach(&slow).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"], json!({"reason": "aborted"}));
    assert_eq!(
        roles(&report["messages"]),
        ["user", "assistant", "tool_result"]
    );
    assert_eq!(report["messages"][2]["content"][0]["text"], "released");

    // While waiting for approval: every waiting call is denied, none runs, the run stops.
    let publish = server.send_prompt("publish", "publish").await;
    wait_for_stop(server, "publish", "awaiting_approval").await;
    let (status, body) = server.call("publish", "abort", None).await;
    assert_eq!(status, 200, "{body}");
    let (status, report) = server.attach(&publish).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"], json!({"reason": "aborted"}));
    assert_eq!(
        roles(&report["messages"]),
        ["user", "assistant", "tool_result", "tool_result"]
    );
    for result in &report["messages"].as_array().unwrap()[2..] {
        assert_eq!(result["is_error"], true, "{result}");
    }
    // Only the slow tool ever ran.
    assert_eq!(
        effects(&dir.join("effects")),
        ["call_1 wait_for_release {}"]
    );

    // While waiting on a question: the call that asked gets a result that says it did not run, the
    // batch's other call keeps its own, the run stops.
    let ship = server.send_prompt("ship", "ship").await;
    wait_for_stop(server, "ship", "awaiting_answer").await;
    let (status, body) = server.call("ship", "abort", None).await;
    assert_eq!(status, 200, "{body}");
    let (status, report) = server.attach(&ship).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"], json!({"reason": "aborted"}));
    assert_eq!(
        roles(&report["messages"]),
        ["user", "assistant", "tool_result", "tool_result"]
    );
    assert_eq!(report["messages"][2]["is_error"], true, "{report}");
    assert_eq!(
        report["messages"][3]["content"][0]["text"],
        "noted: shipping"
    );
    assert_eq!(
        effects(&dir.join("effects")),
        [
            "call_1 wait_for_release {}",
            r#"call_2 add_note {"text":"shipping"}"#,
        ]
    );

    // An abort while nothing runs is dropped: the next run goes to the end.
    let (status, _) = server.call("idle", "abort", None).await;
    assert_eq!(status, 200);
    let (status, report) = server
        .call("idle", "start", Some(json!({"prompt": "hello"})))
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"], json!({"reason": "finished"}));
    assert_eq!(report["text"], "you said: hello");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_are_refused_with_what_was_expected() {
    let Setup { server, .. } = &setup("restate-bad").await;

    let (status, body) = server
        .call("bad", "start", Some(json!({"text": "wrong field"})))
        .await;
    assert!(status >= 400, "{status} {body}");
    assert!(body.to_string().contains("prompt"), "{body}");
    let (status, body) = server
        .call(
            "bad",
            "approve",
            Some(json!({"decisions": [{"call_id": "c1", "decision": "maybe"}]})),
        )
        .await;
    assert!(status >= 400, "{status} {body}");
    assert!(body.to_string().contains("maybe"), "{body}");
    // A prompt 1000 times larger than a usual one is just a prompt.
    let big = "x".repeat(1 << 20);
    let (status, report) = server
        .call("big", "start", Some(json!({"prompt": big})))
        .await;
    assert_eq!(
        status,
        200,
        "{}",
        report.to_string().chars().take(300).collect::<String>()
    );
    assert_eq!(report["stop"], json!({"reason": "finished"}));
    // The conversation still answers after the refusals.
    let view = server.conversation("bad").await;
    assert_eq!(view["messages"], json!([]));
}

/// Events in a comparable order: the ends of a batch's calls come as the calls finish, which for calls
/// that run at once is not an order either driver promises, so each run of consecutive ends is sorted.
fn comparable(mut lines: Vec<String>) -> Vec<String> {
    let mut start = 0;
    while start < lines.len() {
        let mut end = start;
        while end < lines.len() && lines[end].starts_with("tool_end ") {
            end += 1;
        }
        lines[start..end].sort();
        start = end.max(start + 1);
    }
    lines
}

/// One protocol, two drivers: the same scripted three-turn conversation — a parallel batch, an approval,
/// a stop at a tool — run by the in-process `Agent` and by the durable runner on a real Restate server,
/// from the same `AgentConfig`, gives the same events in the same order and the same conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_process_and_the_durable_agent_perform_the_same_protocol() {
    // In process.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder()
        .config(durable::config())
        .model(durable::model())
        .build();
    let sink = Arc::clone(&seen);
    agent.on_event(move |event| sink.lock().unwrap().push(durable::describe(event)));
    let outcome = agent.prompt("equivalence").await;
    let id = outcome.pending_approvals()[0].call_id.clone();
    let outcome = agent.resume([(id, Decision::Approve)]).await.unwrap();
    assert!(
        matches!(outcome.stop, RunStop::StoppedAtTool { .. }),
        "{:?}",
        outcome.stop
    );
    let in_process_events = comparable(seen.lock().unwrap().clone());
    let in_process_conversation =
        without_timestamps(serde_json::to_value(agent.messages()).unwrap());

    // Durable.
    let Setup { server, dir, .. } = &setup("restate-equivalence").await;
    let invocation = server.send_prompt("equivalence", "equivalence").await;
    let waiting = wait_for_stop(server, "equivalence", "awaiting_approval").await;
    let id = waiting["pending_approvals"][0]["call_id"].clone();
    let (status, taken) = server
        .call(
            "equivalence",
            "approve",
            Some(json!({"decisions": [{"call_id": id, "decision": "approve"}]})),
        )
        .await;
    assert_eq!(status, 200, "{taken}");
    let (status, report) = server.attach(&invocation).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"]["reason"], "stopped_at_tool", "{report}");
    let durable_events: Vec<String> = std::fs::read_to_string(dir.join("events"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    let durable_conversation =
        without_timestamps(server.conversation("equivalence").await["messages"].clone());

    assert!(
        in_process_events.contains(&"tool_start call_2".to_owned()),
        "{in_process_events:#?}"
    );
    assert_eq!(comparable(durable_events), in_process_events);
    assert_eq!(durable_conversation, in_process_conversation);
}

/// A batch of two parallel calls that wait for each other completes on the durable runner (one after
/// another, the first would wait for ever), and with the process killed after the first call's journal
/// entry and before the second's, each call's side effect happens once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_batch_runs_at_once_and_each_call_is_journaled_once_across_a_kill() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = RestateServer::start().await;
    let dir = TempDir::new("restate-barrier");
    let port = free_port();
    let first = service_with(&server, &dir, port, Some("turn 1 tool meet call_1"), true).await;
    let invocation = server.send_prompt("barrier", "barrier").await;
    let marker = dir.join("marker");
    assert!(
        wait_until(|| marker.exists(), PATIENCE).await,
        "the first call never got its journal entry: did the two calls run one after another?"
    );
    // `a` is journaled; `b` met it and is still running.
    assert_eq!(
        effects(&dir.join("effects")),
        [r#"call_1 meet {"name":"a"}"#]
    );
    first.kill();
    let _again = service(&server, &dir, port, None).await;
    let (status, report) = server.attach(&invocation).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"], json!({"reason": "finished"}), "{report}");
    assert_eq!(
        effects(&dir.join("effects")),
        [r#"call_1 meet {"name":"a"}"#, r#"call_2 meet {"name":"b"}"#],
        "each call's effect once: `a` from the journal, `b` run again"
    );
}

/// The spans, one line each, for a failure message.
fn listing(spans: &[Exported]) -> String {
    spans
        .iter()
        .map(|span| {
            format!(
                "{} {} parent {} {} (process {})",
                span.trace, span.span, span.parent, span.name, span.process
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_and_restarted_is_one_trace() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = RestateServer::start().await;
    let dir = TempDir::new("restate-trace");
    let port = free_port();
    // Killed with the first batch durable: model 1 and both its calls ran in the first process.
    let boundary = "turn 1 tool add_note call_2";
    let doomed = service(&server, &dir, port, Some(boundary)).await;
    let invocation = server.send_prompt("traced", "three turns").await;
    let marker = dir.join("marker");
    assert!(
        wait_until(|| marker.exists(), PATIENCE).await,
        "the service never reached `{boundary}`"
    );
    doomed.kill();
    let _again = service(&server, &dir, port, None).await;
    let (status, report) = server.attach(&invocation).await;
    assert_eq!(status, 200, "after the crash: {report}");
    assert_eq!(report["stop"], json!({"reason": "finished"}));

    // The second process's `invoke_agent` ends with the run (the first one's never ended: its process was
    // killed); it is written when it ends, so it is there by now, but a file is read with patience.
    let file = dir.join("spans");
    let ended = |spans: &[Exported]| spans.iter().any(|span| span.name == "invoke_agent");
    assert!(
        wait_until(|| ended(&spans::read(&file)), PATIENCE).await,
        "the restarted process never wrote its `invoke_agent` span to {}:\n{}",
        file.display(),
        listing(&spans::read(&file))
    );
    let spans = spans::read(&file);
    let all = listing(&spans);
    // Each attempt in the restarted process is an `invoke_agent` that ended (one, unless Restate had to
    // retry there too).
    let attempts: Vec<&Exported> = spans
        .iter()
        .filter(|span| span.name == "invoke_agent")
        .collect();
    let restarted = attempts[0].process;
    let first: Vec<&Exported> = spans
        .iter()
        .filter(|span| span.process != restarted)
        .collect();
    let second: Vec<&Exported> = spans
        .iter()
        .filter(|span| span.process == restarted)
        .collect();
    let names = |spans: &[&Exported]| {
        let mut names: Vec<String> = spans.iter().map(|span| span.name.clone()).collect();
        names.sort();
        names
    };
    // The first process wrote the spans that ended before it was killed: model 1's request and the first
    // call of its batch (the second is durable, but its span was still open at the kill).
    assert!(
        names(&first).contains(&"chat scripted".to_owned())
            && names(&first).contains(&"execute_tool get_weather".to_owned()),
        "the first process wrote model 1's `chat` and call_1's `execute_tool`:\n{all}"
    );
    // The second replayed them from the journal and made models 2 to 4's requests and their calls.
    assert_eq!(
        names(&second)
            .iter()
            .filter(|name| name.starts_with("chat"))
            .count(),
        3,
        "the restarted process made models 2, 3 and 4's requests:\n{all}"
    );
    assert!(
        second
            .iter()
            .any(|span| span.name.starts_with("execute_tool")),
        "the restarted process ran tool calls:\n{all}"
    );

    // One trace throughout: every span of both processes.
    let mut traces: Vec<&str> = spans.iter().map(|span| span.trace.as_str()).collect();
    traces.sort_unstable();
    traces.dedup();
    assert_eq!(
        traces.len(),
        1,
        "a run killed and restarted is one trace, but its spans are in {} traces; the restarted \
         attempt's `invoke_agent` must be a child of the root the first attempt journaled (step \
         `trace`):\n{all}",
        traces.len()
    );
    // The root is the first attempt's `invoke_agent` (never written: its process was killed): the parent
    // of the first process's spans and of each later attempt's `invoke_agent`.
    let root = &attempts[0].parent;
    for attempt in &attempts {
        assert!(
            !attempt.is_root() && &attempt.parent == root,
            "each restarted attempt's `invoke_agent` joins the run's root instead of being one:\n{all}"
        );
    }
    for span in first.iter().filter(|span| span.name.starts_with("chat")) {
        assert_eq!(
            &span.parent, root,
            "model 1's request is a child of the first attempt's `invoke_agent`, the run's root:\n{all}"
        );
    }
    for span in second.iter().filter(|span| span.name.starts_with("chat")) {
        assert!(
            attempts.iter().any(|attempt| attempt.span == span.parent),
            "the restarted attempt's requests are children of its `invoke_agent`:\n{all}"
        );
    }
    // Every parent is a span of the trace, or the root.
    let ids: Vec<&str> = spans.iter().map(|span| span.span.as_str()).collect();
    for span in &spans {
        assert!(
            ids.contains(&span.parent.as_str()) || &span.parent == root,
            "{} has a parent outside the run's trace:\n{all}",
            span.name
        );
    }
}

/// The effects of the `program` prompt's three calls, each once, `publish` with what it published.
fn program_effects() -> Vec<String> {
    vec![
        r#"call_1/code/0 add_note {"text":"from code"}"#.to_owned(),
        r#"call_1/code/1 get_weather {"city":"Oslo"}"#.to_owned(),
        r#"call_1/code/2 publish {"text":"from code"}"#.to_owned(),
    ]
}

/// Waits until the `program` run waits for the decision on its program's third call, and checks that
/// the call waits and its first two calls ran once each.
async fn program_waits_at_its_third_call(
    server: &RestateServer,
    conversation: &str,
    dir: &TempDir,
) {
    let waiting = wait_for_stop(server, conversation, "awaiting_approval").await;
    let pending = &waiting["pending_approvals"];
    assert_eq!(pending.as_array().map(Vec::len), Some(1), "{waiting}");
    assert_eq!(pending[0]["call_id"], "call_1/code/2", "{waiting}");
    assert_eq!(pending[0]["tool_name"], "publish");
    assert_eq!(pending[0]["arguments"], json!({"text": "from code"}));
    assert_eq!(
        effects(&dir.join("effects")),
        program_effects()[..2],
        "the program's first two calls ran once each, the third did not"
    );
}

/// Code mode on the durable runner: a program whose third call needs approval pauses the run as a
/// direct call does (its first two calls done), survives a restart while it waits, and, approved
/// through the `approve` handler in the new process, finishes with every call's effect once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_waits_at_its_third_call_and_finishes_once_approved_with_each_effect_once() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = RestateServer::start().await;
    let dir = TempDir::new("restate-program");
    let port = free_port();
    let first = service(&server, &dir, port, None).await;
    let invocation = server.send_prompt("program", "program").await;
    program_waits_at_its_third_call(&server, "program", &dir).await;

    // No process holds the run: the service dies and comes back.
    first.kill();
    let _second = service(&server, &dir, port, None).await;
    let (status, taken) = server
        .call(
            "program",
            "approve",
            Some(json!({"decisions": [{"call_id": "call_1/code/2", "decision": "approve"}]})),
        )
        .await;
    assert_eq!(status, 200, "{taken}");
    assert_eq!(taken, 1);
    let (status, report) = server.attach(&invocation).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"], json!({"reason": "finished"}), "{report}");
    assert_eq!(
        report["text"],
        "done: noted: from code / sunny in Oslo / published: from code\n"
    );
    assert_eq!(effects(&dir.join("effects")), program_effects());
    // The conversation holds the model's program and its one result; the program's calls are not
    // messages of their own.
    assert_eq!(
        roles(&report["messages"]),
        ["user", "assistant", "tool_result", "assistant"]
    );
}

/// A denied call of a durable program is an exception the program catches: it goes on, and the denied
/// call never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_of_a_durable_program_is_an_exception_it_catches() {
    let Setup { server, dir, .. } = &setup("restate-program-denied").await;
    let invocation = server.send_prompt("program", "program").await;
    program_waits_at_its_third_call(server, "program", dir).await;
    let (status, taken) = server
        .call(
            "program",
            "approve",
            Some(json!({"decisions": [{
                "call_id": "call_1/code/2", "decision": "deny", "reason": "not today"
            }]})),
        )
        .await;
    assert_eq!(status, 200, "{taken}");
    let (status, report) = server.attach(&invocation).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"], json!({"reason": "finished"}), "{report}");
    assert_eq!(
        report["text"],
        "done: noted: from code / sunny in Oslo / caught: the user denied this call: not today\n"
    );
    assert_eq!(effects(&dir.join("effects")), program_effects()[..2]);
}

/// Each call of a durable program is a journaled step: with the service killed right after a program
/// call's step is durable (after the first call; after the second), the run replays the program in a
/// new process, the journaled calls give their recorded results without running again, and every
/// call's effect happens once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_killed_between_its_calls_runs_each_call_once() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = RestateServer::start().await;
    for (boundary, done) in [
        ("turn 1 tool add_note call_1/code/0", 1),
        ("turn 1 tool get_weather call_1/code/1", 2),
    ] {
        let conversation = format!("program-killed-{done}");
        let dir = TempDir::new("restate-program-crash");
        let port = free_port();
        let doomed = service(&server, &dir, port, Some(boundary)).await;
        let invocation = server.send_prompt(&conversation, "program").await;
        let marker = dir.join("marker");
        assert!(
            wait_until(|| marker.exists(), PATIENCE).await,
            "the service never reached `{boundary}`"
        );
        assert_eq!(
            effects(&dir.join("effects")),
            program_effects()[..done],
            "killed at `{boundary}`"
        );
        doomed.kill();
        let _again = service(&server, &dir, port, None).await;
        program_waits_at_its_third_call(&server, &conversation, &dir).await;
        let (status, taken) = server
            .call(
                &conversation,
                "approve",
                Some(json!({"decisions": [{"call_id": "call_1/code/2", "decision": "approve"}]})),
            )
            .await;
        assert_eq!(status, 200, "{taken}");
        let (status, report) = server.attach(&invocation).await;
        assert_eq!(status, 200, "{report}");
        assert_eq!(
            report["text"], "done: noted: from code / sunny in Oslo / published: from code\n",
            "killed at `{boundary}`"
        );
        assert_eq!(
            effects(&dir.join("effects")),
            program_effects(),
            "each call's effect once, killed at `{boundary}`"
        );
    }
}

/// A program's calls started together (`Promise.all` of two `meet`s that wait for each other) run at
/// once on the durable runner too, each a step of its own; with the process killed after the first
/// call's step is durable and the second still running, the replay gives the first its journaled result
/// and runs the second: each effect once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_s_calls_started_together_run_at_once_and_each_is_journaled_once_across_a_kill() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = RestateServer::start().await;
    let dir = TempDir::new("restate-program-barrier");
    let port = free_port();
    let boundary = "turn 1 tool meet call_1/code/0";
    let first = service_with(&server, &dir, port, Some(boundary), true).await;
    let invocation = server
        .send_prompt("program-barrier", "program barrier")
        .await;
    let marker = dir.join("marker");
    assert!(
        wait_until(|| marker.exists(), PATIENCE).await,
        "the program's first call never got its step: did its two calls run one after another?"
    );
    assert_eq!(
        effects(&dir.join("effects")),
        [r#"call_1/code/0 meet {"name":"a"}"#]
    );
    first.kill();
    let _again = service(&server, &dir, port, None).await;
    let (status, report) = server.attach(&invocation).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["stop"], json!({"reason": "finished"}), "{report}");
    assert_eq!(report["text"], "done: met a, met b\n");
    assert_eq!(
        effects(&dir.join("effects")),
        [
            r#"call_1/code/0 meet {"name":"a"}"#,
            r#"call_1/code/1 meet {"name":"b"}"#
        ],
        "each call's effect once: `a` from the journal, `b` run again"
    );
}
