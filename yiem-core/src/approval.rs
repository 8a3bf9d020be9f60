//! Approvals: which tool calls wait for a person before they run ([`ApprovalPolicy`]), what a run
//! reports while it waits ([`PendingApproval`]) and the answers it resumes with ([`Decision`]). Below the
//! agent and code mode, which both use them.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::ToolCall;
use crate::tool::AgentTool;

/// A tool call that waits for a decision before its batch runs.
///
/// ```
/// use serde_json::json;
/// use yiem_core::PendingApproval;
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
/// use yiem_core::Decision;
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

/// Decides, per call, whether it needs approval: `Some(reason)` pauses the run before its batch runs.
///
/// Without a policy, a call needs approval when its tool says so ([`AgentTool::needs_approval`]). A
/// policy replaces that rule; [`ApprovalPolicy::tool_default`] gives it back for calls the policy does
/// not care about.
///
/// ```
/// use yiem_core::ApprovalPolicy;
///
/// // `bash` needs approval unless it only lists files; every other tool as it says.
/// let policy = ApprovalPolicy::new(|call, tool| {
///     if call.name == "bash" {
///         let command = call.arguments["command"].as_str().unwrap_or_default();
///         return (!command.starts_with("ls ")).then(|| format!("runs `{command}`"));
///     }
///     ApprovalPolicy::tool_default(call, tool)
/// });
/// # let _ = policy;
/// ```
#[derive(Clone)]
pub struct ApprovalPolicy(Arc<PolicyFn>);

type PolicyFn = dyn Fn(&ToolCall, &AgentTool) -> Option<String> + Send + Sync;

impl ApprovalPolicy {
    /// A policy from a function of the call and its tool.
    pub fn new(
        decide: impl Fn(&ToolCall, &AgentTool) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        ApprovalPolicy(Arc::new(decide))
    }

    /// The rule without a policy: the tool's own [`AgentTool::needs_approval`].
    pub fn tool_default(call: &ToolCall, tool: &AgentTool) -> Option<String> {
        let _ = call;
        tool.needs_approval()
            .then(|| format!("the tool `{}` needs approval before it runs", tool.name()))
    }

    /// Calls of the tools named in `tools` wait for approval, and every other call as its tool says
    /// ([`tool_default`](Self::tool_default)).
    ///
    /// ```
    /// use serde_json::json;
    /// use yiem_core::{AgentTool, ApprovalPolicy, ToolCall};
    ///
    /// let policy = ApprovalPolicy::for_tools(["bash"]);
    /// let bash = AgentTool::builder("bash")
    ///     .description("Run a command.")
    ///     .handler(|_ctx: yiem_core::ToolContext, _args: serde_json::Value| async { "ran" })
    ///     .build()
    ///     .unwrap();
    /// let call = ToolCall::new("c1", "bash", json!({}));
    /// assert_eq!(
    ///     policy.check(&call, &bash),
    ///     Some("the tool `bash` needs approval before it runs".to_owned())
    /// );
    /// ```
    pub fn for_tools(tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let names: Vec<String> = tools.into_iter().map(Into::into).collect();
        ApprovalPolicy::new(move |call, tool| {
            if names.contains(&call.name) {
                return Some(format!(
                    "the tool `{}` needs approval before it runs",
                    call.name
                ));
            }
            ApprovalPolicy::tool_default(call, tool)
        })
    }

    /// Whether `call` of `tool` needs approval, and why.
    pub fn check(&self, call: &ToolCall, tool: &AgentTool) -> Option<String> {
        (self.0)(call, tool)
    }

    /// [`check`](Self::check) on the arguments `call` will run with: decoded from a JSON string and
    /// through the tool's `prepare` step, by the same function the call's own path uses. (Arguments that
    /// do not decode are shown as they came; the call then ends with an error result and runs nothing.)
    /// Every call is checked here: the model's own ([`AgentConfig::needs_approval`](crate::AgentConfig::needs_approval))
    /// and a code-mode program's.
    pub(crate) fn check_prepared(&self, call: &ToolCall, tool: &AgentTool) -> Option<String> {
        let prepared = match crate::guard::catch(|| tool.prepare_arguments(&call.arguments)) {
            Ok(Ok(std::borrow::Cow::Owned(arguments))) => Some(ToolCall {
                arguments,
                ..call.clone()
            }),
            _ => None,
        };
        self.check(prepared.as_ref().unwrap_or(call), tool)
    }
}

impl Default for ApprovalPolicy {
    fn default() -> Self {
        ApprovalPolicy::new(ApprovalPolicy::tool_default)
    }
}

impl fmt::Debug for ApprovalPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApprovalPolicy(..)")
    }
}
