//! Calls a server runs as tasks (SEP-2663): the client declares the tasks extension; a call answered
//! with a task is followed to its end — `tasks/get` at the server's `pollIntervalMs`, sooner when a
//! `notifications/tasks` comes — its questions answered with `tasks/update`, all within the call's
//! time limit. A call cancelled by its caller cancels its task (`tasks/cancel`); one out of time leaves
//! the task running and names it, for [`McpClient::task_result`] to pick up later, from this process
//! or another.

use rmcp::model::{CancelTaskParams, GetTaskParams, Task, TaskPayload, UpdateTaskParams};

use super::*;
use crate::mcp::convert::from_mcp;

/// How long the client waits between two `tasks/get` when the server suggests nothing, and at least.
const POLL_INTERVAL: Duration = Duration::from_millis(500);
const MIN_POLL_INTERVAL: Duration = Duration::from_millis(50);

impl McpClient {
    /// Follows the task `task_id` of this server to its end, within the client's call time limit
    /// ([`McpClientBuilder::call_timeout`]), and gives its result as a call of its tool would: how a
    /// client that restarted picks up a call the server runs as a task (the error result of a call out
    /// of time names its task). Its questions are answered as a call's are. An unknown task (expired,
    /// or another session's) is an error result saying so.
    ///
    /// ```no_run
    /// # async fn run(client: yiem_core::mcp::McpClient) {
    /// let result = client.task_result("7f9c1e0a-…").await;
    /// println!("{}", result.text_content());
    /// # }
    /// ```
    pub async fn task_result(&self, task_id: &str) -> AgentToolResult {
        let ctx = ToolContext::new(format!("mcp-task-{task_id}"));
        let (peer, _alive) = match self.inner.peer_and_flag().await {
            Ok(connected) => connected,
            Err(error) => {
                return AgentToolResult::error(format!("{error}; task `{task_id}` was not read"));
            }
        };
        let limit = tokio::time::sleep(self.inner.call_timeout);
        tokio::pin!(limit);
        let seed = Task::new(task_id, Default::default(), "", "");
        self.inner
            .follow_task("the task's tool", &ctx, &peer, seed, limit.as_mut())
            .await
    }
}

impl Inner {
    /// Follows `task`, which the server answered a call of `remote` with, until it ends, the caller
    /// cancels or `limit` passes.
    pub(super) async fn follow_task(
        &self,
        remote: &str,
        ctx: &ToolContext,
        peer: &Peer<RoleClient>,
        task: Task,
        mut limit: std::pin::Pin<&mut tokio::time::Sleep>,
    ) -> AgentToolResult {
        let server = &self.name;
        let id = task.task_id;
        let mut interval = interval_of(task.poll_interval_ms);
        let mut rounds = 0;
        let cancelled = async || {
            // The caller gave up: so does the task (one the server cannot cancel any more is over).
            let _ = peer.cancel_task(CancelTaskParams::new(id.clone())).await;
            AgentToolResult::error(format!(
                "the call of `{remote}` on MCP server `{server}` was cancelled, and its task `{id}` \
                 with it"
            ))
        };
        let out_of_time = || {
            AgentToolResult::error(format!(
                "MCP server `{server}` did not finish `{remote}` within {:?}; it goes on as task \
                 `{id}`, whose result `McpClient::task_result` reads",
                self.call_timeout
            ))
        };
        loop {
            // Armed before the read, so a change said while it is under way is not missed.
            let changed = self.task_changes.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let read = tokio::select! {
                biased;
                () = ctx.cancelled() => return cancelled().await,
                () = &mut limit => return out_of_time(),
                read = peer.get_task(GetTaskParams::new(id.clone())) => read,
            };
            let read = match read {
                Ok(read) => read,
                Err(ServiceError::McpError(refusal)) => {
                    return AgentToolResult::error(format!(
                        "MCP server `{server}` refused to say how task `{id}` of `{remote}` is going \
                         (error {}): {}",
                        refusal.code.0, refusal.message
                    ));
                }
                Err(error) => {
                    return AgentToolResult::error(format!(
                        "MCP server `{server}` could not be asked how task `{id}` of `{remote}` is \
                         going ({error}); it may go on: `McpClient::task_result` reads it later"
                    ));
                }
            };
            if let Some(suggested) = read.task.task.poll_interval_ms {
                interval = interval_of(Some(suggested));
            }
            match read.task.payload {
                TaskPayload::Completed { result } => {
                    return match serde_json::from_value(Value::Object(result)) {
                        Ok(result) => from_mcp(result),
                        Err(error) => AgentToolResult::error(format!(
                            "MCP server `{server}` ended task `{id}` of `{remote}` with something \
                             other than a tool result: {error}"
                        )),
                    };
                }
                TaskPayload::Failed { error } => {
                    let message = error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("no reason given");
                    return AgentToolResult::error(format!(
                        "MCP server `{server}` failed task `{id}` of `{remote}`: {message}"
                    ));
                }
                TaskPayload::Cancelled => {
                    return AgentToolResult::error(format!(
                        "task `{id}` of `{remote}` on MCP server `{server}` was cancelled"
                    ));
                }
                TaskPayload::InputRequired { input_requests } => {
                    rounds += 1;
                    if rounds > MAX_INPUT_ROUNDS {
                        return AgentToolResult::error(format!(
                            "MCP server `{server}` asked for input more than {MAX_INPUT_ROUNDS} times \
                             during task `{id}` of `{remote}`; the call was given up"
                        ));
                    }
                    let answers = tokio::select! {
                        biased;
                        () = ctx.cancelled() => return cancelled().await,
                        () = &mut limit => return out_of_time(),
                        answers = self.answer_inputs(ctx, input_requests) => answers,
                    };
                    let answers = match answers {
                        Ok(answers) => answers,
                        Err(refusal) => {
                            let _ = peer.cancel_task(CancelTaskParams::new(id.clone())).await;
                            return AgentToolResult::error(format!(
                                "MCP server `{server}` asked for input during task `{id}` of \
                                 `{remote}` that this client cannot give: {refusal}; the task was \
                                 cancelled"
                            ));
                        }
                    };
                    if let Err(error) = peer
                        .update_task(UpdateTaskParams::new(id.clone(), answers))
                        .await
                    {
                        return AgentToolResult::error(format!(
                            "the answers to task `{id}` of `{remote}` did not reach MCP server \
                             `{server}` ({error})"
                        ));
                    }
                    continue;
                }
                _ => {}
            }
            tokio::select! {
                biased;
                () = ctx.cancelled() => return cancelled().await,
                () = &mut limit => return out_of_time(),
                () = &mut changed => {}
                () = tokio::time::sleep(interval) => {}
            }
        }
    }
}

/// How long to wait between reads of a task the server suggests `suggested` for.
fn interval_of(suggested: Option<u64>) -> Duration {
    suggested
        .map(Duration::from_millis)
        .unwrap_or(POLL_INTERVAL)
        .max(MIN_POLL_INTERVAL)
}
