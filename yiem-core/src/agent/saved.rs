//! Saved runs read back from outside: what a run is checked against when it is read (its own
//! conversation, [`RunMismatch`]), and what it may carry only under the application's integrity tag
//! ([`RunKey`], [`Signature`]).
//!
//! A saved run is a file a person (or a program) can edit. Everything the conversation decides is checked
//! against it: the calls that wait or run are the calls of the last reply, with the arguments they will
//! run with; the plan holds those calls and no other; every earlier call has exactly one result. A run
//! that disagrees is refused, with the field named.
//!
//! The grants — decisions already given, tools approved for the rest of the run, a batch planned to run —
//! let a call run without a person, and the conversation cannot vouch for them. A run read with a valid
//! tag keeps them; any other run keeps its conversation and asks again: its grants are dropped and every
//! call of its last reply waits for a decision (a driver narrows that to the calls its approval policy
//! asks about, [`AgentRun::reapply_approvals`](super::AgentRun::reapply_approvals)).
//!
//! # The tag
//!
//! `tag` is a member of the saved object: lowercase hex of HMAC-SHA-256, keyed with the [`RunKey`], over
//! the bytes `yiem saved run\n` followed by the canonical form of the saved object without its `tag`
//! member. The canonical form is the JSON value written compactly (no whitespace), every object's members
//! sorted by the UTF-8 bytes of their names, strings and numbers written as `serde_json` writes them
//! (numbers as read: whole numbers as integers, others as the shortest `f64` that reads back the same).
//! So the tag does not depend on the order of members or on whitespace, and any change of a value
//! breaks it.

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::call::{ToolCall, ToolResultMessage};
use crate::message::{AgentMessage, StopReason};

/// What the tag is computed over, before the canonical form: the tag of a run cannot be the tag of
/// anything else made with the same key.
const TAG_CONTEXT: &[u8] = b"yiem saved run\n";

/// The member of a saved run that holds its tag.
pub(super) const TAG: &str = "tag";

/// The application's key for the integrity tag of saved runs ([`AgentRun::to_json_signed`],
/// [`AgentRun::from_json_verified`]): 32 bytes, kept where only the application reads them (`yiem chat`
/// keeps one per user, in its data directory, readable by the user only).
///
/// ```
/// use yiem_core::agent::RunKey;
///
/// let key = RunKey::new([7; 32]);
/// assert_eq!(RunKey::from_hex(&key.to_hex()).unwrap().to_hex(), key.to_hex());
/// assert_eq!(format!("{key:?}"), "RunKey(..)");
/// assert!(RunKey::from_hex("not hex").is_none());
/// ```
///
/// [`AgentRun::to_json_signed`]: super::AgentRun::to_json_signed
/// [`AgentRun::from_json_verified`]: super::AgentRun::from_json_verified
// No `PartialEq`: a key is compared with nothing but through the tags it makes (in constant time).
#[derive(Clone)]
pub struct RunKey([u8; 32]);

impl RunKey {
    /// A key of these bytes (make them with a secure random generator).
    pub fn new(bytes: [u8; 32]) -> Self {
        RunKey(bytes)
    }

    /// A key from 64 hexadecimal digits (surrounding whitespace ignored), as [`to_hex`](Self::to_hex)
    /// writes it; `None` for anything else.
    pub fn from_hex(text: &str) -> Option<Self> {
        decode_hex(text.trim()).map(RunKey)
    }

    /// The key as 64 lowercase hexadecimal digits, for storing it.
    pub fn to_hex(&self) -> String {
        encode_hex(&self.0)
    }

    /// The tag of `run` (a saved run's JSON object; its `tag` member, if any, left out).
    pub(super) fn tag(&self, run: &Value) -> String {
        encode_hex(&self.mac(run).finalize().into_bytes())
    }

    /// Whether `tag` is the tag of `run`, compared in constant time.
    pub(super) fn verify(&self, run: &Value, tag: &str) -> bool {
        decode_hex::<32>(tag).is_some_and(|tag| self.mac(run).verify_slice(&tag).is_ok())
    }

    fn mac(&self, run: &Value) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes a key of any length");
        mac.update(TAG_CONTEXT);
        let mut bytes = Vec::new();
        match run {
            Value::Object(members) => {
                let kept: Vec<(&String, &Value)> =
                    members.iter().filter(|(name, _)| *name != TAG).collect();
                write_object(&kept, &mut bytes);
            }
            other => write_canonical(other, &mut bytes),
        }
        mac.update(&bytes);
        mac
    }
}

impl fmt::Debug for RunKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RunKey(..)")
    }
}

/// What [`AgentRun::from_json_verified`](super::AgentRun::from_json_verified) found of a run's tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Signature {
    /// The tag is the key's: the run's grants are kept.
    Valid,
    /// The run has no tag: its grants were dropped, and its waiting calls are asked again.
    Missing,
    /// The tag is not the key's (the run was changed, or tagged with another key): its grants were
    /// dropped, and its waiting calls are asked again.
    Invalid,
}

/// How a saved run disagrees with its own conversation (see [`ResumeError::Mismatch`]): each names the
/// field of the saved object that is wrong.
///
/// [`ResumeError::Mismatch`]: super::ResumeError::Mismatch
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunMismatch {
    /// The phase's calls are not those of the last message, a reply with tool calls.
    #[error(
        "`phase.assistant` is {index}: the calls that wait or run are those of the last message, a reply with tool calls"
    )]
    Assistant {
        /// The index the phase gives.
        index: usize,
    },
    /// Two calls of a reply share an id.
    #[error("`messages[{message}]` has two tool calls with id `{call_id}`")]
    DuplicateCall {
        /// The reply's index.
        message: usize,
        /// The id.
        call_id: String,
    },
    /// The run waits for approvals, and no call is pending.
    #[error(
        "`phase.pending` is empty: a run waits for approvals only while a call of its reply does"
    )]
    NothingPending,
    /// A pending entry names a call the reply did not make, or one already pending.
    #[error(
        "`phase.pending[{index}]` names call `{call_id}`, which the last reply did not make (or which is pending twice)"
    )]
    PendingCall {
        /// The entry's index.
        index: usize,
        /// The id it names.
        call_id: String,
    },
    /// A pending entry shows a call other than the one that will run.
    #[error(
        "`phase.pending[{index}].{field}` differs from call `{call_id}` of the last reply: a pending call shows what will run"
    )]
    PendingDiffers {
        /// The entry's index.
        index: usize,
        /// The call.
        call_id: String,
        /// `tool_name` or `arguments`.
        field: &'static str,
    },
    /// A decision answers a call that is not pending.
    #[error("`phase.decisions` answers call `{call_id}`, which is not pending")]
    Decision {
        /// The id decided.
        call_id: String,
    },
    /// The plan holds a call other than the reply's call at that place.
    #[error(
        "`phase.plan[{index}]` is call `{call_id}`, which is not the last reply's call at that place (as made, or as a person edited it)"
    )]
    PlanCall {
        /// The entry's index.
        index: usize,
        /// The id it names.
        call_id: String,
    },
    /// The plan and the reply have a different number of calls.
    #[error("`phase.plan` has {planned} calls, and the last reply made {made}")]
    PlanLength {
        /// The calls planned.
        planned: usize,
        /// The calls made.
        made: usize,
    },
    /// A call of the conversation has no result, or more than one.
    #[error(
        "call `{call_id}` of `messages[{message}]` has {results} results: every call of a reply has exactly one before the next reply"
    )]
    Results {
        /// The reply's index.
        message: usize,
        /// The call.
        call_id: String,
        /// The results found.
        results: usize,
    },
    /// A stopped phase claims to wait for approvals.
    #[error(
        "`phase.stop` is `awaiting_approval`: a run that waits has the state `awaiting_approval`"
    )]
    StopAwaiting,
    /// A stopped phase claims to wait for answers.
    #[error("`phase.stop` is `awaiting_answer`: a run that waits has the state `awaiting_answer`")]
    StopAwaitingAnswer,
    /// The paused code-mode programs disagree with the reply whose batch waits or runs.
    #[error("`paused` disagrees with the last reply: {0}")]
    Paused(String),
    /// The questions that wait, or the calls that asked them, disagree with the reply whose batch
    /// waits or runs again.
    #[error("`asked` disagrees with the last reply: {0}")]
    Asked(String),
}

/// The calls of a reply that waits or runs, checked: `messages[index]` is the last message, a reply with
/// tool calls (not one that failed), whose ids are unique.
pub(super) fn waiting_calls(
    messages: &[AgentMessage],
    index: usize,
) -> Result<Vec<&ToolCall>, RunMismatch> {
    let reply = match messages.get(index) {
        Some(AgentMessage::Assistant(reply))
            if index + 1 == messages.len() && !failed(reply.stop_reason) =>
        {
            reply
        }
        _ => return Err(RunMismatch::Assistant { index }),
    };
    let calls: Vec<&ToolCall> = reply.tool_calls().collect();
    if calls.is_empty() {
        return Err(RunMismatch::Assistant { index });
    }
    unique(index, &calls)?;
    Ok(calls)
}

/// Every call of every reply before `waiting` (the reply whose calls wait or run, if any) has exactly one
/// result between it and the next reply. Replies that failed or were aborted are not sent to a model
/// again, and their calls need none.
pub(super) fn check_results(
    messages: &[AgentMessage],
    waiting: Option<usize>,
) -> Result<(), RunMismatch> {
    for (index, message) in messages.iter().enumerate() {
        let AgentMessage::Assistant(reply) = message else {
            continue;
        };
        if Some(index) == waiting || failed(reply.stop_reason) {
            continue;
        }
        let calls: Vec<&ToolCall> = reply.tool_calls().collect();
        unique(index, &calls)?;
        let answers: Vec<&str> = messages[index + 1..]
            .iter()
            .take_while(|message| !matches!(message, AgentMessage::Assistant(_)))
            .filter_map(|message| match message {
                AgentMessage::ToolResult(result) => Some(result.tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        for call in calls {
            let results = answers.iter().filter(|id| **id == call.id).count();
            if results != 1 {
                return Err(RunMismatch::Results {
                    message: index,
                    call_id: call.id.clone(),
                    results,
                });
            }
        }
    }
    Ok(())
}

/// The one rule of a run saved while a reply's calls wait: each call of the reply has exactly one kept
/// result in `done` or is one of the open calls (`is_open`: a call that asked, a paused program), and
/// `done` holds nothing else. The error names the `part` of the saved run (`asked`, `paused`) and what an
/// open call is there.
pub(super) fn kept_or_open(
    calls: &[&ToolCall],
    done: &[ToolResultMessage],
    open: usize,
    is_open: impl Fn(&str) -> bool,
    (part, open_call): (&str, &str),
) -> Result<(), String> {
    for (index, call) in calls.iter().enumerate() {
        let kept = done.iter().filter(|r| r.tool_call_id == call.id).count();
        if kept + usize::from(is_open(&call.id)) != 1 {
            return Err(format!(
                "call {index} (`{}`) of the last reply must have one kept result or be {open_call}",
                call.id
            ));
        }
    }
    if done.len() + open != calls.len() {
        return Err(format!(
            "`{part}.done` holds results of calls that are not the last reply's"
        ));
    }
    Ok(())
}

fn unique(message: usize, calls: &[&ToolCall]) -> Result<(), RunMismatch> {
    for (index, call) in calls.iter().enumerate() {
        if calls[..index].iter().any(|earlier| earlier.id == call.id) {
            return Err(RunMismatch::DuplicateCall {
                message,
                call_id: call.id.clone(),
            });
        }
    }
    Ok(())
}

/// A reply that failed or was aborted: its calls never run, and providers leave it out.
pub(super) fn failed(stop_reason: StopReason) -> bool {
    matches!(stop_reason, StopReason::Error | StopReason::Aborted)
}

/// `value` written canonically: object keys sorted by their bytes, no white space (what a signature or a
/// fingerprint is computed over, whatever order the keys came in).
#[cfg(feature = "mcp-client")]
pub(crate) fn canonical_json(value: &Value) -> Vec<u8> {
    let mut bytes = Vec::new();
    write_canonical(value, &mut bytes);
    bytes
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(members) => {
            let members: Vec<(&String, &Value)> = members.iter().collect();
            write_object(&members, out);
        }
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => {
            serde_json::to_writer(&mut *out, scalar).expect("writing a JSON scalar to memory");
        }
    }
}

fn write_object(members: &[(&String, &Value)], out: &mut Vec<u8>) {
    let mut members = members.to_vec();
    members.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    out.push(b'{');
    for (index, (name, value)) in members.into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, name).expect("writing a JSON string to memory");
        out.push(b':');
        write_canonical(value, out);
    }
    out.push(b'}');
}

fn encode_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(DIGITS[usize::from(byte >> 4)] as char);
        text.push(DIGITS[usize::from(byte & 15)] as char);
    }
    text
}

fn decode_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != N * 2 {
        return None;
    }
    let mut bytes = [0u8; N];
    for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
        let high = char::from(pair[0]).to_digit(16)?;
        let low = char::from(pair[1]).to_digit(16)?;
        *byte = u8::try_from(high * 16 + low).ok()?;
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_tag_does_not_depend_on_member_order_or_the_tag_member() {
        let key = RunKey::new([1; 32]);
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": {"y": [1, 2.5], "x": "é"}}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":"é","y":[1,2.5]},"b":1,"tag":"00"}"#).unwrap();
        assert_eq!(key.tag(&a), key.tag(&b));
        assert!(key.verify(&b, &key.tag(&a)));
        assert!(!key.verify(
            &json!({"b": 2, "a": {"y": [1, 2.5], "x": "é"}}),
            &key.tag(&a)
        ));
        assert!(!RunKey::new([2; 32]).verify(&a, &key.tag(&a)));
        assert!(!key.verify(&a, "zz"));
    }

    #[test]
    fn the_canonical_form_is_compact_and_sorted() {
        let mut out = Vec::new();
        write_canonical(
            &json!({"z": [true, null], "a": {"c": 1, "b": "\n"}}),
            &mut out,
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":{"b":"\n","c":1},"z":[true,null]}"#
        );
    }
}
