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
//!   below the workspace's 1.88, where Monty would raise it to 1.95.
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

mod declare;
mod sandbox;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{Value, json};

use crate::approval::{ApprovalPolicy, Decision, PendingApproval, planned};
use crate::call::{ToolCall, ToolCaller};
use crate::decision::PlannedCall;
use crate::exec::executor::ToolExecutor;
pub use crate::program::{ProgramPause, ProgramResume, RecordedCall};
use crate::result::AgentToolResult;
use crate::store::registry::{ToolList, ToolStore};
use crate::tool::context::ToolContext;
use crate::tool::definition::AgentTool;

use sandbox::{FromProgram, Outcome, Program, ProgramError};

/// The name of the code-mode tool.
pub const RUN_CODE: &str = crate::call::RUN_CODE;

/// The key of a paused program in the details of `run_code`'s result (see [`ProgramPause`]).
pub const PAUSE_KEY: &str = crate::call::PAUSE_KEY;

/// What a program may use. Each exceeded limit stops the program with a [`LimitExceeded`] naming it.
///
/// ```
/// use std::time::Duration;
/// use yiem_core::code::CodeLimits;
///
/// let limits = CodeLimits::default().max_tool_calls(50).max_time(Duration::from_secs(2));
/// assert_eq!(limits.max_tool_calls, 50);
/// assert_eq!(CodeLimits::default().max_memory_bytes, 64 << 20);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeLimits {
    /// Memory the interpreter may allocate (default 64 MiB).
    pub max_memory_bytes: usize,
    /// Time the interpreter may run, waiting for tools not counted (default 10 s).
    pub max_time: Duration,
    /// Bytes of the program's result (default 64 KiB): what it printed, its value and its error's
    /// message are held to it together, the rest cut with a note saying how much was left out. Printing
    /// past it does not stop the program: what it prints then is left out, and it goes on.
    pub max_output_bytes: usize,
    /// Tool calls the program may make (default 1000).
    pub max_tool_calls: u32,
    /// The interpreter's stack (default 512 KiB): deeper recursion is a `RangeError`.
    pub max_stack_bytes: usize,
}

impl Default for CodeLimits {
    fn default() -> Self {
        CodeLimits {
            max_memory_bytes: 64 << 20,
            max_time: Duration::from_secs(10),
            max_output_bytes: 64 << 10,
            max_tool_calls: 1000,
            max_stack_bytes: 512 << 10,
        }
    }
}

impl CodeLimits {
    /// Sets [`max_memory_bytes`](Self::max_memory_bytes).
    #[must_use]
    pub fn max_memory_bytes(mut self, bytes: usize) -> Self {
        self.max_memory_bytes = bytes;
        self
    }

    /// Sets [`max_time`](Self::max_time).
    #[must_use]
    pub fn max_time(mut self, time: Duration) -> Self {
        self.max_time = time;
        self
    }

    /// Sets [`max_output_bytes`](Self::max_output_bytes).
    #[must_use]
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Sets [`max_tool_calls`](Self::max_tool_calls).
    #[must_use]
    pub fn max_tool_calls(mut self, calls: u32) -> Self {
        self.max_tool_calls = calls;
        self
    }

    /// Sets [`max_stack_bytes`](Self::max_stack_bytes).
    #[must_use]
    pub fn max_stack_bytes(mut self, bytes: usize) -> Self {
        self.max_stack_bytes = bytes;
        self
    }
}

/// The limit a program exceeded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitExceeded {
    /// It allocated more than its memory limit.
    #[error(
        "the program exceeded its memory limit ({} MiB); work on less data at once",
        bytes >> 20
    )]
    Memory {
        /// The limit.
        bytes: usize,
    },
    /// It ran longer than its time limit.
    #[error("the program exceeded its time limit ({limit:?} of run time); make it do less")]
    Time {
        /// The limit.
        limit: Duration,
    },
    /// It made more tool calls than its limit.
    #[error("the program exceeded its limit on tool calls ({calls}); make fewer calls per program")]
    ToolCalls {
        /// The limit.
        calls: u32,
    },
}

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

/// What `run_code` runs with.
struct Runner {
    mode: CodeMode,
    store: ToolStore,
    executor: ToolExecutor,
    approval: ApprovalPolicy,
}

impl Runner {
    /// A `run_code` tool whose programs run here, described by `description`.
    fn tool(self: &Arc<Self>, description: String) -> AgentTool {
        let runner = Arc::clone(self);
        AgentTool::builder(RUN_CODE)
            .label("Run Code")
            .description(description)
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "code": {
                        "type": "string",
                        "description": "The JavaScript program (top-level await allowed)."
                    }
                },
                "required": ["code"],
                "additionalProperties": false
            }))
            .handler(move |ctx: ToolContext, args: Value| {
                let runner = Arc::clone(&runner);
                async move {
                    let code = args
                        .get("code")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    runner.run(ctx, code).await
                }
            })
            .build()
            .expect("the run_code tool's definition is valid")
    }

    async fn run(&self, ctx: ToolContext, code: String) -> AgentToolResult {
        // The driver's, for this batch; else one given to the code mode by hand.
        let resume = ctx
            .programs()
            .and_then(|programs| programs.resumes.get(ctx.call_id()).cloned())
            .or_else(|| lock(&self.mode.resumes).remove(ctx.call_id()))
            .unwrap_or_default();
        let mut program = match Program::start(code, self.mode.limits.clone()) {
            Ok(program) => program,
            Err(error) => return AgentToolResult::error(error),
        };
        let mut journal: Vec<RecordedCall> = Vec::new();
        loop {
            // A cancelled call stops its program (dropping it interrupts the interpreter).
            let next = tokio::select! {
                next = program.next() => next,
                () = ctx.cancellation_token().cancelled() => {
                    return AgentToolResult::error("the program was cancelled");
                }
            };
            let requests = match next {
                FromProgram::Finished(finish) => {
                    return finished(finish, journal.len(), self.mode.limits.max_output_bytes)
                        .with_loaded_tools(self.loaded(&journal));
                }
                FromProgram::Calls(requests) => requests,
            };
            match self.batch(&ctx, requests, &resume, &mut journal).await {
                Ok(outcomes) => program.settle(outcomes),
                Err(Stop::Pause(pending)) => {
                    drop(program);
                    return paused(ProgramPause { pending, journal });
                }
                Err(Stop::Diverged(message)) => {
                    drop(program);
                    return AgentToolResult::error(message);
                }
            }
        }
    }

    /// The deferred tools the program called, in order: they count as loaded, as when the model calls
    /// one by name.
    fn loaded(&self, journal: &[RecordedCall]) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for recorded in journal {
            if self.store.is_deferred(&recorded.tool) && !names.contains(&recorded.tool) {
                names.push(recorded.tool.clone());
            }
        }
        names
    }

    /// Runs one batch of the program's calls: replayed ones get their recorded result, the others go
    /// through the executor as one batch — unless one needs a decision not given yet, which pauses the
    /// program before any of them runs.
    async fn batch(
        &self,
        ctx: &ToolContext,
        requests: Vec<sandbox::Request>,
        resume: &ProgramResume,
        journal: &mut Vec<RecordedCall>,
    ) -> Result<Vec<(u32, Outcome)>, Stop> {
        let mut outcomes = Vec::new();
        let mut plan = Vec::new();
        let mut pending = Vec::new();
        let mut asked: HashMap<u32, Value> = HashMap::new();
        let callable: Vec<AgentTool> = self
            .store
            .tools()
            .into_iter()
            .filter(|tool| self.mode.is_callable(tool))
            .collect();
        for request in requests {
            let call_id = format!("{}/code/{}", ctx.call_id(), request.index);
            if let Some(recorded) = resume.journal.get(request.index as usize) {
                if recorded.tool != request.tool || recorded.arguments != request.arguments {
                    return Err(Stop::Diverged(format!(
                        "the program was resumed after an approval and made call {} differently than \
                         before (`{}` now, `{}` then); a resumed program replays its earlier calls, so it \
                         must make the same calls in the same order: run it again as a new program",
                        request.index, request.tool, recorded.tool
                    )));
                }
                outcomes.push((request.index, outcome_of(recorded)));
                journal.push(recorded.clone());
                continue;
            }
            asked.insert(request.index, request.arguments.clone());
            // Made by the program: hooks and events see who made it, and a code-only tool runs.
            let call = ToolCall::new(call_id.clone(), request.tool.clone(), request.arguments)
                .caller(ToolCaller::new("yiem", RUN_CODE, ctx.call_id()));
            let tool = callable.iter().find(|tool| tool.name() == call.name);
            if tool.is_none() && self.store.contains(&call.name) {
                plan.push(PlannedCall::Refuse {
                    reason: format!(
                        "the tool `{}` cannot be called from code; call it directly as a tool",
                        call.name
                    ),
                    call,
                });
                continue;
            }
            let Some(tool) = tool else {
                plan.push(PlannedCall::Run { call });
                continue;
            };
            // The one gate, as for the model's own calls.
            let Some(reason) = self.approval.waits(&call, tool, &resume.always_approved) else {
                plan.push(PlannedCall::Run { call });
                continue;
            };
            match resume.decisions.get(&call_id) {
                None => pending.push(PendingApproval {
                    call_id,
                    tool_name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    reason,
                }),
                decision => plan.push(planned(call, decision)),
            }
        }
        if !pending.is_empty() {
            return Err(Stop::Pause(pending));
        }
        if plan.is_empty() {
            return Ok(outcomes);
        }
        let inner_store = self.store.offering(&callable);
        // On a durable driver each call is journaled: a replay gives it its recorded result.
        let batch = match ctx
            .programs()
            .and_then(|programs| programs.journal.as_ref())
        {
            Some(journal) => {
                self.executor
                    .execute_plan_journaled(
                        &inner_store,
                        plan,
                        None,
                        ctx.cancellation_token(),
                        journal.as_ref(),
                    )
                    .await
            }
            None => {
                self.executor
                    .execute_plan(&inner_store, plan, None, ctx.cancellation_token())
                    .await
            }
        };
        for message in batch.messages {
            let index = index_of(&message.tool_call_id);
            let result = &message.result;
            let (ok, value) = if result.is_error {
                (false, Value::String(result.text_content()))
            } else {
                (
                    true,
                    result
                        .structured_content()
                        .cloned()
                        .unwrap_or_else(|| Value::String(result.text_content())),
                )
            };
            let recorded = RecordedCall {
                call_id: message.tool_call_id.clone(),
                tool: message.tool_name.clone(),
                arguments: asked.remove(&index).unwrap_or_default(),
                ok,
                value,
            };
            outcomes.push((index, outcome_of(&recorded)));
            journal.push(recorded);
        }
        outcomes.sort_by_key(|(index, _)| *index);
        journal.sort_by_key(|recorded| index_of(&recorded.call_id));
        Ok(outcomes)
    }
}

/// The program's call number in a program call id.
fn index_of(call_id: &str) -> u32 {
    call_id
        .rsplit_once("/code/")
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or_default()
}

enum Stop {
    Pause(Vec<PendingApproval>),
    Diverged(String),
}

fn outcome_of(recorded: &RecordedCall) -> Outcome {
    if recorded.ok {
        Outcome::Value(recorded.value.clone())
    } else {
        Outcome::Error(match &recorded.value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
    }
}

fn paused(pause: ProgramPause) -> AgentToolResult {
    let names: Vec<String> = pause
        .pending
        .iter()
        .map(|p| format!("`{}` ({})", p.tool_name, p.call_id))
        .collect();
    let text = format!(
        "the program paused: {} waits for approval",
        names.join(", ")
    );
    let details = json!({ PAUSE_KEY: pause });
    AgentToolResult::error(text).with_details(details)
}

/// `run_code`'s result: what the program printed, then its value or its error. The program's own texts
/// (printed output, the value, the thrown error's message) are held together to `limit` bytes, the rest
/// cut with a note; calls it started that never ran are named as cancelled.
fn finished(finish: sandbox::Finish, calls: usize, limit: usize) -> AgentToolResult {
    let sandbox::Finish {
        output: mut text,
        left_out,
        outcome,
        cancelled,
    } = finish;
    let details = json!({ "code_mode": { "calls": calls } });
    let result = match outcome {
        Ok(value) => {
            if let Some(value) = value {
                text.push_str(&value);
            }
            text = cut(text, limit, left_out);
            if text.is_empty() {
                text = "the program printed nothing".into();
            }
            AgentToolResult::text(text)
        }
        Err(error) => {
            let room = limit.saturating_sub(text.len());
            text = cut(text, limit, left_out);
            let message = match error {
                ProgramError::Threw(message) => {
                    format!("the program failed: {}", cut(message, room, 0))
                }
                ProgramError::Limit(limit) => format!("the program stopped: {limit}"),
                ProgramError::Stuck => "the program stopped: it waits on a promise that nothing \
                                        settles (await only the promises of tool calls)"
                    .into(),
                ProgramError::Cancelled => "the program was cancelled".into(),
                ProgramError::Internal(message) => format!("the program could not run: {message}"),
            };
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&message);
            if !cancelled.is_empty() {
                text.push_str(&cancelled_calls(&cancelled));
            }
            AgentToolResult::error(text)
        }
    };
    result.with_details(details)
}

/// `text` cut to at most `limit` bytes (at a character boundary), with a note saying how much was left
/// out, counting `left_out` bytes left out before (printed past the limit).
fn cut(mut text: String, limit: usize, left_out: usize) -> String {
    let mut end = text.len().min(limit);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let left_out = left_out.saturating_add(text.len() - end);
    if left_out == 0 {
        return text;
    }
    text.truncate(end);
    text.push_str(&format!(
        "… ({left_out} more bytes left out: what a program prints, returns and throws is held to \
         {limit} bytes together)"
    ));
    text
}

/// The note naming the calls a program started that never ran, because it stopped first.
fn cancelled_calls(tools: &[String]) -> String {
    const SHOWN: usize = 10;
    let names: Vec<String> = tools
        .iter()
        .take(SHOWN)
        .map(|tool| format!("`{}`", tool.chars().take(64).collect::<String>()))
        .collect();
    let more = tools.len().saturating_sub(SHOWN);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!(
        "\n{} tool call(s) the program started were cancelled, since it stopped before they ran: {}{more}",
        tools.len(),
        names.join(", ")
    )
}
