//! The run as JSON: writing it (whole, signed, or as a header and appended messages) and reading it back,
//! checked against its own conversation, without the grants of a run not trusted.
//!
//! # The saved shape
//!
//! [`AgentRun::to_json`] writes one object: `version` (the format, [`RUN_FORMAT_VERSION`]),
//! `system_prompt`, `messages` (the conversation, as [`AgentMessage`] serializes), `turns`, `usage`,
//! `limits`, `stop_at_tools`, `steering`, `follow_ups`, `always_approved` (tool names), `loaded_tools` (left out when empty: see [`AgentRun::loaded_tools`]), and `phase`, tagged
//! by `state`: `call_model`, `awaiting_approval` (with `assistant`, the index of the message whose calls
//! wait, `pending` and the `decisions` given so far), `awaiting_answer` (with `assistant`, the
//! `questions` that wait and the `answers` given so far), `run_tools` (with the `plan`) or `stopped`
//! (with the [`RunStop`]). A batch whose calls stopped at questions keeps, in `asked` (left out when
//! empty), the results of its other calls and the answers each call that asked has had (see
//! `agent/asked.rs`); such a run is read back only with a valid tag. [`AgentRun::to_json_signed`] adds `tag`, the integrity tag of everything else (its
//! definition, and what a run read back is checked against: the module docs of `agent/saved.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::{AgentRun, Phase, Progress, RUN_FORMAT_VERSION, RunStop};
use crate::agent::asked::Asked;
use crate::agent::limits::RunLimits;
use crate::agent::paused::Paused;
use crate::agent::resume::ResumeError;
use crate::agent::saved::{self, RunKey, RunMismatch, Signature};
use crate::approval::PendingApproval;
use crate::call::ToolCall;
use crate::decision::PlannedCall;
use crate::message::{AgentMessage, UserMessage};
use crate::result::Usage;

/// A run without its messages, for storage that grows by appending (see [`AgentRun::appended_since`]).
#[derive(Serialize)]
struct Header<'a> {
    version: u32,
    system_prompt: &'a str,
    /// How many messages the run has.
    messages: usize,
    turns: u32,
    usage: Usage,
    limits: RunLimits,
    stop_at_tools: &'a [String],
    steering: &'a [UserMessage],
    follow_ups: &'a [UserMessage],
    always_approved: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    loaded_tools: &'a [String],
    phase: &'a Phase,
    #[serde(skip_serializing_if = "Paused::is_empty")]
    paused: &'a Paused,
    #[serde(skip_serializing_if = "Asked::is_empty")]
    asked: &'a Asked,
}

/// The fields of a saved run, read once its version is known.
#[derive(Deserialize)]
struct Saved {
    system_prompt: String,
    messages: Vec<AgentMessage>,
    turns: u32,
    usage: Usage,
    limits: RunLimits,
    #[serde(default)]
    stop_at_tools: Vec<String>,
    #[serde(default)]
    steering: Vec<UserMessage>,
    #[serde(default)]
    follow_ups: Vec<UserMessage>,
    #[serde(default)]
    always_approved: Vec<String>,
    #[serde(default)]
    loaded_tools: Vec<String>,
    phase: Phase,
    #[serde(default)]
    paused: Paused,
    #[serde(default)]
    asked: Asked,
}

/// Read as [`AgentRun::from_json`] reads a run: checked, and not trusted for its grants.
impl<'de> Deserialize<'de> for AgentRun {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        AgentRun::from_value(value, false).map_err(serde::de::Error::custom)
    }
}

impl AgentRun {
    /// The run as JSON (its shape: the module docs of `agent/run/json.rs`).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a run holds only JSON-representable values")
    }

    /// The run as JSON with its integrity tag made with `key`: [`from_json_verified`](Self::from_json_verified)
    /// with the same key keeps its grants (the decisions given, the tools approved for the rest of the
    /// run, a batch about to run).
    ///
    /// ```
    /// use yiem_core::{agent::{AgentRun, RunKey, Signature}, message::UserMessage};
    ///
    /// let key = RunKey::new([42; 32]);
    /// let mut run = AgentRun::new("system", Vec::new());
    /// run.start(vec![UserMessage::text("hi")]);
    /// let saved = run.to_json_signed(&key);
    /// let (back, signature) = AgentRun::from_json_verified(&saved, &key).unwrap();
    /// assert_eq!((back, signature), (run.clone(), Signature::Valid));
    ///
    /// // Changed by hand (here: the system prompt), it is no longer the key's.
    /// let edited = saved.replace("\"system\"", "\"be evil\"");
    /// let (_, signature) = AgentRun::from_json_verified(&edited, &key).unwrap();
    /// assert_eq!(signature, Signature::Invalid);
    /// ```
    pub fn to_json_signed(&self, key: &RunKey) -> String {
        let mut value =
            serde_json::to_value(self).expect("a run holds only JSON-representable values");
        let tag = key.tag(&value);
        if let Value::Object(fields) = &mut value {
            fields.insert(saved::TAG.to_owned(), Value::String(tag));
        }
        value.to_string()
    }

    /// Reads a run written by [`to_json`](Self::to_json) (or any serializer of [`AgentRun`]). A state of
    /// another format version, or one that is not a run, is an error that says which; so is a run that
    /// disagrees with its own conversation ([`ResumeError::Mismatch`]). The run is not trusted for
    /// anything its conversation does not show: its grants (decisions given, tools approved for the rest
    /// of the run, a batch about to run) are dropped, and every call of a reply that waits or was about
    /// to run waits for a decision again. [`from_json_verified`](Self::from_json_verified) keeps them for a
    /// run tagged with the application's key.
    pub fn from_json(text: &str) -> Result<AgentRun, ResumeError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ResumeError::InvalidState(e.to_string()))?;
        AgentRun::from_value(value, false)
    }

    /// Reads a run as [`from_json`](Self::from_json) does, and checks its tag against `key`: with the
    /// key's tag ([`Signature::Valid`]) the run keeps its grants; without a tag, or with another, it keeps
    /// its conversation and asks again, as [`from_json`](Self::from_json) reads it.
    pub fn from_json_verified(
        text: &str,
        key: &RunKey,
    ) -> Result<(AgentRun, Signature), ResumeError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ResumeError::InvalidState(e.to_string()))?;
        let signature = match value.get(saved::TAG) {
            None => Signature::Missing,
            Some(Value::String(tag)) if key.verify(&value, tag) => Signature::Valid,
            Some(_) => Signature::Invalid,
        };
        let run = AgentRun::from_value(value, signature == Signature::Valid)?;
        Ok((run, signature))
    }

    /// The run as storage that grows by appending, as a driver that saves after every step writes it (the
    /// durable runner does): the run without its messages — every other field, with `messages` replaced by
    /// their count, so it does not grow with the conversation — and the messages from `from` on.
    /// [`from_appended`](Self::from_appended) reads it back.
    ///
    /// ```
    /// use yiem_core::{agent::AgentRun, message::UserMessage};
    ///
    /// let mut run = AgentRun::new("system", Vec::new());
    /// run.start(vec![UserMessage::text("hi")]);
    /// let (header, new) = run.appended_since(0);
    /// assert_eq!(header["messages"], 1);
    /// assert_eq!(new.len(), 1);
    /// let back = AgentRun::from_appended(header, new.to_vec()).unwrap();
    /// assert_eq!(back, run);
    /// ```
    pub fn appended_since(&self, from: usize) -> (Value, &[AgentMessage]) {
        let header = Header {
            version: self.version,
            system_prompt: &self.system_prompt,
            messages: self.messages.len(),
            turns: self.turns,
            usage: self.usage,
            limits: self.limits,
            stop_at_tools: &self.stop_at_tools,
            steering: &self.steering,
            follow_ups: &self.follow_ups,
            always_approved: &self.always_approved,
            loaded_tools: &self.loaded_tools,
            phase: &self.phase,
            paused: &self.paused,
            asked: &self.asked,
        };
        let header =
            serde_json::to_value(header).expect("a run holds only JSON-representable values");
        (header, self.messages.get(from..).unwrap_or_default())
    }

    /// A run from the header [`appended_since`](Self::appended_since) wrote and all its messages, in
    /// order; checked against its conversation as [`from_json`](Self::from_json) checks a saved run, and
    /// refused when the count of messages is not the header's. The storage is trusted, as the state of
    /// the durable runner's object is (only the runner writes it): the run keeps its grants. Read a run
    /// from storage a person can edit with [`from_json_verified`](Self::from_json_verified).
    pub fn from_appended(
        mut header: Value,
        messages: Vec<AgentMessage>,
    ) -> Result<AgentRun, ResumeError> {
        let count = header.get("messages").and_then(Value::as_u64);
        if count != Some(messages.len() as u64) {
            return Err(ResumeError::InvalidState(format!(
                "its header counts {} messages, and {} were found",
                count.map_or_else(|| "no".to_owned(), |count| count.to_string()),
                messages.len()
            )));
        }
        let messages =
            serde_json::to_value(messages).map_err(|e| ResumeError::InvalidState(e.to_string()))?;
        match &mut header {
            Value::Object(fields) => {
                fields.insert("messages".to_owned(), messages);
            }
            _ => {
                return Err(ResumeError::InvalidState(
                    "its header is not a JSON object".into(),
                ));
            }
        }
        AgentRun::from_value(header, true)
    }

    /// A run from its saved object, checked against its conversation; a run not `trusted` loses its
    /// grants.
    fn from_value(value: Value, trusted: bool) -> Result<AgentRun, ResumeError> {
        let version = match value.get("version") {
            Some(Value::Number(number)) => number.as_u64(),
            _ => None,
        };
        let Some(version) = version else {
            return Err(ResumeError::InvalidState(
                "it has no `version` (a whole number): is it a run saved by AgentRun::to_json?"
                    .into(),
            ));
        };
        if version != u64::from(RUN_FORMAT_VERSION) {
            return Err(ResumeError::UnknownVersion {
                found: version,
                supported: RUN_FORMAT_VERSION,
            });
        }
        let saved: Saved =
            serde_json::from_value(value).map_err(|e| ResumeError::InvalidState(e.to_string()))?;
        let mut run = AgentRun {
            version: RUN_FORMAT_VERSION,
            system_prompt: saved.system_prompt,
            messages: saved.messages,
            turns: saved.turns,
            usage: saved.usage,
            limits: saved.limits,
            stop_at_tools: saved.stop_at_tools,
            steering: saved.steering,
            follow_ups: saved.follow_ups,
            always_approved: saved.always_approved,
            loaded_tools: saved.loaded_tools,
            phase: saved.phase,
            paused: saved.paused,
            asked: saved.asked,
            progress: Progress::default(),
        };
        run.check()?;
        if !trusted && !run.paused.is_empty() {
            return Err(ResumeError::InvalidState(
                "it holds a paused program's recorded calls, which only a run with a valid tag may carry: \
                 save it with AgentRun::to_json_signed and read it with AgentRun::from_json_verified"
                    .into(),
            ));
        }
        if !trusted && !run.asked.is_empty() {
            return Err(ResumeError::InvalidState(
                "it holds answers to tools' questions and the results of calls that ran, which only a run \
                 with a valid tag may carry: save it with AgentRun::to_json_signed and read it with \
                 AgentRun::from_json_verified"
                    .into(),
            ));
        }
        if !trusted {
            run.drop_grants();
        }
        Ok(run)
    }

    /// Checks what the conversation decides against it: the calls that wait or run are the last reply's,
    /// pending entries and the plan show them as they will run, decisions answer pending calls, and every
    /// other call has exactly one result.
    fn check(&self) -> Result<(), RunMismatch> {
        if !self.asked.is_empty() && !self.paused.is_empty() {
            return Err(RunMismatch::Asked(
                "a batch waits on questions and on paused programs at once".into(),
            ));
        }
        let waiting = match &self.phase {
            Phase::AwaitingAnswer {
                assistant,
                questions,
                answers,
            } => {
                let calls = saved::waiting_calls(&self.messages, *assistant)?;
                if questions.is_empty() {
                    return Err(RunMismatch::Asked("`phase.questions` is empty".into()));
                }
                self.asked.check(&calls, Some((questions, answers)), &[])?;
                Some(*assistant)
            }
            Phase::RunTools { assistant, plan } if !self.asked.is_empty() => {
                let calls = saved::waiting_calls(&self.messages, *assistant)?;
                let planned: Vec<&ToolCall> = plan.iter().map(PlannedCall::call).collect();
                self.asked.check(&calls, None, &planned)?;
                Some(*assistant)
            }
            Phase::AwaitingApproval {
                assistant,
                pending,
                decisions,
            } => {
                let calls = saved::waiting_calls(&self.messages, *assistant)?;
                if pending.is_empty() {
                    return Err(RunMismatch::NothingPending);
                }
                if !self.paused.is_empty() {
                    self.paused.check(&calls, pending, &[])?;
                }
                for (index, waiting) in pending.iter().enumerate() {
                    if !self.paused.is_empty() {
                        // Checked above: the calls of paused programs.
                        break;
                    }
                    let call_id = waiting.call_id.clone();
                    let twice = pending[..index].iter().any(|p| p.call_id == call_id);
                    let Some(call) = calls
                        .iter()
                        .find(|call| call.id == call_id)
                        .filter(|_| !twice)
                    else {
                        return Err(RunMismatch::PendingCall { index, call_id });
                    };
                    let field = if call.name != waiting.tool_name {
                        "tool_name"
                    } else if call.arguments != waiting.arguments {
                        "arguments"
                    } else {
                        continue;
                    };
                    return Err(RunMismatch::PendingDiffers {
                        index,
                        call_id,
                        field,
                    });
                }
                if let Some(call_id) = decisions
                    .keys()
                    .find(|id| !pending.iter().any(|p| &p.call_id == *id))
                {
                    return Err(RunMismatch::Decision {
                        call_id: call_id.clone(),
                    });
                }
                Some(*assistant)
            }
            Phase::RunTools { assistant, plan } if !self.paused.is_empty() => {
                let calls = saved::waiting_calls(&self.messages, *assistant)?;
                let planned: Vec<&ToolCall> = plan.iter().map(PlannedCall::call).collect();
                self.paused.check(&calls, &[], &planned)?;
                Some(*assistant)
            }
            Phase::RunTools { assistant, plan } => {
                let calls = saved::waiting_calls(&self.messages, *assistant)?;
                for (index, (planned, call)) in plan.iter().zip(&calls).enumerate() {
                    if planned.call() != *call {
                        return Err(RunMismatch::PlanCall {
                            index,
                            call_id: planned.call().id.clone(),
                        });
                    }
                }
                if plan.len() != calls.len() {
                    return Err(RunMismatch::PlanLength {
                        planned: plan.len(),
                        made: calls.len(),
                    });
                }
                Some(*assistant)
            }
            Phase::Stopped {
                stop: RunStop::AwaitingApproval { .. },
            } => return Err(RunMismatch::StopAwaiting),
            Phase::Stopped {
                stop: RunStop::AwaitingAnswer { .. },
            } => return Err(RunMismatch::StopAwaitingAnswer),
            Phase::CallModel | Phase::Stopped { .. } if !self.asked.is_empty() => {
                return Err(RunMismatch::Asked(
                    "`asked` holds calls, but no batch waits or runs".into(),
                ));
            }
            Phase::CallModel | Phase::Stopped { .. } if !self.paused.is_empty() => {
                return Err(RunMismatch::Paused(
                    "`paused` holds programs, but no batch waits or runs".into(),
                ));
            }
            Phase::CallModel | Phase::Stopped { .. } => None,
        };
        saved::check_results(&self.messages, waiting)
    }

    /// Drops what would let a call run without a person, for a run read without a valid tag: the tools
    /// approved for the rest of the run, the decisions given, and a batch planned to run; every call of
    /// a reply that waits, or was about to run, waits for a decision again (a driver narrows that to its
    /// policy's, [`reapply_approvals`](Self::reapply_approvals)). A plan that only refuses calls (a reply
    /// cut off by the output limit) grants nothing and is kept.
    fn drop_grants(&mut self) {
        self.always_approved.clear();
        let assistant = match &self.phase {
            Phase::AwaitingApproval { assistant, .. } => *assistant,
            Phase::RunTools { assistant, plan }
                if plan.iter().any(|p| matches!(p, PlannedCall::Run { .. })) =>
            {
                *assistant
            }
            _ => return,
        };
        let pending = self
            .assistant(assistant)
            .tool_calls()
            .map(|call| PendingApproval {
                call_id: call.id.clone(),
                tool_name: call.name.clone(),
                arguments: call.arguments.clone(),
                reason: "asked again: the saved run does not carry this application's signature"
                    .to_owned(),
            })
            .collect();
        self.phase = Phase::AwaitingApproval {
            assistant,
            pending,
            decisions: BTreeMap::new(),
        };
        self.progress.reapply = true;
    }
}
