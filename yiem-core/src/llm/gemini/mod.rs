//! Gemini's `streamGenerateContent`: the streaming client ([`client`]) and the wire format of its
//! contents ([`format`]).

pub(crate) mod client;
pub(crate) mod format;

#[doc(hidden)]
pub use client::parse_responses_for_fuzzing as parse_gemini_responses_for_fuzzing;
pub use client::{GeminiConfig, GeminiModel};
pub use format::to_gemini_contents;
