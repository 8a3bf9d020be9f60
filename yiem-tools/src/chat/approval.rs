//! Which calls wait for the person at the chat ([`Approvals`]), and asking them inline:
//! `[y]es / [n]o / [a]lways / [e]dit`.
//!
//! By default the calls of `bash`, `edit`, `write` and `write_tool` (they run commands or change files)
//! wait, and so do the calls of every tool that is not the program's own and not marked read-only (an MCP
//! server's, one it adds during the session with `list_changed` too), and of every tool that asks for it
//! itself (`#[tool(needs_approval)]`). `--approve TOOL` adds a tool, `--allow TOOL` lets one run unasked,
//! and `--allow all` lets every call run unasked. `a` (always) lets the tool run unasked for the rest
//! of the session.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use yiem_core::agent::{ApprovalPolicy, Decision, PendingApproval};

use super::input::{Input, Line};
use super::render::{Renderer, approval_arguments};
use super::safe;

/// The built-in tools whose calls wait for approval unless `--allow`ed.
pub const ASKING_BUILT_INS: &[&str] = &["bash", "edit", "write", "write_tool"];

/// The chat's approval rules, and the tools `always` was answered for.
#[derive(Clone)]
pub struct Approvals {
    rules: Arc<Rules>,
    always: Arc<Mutex<HashSet<String>>>,
}

struct Rules {
    /// Tools whose calls wait.
    asking: HashSet<String>,
    /// The program's own tools, known at the start: every other tool (an MCP server's, whenever it
    /// arrived) waits unless it is marked read-only.
    own: HashSet<String>,
    /// Tools whose calls never wait.
    allowed: HashSet<String>,
    /// `--allow all`.
    allow_all: bool,
}

impl Approvals {
    /// The rules from `--approve` (`approve`), `--allow` (`allow`) and the program's own tools
    /// (`own`: every other tool is an MCP server's).
    pub fn new(approve: Vec<String>, allow: Vec<String>, own: Vec<String>) -> Self {
        let allow_all = allow.iter().any(|name| name == "all");
        let asking = ASKING_BUILT_INS
            .iter()
            .map(|name| (*name).to_owned())
            .chain(approve)
            .collect();
        Approvals {
            rules: Arc::new(Rules {
                asking,
                own: own.into_iter().collect(),
                allowed: allow.into_iter().collect(),
                allow_all,
            }),
            always: Arc::default(),
        }
    }

    /// The agent's policy: these rules, read at every call.
    pub fn policy(&self) -> ApprovalPolicy {
        let approvals = self.clone();
        ApprovalPolicy::new(move |call, tool| {
            let rules = &approvals.rules;
            if rules.allow_all
                || rules.allowed.contains(&call.name)
                || approvals.always().contains(&call.name)
            {
                return None;
            }
            if rules.asking.contains(&call.name) {
                return Some(format!("`{}` runs only when you approve it", call.name));
            }
            if !rules.own.contains(&call.name) && tool.annotations().read_only != Some(true) {
                return Some(format!(
                    "`{}` is an MCP server's tool not marked read-only: it runs only when you approve it",
                    call.name
                ));
            }
            ApprovalPolicy::tool_default(call, tool)
        })
    }

    fn always(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.always.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks about each pending call in turn; the end of input denies the rest. Ctrl-C stops the run
    /// (as the banner says): `None`, and no call runs.
    pub fn ask(
        &self,
        input: &mut Input,
        out: &mut Renderer,
        pending: &[PendingApproval],
    ) -> Option<Vec<(String, Decision)>> {
        let mut decisions = Vec::new();
        let mut stopped = None;
        for waiting in pending {
            if let Some(reason) = &stopped {
                decisions.push((waiting.call_id.clone(), Decision::deny(reason)));
                continue;
            }
            match self.ask_one(input, out, waiting) {
                Ok(decision) => decisions.push((waiting.call_id.clone(), decision)),
                Err(None) => return None,
                Err(Some(reason)) => {
                    decisions.push((waiting.call_id.clone(), Decision::deny(&reason)));
                    stopped = Some(reason);
                }
            }
        }
        Some(decisions)
    }

    /// One call's decision, or why there was none (`None`: Ctrl-C, the run stops).
    fn ask_one(
        &self,
        input: &mut Input,
        out: &mut Renderer,
        waiting: &PendingApproval,
    ) -> Result<Decision, Option<String>> {
        // Everything the call would run with, escaped: what the person approves is what runs.
        let question = format!(
            "allow {}({})? [y]es / [n]o / [a]lways / [e]dit: ",
            safe::line(&waiting.tool_name),
            approval_arguments(&waiting.arguments)
        );
        loop {
            let answer = match input.ask(&question, "") {
                Line::Text(answer) => answer,
                Line::Interrupted => return Err(None),
                Line::End => return Err(Some("the input ended before an answer".into())),
            };
            match answer.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return Ok(Decision::Approve),
                "n" | "no" => {
                    out.note(&format!("[{} denied]", waiting.tool_name));
                    return Ok(Decision::deny("the user said no"));
                }
                "a" | "always" => {
                    self.always().insert(waiting.tool_name.clone());
                    out.note(&format!(
                        "[{} runs unasked for the rest of this session]",
                        waiting.tool_name
                    ));
                    return Ok(Decision::AlwaysApprove);
                }
                "e" | "edit" => {
                    if let Some(arguments) = edited(input, out, &waiting.arguments).map_err(Some)? {
                        return Ok(Decision::ApproveWith { arguments });
                    }
                }
                _ => out.error("answer y (run it), n (do not), a (always run this tool) or e (edit the arguments)"),
            }
        }
    }
}

/// The arguments as the person edits them (a JSON object); `None` when they gave up on editing.
fn edited(
    input: &mut Input,
    out: &mut Renderer,
    arguments: &Value,
) -> Result<Option<Value>, String> {
    let mut text = safe::json(arguments);
    loop {
        text = match input.ask("arguments (JSON): ", &text) {
            Line::Text(text) => text,
            Line::Interrupted => return Ok(None),
            Line::End => return Err("the input ended before an answer".into()),
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(value) if value.is_object() => return Ok(Some(value)),
            Ok(_) => out.error("the arguments must be a JSON object, e.g. {\"command\": \"ls\"}"),
            Err(error) => out.error(&format!("not valid JSON ({error}); edit them again")),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use yiem_core::{
        exec::ToolCall,
        tool::{AgentTool, ToolAnnotations},
    };

    use super::*;

    fn tool(name: &str, read_only: Option<bool>) -> AgentTool {
        AgentTool::builder(name)
            .description("A tool.")
            .annotations({
                let mut hints = ToolAnnotations::new();
                hints.read_only = read_only;
                hints
            })
            .handler(|_ctx, _args| async { yiem_core::tool::AgentToolResult::text("ok") })
            .build()
            .unwrap()
    }

    #[test]
    fn a_tool_that_is_not_the_programs_own_asks_unless_read_only_whenever_it_arrived() {
        let approvals = Approvals::new(Vec::new(), Vec::new(), vec!["read".into(), "note".into()]);
        let policy = approvals.policy();
        let asks = |name: &str, read_only: Option<bool>| {
            policy.check(&ToolCall::new("c", name, json!({})), &tool(name, read_only))
        };
        // Own tools: as their rules say.
        assert_eq!(asks("read", Some(true)), None);
        assert_eq!(asks("note", None), None);
        assert!(asks("bash", None).is_some());
        // A tool an MCP server added after the start (with `list_changed`): asks, unless read-only.
        assert_eq!(
            asks("deploy", None).as_deref(),
            Some(
                "`deploy` is an MCP server's tool not marked read-only: it runs only when you approve it"
            )
        );
        assert!(asks("deploy", Some(false)).is_some());
        assert_eq!(asks("lookup", Some(true)), None);
        // `--allow` still lets one run unasked.
        let allowed = Approvals::new(Vec::new(), vec!["deploy".into()], Vec::new()).policy();
        assert_eq!(
            allowed.check(
                &ToolCall::new("c", "deploy", json!({})),
                &tool("deploy", None)
            ),
            None
        );
    }
}
