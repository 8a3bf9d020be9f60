//! [`ResumeError`]: why a run could not be resumed or restored.

/// Why a run could not be resumed or restored. The run is left as it was.
///
/// ```
/// use yiem_core::agent::{AgentRun, ResumeError};
///
/// let error = AgentRun::from_json(r#"{"version": 99}"#).unwrap_err();
/// assert_eq!(error, ResumeError::UnknownVersion { found: 99, supported: 1 });
/// assert_eq!(
///     error.to_string(),
///     "the saved run has format version 99; this yiem reads version 1"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// A decision names a call that is not waiting for approval.
    #[error(
        "no call with id `{id}` is waiting for approval (waiting: {})",
        if waiting.is_empty() { "none".to_owned() } else { waiting.join(", ") }
    )]
    UnknownCall {
        /// The id given.
        id: String,
        /// The ids that are waiting.
        waiting: Vec<String>,
    },
    /// An answer names a question that does not wait (no call with that id waits on a question, or
    /// it waits on another one).
    #[error(
        "no question `{key}` of call `{call_id}` waits for an answer (waiting: {})",
        if waiting.is_empty() { "none".to_owned() } else { waiting.join(", ") }
    )]
    UnknownQuestion {
        /// The call id given.
        call_id: String,
        /// The key given.
        key: String,
        /// The questions that wait, as `call id/key`.
        waiting: Vec<String>,
    },
    /// A question was answered twice.
    #[error("question `{key}` of call `{call_id}` was answered already")]
    DuplicateAnswer {
        /// The call.
        call_id: String,
        /// The question.
        key: String,
    },
    /// An accepted answer does not fit the question's form: the field is named.
    #[error(
        "the answer to question `{key}` of call `{call_id}` does not fit its form: field `{field}`: {reason}"
    )]
    InvalidAnswer {
        /// The call.
        call_id: String,
        /// The question.
        key: String,
        /// The field that does not fit.
        field: String,
        /// Why.
        reason: String,
    },
    /// Two decisions name the same call.
    #[error("call `{id}` was given two decisions; give each waiting call one")]
    DuplicateDecision {
        /// The id given twice.
        id: String,
    },
    /// The run cannot go on: it finished (prompt again instead).
    #[error("the run {0}; there is nothing to resume (send a new prompt instead)")]
    NothingToResume(String),
    /// A run is active on this agent.
    #[error("the agent is running; wait for the run to stop before resuming or restoring another")]
    Busy,
    /// The saved state has a format this version does not read.
    #[error("the saved run has format version {found}; this yiem reads version {supported}")]
    UnknownVersion {
        /// The version in the state.
        found: u64,
        /// The version this build reads and writes.
        supported: u32,
    },
    /// The saved state is not a run.
    #[error("the saved run cannot be read: {0}")]
    InvalidState(String),
    /// The saved run disagrees with its own conversation (it was edited): the field is named.
    #[error("the saved run disagrees with its conversation: {0}")]
    Mismatch(#[from] super::saved::RunMismatch),
}
