//! The drive loop: the one place the agent protocol's sequence is written. Context → model request →
//! reply ([`AgentRun::model_replied`]) → a wait for decisions or answers → programs readied → the plan
//! executed → [`AgentRun::tools_ran_asking`] → the turn hook → the next turn.
//!
//! A driver performs the loop's [`Effects`] and holds no sequence of its own: [`Agent`](super::Agent)
//! performs them in process, the durable runner of `yiem-restate` as journaled steps. Every transition
//! the loop applies emits the events it caused through [`Effects::emit`], so no driver takes events by
//! hand; `Step` is matched here alone, so a new step is a compile error in this one place.

use std::future::Future;
use std::ops::DerefMut;
use std::sync::Arc;

use serde::{Serialize, de::DeserializeOwned};

use super::{AgentConfig, AgentRun, NextTurnContext, RunOutcome, RunStop, Step};
use crate::approval::{Decision, PendingApproval};
use crate::ask::elicit::ElicitationAnswer;
use crate::ask::questions::PendingQuestion;
use crate::call::now_millis;
use crate::decision::PlannedCall;
use crate::event::AgentEvent;
use crate::exec::executor::{ToolCallBatch, ToolExecutor};
use crate::llm::{Model, ModelRequest};
use crate::message::{AssistantMessage, UserMessage};
use crate::result::Usage;
use crate::store::registry::ToolStore;

/// What a driver does for the [`drive`](drive()) loop: the run it drives, and the work that reaches outside the
/// step machine. Each effect is the driver's to perform as it must (in process, or as a journaled step
/// that a replay returns without doing it again); none decides what comes next.
pub trait Effects {
    /// How an effect fails (a driver in process never fails: [`std::convert::Infallible`]).
    type Error;

    /// The run being driven. The loop holds it only between effects, never across one.
    fn run(&mut self) -> impl DerefMut<Target = AgentRun> + '_;

    /// Emits an event a transition of the run caused, in order.
    fn emit(&mut self, event: AgentEvent);

    /// What came in since the last step: messages to steer with or to follow up with, an abort.
    fn mail(&mut self) -> impl Future<Output = Result<Mail, Self::Error>>;

    /// Asks the model: `request` is the request of model call `turn` of the run (counted from 1). A
    /// failed reply is a reply with stop reason `error`.
    fn model_reply(
        &mut self,
        turn: u32,
        request: ModelRequest,
    ) -> impl Future<Output = Result<AssistantMessage, Self::Error>>;

    /// The executor a batch runs on before the loop readies it (its programs, its questions).
    fn executor(&self) -> ToolExecutor;

    /// Runs a batch: one result per planned call, in plan order.
    fn run_batch(
        &mut self,
        batch: Batch,
    ) -> impl Future<Output = Result<ToolCallBatch, Self::Error>>;

    /// Keeps `value` under `name`, as a durable driver journals it: a replay gets the kept value back
    /// (the time a transition stamps its messages with, the questions a batch stopped at). In process
    /// this is `value`.
    fn journal<T>(
        &mut self,
        name: String,
        value: T,
    ) -> impl Future<Output = Result<T, Self::Error>>
    where
        T: Serialize + DeserializeOwned + Send + 'static;

    /// Waits for the decisions or answers the run waits on ([`Waiting`]), saving the run once whoever
    /// answers can see it waiting. `None`: this driver does not wait in place, and the drive ends with
    /// the wait as its stop (the caller resumes it with a new drive).
    fn wait(
        &mut self,
        waiting: Waiting,
    ) -> impl Future<Output = Result<Option<Resumed>, Self::Error>>;

    /// Saves the run after a step; `rewritten`: its conversation was replaced since the last save.
    fn save(&mut self, rewritten: bool);

    /// Uses `model` from the next model call on (the turn hook gave it).
    fn set_model(&mut self, model: Arc<dyn Model>);

    /// Whether the drive was cancelled (an abort in process): the run stops after the batch that ran.
    fn cancelled(&self) -> bool {
        false
    }

    /// What the tools' requests to the run's own model used since the last call, to count in the run.
    fn sampled(&mut self) -> Vec<Usage> {
        Vec::new()
    }
}

/// What came in for a run between two steps ([`Effects::mail`]).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Mail {
    /// Messages to add before the next model call.
    pub steering: Vec<UserMessage>,
    /// Messages to send when the run would otherwise finish.
    pub follow_ups: Vec<UserMessage>,
    /// Abort the run: a batch about to run gets a cancelled result for every call.
    pub abort: bool,
}

/// A batch to run ([`Effects::run_batch`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct Batch {
    /// The model call whose reply made the calls.
    pub turn: u32,
    /// The tools offered with that reply: the only ones the calls may run.
    pub tools: ToolStore,
    /// The executor to run them on, readied by the loop.
    pub executor: ToolExecutor,
    /// The calls, each to run or to refuse.
    pub plan: Vec<PlannedCall>,
    /// The reply the calls belong to.
    pub assistant: Arc<AssistantMessage>,
}

/// What a run waits on ([`Effects::wait`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Waiting {
    /// Calls waiting for a decision.
    pub pending: Vec<PendingApproval>,
    /// Tools' questions waiting for an answer.
    pub questions: Vec<PendingQuestion>,
    /// Whether the conversation was replaced since the run was last saved.
    pub rewritten: bool,
}

/// How a wait ended ([`Effects::wait`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Resumed {
    /// Decisions, by call id.
    Decided(Vec<(String, Decision)>),
    /// Answers: the call id, the question's key, the answer.
    Answered(Vec<(String, String, ElicitationAnswer)>),
    /// The run was aborted while it waited.
    Aborted,
}

/// Drives the run of `effects` until it stops, starting it with `prompts` if given: the agent
/// protocol's one sequence (see the module docs). Gives the messages the drive added and why it
/// stopped.
pub async fn drive<E: Effects>(
    config: &AgentConfig,
    effects: &mut E,
    prompts: Option<Vec<UserMessage>>,
) -> Result<RunOutcome, E::Error> {
    let mut added = Vec::new();
    transition(effects, |run| {
        run.begin();
        if let Some(prompts) = prompts {
            run.start(prompts);
        }
    });
    // The tools offered with the last reply (what its calls may run); worked out again after a wait.
    let mut offered: Option<ToolStore> = None;
    // A rewrite by the turn hook not saved yet: the step before a wait is saved with the wait.
    let mut unsaved_rewrite = false;
    let stop = loop {
        let mail = effects.mail().await?;
        {
            let mut run = effects.run();
            run.steer(mail.steering);
            run.follow_up(mail.follow_ups);
        }
        if mail.abort {
            stamped(effects, "abort", |run| run.interrupt("the run was aborted")).await?;
        }
        let rewritten = match transition(effects, AgentRun::next_step) {
            Step::CallModel => {
                offered = Some(call_model(config, effects).await?);
                false
            }
            Step::RunTools { assistant, plan } => {
                let tools = match offered.take() {
                    Some(tools) => tools,
                    None => context(config, effects).1,
                };
                run_tools(config, effects, assistant, plan, tools).await?
            }
            Step::Stopped(
                stop @ (RunStop::AwaitingApproval { .. } | RunStop::AwaitingAnswer { .. }),
            ) => {
                // A wait ends the drive (`AgentEnd`); the answer begins the next (`AgentStart`).
                added.extend(transition(effects, AgentRun::end));
                let (pending, questions) = match &stop {
                    RunStop::AwaitingApproval { pending } => (pending.clone(), Vec::new()),
                    RunStop::AwaitingAnswer { questions } => (Vec::new(), questions.clone()),
                    _ => unreachable!("matched above"),
                };
                let waiting = Waiting {
                    pending,
                    questions,
                    rewritten: std::mem::take(&mut unsaved_rewrite),
                };
                let Some(resumed) = effects.wait(waiting).await? else {
                    return Ok(RunOutcome {
                        messages: added,
                        stop,
                    });
                };
                offered = None;
                transition(effects, AgentRun::begin);
                resume(effects, resumed).await?;
                false
            }
            Step::Stopped(stop) => {
                effects.save(unsaved_rewrite);
                break stop;
            }
        };
        // A run that now waits is saved only by the wait, once whoever answers can see what waits.
        let waits = matches!(
            effects.run().stopped(),
            Some(RunStop::AwaitingApproval { .. } | RunStop::AwaitingAnswer { .. })
        );
        if waits {
            unsaved_rewrite |= rewritten;
            continue;
        }
        effects.save(rewritten);
    };
    added.extend(transition(effects, AgentRun::end));
    Ok(RunOutcome {
        messages: added,
        stop,
    })
}

/// Applies a transition to the run, then emits the events it caused (the run released first).
fn transition<E: Effects, R>(effects: &mut E, change: impl FnOnce(&mut AgentRun) -> R) -> R {
    let (result, events) = {
        let mut run = effects.run();
        let result = change(&mut run);
        (result, run.take_events())
    };
    for event in events {
        effects.emit(event);
    }
    result
}

/// Applies `change` with the clock set to a kept time (named `name`), so a replay makes the very same
/// messages.
async fn stamped<E: Effects>(
    effects: &mut E,
    name: &str,
    change: impl FnOnce(&mut AgentRun),
) -> Result<(), E::Error> {
    let now = effects.journal(name.to_owned(), now_millis()).await?;
    transition(effects, |run| {
        run.set_clock(Some(now));
        change(run);
        run.set_clock(None);
    });
    Ok(())
}

/// What the model sees next and the tools it is offered (the context hook runs with the run released).
fn context<E: Effects>(config: &AgentConfig, effects: &mut E) -> (super::AgentContext, ToolStore) {
    let (system_prompt, messages) = {
        let run = effects.run();
        (run.system_prompt().to_owned(), run.messages().to_vec())
    };
    config.context(&system_prompt, &messages)
}

/// Asks the model and records its reply; gives the tools offered with it.
async fn call_model<E: Effects>(
    config: &AgentConfig,
    effects: &mut E,
) -> Result<ToolStore, E::Error> {
    let (context, offered) = context(config, effects);
    let (loaded, turn) = {
        let run = effects.run();
        (run.loaded_tools().to_vec(), run.turns().saturating_add(1))
    };
    let request = config.model_request(context, &loaded);
    let reply = effects.model_reply(turn, request).await?;
    transition(effects, |run| {
        run.model_replied(reply, |call| config.needs_approval(&offered, call))
    });
    Ok(offered)
}

/// Runs the batch of `assistant` on the executor readied for it (its programs resume, its tools'
/// questions pause it), records the results, then applies the turn hook. Whether the hook replaced the
/// conversation.
async fn run_tools<E: Effects>(
    config: &AgentConfig,
    effects: &mut E,
    assistant: AssistantMessage,
    plan: Vec<PlannedCall>,
    tools: ToolStore,
) -> Result<bool, E::Error> {
    let executor = effects.executor();
    let (answered, turn) = {
        let run = effects.run();
        (run.question_answers(), run.turns())
    };
    #[cfg(feature = "code-mode")]
    let executor = config.ready_programs(&executor, &effects.run(), &plan);
    // Without an elicitation handler, a tool's question pauses the run until it is answered.
    let round = answered.len();
    let (pausing, asked) = executor.pausing_on_questions(answered).unzip();
    let batch = Batch {
        turn,
        tools,
        executor: pausing.unwrap_or(executor),
        plan,
        assistant: Arc::new(assistant.clone()),
    };
    let batch = effects.run_batch(batch).await?;
    // The tools' requests to the run's own model count toward its usage and limits.
    let sampled = effects.sampled();
    if !sampled.is_empty() {
        transition(effects, |run| {
            sampled.iter().for_each(|usage| run.add_usage(usage))
        });
    }
    let results = batch.messages.clone();
    // Kept only for a batch whose results show a stop: a function of the results, which a replay
    // returns, so it decides the same.
    let questions = match asked {
        Some(asked) if batch.stopped_at_questions() => {
            let name = format!("turn {turn} questions {round}");
            effects.journal(name, asked.take()).await?
        }
        _ => Vec::new(),
    };
    if batch.terminate {
        stamped(effects, "terminate", |run| {
            run.tools_ran_asking(batch.messages, true, questions)
        })
        .await?;
    } else {
        transition(effects, |run| {
            run.tools_ran_asking(batch.messages, false, questions)
        });
    }
    if effects.run().stopped().is_some() {
        return Ok(false);
    }
    if effects.cancelled() {
        transition(effects, |run| run.stop(RunStop::Aborted));
        return Ok(false);
    }
    if !config.has_next_turn_hook() {
        return Ok(false);
    }
    let messages = effects.run().messages().to_vec();
    let Some(update) = config.next_turn(&NextTurnContext::new(assistant, results, messages)) else {
        return Ok(false);
    };
    let (model, rewritten) = transition(effects, |run| update.apply(run));
    if let Some(model) = model {
        effects.set_model(model);
    }
    Ok(rewritten)
}

/// Gives the run the answer its wait ended with.
async fn resume<E: Effects>(effects: &mut E, resumed: Resumed) -> Result<(), E::Error> {
    match resumed {
        Resumed::Decided(decisions) => transition(effects, |run| {
            if let Err(error) = run.decide(decisions) {
                // The driver checked the decisions against the same calls: if the run still
                // disagrees, it keeps waiting, and says why.
                tracing::warn!(%error, "decisions refused");
            }
        }),
        Resumed::Answered(answers) => transition(effects, |run| {
            for (call_id, key, answer) in answers {
                if let Err(error) = run.answer(&call_id, &key, answer) {
                    tracing::warn!(%error, "answer refused");
                }
            }
        }),
        // As for a new prompt in process: no waiting call runs, and each gets a result that says so.
        Resumed::Aborted => {
            stamped(effects, "abort", |run| {
                run.give_up_waiting("the run was aborted")
            })
            .await?;
        }
    }
    Ok(())
}
