//! What a run reports while a call waits for a person ([`PendingApproval`]), the answers it resumes
//! with ([`Decision`]) and the plan a batch runs ([`PlannedCall`]): the protocol's data, below the
//! tools, the executor, the approval gate, code mode and the agent.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::ToolCall;

/// A tool call that waits for a decision before its batch runs.
///
/// ```
/// use serde_json::json;
/// use yiem_core::agent::PendingApproval;
///
/// let pending = PendingApproval::new(
///     "call_1",
///     "bash",
///     json!({"command": "rm -rf build"}),
///     "the tool `bash` needs approval before it runs",
/// );
/// assert_eq!(serde_json::to_value(&pending).unwrap()["tool_name"], "bash");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PendingApproval {
    /// The id of the call, as the model gave it; decisions refer to it.
    pub call_id: String,
    /// The tool the call is for.
    pub tool_name: String,
    /// The arguments the model sent.
    pub arguments: Value,
    /// Why the call needs approval (from the tool or the policy).
    pub reason: String,
}

impl PendingApproval {
    /// The call `call_id` of `tool_name` with `arguments`, waiting for a decision because of `reason`.
    pub fn new(
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        arguments: Value,
        reason: impl Into<String>,
    ) -> Self {
        PendingApproval {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            arguments,
            reason: reason.into(),
        }
    }
}

/// The answer to one [`PendingApproval`].
///
/// ```
/// use serde_json::json;
/// use yiem_core::agent::Decision;
///
/// let edited = Decision::ApproveWith { arguments: json!({"command": "ls"}) };
/// assert_eq!(serde_json::to_value(&edited).unwrap()["decision"], "approve_with");
/// let denied = Decision::deny("not on a Friday");
/// assert_eq!(denied, Decision::Deny { reason: "not on a Friday".into() });
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Decision {
    /// Run the call as the model sent it.
    Approve,
    /// Run the call with these arguments instead; the conversation records them as the call's arguments,
    /// so the model sees what actually ran.
    ApproveWith {
        /// The arguments to run with (validated like any others).
        arguments: Value,
    },
    /// Do not run the call; the model reads `the user denied this call: <reason>` as its error result.
    Deny {
        /// Why, for the model.
        reason: String,
    },
    /// Run this call, and every later call of the same tool in this run without asking.
    AlwaysApprove,
}

impl Decision {
    /// [`Decision::Deny`] with `reason`.
    pub fn deny(reason: impl Into<String>) -> Self {
        Decision::Deny {
            reason: reason.into(),
        }
    }
}

/// One call of a planned batch: run it, or answer it with an error without running it (a call the user
/// denied, say). See [`ToolExecutor::execute_plan`](crate::exec::ToolExecutor::execute_plan).
///
/// ```
/// use serde_json::json;
/// use yiem_core::exec::{PlannedCall, ToolCall};
///
/// let denied = PlannedCall::Refuse {
///     call: ToolCall::new("1", "bash", json!({"command": "rm -rf /"})),
///     reason: "the user denied this call: too dangerous".into(),
/// };
/// assert_eq!(denied.call().name, "bash");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "plan", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PlannedCall {
    /// Run the call through the pipeline.
    Run {
        /// The call.
        call: ToolCall,
    },
    /// Answer the call with an error result whose text is `reason`; no hook sees it.
    Refuse {
        /// The call.
        call: ToolCall,
        /// What the model reads instead of a result.
        reason: String,
    },
}

impl PlannedCall {
    /// The call this plan is for.
    pub fn call(&self) -> &ToolCall {
        match self {
            PlannedCall::Run { call } | PlannedCall::Refuse { call, .. } => call,
        }
    }
}

/// Why a call of a reply cut at the output limit was not run (the step machine refuses such calls;
/// a provider's replay answers them the same way).
pub(crate) fn truncated_reason(tool: &str) -> String {
    format!(
        "tool call `{tool}` was not run: the reply hit the model's output limit (finish_reason \"length\"), \
         so its arguments may be truncated; call the tool again with shorter arguments"
    )
}
