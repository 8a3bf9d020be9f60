//! [`ToolContext`]: what a running tool knows about its call — the call id, the cancellation token, a way
//! to stream partial results (a plain callback: this layer knows nothing of agent events), and the state of
//! the store the call runs in — and `ContextSlot`, which makes a call's context only when its tool takes
//! one.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::ask::elicit::{Asker, ElicitError, Elicitation, ElicitationAnswer, LogLevel};
use crate::ask::sample::{Sampling, SamplingAnswer};
use crate::call::ToolCall;
use crate::result::{AgentToolResult, IntoToolResult};
use crate::state::{StateMap, ToolState};

/// Where a call's partial results go: a plain callback.
pub(crate) type UpdateFn = dyn Fn(AgentToolResult) + Send + Sync;

/// Receives partial results and stops accepting them once the call has ended, so an update can never
/// arrive after the call's end.
struct UpdateSink {
    open: AtomicBool,
    deliver: Box<UpdateFn>,
}

/// The id of the call: owned, or shared with the call itself (no copy for calls of a batch).
#[derive(Clone)]
enum CallId {
    Owned(Cow<'static, str>),
    Shared(Arc<ToolCall>),
}

/// The context a tool runs in.
///
/// A tool that takes a `ToolContext` (as its first parameter) can read its call id, observe cancellation
/// and stream partial results with [`update`](Self::update).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use yiem_core::tool::ToolContext;
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let ctx = ToolContext::new("call-1").with_updates(move |partial| {
///     sink.lock().unwrap().push(partial.text_content());
/// });
/// ctx.update("50%");
/// ctx.close_updates();
/// ctx.update("too late"); // dropped: the call has ended
/// assert_eq!(*seen.lock().unwrap(), ["50%"]);
/// assert_eq!(ctx.call_id(), "call-1");
/// ```
#[derive(Clone)]
pub struct ToolContext {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    call_id: CallId,
    /// The batch's token; this call's token is derived from it on first use.
    parent: Option<CancellationToken>,
    /// This call's token, made only when something asks for it (most quick tools never do).
    token: OnceLock<CancellationToken>,
    updates: Option<Arc<UpdateSink>>,
    /// The state of the store the call runs in (see [`State`](crate::tool::State)).
    state: Option<Arc<StateMap>>,
    /// Who the call can ask and log to (an MCP client, an executor's elicitation handler).
    asker: Option<Arc<dyn Asker>>,
    /// What a program of this call runs with: its resume, where its calls are journaled (code mode;
    /// see `code::Programs`).
    #[cfg(feature = "code-mode")]
    programs: Option<Arc<crate::program::Programs>>,
}

impl ToolContext {
    /// A context for the call `call_id`, with its own cancellation token and no update receiver.
    pub fn new(call_id: impl Into<Cow<'static, str>>) -> Self {
        Self::with_id(CallId::Owned(call_id.into()))
    }

    fn with_id(call_id: CallId) -> Self {
        ToolContext {
            inner: Arc::new(Inner {
                call_id,
                parent: None,
                token: OnceLock::new(),
                updates: None,
                state: None,
                asker: None,
                #[cfg(feature = "code-mode")]
                programs: None,
            }),
        }
    }

    /// The context of a call on the pipeline: a child of `cancel` when the call has one, partial results
    /// to `updates` while the call runs, the state of the call's store, and who it can ask.
    pub(crate) fn for_call(
        call: &Arc<ToolCall>,
        cancel: Option<&CancellationToken>,
        updates: Option<Box<UpdateFn>>,
        state: Option<&Arc<StateMap>>,
        asker: Option<&Arc<dyn Asker>>,
    ) -> Self {
        ToolContext {
            inner: Arc::new(Inner {
                call_id: CallId::Shared(Arc::clone(call)),
                parent: cancel.cloned(),
                token: OnceLock::new(),
                updates: updates.map(|deliver| {
                    Arc::new(UpdateSink {
                        open: AtomicBool::new(true),
                        deliver,
                    })
                }),
                state: state.map(Arc::clone),
                asker: asker.map(Arc::clone),
                #[cfg(feature = "code-mode")]
                programs: None,
            }),
        }
    }

    fn inner_mut(&mut self) -> &mut Inner {
        Arc::make_mut(&mut self.inner)
    }

    /// Uses `token` as this call's cancellation token.
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        let inner = self.inner_mut();
        inner.parent = None;
        inner.token = OnceLock::from(token);
        self
    }

    /// Gives the call a token of its own that is cancelled whenever `parent` is (a child token), made on
    /// first use.
    pub fn with_parent(mut self, parent: CancellationToken) -> Self {
        let inner = self.inner_mut();
        inner.parent = Some(parent);
        inner.token = OnceLock::new();
        self
    }

    /// Delivers each partial result to `deliver` until [`close_updates`](Self::close_updates) is called.
    pub fn with_updates(
        mut self,
        deliver: impl Fn(AgentToolResult) + Send + Sync + 'static,
    ) -> Self {
        self.inner_mut().updates = Some(Arc::new(UpdateSink {
            open: AtomicBool::new(true),
            deliver: Box::new(deliver),
        }));
        self
    }

    /// Gives the call `value` as state of type `T`, beside any state it already has: for a tool that takes
    /// [`State<T>`](crate::tool::State), called in hand with [`AgentTool::execute_with`](crate::tool::AgentTool::execute_with).
    /// A call through a store gets the store's state instead.
    ///
    /// ```
    /// use yiem_core::tool::ToolContext;
    ///
    /// let ctx = ToolContext::new("c1").with_state(String::from("/srv/data"));
    /// assert_eq!(ctx.state::<String>().unwrap().as_str(), "/srv/data");
    /// assert!(ctx.state::<u32>().is_none());
    /// ```
    pub fn with_state<T: ToolState>(mut self, value: T) -> Self {
        let inner = self.inner_mut();
        let mut map = inner
            .state
            .as_deref()
            .cloned()
            .unwrap_or_else(|| StateMap::new(""));
        map.insert(Arc::new(value));
        inner.state = Some(Arc::new(map));
        self
    }

    /// Runs the call with the state of a store (what a call through the store gets).
    pub(crate) fn with_state_map(mut self, state: Arc<StateMap>) -> Self {
        self.inner_mut().state = Some(state);
        self
    }

    /// Runs a program of this call with `programs` (see [`programs`](Self::programs)).
    #[cfg(feature = "code-mode")]
    pub(crate) fn with_programs(mut self, programs: Arc<crate::program::Programs>) -> Self {
        self.inner_mut().programs = Some(programs);
        self
    }

    /// What a program of this call runs with, if the driver gave anything: code mode's `run_code`
    /// resumes from it and journals its program's batches in it.
    #[cfg(feature = "code-mode")]
    pub(crate) fn programs(&self) -> Option<&crate::program::Programs> {
        self.inner.programs.as_deref()
    }

    /// The state of type `T` the call was given, if any (a tool usually takes [`State<T>`](crate::tool::State)
    /// instead).
    pub fn state<T: ToolState>(&self) -> Option<Arc<T>> {
        self.inner.state.as_ref()?.get::<T>()
    }

    /// The name of the store whose state the call has, if it runs in one.
    pub(crate) fn store_name(&self) -> Option<&str> {
        self.inner
            .state
            .as_deref()
            .map(StateMap::store)
            .filter(|name| !name.is_empty())
    }

    /// The id of the tool call being executed.
    pub fn call_id(&self) -> &str {
        match &self.inner.call_id {
            CallId::Owned(id) => id,
            CallId::Shared(call) => &call.id,
        }
    }

    /// The call's cancellation token: cancelled when the run is aborted or the call times out.
    pub fn cancellation_token(&self) -> &CancellationToken {
        self.inner.token.get_or_init(|| match &self.inner.parent {
            Some(parent) => parent.child_token(),
            None => CancellationToken::new(),
        })
    }

    /// Whether anyone besides the tool can cancel the call: it has a parent token, or a token was given
    /// or handed out before the call ran.
    pub(crate) fn can_be_cancelled(&self) -> bool {
        self.inner.parent.is_some() || self.inner.token.get().is_some()
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        match (self.inner.token.get(), &self.inner.parent) {
            (Some(token), _) => token.is_cancelled(),
            (None, Some(parent)) => parent.is_cancelled(),
            (None, None) => false,
        }
    }

    /// Completes when the call is cancelled; use it in `tokio::select!` to stop early.
    pub async fn cancelled(&self) {
        self.cancellation_token().cancelled().await
    }

    /// Streams a partial result (in an agent or an executor, each becomes a `ToolExecutionUpdate` event;
    /// over MCP, a progress notification). Updates sent after the call has ended are dropped.
    pub fn update(&self, partial: impl IntoToolResult) {
        if let Some(sink) = &self.inner.updates
            && sink.open.load(Ordering::Acquire)
        {
            (sink.deliver)(partial.into_tool_result());
        }
    }

    /// Asks the person behind the call to fill in a `T` (a struct of plain fields: strings, numbers,
    /// booleans, enums of strings — MCP's form subset), showing `message`. A `#[tool]` whose body asks for a `T`
    /// that is not such a form is refused when it is registered, naming the type and the field. Over MCP the client is asked
    /// (`elicitation/create`, form mode; a client of the 2026-07-28 revision by an `input_required`
    /// answer, after which the call runs again from the start); in an executor or an agent, its
    /// [`ElicitationHandler`](crate::ask::ElicitationHandler) ([`ToolExecutor::with_elicitation`](crate::exec::ToolExecutor::with_elicitation));
    /// in an in-process [`Agent`](crate::agent::Agent) without one, the run pauses on the question
    /// ([`RunStop::AwaitingAnswer`](crate::agent::RunStop::AwaitingAnswer)) and the call runs again from the
    /// start once it is answered, so ask the same questions in the same order each time.
    /// Where nobody can be asked — an executor without a handler, a call in hand, a client without the `elicitation`
    /// capability, an earlier revision's client of the HTTP server without sessions — it is
    /// [`ElicitError::CannotAsk`], whose text tells the
    /// model why; a tool usually returns it with `?`.
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use yiem_core::{ask::{ElicitError, ElicitationAnswer}, tool, tool::ToolContext};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Confirm {
    ///     /// Delete the branch too?
    ///     delete_branch: bool,
    /// }
    ///
    /// /// Merge a pull request.
    /// #[tool]
    /// async fn merge(ctx: ToolContext) -> Result<String, ElicitError> {
    ///     match ctx.elicit::<Confirm>("Merge #12 into main?").await? {
    ///         ElicitationAnswer::Accept(confirm) => Ok(format!("merged (branch deleted: {})", confirm.delete_branch)),
    ///         _ => Ok("the user did not want it merged".into()),
    ///     }
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// // Called in hand, nobody can be asked: the error result says so.
    /// let result = merge_tool().execute("c1", serde_json::json!({})).await;
    /// assert!(result.is_error);
    /// assert!(result.text_content().starts_with("the user cannot be asked"));
    /// # });
    /// ```
    pub async fn elicit<T>(
        &self,
        message: impl Into<String>,
    ) -> Result<ElicitationAnswer<T>, ElicitError>
    where
        T: DeserializeOwned + schemars::JsonSchema,
    {
        let schema = crate::dialect::elicitation_schema(&schemars::schema_for!(T).to_value())
            .map_err(ElicitError::InvalidQuestion)?;
        match self.elicit_with_schema(message, schema).await? {
            ElicitationAnswer::Accept(content) => serde_json::from_value(Value::Object(content))
                .map(ElicitationAnswer::Accept)
                .map_err(|error| ElicitError::InvalidAnswer(error.to_string())),
            ElicitationAnswer::Decline => Ok(ElicitationAnswer::Decline),
            ElicitationAnswer::Cancel => Ok(ElicitationAnswer::Cancel),
        }
    }

    /// Like [`elicit`](Self::elicit), with the form's JSON schema given as it is (an object of plain
    /// fields) and the answer's fields as JSON. An accepted answer is checked against the form,
    /// whoever gave it: a field not in the form, one of another type, past its `minimum` or `maximum`
    /// or not among its choices, or a required field left out is [`ElicitError::InvalidAnswer`] naming
    /// the field; fields left out get the form's defaults.
    pub async fn elicit_with_schema(
        &self,
        message: impl Into<String>,
        schema: Value,
    ) -> Result<ElicitationAnswer<Map<String, Value>>, ElicitError> {
        let Some(asker) = &self.inner.asker else {
            return Err(ElicitError::CannotAsk(
                "this call runs where no person can be asked (no MCP client that accepts questions, \
                 no elicitation handler); go on without the answer, or tell the user what you need"
                    .into(),
            ));
        };
        let question = Elicitation::new(
            self.store_name().unwrap_or_default(),
            message,
            schema.clone(),
        );
        // Whoever answered (an MCP client, a handler, a paused run's caller), an answer that does not
        // fit the form never reaches the tool: the check `AgentRun::answer` makes, in one place.
        match asker.elicit(question).await? {
            ElicitationAnswer::Accept(content) => crate::ask::elicit::fit(&schema, content)
                .map(ElicitationAnswer::Accept)
                .map_err(|(field, reason)| {
                    ElicitError::InvalidAnswer(format!(
                        "the field `{}` of the answer does not fit the form: {reason}",
                        field.escape_debug()
                    ))
                }),
            other => Ok(other),
        }
    }

    /// Asks several questions at once, each under a key the tool chooses (a form, a completion from
    /// the client's model, the client's roots: [`Questions`](crate::ask::Questions)), and gives their
    /// answers by key ([`Answers`](crate::ask::Answers)). Over MCP a client of the 2026-07-28 revision
    /// gets them together in one `input_required` answer and calls again with their answers, in any
    /// order (the call then runs again from the start, so ask the same questions each time); a client
    /// of an earlier revision is asked one request each. In an executor or an agent, its handlers are
    /// asked in turn, and an agent that pauses on questions pauses on each form in turn (under its own
    /// `question-N` key). A question that cannot be asked where the call runs is not sent: its answer is
    /// the error that says why. An accepted form answer fits its form, whoever gave it (an MCP client
    /// whose answer does not is refused with `-32602`).
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use yiem_core::{ask::{ElicitError, ElicitationAnswer, Questions, Sampling}, tool, tool::ToolContext};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Name {
    ///     name: String,
    /// }
    ///
    /// /// Greet the user in their own words.
    /// #[tool]
    /// async fn greet(ctx: ToolContext) -> Result<String, ElicitError> {
    ///     let answers = ctx
    ///         .ask(
    ///             Questions::new()
    ///                 .form::<Name>("user_name", "What is your name?")
    ///                 .roots("client_roots"),
    ///         )
    ///         .await?;
    ///     let name = match answers.form::<Name>("user_name")? {
    ///         ElicitationAnswer::Accept(name) => name.name,
    ///         _ => "stranger".into(),
    ///     };
    ///     let roots = answers.roots("client_roots").map(|roots| roots.len()).unwrap_or(0);
    ///     Ok(format!("Hello, {name}! ({roots} roots)"))
    /// }
    /// # let _ = greet_tool();
    /// ```
    pub async fn ask(
        &self,
        questions: crate::ask::Questions,
    ) -> Result<crate::ask::Answers, ElicitError> {
        crate::ask::elicit::batch::ask_through(
            self.inner.asker.as_deref(),
            self.store_name().unwrap_or_default(),
            questions,
        )
        .await
    }

    /// Asks a model for a completion of `request` (the tool's own prompt, not the conversation). Over MCP
    /// the client's model answers (`sampling/createMessage`, when the client declared `sampling`; a
    /// client of the 2026-07-28 revision, where sampling is deprecated, by an `input_required` answer if
    /// it still declares it); in an executor or an agent, its
    /// [`SamplingHandler`](crate::ask::SamplingHandler) ([`ToolExecutor::with_sampling`](crate::exec::ToolExecutor::with_sampling),
    /// which can be the agent's own model: [`model_sampler`](crate::llm::model_sampler)). Where nobody
    /// can be asked it is [`ElicitError::CannotSample`]; a refusal is
    /// [`SamplingAnswer::Refuse`](crate::ask::SamplingAnswer::Refuse), with why.
    ///
    /// ```
    /// use yiem_core::{
    ///     ask::{ElicitError, Sampling, SamplingAnswer}, exec::ToolExecutor, store::ToolStore,
    ///     tool, tool::ToolContext,
    /// };
    ///
    /// /// Give a one-line summary of a text.
    /// #[tool]
    /// async fn summarise(ctx: ToolContext) -> Result<String, ElicitError> {
    ///     let request = Sampling::prompt("Summarise in one line: ...", 60);
    ///     Ok(match ctx.sample(request).await? {
    ///         SamplingAnswer::Text { text, .. } => text,
    ///         _ => "no summary: the model was not asked".into(),
    ///     })
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = ToolStore::new("docs");
    /// store.register(summarise_tool()).unwrap();
    /// let executor = ToolExecutor::new()
    ///     .with_sampling(|_request: Sampling| async { SamplingAnswer::text("a short line", "stand-in") });
    /// let call = yiem_core::exec::ToolCall::new("c1", "summarise", serde_json::json!({}));
    /// let batch = executor.execute(&store, vec![call], &yiem_core::exec::CancellationToken::new()).await;
    /// assert_eq!(batch.messages[0].result.text_content(), "a short line");
    /// # });
    /// ```
    pub async fn sample(&self, request: Sampling) -> Result<SamplingAnswer, ElicitError> {
        let Some(asker) = &self.inner.asker else {
            return Err(ElicitError::CannotSample(
                "this call runs where there is none to ask (no MCP client that offers sampling, no \
                 sampling handler)"
                    .into(),
            ));
        };
        let mut request = request;
        if request.server.is_empty() {
            request.server = self.store_name().unwrap_or_default().to_owned();
        }
        asker.sample(request).await
    }

    /// Logs `data` (a text or any JSON) at `level`: over MCP a `notifications/message` from the tool
    /// (sent when `level` is at or above the one the client set with `logging/setLevel`, `info` until it
    /// sets one), and always a `tracing` event (target `yiem::tool`).
    ///
    /// ```
    /// use yiem_core::{ask::LogLevel, tool::ToolContext};
    ///
    /// let ctx = ToolContext::new("c1");
    /// ctx.log(LogLevel::Info, "indexing 3 files");
    /// ctx.log(LogLevel::Warning, serde_json::json!({"skipped": "big.bin"}));
    /// ```
    pub fn log(&self, level: LogLevel, data: impl Into<Value>) {
        let data = data.into();
        let logger = self.tool_name();
        match level {
            LogLevel::Debug => tracing::debug!(target: "yiem::tool", tool = logger, %data),
            LogLevel::Info | LogLevel::Notice => {
                tracing::info!(target: "yiem::tool", tool = logger, %data)
            }
            LogLevel::Warning => tracing::warn!(target: "yiem::tool", tool = logger, %data),
            _ => tracing::error!(target: "yiem::tool", tool = logger, %level, %data),
        }
        if let Some(asker) = &self.inner.asker {
            asker.log(level, logger, &data);
        }
    }

    /// Cancelled when the call must stop at a question that has no answer yet (an agent's paused
    /// question); `None` when nothing stops it so.
    pub(crate) fn question_stop(&self) -> Option<CancellationToken> {
        self.inner.asker.as_ref().and_then(|asker| asker.stopped())
    }

    /// The name of the called tool, when the context belongs to a call on the pipeline.
    fn tool_name(&self) -> &str {
        match &self.inner.call_id {
            CallId::Shared(call) => &call.name,
            CallId::Owned(_) => "tool",
        }
    }

    /// Stops delivering updates; called by the executor when the call ends.
    pub fn close_updates(&self) {
        if let Some(sink) = &self.inner.updates {
            sink.open.store(false, Ordering::Release);
        }
    }
}

/// A call's context, made on first use: binding a tool that takes neither a [`ToolContext`] nor
/// [`State`](crate::tool::State) never makes one, so such a call pays for no allocation of its own.
#[doc(hidden)]
pub enum ContextSlot<'a> {
    /// Not made yet; made by this when a tool asks for it.
    Lazy(&'a mut dyn FnMut() -> ToolContext),
    /// Made (or given by the caller).
    Made(ToolContext),
}

impl ContextSlot<'_> {
    /// The call's context, made now if it was not yet.
    pub fn get(&mut self) -> &ToolContext {
        if let ContextSlot::Lazy(make) = self {
            *self = ContextSlot::Made(make());
        }
        match self {
            ContextSlot::Made(ctx) => ctx,
            ContextSlot::Lazy(_) => unreachable!("made just above"),
        }
    }

    /// The context, if it was made.
    pub(crate) fn into_made(self) -> Option<ToolContext> {
        match self {
            ContextSlot::Made(ctx) => Some(ctx),
            ContextSlot::Lazy(_) => None,
        }
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id())
            .field("cancelled", &self.is_cancelled())
            .field("streams_updates", &self.inner.updates.is_some())
            .field("can_ask", &self.inner.asker.is_some())
            .finish()
    }
}

impl std::fmt::Debug for ContextSlot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextSlot").finish_non_exhaustive()
    }
}
