//! The approval gate: whether a tool call waits for a person before it runs ([`ApprovalPolicy`], the
//! operator's allowed tools, the tools a run approved for the rest of it), what a person's [`Decision`]
//! makes of the call ([`planned`], with the one wording of a denial), and how long a request for
//! approval may go unanswered ([`answer_limit`]). The agent (its model's calls), code mode (a program's),
//! the MCP server and the CLI all decide here. What a run reports while it waits and the answers it
//! resumes with are data, in `decision`.

use std::fmt;
use std::sync::Arc;

use crate::call::ToolCall;
use crate::decision::PlannedCall;
pub use crate::decision::{Decision, PendingApproval};
use crate::tool::definition::AgentTool;

/// What the model reads for a call a person denied, with their `reason` (none when blank).
fn denial(reason: &str) -> String {
    if reason.trim().is_empty() {
        "the user denied this call".to_owned()
    } else {
        format!("the user denied this call: {reason}")
    }
}

/// The plan of `call` once its decision is known (`None`: it needed none): run as the model sent it,
/// run with the arguments a person gave, or refused with the denial the model reads.
pub(crate) fn planned(call: ToolCall, decision: Option<&Decision>) -> PlannedCall {
    match decision {
        None | Some(Decision::Approve | Decision::AlwaysApprove) => PlannedCall::Run { call },
        Some(Decision::ApproveWith { arguments }) => PlannedCall::Run {
            call: ToolCall {
                arguments: arguments.clone(),
                ..call
            },
        },
        Some(Decision::Deny { reason }) => PlannedCall::Refuse {
            reason: denial(reason),
            call,
        },
    }
}

/// How long a request for approval of a call of `tool` may go unanswered before the call is given up:
/// the call's own time limit (the tool's, else the executor's `default`). `None`: no limit. (The MCP
/// server is the surface that waits for an answer while its caller waits.)
#[cfg(feature = "mcp")]
pub(crate) fn answer_limit(
    tool: &AgentTool,
    default: Option<std::time::Duration>,
) -> Option<std::time::Duration> {
    tool.timeout().or(default)
}

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

    /// This policy, but calls of the tools named in `tools` run without asking (an operator's grant:
    /// `yiem mcp --allow TOOL`).
    ///
    /// ```
    /// use serde_json::json;
    /// use yiem_core::{agent::ApprovalPolicy, exec::ToolCall, tool::AgentTool};
    ///
    /// let policy = ApprovalPolicy::for_tools(["bash", "write"]).allowing(["write"]);
    /// let write = AgentTool::builder("write")
    ///     .description("Write a file.")
    ///     .handler(|_ctx: yiem_core::tool::ToolContext, _args: serde_json::Value| async { "written" })
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(policy.check(&ToolCall::new("c1", "write", json!({})), &write), None);
    /// ```
    #[must_use]
    pub fn allowing(self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let allowed: Vec<String> = tools.into_iter().map(Into::into).collect();
        ApprovalPolicy::new(move |call, tool| {
            // The policy first: a call that needs nothing costs no lookup.
            self.check(call, tool)
                .filter(|_| !allowed.contains(&call.name))
        })
    }

    /// A policy under which no call waits (an operator who decided for every call).
    pub fn allow_all() -> Self {
        ApprovalPolicy::new(|_, _| None)
    }

    /// The gate for a call the model or a program made: `Some(reason)` when it waits for a person.
    /// Calls of tools the run approved for the rest of it (`always_approved`) never wait; a direct call
    /// of a code-only tool is refused without running, so nobody is asked; every other call as the policy
    /// says of the arguments it will run with ([`check_prepared`](Self::check_prepared)).
    pub(crate) fn waits(
        &self,
        call: &ToolCall,
        tool: &AgentTool,
        always_approved: &[String],
    ) -> Option<String> {
        if always_approved.contains(&call.name) || (tool.is_code_only() && call.caller.is_none()) {
            return None;
        }
        self.check_prepared(call, tool)
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
