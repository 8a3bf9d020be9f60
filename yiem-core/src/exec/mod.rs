//! Running calls: [`ToolCall`], the [`ToolExecutor`] that runs a
//! batch of them (one by one or at once, results in call order), the [`ToolHooks`] that
//! run before and after each call, the [`CallJournal`] of drivers that replay, and the
//! [`CancellationToken`] that aborts a batch.

pub(crate) mod executor;
pub(crate) mod hooks;
pub(crate) mod order;
pub(crate) mod pipeline;

pub use self::executor::{BatchMode, ToolCallBatch, ToolExecutor, execute_tool_calls};
pub use self::hooks::{
    AfterToolCallContext, BeforeToolCallContext, Block, HookOutput, ToolHooks, ToolResultPatch,
};
pub use crate::call::{ToolCall, ToolCaller};
pub use crate::decision::PlannedCall;
pub use crate::journal::{CallJournal, CallRecord};
pub use tokio_util::sync::CancellationToken;
