//! The durable driver: performs the effects of yiem-core's drive loop ([`drive`](yiem_core::agent::drive())
//! — the one sequence of the agent protocol, the same as the in-process
//! [`Agent`](yiem_core::agent::Agent)'s) inside a Restate handler. Each model call is a journaled step
//! (`ctx.run`), and so is each tool call: a batch runs on the run's executor exactly as in process (its
//! parallel calls at once, under the executor's cap and order), each call's run recorded through a
//! [`CallJournal`] as a step of its own. The mailbox is read with a journaled call between steps; a wait
//! for decisions or answers is an awakeable; the times and questions the loop keeps are journaled
//! values. Everything else is a pure function of what the journal returns, so a replay after a crash
//! walks the same path without calling the model or a tool again. After every step the run is saved by
//! appending (see [`store`](crate::store)).

#[cfg(feature = "code-mode")]
mod program;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use restate_sdk::prelude::*;
use serde::{Serialize, de::DeserializeOwned};
use yiem_core::llm::{ModelRequest, stream_reply};
use yiem_core::{
    agent::{AgentRun, Batch, Effects, Mail as Arrived, Resumed, Waiting as Wait},
    event::AgentEvent,
    exec::{CallJournal, CallRecord, CancellationToken, ToolCall, ToolCallBatch, ToolExecutor},
    llm::Model,
    message::{AssistantMessage, StopReason},
};

use crate::agent::Config;
use crate::inbox::{AgentInboxClient, Answer, Mail, Waiting};
use crate::step::{StepDone, StepKind, model_step_name, tool_step_name};
use crate::store::{self, Saved};

/// A model reply that failed: the step is retried by its policy.
#[derive(Debug, thiserror::Error)]
#[error("the model's reply failed: {0}")]
struct ModelFailed(String);

pub(crate) struct Driver<'a, 'ctx> {
    pub(crate) ctx: &'a ObjectContext<'ctx>,
    pub(crate) config: &'a Arc<Config>,
    pub(crate) key: String,
    /// The model of this attempt of the run, made once by the agent's factory.
    pub(crate) model: Arc<dyn Model>,
    /// The run's executor: the agent's settings, with an order and a cap of the run's own, so the run's
    /// batches share its cap and conversations never wait for each other.
    pub(crate) executor: ToolExecutor,
    pub(crate) run: &'a mut AgentRun,
    pub(crate) saved: &'a mut Saved,
}

impl Driver<'_, '_> {
    fn inbox(&self) -> AgentInboxClient<'_> {
        self.ctx.object_client::<AgentInboxClient>(self.key.clone())
    }

    /// Before a run starts: queued messages go into it; an abort sent while no run was active is
    /// dropped (it was meant for a run that had already stopped).
    pub(crate) async fn read_mail_before_start(&mut self) -> Result<(), HandlerError> {
        let Json(mail) = self.inbox().take().call().await?;
        for mail in mail {
            match mail {
                Mail::Steer { message } => self.run.steer([message]),
                Mail::FollowUp { message } => self.run.follow_up([message]),
                Mail::Abort => tracing::info!(
                    conversation = %self.key,
                    "an abort sent while no run was active is dropped"
                ),
            }
        }
        Ok(())
    }

    pub(crate) fn observe(&self, name: String, kind: StepKind) {
        if let Some(observer) = &self.config.on_step {
            observer(&StepDone {
                conversation: self.key.clone(),
                name,
                kind,
            });
        }
    }
}

impl Effects for Driver<'_, '_> {
    type Error = HandlerError;

    fn run(&mut self) -> impl std::ops::DerefMut<Target = AgentRun> + '_ {
        &mut *self.run
    }

    fn emit(&mut self, event: AgentEvent) {
        self.config.agent.events().emit(event);
    }

    /// The mailbox, read with a journaled call.
    async fn mail(&mut self) -> Result<Arrived, HandlerError> {
        let Json(mail) = self.inbox().take().call().await?;
        let mut arrived = Arrived::default();
        for mail in mail {
            match mail {
                Mail::Steer { message } => arrived.steering.push(message),
                Mail::FollowUp { message } => arrived.follow_ups.push(message),
                Mail::Abort => arrived.abort = true,
            }
        }
        Ok(arrived)
    }

    /// The model's reply as a journaled step, retried by the agent's policy; once the retries are used
    /// up, the run stops with the model's error, as in process.
    async fn model_reply(
        &mut self,
        turn: u32,
        request: ModelRequest,
    ) -> Result<AssistantMessage, HandlerError> {
        let config = self.config;
        let model = Arc::clone(&self.model);
        let name = model_step_name(turn);
        let events = config.agent.events();
        let step = self
            .ctx
            .run(|| async move {
                let reply =
                    stream_reply(model.as_ref(), request, &CancellationToken::new(), events).await;
                if reply.stop_reason == StopReason::Error {
                    let error = reply.error.clone().unwrap_or_else(|| "no detail".into());
                    return Err(ModelFailed(error).into());
                }
                Ok(Json(reply))
            })
            .name(name.clone())
            .retry_policy(config.model_retry.clone())
            .await;
        let reply = match step {
            Ok(Json(reply)) => reply,
            Err(error) => AssistantMessage::failed(error.message()),
        };
        self.observe(name, StepKind::Model { turn });
        Ok(reply)
    }

    fn executor(&self) -> ToolExecutor {
        self.executor.clone()
    }

    /// Runs the batch with each call's run a journaled step; with code mode, each call of a program is
    /// a step of its own, which the handler runs while the batch goes on (see `program`).
    async fn run_batch(&mut self, batch: Batch) -> Result<ToolCallBatch, HandlerError> {
        let Batch {
            turn,
            tools,
            executor,
            plan,
            assistant,
            ..
        } = batch;
        let journal = ToolJournal {
            driver: &*self,
            turn,
            calls: plan
                .iter()
                .map(|planned| planned.call().id.clone())
                .collect(),
            recorded: tokio::sync::watch::channel(0).0,
            #[cfg(feature = "code-mode")]
            programs: self.config.agent.code_mode_setting().is_some(),
        };
        #[cfg(feature = "code-mode")]
        let (executor, served) = match journal.programs {
            true => {
                let (programs, served) = program::ProgramCalls::channel();
                (executor.journaling_program_calls(programs), Some(served))
            }
            false => (executor, None),
        };
        let never_cancelled = CancellationToken::new();
        let batch = executor.execute_plan_journaled(
            &tools,
            plan,
            Some(assistant),
            &never_cancelled,
            &journal,
        );
        #[cfg(feature = "code-mode")]
        let batch = async {
            let Some(served) = served else {
                return batch.await;
            };
            tokio::select! {
                batch = batch => batch,
                never = journal.serve_programs(served) => match never {},
            }
        };
        Ok(batch.await)
    }

    async fn journal<T>(&mut self, name: String, value: T) -> Result<T, HandlerError>
    where
        T: Serialize + DeserializeOwned + Send + 'static,
    {
        let Json(value) = self
            .ctx
            .run(|| async move { Ok(Json(value)) })
            .name(name)
            .await?;
        Ok(value)
    }

    /// Waits, suspended, on an awakeable: the inbox is told what waits, then the run is saved waiting
    /// (whoever reads it waiting can answer), then the wait begins.
    async fn wait(&mut self, waiting: Wait) -> Result<Option<Resumed>, HandlerError> {
        let (awakeable, answer) = self.ctx.awakeable::<Json<Answer>>();
        tracing::info!(
            conversation = %self.key,
            approvals = waiting.pending.len(),
            questions = waiting.questions.len(),
            "the run waits for a person"
        );
        self.inbox()
            .wait(Json(Waiting {
                awakeable,
                pending: waiting.pending,
                questions: waiting.questions,
            }))
            .call()
            .await?;
        self.save(waiting.rewritten);
        let Json(answer) = answer.await?;
        Ok(Some(match answer {
            Answer::Decided { decisions } => Resumed::Decided(decisions),
            Answer::Answered { answers } => Resumed::Answered(
                answers
                    .into_iter()
                    .map(|given| (given.call_id, given.key, given.answer))
                    .collect(),
            ),
            Answer::Abort => Resumed::Aborted,
        }))
    }

    fn save(&mut self, rewritten: bool) {
        let bytes = store::save(self.ctx, self.run, self.saved, rewritten);
        tracing::debug!(conversation = %self.key, bytes, "the run was saved");
    }

    fn set_model(&mut self, _model: Arc<dyn Model>) {
        tracing::warn!(
            conversation = %self.key,
            "prepare_next_turn gave a model; a durable agent makes its model with its factory, so it is ignored"
        );
    }
}

/// Records each call of a batch as a journaled step of its own (`turn 3 tool get_weather call_1`): the
/// call runs inside `ctx.run`, and a replay gets the recorded result without running it.
///
/// The calls of a parallel batch run at once, but their steps are *recorded* in call order: a call's step
/// hands its result to Restate only once every earlier call's step is recorded. restate-sdk 0.13 does not
/// support two `ctx.run` steps waiting for their acknowledgements at once (its `async_result_poll.rs`
/// says "async run ... is not supported by the rust sdk currently"): the input that acknowledges one can
/// be read by the other's future, and the first then waits for ever — seen as a stalled batch under load,
/// ended only by Restate's inactivity timeout and a replay. Recorded in order, at most one step waits for
/// its acknowledgement at a time, and the tools still run concurrently.
pub(crate) struct ToolJournal<'d, 'a, 'ctx> {
    pub(crate) driver: &'d Driver<'a, 'ctx>,
    pub(crate) turn: u32,
    /// The ids of the batch's calls, in order.
    pub(crate) calls: Vec<String>,
    /// How many of the batch's first calls have their step recorded.
    pub(crate) recorded: tokio::sync::watch::Sender<usize>,
    /// Whether the batch's `run_code` calls are code mode's programs, whose calls are steps of their
    /// own (see [`program`]).
    #[cfg(feature = "code-mode")]
    pub(crate) programs: bool,
}

impl ToolJournal<'_, '_, '_> {
    /// The place in the batch of the call `call_id`.
    pub(crate) fn index_of(&self, call_id: &str) -> usize {
        self.calls.iter().position(|id| id == call_id).unwrap_or(0)
    }
}

/// Marks a call's step recorded when its recording ends, however it ends (a dropped or failed step too),
/// so that the calls after it are never held back.
pub(crate) struct Recorded<'j> {
    pub(crate) recorded: &'j tokio::sync::watch::Sender<usize>,
    pub(crate) index: usize,
}

/// The record of a call whose step failed for good: a run with no retry policy is retried until it
/// succeeds, so this is the invocation's failure (it was cancelled), and the call gets it as its result.
pub(crate) fn failed_step(tool: &str, error: &TerminalError) -> CallRecord {
    CallRecord::new(
        yiem_core::tool::AgentToolResult::error(format!(
            "the durable step of tool `{tool}` failed: {}",
            error.message()
        )),
        0,
    )
}

impl Drop for Recorded<'_> {
    fn drop(&mut self) {
        let index = self.index;
        self.recorded
            .send_modify(|count| *count = (*count).max(index + 1));
    }
}

impl CallJournal for ToolJournal<'_, '_, '_> {
    fn record<'s>(
        &'s self,
        call: &ToolCall,
        run: Pin<Box<dyn Future<Output = CallRecord> + Send + 'static>>,
    ) -> Pin<Box<dyn Future<Output = CallRecord> + Send + 's>> {
        #[cfg(feature = "code-mode")]
        if self.programs && call.name == yiem_core::code::RUN_CODE {
            return Box::pin(self.record_program(call.clone(), run));
        }
        let name = tool_step_name(self.turn, call);
        let index = self.index_of(&call.id);
        let kind = StepKind::Tool {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            index,
            of: self.calls.len(),
        };
        let tool = call.name.clone();
        let mut earlier = self.recorded.subscribe();
        let step = self
            .driver
            .ctx
            .run(move || async move {
                let record = run.await;
                // Every earlier call's step recorded first (see the type's docs).
                let _ = earlier.wait_for(|count| *count >= index).await;
                Ok(Json(record))
            })
            .name(name.clone());
        Box::pin(async move {
            let _recorded = Recorded {
                recorded: &self.recorded,
                index,
            };
            let record = match step.await {
                Ok(Json(record)) => record,
                Err(error) => failed_step(&tool, &error),
            };
            self.driver.observe(name, kind);
            record
        })
    }
}
