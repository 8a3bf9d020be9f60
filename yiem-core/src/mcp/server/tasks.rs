//! Tasks (SEP-2663, the `io.modelcontextprotocol/tasks` extension of the 2026-07-28 revision): a call
//! of a tool that opts in ([`TaskSupport`]) is answered with a task at once and runs in the background
//! through the same [`McpServer::call`] as any call (approval, hooks, events, limits); the client reads
//! its status and result with `tasks/get`, answers its questions with `tasks/update` and stops it with
//! `tasks/cancel`.
//!
//! What a task is lives in a [`TaskStore`] (in memory by default, [`MemoryTaskStore`]); what runs it
//! lives in this process: a task's run re-runs the call from the start with the answers given so far,
//! as the call's `input_required` rounds do, so a task's state is its arguments and answers and any
//! process that holds them can take it up.

use std::collections::HashMap;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    CancelTaskParams, CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult, InputResponses,
    JsonObject, Task, TaskPayload, TaskStatus, TaskStatusNotificationParams, UpdateTaskParams,
};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use super::*;
use crate::tool::TaskSupport;

/// How long a task is kept after it was created unless [`McpServer::task_ttl`] says otherwise: a day.
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How often a client is told to poll a task (`pollIntervalMs`).
const POLL_INTERVAL_MS: u64 = 500;

/// The most tasks a [`MemoryTaskStore`] holds unless [`MemoryTaskStore::with_capacity`] says otherwise;
/// past it, a new task is refused (expired tasks are dropped first).
pub const DEFAULT_MAX_TASKS: usize = 10_000;

/// One task as a [`TaskStore`] keeps it: what the client sees (`tasks/get`), and what a run needs to
/// take the call up again (the tool, its arguments, the answers given so far).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredTask {
    /// What `tasks/get` answers: the task's status and its result, error or questions.
    pub task: DetailedTask,
    /// Who may read the task: the session or connection that created it (`None`: a request without
    /// one, such as a stateless HTTP request of the 2026-07-28 revision, where the id is the secret).
    pub owner: Option<String>,
    /// The tool called.
    pub tool: String,
    /// The call's arguments.
    pub arguments: Value,
    /// The signed `requestState` of the call's last round of questions: the answers of the rounds
    /// before, each bound to its question (`None` before the first round).
    pub state: Option<String>,
    /// The client's answers to the questions the task waits for, by question key, given by
    /// `tasks/update` since the last round.
    pub answers: InputResponses,
    /// When the task may be dropped, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
}

impl StoredTask {
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.task.task.task_id
    }

    /// Whether the task is past its time to live: a store answers a load of it with `None`.
    pub fn is_expired(&self) -> bool {
        self.expires_at_ms <= now_ms()
    }

    /// Whether the task has ended (completed, failed or cancelled).
    pub fn is_terminal(&self) -> bool {
        self.task.status().is_terminal()
    }
}

/// Why a [`TaskStore`] could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// The store holds as many tasks as it may.
    #[error("the server holds {0} tasks, as many as it may; try again once some have ended")]
    Full(usize),
    /// The store's backend failed (a database or a durable runtime out of reach).
    #[error("the task store failed: {0}")]
    Failed(String),
}

/// Where an [`McpServer`]'s tasks are kept: [`MemoryTaskStore`] by default; `yiem-restate` keeps them
/// in Restate, so that any replica answers for a task another started.
///
/// A save returns once a load of the same id anywhere sees it: the server answers a call with its task
/// only after the task is saved.
pub trait TaskStore: Send + Sync + 'static {
    /// Saves a new task, or a task's new state.
    fn save(&self, task: StoredTask) -> BoxFuture<'_, Result<(), TaskStoreError>>;
    /// The task with this id, if the store has it and it has not expired.
    fn load<'a>(&'a self, id: &'a str)
    -> BoxFuture<'a, Result<Option<StoredTask>, TaskStoreError>>;

    /// Runs the task just saved in the store's own way — durably, in whatever process the store
    /// picks — and answers `true`; `false` (the default) leaves the run to this process. A store that
    /// runs tasks runs each round with [`McpServer::task_round`] (the same call as any), and learns
    /// of answers and cancellation through [`save`](Self::save): the task saved `working` after
    /// `input_required` (every question answered), or saved `cancelled`.
    fn run<'a>(
        &'a self,
        task: &'a StoredTask,
        request: &'a TaskRequest,
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>> {
        let _ = (task, request);
        Box::pin(std::future::ready(Ok(false)))
    }
}

/// What a task's run needs of the request that created it, to run its call in another request or
/// process: the client's protocol revision, name and declared capabilities. Saved by a store that runs
/// tasks itself ([`TaskStore::run`]), given back to [`McpServer::task_round`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRequest {
    client_info: Option<rmcp::model::Implementation>,
    client_capabilities: Option<rmcp::model::ClientCapabilities>,
}

impl TaskRequest {
    /// What `context`'s request says of its client.
    fn of(context: &RequestContext<RoleServer>) -> TaskRequest {
        TaskRequest {
            client_info: context.client_info(),
            client_capabilities: context.client_capabilities(),
        }
    }

    /// A request of the client as this one says it, for a run away from its connection: of the
    /// 2026-07-28 revision whatever the client spoke, so that the call's questions become the task's
    /// `input_required` (answered with `tasks/update`) rather than requests over a connection that is
    /// gone; its notifications go nowhere (the client polls `tasks/get`).
    fn detached(
        &self,
        server: &McpServer,
        cancel: CancellationToken,
    ) -> RequestContext<RoleServer> {
        // A peer whose connection is closed: the service over it ends at once, its sends fail.
        let (ours, theirs) = tokio::io::duplex(64);
        drop(theirs);
        let service = rmcp::service::serve_directly(server.clone(), tokio::io::split(ours), None);
        let mut context =
            RequestContext::new(rmcp::model::RequestId::Number(0), service.peer().clone());
        context.meta = rmcp::model::RequestMetaObject::with_client_context(
            ProtocolVersion::V_2026_07_28,
            self.client_info
                .clone()
                .unwrap_or_else(|| rmcp::model::Implementation::new("unknown", "0")),
            self.client_capabilities.clone().unwrap_or_default(),
        );
        context.ct = cancel;
        context
    }
}

/// Tasks in this process's memory: lost when it exits, bounded ([`DEFAULT_MAX_TASKS`]), each dropped
/// once expired.
#[derive(Debug)]
pub struct MemoryTaskStore {
    tasks: Mutex<HashMap<String, StoredTask>>,
    capacity: usize,
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_MAX_TASKS)
    }
}

impl MemoryTaskStore {
    /// A store of at most `capacity` tasks (at least 1).
    ///
    /// ```
    /// use yiem_core::mcp::{McpServer, MemoryTaskStore};
    /// use yiem_core::store::ToolStore;
    ///
    /// let server = McpServer::new(ToolStore::new("reports"))
    ///     .task_store(MemoryTaskStore::with_capacity(100));
    /// # let _ = server;
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        MemoryTaskStore {
            tasks: Mutex::default(),
            capacity: capacity.max(1),
        }
    }
}

impl TaskStore for MemoryTaskStore {
    fn save(&self, task: StoredTask) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        let mut tasks = self
            .tasks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let saved = if tasks.contains_key(task.id()) {
            Ok(())
        } else {
            let now = now_ms();
            tasks.retain(|_, kept| kept.expires_at_ms > now);
            if tasks.len() >= self.capacity {
                Err(TaskStoreError::Full(self.capacity))
            } else {
                Ok(())
            }
        };
        if saved.is_ok() {
            tasks.insert(task.id().to_owned(), task);
        }
        Box::pin(std::future::ready(saved))
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredTask>, TaskStoreError>> {
        let tasks = self
            .tasks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let task = tasks.get(id).filter(|task| !task.is_expired()).cloned();
        Box::pin(std::future::ready(Ok(task)))
    }
}

/// An [`McpServer`]'s tasks: the store, and what runs in this process for them.
pub(super) struct Tasks {
    store: Arc<dyn TaskStore>,
    ttl: Duration,
    /// Tools whose calls may be tasks although they do not say so ([`McpServer::task_tools`]).
    optional: Arc<std::collections::HashSet<String>>,
    /// The runs of this process, by task id.
    running: Mutex<HashMap<String, Running>>,
    /// Serializes the read-change-save of a task's state between its run and `tasks/update` or
    /// `tasks/cancel`.
    changing: tokio::sync::Mutex<()>,
}

/// One task's run in this process.
struct Running {
    /// Cancelled by `tasks/cancel`: the call stops.
    cancel: CancellationToken,
    /// Woken when every question of the task has an answer.
    answered: Arc<Notify>,
}

impl Default for Tasks {
    fn default() -> Self {
        Tasks {
            store: Arc::new(MemoryTaskStore::default()),
            ttl: DEFAULT_TASK_TTL,
            optional: Arc::default(),
            running: Mutex::default(),
            changing: tokio::sync::Mutex::new(()),
        }
    }
}

impl Tasks {
    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl McpServer {
    /// Keeps this server's tasks in `store` instead of this process's memory (see [`TaskStore`]).
    ///
    /// ```
    /// use yiem_core::mcp::{McpServer, MemoryTaskStore};
    /// use yiem_core::store::ToolStore;
    ///
    /// let server = McpServer::new(ToolStore::new("reports")).task_store(MemoryTaskStore::default());
    /// # let _ = server;
    /// ```
    pub fn task_store(self, store: impl TaskStore) -> Self {
        let tasks = &self.config.tasks;
        let (ttl, optional) = (tasks.ttl, Arc::clone(&tasks.optional));
        self.tasks(Arc::new(store), ttl, optional)
    }

    /// How long a task is kept after it was created (`ttlMs`; default [`DEFAULT_TASK_TTL`]): after it,
    /// `tasks/get` says the task is unknown.
    ///
    /// ```
    /// use std::time::Duration;
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("reports")).task_ttl(Duration::from_secs(3600));
    /// # let _ = server;
    /// ```
    pub fn task_ttl(self, ttl: Duration) -> Self {
        let tasks = &self.config.tasks;
        let (store, optional) = (Arc::clone(&tasks.store), Arc::clone(&tasks.optional));
        self.tasks(store, ttl.max(Duration::from_millis(1)), optional)
    }

    /// Lets calls of these tools be tasks, as [`TaskSupport::Optional`] does, although the tools do
    /// not say so (`#[tool(task)]`): for tools you did not write, such as a long `bash` command. A
    /// tool that says more ([`TaskSupport::Required`]) keeps its own.
    ///
    /// ```
    /// use yiem_core::{mcp::McpServer, store::ToolStore};
    ///
    /// let server = McpServer::new(ToolStore::new("shell")).task_tools(["bash"]);
    /// # let _ = server;
    /// ```
    pub fn task_tools(self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let tasks = &self.config.tasks;
        let mut optional = (*tasks.optional).clone();
        optional.extend(tools.into_iter().map(Into::into));
        let (store, ttl) = (Arc::clone(&tasks.store), tasks.ttl);
        self.tasks(store, ttl, Arc::new(optional))
    }

    /// The server with its task settings replaced, and no run of its own yet (a setter is called
    /// before the server serves).
    fn tasks(
        mut self,
        store: Arc<dyn TaskStore>,
        ttl: Duration,
        optional: Arc<std::collections::HashSet<String>>,
    ) -> Self {
        self.config_mut().tasks = Arc::new(Tasks {
            store,
            ttl,
            optional,
            ..Tasks::default()
        });
        self
    }

    /// Whether calls of `tool` may be tasks on this server: the tool's own say, or
    /// [`task_tools`](Self::task_tools).
    fn task_support(&self, tool: &AgentTool) -> TaskSupport {
        match tool.task_support() {
            TaskSupport::Forbidden if self.config.tasks.optional.contains(tool.name()) => {
                TaskSupport::Optional
            }
            support => support,
        }
    }

    /// Declares the tasks extension when a tool of the store may run as a task.
    pub(super) fn declare_tasks(&self, capabilities: &mut ServerCapabilities) {
        let any = self
            .config
            .store
            .tools()
            .iter()
            .any(|tool| self.task_support(tool).allows_tasks());
        if any {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                    JsonObject::new(),
                );
        }
    }

    /// Whether the call of `tool` is a task, and if it is, its answer: the task, or for a tool that
    /// asks first, the call's first questions. `None`: an ordinary call (the client did not declare
    /// tasks, and the tool does not need them).
    pub(super) async fn dispatch_task(
        &self,
        tool: &AgentTool,
        arguments: &Value,
        state: Option<&str>,
        answers: Option<&InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        let support = self.task_support(tool);
        if !support.allows_tasks() {
            return None;
        }
        let declared = context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
        if !declared {
            return match support {
                TaskSupport::Optional => None,
                _ => Some(Err(tasks_required(tool.name()))),
            };
        }
        let answers = answers.cloned().unwrap_or_default();
        if support == TaskSupport::RequiredAfterQuestions && state.is_none() && answers.is_empty() {
            // The first round runs here, until the tool asks (its questions are the call's) or ends
            // (then the task is born ended).
            return Some(
                match self
                    .call(tool, arguments.clone(), Default::default(), context)
                    .await
                {
                    Outcome::Done(message) => {
                        let ended = self.ended(tool.name(), message);
                        self.start(tool, arguments, state, &answers, context, Some(ended))
                            .await
                    }
                    asked => asked.map(call_tool_result).response(tool.name()),
                },
            );
        }
        Some(
            self.start(tool, arguments, state, &answers, context, None)
                .await,
        )
    }

    /// Saves a new task for the call and starts its run (unless it has already `ended`), then answers
    /// with the task.
    async fn start(
        &self,
        tool: &AgentTool,
        arguments: &Value,
        state: Option<&str>,
        answers: &InputResponses,
        context: &RequestContext<RoleServer>,
        ended: Option<TaskPayload>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tasks = &self.config.tasks;
        let now = chrono::Utc::now();
        let stamp = now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let ttl_ms = u64::try_from(tasks.ttl.as_millis()).unwrap_or(u64::MAX);
        let seed = Task::new(
            uuid::Uuid::new_v4().to_string(),
            TaskStatus::Working,
            stamp.clone(),
            stamp,
        )
        .with_ttl_ms(ttl_ms)
        .with_poll_interval_ms(POLL_INTERVAL_MS);
        let payload = ended.unwrap_or(TaskPayload::Working);
        let stored = StoredTask {
            task: DetailedTask::new(seed.clone(), payload),
            owner: self.owner(context),
            tool: tool.name().to_owned(),
            arguments: arguments.clone(),
            state: state.map(str::to_owned),
            answers: answers.clone(),
            expires_at_ms: now_ms().saturating_add(ttl_ms),
        };
        let id = stored.id().to_owned();
        let running = !stored.is_terminal();
        let status = stored.task.task.status;
        tasks
            .store
            .save(stored.clone())
            .await
            .map_err(store_error)?;
        // The one place that decides where a task runs: the store's own way, else this process.
        let durable = running
            && tasks
                .store
                .run(&stored, &TaskRequest::of(context))
                .await
                .map_err(store_error)?;
        if running && !durable {
            let cancel = CancellationToken::new();
            let answered = Arc::new(Notify::new());
            tasks.running().insert(
                id.clone(),
                Running {
                    cancel: cancel.clone(),
                    answered: Arc::clone(&answered),
                },
            );
            // The run's own request: the task's token rather than the request's, which ends with
            // this answer.
            let mut own = context.clone();
            own.ct = cancel;
            let server = self.clone();
            let tool = tool.clone();
            tokio::spawn(async move { server.run_task(id, tool, own, answered).await });
        }
        let mut seed = seed;
        seed.status = status;
        Ok(CallToolResponse::Task(CreateTaskResult::new(seed)))
    }

    /// Runs the task's call until it ends: each round with every answer so far; a round with
    /// questions parks the task in `input_required` until `tasks/update` answers them all.
    async fn run_task(
        self,
        id: String,
        tool: AgentTool,
        context: RequestContext<RoleServer>,
        answered: Arc<Notify>,
    ) {
        let cancel = context.ct.clone();
        loop {
            let Ok(Some(stored)) = self.config.tasks.store.load(&id).await else {
                break; // expired, or the store is out of reach: nobody can read an answer
            };
            if stored.is_terminal() {
                break; // cancelled
            }
            let (payload, state) = tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                round = self.round(&tool, &stored, &context) => round,
            };
            if cancel.is_cancelled() {
                break; // the call ended because it was cancelled: the task says so already
            }
            let next = match (payload, state) {
                (
                    TaskPayload::InputRequired {
                        input_requests: questions,
                    },
                    Some(state),
                ) => {
                    // Armed before the state is saved, so an answer that comes at once is not missed.
                    let waiting = answered.notified();
                    tokio::pin!(waiting);
                    waiting.as_mut().enable();
                    let asked = self
                        .change(&id, &context, |task| {
                            task.state = Some(state);
                            task.answers = InputResponses::new();
                            set(
                                task,
                                TaskPayload::InputRequired {
                                    input_requests: questions,
                                },
                            );
                        })
                        .await;
                    if asked.is_none() {
                        break;
                    }
                    tokio::select! {
                        () = cancel.cancelled() => break,
                        () = waiting => continue,
                    }
                }
                (ended, _) => ended,
            };
            self.change(&id, &context, |task| set(task, next)).await;
            break;
        }
        self.config.tasks.running().remove(&id);
    }

    /// One round of the call of `task`, for a [`TaskStore`] that runs tasks itself
    /// ([`TaskStore::run`]): the call runs through this server's call path as any call does
    /// (approval, hooks, events, limits), with every answer the task holds, in a request of the client
    /// `request` describes, until it ends or asks (then the task's questions are the round's). It stops
    /// when `cancel` is cancelled (the round's outcome then does not matter: the task was cancelled).
    ///
    /// Answers the task as the round leaves it: `completed` or `failed` with the result or error, or
    /// `input_required` with the questions and every answer so far. A round whose task's tool this
    /// server does not have fails the task.
    pub async fn task_round(
        &self,
        task: &StoredTask,
        request: &TaskRequest,
        cancel: CancellationToken,
    ) -> StoredTask {
        let (payload, state) = match self.config.store.get(&task.tool) {
            Some(tool) => {
                let context = request.detached(self, cancel.clone());
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => (TaskPayload::Cancelled, None),
                    round = self.round(&tool, task, &context) => round,
                }
            }
            None => (
                failed(ErrorData::internal_error(
                    format!(
                        "the server that runs task `{}` has no tool `{}`; the task failed",
                        task.id(),
                        task.tool
                    ),
                    None,
                )),
                None,
            ),
        };
        let mut next = task.clone();
        if let Some(state) = state {
            // The answers so far are in the new state; the next ones answer its questions.
            next.state = Some(state);
            next.answers = InputResponses::new();
        }
        set(&mut next, payload);
        next.task.task.last_updated_at =
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        next
    }

    /// One round of the task's call in `context`, with the answers its signed state carries and
    /// those given since: its end, or its questions with the state that carries every answer so far.
    /// A state that does not open fails the task as it would fail the call.
    async fn round(
        &self,
        tool: &AgentTool,
        task: &StoredTask,
        context: &RequestContext<RoleServer>,
    ) -> (TaskPayload, Option<String>) {
        let given = match self.config.state_key.open(
            "tools/call",
            tool.name(),
            task.state.as_deref(),
            Some(task.answers.clone()),
        ) {
            Ok(given) => given,
            Err(error) => return (failed(error), None),
        };
        match self
            .call(tool, task.arguments.clone(), given, context)
            .await
        {
            Outcome::Done(message) => (self.ended(tool.name(), message), None),
            Outcome::Missing(capability) => {
                (failed(missing_capability(tool.name(), capability)), None)
            }
            Outcome::Refused(why) => (failed(refused(&why)), None),
            Outcome::Ask { questions, state } => (
                TaskPayload::InputRequired {
                    input_requests: questions,
                },
                Some(state),
            ),
        }
    }

    /// What an ended call makes of its task: its result, or for a tool that panicked, a failure.
    fn ended(&self, tool: &str, message: ToolResultMessage) -> TaskPayload {
        if message.result.panicked() {
            return failed(ErrorData::internal_error(
                format!(
                    "{}; the task failed",
                    message.result.text_content().trim_end_matches('.')
                ),
                None,
            ));
        }
        let _ = tool;
        let result = call_tool_result(bounded(message, self.config.max_result_bytes));
        match serde_json::to_value(result) {
            Ok(Value::Object(result)) => TaskPayload::Completed { result },
            _ => failed(ErrorData::internal_error(
                "the tool's result could not be written as JSON",
                None,
            )),
        }
    }

    /// Changes the task's state unless it has ended, saves it and tells the client: the new state, or
    /// `None` when the task is gone or ended.
    async fn change(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
        change: impl FnOnce(&mut StoredTask),
    ) -> Option<StoredTask> {
        let tasks = &self.config.tasks;
        let _changing = tasks.changing.lock().await;
        let mut task = tasks.store.load(id).await.ok()??;
        if task.is_terminal() {
            return None;
        }
        change(&mut task);
        task.task.task.last_updated_at =
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        if let Err(error) = tasks.store.save(task.clone()).await {
            tracing::warn!(%error, task = id, "could not save a task's new state");
            return None;
        }
        notify(context, &task).await;
        Some(task)
    }

    /// Who owns what a request creates, and may read it: the HTTP session (`Mcp-Session-Id`), else
    /// the connection (stdio), else nobody in particular.
    fn owner(&self, context: &RequestContext<RoleServer>) -> Option<String> {
        #[cfg(feature = "mcp-http")]
        if let Some(session) = context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|value| value.to_str().ok())
        {
            return Some(format!("session:{session}"));
        }
        let _ = context;
        self.connection
            .as_deref()
            .map(|id| format!("connection:{id}"))
    }

    /// The task `id` as this request may see it, or the `-32602` of an unknown task (one of another
    /// session is unknown to this one).
    async fn visible(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<StoredTask, ErrorData> {
        let task = self
            .config
            .tasks
            .store
            .load(id)
            .await
            .map_err(store_error)?;
        match task {
            Some(task) if task.owner.is_none() || task.owner == self.owner(context) => Ok(task),
            _ => Err(ErrorData::invalid_params(
                format!(
                    "no task `{id}` here: it never existed, it expired, or another session created \
                     it; call the tool again"
                ),
                None,
            )),
        }
    }

    /// `tasks/get`.
    pub(super) async fn get_task_of(
        &self,
        request: GetTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let task = self.visible(&request.task_id, context).await?;
        Ok(GetTaskResult::new(task.task))
    }

    /// `tasks/update`: the answers to questions the task is waiting for are kept (others are
    /// ignored, as the extension says); once every question has one, the run goes on.
    pub(super) async fn update_task_of(
        &self,
        request: UpdateTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let id = request.task_id;
        self.visible(&id, context).await?;
        let changed = self
            .change(&id, context, |task| {
                let TaskPayload::InputRequired { input_requests } = &mut task.task.payload else {
                    return;
                };
                for (key, answer) in request.input_responses {
                    if input_requests.remove(&key).is_some() {
                        task.answers.insert(key, answer);
                    }
                }
                if input_requests.is_empty() {
                    set(task, TaskPayload::Working);
                }
            })
            .await;
        if changed.is_some_and(|task| task.task.status() == TaskStatus::Working)
            && let Some(running) = self.config.tasks.running().get(&id)
        {
            running.answered.notify_one();
        }
        Ok(())
    }

    /// `tasks/cancel`: the task is cancelled (one that has ended stays as it ended) and its call
    /// stops.
    pub(super) async fn cancel_task_of(
        &self,
        request: CancelTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let id = request.task_id;
        self.visible(&id, context).await?;
        self.change(&id, context, |task| set(task, TaskPayload::Cancelled))
            .await;
        if let Some(running) = self.config.tasks.running().remove(&id) {
            running.cancel.cancel();
        }
        Ok(())
    }
}

/// Sets the task's status and what goes with it.
fn set(task: &mut StoredTask, payload: TaskPayload) {
    task.task = DetailedTask::new(task.task.task.clone(), payload);
}

/// A task that failed with `error`.
fn failed(error: ErrorData) -> TaskPayload {
    let error = match serde_json::to_value(error) {
        Ok(Value::Object(error)) => error,
        _ => JsonObject::new(),
    };
    TaskPayload::Failed { error }
}

/// Tells the client of the task's new state (`notifications/tasks`), where the request's connection
/// still carries notifications; a client that cannot hear them polls.
async fn notify(context: &RequestContext<RoleServer>, task: &StoredTask) {
    let notification = ServerNotification::TaskStatusNotification(rmcp::model::Notification::new(
        TaskStatusNotificationParams::new(task.task.clone()),
    ));
    if let Err(error) = context.peer.send_notification(notification).await {
        tracing::debug!(%error, "could not send a task's status to the MCP client");
    }
}

/// The `-32021` of a call of a tool that runs only as a task, from a client that did not declare
/// the tasks extension.
fn tasks_required(tool: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "`{tool}` runs only as a task, and this request did not declare the \
             `{}` extension; it did not run. Declare the extension in the client's capabilities",
            rmcp::model::TASKS_EXTENSION_ID
        ),
        Some(serde_json::json!({
            "requiredCapabilities": {"extensions": {rmcp::model::TASKS_EXTENSION_ID: {}}}
        })),
    )
}

/// A store's failure, as the client's error.
fn store_error(error: TaskStoreError) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

/// Now, in milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    u64::try_from(chrono::Utc::now().timestamp_millis()).unwrap_or(0)
}
