//! The model of `yiem chat` when none is configured: a scripted demo that shows the toolkit offline. To any
//! prompt it answers by calling `write` (which asks the person first) to create [`DEMO_FILE`] in the root,
//! then says what the tool answered and how to talk to a real model.

use serde_json::json;
use yiem_core::{
    llm::{ModelRequest, ScriptedModel, ScriptedTurn},
    message::AgentMessage,
};

/// The file the demo's `write` call creates, in the root.
pub const DEMO_FILE: &str = "yiem-demo.txt";

/// The banner that says the chat is offline, and what the demo does.
pub const BANNER: &str = "[offline: a scripted demo model, which answers any prompt by calling `write` to create \
     yiem-demo.txt (it asks you first); set YIEM_PROVIDER and its key to chat with a real model]";

/// The demo model; `tools` names the tools the chat has.
pub fn model(tools: String) -> ScriptedModel {
    ScriptedModel::from_fn(move |request: &ModelRequest| {
        match request.messages.last() {
        Some(AgentMessage::ToolResult(answered)) => {
            let text = answered.result.text_content();
            let first = text.lines().next().unwrap_or_default().trim_end_matches('.');
            ScriptedTurn::text(format!(
                "(offline demo) `{}` answered: {first}. This is a scripted demo model: set YIEM_PROVIDER \
                 (openai, openai-responses, anthropic, gemini) with its key (OPENAI_API_KEY and YIEM_BASE_URL, \
                 ANTHROPIC_API_KEY, GEMINI_API_KEY) to chat with a real one. My tools: {tools}.",
                answered.tool_name
            ))
        }
        _ => ScriptedTurn::tool_call(
            "write",
            json!({"path": DEMO_FILE, "content": "Written by the offline demo of yiem chat."}),
        )
        .and_text("(offline demo) I will write a file with the `write` tool, which runs only when you approve it."),
    }
    })
}
