//! The JSON bodies of the agent's handlers, as a client sends and reads them through Restate's ingress.

use serde::{Deserialize, Serialize};
use yiem_core::{
    agent::{Decision, PendingApproval, PendingQuestion, RunStop},
    ask::ElicitationAnswer,
    message::AgentMessage,
};

/// The body of `start`: the user's prompt.
///
/// ```
/// let body: yiem_restate::PromptRequest = serde_json::from_str(r#"{"prompt": "weather in Oslo?"}"#).unwrap();
/// assert_eq!(body.prompt, "weather in Oslo?");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptRequest {
    /// What the user says.
    pub prompt: String,
}

/// The body of `steer` and `follow_up`: a user message to queue.
///
/// ```
/// let body: yiem_restate::MessageRequest = serde_json::from_str(r#"{"text": "in Celsius"}"#).unwrap();
/// assert_eq!(body.text, "in Celsius");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageRequest {
    /// The message.
    pub text: String,
}

/// One answer in an `approve` body: the call it is for and the [`Decision`], flattened.
///
/// ```
/// use yiem_core::agent::Decision;
/// use yiem_restate::CallDecision;
///
/// let edit: CallDecision = serde_json::from_str(
///     r#"{"call_id": "c1", "decision": "approve_with", "arguments": {"text": "short"}}"#,
/// ).unwrap();
/// assert_eq!(edit.call_id, "c1");
/// assert_eq!(edit.decision, Decision::ApproveWith { arguments: serde_json::json!({"text": "short"}) });
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallDecision {
    /// The id of the waiting call.
    pub call_id: String,
    /// What to do with it: `approve`, `approve_with` (with `arguments`), `deny` (with `reason`) or
    /// `always_approve`.
    #[serde(flatten)]
    pub decision: Decision,
}

/// The body of `approve`: a decision for every waiting call (a call of a tool another decision
/// always-approves needs none).
///
/// ```
/// let body: yiem_restate::ApproveRequest = serde_json::from_str(
///     r#"{"decisions": [{"call_id": "c1", "decision": "deny", "reason": "not today"}]}"#,
/// ).unwrap();
/// assert_eq!(body.decisions.len(), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApproveRequest {
    /// The answers, one per waiting call.
    pub decisions: Vec<CallDecision>,
}

/// One answer in an `answer` body: the question it is for (its call and key) and the answer, as MCP's
/// elicitation result (`action`: `accept` with `content`, `decline` or `cancel`), flattened.
///
/// ```
/// use yiem_core::ask::ElicitationAnswer;
/// use yiem_restate::CallAnswer;
///
/// let answer: CallAnswer = serde_json::from_str(
///     r#"{"call_id": "c1", "key": "question-1", "action": "accept", "content": {"really": true}}"#,
/// ).unwrap();
/// assert_eq!(answer.key, "question-1");
/// assert!(matches!(answer.answer, ElicitationAnswer::Accept(_)));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallAnswer {
    /// The id of the call that asked.
    pub call_id: String,
    /// Which of its questions (`question-1`, ...).
    pub key: String,
    /// The answer.
    #[serde(flatten)]
    pub answer: ElicitationAnswer,
}

/// The body of `answer`: an answer for every question the run waits on.
///
/// ```
/// let body: yiem_restate::AnswerRequest = serde_json::from_str(
///     r#"{"answers": [{"call_id": "c1", "key": "question-1", "action": "decline"}]}"#,
/// ).unwrap();
/// assert_eq!(body.answers.len(), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnswerRequest {
    /// The answers, one per waiting question.
    pub answers: Vec<CallAnswer>,
}

/// What `start` answers once the run stops: the messages it added and why it stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Why the run stopped.
    pub stop: RunStop,
    /// The messages this run added, in order (its prompt first).
    pub messages: Vec<AgentMessage>,
    /// The text of the last assistant message (empty if none).
    pub text: String,
}

/// What `conversation` answers: the conversation as of the last completed step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationView {
    /// The whole conversation.
    pub messages: Vec<AgentMessage>,
    /// Why the last run stopped, or `None` while one is under way (or none ever started).
    pub stop: Option<RunStop>,
    /// The calls waiting for a decision (empty unless the run waits for approvals).
    pub pending_approvals: Vec<PendingApproval>,
    /// The tools' questions waiting for an answer (empty unless the run waits for answers).
    #[serde(default)]
    pub pending_questions: Vec<PendingQuestion>,
}
