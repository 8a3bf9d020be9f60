//! Asking from inside a call: the person behind it ([`Elicitation`], answered by an
//! [`ElicitationHandler`]), their model ([`Sampling`]), and
//! logging to them ([`LogLevel`]). A tool asks through
//! [`ToolContext::elicit`](crate::tool::ToolContext::elicit) and [`ToolContext::sample`](crate::tool::ToolContext::sample).

pub(crate) mod elicit;
pub(crate) mod questions;
pub(crate) mod sample;

pub use self::elicit::{ElicitError, Elicitation, ElicitationAnswer, ElicitationHandler, LogLevel};
pub use self::sample::{SampledMessage, Sampling, SamplingAnswer, SamplingHandler};
