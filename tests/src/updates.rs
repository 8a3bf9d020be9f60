//! Recording what a tool streams: [`recording_updates`] gives an executor whose calls' updates
//! (`ToolContext::update`, an MCP server's progress) are kept, in order, as their text.

use std::sync::{Arc, Mutex};

use yiem_core::{event::AgentEvent, exec::ToolExecutor};

/// A fresh executor, and the text of every `ToolExecutionUpdate` it emits, in order.
pub fn recording_updates() -> (ToolExecutor, Arc<Mutex<Vec<String>>>) {
    let updates = Arc::new(Mutex::new(Vec::new()));
    let executor = ToolExecutor::new();
    let seen = Arc::clone(&updates);
    executor.events().on_event(move |event| {
        if let AgentEvent::ToolExecutionUpdate { partial, .. } = event {
            seen.lock().unwrap().push(partial.text_content());
        }
    });
    (executor, updates)
}
