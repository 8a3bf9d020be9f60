//! OpenAI's chat completions: the wire format of the conversation ([`format`], in every build, since it
//! needs no HTTP) and, with the `openai` feature, the streaming client ([`client`]).

#[cfg(feature = "openai")]
pub(crate) mod client;
pub(crate) mod format;

#[doc(hidden)]
#[cfg(feature = "openai")]
pub use client::parse_chunks_for_fuzzing;
#[cfg(feature = "openai")]
pub use client::{API_KEY_ENV, BASE_URL_ENV, DEFAULT_MODEL, MODEL_ENV, OpenAiConfig, OpenAiModel};
pub use format::{
    MessageFormat, OpenAiFormat, assistant_from_openai, extract_tool_calls, to_openai_messages,
};
