//! What the tools' requests to an agent's own model may spend: the run's token limits hold for them as
//! they go ([`AgentBuilder::sampling_by_own_model`](super::AgentBuilder::sampling_by_own_model)).

use std::sync::Arc;

use crate::ask::sample::{Sampling, SamplingAnswer, SamplingHandler};
use crate::llm::{Model, sample};

/// What the tools of one batch may spend on the agent's own model: the run's usage and limits when the
/// batch started, and what the batch's requests used since. The agent sets it before each batch and
/// counts the requests' usage into the run after it.
#[derive(Debug, Default)]
pub(crate) struct SampleBudget {
    /// The run's usage so far, this batch's requests included.
    pub(crate) total: crate::result::Usage,
    pub(crate) limits: super::RunLimits,
    /// The usage of each of this batch's requests, not yet counted in the run.
    pub(crate) sampled: Vec<crate::result::Usage>,
}

/// [`model_sampler`](crate::llm::model_sampler) that counts each request against the run's token limits as it goes: a request
/// made once the run's usage (its model calls and the requests before it) has reached a limit is
/// refused without asking the model, and each answered request's usage is kept in `budget` for the run
/// ([`AgentBuilder::sampling_by_own_model`](super::AgentBuilder::sampling_by_own_model)).
pub(crate) fn counting_sampler(
    model: Arc<dyn Model>,
    budget: Arc<std::sync::Mutex<SampleBudget>>,
) -> impl SamplingHandler {
    move |request: Sampling| {
        let model = Arc::clone(&model);
        let budget = Arc::clone(&budget);
        async move {
            let lock = || {
                budget
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
            };
            let reached = {
                let budget = lock();
                budget.limits.usage_exceeded(&budget.total)
            };
            if let Some(detail) = reached {
                return SamplingAnswer::Refuse(format!(
                    "the run's token limit is reached ({detail}); the model was not asked"
                ));
            }
            let (answer, usage) = sample(model.as_ref(), request).await;
            let mut budget = lock();
            budget.total.add(&usage);
            budget.sampled.push(usage);
            answer
        }
    }
}
