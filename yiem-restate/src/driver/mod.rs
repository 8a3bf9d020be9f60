//! The durable driver: performs the agent protocol of [`AgentRun`] — the same step machine, transitions
//! and events as the in-process [`Agent`](yiem_core::agent::Agent) — inside a Restate handler. Each model call is
//! a journaled step (`ctx.run`), and so is each tool call: a batch runs on the agent's one executor exactly
//! as in process (its parallel calls at once, under the executor's cap and order), each call's run recorded
//! through a [`CallJournal`] as a step of its own. The mailbox is read with a journaled call between
//! steps, and a run that needs approval, or waits on a tool's question, waits on an awakeable. Everything else is a pure function of what
//! the journal returns, so a replay after a crash walks the same path without calling the model or a tool
//! again; the few messages the run stamps itself take a journaled time. After every step the run is saved
//! by appending (see [`store`](crate::store)).

#[cfg(feature = "code-mode")]
mod program;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use restate_sdk::prelude::*;
use yiem_core::llm::stream_reply;
use yiem_core::{
    agent::{AgentRun, NextTurnContext, RunStop, Step},
    exec::{CallJournal, CallRecord, CancellationToken, PlannedCall, ToolCall, ToolExecutor},
    llm::Model,
    message::{AgentMessage, AssistantMessage, StopReason},
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
}

impl Driver<'_, '_> {
    /// Runs `run` until it stops, saving it after every step. A wait for approval ends the drive as it
    /// does in process (`AgentEnd`), and the decisions begin the next (`AgentStart`), the invocation going
    /// on: `added` collects the messages of every drive.
    pub(crate) async fn drive(
        &self,
        run: &mut AgentRun,
        saved: &mut Saved,
        added: &mut Vec<AgentMessage>,
    ) -> Result<RunStop, HandlerError> {
        // A rewrite by a hook not saved yet: the step before a wait is saved with the wait.
        let mut unsaved_rewrite = false;
        loop {
            self.read_mail(run).await?;
            let step = run.next_step();
            self.emit(run);
            let rewritten = match step {
                Step::CallModel => {
                    self.call_model(run).await?;
                    false
                }
                Step::RunTools { assistant, plan } => self.run_tools(run, assistant, plan).await?,
                Step::Stopped(RunStop::AwaitingApproval { pending }) => {
                    added.extend(run.end());
                    self.emit(run);
                    // Saved once the inbox takes decisions: whoever reads the run waiting can decide.
                    let rewritten = std::mem::take(&mut unsaved_rewrite);
                    let answer = self
                        .await_answer(pending, Vec::new(), || self.save(run, saved, rewritten))
                        .await?;
                    run.begin();
                    self.emit(run);
                    self.take_answer(run, answer).await?;
                    false
                }
                Step::Stopped(RunStop::AwaitingAnswer { questions }) => {
                    added.extend(run.end());
                    self.emit(run);
                    // Saved once the inbox takes answers: whoever reads the run waiting can answer.
                    let rewritten = std::mem::take(&mut unsaved_rewrite);
                    let answer = self
                        .await_answer(Vec::new(), questions, || self.save(run, saved, rewritten))
                        .await?;
                    run.begin();
                    self.emit(run);
                    self.take_answer(run, answer).await?;
                    false
                }
                Step::Stopped(stop) => {
                    self.save(run, saved, unsaved_rewrite);
                    return Ok(stop);
                }
                _ => {
                    let stop = RunStop::Error {
                        message: "the durable driver met a step it does not know".into(),
                    };
                    run.stop(stop.clone());
                    self.save(run, saved, unsaved_rewrite);
                    return Ok(stop);
                }
            };
            // A run that now waits (a call needs approval, a tool asked) is saved only once the inbox
            // takes the answer (above): saved earlier, whoever reads it waiting could answer before the
            // inbox knows what waits, and be refused.
            if matches!(
                run.stopped(),
                Some(RunStop::AwaitingApproval { .. } | RunStop::AwaitingAnswer { .. })
            ) {
                unsaved_rewrite |= rewritten;
                continue;
            }
            self.save(run, saved, rewritten);
        }
    }

    /// Emits the events the run's last transitions caused.
    pub(crate) fn emit(&self, run: &mut AgentRun) {
        let events = self.config.agent.events();
        for event in run.take_events() {
            events.emit(event);
        }
    }

    fn save(&self, run: &AgentRun, saved: &mut Saved, rewritten: bool) {
        let bytes = store::save(self.ctx, run, saved, rewritten);
        tracing::debug!(conversation = %self.key, bytes, "the run was saved");
    }

    fn inbox(&self) -> AgentInboxClient<'_> {
        self.ctx.object_client::<AgentInboxClient>(self.key.clone())
    }

    /// The time, journaled: for the transitions that stamp a message themselves (an abort's error results,
    /// a terminated run's reply), so that a replay saves the very same run.
    async fn now(&self, name: &str) -> Result<u64, HandlerError> {
        let now = self
            .ctx
            .run(|| async {
                Ok(std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |since| since.as_millis() as u64))
            })
            .name(name.to_owned())
            .await?;
        Ok(now)
    }

    /// Applies `change` to the run with the clock set to a journaled time.
    async fn stamped(
        &self,
        run: &mut AgentRun,
        name: &str,
        change: impl FnOnce(&mut AgentRun),
    ) -> Result<(), HandlerError> {
        let now = self.now(name).await?;
        run.set_clock(Some(now));
        change(run);
        run.set_clock(None);
        Ok(())
    }

    /// Moves what came in since the last step into the run: steering, follow-ups, an abort.
    async fn read_mail(&self, run: &mut AgentRun) -> Result<(), HandlerError> {
        let Json(mail) = self.inbox().take().call().await?;
        for mail in mail {
            match mail {
                Mail::Steer { message } => run.steer([message]),
                Mail::FollowUp { message } => run.follow_up([message]),
                Mail::Abort => {
                    self.stamped(run, "abort", |run| run.interrupt("the run was aborted"))
                        .await?;
                    self.emit(run);
                }
            }
        }
        Ok(())
    }

    /// Before a run starts: queued messages go into it; an abort sent while no run was active is
    /// dropped (it was meant for a run that had already stopped).
    pub(crate) async fn read_mail_before_start(
        &self,
        run: &mut AgentRun,
    ) -> Result<(), HandlerError> {
        let Json(mail) = self.inbox().take().call().await?;
        for mail in mail {
            match mail {
                Mail::Steer { message } => run.steer([message]),
                Mail::FollowUp { message } => run.follow_up([message]),
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

    async fn call_model(&self, run: &mut AgentRun) -> Result<(), HandlerError> {
        let config = self.config;
        let turn = run.turns().saturating_add(1);
        let agent = &config.agent;
        let (context, offered) = agent.context(run.system_prompt(), run.messages());
        let request = agent.model_request(context, run.loaded_tools());
        let model = Arc::clone(&self.model);
        let name = model_step_name(turn);
        let events = agent.events();
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
            // The retries are used up: the run stops with the model's error, as in process.
            Err(error) => AssistantMessage::failed(error.message()),
        };
        self.observe(name, StepKind::Model { turn });
        run.model_replied(reply, |call| agent.needs_approval(&offered, call));
        self.emit(run);
        Ok(())
    }

    /// Runs the batch on the agent's executor, each call's run a journaled step; then the turn hook.
    /// Whether the hook rewrote the conversation.
    async fn run_tools(
        &self,
        run: &mut AgentRun,
        assistant: AssistantMessage,
        plan: Vec<PlannedCall>,
    ) -> Result<bool, HandlerError> {
        let agent = &self.config.agent;
        let (_, offered) = agent.context(run.system_prompt(), run.messages());
        // Without an elicitation handler a tool's question pauses the run, as in process.
        let answered = run.question_answers();
        let round = answered.len();
        let (pausing, asked) = self.executor.pausing_on_questions(answered).unzip();
        let journal = ToolJournal {
            driver: self,
            turn: run.turns(),
            calls: plan
                .iter()
                .map(|planned| planned.call().id.clone())
                .collect(),
            recorded: tokio::sync::watch::channel(0).0,
            #[cfg(feature = "code-mode")]
            programs: agent.code_mode_setting().is_some(),
        };
        let executor = pausing.as_ref().unwrap_or(&self.executor);
        // With code mode, the programs that paused resume (as in process), and each call of a program
        // is a step of its own, which the handler runs while the batch goes on (see `program`).
        #[cfg(feature = "code-mode")]
        let (executor, served) = {
            let executor = agent.ready_programs(executor, run, &plan);
            match journal.programs {
                true => {
                    let (programs, served) = program::ProgramCalls::channel();
                    (executor.journaling_program_calls(programs), Some(served))
                }
                false => (executor, None),
            }
        };
        let never_cancelled = CancellationToken::new();
        let batch = executor.execute_plan_journaled(
            &offered,
            plan,
            Some(Arc::new(assistant.clone())),
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
        let batch = batch.await;
        let results = batch.messages.clone();
        // The questions the calls stopped at, journaled: a replay gets the recorded calls' results
        // without running them, so nothing would ask again. Only a batch whose results show a stop has
        // the step (the results are journaled, so a replay decides the same).
        let questions = match asked {
            Some(asked) if batch.stopped_at_questions() => {
                let Json(questions) = self
                    .ctx
                    .run(|| async move { Ok(Json(asked.take())) })
                    .name(format!("turn {} questions {round}", run.turns()))
                    .await?;
                questions
            }
            _ => Vec::new(),
        };
        if batch.terminate {
            self.stamped(run, "terminate", |run| {
                run.tools_ran_asking(batch.messages, true, questions)
            })
            .await?;
        } else {
            run.tools_ran_asking(batch.messages, false, questions);
        }
        self.emit(run);
        if run.stopped().is_some() || !agent.has_next_turn_hook() {
            return Ok(false);
        }
        let context = NextTurnContext::new(assistant, results, run.messages().to_vec());
        let Some(update) = agent.next_turn(&context) else {
            return Ok(false);
        };
        let (model, rewritten) = update.apply(run);
        if model.is_some() {
            tracing::warn!(
                conversation = %self.key,
                "prepare_next_turn gave a model; a durable agent makes its model with its factory, so it is ignored"
            );
        }
        Ok(rewritten)
    }

    /// Waits, suspended, for the decisions on `pending` or the answers to `questions` (or an abort):
    /// the inbox is told what waits, then `registered` runs (the run is saved as waiting), then the wait
    /// begins.
    async fn await_answer(
        &self,
        pending: Vec<yiem_core::agent::PendingApproval>,
        questions: Vec<yiem_core::agent::PendingQuestion>,
        registered: impl FnOnce(),
    ) -> Result<Answer, HandlerError> {
        let (awakeable, answer) = self.ctx.awakeable::<Json<Answer>>();
        tracing::info!(
            conversation = %self.key,
            approvals = pending.len(),
            questions = questions.len(),
            "the run waits for a person"
        );
        self.inbox()
            .wait(Json(Waiting {
                awakeable,
                pending,
                questions,
            }))
            .call()
            .await?;
        registered();
        let Json(answer) = answer.await?;
        Ok(answer)
    }

    /// Gives the run the answer to its wait: the decisions, or an abort.
    async fn take_answer(&self, run: &mut AgentRun, answer: Answer) -> Result<(), HandlerError> {
        match answer {
            Answer::Decided { decisions } => {
                if let Err(error) = run.decide(decisions) {
                    // The mailbox checked the decisions against the same calls; if the run still
                    // disagrees it keeps waiting, and says why.
                    tracing::warn!(conversation = %self.key, %error, "decisions refused");
                }
            }
            Answer::Answered { answers } => {
                for given in answers {
                    if let Err(error) = run.answer(&given.call_id, &given.key, given.answer) {
                        // The mailbox checked the answers against the same questions; if the run
                        // still refuses one it keeps waiting, and says why.
                        tracing::warn!(conversation = %self.key, %error, "answer refused");
                    }
                }
            }
            Answer::Abort => {
                // As in process: no waiting call runs, and each gets a result that says so.
                self.stamped(run, "abort", |run| {
                    run.give_up_waiting("the run was aborted")
                })
                .await?;
                self.emit(run);
            }
        }
        Ok(())
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
