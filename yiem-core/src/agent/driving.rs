//! The [`drive`](super::drive()) loop's effects performed in process, on the agent's shared state: the
//! model's stream and the batch under the drive's cancellation, and a drive dropped mid-step cut short
//! with every call given its result.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{
    Agent, AgentRun, Batch, Effects, Mail, Resumed, RunOutcome, Shared, State, Waiting, drive, lock,
};
use crate::event::{AgentEvent, EventBus};
use crate::llm::Model;
use crate::llm::stream_reply;
use crate::message::{AssistantMessage, UserMessage};
use crate::telemetry;

impl Agent {
    /// Runs the step machine until the run stops, starting it with `prompts` if given.
    pub(super) async fn drive(&self, prompts: Option<Vec<UserMessage>>) -> RunOutcome {
        let cancel = CancellationToken::new();
        *lock(&self.shared.current) = Some(cancel.clone());
        let mut driving = Driving {
            shared: &self.shared,
            cancel,
            events: self.shared.config.events().clone(),
            done: false,
        };
        let span = {
            let state = lock(&self.shared.state);
            telemetry::invoke_agent(
                &self.shared.conversation_id,
                state.model.name(),
                state.model.provider_name(),
            )
        };
        let config = &self.shared.config;
        let outcome = if span.is_disabled() {
            drive(config, &mut driving, prompts).await
        } else {
            drive(config, &mut driving, prompts)
                .instrument(span.clone())
                .await
        };
        let Ok(outcome) = outcome;
        driving.done = true;
        outcome.stop.record(&span);
        outcome
    }
}

/// One drive in process: performs the effects of the [`drive`](drive()) loop on the agent's shared state (the
/// model stream and the batch under the drive's cancellation). If its future is dropped mid-step,
/// `Drop` cancels what runs and leaves the run valid and stopped.
struct Driving<'a> {
    shared: &'a Shared,
    cancel: CancellationToken,
    events: EventBus,
    done: bool,
}

impl Drop for Driving<'_> {
    fn drop(&mut self) {
        if !self.done {
            // Dropped mid-run (a caller's timeout): every call still gets a result, and the run stays
            // valid for the next request.
            self.cancel.cancel();
            let mut state = lock(&self.shared.state);
            state
                .run
                .interrupt("the run was dropped before the call returned");
            state.run.take_events();
        }
        *lock(&self.shared.current) = None;
    }
}

/// The agent's run, locked for a transition of the drive loop.
struct RunGuard<'a>(std::sync::MutexGuard<'a, State>);

impl std::ops::Deref for RunGuard<'_> {
    type Target = AgentRun;
    fn deref(&self) -> &AgentRun {
        &self.0.run
    }
}

impl std::ops::DerefMut for RunGuard<'_> {
    fn deref_mut(&mut self) -> &mut AgentRun {
        &mut self.0.run
    }
}

impl Effects for Driving<'_> {
    type Error = std::convert::Infallible;

    fn run(&mut self) -> impl std::ops::DerefMut<Target = AgentRun> + '_ {
        RunGuard(lock(&self.shared.state))
    }

    fn emit(&mut self, event: AgentEvent) {
        self.events.emit(event);
    }

    async fn mail(&mut self) -> Result<Mail, Self::Error> {
        // Between steps the loop lets the runtime run other tasks (a caller's timeout among them).
        tokio::task::yield_now().await;
        Ok(Mail {
            steering: lock(&self.shared.steering).drain(..).collect(),
            follow_ups: lock(&self.shared.follow_ups).drain(..).collect(),
            ..Mail::default()
        })
    }

    async fn model_reply(
        &mut self,
        _turn: u32,
        request: crate::llm::ModelRequest,
    ) -> Result<AssistantMessage, Self::Error> {
        let model = Arc::clone(&lock(&self.shared.state).model);
        Ok(stream_reply(model.as_ref(), request, &self.cancel, &self.events).await)
    }

    fn executor(&self) -> crate::exec::executor::ToolExecutor {
        self.shared.config.executor.clone()
    }

    async fn run_batch(
        &mut self,
        batch: Batch,
    ) -> Result<crate::exec::executor::ToolCallBatch, Self::Error> {
        // The tools' requests to the agent's own model are held to the run's token limits as they go.
        if let Some(sampled) = &self.shared.sampled {
            let (total, limits) = {
                let state = lock(&self.shared.state);
                (state.run.usage(), state.run.limits())
            };
            let mut budget = lock(sampled);
            budget.total = total;
            budget.limits = limits;
            budget.sampled.clear();
        }
        Ok(batch
            .executor
            .execute_plan(
                &batch.tools,
                batch.plan,
                Some(batch.assistant),
                &self.cancel,
            )
            .await)
    }

    async fn journal<T>(&mut self, _name: String, value: T) -> Result<T, Self::Error>
    where
        T: serde::Serialize + serde::de::DeserializeOwned + Send + 'static,
    {
        Ok(value)
    }

    async fn wait(&mut self, _waiting: Waiting) -> Result<Option<Resumed>, Self::Error> {
        // The drive ends: `Agent::resume` and `Agent::answer` begin the next.
        Ok(None)
    }

    fn save(&mut self, _rewritten: bool) {
        // The run lives in the agent's state, read with `Agent::run_state`.
    }

    fn set_model(&mut self, model: Arc<dyn Model>) {
        lock(&self.shared.state).model = model;
    }

    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    fn sampled(&mut self) -> Vec<crate::result::Usage> {
        match &self.shared.sampled {
            Some(sampled) => std::mem::take(&mut lock(sampled).sampled),
            None => Vec::new(),
        }
    }
}
