//! Code mode on the durable runner: a `run_code` call's program runs in the handler, outside any
//! journaled step, and each call the program makes is a journaled step of its own
//! (`turn 3 tool get_weather call_1/code/0`), followed by one step for the program's result
//! (`turn 3 tool run_code call_1`).
//!
//! # Why each inner call is a step, and the program is not
//!
//! Restate cannot nest steps: what runs inside `ctx.run` cannot journal anything itself. Wrapping the
//! whole `run_code` call in one step would journal only its final result, so a crash between two of the
//! program's calls would run every earlier call again. So the program runs outside a step and each of
//! its calls inside one (`ctx.run`, one per call, in the program's order): after a crash Restate replays
//! the invocation, the program runs again from its start, and each call it made before gets its
//! journaled result back without running — the same replay code mode uses to resume after an approval
//! ([`ProgramResume`](yiem_core::code::ProgramResume)), fed here by Restate's journal. This relies on
//! the program being deterministic, which the sandbox makes it (no clock, no randomness, no I/O but
//! the tools). One exception: a program cut short by a time limit (its own run time, or the executor's
//! limit on the `run_code` call) may get further on a replay, where its calls return at once; Restate
//! then reports a journal mismatch and retries the invocation, so give programs time limits they do
//! not reach in normal use.
//!
//! The program's calls reach the handler through [`ProgramCalls`], the [`CallJournal`] the run's
//! executor hands to `run_code` ([`ToolExecutor::journaling_program_calls`](yiem_core::exec::ToolExecutor::journaling_program_calls)):
//! the program runs on a task of its own, and `ctx.run` can only be polled by the handler, which
//! serves the calls ([`ToolJournal::serve_programs`]) while the batch runs. Everything else of a call
//! — the lookup, the argument check, the approval policy, the hooks, its events — is the same `Call`
//! path as in process; only where its result is recorded differs.
//!
//! # Order
//!
//! A step's journal entry is made when it is first polled, and a replay must make the same entries in
//! the same order. The batch's own calls make theirs when the batch starts; a program's calls make
//! theirs only once every earlier call of the batch is recorded, and in the program's order (the calls
//! a program starts together are made in call order and run at once). As for the batch's calls, at
//! most one step waits for Restate's acknowledgement at a time (see `ToolJournal`).
//!
//! # Approvals
//!
//! A program call that needs approval pauses the program before it runs, as in process: `run_code`'s
//! result says so, that result is journaled, and the run waits on an awakeable like any other approval.
//! After the decision the program runs again: its calls from before the pause get their results from
//! the saved run (code mode's replay), the decided call runs as a new step.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::Poll;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use restate_sdk::prelude::*;
use tokio::sync::{mpsc, oneshot, watch};
use yiem_core::{
    exec::{CallJournal, CallRecord, ToolCall},
    tool::AgentToolResult,
};

use super::{Recorded, ToolJournal, failed_step};
use crate::step::{StepKind, tool_step_name};

/// One call of a program, on its way to the handler to be run as a step.
pub(crate) struct ProgramCall {
    call: ToolCall,
    run: BoxFuture<'static, CallRecord>,
    reply: oneshot::Sender<CallRecord>,
}

/// The journal of a run's programs' calls: sends each to the handler, which runs it as a step, and
/// waits for its record.
pub(crate) struct ProgramCalls {
    calls: mpsc::UnboundedSender<ProgramCall>,
}

impl ProgramCalls {
    /// The journal, and what the handler serves ([`ToolJournal::serve_programs`]).
    pub(crate) fn channel() -> (Arc<ProgramCalls>, mpsc::UnboundedReceiver<ProgramCall>) {
        let (calls, served) = mpsc::unbounded_channel();
        (Arc::new(ProgramCalls { calls }), served)
    }
}

impl CallJournal for ProgramCalls {
    fn record<'a>(
        &'a self,
        call: &ToolCall,
        run: BoxFuture<'static, CallRecord>,
    ) -> BoxFuture<'a, CallRecord> {
        // Sent now, not when the future is first polled: the calls of a batch reach the handler in
        // call order.
        let (reply, record) = oneshot::channel();
        let sent = self.calls.send(ProgramCall {
            call: call.clone(),
            run,
            reply,
        });
        let tool = call.name.clone();
        Box::pin(async move {
            match (sent, record.await) {
                (Ok(()), Ok(record)) => record,
                _ => CallRecord::new(
                    AgentToolResult::error(format!(
                        "the durable step of tool `{tool}` did not run: the run's batch is over"
                    )),
                    0,
                ),
            }
        })
    }
}

/// The steps of one program: how many were made, and how many are recorded.
struct Sequence {
    next: usize,
    made: Arc<watch::Sender<usize>>,
    recorded: Arc<watch::Sender<usize>>,
}

impl Default for Sequence {
    fn default() -> Self {
        Sequence {
            next: 0,
            made: Arc::new(watch::channel(0).0),
            recorded: Arc::new(watch::channel(0).0),
        }
    }
}

impl ToolJournal<'_, '_, '_> {
    /// Runs a `run_code` call: its program outside any step (its calls are steps, served by
    /// [`serve_programs`](Self::serve_programs)), then its result as a step of its own.
    pub(crate) async fn record_program(
        &self,
        call: ToolCall,
        run: BoxFuture<'static, CallRecord>,
    ) -> CallRecord {
        let index = self.index_of(&call.id);
        let _recorded = Recorded {
            recorded: &self.recorded,
            index,
        };
        let record = run.await;
        let mut earlier = self.recorded.subscribe();
        let name = tool_step_name(self.turn, &call);
        let step = self
            .driver
            .ctx
            .run(move || async move {
                // Every earlier call's step recorded first (see `ToolJournal`).
                let _ = earlier.wait_for(|count| *count >= index).await;
                Ok(Json(record))
            })
            .name(name.clone());
        let record = match step.await {
            Ok(Json(record)) => record,
            Err(error) => failed_step(&call.name, &error),
        };
        let kind = StepKind::Tool {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            index,
            of: self.calls.len(),
        };
        self.driver.observe(name, kind);
        record
    }

    /// Runs each call the batch's programs send as a step, until the batch is over (never returns:
    /// the driver stops polling it when the batch has its results).
    pub(crate) async fn serve_programs(
        &self,
        mut calls: mpsc::UnboundedReceiver<ProgramCall>,
    ) -> Infallible {
        let mut programs: HashMap<usize, Sequence> = HashMap::new();
        let mut steps = FuturesUnordered::new();
        let mut open = true;
        loop {
            tokio::select! {
                call = calls.recv(), if open => match call {
                    Some(call) => {
                        let program = yiem_core::code::program_call_of(&call.call.id)
                            .map_or(0, |program| self.index_of(program));
                        let sequence = programs.entry(program).or_default();
                        let number = sequence.next;
                        sequence.next += 1;
                        let made = Arc::clone(&sequence.made);
                        let recorded = Arc::clone(&sequence.recorded);
                        steps.push(self.program_step(call, program, number, made, recorded));
                    }
                    None => open = false,
                },
                Some(()) = steps.next(), if !steps.is_empty() => {}
                else => return std::future::pending().await,
            }
        }
    }

    /// Call `number` of the program that is call `program` of the batch, as a step: made once every
    /// earlier call of the batch is recorded and the program's earlier steps are made; its result
    /// handed to Restate once the program's earlier steps are recorded.
    async fn program_step(
        &self,
        call: ProgramCall,
        program: usize,
        number: usize,
        made: Arc<watch::Sender<usize>>,
        recorded: Arc<watch::Sender<usize>>,
    ) {
        let ProgramCall { call, run, reply } = call;
        let _ = self
            .recorded
            .subscribe()
            .wait_for(|count| *count >= program)
            .await;
        let _ = made.subscribe().wait_for(|count| *count >= number).await;
        let mut earlier = recorded.subscribe();
        let name = tool_step_name(self.turn, &call);
        let step = self
            .driver
            .ctx
            .run(move || async move {
                let record = run.await;
                let _ = earlier.wait_for(|count| *count >= number).await;
                Ok(Json(record))
            })
            .name(name.clone());
        let mut step = std::pin::pin!(step);
        let _recorded = Recorded {
            recorded: &recorded,
            index: number,
        };
        // The first poll makes the step's journal entry; the program's next step may then make its own.
        let first = futures::poll!(step.as_mut());
        made.send_modify(|count| *count = (*count).max(number + 1));
        let outcome = match first {
            Poll::Ready(outcome) => outcome,
            Poll::Pending => step.await,
        };
        let record = match outcome {
            Ok(Json(record)) => record,
            Err(error) => failed_step(&call.name, &error),
        };
        self.driver.observe(
            name,
            StepKind::ProgramCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
            },
        );
        // The program may have stopped waiting (it was cancelled): nobody to tell.
        let _ = reply.send(record);
    }
}
