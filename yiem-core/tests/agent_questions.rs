//! A tool's question in an in-process agent without an elicitation handler: the run pauses on it as on
//! an approval (`RunStop::AwaitingAnswer`), is saved, and goes on in a fresh agent with the answer; the
//! call that asked runs again from the start with its answers, the batch's other calls do not run
//! again; an answer that does not fit is refused with the field named and the run left waiting; a
//! saved run that was edited is refused.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use yiem_core::{
    agent::{Agent, AgentRun, AgentSettings, ResumeError, RunKey, RunMismatch, RunStop, Signature},
    ask::{ElicitError, ElicitationAnswer, Questions},
    event::AgentEvent,
    llm::{ScriptedModel, ScriptedTurn},
    message::AgentMessage,
    store::ToolStore,
    tool,
    tool::ToolContext,
};

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Delete the branch too.
    delete_branch: bool,
}

#[derive(Deserialize, JsonSchema)]
struct Name {
    /// The new name.
    name: String,
}

thread_local! {
    // Per test: each `#[tokio::test]` runs its calls on its own thread (a current-thread runtime), so
    // tests running at once do not count each other's calls.
    /// How often `rename` started.
    static RENAMES: AtomicUsize = const { AtomicUsize::new(0) };
    /// How often `count` ran.
    static COUNTS: AtomicUsize = const { AtomicUsize::new(0) };
    /// How often `deploy` started.
    static DEPLOYS: AtomicUsize = const { AtomicUsize::new(0) };
}

/// Deploy.
#[tool]
async fn deploy(ctx: ToolContext) -> Result<String, ElicitError> {
    DEPLOYS.with(|n| n.fetch_add(1, Ordering::SeqCst));
    let answer = ctx.elicit::<Confirm>("Deploy?").await?;
    Ok(format!(
        "deployed: {}",
        matches!(answer, ElicitationAnswer::Accept(_))
    ))
}

/// Merge pull request #12.
#[tool]
async fn merge(ctx: ToolContext) -> Result<String, ElicitError> {
    Ok(match ctx.elicit::<Confirm>("Merge #12 into main?").await? {
        ElicitationAnswer::Accept(confirm) => {
            format!("merged (branch deleted: {})", confirm.delete_branch)
        }
        ElicitationAnswer::Decline => "the user declined".to_owned(),
        ElicitationAnswer::Cancel => "the user cancelled".to_owned(),
        _ => "unknown answer".to_owned(),
    })
}

/// Rename the project: asks for the name, then for a confirmation.
#[tool]
async fn rename(ctx: ToolContext) -> Result<String, ElicitError> {
    RENAMES.with(|n| n.fetch_add(1, Ordering::SeqCst));
    let ElicitationAnswer::Accept(name) = ctx.elicit::<Name>("New name?").await? else {
        return Ok("no name given".to_owned());
    };
    let ElicitationAnswer::Accept(confirm) = ctx
        .elicit::<Confirm>(format!("Rename to {}?", name.name))
        .await?
    else {
        return Ok("not confirmed".to_owned());
    };
    Ok(format!(
        "renamed to {} (branch deleted: {})",
        name.name, confirm.delete_branch
    ))
}

/// Count.
#[tool]
async fn count() -> String {
    format!(
        "counted {}",
        COUNTS.with(|n| n.fetch_add(1, Ordering::SeqCst)) + 1
    )
}

/// How often `flaky` started: its question names it, so it asks otherwise each time.
static FLAKY: AtomicUsize = AtomicUsize::new(0);

/// Deploy a build whose number changes each time it runs.
#[tool]
async fn flaky(ctx: ToolContext) -> Result<String, ElicitError> {
    let build = FLAKY.fetch_add(1, Ordering::SeqCst);
    let answer = ctx
        .elicit::<Confirm>(format!("Deploy build {build}?"))
        .await?;
    Ok(format!(
        "build {build}: {}",
        matches!(answer, ElicitationAnswer::Accept(_))
    ))
}

/// Collect items, asking the same question until the user declines (at most five).
#[tool]
async fn collect(ctx: ToolContext) -> Result<String, ElicitError> {
    let mut items = Vec::new();
    while items.len() < 5 {
        match ctx.elicit::<Name>("Another item?").await? {
            ElicitationAnswer::Accept(item) => items.push(item.name),
            _ => break,
        }
    }
    Ok(items.join(", "))
}

/// Ship, asking first; its result ends the run.
#[tool]
async fn ship(ctx: ToolContext) -> Result<yiem_core::tool::AgentToolResult, ElicitError> {
    ctx.elicit::<Confirm>("Ship?").await?;
    Ok(yiem_core::tool::AgentToolResult::text("shipped").with_terminate(true))
}

/// Set up a project: asks, in one batch, its name, a confirmation and the client's roots.
#[tool]
async fn setup(ctx: ToolContext) -> Result<String, ElicitError> {
    let answers = ctx
        .ask(
            Questions::new()
                .form::<Name>("project_name", "Project name?")
                .form::<Confirm>("confirm", "Create it?")
                .roots("client_roots"),
        )
        .await?;
    let ElicitationAnswer::Accept(name) = answers.form::<Name>("project_name")? else {
        return Ok("no name".to_owned());
    };
    let confirmed = matches!(
        answers.form::<Confirm>("confirm")?,
        ElicitationAnswer::Accept(_)
    );
    let roots = answers.roots("client_roots").unwrap_err();
    Ok(format!("{} (confirmed: {confirmed}; {roots})", name.name))
}

fn tools() -> ToolStore {
    let tools = ToolStore::new("questions");
    tools.register(setup_tool()).unwrap();
    tools.register(merge_tool()).unwrap();
    tools.register(rename_tool()).unwrap();
    tools.register(count_tool()).unwrap();
    tools.register(deploy_tool()).unwrap();
    tools.register(flaky_tool()).unwrap();
    tools.register(collect_tool()).unwrap();
    tools.register(ship_tool()).unwrap();
    tools
}

fn agent(turns: Vec<ScriptedTurn>, run: Option<AgentRun>) -> Agent {
    // A call that waited on its question instead of stopping there would fail here, not hang.
    let builder = Agent::builder()
        .model(ScriptedModel::new(turns))
        .tools(tools())
        .default_tool_timeout(Duration::from_secs(5));
    match run {
        Some(run) => builder.run(run).build(),
        None => builder.build(),
    }
}

fn key() -> RunKey {
    RunKey::new([9; 32])
}

fn fields(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

fn result_texts(messages: &[AgentMessage]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result.text_content()),
            _ => None,
        })
        .collect()
}

/// An agent that paused on `merge`'s question, saved with the key's tag.
async fn paused_on_merge() -> String {
    let agent = agent(vec![ScriptedTurn::tool_call("merge", json!({}))], None);
    let outcome = agent.prompt("merge it").await;
    let RunStop::AwaitingAnswer { questions } = &outcome.stop else {
        panic!("expected a question, got {:?}", outcome.stop);
    };
    assert_eq!(questions.len(), 1);
    agent.run_state().to_json_signed(&key())
}

fn restored(saved: &str, turns: Vec<ScriptedTurn>) -> Agent {
    let (run, signature) = AgentRun::from_json_verified(saved, &key()).unwrap();
    assert_eq!(signature, Signature::Valid);
    agent(turns, Some(run))
}

#[tokio::test]
async fn a_question_pauses_the_run_which_is_saved_and_finishes_in_a_fresh_agent_with_the_answer() {
    let agent = agent(vec![ScriptedTurn::tool_call("merge", json!({}))], None);
    let ends = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&ends);
    agent.on_event(move |event| {
        if let AgentEvent::ToolExecutionEnd { result, .. } = event {
            seen.lock().unwrap().push(result.text_content());
        }
    });
    let outcome = agent.prompt("merge it").await;
    // The call was stopped at its question at once (not left to its time limit).
    assert_eq!(
        *ends.lock().unwrap(),
        [
            "tool `merge` stopped at a question for the user; it runs again from the start once answered"
        ]
    );
    let questions = outcome.pending_questions().to_vec();
    assert_eq!(questions.len(), 1);
    let question = &questions[0];
    assert_eq!(
        (
            question.call_id.as_str(),
            question.tool_name.as_str(),
            question.key.as_str()
        ),
        ("call_1", "merge", "question-1")
    );
    assert_eq!(question.message, "Merge #12 into main?");
    assert_eq!(
        question.schema["properties"]["delete_branch"]["type"],
        "boolean"
    );
    // Nothing was answered into the conversation: the call waits, without a result.
    assert!(result_texts(&agent.messages()).is_empty());
    let saved = agent.run_state().to_json_signed(&key());

    let fresh = restored(&saved, vec![ScriptedTurn::text("Merged.")]);
    let outcome = fresh
        .answer(
            "call_1",
            "question-1",
            ElicitationAnswer::Accept(fields(json!({"delete_branch": true}))),
        )
        .await
        .unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(
        result_texts(&outcome.messages),
        ["merged (branch deleted: true)"]
    );
    assert_eq!(outcome.text(), "Merged.");
}

#[tokio::test]
async fn decline_and_cancel_reach_the_tool() {
    for (answer, said) in [
        (ElicitationAnswer::Decline, "the user declined"),
        (ElicitationAnswer::Cancel, "the user cancelled"),
    ] {
        let saved = paused_on_merge().await;
        let fresh = restored(&saved, vec![ScriptedTurn::text("OK.")]);
        let outcome = fresh.answer("call_1", "question-1", answer).await.unwrap();
        assert_eq!(outcome.stop, RunStop::Finished);
        assert_eq!(result_texts(&outcome.messages), [said]);
    }
}

#[tokio::test]
async fn an_answer_that_does_not_fit_is_refused_with_the_field_named_and_the_run_still_waits() {
    let saved = paused_on_merge().await;
    let fresh = restored(&saved, vec![ScriptedTurn::text("Merged.")]);
    let before = fresh.run_state();
    let refused = fresh
        .answer(
            "call_1",
            "question-1",
            ElicitationAnswer::Accept(fields(json!({"delete_branch": "yes"}))),
        )
        .await
        .unwrap_err();
    assert_eq!(
        refused,
        ResumeError::InvalidAnswer {
            call_id: "call_1".into(),
            key: "question-1".into(),
            field: "delete_branch".into(),
            reason: "expected a boolean, got the string \"yes\"".into(),
        }
    );
    assert_eq!(
        refused.to_string(),
        "the answer to question `question-1` of call `call_1` does not fit its form: field \
         `delete_branch`: expected a boolean, got the string \"yes\""
    );
    let missing = fresh
        .answer(
            "call_1",
            "question-1",
            ElicitationAnswer::Accept(Map::new()),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&missing, ResumeError::InvalidAnswer { field, .. } if field == "delete_branch"),
        "{missing}"
    );
    assert_eq!(fresh.run_state(), before);
    assert_eq!(fresh.run_state().pending_questions().len(), 1);
    // The step machine itself changes nothing on a refusal.
    let mut run = fresh.run_state();
    run.answer(
        "call_1",
        "question-1",
        ElicitationAnswer::Accept(fields(json!({"delete_branch": 1}))),
    )
    .unwrap_err();
    assert_eq!(run, before);

    // It still goes on with an answer that fits.
    let outcome = fresh
        .answer(
            "call_1",
            "question-1",
            ElicitationAnswer::Accept(fields(json!({"delete_branch": false}))),
        )
        .await
        .unwrap();
    assert_eq!(
        result_texts(&outcome.messages),
        ["merged (branch deleted: false)"]
    );
}

#[tokio::test]
async fn two_questions_of_one_call_are_two_rounds_and_the_call_runs_again_from_the_start() {
    let agent = agent(
        vec![
            ScriptedTurn::tool_call("rename", json!({})),
            ScriptedTurn::text("Renamed."),
        ],
        None,
    );
    let starts = RENAMES.with(|n| n.load(Ordering::SeqCst));
    let outcome = agent.prompt("rename it").await;
    assert_eq!(outcome.pending_questions()[0].key, "question-1");
    assert_eq!(outcome.pending_questions()[0].message, "New name?");

    let outcome = agent
        .answer(
            "call_1",
            "question-1",
            ElicitationAnswer::Accept(fields(json!({"name": "yarrow"}))),
        )
        .await
        .unwrap();
    let questions = outcome.pending_questions();
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0].key, "question-2");
    assert_eq!(questions[0].message, "Rename to yarrow?");
    // The second round survives a trip through JSON too.
    let saved = agent.run_state().to_json_signed(&key());
    let fresh = restored(&saved, vec![ScriptedTurn::text("Renamed.")]);

    // The first question's key is no longer the one that waits.
    let stale = fresh
        .answer(
            "call_1",
            "question-1",
            ElicitationAnswer::Accept(fields(json!({"name": "other"}))),
        )
        .await
        .unwrap_err();
    assert_eq!(
        stale.to_string(),
        "no question `question-1` of call `call_1` waits for an answer (waiting: call_1/question-2)"
    );

    let outcome = fresh
        .answer(
            "call_1",
            "question-2",
            ElicitationAnswer::Accept(fields(json!({"delete_branch": true}))),
        )
        .await
        .unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(
        result_texts(&fresh.messages()),
        ["renamed to yarrow (branch deleted: true)"]
    );
    assert_eq!(RENAMES.with(|n| n.load(Ordering::SeqCst)) - starts, 3);
}

#[tokio::test]
async fn the_other_calls_of_a_batch_that_waits_on_a_question_run_once_and_keep_their_place() {
    let agent = agent(
        vec![ScriptedTurn::tool_calls([
            ("count", json!({})),
            ("merge", json!({})),
            ("count", json!({})),
        ])],
        None,
    );
    let counted = COUNTS.with(|n| n.load(Ordering::SeqCst));
    let outcome = agent.prompt("count and merge").await;
    assert_eq!(outcome.pending_questions()[0].call_id, "call_2");
    assert_eq!(COUNTS.with(|n| n.load(Ordering::SeqCst)) - counted, 2);
    let saved = agent.run_state().to_json_signed(&key());

    let fresh = restored(&saved, vec![ScriptedTurn::text("Done.")]);
    let outcome = fresh
        .answer(
            "call_2",
            "question-1",
            ElicitationAnswer::Accept(fields(json!({"delete_branch": false}))),
        )
        .await
        .unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(COUNTS.with(|n| n.load(Ordering::SeqCst)) - counted, 2);
    let ids: Vec<String> = fresh
        .messages()
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result.tool_call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["call_1", "call_2", "call_3"]);
    assert_eq!(
        result_texts(&fresh.messages())[1],
        "merged (branch deleted: false)"
    );
}

#[tokio::test]
async fn an_agent_with_an_elicitation_handler_asks_it_and_does_not_pause() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::tool_call("merge", json!({})),
            ScriptedTurn::text("Merged."),
        ]))
        .tools(tools())
        .elicitation(|_question: yiem_core::ask::Elicitation| async move {
            ElicitationAnswer::Accept(fields(json!({"delete_branch": true})))
        })
        .build();
    let outcome = agent.prompt("merge it").await;
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(
        result_texts(&outcome.messages),
        ["merged (branch deleted: true)"]
    );
}

#[tokio::test]
async fn a_new_prompt_gives_up_the_question_and_the_conversation_stays_valid() {
    let agent = agent(
        vec![
            ScriptedTurn::tool_calls([("count", json!({})), ("merge", json!({}))]),
            ScriptedTurn::text("Never mind."),
        ],
        None,
    );
    agent.prompt("count and merge").await;
    let outcome = agent.prompt("forget it").await;
    assert_eq!(outcome.stop, RunStop::Finished);
    let texts = result_texts(&agent.messages());
    assert_eq!(texts.len(), 2);
    assert!(texts[0].starts_with("counted "), "{texts:?}");
    assert!(
        texts[1].contains("a new prompt came before the answer to its question"),
        "{texts:?}"
    );
}

/// Edits the saved run's JSON, re-tagged with the key (as storage the application trusts, or a forger
/// with the key, would write it): what the conversation contradicts is still refused.
fn edited(saved: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut value: Value = serde_json::from_str(saved).unwrap();
    edit(&mut value);
    let run = value.as_object_mut().unwrap();
    run.remove("tag");
    let (header, messages) = {
        let messages: Vec<AgentMessage> = serde_json::from_value(run["messages"].clone()).unwrap();
        let mut header = Value::Object(run.clone());
        header["messages"] = json!(messages.len());
        (header, messages)
    };
    match AgentRun::from_appended(header, messages) {
        Ok(run) => run.to_json_signed(&key()),
        Err(error) => error.to_string(),
    }
}

#[tokio::test]
async fn a_saved_run_that_waits_on_a_question_is_read_only_with_its_tag() {
    let saved = paused_on_merge().await;
    let untagged = {
        let mut value: Value = serde_json::from_str(&saved).unwrap();
        value.as_object_mut().unwrap().remove("tag");
        value.to_string()
    };
    let refused = AgentRun::from_json(&untagged).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("only a run with a valid tag may carry"),
        "{refused}"
    );
    // Tagged with another key, or changed after it was tagged: the same.
    let other = AgentRun::from_json_verified(&saved, &RunKey::new([1; 32])).unwrap_err();
    assert!(matches!(other, ResumeError::InvalidState(_)), "{other}");
    let changed = saved.replace("Merge #12 into main?", "Merge #13 into main?");
    assert!(AgentRun::from_json_verified(&changed, &key()).is_err());
}

#[tokio::test]
async fn an_edited_run_is_refused_and_runs_no_tool() {
    let agent = agent(vec![ScriptedTurn::tool_call("deploy", json!({}))], None);
    agent.prompt("deploy").await;
    let saved = agent.run_state().to_json_signed(&key());
    let deploys = DEPLOYS.with(|n| n.load(Ordering::SeqCst));
    // An answer to a question that was never asked.
    let forged = edited(&saved, |run| {
        let question = run["phase"]["questions"][0].clone();
        run["asked"]["calls"][0]["answers"] = json!([{
            "message": question["message"],
            "schema": question["schema"],
            "answer": {"action": "accept", "content": {"delete_branch": true}},
        }]);
    });
    assert_eq!(
        forged,
        ResumeError::Mismatch(RunMismatch::Asked(
            "`phase.questions[0].key` is `question-1`: call `call_1` has 1 answers, so it waits on `question-2`"
                .into()
        ))
        .to_string()
    );
    // The key of the question that waits, changed.
    let rekeyed = edited(&saved, |run| {
        run["phase"]["questions"][0]["key"] = json!("question-2");
    });
    assert!(
        rekeyed.contains("`phase.questions[0].key` is `question-2`"),
        "{rekeyed}"
    );
    // An answer for a call that waits on no question.
    let stray = edited(&saved, |run| {
        run["phase"]["answers"] = json!({"call_9": {"action": "decline"}});
    });
    assert!(
        stray.contains("`phase.answers` answers call `call_9`"),
        "{stray}"
    );
    // A question moved to a call the reply did not make.
    let moved = edited(&saved, |run| {
        run["phase"]["questions"][0]["call_id"] = json!("call_9");
    });
    assert!(
        moved.contains("which the last reply did not make"),
        "{moved}"
    );
    // About to run a call again that never asked.
    let planned = edited(&saved, |run| {
        run["phase"] = json!({"state": "run_tools", "assistant": 1, "plan": [
            {"plan": "run", "call": {"id": "call_1", "name": "count", "arguments": {}}}
        ]});
    });
    assert!(
        planned.contains("which is not a call that asked"),
        "{planned}"
    );

    // A kept result for the call that asked: it would have two outcomes.
    let result = |id: &str| {
        let call = yiem_core::exec::ToolCall::new(id, "deploy", json!({}));
        let done = yiem_core::tool::AgentToolResult::text("done");
        serde_json::to_value(yiem_core::message::ToolResultMessage::new(&call, done)).unwrap()
    };
    let twice = edited(&saved, |run| {
        run["asked"]["done"] = json!([result("call_1")])
    });
    assert!(
        twice.contains(
            "call 0 (`call_1`) of the last reply must have one kept result or be a call that asked"
        ),
        "{twice}"
    );
    // A kept result of a call the reply did not make.
    let foreign = edited(&saved, |run| {
        run["asked"]["done"] = json!([result("call_9")])
    });
    assert!(
        foreign.contains("`asked.done` holds results of calls that are not the last reply's"),
        "{foreign}"
    );

    // An answer to a question that does not wait changes nothing and runs nothing.
    let fresh = restored(&saved, vec![ScriptedTurn::text("Merged.")]);
    let unasked = fresh
        .answer("call_1", "question-2", ElicitationAnswer::Decline)
        .await
        .unwrap_err();
    assert!(matches!(unasked, ResumeError::UnknownQuestion { .. }));
    assert_eq!(fresh.run_state().pending_questions().len(), 1);
    assert_eq!(DEPLOYS.with(|n| n.load(Ordering::SeqCst)), deploys);
}

#[tokio::test]
async fn an_answer_goes_back_only_to_the_question_it_answered() {
    let agent = agent(vec![ScriptedTurn::tool_call("flaky", json!({}))], None);
    let outcome = agent.prompt("deploy").await;
    let first = outcome.pending_questions()[0].clone();
    assert_eq!(first.key, "question-1");
    let outcome = agent
        .answer(
            "call_1",
            "question-1",
            ElicitationAnswer::Accept(fields(json!({"delete_branch": true}))),
        )
        .await
        .unwrap();
    // Run again, the call asks something else at that place: it is asked again, not given the answer.
    let again = &outcome.pending_questions()[0];
    assert_eq!(again.key, "question-1");
    assert_ne!(again.message, first.message);
    assert!(result_texts(&agent.messages()).is_empty());
    // The saved run holds no answer for it.
    let saved: Value = serde_json::from_str(&agent.run_state().to_json_signed(&key())).unwrap();
    assert_eq!(saved["asked"]["calls"][0].get("answers"), None);
}

#[tokio::test]
async fn the_same_question_asked_again_is_a_new_question_with_its_own_answer() {
    let agent = agent(
        vec![
            ScriptedTurn::tool_call("collect", json!({})),
            ScriptedTurn::text("Collected."),
        ],
        None,
    );
    let outcome = agent.prompt("collect").await;
    assert_eq!(outcome.pending_questions()[0].key, "question-1");
    let mut outcome = outcome;
    for (key, name) in [("question-1", "apple"), ("question-2", "pear")] {
        assert_eq!(outcome.pending_questions()[0].key, key);
        outcome = agent
            .answer(
                "call_1",
                key,
                ElicitationAnswer::Accept(fields(json!({"name": name}))),
            )
            .await
            .unwrap();
    }
    assert_eq!(outcome.pending_questions()[0].key, "question-3");
    let outcome = agent
        .answer("call_1", "question-3", ElicitationAnswer::Decline)
        .await
        .unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(result_texts(&agent.messages()), ["apple, pear"]);
}

#[tokio::test]
async fn a_batch_terminates_only_when_its_kept_results_asked_to_as_well() {
    let agent = agent(
        vec![
            ScriptedTurn::tool_calls([("count", json!({})), ("ship", json!({}))]),
            ScriptedTurn::text("Counted and shipped."),
        ],
        None,
    );
    agent.prompt("count and ship").await;
    let outcome = agent
        .answer("call_2", "question-1", ElicitationAnswer::Decline)
        .await
        .unwrap();
    // `count` did not ask to stop, so the batch does not end the run: the model answers.
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(outcome.text(), "Counted and shipped.");
}

/// The step machine driven by hand, as a driver of its own would: the executor pauses on questions, the
/// run waits, and the answer goes back to the call that runs again.
#[tokio::test]
async fn a_driver_of_its_own_performs_the_same_pause_with_the_step_machine() {
    use yiem_core::{
        agent::Step,
        exec::{ToolCall, ToolExecutor},
        message::{AssistantContent, AssistantMessage, UserMessage},
    };

    let store = tools();
    let executor = ToolExecutor::new();
    let mut run = AgentRun::new("system", Vec::new());
    run.start(vec![UserMessage::text("merge")]);
    assert_eq!(run.next_step(), Step::CallModel);
    let mut reply = AssistantMessage::default();
    reply.content.push(AssistantContent::ToolCall(ToolCall::new(
        "m1",
        "merge",
        json!({}),
    )));
    run.model_replied(reply, |_| None);

    let mut rounds = 0;
    loop {
        match run.next_step() {
            Step::RunTools { assistant, plan } => {
                let (pausing, asked) = executor
                    .pausing_on_questions(run.question_answers())
                    .unwrap();
                let batch = pausing
                    .execute_plan(
                        &store,
                        plan,
                        Some(std::sync::Arc::new(assistant)),
                        &yiem_core::exec::CancellationToken::new(),
                    )
                    .await;
                let asked = asked.take();
                assert_eq!(batch.stopped_at_questions(), !asked.is_empty());
                run.tools_ran_asking(batch.messages, batch.terminate, asked);
            }
            Step::Stopped(RunStop::AwaitingAnswer { questions }) => {
                rounds += 1;
                assert_eq!(questions[0].call_id, "m1");
                run.answer(
                    "m1",
                    &questions[0].key,
                    ElicitationAnswer::Accept(fields(json!({"delete_branch": true}))),
                )
                .unwrap();
            }
            Step::CallModel => break,
            other => panic!("unexpected step {other:?}"),
        }
    }
    assert_eq!(rounds, 1);
    assert_eq!(
        result_texts(run.messages()),
        ["merged (branch deleted: true)"]
    );
}

#[tokio::test]
async fn questions_of_calls_the_batch_did_not_make_are_ignored_and_nothing_is_kept_twice() {
    use yiem_core::{
        agent::{PendingQuestion, Step},
        exec::ToolCall,
        message::{AssistantContent, AssistantMessage, UserMessage},
    };

    let mut run = AgentRun::new("system", Vec::new());
    run.start(vec![UserMessage::text("count")]);
    run.next_step();
    let mut reply = AssistantMessage::default();
    reply.content.push(AssistantContent::ToolCall(ToolCall::new(
        "c1",
        "count",
        json!({}),
    )));
    run.model_replied(reply, |_| None);
    let Step::RunTools { plan, .. } = run.next_step() else {
        panic!()
    };
    let batch = yiem_core::exec::ToolExecutor::new()
        .execute_plan(
            &tools(),
            plan,
            None,
            &yiem_core::exec::CancellationToken::new(),
        )
        .await;
    let stray: PendingQuestion = serde_json::from_value(json!({
        "call_id": "elsewhere", "tool_name": "count", "key": "question-1",
        "message": "?", "schema": {"type": "object", "properties": {}},
    }))
    .unwrap();
    run.tools_ran_asking(batch.messages, false, vec![stray]);
    assert_eq!(run.next_step(), Step::CallModel);
    assert_eq!(result_texts(run.messages()).len(), 1);
}

#[tokio::test]
async fn a_batch_of_keyed_questions_pauses_an_agent_on_each_form_in_turn() {
    let agent = agent(
        vec![
            ScriptedTurn::tool_call("setup", json!({})),
            ScriptedTurn::text("Set up."),
        ],
        None,
    );
    let outcome = agent.prompt("set it up").await;
    let questions = outcome.pending_questions();
    assert_eq!(questions.len(), 1);
    assert_eq!(
        (questions[0].key.as_str(), questions[0].message.as_str()),
        ("question-1", "Project name?")
    );
    let outcome = agent
        .answer(
            "call_1",
            "question-1",
            ElicitationAnswer::Accept(fields(json!({"name": "yarrow"}))),
        )
        .await
        .unwrap();
    let questions = outcome.pending_questions();
    assert_eq!(
        (questions[0].key.as_str(), questions[0].message.as_str()),
        ("question-2", "Create it?")
    );
    let outcome = agent
        .answer(
            "call_1",
            "question-2",
            ElicitationAnswer::Accept(fields(json!({"delete_branch": false}))),
        )
        .await
        .unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(
        result_texts(&agent.messages()),
        [
            "yarrow (confirmed: true; the client's roots cannot be listed: this call runs where there are none (roots are an MCP client's))"
        ]
    );
}
