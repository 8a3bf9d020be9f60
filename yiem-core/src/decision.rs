//! What a run reports while a call waits for a person ([`PendingApproval`]) and the answers it resumes
//! with ([`Decision`]): data, below the tools, the approval policy, code mode and the agent.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
