//! Asking from inside a call: the person behind it ([`Elicitation`], answered by an
//! [`ElicitationHandler`]), their model ([`Sampling`]), and
//! logging to them ([`LogLevel`]). A tool asks one question at a time through
//! [`ToolContext::elicit`](crate::tool::ToolContext::elicit) and [`ToolContext::sample`](crate::tool::ToolContext::sample),
//! or several at once, under keys of its own, through [`ToolContext::ask`](crate::tool::ToolContext::ask)
//! ([`Questions`], [`Answers`]). Whoever answers, the bookkeeping of a call that stops at questions and
//! runs again once they are answered (keys, answers given back, open questions) is one: `round`.

pub(crate) mod elicit;
pub(crate) mod questions;
pub(crate) mod round;
pub(crate) mod sample;

pub use self::elicit::batch::{Answer, Answers, Question, Questions, Root};
pub use self::elicit::{ElicitError, Elicitation, ElicitationAnswer, ElicitationHandler, LogLevel};
pub use self::sample::{SampledMessage, Sampling, SamplingAnswer, SamplingHandler};
