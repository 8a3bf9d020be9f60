//! A tool that asks a model for a completion (`ToolContext::sample`) inside an agent: the agent's own
//! model answers through `llm::model_sampler`, in the same scripted conversation, and without a sampling
//! handler the tool is told nobody can be asked.

use std::sync::Arc;

use serde_json::json;
use yiem_core::llm::{ScriptedModel, ScriptedTurn, model_sampler};
use yiem_core::{
    agent::{Agent, AgentSettings, RunLimits, RunStop},
    ask::{ElicitError, Sampling, SamplingAnswer},
    llm::Model,
    message::AgentMessage,
    store::ToolStore,
    tool,
    tool::ToolContext,
};

/// Give a one-line summary of the notes.
#[tool]
async fn summarise_notes(ctx: ToolContext) -> Result<String, ElicitError> {
    let request = Sampling::prompt("Summarise: the build is green, the docs are done.", 30);
    Ok(match ctx.sample(request).await? {
        SamplingAnswer::Text { text, model } => format!("{model} says: {text}"),
        SamplingAnswer::Refuse(why) => format!("refused: {why}"),
        _ => "no answer".into(),
    })
}

fn store() -> ToolStore {
    let store = ToolStore::new("notes");
    store.register(summarise_notes_tool()).unwrap();
    store
}

fn result_texts(messages: &[AgentMessage]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result.result.text_content()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_tool_asks_the_agents_own_model_through_model_sampler() {
    // The model is asked three times: the turn that calls the tool, the tool's own request, the answer.
    let model: Arc<dyn Model> = Arc::new(ScriptedModel::from_fn(|request| {
        let last = request.messages.last();
        match last {
            Some(AgentMessage::User(user)) if user.text_content().starts_with("Summarise:") => {
                // The tool's request: one user message, no tools offered.
                assert!(
                    request.tools.is_empty(),
                    "a sampling request offers no tools"
                );
                ScriptedTurn::text("all done")
            }
            Some(AgentMessage::User(_)) => ScriptedTurn::tool_call("summarise_notes", json!({})),
            _ => ScriptedTurn::text("Everything is done."),
        }
    }));
    let agent = Agent::builder()
        .model(Arc::clone(&model))
        .tools(store())
        .sampling(model_sampler(model))
        .build();
    let outcome = agent.prompt("How are things?").await;
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(result_texts(&outcome.messages), ["scripted says: all done"]);
}

#[tokio::test]
async fn without_a_sampling_handler_the_tool_is_told_nobody_can_be_asked() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::tool_call("summarise_notes", json!({})),
            ScriptedTurn::text("Could not summarise."),
        ]))
        .tools(store())
        .build();
    let outcome = agent.prompt("How are things?").await;
    assert_eq!(
        result_texts(&outcome.messages),
        [
            "no model can be asked for a completion: no sampling handler was given to the agent or executor this call runs in"
        ]
    );
}

/// The scripted model of these tests: the prompt gets a call of `summarise_notes` (1 output token), the
/// tool's request "all done" (2), the tool's result "Everything is done." (5).
fn notes_model() -> ScriptedModel {
    ScriptedModel::from_fn(|request| match request.messages.last() {
        Some(AgentMessage::User(user)) if user.text_content().starts_with("Summarise:") => {
            ScriptedTurn::text("all done")
        }
        Some(AgentMessage::User(_)) => ScriptedTurn::tool_call("summarise_notes", json!({})),
        _ => ScriptedTurn::text("Everything is done."),
    })
}

#[tokio::test]
async fn the_agents_own_model_answers_within_the_runs_usage_and_limits() {
    let agent = Agent::builder()
        .model(notes_model())
        .tools(store())
        .sampling_by_own_model()
        .build();
    let outcome = agent.prompt("How are things?").await;
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(result_texts(&outcome.messages), ["scripted says: all done"]);
    // Both model calls of the run and the tool's request: 1 + 2 + 5.
    assert_eq!(agent.run_state().usage().output_tokens, 8);

    // A limit the tool's request uses up stops the run before its next model call.
    let mut limits = RunLimits::unlimited();
    limits.max_output_tokens = Some(3);
    let agent = Agent::builder()
        .model(notes_model())
        .tools(store())
        .sampling_by_own_model()
        .limits(limits)
        .build();
    let outcome = agent.prompt("How are things?").await;
    assert!(
        matches!(&outcome.stop, RunStop::UsageLimit { detail, .. } if detail == "3 output tokens used of the 3 allowed"),
        "{:?}",
        outcome.stop
    );
}

/// Ask the model twenty times, and say how many answers and refusals came back.
#[tool]
async fn ask_twenty_times(ctx: ToolContext) -> Result<String, ElicitError> {
    let (mut answered, mut refused) = (0, 0);
    let mut why = String::new();
    for _ in 0..20 {
        match ctx
            .sample(Sampling::prompt("Write at length.", 2000))
            .await?
        {
            SamplingAnswer::Text { .. } => answered += 1,
            SamplingAnswer::Refuse(reason) => {
                refused += 1;
                why = reason;
            }
            _ => {}
        }
    }
    Ok(format!("answered {answered}, refused {refused}: {why}"))
}

#[tokio::test]
async fn a_tools_requests_count_against_the_runs_token_limit_as_they_go() {
    // Each of the tool's requests is answered with 4200 characters: 1050 output tokens.
    let model = ScriptedModel::from_fn(|request| match request.messages.last() {
        Some(AgentMessage::User(user)) if user.text_content() == "Write at length." => {
            ScriptedTurn::text("x".repeat(4200))
        }
        Some(AgentMessage::User(_)) => ScriptedTurn::tool_call("ask_twenty_times", json!({})),
        _ => ScriptedTurn::text("Done."),
    });
    let tools = ToolStore::new("long");
    tools.register(ask_twenty_times_tool()).unwrap();
    let agent = Agent::builder()
        .model(model)
        .tools(tools)
        .sampling_by_own_model()
        .limits(RunLimits::unlimited().max_total_tokens(Some(3000)))
        .build();
    let outcome = agent.prompt("Go.").await;
    // The turn that calls the tool costs 1 token; three requests fit (1, 1051 and 2101 tokens used before
    // each); the fourth and later are refused.
    let texts = result_texts(&outcome.messages);
    assert_eq!(
        texts,
        [
            "answered 3, refused 17: the run's token limit is reached (3151 tokens used of the 3000 \
          allowed); the model was not asked"
        ]
    );
    assert!(
        matches!(&outcome.stop, RunStop::UsageLimit { detail, .. } if detail == "3151 tokens used of the 3000 allowed"),
        "{:?}",
        outcome.stop
    );
}
