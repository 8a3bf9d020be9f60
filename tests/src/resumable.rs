//! The approval scenario the resumable-run tests share with the `agent-resume` binary, so a run paused in
//! one process can be resumed in another with the same tools and model.
//!
//! The model is a pure function of the conversation (as a real model is): to "clean up" it asks for
//! `shell` (which needs approval) and `note` (which does not) in one reply; after tool results it answers
//! with what they said.

use std::sync::Mutex;

use serde_json::{Value, json};
use yiem_core::{
    agent::{Agent, AgentRun, AgentSettings},
    llm::{ModelRequest, ScriptedModel, ScriptedTurn},
    message::AgentMessage,
    store::ToolStore,
    tool::{AgentTool, ToolContext},
};

/// Every command `shell` was asked to run in this process, in order.
pub static SHELL_RAN: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The scenario's tools: `shell` (needs approval; pretends to run the command and records it) and `note`.
/// Built at run time, not with `#[tool]`, so they never reach `register_all_tools` in other test binaries.
pub fn tools() -> ToolStore {
    let shell = AgentTool::builder("shell")
        .description("Run a shell command.")
        .input_schema(json!({
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command line."}},
            "required": ["command"]
        }))
        .parallel()
        .needs_approval()
        .handler(|_ctx: ToolContext, args: Value| async move {
            let command = args["command"].as_str().unwrap_or_default().to_owned();
            SHELL_RAN.lock().unwrap().push(command.clone());
            format!("ran: {command}")
        })
        .build()
        .expect("a valid definition");
    let note = AgentTool::builder("note")
        .description("Write a note.")
        .input_schema(json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        }))
        .parallel()
        .handler(|_ctx: ToolContext, args: Value| async move {
            format!("noted: {}", args["text"].as_str().unwrap_or_default())
        })
        .build()
        .expect("a valid definition");
    let store = ToolStore::new("resumable");
    store.register(shell).unwrap();
    store.register(note).unwrap();
    store
}

/// The scenario's model: a function of the conversation.
pub fn model() -> ScriptedModel {
    ScriptedModel::from_fn(|request: &ModelRequest| match request.messages.last() {
        Some(AgentMessage::User(user)) if user.text_content() == "clean up" => {
            ScriptedTurn::tool_calls([
                ("shell", json!({"command": "rm -r build"})),
                ("note", json!({"text": "cleaning"})),
            ])
        }
        Some(AgentMessage::User(user)) => {
            ScriptedTurn::text(format!("you said: {}", user.text_content()))
        }
        Some(AgentMessage::ToolResult(_)) => {
            let results: Vec<String> = request
                .messages
                .iter()
                .rev()
                .take_while(|message| matches!(message, AgentMessage::ToolResult(_)))
                .filter_map(|message| match message {
                    AgentMessage::ToolResult(result) => Some(result.text_content()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            ScriptedTurn::text(format!("done: {}", results.join(" | ")))
        }
        _ => ScriptedTurn::text("?"),
    })
}

/// The scenario's agent, from a saved run if given.
pub fn agent(run: Option<AgentRun>) -> Agent {
    let builder = Agent::builder().model(model()).tools(tools());
    match run {
        Some(run) => builder.run(run),
        None => builder,
    }
    .build()
}
