//! [`ScriptedModel`]: a real, deterministic [`Model`] for tests, examples and offline use. It answers from a
//! script of turns (or a function of the conversation) and streams each answer in small deltas, exactly as
//! a network model would.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Model, ModelEvent, ModelRequest, ModelStream};
use crate::message::{AgentMessage, StopReason};
use crate::result::Usage;

/// One scripted reply: text and/or tool calls.
///
/// ```
/// use serde_json::json;
/// use yiem_core::llm::ScriptedTurn;
///
/// let turn = ScriptedTurn::tool_call("read", json!({"path": "text.txt"})).and_text("Let me read it.");
/// assert_eq!(turn.tool_calls.len(), 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ScriptedTurn {
    /// Reasoning to stream first.
    pub thinking: Option<String>,
    /// Answer text.
    pub text: Option<String>,
    /// Tool calls: name and arguments.
    pub tool_calls: Vec<(String, Value)>,
    /// Make the reply fail with this text instead.
    pub error: Option<String>,
    /// The stop reason to report (default: `ToolUse` with tool calls, else `Stop`).
    pub stop_reason: Option<StopReason>,
}

impl ScriptedTurn {
    /// A reply with only text.
    pub fn text(text: impl Into<String>) -> Self {
        ScriptedTurn {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// A reply with one tool call.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        ScriptedTurn {
            tool_calls: vec![(name.into(), arguments)],
            ..Self::default()
        }
    }

    /// A reply with several tool calls.
    pub fn tool_calls(calls: impl IntoIterator<Item = (impl Into<String>, Value)>) -> Self {
        ScriptedTurn {
            tool_calls: calls
                .into_iter()
                .map(|(name, args)| (name.into(), args))
                .collect(),
            ..Self::default()
        }
    }

    /// A reply that fails.
    pub fn error(text: impl Into<String>) -> Self {
        ScriptedTurn {
            error: Some(text.into()),
            ..Self::default()
        }
    }

    /// Adds answer text.
    pub fn and_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Reports `stop_reason` (e.g. `Length`, to imitate a reply cut off by the output limit).
    pub fn stop_reason(mut self, stop_reason: StopReason) -> Self {
        self.stop_reason = Some(stop_reason);
        self
    }

    /// Adds reasoning text.
    pub fn thinking(mut self, thinking: impl Into<String>) -> Self {
        self.thinking = Some(thinking.into());
        self
    }
}

type ScriptFn = dyn Fn(&ModelRequest) -> ScriptedTurn + Send + Sync;

enum Script {
    Turns(Mutex<VecDeque<ScriptedTurn>>),
    Function(Box<ScriptFn>),
}

/// A model that answers from a script.
///
/// Each call takes the next [`ScriptedTurn`] (or asks the function given to [`ScriptedModel::from_fn`]); a
/// call after the script is used up gets an error reply. Replies stream in chunks of a few characters, with
/// an optional pause between chunks to imitate a network model.
///
/// ```
/// use serde_json::json;
/// use yiem_core::llm::{ScriptedModel, ScriptedTurn};
///
/// let model = ScriptedModel::new([
///     ScriptedTurn::tool_call("read", json!({"path": "text.txt"})),
///     ScriptedTurn::text("The file says hello."),
/// ]);
/// assert_eq!(model.remaining(), 2);
/// ```
#[derive(Clone)]
pub struct ScriptedModel {
    script: Arc<Script>,
    chunk: usize,
    pause: Duration,
    calls: Arc<Mutex<Vec<ModelRequest>>>,
}

impl ScriptedModel {
    /// A model that replies with `turns`, one per call, in order.
    pub fn new(turns: impl IntoIterator<Item = ScriptedTurn>) -> Self {
        Self::with_script(Script::Turns(Mutex::new(turns.into_iter().collect())))
    }

    /// A model whose reply is computed from each request (the conversation so far).
    pub fn from_fn(reply: impl Fn(&ModelRequest) -> ScriptedTurn + Send + Sync + 'static) -> Self {
        Self::with_script(Script::Function(Box::new(reply)))
    }

    fn with_script(script: Script) -> Self {
        ScriptedModel {
            script: Arc::new(script),
            chunk: 8,
            pause: Duration::ZERO,
            calls: Arc::default(),
        }
    }

    /// Streams text and arguments in chunks of `chars` characters (default 8).
    pub fn chunk_size(mut self, chars: usize) -> Self {
        self.chunk = chars.max(1);
        self
    }

    /// Waits `pause` between streamed events (default none).
    pub fn pause(mut self, pause: Duration) -> Self {
        self.pause = pause;
        self
    }

    /// Scripted turns not yet used (0 for a function script).
    pub fn remaining(&self) -> usize {
        match &*self.script {
            Script::Turns(turns) => turns.lock().unwrap_or_else(|p| p.into_inner()).len(),
            Script::Function(_) => 0,
        }
    }

    /// Every request the model received, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn next_turn(&self, request: &ModelRequest) -> ScriptedTurn {
        match &*self.script {
            Script::Turns(turns) => turns
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front()
                .unwrap_or_else(|| ScriptedTurn::error("the scripted model has no more turns")),
            Script::Function(reply) => reply(request),
        }
    }

    fn events(&self, turn: ScriptedTurn, earlier_calls: usize) -> Vec<ModelEvent> {
        let mut events = vec![ModelEvent::Start {
            model: "scripted".into(),
        }];
        if let Some(error) = turn.error {
            events.push(ModelEvent::Error(error));
            return events;
        }
        if let Some(thinking) = &turn.thinking {
            events.extend(chunks(thinking, self.chunk).map(ModelEvent::ThinkingDelta));
        }
        if let Some(text) = &turn.text {
            events.extend(chunks(text, self.chunk).map(ModelEvent::TextDelta));
        }
        for (index, (name, arguments)) in turn.tool_calls.iter().enumerate() {
            events.push(ModelEvent::ToolCallStart {
                index,
                id: format!("call_{}", earlier_calls + index + 1),
                name: name.clone(),
            });
            let text = match arguments {
                Value::String(raw) => raw.clone(),
                other => other.to_string(),
            };
            events.extend(
                chunks(&text, self.chunk)
                    .map(|arguments| ModelEvent::ToolCallDelta { index, arguments }),
            );
            events.push(ModelEvent::ToolCallEnd { index });
        }
        let stop_reason = turn.stop_reason.unwrap_or(if turn.tool_calls.is_empty() {
            StopReason::Stop
        } else {
            StopReason::ToolUse
        });
        let output = turn.text.as_deref().map_or(0, str::len)
            + turn
                .tool_calls
                .iter()
                .map(|(_, a)| a.to_string().len())
                .sum::<usize>();
        events.push(ModelEvent::Done {
            stop_reason,
            usage: Usage::new(0, output.div_ceil(4) as u64),
        });
        events
    }
}

/// `text` in pieces of at most `size` characters.
fn chunks(text: &str, size: usize) -> impl Iterator<Item = String> + '_ {
    let chars: Vec<char> = text.chars().collect();
    let pieces: Vec<String> = chars
        .chunks(size)
        .map(|piece| piece.iter().collect())
        .collect();
    pieces.into_iter()
}

impl Model for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    fn provider_name(&self) -> &str {
        "yiem.scripted"
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let turn = self.next_turn(&request);
        // Ids go on from the calls already in the conversation: unique in it, as providers' are.
        let earlier = request
            .messages
            .iter()
            .filter_map(|message| match message {
                AgentMessage::Assistant(reply) => Some(reply.tool_calls().count()),
                _ => None,
            })
            .sum::<usize>();
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request);
        let events = self.events(turn, earlier);
        let pause = self.pause;
        Box::pin(stream::unfold(
            (events.into_iter(), cancel, true),
            move |(mut events, cancel, first)| async move {
                if !first && !pause.is_zero() {
                    tokio::select! {
                        () = cancel.cancelled() => return None,
                        () = tokio::time::sleep(pause) => {}
                    }
                }
                if cancel.is_cancelled() {
                    return None;
                }
                let event = events.next()?;
                Some((event, (events, cancel, false)))
            },
        ))
    }
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel").finish_non_exhaustive()
    }
}
