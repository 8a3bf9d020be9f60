//! The `Agent` virtual object: its handlers, as a client calls them through Restate's ingress at
//! `/Agent/{conversation}/{handler}`. `start` is exclusive: one run per conversation at a time, later
//! prompts queue behind it. The others are shared, so they answer while a run goes on or waits: they
//! read the saved run, or post to the conversation's [mailbox](crate::inbox).

use restate_sdk::prelude::*;
use tracing::Instrument;
use yiem_core::{
    agent::{AgentRun, RunOutcome, drive},
    message::{AgentMessage, UserMessage},
    telemetry,
};

use crate::agent::DurableAgent;
use crate::api::{
    AnswerRequest, ApproveRequest, ConversationView, MessageRequest, PromptRequest, RunReport,
};
use crate::driver::Driver;
use crate::inbox::{AgentInboxClient, Mail};
use crate::store::{self, Saved};
use crate::trace;

#[restate_sdk::object(name = "Agent")]
impl DurableAgent {
    /// Sends the prompt and runs until the run stops; answers what it added and why it stopped. A run
    /// that waits for approval or answers keeps this invocation open, suspended, until `approve` (or
    /// `answer`) or `abort`.
    #[handler]
    async fn start(
        &self,
        ctx: ObjectContext<'_>,
        Json(request): Json<PromptRequest>,
    ) -> HandlerResult<Json<RunReport>> {
        let key = ctx.key().to_owned();
        let config = &self.config;
        let model = (config.model)(&key);
        let span = telemetry::invoke_agent(&key, model.name(), model.provider_name());
        trace::join_run(&ctx, &span).await?;
        let run: Result<RunReport, HandlerError> = async {
            let (mut run, mut saved) = match store::load(&ctx).await? {
                Some(loaded) => loaded,
                None => (
                    AgentRun::new(config.agent.system_prompt_text(), Vec::new()),
                    Saved::nothing(),
                ),
            };
            run.set_limits(config.agent.run_limits());
            run.set_stop_at_tools(config.agent.stop_tools().to_vec());
            let mut driver = Driver {
                ctx: &ctx,
                config,
                key: key.clone(),
                model,
                executor: config.agent.executor().fresh(),
                run: &mut run,
                saved: &mut saved,
            };
            driver.read_mail_before_start().await?;
            // The prompt's timestamp is journaled, so a replay saves the same run.
            let Json(prompt) = ctx
                .run(|| async move { Ok(Json(UserMessage::text(request.prompt))) })
                .name("prompt")
                .await?;
            let RunOutcome { messages, stop, .. } =
                drive(&config.agent, &mut driver, Some(vec![prompt])).await?;
            Ok(RunReport {
                stop,
                text: AgentMessage::last_assistant_text(&messages),
                messages,
            })
        }
        .instrument(span.clone())
        .await;
        if let Ok(report) = &run {
            report.stop.record(&span);
        }
        run.map(Json)
    }

    /// Adds a user message after the current turn (its tool calls still finish), before the next
    /// model call; while no run is active, before the first model call of the next one.
    #[handler]
    async fn steer(
        &self,
        ctx: SharedObjectContext<'_>,
        Json(request): Json<MessageRequest>,
    ) -> HandlerResult<()> {
        let message = UserMessage::text(request.text);
        post(&ctx, Mail::Steer { message }).await
    }

    /// Queues a user message for when the run would otherwise finish (the next run's end, if none is
    /// active).
    #[handler]
    async fn follow_up(
        &self,
        ctx: SharedObjectContext<'_>,
        Json(request): Json<MessageRequest>,
    ) -> HandlerResult<()> {
        let message = UserMessage::text(request.text);
        post(&ctx, Mail::FollowUp { message }).await
    }

    /// Answers the calls the run waits on, and resumes it. Answers the number of decisions taken; a
    /// decision for a call that is not waiting, a waiting call without one, or a run that waits for
    /// nothing is an error that says which.
    #[handler]
    async fn approve(
        &self,
        ctx: SharedObjectContext<'_>,
        Json(request): Json<ApproveRequest>,
    ) -> HandlerResult<u32> {
        let key = ctx.key().to_owned();
        let taken = ctx
            .object_client::<AgentInboxClient>(key)
            .decide(Json(request.decisions))
            .call()
            .await?;
        Ok(taken)
    }

    /// Answers the tools' questions the run waits on, and resumes it: the calls that asked run again
    /// from the start with their answers. Answers the number of answers taken; an answer to a question
    /// that does not wait, a waiting question without one, an accepted answer that does not fit the
    /// question's form (the field named), or a run that waits on no question is an error that says
    /// which, and nothing changes.
    #[handler]
    async fn answer(
        &self,
        ctx: SharedObjectContext<'_>,
        Json(request): Json<AnswerRequest>,
    ) -> HandlerResult<u32> {
        let key = ctx.key().to_owned();
        let taken = ctx
            .object_client::<AgentInboxClient>(key)
            .answer(Json(request.answers))
            .call()
            .await?;
        Ok(taken)
    }

    /// Stops the run at the next step boundary (a running tool call finishes first): calls not yet run
    /// get an error result, so the conversation stays valid, and the run stops as `aborted`. A run
    /// waiting for approval or answers stops at once, its waiting calls not run.
    #[handler]
    async fn abort(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<()> {
        post(&ctx, Mail::Abort).await
    }

    /// The conversation as of the last completed step, why the last run stopped (`null` while one is
    /// under way), the calls waiting for a decision and the questions waiting for an answer.
    #[handler]
    async fn conversation(
        &self,
        ctx: SharedObjectContext<'_>,
    ) -> HandlerResult<Json<ConversationView>> {
        let view = match store::load_shared(&ctx).await? {
            Some((run, _)) => ConversationView {
                messages: run.messages().to_vec(),
                stop: run.stopped(),
                pending_approvals: run.pending_approvals().to_vec(),
                pending_questions: run.pending_questions().to_vec(),
            },
            None => ConversationView {
                messages: Vec::new(),
                stop: None,
                pending_approvals: Vec::new(),
                pending_questions: Vec::new(),
            },
        };
        Ok(Json(view))
    }
}

async fn post(ctx: &SharedObjectContext<'_>, mail: Mail) -> HandlerResult<()> {
    ctx.object_client::<AgentInboxClient>(ctx.key().to_owned())
        .post(Json(mail))
        .call()
        .await?;
    Ok(())
}
