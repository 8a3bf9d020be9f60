//! What a code-mode program's calls need below the executor and the pipeline: the calls a program made
//! ([`RecordedCall`]), a program paused for approvals ([`ProgramPause`]) and what it resumes with
//! ([`ProgramResume`]), and what the `run_code` calls of one batch run with (`Programs`), which the
//! executor and a call's context carry to the `run_code` tool (see `code`).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::PAUSE_KEY;
use crate::decision::{Decision, PendingApproval};
use crate::result::AgentToolResult;

/// One call a program made, as recorded for replay: what it called and what it got.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedCall {
    /// The program call id (`<run_code call id>/code/<n>`).
    pub call_id: String,
    /// The tool called.
    pub tool: String,
    /// The arguments the program passed.
    pub arguments: Value,
    /// Whether the call succeeded.
    pub ok: bool,
    /// What the program got: the value its promise resolved to, or the error text it rejected with.
    pub value: Value,
}

/// A program that paused because some of its calls need approval: those calls, and every call it made
/// before them with its result. It travels in the details of `run_code`'s result (under [`PAUSE_KEY`](crate::code::PAUSE_KEY))
/// to the agent, which keeps it in the saved run until the decisions come.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProgramPause {
    /// The calls that wait, in call order; their `call_id`s are program call ids.
    pub pending: Vec<PendingApproval>,
    /// The calls made before, in order.
    pub journal: Vec<RecordedCall>,
}

impl ProgramPause {
    /// The pause a `run_code` result carries, if it paused.
    pub fn of(result: &AgentToolResult) -> Option<ProgramPause> {
        let value = result.details().get(PAUSE_KEY)?;
        serde_json::from_value(value.clone()).ok()
    }
}

/// What a paused program resumes with: its recorded calls and the decisions on the calls that waited.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProgramResume {
    /// The calls made before the pause.
    pub journal: Vec<RecordedCall>,
    /// A decision per program call id that waited.
    pub decisions: BTreeMap<String, Decision>,
    /// The tools the run approved for the rest of the run ([`Decision::AlwaysApprove`]): the program's
    /// calls of them do not wait.
    pub always_approved: Vec<String>,
}

impl ProgramResume {
    /// Resumes `pause` with `decisions`.
    pub fn new(pause: ProgramPause, decisions: BTreeMap<String, Decision>) -> Self {
        ProgramResume {
            journal: pause.journal,
            decisions,
            always_approved: Vec::new(),
        }
    }

    /// Sets [`always_approved`](Self::always_approved).
    #[must_use]
    pub fn always_approved(mut self, tools: Vec<String>) -> Self {
        self.always_approved = tools;
        self
    }
}

/// What the `run_code` calls of one batch run with, given by the driver through the executor (and so
/// of that batch alone, whichever other runs share the code mode): the programs that resume, by
/// `run_code` call id, and where their calls are journaled.
#[derive(Clone, Default)]
pub(crate) struct Programs {
    /// Where each batch of a program's calls is journaled (a durable driver's journal).
    pub(crate) journal: Option<Arc<dyn crate::journal::CallJournal>>,
    /// The programs that resume, by `run_code` call id.
    pub(crate) resumes: Arc<HashMap<String, ProgramResume>>,
}

impl Programs {
    /// Whether the batch's calls need to know it.
    pub(crate) fn is_empty(&self) -> bool {
        self.journal.is_none() && self.resumes.is_empty()
    }
}

impl fmt::Debug for Programs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Programs")
            .field("journaled", &self.journal.is_some())
            .field("resumes", &self.resumes.keys().collect::<Vec<_>>())
            .finish()
    }
}
