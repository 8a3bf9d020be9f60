//! The durable driver: runs the step machine of [`AgentRun`] inside a Restate handler. Each model call and
//! each tool call is a journaled step (`ctx.run`), the mailbox is read with a journaled call between steps,
//! and a run that needs approval waits on an awakeable. Everything else the driver does is a pure
//! function of what the journal returns, so a replay after a crash walks the same path without calling
//! the model or a tool again, and the run's state is saved to the object after every step.

use std::sync::Arc;

use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use yiem_core::llm::stream_reply;
use yiem_core::{
    AgentEvent, AgentRun, AssistantMessage, CancellationToken, Decision, ModelRequest, PlannedCall,
    RunStop, Step, StopReason, ToolResultMessage,
};

use crate::agent::Config;
use crate::inbox::{AgentInboxClient, Answer, Mail, Waiting};
use crate::step::{StepDone, StepKind, model_step_name, tool_step_name};

/// The object's state key that holds the run.
pub(crate) const RUN: &str = "run";

/// What a tool step journals: its result, and whether it asked the loop to stop.
#[derive(Serialize, Deserialize)]
struct ToolStep {
    result: ToolResultMessage,
    terminate: bool,
}

/// A model reply that failed: the step is retried by its policy.
#[derive(Debug, thiserror::Error)]
#[error("the model's reply failed: {0}")]
struct ModelFailed(String);

pub(crate) struct Driver<'a, 'ctx> {
    pub(crate) ctx: &'a ObjectContext<'ctx>,
    pub(crate) config: &'a Arc<Config>,
    pub(crate) key: String,
}

impl Driver<'_, '_> {
    /// Runs `run` until it stops, saving it after every step.
    pub(crate) async fn drive(&self, run: &mut AgentRun) -> Result<RunStop, HandlerError> {
        loop {
            self.read_mail(run).await?;
            let step = run.next_step();
            match step {
                Step::CallModel => self.call_model(run).await?,
                Step::RunTools { assistant, plan } => self.run_tools(run, assistant, plan).await?,
                Step::Stopped(RunStop::AwaitingApproval { pending }) => {
                    self.save(run);
                    self.await_decisions(run, pending).await?;
                }
                Step::Stopped(stop) => {
                    self.save(run);
                    return Ok(stop);
                }
                _ => {
                    let stop = RunStop::Error {
                        message: "the durable driver met a step it does not know".into(),
                    };
                    run.stop(stop.clone());
                    self.save(run);
                    return Ok(stop);
                }
            }
            self.save(run);
        }
    }

    fn save(&self, run: &AgentRun) {
        self.ctx.set(RUN, Json(run.clone()));
    }

    fn inbox(&self) -> AgentInboxClient<'_> {
        self.ctx.object_client::<AgentInboxClient>(self.key.clone())
    }

    /// Moves what came in since the last step into the run: steering, follow-ups, an abort.
    async fn read_mail(&self, run: &mut AgentRun) -> Result<(), HandlerError> {
        let Json(mail) = self.inbox().take().call().await?;
        for mail in mail {
            match mail {
                Mail::Steer { message } => run.steer([message]),
                Mail::FollowUp { message } => run.follow_up([message]),
                Mail::Abort => {
                    self.transition(run, "abort", |run| run.interrupt("the run was aborted"))
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// Applies `change` to the run inside a journaled step: for the few transitions that stamp a message
    /// with the clock (an abort's error results, a terminated run's reply), so that a replay saves the
    /// very same run instead of one with other timestamps (Restate checks that a replay writes the state
    /// it wrote before).
    async fn transition(
        &self,
        run: &mut AgentRun,
        name: &str,
        change: impl FnOnce(&mut AgentRun) + Send,
    ) -> Result<(), HandlerError> {
        let before = run.clone();
        let Json(after) = self
            .ctx
            .run(|| async move {
                let mut run = before;
                change(&mut run);
                Ok(Json(run))
            })
            .name(name.to_owned())
            .await?;
        *run = after;
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

    fn observe(&self, name: String, kind: StepKind) {
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
        let turn = run.turns() + 1;
        let events = &config.events;
        events.emit(AgentEvent::TurnStart);
        let request = ModelRequest {
            system_prompt: run.system_prompt().to_owned(),
            messages: run.messages().to_vec(),
            tools: config.tools.tool_list(),
        };
        let model = (config.model)(&self.key);
        let name = model_step_name(turn);
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
            Err(error) => AssistantMessage {
                stop_reason: StopReason::Error,
                error: Some(error.message().to_owned()),
                ..AssistantMessage::default()
            },
        };
        self.observe(name, StepKind::Model { turn });
        let ended = reply.tool_calls().next().is_none()
            || matches!(reply.stop_reason, StopReason::Error | StopReason::Aborted);
        let tools = &config.tools;
        let approval = &config.approval;
        run.model_replied(reply.clone(), |call| {
            tools
                .get(&call.name)
                .and_then(|tool| approval.check(call, &tool))
        });
        if ended {
            events.emit(AgentEvent::TurnEnd {
                message: Arc::new(reply),
                tool_results: Vec::new().into(),
            });
        }
        Ok(())
    }

    /// Runs the batch one call after another, each call its own step.
    async fn run_tools(
        &self,
        run: &mut AgentRun,
        assistant: AssistantMessage,
        plan: Vec<PlannedCall>,
    ) -> Result<(), HandlerError> {
        let config = self.config;
        let turn = run.turns();
        let shared = Arc::new(assistant.clone());
        let of = plan.len();
        let mut results = Vec::with_capacity(of);
        let mut terminate = of > 0;
        for (index, planned) in plan.into_iter().enumerate() {
            let call = planned.call().clone();
            let name = tool_step_name(turn, &call);
            let assistant = Arc::clone(&shared);
            let Json(step) = self
                .ctx
                .run(|| async move {
                    let mut batch = config
                        .executor()
                        .execute_plan(
                            &config.tools,
                            vec![planned],
                            Some(assistant),
                            &CancellationToken::new(),
                        )
                        .await;
                    let terminate = batch.terminate;
                    let result = batch.messages.pop().ok_or_else(|| {
                        TerminalError::new("the executor returned no result for a call")
                    })?;
                    Ok(Json(ToolStep { result, terminate }))
                })
                .name(name.clone())
                .await?;
            self.observe(
                name,
                StepKind::Tool {
                    call_id: call.id,
                    tool: call.name,
                    index,
                    of,
                },
            );
            terminate &= step.terminate;
            results.push(step.result);
        }
        if terminate {
            let results = results.clone();
            self.transition(run, "terminate", move |run| run.tools_ran(results, true))
                .await?;
        } else {
            run.tools_ran(results.clone(), false);
        }
        config.events.emit(AgentEvent::TurnEnd {
            message: shared,
            tool_results: results.into(),
        });
        Ok(())
    }

    /// Waits, suspended, for the decisions on `pending` (or an abort), and gives them to the run.
    async fn await_decisions(
        &self,
        run: &mut AgentRun,
        pending: Vec<yiem_core::PendingApproval>,
    ) -> Result<(), HandlerError> {
        let (awakeable, answer) = self.ctx.awakeable::<Json<Answer>>();
        tracing::info!(
            conversation = %self.key,
            waiting = pending.len(),
            "the run waits for approval"
        );
        self.inbox()
            .wait(Json(Waiting {
                awakeable,
                pending: pending.clone(),
            }))
            .call()
            .await?;
        let Json(answer) = answer.await?;
        match answer {
            Answer::Decided { decisions } => {
                if let Err(error) = run.decide(decisions) {
                    // The mailbox checked the decisions against the same calls; if the run still
                    // disagrees it keeps waiting, and says why.
                    tracing::warn!(conversation = %self.key, %error, "decisions refused");
                }
            }
            Answer::Abort => {
                let denied: Vec<(String, Decision)> = pending
                    .iter()
                    .map(|call| (call.call_id.clone(), Decision::deny("the run was aborted")))
                    .collect();
                self.transition(run, "abort", move |run| {
                    if run.decide(denied).is_ok() {
                        run.interrupt("the run was aborted");
                    }
                })
                .await?;
            }
        }
        Ok(())
    }
}
