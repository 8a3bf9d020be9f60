//! How a run lives in the object's state: storage that grows by appending. The key `run` holds the run
//! without its messages ([`AgentRun::appended_since`]'s header, plus how many chunks of messages there
//! are); each save appends the messages the step added as one more chunk, `messages.0`, `messages.1`, ...
//! So what a step writes is the header and its own messages, whatever the length of the conversation.
//! A run saved whole under `run` (by an earlier version) is read as it is, and appended to from then on.

use restate_sdk::prelude::*;
use serde_json::Value;
use yiem_core::{agent::AgentRun, message::AgentMessage};

/// The object's state key that holds the run's header.
pub(crate) const RUN: &str = "run";

/// The key of chunk `index`. Reading state takes a key that lives as long as the context
/// (`ContextReadState::get`), so each key is made once per process and kept: a few bytes per chunk index
/// ever seen.
fn chunk_key(index: u64) -> &'static str {
    static KEYS: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut keys = KEYS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let index = usize::try_from(index).unwrap_or(usize::MAX);
    while keys.len() <= index {
        let key = format!("messages.{}", keys.len());
        keys.push(Box::leak(key.into_boxed_str()));
    }
    keys[index]
}

/// What of a run is saved: how many of its messages, in how many chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Saved {
    messages: usize,
    chunks: u64,
}

impl Saved {
    /// Nothing saved yet: the next save writes every message.
    pub(crate) fn nothing() -> Saved {
        Saved::default()
    }
}

/// Reads the run saved in `$ctx`'s state, if any, and what of it is saved. A macro, not a function
/// generic over the context: the Restate handler macros need the handler's future `Send` for every
/// context lifetime, which a future generic over `ContextReadState<'ctx>` is not.
macro_rules! load_run {
    ($ctx:expr) => {{
        match $ctx.get::<Json<Value>>(RUN).await? {
            None => Ok(None),
            Some(Json(header)) => {
                let chunks = header.get("chunks").and_then(Value::as_u64).unwrap_or(0);
                let mut messages: Vec<AgentMessage> = Vec::new();
                if !header.get("messages").is_some_and(Value::is_array) {
                    for index in 0..chunks {
                        let key = chunk_key(index);
                        if let Some(Json(chunk)) = $ctx.get::<Json<Vec<AgentMessage>>>(key).await? {
                            messages.extend(chunk);
                        }
                    }
                }
                assemble(header, messages, chunks).map(Some)
            }
        }
    }};
}

/// The run saved in the object's state, if any, and what of it is saved.
pub(crate) async fn load(
    ctx: &ObjectContext<'_>,
) -> Result<Option<(AgentRun, Saved)>, HandlerError> {
    load_run!(ctx)
}

/// [`load`], from a shared handler.
pub(crate) async fn load_shared(
    ctx: &SharedObjectContext<'_>,
) -> Result<Option<(AgentRun, Saved)>, HandlerError> {
    load_run!(ctx)
}

/// The run from its saved header and messages: saved whole (by an earlier version, and then appended to
/// from scratch), or as a header and its chunks.
fn assemble(
    header: Value,
    messages: Vec<AgentMessage>,
    chunks: u64,
) -> Result<(AgentRun, Saved), HandlerError> {
    let refused =
        |error: String| TerminalError::new(format!("the saved run cannot be read: {error}"));
    if header.get("messages").is_some_and(Value::is_array) {
        // Read as a header and its messages: the object's state is trusted storage, and the run keeps
        // its grants (see `AgentRun::from_appended`).
        let mut header = header;
        let whole = header
            .get_mut("messages")
            .map(Value::take)
            .unwrap_or_default();
        let messages: Vec<AgentMessage> =
            serde_json::from_value(whole).map_err(|error| refused(error.to_string()))?;
        header["messages"] = Value::from(messages.len());
        let run = AgentRun::from_appended(header, messages).map_err(|e| refused(e.to_string()))?;
        return Ok((run, Saved::nothing()));
    }
    let saved = Saved {
        messages: messages.len(),
        chunks,
    };
    let run = AgentRun::from_appended(header, messages).map_err(|e| refused(e.to_string()))?;
    Ok((run, saved))
}

/// Saves `run`: its header, and its messages since the last save as one more chunk (all of them again
/// when the conversation got shorter, or was `rewritten` by a hook). The bytes written.
pub(crate) fn save<'ctx>(
    ctx: &impl ContextWriteState<'ctx>,
    run: &AgentRun,
    saved: &mut Saved,
    rewritten: bool,
) -> usize {
    if rewritten || run.messages().len() < saved.messages {
        for index in 0..saved.chunks {
            ctx.clear(chunk_key(index));
        }
        *saved = Saved::nothing();
    }
    let (mut header, new) = run.appended_since(saved.messages);
    let mut written = 0;
    if !new.is_empty() {
        let chunk = serde_json::to_vec(new).map_or(0, |bytes| bytes.len());
        written += chunk;
        ctx.set(chunk_key(saved.chunks), Json(new.to_vec()));
        saved.chunks += 1;
        saved.messages += new.len();
    }
    if let Value::Object(fields) = &mut header {
        fields.insert("chunks".to_owned(), Value::from(saved.chunks));
    }
    written += serde_json::to_vec(&header).map_or(0, |bytes| bytes.len());
    ctx.set(RUN, Json(header));
    written
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use yiem_core::{
        agent::{Decision, Step},
        exec::ToolCall,
        message::{AssistantContent, AssistantMessage, UserMessage},
    };

    use super::*;

    /// A run saved whole by an earlier version, approved and about to run its batch: the object's state
    /// is trusted, so the approval stands (a run read from a file would ask again).
    #[test]
    fn a_run_saved_whole_keeps_its_grants() {
        let mut run = AgentRun::new("system", Vec::new());
        run.start(vec![UserMessage::text("go")]);
        let mut reply = AssistantMessage::default();
        reply.content.push(AssistantContent::ToolCall(ToolCall::new(
            "c1",
            "danger",
            json!({"cmd": "ls"}),
        )));
        run.model_replied(reply, |_| Some("asks".to_owned()));
        run.decide([("c1".to_owned(), Decision::Approve)]).unwrap();
        let whole: Value = serde_json::from_str(&run.to_json()).unwrap();
        let (read, saved) = assemble(whole.clone(), Vec::new(), 0).unwrap();
        assert_eq!(saved, Saved::nothing());
        assert_eq!(read, run);
        assert!(matches!(read.clone().next_step(), Step::RunTools { .. }));
        // The same object read as a file is not trusted with the approval.
        let file = AgentRun::from_json(&whole.to_string()).unwrap();
        assert_eq!(file.pending_approvals().len(), 1);
    }
}
