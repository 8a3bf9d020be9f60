//! Approvals: which tool calls wait for a person before they run ([`ApprovalPolicy`]). What a run
//! reports while it waits and the answers it resumes with are data, in `decision`. Below the agent and
//! code mode, which both use them.

use std::fmt;
use std::sync::Arc;

use crate::call::ToolCall;
pub use crate::decision::{Decision, PendingApproval};
use crate::definition::AgentTool;

/// Decides, per call, whether it needs approval: `Some(reason)` pauses the run before its batch runs.
///
/// Without a policy, a call needs approval when its tool says so ([`AgentTool::needs_approval`]). A
/// policy replaces that rule; [`ApprovalPolicy::tool_default`] gives it back for calls the policy does
/// not care about.
///
/// ```
/// use yiem_core::agent::ApprovalPolicy;
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
    /// use yiem_core::{agent::ApprovalPolicy, exec::ToolCall, tool::AgentTool};
    ///
    /// let policy = ApprovalPolicy::for_tools(["bash"]);
    /// let bash = AgentTool::builder("bash")
    ///     .description("Run a command.")
    ///     .handler(|_ctx: yiem_core::tool::ToolContext, _args: serde_json::Value| async { "ran" })
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
    /// Every call is checked here: the model's own ([`AgentConfig::needs_approval`](crate::agent::AgentConfig::needs_approval))
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
