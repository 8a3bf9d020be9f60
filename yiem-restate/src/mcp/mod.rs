//! Durable MCP tasks (SEP-2663) on Restate (the `mcp` feature): a task's state lives in Restate, and
//! its run is a durable invocation whose rounds are journaled steps, so a task survives the process
//! that started it and any replica of a stateless MCP server answers for it.
//!
//! Two parts, usually in different processes:
//! - [`RestateTaskStore`], the [`TaskStore`](yiem_core::mcp::TaskStore) of every replica of the MCP
//!   server (`McpServer::task_store`): it keeps tasks in Restate through the ingress and hands their
//!   runs to it;
//! - [`DurableTasks`], the Restate service that runs them: the same tools, served with restate-sdk's
//!   `HttpServer` and registered with the Restate server like a durable agent's.
//!
//! A task's run performs the same call path as any call (`McpServer::task_round`): approval, hooks,
//! events and limits; each round of the call is a journaled step (`round 1`, `round 2`, ...), so a
//! crash runs the round again from its start (a round is at least once, as a durable agent's tool
//! call is). Its questions and its approval are the task's `input_required`, answered with
//! `tasks/update` through any replica; the run waits for them suspended on an awakeable, for as long
//! as it takes and across restarts. `tasks/cancel` cancels the run's invocation; the round that runs
//! at that moment stops at once when the service process that runs it is the one the cancellation
//! reaches (one service process, or Restate routing both to the same one), else at its end.
//!
//! `McpTask` is called through the ingress, so whoever reaches the ingress can read and change any
//! task: keep the ingress on the servers' private network, as for a durable agent. A task's state is
//! dropped from Restate at the end of its time to live (`McpServer::task_ttl`).
//!
//! ```no_run
//! use yiem_core::{mcp::McpServer, store::ToolStore};
//! use yiem_restate::mcp::{DurableTasks, RestateTaskStore};
//! use yiem_restate::restate_sdk::prelude::*;
//!
//! # async fn serve() {
//! let tools = ToolStore::new("reports");
//! // The service that runs tasks, registered with Restate at http://127.0.0.1:9080.
//! // The key that signs a task's answers between rounds, the same in every process and restart.
//! let state_key: [u8; 32] = *b"a secret of thirty-two bytes ...";
//! let service = DurableTasks::new(McpServer::new(tools.clone()), state_key);
//! tokio::spawn(HttpServer::new(service.endpoint()).listen_and_serve("127.0.0.1:9080".parse().unwrap()));
//! // Each replica of the MCP server keeps its tasks in Restate.
//! let store = RestateTaskStore::new("http://127.0.0.1:8080").unwrap();
//! let server = McpServer::new(tools).task_store(store);
//! # let _ = server;
//! # }
//! ```

mod object;
mod store;

use restate_sdk::endpoint::Endpoint;
use rmcp::model::TaskStatus;
use yiem_core::mcp::McpServer;

pub use store::RestateTaskStore;

use object::{Rounds, TaskObject, TaskRun};

/// The Restate service that runs an [`McpServer`]'s durable tasks: the objects `McpTask` (a task's
/// state, called by [`RestateTaskStore`] through the ingress) and `McpTaskRun` (its run, private to
/// the ingress), both keyed by task id.
#[derive(Clone)]
pub struct DurableTasks {
    server: McpServer,
}

impl std::fmt::Debug for DurableTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableTasks").finish_non_exhaustive()
    }
}

impl DurableTasks {
    /// The service that runs the tasks of `server`'s tools (its task store is not used here).
    ///
    /// `state_key` signs the answers a task holds between its rounds (`McpServer::state_key`): every
    /// process that runs these tasks, and each of them after a restart, must use the same key, or a
    /// task that waits for answers fails when it goes on. Keep it secret, as the ingress is.
    pub fn new(server: McpServer, state_key: [u8; 32]) -> DurableTasks {
        DurableTasks {
            server: server.state_key(state_key),
        }
    }

    /// The Restate endpoint with `McpTask` and `McpTaskRun`.
    pub fn endpoint(self) -> Endpoint {
        let rounds = Rounds::default();
        Endpoint::builder()
            .bind(TaskObject {
                rounds: rounds.clone(),
            })
            .bind(TaskRun {
                server: self.server,
                rounds,
            })
            .build()
    }
}
