//! Code mode: the model writes one small program that calls many tools, a sandbox runs it, and only what
//! the program prints comes back. [`CodeMode`] makes the `run_code` tool; every call the program makes
//! goes through the same [`ToolExecutor`] and pipeline as a call the model makes directly — the lookup,
//! the argument check, the hooks, the time limit, cancellation, the events and one result per call.
//!
//! # The interpreter
//!
//! QuickJS, through `rquickjs` 0.14 (behind the `code-mode` feature), chosen over Monty (pydantic's
//! sandboxed Python interpreter in Rust) for three reasons:
//!
//! - **Memory is limited per program.** QuickJS allocates through an allocator the host gives each
//!   runtime, so yiem counts and refuses a program's allocations itself. Monty 0.0.23 (the last version
//!   that builds on Rust 1.95; 1.4 needs 1.96) enforces its memory limit only through a process-wide global
//!   allocator the *executable* must install — a library cannot, and two programs would share one count.
//! - **The rest of the sandbox is small and explicit.** A QuickJS context starts with the language only
//!   (no `require`, no file system, no network, no timers): yiem leaves out `Date` and removes
//!   `Math.random`, so a program is deterministic, which is what resuming after an approval relies on.
//!   Interrupts are uncatchable, so a limit stops a program whatever it catches.
//! - **Its tree is small**: two crates of its own (the C engine is compiled by `cc`, about 15 s) against
//!   Monty's Ruff parser, `chrono`, `fancy-regex`, `num-bigint` and more; and `rquickjs` needs Rust 1.87,
//!   below the workspace's 1.89, where Monty would raise it to 1.95.
//!
//! Monty's snapshots (a paused interpreter serialized) are not needed: yiem resumes by replay (below).
//!
//! # The program's API
//!
//! `run_code`'s description declares the callable tools in TypeScript, made from their schemas (doc
//! comments from the descriptions, results typed from the output schema where there is one):
//! `await tools.get_weather({city: "Tokyo"})`. A call resolves to the result's structured content, or
//! else its text; a failed call (an argument error, an unknown tool, a tool error, a denial) rejects with
//! a `ToolError` whose `message` is the text the model would read. Arguments are sent as exactly the JSON
//! `JSON.stringify` makes of them, or refused with a `ToolError` naming the path of what JSON cannot carry
//! (nesting past 100 levels, an unpaired surrogate, a cycle, a BigInt, a function, `NaN`, a Promise...),
//! so a tool never runs with other arguments than the program's. A call the program starts and never
//! awaits still runs before the program ends (or, if the program stopped first, is named as cancelled in
//! its result). Calls started together
//! (`Promise.all([...])`) reach the executor as one batch and run under its rules (concurrently when every
//! tool is parallel). What `print`/`console.log` write and the value of the program's last expression are
//! the result of `run_code`.
//!
//! What is declared follows what each request sends ([`AgentConfig::request_tools`](crate::agent::AgentConfig::request_tools)):
//! the callable tools among the request's tools, so a deferred tool is declared once the run has loaded it
//! (see [`catalog`](crate::catalog)), and a tool registered after the agent was built is declared from
//! the next request on. The same tools give the same description, so the provider's prompt cache holds
//! while nothing changes. A program may still call a deferred tool that is not declared yet, by name: it
//! runs like any other and counts as loaded, as when the model calls one directly.
//!
//! # Limits
//!
//! [`CodeLimits`]: memory, run time (the interpreter's own, counted by the host; waiting for tools does not
//! count), tool calls and stack. A program that exceeds one stops with an error naming it
//! ([`LimitExceeded`]); catching the exception it sees does not save it. Output is held to its limit
//! without stopping the program: what it prints, returns and throws past it is left out, with a note
//! saying how much.
//!
//! # Calls from the program
//!
//! The call with id `c7` of `run_code` gives its program's calls the ids `c7/code/0`, `c7/code/1`, …, so
//! their events ([`AgentEvent::ToolExecutionStart`](crate::event::AgentEvent) and the rest) say where they come
//! from ([`program_call_of`]). By default every tool of the agent's store but `run_code` and the tools
//! marked `destructive` is callable from code ([`CodeMode::callable_tools`] names them instead); a call of
//! another tool is refused with an error that says to call it directly. Each call carries its caller,
//! `ToolCaller { provider: "yiem", kind: "run_code", id: <run_code call id> }`, for hooks and events.
//!
//! A [code-only](AgentTool::is_code_only) tool (`#[tool(code_only)]`, [`ToolBuilder::code_only`](crate::tool::ToolBuilder::code_only))
//! is callable from every program, and only from one: it is declared in `run_code`'s API but not sent
//! to the model as a tool of its own, and a direct call of it is refused with an error that says to
//! call it from `run_code`.
//!
//! # Approvals
//!
//! A call from the program that needs approval (the agent's [`ApprovalPolicy`], which sees the arguments
//! the tool will run with, after its `prepare` step, as for a direct call) pauses the run as a direct
//! call does: the agent stops with [`RunStop::AwaitingApproval`](crate::agent::RunStop), the pending call named by
//! its program call id. Resuming replays the program: it runs again from the start, and each call it made
//! before the pause gets its recorded result instead of running again (so every effect happens once); the
//! decided call then runs, or, denied, rejects with `the user denied this call: <reason>`. A tool approved
//! for the rest of the run ([`Decision::AlwaysApprove`]) no longer waits, whether the program or the
//! model calls it. The recorded
//! calls ([`ProgramPause`]) are part of the saved run, covered by its integrity tag; a run read without a
//! valid tag is refused rather than trusted to say what earlier calls returned.
//!
//! # Durable runs
//!
//! The durable runner (`yiem-restate`, with its `code-mode` feature) installs code mode from the same
//! configuration and readies each batch's programs as the in-process agent does
//! ([`AgentConfig::ready_programs`](crate::agent::AgentConfig::ready_programs)). It runs each batch on an executor
//! [journaling the programs' calls](crate::exec::ToolExecutor::journaling_program_calls): each batch of a
//! program's calls then goes through that [`CallJournal`](crate::exec::CallJournal), one record per call, and a
//! replay after a crash runs the program again with each earlier call's recorded result — the same
//! replay as after an approval, fed by the runner's journal instead of the saved run.
//
// This file holds [`CodeMode`], what programs may call and how `run_code` is made; its parts: `limits`
// (what a program may use), `runner` (one `run_code` call: the program run, its calls through the
// pipeline, a pause for approval and its replay, the result), `declare` (the tools as the program's API)
// and `sandbox` (QuickJS).

mod declare;
mod limits;
mod runner;
mod sandbox;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;

pub use self::limits::{CodeLimits, LimitExceeded};
use self::runner::Runner;
use crate::approval::{ApprovalPolicy, Decision};
use crate::decision::PlannedCall;
use crate::exec::executor::ToolExecutor;
pub use crate::program::{ProgramPause, ProgramResume, RecordedCall};
use crate::store::registry::{ToolList, ToolStore};
use crate::tool::definition::AgentTool;

/// The name of the code-mode tool.
pub const RUN_CODE: &str = crate::call::RUN_CODE;

/// The key of a paused program in the details of `run_code`'s result (see [`ProgramPause`]).
pub const PAUSE_KEY: &str = crate::call::PAUSE_KEY;

/// The `run_code` call a program call id belongs to: `Some("c7")` for `"c7/code/2"`.
///
/// ```
/// assert_eq!(yiem_core::code::program_call_of("c7/code/2"), Some("c7"));
/// assert_eq!(yiem_core::code::program_call_of("c7"), None);
/// ```
pub fn program_call_of(call_id: &str) -> Option<&str> {
    let (outer, number) = call_id.rsplit_once("/code/")?;
    number
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then_some(outer)
        .filter(|_| !number.is_empty())
}

/// Which tools a program may call.
#[derive(Clone, Debug)]
enum Callable {
    NotDestructive,
    Only(Vec<String>),
}

/// Code mode for an agent: the limits of its programs and which tools they may call. Give it to the agent
/// builder (`.code_mode(CodeMode::new())`), which adds the `run_code` tool; or make the tool yourself with
/// [`tool`](Self::tool).
///
/// ```
/// use serde_json::json;
/// use yiem_core::code::CodeMode;
/// use yiem_core::{
///     agent::{Agent, AgentSettings, RunStop}, llm::{ScriptedModel, ScriptedTurn},
///     store::ToolStore, tool,
/// };
///
/// /// The price of an item, in cents.
/// #[tool(parallel)]
/// async fn price(args: PriceArgs) -> String {
///     (args.item.len() * 100).to_string()
/// }
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct PriceArgs {
///     /// The item's name.
///     item: String,
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let tools = ToolStore::new("shop");
/// tools.register(price_tool()).unwrap();
/// let program = r#"
///     const prices = await Promise.all(["tea", "coffee"].map(item => tools.price({ item })));
///     print(prices.map(Number).reduce((a, b) => a + b));
/// "#;
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([
///         ScriptedTurn::tool_call("run_code", json!({ "code": program })),
///         ScriptedTurn::text("900 cents."),
///     ]))
///     .tools(tools)
///     .code_mode(CodeMode::new())
///     .build();
/// let outcome = agent.prompt("what do tea and coffee cost?").await;
/// assert_eq!(outcome.stop, RunStop::Finished);
/// let yiem_core::message::AgentMessage::ToolResult(result) = &outcome.messages[2] else { panic!() };
/// assert_eq!(result.text_content(), "900\n");
/// # });
/// ```
#[derive(Clone)]
pub struct CodeMode {
    limits: CodeLimits,
    callable: Callable,
    /// Programs to resume, by `run_code` call id (set by the agent before the call runs again).
    resumes: Arc<Mutex<HashMap<String, ProgramResume>>>,
    /// The `run_code` tool's declarations per request (see [`declare_in`](Self::declare_in)).
    declared: Arc<Mutex<Declared>>,
}

/// What [`CodeMode::declare_in`] keeps: the runner of the last `run_code` tool made (a request's copy of
/// the tool runs on it too), and the last list of tools it declared with what it made of it.
#[derive(Default)]
struct Declared {
    runner: Weak<Runner>,
    last: Option<(ToolList, ToolList)>,
}

impl Default for CodeMode {
    fn default() -> Self {
        CodeMode::new()
    }
}

impl fmt::Debug for CodeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeMode")
            .field("limits", &self.limits)
            .field("callable", &self.callable)
            .finish_non_exhaustive()
    }
}

impl CodeMode {
    /// Code mode with the default limits, every tool but the `destructive` ones callable.
    pub fn new() -> Self {
        CodeMode {
            limits: CodeLimits::default(),
            callable: Callable::NotDestructive,
            resumes: Arc::default(),
            declared: Arc::default(),
        }
    }

    /// The limits of each program.
    #[must_use]
    pub fn limits(mut self, limits: CodeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Only these tools are callable from code (destructive ones too, if named).
    #[must_use]
    pub fn callable_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.callable = Callable::Only(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Whether a program may call `tool`: a [code-only](AgentTool::is_code_only) tool always.
    pub fn is_callable(&self, tool: &AgentTool) -> bool {
        if tool.name() == RUN_CODE {
            return false;
        }
        if tool.is_code_only() {
            return true;
        }
        match &self.callable {
            Callable::NotDestructive => tool.annotations().destructive != Some(true),
            Callable::Only(names) => names.iter().any(|name| name == tool.name()),
        }
    }

    /// Resumes the program of `run_code` call `call_id` when that call runs next (for a `run_code` tool
    /// made with [`tool`](Self::tool) and run by hand; an agent's drivers resume their programs
    /// themselves).
    pub fn resume(&self, call_id: impl Into<String>, resume: ProgramResume) {
        lock(&self.resumes).insert(call_id.into(), resume);
    }

    /// Readies the `run_code` calls of a batch about to run (a driver's way in): each program runs knowing
    /// the tools the run approved for the rest of it (`always_approved`), and the paused ones among them
    /// (`resumes`: per call id, the journal as the saved run keeps it and the decisions) resume. What
    /// each program resumes with, by call id, for the batch's executor
    /// ([`Programs::resumes`]): of this batch alone, so that runs sharing a code mode never take each
    /// other's programs, whatever their call ids.
    pub(crate) fn ready(
        &self,
        plan: &[PlannedCall],
        resumes: Vec<(String, Value, BTreeMap<String, Decision>)>,
        always_approved: &[String],
    ) -> HashMap<String, ProgramResume> {
        let mut ready = HashMap::new();
        let mut resumes: HashMap<String, (Value, BTreeMap<String, Decision>)> = resumes
            .into_iter()
            .map(|(call_id, journal, decisions)| (call_id, (journal, decisions)))
            .collect();
        for planned in plan {
            let PlannedCall::Run { call } = planned else {
                continue;
            };
            if call.name != RUN_CODE {
                continue;
            }
            let resumed = resumes.remove(&call.id);
            if resumed.is_none() && always_approved.is_empty() {
                // A fresh program with nothing to know: none kept for a call that may never run.
                continue;
            }
            let (journal, decisions) = resumed.unwrap_or_default();
            let journal = serde_json::from_value(journal).unwrap_or_default();
            let resume = ProgramResume {
                journal,
                decisions,
                always_approved: always_approved.to_vec(),
            };
            ready.insert(call.id.clone(), resume);
        }
        ready
    }

    /// The `run_code` tool over `store`'s tools, running each program's calls on `executor` and asking
    /// `approval` which of them wait for a person. A program may call any callable tool the store holds
    /// when it runs (a deferred one too, loaded or not). Its description declares the callable tools that
    /// are not deferred, as they are now; an agent's requests declare instead the callable tools each
    /// request sends ([`AgentConfig::request_tools`](crate::agent::AgentConfig::request_tools)).
    pub fn tool(
        &self,
        store: &ToolStore,
        executor: ToolExecutor,
        approval: ApprovalPolicy,
    ) -> AgentTool {
        let runner = Arc::new(Runner {
            mode: self.clone(),
            store: store.clone(),
            executor,
            approval,
        });
        lock(&self.declared).runner = Arc::downgrade(&runner);
        let sent = crate::catalog::RequestTools::of(store, &[]).tools;
        runner.tool(self.description(&self.declared(&sent)))
    }

    /// The tools `run_code` declares among `sent`, the tools of a request: the callable ones. The one
    /// rule for what a program is told it can call.
    fn declared<'a>(&self, sent: &'a [AgentTool]) -> Vec<&'a AgentTool> {
        sent.iter().filter(|tool| self.is_callable(tool)).collect()
    }

    /// `sent`, the tools of a request, with `run_code` (if among them) declaring the callable tools of
    /// `sent`: the deferred ones the run has loaded, and those registered since the tool was made. The
    /// same list gives the same description, so the provider's prompt cache holds while nothing changes;
    /// asked again for the very list it was last asked for, it gives the very list it gave then.
    pub(crate) fn declare_in(&self, sent: &ToolList) -> ToolList {
        let Some(position) = sent.iter().position(|tool| tool.name() == RUN_CODE) else {
            return sent.clone();
        };
        let mut declared = lock(&self.declared);
        if let Some((input, output)) = &declared.last
            && input.is_same(sent)
        {
            return output.clone();
        }
        let description = self.description(&self.declared(sent));
        let runner = declared
            .runner
            .upgrade()
            .filter(|_| sent[position].description() != description);
        // Code-only tools are declared in the program's API, never sent as direct tools.
        let code_only = sent.iter().any(AgentTool::is_code_only);
        let output = match (runner, code_only) {
            (None, false) => sent.clone(),
            (runner, _) => {
                let mut tools = sent.to_vec();
                if let Some(runner) = runner {
                    tools[position] = runner.tool(description);
                }
                tools.retain(|tool| !tool.is_code_only());
                ToolList::new(tools)
            }
        };
        declared.last = Some((sent.clone(), output.clone()));
        output
    }

    fn description(&self, callable: &[&AgentTool]) -> String {
        let limits = &self.limits;
        format!(
            "Run a JavaScript program that calls tools, when a task needs many tool calls: only what it \
             prints comes back, not every intermediate result. It runs in a sandbox (no file system, \
             network, clock or randomness); top-level `await` works. Each tool is a method of `tools` \
             (declared below) that takes one object and returns a promise: `await` it, or start several \
             with `Promise.all` to run them together. A failed call rejects with a `ToolError` whose \
             message says what went wrong; catch it with try/catch. Print what you need with `print(...)` \
             or `console.log(...)`; the value of the last expression is shown too. Limits per program: \
             {} tool calls, {} bytes of output, {:?} of run time, {} MiB of memory.\n\n```ts\n{}```",
            limits.max_tool_calls,
            limits.max_output_bytes,
            limits.max_time,
            limits.max_memory_bytes >> 20,
            declare::declarations(callable),
        )
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
