//! [`StepDone`]: what an [`on_step`](crate::DurableAgentBuilder::on_step) observer learns after each
//! durable step, and the names steps have in Restate's journal.

use yiem_core::exec::ToolCall;

/// The kind of a durable step.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepKind {
    /// A model call; `turn` counts the run's model calls from 1.
    Model {
        /// Which model call of the run.
        turn: u32,
    },
    /// One tool call of a batch; `index` is its place in the batch, of `of`.
    Tool {
        /// The call's id, as the model gave it.
        call_id: String,
        /// The tool.
        tool: String,
        /// Its place in the batch, from 0.
        index: usize,
        /// How many calls the batch has.
        of: usize,
    },
    /// One call a code-mode program made (see the crate docs, "Code mode").
    ProgramCall {
        /// The call's id: `<run_code call id>/code/<n>`, the program's `n`th call.
        call_id: String,
        /// The tool.
        tool: String,
    },
}

/// A step whose result is journaled and acknowledged: after a crash, a replay returns that result
/// instead of doing the step again.
///
/// ```
/// use yiem_restate::{StepDone, StepKind};
///
/// fn observe(step: &StepDone) {
///     if let StepKind::Tool { index, of, .. } = &step.kind {
///         println!("{}: call {} of {} is durable ({})", step.conversation, index + 1, of, step.name);
///     }
/// }
/// # let _ = observe;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StepDone {
    /// The conversation (the virtual object's key).
    pub conversation: String,
    /// The step's name in the journal (`model 1`, `turn 1 tool get_weather call_1`).
    pub name: String,
    /// What the step was.
    pub kind: StepKind,
}

/// The journal name of model call `turn` of a run.
pub(crate) fn model_step_name(turn: u32) -> String {
    format!("model {turn}")
}

/// The journal name of a tool call of model call `turn`: the tool and the call id (names are for people
/// reading the journal; Restate matches a replay to the journal by position). A program's call is named
/// the same way, by its program call id (`turn 3 tool get_weather call_1/code/0`).
pub(crate) fn tool_step_name(turn: u32, call: &ToolCall) -> String {
    format!("turn {turn} tool {} {}", call.name, call.id)
}
