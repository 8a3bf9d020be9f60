//! The `requestState` of this server's `input_required` answers (2026-07-28, SEP-2322): what a request
//! carries from one round to the next — the answers given so far, each with the fingerprint of the
//! question it answered, and the fingerprints of the questions still open — signed with the server's
//! key (HMAC-SHA256), and bound to the request's method and name. State that was changed, made by another
//! server (another key) or for another request is refused with `-32602`; the client calls again without
//! it.
//!
//! Form: `yiem1.` + base64url(JSON) + `.` + base64url(tag).

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use rmcp::ErrorData;
use rmcp::model::InputResponses;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::ask::round::Given;

const PREFIX: &str = "yiem1.";

/// What the tag is computed over before the state: a tag of this server's state is the tag of nothing
/// else made with the same key.
const TAG_CONTEXT: &[u8] = b"yiem mcp request state\n";

/// The key the server signs its request state with: random per server unless the operator gives one
/// ([`McpServer::state_key`](super::McpServer::state_key)) that several servers share.
#[derive(Clone)]
pub(super) struct StateKey([u8; 32]);

impl StateKey {
    pub(super) fn new(bytes: [u8; 32]) -> Self {
        StateKey(bytes)
    }

    /// A fresh key from the operating system's generator.
    pub(super) fn random() -> Self {
        let mut bytes = [0; 32];
        getrandom::fill(&mut bytes).expect("the operating system gives random bytes");
        StateKey(bytes)
    }

    fn mac(&self, state: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes a key of any length");
        mac.update(TAG_CONTEXT);
        mac.update(state);
        mac
    }
}

/// The fingerprint of a question as sent (its JSON): what the state remembers of it.
pub(super) fn fingerprint(question: &Value) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(question.to_string().as_bytes()))
}

/// One answer the state carries: the fingerprint of the question it answered, if known, and the answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Kept {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) question: Option<String>,
    pub(super) answer: Value,
}

/// What a request carries between rounds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct Carried {
    /// The request it belongs to: its method and name (`tools/call` and the tool's).
    scope: String,
    /// The answers given so far, by key.
    #[serde(default)]
    pub(super) answers: BTreeMap<String, Kept>,
    /// The questions of the last round, by key: their fingerprints.
    #[serde(default)]
    pub(super) open: BTreeMap<String, String>,
}

fn scope(method: &str, name: &str) -> String {
    format!("{method} {name}")
}

fn refused(why: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "`requestState` {why}: call again without `requestState` and `inputResponses`, and answer \
             the questions asked then"
        ),
        None,
    )
}

impl StateKey {
    /// The state carried into a round for `method` of `name`: its signed `state` (if any) with the
    /// client's new `responses` — each new answer bound to the question the last round asked under its
    /// key. Refuses state this key did not sign, or signed for another request.
    pub(super) fn open(
        &self,
        method: &str,
        name: &str,
        state: Option<&str>,
        responses: Option<InputResponses>,
    ) -> Result<BTreeMap<String, Given<String, Value>>, ErrorData> {
        let carried = match state {
            None => Carried::default(),
            Some(state) => {
                let (body, tag) = state
                    .strip_prefix(PREFIX)
                    .and_then(|rest| rest.split_once('.'))
                    .ok_or_else(|| refused("is not one this server gave"))?;
                let body = URL_SAFE_NO_PAD
                    .decode(body)
                    .map_err(|_| refused("is not one this server gave"))?;
                let tag = URL_SAFE_NO_PAD
                    .decode(tag)
                    .map_err(|_| refused("is not one this server gave"))?;
                self.mac(&body).verify_slice(&tag).map_err(|_| {
                    refused("was changed, or made by another server: its signature does not match")
                })?;
                let carried: Carried = serde_json::from_slice(&body)
                    .map_err(|_| refused("is not one this server gave"))?;
                if carried.scope != scope(method, name) {
                    return Err(refused(&format!(
                        "was given for another request, not `{method}` of `{name}`"
                    )));
                }
                carried
            }
        };
        let mut given: BTreeMap<String, Given<String, Value>> = carried
            .answers
            .into_iter()
            .map(|(key, kept)| {
                let given = Given {
                    question: kept.question,
                    answer: kept.answer,
                };
                (key, given)
            })
            .collect();
        for (key, answer) in responses.unwrap_or_default() {
            let question = carried.open.get(&key).cloned();
            given.insert(key, Given { question, answer });
        }
        Ok(given)
    }

    /// The signed state of a request for `method` of `name` that stops at the questions `open` (by
    /// key: fingerprints), with the answers `given` so far.
    pub(super) fn seal(
        &self,
        method: &str,
        name: &str,
        given: &BTreeMap<String, Given<String, Value>>,
        open: BTreeMap<String, String>,
    ) -> String {
        let carried = Carried {
            scope: scope(method, name),
            answers: given
                .iter()
                // An answer to a question asked again (another question under its key) is stale.
                .filter(|(key, _)| !open.contains_key(*key))
                .map(|(key, given)| {
                    let kept = Kept {
                        question: given.question.clone(),
                        answer: given.answer.clone(),
                    };
                    (key.clone(), kept)
                })
                .collect(),
            open,
        };
        let body = serde_json::to_vec(&carried).expect("the state is JSON");
        let tag = self.mac(&body).finalize().into_bytes();
        format!(
            "{PREFIX}{}.{}",
            URL_SAFE_NO_PAD.encode(&body),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sealed(key: &StateKey) -> String {
        let given = BTreeMap::from([(
            "user_name".to_owned(),
            Given {
                question: Some("print-1".to_owned()),
                answer: json!({"action": "accept", "content": {"name": "Alice"}}),
            },
        )]);
        let open = BTreeMap::from([("color".to_owned(), "print-2".to_owned())]);
        key.seal("tools/call", "ask", &given, open)
    }

    #[test]
    fn state_signed_by_the_key_carries_its_answers_and_binds_new_ones_to_the_open_questions() {
        let key = StateKey::new([1; 32]);
        let state = sealed(&key);
        let responses = InputResponses::from([("color".to_owned(), json!({"action": "decline"}))]);
        let given = key
            .open("tools/call", "ask", Some(&state), Some(responses))
            .unwrap();
        assert_eq!(given["user_name"].question.as_deref(), Some("print-1"));
        assert_eq!(given["user_name"].answer["content"]["name"], "Alice");
        assert_eq!(given["color"].question.as_deref(), Some("print-2"));
    }

    #[test]
    fn changed_foreign_or_misplaced_state_is_refused() {
        let key = StateKey::new([1; 32]);
        let state = sealed(&key);
        let tampered = format!("{state}-TAMPERED");
        let other_key = StateKey::new([2; 32]);
        let mut flipped = state.clone().into_bytes();
        let at = PREFIX.len() + 3;
        flipped[at] = if flipped[at] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap();
        for (state, said) in [
            (tampered.as_str(), "signature does not match"),
            (flipped.as_str(), "signature does not match"),
            ("yiem-answers:{}", "is not one this server gave"),
            ("", "is not one this server gave"),
        ] {
            let refused = key
                .open("tools/call", "ask", Some(state), None)
                .unwrap_err();
            assert!(
                refused.message.contains(said),
                "{state}: {}",
                refused.message
            );
        }
        let foreign = other_key.open("tools/call", "ask", Some(&state), None);
        assert!(foreign.unwrap_err().message.contains("another server"));
        let elsewhere = key.open("prompts/get", "ask", Some(&state), None);
        assert!(elsewhere.unwrap_err().message.contains("another request"));
    }
}
