//! OpenAI's Responses API: the streaming client ([`client`]) and the wire format of its input
//! ([`format`]).

pub(crate) mod client;
pub(crate) mod format;
pub(crate) mod stream;

pub use client::{
    DEFAULT_RESPONSES_MODEL, OPENAI_BASE_URL, OpenAiResponsesConfig, OpenAiResponsesModel,
};
pub use format::to_responses_input;
#[doc(hidden)]
pub use stream::parse_events_for_fuzzing as parse_responses_events_for_fuzzing;
