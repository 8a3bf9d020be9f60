//! Anthropic's Messages API: the streaming client ([`client`]) and the wire format of its messages
//! ([`format`]).

pub(crate) mod client;
pub(crate) mod format;
pub(crate) mod stream;

pub use client::{
    AnthropicConfig, AnthropicModel, AnthropicToolSearch, CodeExecutionVersion, PromptCache,
};
pub use format::to_anthropic_messages;
#[doc(hidden)]
pub use stream::parse_events_for_fuzzing as parse_anthropic_events_for_fuzzing;
