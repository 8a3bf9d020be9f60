//! [`CallJournal`]: where a driver that replays (a durable one) records each call's run, and
//! [`CallRecord`], what it records. Below the pipeline, which runs a call through it, and code mode, whose
//! programs' calls it records too.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::call::ToolCall;
use crate::result::AgentToolResult;

/// Where the run of each call of a batch is recorded, for a driver that replays what it recorded (a
/// durable one): [`record`](Self::record) gets a call's run — the tool under its limit, then the
/// `after_tool_call` hook — as a future, and gives back its result: the recorded one on a replay,
/// without awaiting the future, so the call does not run again. Everything else of the call (its lookup,
/// its binding, the `before_tool_call` hook, its events) happens as without a journal, on a replay too.
/// See [`ToolExecutor::execute_plan_journaled`](crate::exec::ToolExecutor::execute_plan_journaled).
pub trait CallJournal: Send + Sync {
    /// Records `call`'s `run`, or gives the record made for it before.
    fn record<'a>(
        &'a self,
        call: &ToolCall,
        run: BoxFuture<'static, CallRecord>,
    ) -> BoxFuture<'a, CallRecord>;
}

/// What a [`CallJournal`] records of a call: its result, and when the call finished (the time its result
/// message is stamped with, so that a replay makes the very same message).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallRecord {
    /// The call's result.
    pub result: AgentToolResult,
    /// When the call finished, in milliseconds since the Unix epoch.
    pub finished_at: u64,
}

impl CallRecord {
    /// The record of a call that finished with `result` at `finished_at`.
    pub fn new(result: AgentToolResult, finished_at: u64) -> Self {
        CallRecord {
            result,
            finished_at,
        }
    }
}
