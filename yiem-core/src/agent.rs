//! [`Agent`]: keeps the conversation, asks the model, executes the tool calls it returns, feeds the results
//! back, and loops until the model answers without tool calls or a batch terminates.
//!
//! # Queues
//!
//! One run at a time. [`Agent::prompt`] while a run is active waits its turn (first come, first served)
//! and is never lost. [`Agent::steer`] injects a message after the current turn (its tool calls still
//! finish) and before the next model call. [`Agent::follow_up`] runs when the agent would otherwise stop;
//! follow-ups sent while idle wait for the end of the next run. [`Agent::abort`] cancels the current run:
//! a model stream stops, running tools are cancelled, and every tool call still gets a result.
//!
//! # Events
//!
//! A run emits, in order: `AgentStart`, `TurnStart`, `MessageStart`/`MessageEnd` for each prompt, then per
//! model call `MessageStart`, `MessageUpdate`s, `MessageEnd` for the assistant message, the tool events of
//! its calls (see [`ToolExecutor`]) and `TurnEnd`; finally `AgentEnd` with every message the run added.
//! As in the seeds' traces, `TurnStart` is emitted once per run, at its start.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::call::{ToolResultMessage, now_millis};
use crate::event::{AgentEvent, EventBus, EventStream};
use crate::executor::BatchMode;
use crate::executor::{ToolCallBatch, ToolExecutor};
use crate::hooks::ToolHooks;
use crate::llm::truncated::truncated_reason;
use crate::llm::{MessageAssembler, Model, ModelRequest};
use crate::message::{AgentMessage, AssistantContent, AssistantMessage, StopReason, UserMessage};
use crate::registry::{ToolList, ToolStore};
use crate::tool::AgentTool;

/// What the model will see on its next call; `prepare_context` may change any of it.
#[derive(Clone, Debug)]
pub struct AgentContext {
    /// The system prompt.
    pub system_prompt: String,
    /// The conversation.
    pub messages: Vec<AgentMessage>,
    /// The tools offered (and the only ones that can run this turn).
    pub tools: Vec<AgentTool>,
}

/// What `prepare_next_turn` sees after a turn.
#[derive(Clone, Debug)]
pub struct NextTurnContext {
    /// The turn's assistant message.
    pub message: AssistantMessage,
    /// The results of its tool calls.
    pub tool_results: Vec<ToolResultMessage>,
    /// The whole conversation.
    pub messages: Vec<AgentMessage>,
}

/// Changes `prepare_next_turn` makes before the next model call; `None` keeps a field as it is.
#[derive(Clone, Default)]
pub struct TurnUpdate {
    /// A new system prompt.
    pub system_prompt: Option<String>,
    /// A new conversation (e.g. compacted).
    pub messages: Option<Vec<AgentMessage>>,
    /// Another model.
    pub model: Option<Arc<dyn Model>>,
    /// End the run after this turn.
    pub stop: bool,
}

type PrepareContext = Arc<dyn Fn(&mut AgentContext) + Send + Sync>;
type PrepareNextTurn = Arc<dyn Fn(&NextTurnContext) -> Option<TurnUpdate> + Send + Sync>;

/// Builds an [`Agent`]. Start with [`Agent::builder`].
#[must_use]
pub struct AgentBuilder {
    system_prompt: String,
    model: Option<Arc<dyn Model>>,
    tools: ToolStore,
    executor: ToolExecutor,
    prepare_context: Option<PrepareContext>,
    prepare_next_turn: Option<PrepareNextTurn>,
    messages: Vec<AgentMessage>,
}

impl AgentBuilder {
    /// The system prompt (default: "You are a helpful assistant.").
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// The model. Required.
    pub fn model(mut self, model: impl Model + 'static) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    /// The model, already shared.
    pub fn shared_model(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// The tools (a handle to `store`: tools registered there later are offered from the next turn on).
    pub fn tools(mut self, store: ToolStore) -> Self {
        self.tools = store;
        self
    }

    /// Runs every batch sequentially, or lets tools decide (the default).
    pub fn tool_execution(mut self, mode: BatchMode) -> Self {
        self.executor = self.executor.with_mode(mode);
        self
    }

    /// The time limit of tool calls whose tool sets none.
    pub fn default_tool_timeout(mut self, limit: std::time::Duration) -> Self {
        self.executor = self.executor.with_default_timeout(limit);
        self
    }

    /// `before_tool_call` and `after_tool_call`.
    pub fn tool_hooks(mut self, hooks: ToolHooks) -> Self {
        self.executor = self.executor.with_hooks(hooks);
        self
    }

    /// Runs before each model call: filter tools, edit the prompt or the messages.
    pub fn prepare_context(
        mut self,
        hook: impl Fn(&mut AgentContext) + Send + Sync + 'static,
    ) -> Self {
        self.prepare_context = Some(Arc::new(hook));
        self
    }

    /// Runs after each turn: may change the prompt, the conversation or the model, or stop the run.
    pub fn prepare_next_turn(
        mut self,
        hook: impl Fn(&NextTurnContext) -> Option<TurnUpdate> + Send + Sync + 'static,
    ) -> Self {
        self.prepare_next_turn = Some(Arc::new(hook));
        self
    }

    /// Starts from an existing conversation.
    pub fn messages(mut self, messages: Vec<AgentMessage>) -> Self {
        self.messages = messages;
        self
    }

    /// Builds the agent.
    ///
    /// # Panics
    ///
    /// If no model was given: that is a programming error, not a run-time condition.
    pub fn build(self) -> Agent {
        let model = self
            .model
            .expect("Agent::builder() needs .model(...) before .build()");
        Agent {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    system_prompt: self.system_prompt,
                    model,
                    messages: self.messages,
                }),
                tools: self.tools,
                executor: self.executor,
                prepare_context: self.prepare_context,
                prepare_next_turn: self.prepare_next_turn,
                run_lock: tokio::sync::Mutex::new(()),
                steering: Mutex::default(),
                follow_ups: Mutex::default(),
                current: Mutex::default(),
            }),
        }
    }
}

struct State {
    system_prompt: String,
    model: Arc<dyn Model>,
    messages: Vec<AgentMessage>,
}

struct Shared {
    state: Mutex<State>,
    tools: ToolStore,
    executor: ToolExecutor,
    prepare_context: Option<PrepareContext>,
    prepare_next_turn: Option<PrepareNextTurn>,
    run_lock: tokio::sync::Mutex<()>,
    steering: Mutex<VecDeque<UserMessage>>,
    follow_ups: Mutex<VecDeque<UserMessage>>,
    current: Mutex<Option<CancellationToken>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// An agent: a model, tools and a conversation. Cloning gives another handle to the same agent, so one
/// task can `steer` or `abort` while another awaits `prompt`.
///
/// ```
/// use serde_json::json;
/// use yiem_core::{Agent, AgentMessage, ScriptedModel, ScriptedTurn, ToolStore, tool};
///
/// /// Read a file.
/// #[tool]
/// async fn read_file() -> &'static str {
///     "hello from text.txt"
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mut tools = ToolStore::new("demo");
/// tools.register(read_file_tool()).unwrap();
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([
///         ScriptedTurn::tool_call("read_file", json!({})),
///         ScriptedTurn::text("It says hello."),
///     ]))
///     .tools(tools)
///     .build();
/// let messages = agent.prompt("what is in text.txt?").await;
/// assert_eq!(messages.len(), 4); // user, assistant (tool call), tool result, assistant (answer)
/// let AgentMessage::Assistant(answer) = &messages[3] else { panic!() };
/// assert_eq!(answer.text_content(), "It says hello.");
/// # });
/// ```
#[derive(Clone)]
pub struct Agent {
    shared: Arc<Shared>,
}

impl Agent {
    /// Starts building an agent.
    pub fn builder() -> AgentBuilder {
        AgentBuilder {
            system_prompt: "You are a helpful assistant.".into(),
            model: None,
            tools: ToolStore::new("agent"),
            executor: ToolExecutor::new(),
            prepare_context: None,
            prepare_next_turn: None,
            messages: Vec::new(),
        }
    }

    /// Sends `text` as a user message and runs until the agent stops; returns the messages the run added.
    /// If a run is active, this one waits for it (and any prompt sent earlier) to finish first.
    pub async fn prompt(&self, text: impl Into<String>) -> Vec<AgentMessage> {
        self.prompt_messages(vec![UserMessage::text(text)]).await
    }

    /// Like [`prompt`](Self::prompt), with messages of your own.
    pub async fn prompt_messages(&self, prompts: Vec<UserMessage>) -> Vec<AgentMessage> {
        let _turn = self.shared.run_lock.lock().await;
        let cancel = CancellationToken::new();
        *lock(&self.shared.current) = Some(cancel.clone());
        let messages = Run::new(&self.shared, cancel).execute(prompts).await;
        *lock(&self.shared.current) = None;
        messages
    }

    /// Injects `message` after the current turn (its tool calls still finish), before the next model call.
    pub fn steer(&self, message: impl Into<UserMessage>) {
        lock(&self.shared.steering).push_back(message.into());
    }

    /// Queues `message` to run when the agent would otherwise stop.
    pub fn follow_up(&self, message: impl Into<UserMessage>) {
        lock(&self.shared.follow_ups).push_back(message.into());
    }

    /// Cancels the current run, if any: the model stream stops, running tools are cancelled, and every tool
    /// call gets a result. Prompts waiting their turn still run.
    pub fn abort(&self) {
        if let Some(cancel) = lock(&self.shared.current).as_ref() {
            cancel.cancel();
        }
    }

    /// Whether a run is active.
    pub fn is_running(&self) -> bool {
        lock(&self.shared.current).is_some()
    }

    /// A stream of the agent's events from now on.
    pub fn subscribe(&self) -> EventStream {
        self.shared.executor.events().subscribe()
    }

    /// Calls `sink` with every event, inline and in order.
    pub fn on_event(&self, sink: impl Fn(&AgentEvent) + Send + Sync + 'static) {
        self.shared.executor.events().on_event(sink);
    }

    /// The conversation so far.
    pub fn messages(&self) -> Vec<AgentMessage> {
        lock(&self.shared.state).messages.clone()
    }

    /// A handle to the agent's tools: register more at any time; they are offered from the next turn on.
    pub fn tools(&self) -> ToolStore {
        self.shared.tools.clone()
    }
}

impl From<&str> for UserMessage {
    fn from(text: &str) -> Self {
        UserMessage::text(text)
    }
}

impl From<String> for UserMessage {
    fn from(text: String) -> Self {
        UserMessage::text(text)
    }
}

/// One run of the loop.
struct Run<'a> {
    shared: &'a Shared,
    cancel: CancellationToken,
    events: EventBus,
    new_messages: Vec<AgentMessage>,
}

impl<'a> Run<'a> {
    fn new(shared: &'a Shared, cancel: CancellationToken) -> Self {
        Run {
            events: shared.executor.events().clone(),
            shared,
            cancel,
            new_messages: Vec::new(),
        }
    }

    /// Adds `message` to the conversation and the run's messages.
    fn record(&mut self, message: AgentMessage) {
        lock(&self.shared.state).messages.push(message.clone());
        self.new_messages.push(message);
    }

    /// Adds a complete message with its start and end events.
    fn add(&mut self, message: AgentMessage) {
        if self.events.is_observed() {
            let shared = Arc::new(message.clone());
            self.events.emit(AgentEvent::MessageStart {
                message: Arc::clone(&shared),
            });
            self.events.emit(AgentEvent::MessageEnd { message: shared });
        }
        self.record(message);
    }

    async fn execute(mut self, prompts: Vec<UserMessage>) -> Vec<AgentMessage> {
        self.events.emit(AgentEvent::AgentStart);
        self.events.emit(AgentEvent::TurnStart);
        for prompt in prompts {
            self.add(AgentMessage::User(prompt));
        }
        let mut pending = self.take(&self.shared.steering);
        'run: loop {
            let mut has_more_tool_calls = true;
            while has_more_tool_calls || !pending.is_empty() {
                for message in pending.drain(..) {
                    self.add(AgentMessage::User(message));
                }
                let (context, model) = self.context();
                let message = self.stream_reply(&model, &context).await;
                self.record(AgentMessage::Assistant(message.clone()));
                if matches!(message.stop_reason, StopReason::Error | StopReason::Aborted) {
                    self.end_turn(message, Vec::new());
                    break 'run;
                }
                let (results, terminate) = self.run_tools(&message, &context).await;
                has_more_tool_calls = !results.is_empty() && !terminate;
                self.end_turn(message.clone(), results.clone());
                if terminate {
                    let last = terminated_reply(&message, &results);
                    self.add(AgentMessage::Assistant(last));
                    break 'run;
                }
                if self.cancel.is_cancelled() || self.next_turn(message, results) {
                    break 'run;
                }
                pending = self.take(&self.shared.steering);
            }
            pending = self.take(&self.shared.follow_ups);
            if pending.is_empty() {
                break;
            }
        }
        self.events.emit(AgentEvent::AgentEnd {
            messages: self.new_messages.clone().into(),
        });
        self.new_messages
    }

    fn take(&self, queue: &Mutex<VecDeque<UserMessage>>) -> Vec<UserMessage> {
        lock(queue).drain(..).collect()
    }

    fn end_turn(&self, message: AssistantMessage, tool_results: Vec<ToolResultMessage>) {
        self.events.emit(AgentEvent::TurnEnd {
            message: Arc::new(message),
            tool_results: tool_results.into(),
        });
    }

    /// The context for the next model call, after `prepare_context`.
    fn context(&self) -> (AgentContext, Arc<dyn Model>) {
        let (mut context, model) = {
            let state = lock(&self.shared.state);
            let context = AgentContext {
                system_prompt: state.system_prompt.clone(),
                messages: state.messages.clone(),
                tools: self.shared.tools.tools(),
            };
            (context, Arc::clone(&state.model))
        };
        if let Some(prepare) = &self.shared.prepare_context {
            prepare(&mut context);
        }
        (context, model)
    }

    /// Calls the model and streams its reply into message events.
    async fn stream_reply(
        &self,
        model: &Arc<dyn Model>,
        context: &AgentContext,
    ) -> AssistantMessage {
        let request = ModelRequest {
            system_prompt: context.system_prompt.clone(),
            messages: context.messages.clone(),
            // Without prepare_context the store's own list goes out, its serialized text shared by
            // every request until the store changes.
            tools: if self.shared.prepare_context.is_some() {
                ToolList::from(context.tools.clone())
            } else {
                self.shared.tools.tool_list()
            },
        };
        let mut stream = model.stream(request, self.cancel.clone());
        let mut assembler = MessageAssembler::new();
        let observed = self.events.is_observed();
        let mut started = false;
        loop {
            let event = tokio::select! {
                biased;
                () = self.cancel.cancelled() => None,
                event = stream.next() => event,
            };
            let Some(event) = event else { break };
            let delta = assembler.apply(event);
            if observed && !started {
                started = true;
                self.events.emit(AgentEvent::MessageStart {
                    message: Arc::new(AgentMessage::Assistant(assembler.message().clone())),
                });
            }
            if let (true, Some(delta)) = (observed, delta) {
                self.events.emit(AgentEvent::MessageUpdate {
                    message: Arc::new(AgentMessage::Assistant(assembler.message().clone())),
                    delta,
                });
            }
            if assembler.is_done() {
                break;
            }
        }
        let mut message = assembler.finish();
        if message.model.is_empty() {
            message.model = model.name().to_owned();
        }
        if self.cancel.is_cancelled() {
            message.stop_reason = StopReason::Aborted;
            message.error = Some("the run was aborted while the model was answering".into());
        }
        if observed && !started {
            self.events.emit(AgentEvent::MessageStart {
                message: Arc::new(AgentMessage::Assistant(message.clone())),
            });
        }
        if observed {
            self.events.emit(AgentEvent::MessageEnd {
                message: Arc::new(AgentMessage::Assistant(message.clone())),
            });
        }
        message
    }

    /// Executes the reply's tool calls; returns their results and whether the batch terminates the run.
    async fn run_tools(
        &mut self,
        message: &AssistantMessage,
        context: &AgentContext,
    ) -> (Vec<ToolResultMessage>, bool) {
        let calls: Vec<_> = message.tool_calls().cloned().collect();
        if calls.is_empty() {
            return (Vec::new(), false);
        }
        let executor = &self.shared.executor;
        let batch: ToolCallBatch = if message.stop_reason == StopReason::Length {
            executor.refuse(&calls, |call| truncated_reason(&call.name))
        } else {
            // Only the tools offered this turn can run.
            let offered = if self.shared.prepare_context.is_some() {
                let mut store = ToolStore::new(self.shared.tools.name());
                for tool in &context.tools {
                    // Duplicates cannot occur: the list came from one store.
                    let _ = store.register(tool.clone());
                }
                store
            } else {
                self.shared.tools.clone()
            };
            executor
                .execute_message(&offered, Arc::new(message.clone()), &self.cancel)
                .await
        };
        for result in &batch.messages {
            self.record(AgentMessage::ToolResult(result.clone()));
        }
        (batch.messages, batch.terminate)
    }

    /// Runs `prepare_next_turn`; returns whether the run should stop.
    fn next_turn(&self, message: AssistantMessage, tool_results: Vec<ToolResultMessage>) -> bool {
        let Some(prepare) = &self.shared.prepare_next_turn else {
            return false;
        };
        let context = NextTurnContext {
            message,
            tool_results,
            messages: lock(&self.shared.state).messages.clone(),
        };
        let Some(update) = prepare(&context) else {
            return false;
        };
        let mut state = lock(&self.shared.state);
        if let Some(prompt) = update.system_prompt {
            state.system_prompt = prompt;
        }
        if let Some(messages) = update.messages {
            state.messages = messages;
        }
        if let Some(model) = update.model {
            state.model = model;
        }
        update.stop
    }
}

/// The reply that ends a run whose last batch asked to terminate: the tool results' text, as in the seeds.
fn terminated_reply(message: &AssistantMessage, results: &[ToolResultMessage]) -> AssistantMessage {
    let mut content = vec![AssistantContent::Text {
        text: "Tool execution completed.".into(),
    }];
    for result in results {
        for text in result.content().iter().filter_map(|block| block.as_text()) {
            content.push(AssistantContent::Text {
                text: text.to_owned(),
            });
        }
    }
    AssistantMessage {
        content,
        stop_reason: StopReason::ToolUseTerminated,
        usage: message.usage,
        model: message.model.clone(),
        error: results
            .iter()
            .any(|result| result.is_error())
            .then(|| "One or more tool calls failed".to_owned()),
        timestamp: now_millis(),
    }
}
