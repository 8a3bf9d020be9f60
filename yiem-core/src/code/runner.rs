//! One `run_code` call: the program run in the sandbox, its calls through the pipeline (each batch
//! decided by the approval policy), a pause for approval and the replay that resumes it, and the result
//! the model reads.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::sandbox::{self, FromProgram, Outcome, Program, ProgramError};
use super::{CodeMode, PAUSE_KEY, ProgramPause, ProgramResume, RUN_CODE, RecordedCall, lock};
use crate::approval::{ApprovalPolicy, PendingApproval, planned};
use crate::call::{ToolCall, ToolCaller};
use crate::decision::PlannedCall;
use crate::exec::executor::ToolExecutor;
use crate::result::AgentToolResult;
use crate::store::registry::ToolStore;
use crate::tool::context::ToolContext;
use crate::tool::definition::AgentTool;

/// What `run_code` runs with.
pub(super) struct Runner {
    pub(super) mode: CodeMode,
    pub(super) store: ToolStore,
    pub(super) executor: ToolExecutor,
    pub(super) approval: ApprovalPolicy,
}

impl Runner {
    /// A `run_code` tool whose programs run here, described by `description`.
    pub(super) fn tool(self: &Arc<Self>, description: String) -> AgentTool {
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
