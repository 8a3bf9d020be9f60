//! Programs of the `run_code` tool (code mode) that paused inside a batch because one of their calls needs
//! approval: what the run keeps while it waits — the results of the batch's other calls, and per paused
//! program its recorded calls (the journal its replay feeds back) and the decisions on its waiting calls.
//!
//! It is part of the saved run (`paused`, left out when empty) and so of its tag; the journal says what
//! earlier calls returned, which the conversation cannot vouch for, so a run that carries one is read only
//! with a valid tag (see `saved.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::saved::RunMismatch;
use crate::approval::{Decision, PendingApproval};
use crate::call::{PAUSE_KEY, RUN_CODE, ToolCall, ToolResultMessage};

/// The paused programs of the batch that waits or runs, and the results of its other calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct Paused {
    /// Results of the batch's calls that finished.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    done: Vec<ToolResultMessage>,
    /// The programs that paused, in call order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    programs: Vec<PausedProgram>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct PausedProgram {
    /// The `run_code` call.
    call_id: String,
    /// The calls it made before it paused, with their results.
    journal: Value,
    /// The decisions on its waiting calls, once given.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    decisions: BTreeMap<String, Decision>,
}

/// The shape of a paused program in a `run_code` result.
#[derive(Deserialize)]
struct Pause {
    pending: Vec<PendingApproval>,
    journal: Value,
}

impl Paused {
    pub(super) fn is_empty(&self) -> bool {
        self.programs.is_empty()
    }

    /// The results of a batch, with the results kept from before its programs paused, in the order of
    /// the reply's `calls` (a kept result wins over a new one for the same call).
    pub(super) fn merged(
        &mut self,
        results: Vec<ToolResultMessage>,
        calls: &[ToolCall],
    ) -> Vec<ToolResultMessage> {
        if self.is_empty() && self.done.is_empty() {
            return results;
        }
        let mut all: Vec<ToolResultMessage> = std::mem::take(&mut self.done);
        all.extend(results);
        let mut merged = Vec::with_capacity(all.len());
        for call in calls {
            if let Some(index) = all.iter().position(|r| r.tool_call_id == call.id) {
                merged.push(all.remove(index));
            }
        }
        merged.extend(all);
        self.programs.clear();
        merged
    }

    /// If programs paused in `results`: keeps the other results and the programs, and gives the calls
    /// that wait (program call ids). Otherwise gives the results back.
    pub(super) fn pause(
        &mut self,
        results: Vec<ToolResultMessage>,
    ) -> Result<Vec<ToolResultMessage>, Vec<PendingApproval>> {
        let pause_of = |result: &ToolResultMessage| {
            (result.tool_name == RUN_CODE)
                .then(|| result.result.details().get(PAUSE_KEY))
                .flatten()
                .and_then(|value| serde_json::from_value::<Pause>(value.clone()).ok())
                .filter(|pause| !pause.pending.is_empty())
        };
        if !results.iter().any(|result| pause_of(result).is_some()) {
            return Ok(results);
        }
        let mut pending = Vec::new();
        for result in results {
            match pause_of(&result) {
                Some(pause) => {
                    pending.extend(pause.pending);
                    self.programs.push(PausedProgram {
                        call_id: result.tool_call_id,
                        journal: pause.journal,
                        decisions: BTreeMap::new(),
                    });
                }
                None => self.done.push(result),
            }
        }
        Err(pending)
    }

    /// Once every waiting call has a decision: hands each program its decisions and gives the calls to
    /// run again (the paused programs'), in the reply's order.
    pub(super) fn decided(
        &mut self,
        decisions: &BTreeMap<String, Decision>,
        calls: &[ToolCall],
    ) -> Vec<ToolCall> {
        for program in &mut self.programs {
            program.decisions = decisions
                .iter()
                .filter(|(id, _)| program_of(id) == Some(program.call_id.as_str()))
                .map(|(id, decision)| (id.clone(), decision.clone()))
                .collect();
        }
        calls
            .iter()
            .filter(|call| self.programs.iter().any(|p| p.call_id == call.id))
            .cloned()
            .collect()
    }

    /// Per paused program about to run again: its call id, journal and decisions.
    pub(super) fn resumes(&self) -> Vec<(String, Value, BTreeMap<String, Decision>)> {
        self.programs
            .iter()
            .map(|p| (p.call_id.clone(), p.journal.clone(), p.decisions.clone()))
            .collect()
    }

    /// Checks the kept state against the reply's `calls` and the calls that wait (`pending`) or will run
    /// (`planned`): each program is a `run_code` call of the reply, the kept results answer the reply's
    /// other calls, each once, and every waiting call belongs to a paused program.
    pub(super) fn check(
        &self,
        calls: &[&ToolCall],
        pending: &[PendingApproval],
        planned: &[&ToolCall],
    ) -> Result<(), RunMismatch> {
        let field = |what: &str| Err(RunMismatch::Paused(what.to_owned()));
        for program in &self.programs {
            if !calls
                .iter()
                .any(|call| call.id == program.call_id && call.name == RUN_CODE)
            {
                return field(&format!(
                    "`paused.programs` names `{}`, which is not a `run_code` call of the last reply",
                    program.call_id
                ));
            }
        }
        let paused = |id: &str| self.programs.iter().any(|p| p.call_id == id);
        let open = ("paused", "a paused program");
        super::saved::kept_or_open(calls, &self.done, self.programs.len(), paused, open)
            .or_else(|what| field(&what))?;
        if let Some(waiting) = pending.iter().find(|p| {
            !self
                .programs
                .iter()
                .any(|program| program_of(&p.call_id) == Some(program.call_id.as_str()))
        }) {
            return field(&format!(
                "the waiting call `{}` is not a call of a paused program",
                waiting.call_id
            ));
        }
        if planned
            .iter()
            .any(|call| !self.programs.iter().any(|p| p.call_id == call.id))
        {
            return field("the plan runs a call that is not a paused program");
        }
        Ok(())
    }
}

/// The `run_code` call a program call id (`<call>/code/<n>`) belongs to.
fn program_of(call_id: &str) -> Option<&str> {
    let (outer, number) = call_id.rsplit_once("/code/")?;
    (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())).then_some(outer)
}
