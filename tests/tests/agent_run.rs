//! The agent loop as a resumable step machine: turn and usage limits, a caller's timeout and a dropped
//! `prompt()` that leave a valid conversation, approvals (approve, edit, deny, always) across a trip
//! through JSON and into a second process, the concurrency cap, stop-at-tools, and the step machine
//! driven by hand.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use serde_json::{Value, json};
use tokio::sync::{Barrier, mpsc};
use yiem_core::{
    agent::{
        Agent, AgentRun, AgentSettings, ApprovalPolicy, Decision, ResumeError, RunLimits,
        RunMismatch, RunStop, Step,
    },
    event::AgentEvent,
    exec::{CancellationToken, PlannedCall, ToolCall, ToolExecutor},
    llm::{Model, ModelEvent, ModelRequest, ModelStream, ScriptedModel, ScriptedTurn},
    message::{AgentMessage, StopReason, Usage},
    store::ToolStore,
    tool::{AgentTool, ToolContext},
};
use yiem_tests::resumable;

/// `SHELL_RAN` is shared by the tests that run the scenario in this process.
static SCENARIO: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn work_tools() -> ToolStore {
    let work = AgentTool::builder("work")
        .description("Do some work.")
        .parallel()
        .handler(|_ctx: ToolContext, _args: Value| async move { "worked" })
        .build()
        .unwrap();
    let store = ToolStore::new("work");
    store.register(work).unwrap();
    store
}

/// A model that asks for `work` on every turn, forever.
fn endless() -> ScriptedModel {
    ScriptedModel::from_fn(|_: &ModelRequest| ScriptedTurn::tool_call("work", json!({})))
}

/// Every assistant message with tool calls is followed by exactly one result per call, in call order.
fn assert_valid(messages: &[AgentMessage]) {
    let mut index = 0;
    while index < messages.len() {
        if let AgentMessage::Assistant(reply) = &messages[index] {
            let calls: Vec<&ToolCall> = reply.tool_calls().collect();
            for (offset, call) in calls.iter().enumerate() {
                match messages.get(index + 1 + offset) {
                    Some(AgentMessage::ToolResult(result)) => assert_eq!(
                        result.tool_call_id,
                        call.id,
                        "message {}: results in call order",
                        index + 1 + offset
                    ),
                    other => panic!("call {} has no result; message is {other:?}", call.id),
                }
            }
            index += calls.len();
        }
        index += 1;
    }
}

fn results(messages: &[AgentMessage]) -> Vec<(String, bool)> {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some((result.text_content(), result.is_error())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_endless_model_is_stopped_by_the_default_turn_limit_and_resumes_with_a_higher_one() {
    let model = endless();
    let agent = Agent::builder()
        .model(model.clone())
        .tools(work_tools())
        .build();
    let outcome = agent.prompt("go").await;
    assert_eq!(outcome.stop, RunStop::TurnLimit { turns: 50 });
    assert_eq!(model.requests().len(), 50);
    // The prompt, then 50 replies each with its result: a conversation a provider accepts.
    assert_eq!(outcome.messages.len(), 1 + 50 * 2);
    assert!(matches!(
        outcome.messages.last(),
        Some(AgentMessage::ToolResult(_))
    ));
    assert_valid(&agent.messages());
    assert!(!agent.is_running());

    agent.set_limits(RunLimits::default().max_turns(Some(53)));
    let more = agent
        .resume(Vec::<(String, Decision)>::new())
        .await
        .unwrap();
    assert_eq!(more.stop, RunStop::TurnLimit { turns: 53 });
    assert_eq!(model.requests().len(), 53);
    assert_eq!(more.messages.len(), 3 * 2);
    assert_valid(&agent.messages());
}

#[tokio::test]
async fn a_saved_run_at_the_largest_turn_count_resumes_without_overflowing() {
    // A saved run edited to `turns = u32::MAX` once panicked with "attempt to add with overflow".
    let agent = Agent::builder()
        .model(endless())
        .tools(work_tools())
        .max_turns(Some(1))
        .build();
    agent.prompt("go").await;
    let mut saved: Value = serde_json::from_str(&agent.run_state().to_json()).unwrap();
    saved["turns"] = json!(u32::MAX);
    let resumed = Agent::builder()
        .model(ScriptedModel::new([ScriptedTurn::text("done")]))
        .tools(work_tools())
        .run(AgentRun::from_json(&saved.to_string()).unwrap())
        .build();
    resumed.set_limits(RunLimits::default().max_turns(None));
    let outcome = resumed
        .resume(Vec::<(String, Decision)>::new())
        .await
        .unwrap();
    // One more reply; the count stays at the largest number.
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(outcome.text(), "done");
    assert_eq!(resumed.run_state().turns(), u32::MAX);
    assert_valid(&resumed.messages());
}

#[tokio::test]
async fn the_turn_limit_can_be_set_or_lifted() {
    let agent = Agent::builder()
        .model(endless())
        .tools(work_tools())
        .max_turns(Some(2))
        .build();
    assert_eq!(
        agent.prompt("go").await.stop,
        RunStop::TurnLimit { turns: 2 }
    );

    // Lifted: a model that stops on its own after 60 turns runs all of them.
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let model = ScriptedModel::from_fn(move |_: &ModelRequest| {
        if counted.fetch_add(1, Ordering::SeqCst) < 60 {
            ScriptedTurn::tool_call("work", json!({}))
        } else {
            ScriptedTurn::text("done")
        }
    });
    let agent = Agent::builder()
        .model(model)
        .tools(work_tools())
        .limits(RunLimits::unlimited())
        .build();
    let outcome = agent.prompt("go").await;
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(calls.load(Ordering::SeqCst), 61);
}

#[tokio::test]
async fn a_usage_limit_stops_the_run_with_its_own_reason() {
    // The scripted model reports ceil(len/4) output tokens: 1 for each `{}` call.
    let agent = Agent::builder()
        .model(endless())
        .tools(work_tools())
        .limits(RunLimits::default().max_output_tokens(Some(3)))
        .build();
    let outcome = agent.prompt("go").await;
    let RunStop::UsageLimit { usage, detail } = &outcome.stop else {
        panic!("{:?}", outcome.stop)
    };
    assert_eq!(usage.output_tokens, 3);
    assert_eq!(detail, "3 output tokens used of the 3 allowed");
    assert_eq!(agent.run_state().turns(), 3);
    assert_valid(&agent.messages());
}

/// A model whose stream is always ready and never ends: without yielding, it would hold the runtime.
struct Babbler;

impl Model for Babbler {
    fn name(&self) -> &str {
        "babbler"
    }

    fn stream(&self, _request: ModelRequest, _cancel: CancellationToken) -> ModelStream {
        struct Forever;
        impl Stream for Forever {
            type Item = ModelEvent;
            fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<ModelEvent>> {
                Poll::Ready(Some(ModelEvent::TextDelta("a".into())))
            }
        }
        Box::pin(Forever)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_timeout_around_prompt_fires_even_when_the_model_stream_never_waits() {
    let agent = Agent::builder().model(Babbler).build();
    let timed_out = tokio::time::timeout(Duration::from_millis(50), agent.prompt("talk")).await;
    assert!(timed_out.is_err(), "the timeout fired");
    assert!(!agent.is_running());
    assert_eq!(agent.run_state().stopped(), Some(RunStop::Aborted));
    // Only the prompt is in the conversation: the reply never finished.
    assert_eq!(agent.messages().len(), 1);
}

#[tokio::test]
async fn dropping_prompt_while_a_tool_runs_cancels_it_and_leaves_a_valid_conversation() {
    let (started_tx, mut started) = mpsc::unbounded_channel::<()>();
    let dropped = Arc::new(AtomicUsize::new(0));
    let seen_drop = Arc::clone(&dropped);
    let drop_seen = Arc::new(tokio::sync::Notify::new());
    let on_drop = Arc::clone(&drop_seen);
    struct OnDrop(Arc<AtomicUsize>, Arc<tokio::sync::Notify>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
            self.1.notify_one();
        }
    }
    let hang = AgentTool::builder("hang")
        .description("Never returns.")
        .parallel()
        .handler(move |_ctx: ToolContext, _args: Value| {
            let started = started_tx.clone();
            let dropped = Arc::clone(&seen_drop);
            let on_drop = Arc::clone(&on_drop);
            async move {
                let _guard = OnDrop(dropped, on_drop);
                let _ = started.send(());
                std::future::pending::<()>().await;
                "never"
            }
        })
        .build()
        .unwrap();
    let tools = work_tools();
    tools.register(hang).unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([("work", json!({})), ("hang", json!({}))]),
        ScriptedTurn::text("fine"),
    ]);
    let agent = Agent::builder().model(model.clone()).tools(tools).build();

    tokio::select! {
        _ = agent.prompt("start") => panic!("the tool never returns"),
        _ = started.recv() => {}
    }
    // The `prompt` future is gone: the run was aborted.
    assert!(!agent.is_running());
    let messages = agent.messages();
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert!(matches!(&messages[0], AgentMessage::User(_)));
    assert!(
        matches!(&messages[1], AgentMessage::Assistant(reply) if reply.tool_calls().count() == 2)
    );
    assert_eq!(
        results(&messages),
        [
            (
                "tool call `work` was cancelled: the run was dropped before the call returned"
                    .into(),
                true
            ),
            (
                "tool call `hang` was cancelled: the run was dropped before the call returned"
                    .into(),
                true
            ),
        ]
    );
    assert_valid(&messages);
    assert_eq!(agent.run_state().stopped(), Some(RunStop::Aborted));
    // The tool's future was dropped (on a multi-thread runtime its task is aborted; wait for it: the
    // time limit only keeps a failure from hanging the suite).
    tokio::time::timeout(Duration::from_secs(60), drop_seen.notified())
        .await
        .expect("the tool's future was dropped");
    assert_eq!(dropped.load(Ordering::SeqCst), 1);

    // The next prompt sends that conversation, and the model answers.
    let next = agent.prompt("and now?").await;
    assert_eq!(next.stop, RunStop::Finished);
    assert_eq!(next.text(), "fine");
    assert_eq!(model.requests()[1].messages.len(), 5);
}

fn pending_ids(stop: &RunStop) -> Vec<String> {
    let RunStop::AwaitingApproval { pending } = stop else {
        panic!("the run waits for approval, not {stop:?}")
    };
    pending.iter().map(|p| p.call_id.clone()).collect()
}

/// Runs the scenario to its pause and returns the saved run and the id of the `shell` call (hold
/// `SCENARIO` around it).
async fn paused_scenario() -> (String, String) {
    resumable::SHELL_RAN.lock().unwrap().clear();
    let agent = resumable::agent(None);
    let outcome = agent.prompt("clean up").await;
    let RunStop::AwaitingApproval { pending } = &outcome.stop else {
        panic!("{:?}", outcome.stop)
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_name, "shell");
    assert_eq!(pending[0].arguments, json!({"command": "rm -r build"}));
    assert_eq!(
        pending[0].reason,
        "the tool `shell` needs approval before it runs"
    );
    // Nothing of the batch ran: not `shell`, and not `note`, which needs no approval.
    assert!(resumable::SHELL_RAN.lock().unwrap().is_empty());
    assert!(results(&agent.messages()).is_empty());
    (agent.run_state().to_json(), pending[0].call_id.clone())
}

#[tokio::test]
async fn approval_pauses_the_batch_and_a_fresh_agent_resumes_with_approve() {
    let _one = SCENARIO.lock().await;
    let (saved, id) = paused_scenario().await;

    let agent = resumable::agent(Some(AgentRun::from_json(&saved).unwrap()));
    let outcome = agent.resume([(id, Decision::Approve)]).await.unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(outcome.text(), "done: ran: rm -r build | noted: cleaning");
    assert_eq!(*resumable::SHELL_RAN.lock().unwrap(), ["rm -r build"]);
    assert_valid(&agent.messages());
}

#[tokio::test]
async fn approve_with_edited_arguments_runs_them_and_the_conversation_records_them() {
    let _one = SCENARIO.lock().await;
    let (saved, id) = paused_scenario().await;

    let agent = resumable::agent(Some(AgentRun::from_json(&saved).unwrap()));
    let edited = Decision::ApproveWith {
        arguments: json!({"command": "rm -r build/tmp"}),
    };
    let outcome = agent.resume([(id, edited)]).await.unwrap();
    assert_eq!(
        outcome.text(),
        "done: ran: rm -r build/tmp | noted: cleaning"
    );
    assert_eq!(*resumable::SHELL_RAN.lock().unwrap(), ["rm -r build/tmp"]);
    let AgentMessage::Assistant(reply) = &agent.messages()[1] else {
        panic!()
    };
    assert_eq!(
        reply.tool_calls().next().unwrap().arguments,
        json!({"command": "rm -r build/tmp"})
    );
}

#[tokio::test]
async fn edited_arguments_that_do_not_fit_the_schema_get_the_usual_argument_error() {
    let _one = SCENARIO.lock().await;
    let (saved, id) = paused_scenario().await;
    let agent = resumable::agent(Some(AgentRun::from_json(&saved).unwrap()));
    let outcome = agent
        .resume([(
            id,
            Decision::ApproveWith {
                arguments: json!({"command": 5}),
            },
        )])
        .await
        .unwrap();
    let results = results(&outcome.messages);
    assert!(results[0].1, "an error result: {results:?}");
    assert!(results[0].0.contains("command"), "{results:?}");
    assert!(resumable::SHELL_RAN.lock().unwrap().is_empty());
}

#[tokio::test]
async fn deny_gives_the_model_the_reason_and_the_other_calls_still_run() {
    let _one = SCENARIO.lock().await;
    let (saved, id) = paused_scenario().await;

    let agent = resumable::agent(Some(AgentRun::from_json(&saved).unwrap()));
    let outcome = agent
        .resume([(id, Decision::deny("keep the build"))])
        .await
        .unwrap();
    assert_eq!(
        results(&outcome.messages),
        [
            ("the user denied this call: keep the build".into(), true),
            ("noted: cleaning".into(), false),
        ]
    );
    assert_eq!(
        outcome.text(),
        "done: the user denied this call: keep the build | noted: cleaning"
    );
    assert!(resumable::SHELL_RAN.lock().unwrap().is_empty());
}

/// An agent whose first reply asks for `shell` twice (both wait), then answers with `then`; returns it
/// paused, with the waiting call ids (hold `SCENARIO` around it).
async fn two_shell_calls_waiting(
    then: impl IntoIterator<Item = ScriptedTurn>,
) -> (Agent, Vec<String>) {
    let first = ScriptedTurn::tool_calls([
        ("shell", json!({"command": "one"})),
        ("shell", json!({"command": "two"})),
    ]);
    let agent = Agent::builder()
        .model(ScriptedModel::new(std::iter::once(first).chain(then)))
        .tools(resumable::tools())
        .build();
    resumable::SHELL_RAN.lock().unwrap().clear();
    let ids = pending_ids(&agent.prompt("go").await.stop);
    assert_eq!(ids.len(), 2);
    (agent, ids)
}

#[tokio::test]
async fn always_approve_covers_the_other_calls_of_that_tool_for_the_rest_of_the_run() {
    let _one = SCENARIO.lock().await;
    let (agent, ids) = two_shell_calls_waiting([
        ScriptedTurn::tool_call("shell", json!({"command": "three"})),
        ScriptedTurn::text("all done"),
    ])
    .await;

    let saved = agent.run_state().to_json();
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::tool_call("shell", json!({"command": "three"})),
            ScriptedTurn::text("all done"),
        ]))
        .tools(resumable::tools())
        .run(AgentRun::from_json(&saved).unwrap())
        .build();
    let outcome = agent
        .resume([(ids[0].clone(), Decision::AlwaysApprove)])
        .await
        .unwrap();
    // The second call of the batch and the next turn's call ran without asking.
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(outcome.text(), "all done");
    assert_eq!(
        *resumable::SHELL_RAN.lock().unwrap(),
        ["one", "two", "three"]
    );
}

#[tokio::test]
async fn decisions_can_come_in_parts_and_the_batch_runs_only_when_all_are_in() {
    let _one = SCENARIO.lock().await;
    let (agent, ids) = two_shell_calls_waiting([ScriptedTurn::text("ok")]).await;
    let first = agent
        .resume([(ids[0].clone(), Decision::Approve)])
        .await
        .unwrap();
    assert_eq!(pending_ids(&first.stop), ids, "both still wait");
    assert!(resumable::SHELL_RAN.lock().unwrap().is_empty());
    let second = agent
        .resume([(ids[1].clone(), Decision::deny(""))])
        .await
        .unwrap();
    assert_eq!(
        results(&second.messages),
        [
            ("ran: one".into(), false),
            ("the user denied this call".into(), true)
        ]
    );
}

#[tokio::test]
async fn a_decision_for_an_unknown_call_is_an_error_and_changes_nothing() {
    let _one = SCENARIO.lock().await;
    let (saved, id) = paused_scenario().await;
    let agent = resumable::agent(Some(AgentRun::from_json(&saved).unwrap()));
    let before = agent.run_state();

    let error = agent
        .resume([
            (id.clone(), Decision::Approve),
            ("nope".to_owned(), Decision::Approve),
        ])
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("no call with id `nope` is waiting for approval (waiting: {id})")
    );
    assert_eq!(agent.run_state(), before);

    let twice = agent
        .resume([
            (id.clone(), Decision::Approve),
            (id.clone(), Decision::Approve),
        ])
        .await
        .unwrap_err();
    assert_eq!(twice, ResumeError::DuplicateDecision { id: id.clone() });
    assert_eq!(agent.run_state(), before);
    assert!(resumable::SHELL_RAN.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_saved_run_of_another_version_or_shape_is_refused_with_a_clear_error() {
    let _one = SCENARIO.lock().await;
    let (saved, _) = paused_scenario().await;
    let mut value: Value = serde_json::from_str(&saved).unwrap();
    value["version"] = json!(2);
    assert_eq!(
        AgentRun::from_json(&value.to_string()).unwrap_err(),
        ResumeError::UnknownVersion {
            found: 2,
            supported: 1
        }
    );
    // Deserialize through serde reports the same.
    let error = serde_json::from_value::<AgentRun>(value).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the saved run has format version 2; this yiem reads version 1"
    );
    assert!(matches!(
        AgentRun::from_json("[1, 2]"),
        Err(ResumeError::InvalidState(_))
    ));
    let mut value: Value = serde_json::from_str(&saved).unwrap();
    value["phase"]["assistant"] = json!(0);
    let error = AgentRun::from_json(&value.to_string()).unwrap_err();
    assert_eq!(
        error,
        ResumeError::Mismatch(RunMismatch::Assistant { index: 0 })
    );
    assert_eq!(
        error.to_string(),
        "the saved run disagrees with its conversation: `phase.assistant` is 0: the calls that wait or run are those of the last message, a reply with tool calls"
    );
}

#[tokio::test]
async fn resuming_a_finished_run_is_an_error() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([ScriptedTurn::text("hi")]))
        .build();
    agent.prompt("hello").await;
    let error = agent
        .resume(Vec::<(String, Decision)>::new())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the run finished; there is nothing to resume (send a new prompt instead)"
    );
}

#[tokio::test]
async fn a_new_prompt_while_calls_wait_gives_them_a_result_first() {
    let _one = SCENARIO.lock().await;
    resumable::SHELL_RAN.lock().unwrap().clear();
    let agent = resumable::agent(None);
    agent.prompt("clean up").await;
    let outcome = agent.prompt("never mind").await;
    assert_eq!(outcome.text(), "you said: never mind");
    assert_valid(&agent.messages());
    assert!(resumable::SHELL_RAN.lock().unwrap().is_empty());
}

#[test]
fn a_second_process_resumes_a_run_the_first_paused() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (saved, id) = runtime.block_on(async {
        let _one = SCENARIO.lock().await;
        paused_scenario().await
    });
    let decisions = json!([[id, {"decision": "approve"}]]).to_string();
    let output = run_resume(&saved, &decisions);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["stop"], json!({"reason": "finished"}));
    assert_eq!(report["text"], "done: ran: rm -r build | noted: cleaning");
    assert_eq!(report["shell_ran"], json!(["rm -r build"]));
    let messages = report["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["tool_result", "tool_result", "assistant"]);

    // The same second process refuses a decision for a call that does not wait.
    let output = run_resume(
        &saved,
        &json!([["other", {"decision": "approve"}]]).to_string(),
    );
    assert!(!output.status.success());
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .starts_with("no call with id `other` is waiting for approval"),
        "{report}"
    );
}

fn run_resume(saved: &str, decisions: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agent-resume"))
        .arg(decisions)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the resume binary starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(saved.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test]
async fn a_policy_decides_by_arguments() {
    let policy = ApprovalPolicy::new(|call, tool| {
        if call.name == "shell" {
            let command = call.arguments["command"].as_str().unwrap_or_default();
            return (!command.starts_with("ls")).then(|| format!("runs `{command}`"));
        }
        ApprovalPolicy::tool_default(call, tool)
    });
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("shell", json!({"command": "ls -l"})),
        ScriptedTurn::tool_call("shell", json!({"command": "rm x"})),
    ]);
    let agent = Agent::builder()
        .model(model)
        .tools(resumable::tools())
        .approval_policy(policy)
        .build();
    let _one = SCENARIO.lock().await;
    resumable::SHELL_RAN.lock().unwrap().clear();
    let outcome = agent.prompt("go").await;
    assert_eq!(outcome.pending_approvals()[0].reason, "runs `rm x`");
    assert_eq!(*resumable::SHELL_RAN.lock().unwrap(), ["ls -l"]);
}

#[tokio::test]
async fn require_approval_names_tools_that_say_nothing_themselves() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([ScriptedTurn::tool_call(
            "work",
            json!({}),
        )]))
        .tools(work_tools())
        .require_approval(["work"])
        .build();
    let outcome = agent.prompt("go").await;
    assert_eq!(
        outcome.pending_approvals()[0].reason,
        "the tool `work` needs approval before it runs"
    );
}

#[tokio::test]
async fn turn_events_are_balanced_across_a_pause_and_a_resume() {
    let _one = SCENARIO.lock().await;
    let agent = resumable::agent(None);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    agent.on_event(move |event| {
        let name = match event {
            AgentEvent::TurnStart => "TurnStart",
            AgentEvent::TurnEnd { .. } => "TurnEnd",
            AgentEvent::AgentStart => "AgentStart",
            AgentEvent::AgentEnd { .. } => "AgentEnd",
            _ => return,
        };
        sink.lock().unwrap().push(name);
    });
    let ids = pending_ids(&agent.prompt("clean up").await.stop);
    assert_eq!(
        *events.lock().unwrap(),
        ["AgentStart", "TurnStart", "AgentEnd"]
    );
    agent
        .resume([(ids[0].clone(), Decision::Approve)])
        .await
        .unwrap();
    assert_eq!(
        *events.lock().unwrap(),
        [
            "AgentStart",
            "TurnStart",
            "AgentEnd",
            "AgentStart",
            "TurnEnd",
            "TurnStart",
            "TurnEnd",
            "AgentEnd"
        ]
    );
}

#[tokio::test]
async fn stop_at_tools_ends_the_run_with_that_result_as_output() {
    let answer = AgentTool::builder("final_answer")
        .description("Give the final answer.")
        .input_schema(json!({"type": "object", "properties": {"answer": {"type": "string"}}}))
        .handler(|_ctx: ToolContext, args: Value| async move {
            args["answer"].as_str().unwrap_or_default().to_owned()
        })
        .build()
        .unwrap();
    let tools = work_tools();
    tools.register(answer).unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("work", json!({})),
        ScriptedTurn::tool_call("final_answer", json!({"answer": "42"})),
        ScriptedTurn::text("never asked"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(tools)
        .stop_at_tools(["final_answer"])
        .build();
    let outcome = agent.prompt("what is it?").await;
    let RunStop::StoppedAtTool { result } = &outcome.stop else {
        panic!("{:?}", outcome.stop)
    };
    assert_eq!(result.tool_name, "final_answer");
    assert_eq!(result.text_content(), "42");
    assert_eq!(model.requests().len(), 2);
}

/// Counts how many `slow` calls run at once; each waits at a barrier of two.
fn counted_tools(
    barrier: Arc<Barrier>,
    active: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
) -> ToolStore {
    let slow = AgentTool::builder("slow")
        .description("Meet another call.")
        .input_schema(json!({"type": "object", "properties": {"i": {"type": "integer"}}}))
        .parallel()
        .handler(move |_ctx: ToolContext, _args: Value| {
            let (barrier, active, most) = (barrier.clone(), active.clone(), most.clone());
            async move {
                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                barrier.wait().await;
                active.fetch_sub(1, Ordering::SeqCst);
                "met"
            }
        })
        .build()
        .unwrap();
    let store = ToolStore::new("slow");
    store.register(slow).unwrap();
    store
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_concurrency_cap_holds_and_results_stay_in_call_order() {
    // Six parallel calls, at most two at once: each pair meets at the barrier, so exactly two run together
    // (fewer would never pass the barrier; more would break the cap).
    let (active, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let tools = counted_tools(Arc::new(Barrier::new(2)), active, Arc::clone(&most));
    let calls: Vec<(&str, Value)> = (0..6).map(|i| ("slow", json!({"i": i}))).collect();
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::tool_calls(calls),
            ScriptedTurn::text("ok"),
        ]))
        .tools(tools)
        .max_concurrent_tool_calls(2)
        .build();
    let outcome = agent.prompt("go").await;
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(most.load(Ordering::SeqCst), 2);
    let AgentMessage::Assistant(reply) = &outcome.messages[1] else {
        panic!()
    };
    let ids: Vec<&str> = reply.tool_calls().map(|call| call.id.as_str()).collect();
    let answered: Vec<&str> = outcome
        .messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(result) => Some(result.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answered, ids);
}

#[tokio::test]
async fn the_step_machine_can_be_driven_by_hand() {
    // A driver of its own: no `Agent`, just the run, a model and an executor.
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("work", json!({})),
        ScriptedTurn::text("done"),
    ]);
    let tools = work_tools();
    let mut run = AgentRun::new("system", Vec::new());
    run.start(vec!["go".into()]);
    let mut steps = Vec::new();
    let stop = drive_by_hand(&mut run, &model, &tools, |step, _| match step {
        Step::CallModel => steps.push("model"),
        Step::RunTools { plan, .. } => {
            steps.push("tools");
            assert!(matches!(&plan[0], PlannedCall::Run { call } if call.name == "work"));
        }
        _ => unreachable!(),
    })
    .await;
    assert_eq!(stop, RunStop::Finished);
    assert_eq!(steps, ["model", "tools", "model"]);
    assert_eq!(run.turns(), 2);
    assert_eq!(run.usage(), Usage::new(0, 2));
    assert_valid(run.messages());
}

#[tokio::test]
async fn a_model_error_stops_the_run_and_resume_tries_again() {
    let model = ScriptedModel::new([
        ScriptedTurn::error("overloaded"),
        ScriptedTurn::text("back"),
    ]);
    let agent = Agent::builder().model(model).build();
    let outcome = agent.prompt("hi").await;
    assert_eq!(
        outcome.stop,
        RunStop::Error {
            message: "overloaded".into()
        }
    );
    let AgentMessage::Assistant(reply) = outcome.messages.last().unwrap() else {
        panic!()
    };
    assert_eq!(reply.stop_reason, StopReason::Error);
    let retried = agent
        .resume(Vec::<(String, Decision)>::new())
        .await
        .unwrap();
    assert_eq!(retried.text(), "back");
}

#[tokio::test]
async fn restoring_a_run_while_one_is_active_is_refused() {
    let (started_tx, mut started) = mpsc::unbounded_channel::<()>();
    let (release_tx, release) = tokio::sync::watch::channel(false);
    let wait = AgentTool::builder("wait")
        .description("Wait to be released.")
        .parallel()
        .handler(move |_ctx: ToolContext, _args: Value| {
            let started = started_tx.clone();
            let mut release = release.clone();
            async move {
                let _ = started.send(());
                let _ = release.wait_for(|go| *go).await;
                "released"
            }
        })
        .build()
        .unwrap();
    let tools = ToolStore::new("wait");
    tools.register(wait).unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::tool_call("wait", json!({})),
            ScriptedTurn::text("ok"),
        ]))
        .tools(tools)
        .build();
    let running = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    started.recv().await.unwrap();
    let saved = agent.run_state();
    assert_eq!(agent.restore(saved.clone()), Err(ResumeError::Busy));
    release_tx.send(true).unwrap();
    assert_eq!(running.await.unwrap().stop, RunStop::Finished);
    assert_eq!(agent.restore(saved), Ok(()));
}

/// Delete everything (needs a person's approval).
#[yiem_core::tool(needs_approval)]
async fn wipe() -> &'static str {
    "wiped"
}

#[tokio::test]
async fn a_macro_tool_with_needs_approval_pauses_the_run() {
    assert!(wipe_tool().needs_approval());
    let tools = ToolStore::new("macro");
    tools.register(wipe_tool()).unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::tool_call("wipe", json!({})),
            ScriptedTurn::text("gone"),
        ]))
        .tools(tools)
        .build();
    let outcome = agent.prompt("wipe it").await;
    let pending = outcome.pending_approvals();
    assert_eq!(
        pending[0].reason,
        "the tool `wipe` needs approval before it runs"
    );
    let done = agent
        .resume([(pending[0].call_id.clone(), Decision::Approve)])
        .await
        .unwrap();
    assert_eq!(results(&done.messages), [("wiped".to_owned(), false)]);
}

/// What the greeting tool says (state of the store it runs in).
struct Greeting(&'static str);

/// Greet in the store's language.
#[yiem_core::tool]
async fn greet(yiem_core::tool::State(greeting): yiem_core::tool::State<Greeting>) -> &'static str {
    greeting.0
}

#[tokio::test]
async fn a_tool_with_state_still_runs_when_prepare_context_filters_the_tools() {
    let tools = ToolStore::new("greeter").with_state(Greeting("bonjour"));
    tools.register(greet_tool()).unwrap();
    tools.register(wipe_tool()).unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::tool_call("greet", json!({})),
            ScriptedTurn::text("done"),
        ]))
        .tools(tools)
        .prepare_context(|context| context.tools.retain(|tool| tool.name() == "greet"))
        .build();
    let outcome = agent.prompt("greet").await;
    assert_eq!(results(&outcome.messages), [("bonjour".to_owned(), false)]);
}

#[tokio::test]
async fn prepare_context_runs_once_per_model_call() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::tool_call("work", json!({})),
            ScriptedTurn::text("done"),
        ]))
        .tools(work_tools())
        .prepare_context(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    let outcome = agent.prompt("go").await;
    assert_eq!(results(&outcome.messages), [("worked".to_owned(), false)]);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "two model calls, one hook call each"
    );
}

/// A model that gives two `shell` calls one id (`x`) in its first reply, then says it is done.
struct SameIds(AtomicUsize);

impl Model for SameIds {
    fn name(&self) -> &str {
        "same-ids"
    }

    fn stream(&self, _request: ModelRequest, _cancel: CancellationToken) -> ModelStream {
        let mut events = vec![ModelEvent::Start {
            model: "same-ids".into(),
        }];
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            for (index, command) in ["echo A", "rm -rf B"].into_iter().enumerate() {
                events.push(ModelEvent::ToolCallStart {
                    index,
                    id: "x".into(),
                    name: "shell".into(),
                });
                events.push(ModelEvent::ToolCallDelta {
                    index,
                    arguments: json!({ "command": command }).to_string(),
                });
                events.push(ModelEvent::ToolCallEnd { index });
            }
            events.push(ModelEvent::Done {
                stop_reason: StopReason::ToolUse,
                usage: Usage::default(),
            });
        } else {
            events.push(ModelEvent::TextDelta("done".into()));
            events.push(ModelEvent::Done {
                stop_reason: StopReason::Stop,
                usage: Usage::default(),
            });
        }
        Box::pin(futures::stream::iter(events))
    }
}

#[tokio::test]
async fn two_calls_a_model_gave_one_id_are_decided_one_by_one_and_each_gets_its_result() {
    let _one = SCENARIO.lock().await;
    resumable::SHELL_RAN.lock().unwrap().clear();
    let agent = Agent::builder()
        .model(SameIds(AtomicUsize::new(0)))
        .tools(resumable::tools())
        .build();
    let ids = pending_ids(&agent.prompt("go").await.stop);
    assert_eq!(ids, ["x", "x_2"]);
    let outcome = agent
        .resume([
            ("x".to_owned(), Decision::Approve),
            ("x_2".to_owned(), Decision::deny("not that one")),
        ])
        .await
        .unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(*resumable::SHELL_RAN.lock().unwrap(), ["echo A"]);
    let results = results(&agent.messages());
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(!results[0].1 && results[1].1, "{results:?}");
    assert_valid(&agent.messages());
}

/// What a driver that saves after every step by appending (the durable runner) writes for one step: the
/// run's header and the messages the step added (`AgentRun::appended_since`). It does not grow with the
/// conversation: at turn 200 it is no more than twice what it is at turn 10.
#[tokio::test]
async fn what_a_step_appends_does_not_grow_with_the_conversation() {
    let model = ScriptedModel::from_fn(|request: &ModelRequest| {
        let turn = request
            .messages
            .iter()
            .filter(|message| matches!(message, AgentMessage::Assistant(_)))
            .count();
        ScriptedTurn::tool_call("work", json!({"step": turn}))
    });
    let tools = work_tools();
    let mut run = AgentRun::new("system", Vec::new());
    run.set_limits(RunLimits::default().max_turns(Some(200)));
    run.start(vec!["go".into()]);
    let mut saved = 0;
    let mut written = Vec::new();
    let stop = drive_by_hand(&mut run, &model, &tools, |_, run| {
        let (header, new) = run.appended_since(saved);
        let bytes = header.to_string().len() + serde_json::to_vec(new).unwrap().len();
        saved = run.messages().len();
        written.push((run.turns(), bytes));
    })
    .await;
    assert_eq!(stop, RunStop::TurnLimit { turns: 200 });
    // The step that ran turn N's tools.
    let at = |turn: u32| {
        written
            .iter()
            .filter(|(turns, _)| *turns == turn)
            .map(|(_, bytes)| *bytes)
            .next_back()
            .unwrap()
    };
    let (ten, two_hundred) = (at(10), at(200));
    println!("bytes written per step: turn 10 {ten}, turn 200 {two_hundred}");
    assert!(
        two_hundred <= 2 * ten,
        "turn 10: {ten}, turn 200: {two_hundred}"
    );
    // The whole run, as a step that saved it whole would write, grew with it.
    assert!(run.to_json().len() > 20 * two_hundred);
}

/// A policy sees the arguments the tool will run with: a model that sends them as a JSON string
/// (`"{\"cmd\": \"rm -rf /\"}"`) cannot slip past a policy that looks for `rm` in `cmd`.
#[tokio::test]
async fn a_policy_sees_arguments_sent_as_a_json_string_decoded() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&ran);
    let danger = AgentTool::builder("danger")
        .description("Runs a command.")
        .input_schema(json!({
            "type": "object",
            "properties": {"cmd": {"type": "string"}},
            "required": ["cmd"]
        }))
        .handler(move |_ctx: ToolContext, args: Value| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock().unwrap().push(args["cmd"].to_string());
                "done"
            }
        })
        .build()
        .unwrap();
    let tools = ToolStore::new("danger");
    tools.register(danger).unwrap();
    let policy = ApprovalPolicy::new(|call, _tool| {
        let cmd = call.arguments["cmd"].as_str().unwrap_or_default();
        cmd.contains("rm").then(|| format!("`{cmd}` removes files"))
    });
    // The scripted model streams a string's text as the arguments' text: these send an object, and the
    // JSON strings `"{\"cmd\": \"rm -rf /\"}"` and `" {...} "`, which the reply keeps as strings.
    let as_string = r#"{"cmd": "rm -rf /"}"#;
    for arguments in [
        json!({"cmd": "rm -rf /"}),
        Value::String(Value::String(as_string.into()).to_string()),
        Value::String(Value::String(format!(" {as_string} ")).to_string()),
    ] {
        let agent = Agent::builder()
            .model(ScriptedModel::new([
                ScriptedTurn::tool_call("danger", arguments.clone()),
                ScriptedTurn::text("done"),
            ]))
            .tools(tools.clone())
            .approval_policy(policy.clone())
            .build();
        let outcome = agent.prompt("clean up").await;
        let pending = outcome.pending_approvals();
        assert_eq!(pending.len(), 1, "arguments {arguments} ran unasked");
        assert_eq!(pending[0].reason, "`rm -rf /` removes files");
    }
    assert!(ran.lock().unwrap().is_empty(), "{:?}", ran.lock().unwrap());
}

/// Drives `run` by hand to its stop, as a driver of its own would: no `Agent`, the model's stream
/// assembled into its reply, each plan run on an executor. `performed` sees each step after it ran, with
/// the run.
async fn drive_by_hand(
    run: &mut AgentRun,
    model: &dyn Model,
    tools: &ToolStore,
    mut performed: impl FnMut(&Step, &AgentRun),
) -> RunStop {
    use futures::StreamExt;
    let executor = ToolExecutor::new();
    loop {
        let step = run.next_step();
        match step.clone() {
            Step::CallModel => {
                let request =
                    ModelRequest::new(run.system_prompt().to_owned(), run.messages().to_vec())
                        .tools(tools.tool_list());
                let mut assembler = yiem_core::llm::MessageAssembler::new();
                let mut stream = model.stream(request, CancellationToken::new());
                while let Some(event) = stream.next().await {
                    assembler.apply(event);
                }
                run.model_replied(assembler.finish(), |_| None);
            }
            Step::RunTools { plan, .. } => {
                let batch = executor
                    .execute_plan(tools, plan, None, &CancellationToken::new())
                    .await;
                run.tools_ran(batch.messages, batch.terminate);
            }
            Step::Stopped(stop) => return stop,
        }
        performed(&step, run);
    }
}
