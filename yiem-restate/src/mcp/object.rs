//! The two virtual objects of a durable task, both keyed by task id: `McpTask` keeps the task
//! (`save`, `start`, `wait` are short and exclusive; `load` is shared), and `McpTaskRun` runs it
//! (`run`, exclusive, as long as the task). They are two objects because a shared handler of Restate
//! cannot write state: the task's state changes while its run goes on or waits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use restate_sdk::prelude::*;
use yiem_core::exec::CancellationToken;
use yiem_core::mcp::{McpServer, StoredTask, TaskRequest};

use super::TaskStatus;

/// The task (`StoredTask`).
const TASK: &str = "task";
/// The invocation id of the task's run.
const RUN: &str = "run";
/// The awakeable the run waits on while the task waits for answers.
const WAITING: &str = "waiting";

/// The rounds of tasks this process runs, by task id: a `save` of a cancelled task that reaches
/// this process stops its round at once (Restate's cancellation reaches a run only between steps).
#[derive(Clone, Default)]
pub(crate) struct Rounds(Arc<Mutex<HashMap<String, CancellationToken>>>);

impl Rounds {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn begin(&self, id: &str) -> CancellationToken {
        let token = CancellationToken::new();
        self.lock().insert(id.to_owned(), token.clone());
        token
    }

    fn end(&self, id: &str) {
        self.lock().remove(id);
    }

    fn cancel(&self, id: &str) {
        if let Some(token) = self.lock().remove(id) {
            token.cancel();
        }
    }
}

/// The `McpTask` object: what a task is.
pub(crate) struct TaskObject {
    pub(crate) rounds: Rounds,
}

#[restate_sdk::object(name = "McpTask", client_visibility = "pub(crate)")]
impl TaskObject {
    /// Saves the task's new state, unless it has ended (a task that ended stays as it ended):
    /// whether it was saved. Saved `cancelled`, its run is cancelled; saved `working` after
    /// `input_required` (every question answered), its run goes on.
    #[handler]
    async fn save(
        &self,
        ctx: ObjectContext<'_>,
        Json(task): Json<StoredTask>,
    ) -> HandlerResult<bool> {
        let old = ctx
            .get::<Json<StoredTask>>(TASK)
            .await?
            .map(|Json(old)| old);
        if old.as_ref().is_some_and(StoredTask::is_terminal) {
            return Ok(false);
        }
        let was = old.map(|old| old.task.status());
        let now = task.task.status();
        ctx.set(TASK, Json(task));
        if now == TaskStatus::Cancelled {
            if let Some(run) = ctx.get::<String>(RUN).await? {
                ctx.invocation_handle(run).cancel();
            }
            self.rounds.cancel(ctx.key());
        }
        if was == Some(TaskStatus::InputRequired) && now != TaskStatus::InputRequired {
            wake(&ctx).await?;
        }
        Ok(true)
    }

    /// The task, if it was ever saved (`null` otherwise).
    #[handler]
    async fn load(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Json<Option<StoredTask>>> {
        Ok(Json(
            ctx.get::<Json<StoredTask>>(TASK)
                .await?
                .map(|Json(task)| task),
        ))
    }

    /// Starts the task's run (once: a second start does nothing), and its expiry at the end of its
    /// time to live.
    #[handler]
    async fn start(
        &self,
        ctx: ObjectContext<'_>,
        Json(request): Json<TaskRequest>,
    ) -> HandlerResult<()> {
        if ctx.get::<String>(RUN).await?.is_some() {
            return Ok(());
        }
        let Some(Json(task)) = ctx.get::<Json<StoredTask>>(TASK).await? else {
            return Err(TerminalError::new("no task was saved under this id to start").into());
        };
        let run = ctx
            .object_client::<TaskRunClient>(ctx.key().to_owned())
            .run(Json(request))
            .send()
            .await?;
        ctx.set(RUN, run.invocation_id().to_owned());
        // The task's own time to live, not the clock: a replay schedules the same expiry.
        if let Some(ttl) = task.task.task.ttl_ms {
            ctx.object_client::<TaskObjectClient>(ctx.key().to_owned())
                .expire()
                .send_after(std::time::Duration::from_millis(ttl));
        }
        Ok(())
    }

    /// The task's time to live is over: its run, if it still goes on or waits, is cancelled, and
    /// everything kept of it is dropped.
    #[handler]
    async fn expire(&self, ctx: ObjectContext<'_>) -> HandlerResult<()> {
        if let Some(run) = ctx.get::<String>(RUN).await? {
            ctx.invocation_handle(run).cancel();
        }
        self.rounds.cancel(ctx.key());
        ctx.clear_all();
        Ok(())
    }

    /// The run waits on `awakeable` for the task's answers; when they came already (or the task
    /// ended), it is woken at once.
    #[handler]
    async fn wait(&self, ctx: ObjectContext<'_>, awakeable: String) -> HandlerResult<()> {
        ctx.set(WAITING, awakeable);
        let status = ctx
            .get::<Json<StoredTask>>(TASK)
            .await?
            .map(|Json(task)| task.task.status());
        if status != Some(TaskStatus::InputRequired) {
            wake(&ctx).await?;
        }
        Ok(())
    }
}

/// Wakes the run that waits for answers, if one does.
async fn wake(ctx: &ObjectContext<'_>) -> HandlerResult<()> {
    if let Some(awakeable) = ctx.get::<String>(WAITING).await? {
        ctx.clear(WAITING);
        ctx.resolve_awakeable(&awakeable, ());
    }
    Ok(())
}

/// The `McpTaskRun` object: a task's run, each round of its call a journaled step.
pub(crate) struct TaskRun {
    pub(crate) server: McpServer,
    pub(crate) rounds: Rounds,
}

#[restate_sdk::object(name = "McpTaskRun", ingress_private, client_visibility = "pub(crate)")]
impl TaskRun {
    /// Runs the task until it ends: each round of its call (`round 1`, `round 2`, ...) is a
    /// journaled step, run with every answer the task holds; a round that asks saves the task
    /// `input_required` and waits, suspended, until `tasks/update` answers every question.
    #[handler]
    async fn run(
        &self,
        ctx: ObjectContext<'_>,
        Json(request): Json<TaskRequest>,
    ) -> HandlerResult<()> {
        let id = ctx.key().to_owned();
        let task = || ctx.object_client::<TaskObjectClient>(id.clone());
        let mut round = 0u32;
        loop {
            let Json(stored) = task().load().call().await?;
            let Some(stored) = stored else {
                return Ok(()); // never saved: nothing to run
            };
            if stored.is_terminal() {
                return Ok(()); // cancelled
            }
            round += 1;
            let server = self.server.clone();
            let rounds = self.rounds.clone();
            let request = request.clone();
            let key = id.clone();
            let Json(next) = ctx
                .run(move || async move {
                    let cancel = rounds.begin(&key);
                    let next = server.task_round(&stored, &request, cancel).await;
                    rounds.end(&key);
                    Ok(Json(next))
                })
                .name(format!("round {round}"))
                .await?;
            if next.task.status() != TaskStatus::InputRequired {
                task().save(Json(next)).call().await?;
                return Ok(());
            }
            let (awakeable, answered) = ctx.awakeable::<()>();
            if !task().save(Json(next)).call().await? {
                return Ok(()); // cancelled meanwhile
            }
            task().wait(awakeable).call().await?;
            answered.await?;
        }
    }
}
