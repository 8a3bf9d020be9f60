//! [`RunLimits`]: how far one run may go — model calls (turns) and tokens — before it stops with a
//! distinct [`RunStop`](crate::agent::RunStop), resumable with higher limits.

use serde::{Deserialize, Serialize};

use crate::result::Usage;

/// The turn limit a run gets unless told otherwise.
pub const DEFAULT_MAX_TURNS: u32 = 50;

/// Limits of one run, checked before every model call. Reaching one stops the run with
/// [`RunStop::TurnLimit`](crate::agent::RunStop::TurnLimit) or [`RunStop::UsageLimit`](crate::agent::RunStop::UsageLimit);
/// the conversation stays valid (every tool call has its result) and the run resumes once the limit is
/// raised.
///
/// ```
/// use yiem_core::{agent::RunLimits, message::Usage};
///
/// let limits = RunLimits::default();
/// assert_eq!(limits.max_turns, Some(50));
/// assert!(RunLimits::unlimited().max_turns.is_none());
///
/// let tight = RunLimits::default().max_total_tokens(Some(1_000));
/// let used = Usage::new(800, 300);
/// assert_eq!(tight.usage_exceeded(&used), Some("1100 tokens used of the 1000 allowed".to_owned()));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct RunLimits {
    /// Model calls per run (`None`: no limit). Default: [`DEFAULT_MAX_TURNS`].
    pub max_turns: Option<u32>,
    /// Input tokens per run, as the model reports them.
    pub max_input_tokens: Option<u64>,
    /// Output tokens per run.
    pub max_output_tokens: Option<u64>,
    /// Input plus output tokens per run.
    pub max_total_tokens: Option<u64>,
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            max_turns: Some(DEFAULT_MAX_TURNS),
            max_input_tokens: None,
            max_output_tokens: None,
            max_total_tokens: None,
        }
    }
}

impl RunLimits {
    /// At most `turns` model calls (`None`: no limit).
    #[must_use]
    pub fn max_turns(mut self, turns: Option<u32>) -> Self {
        self.max_turns = turns;
        self
    }

    /// At most this many input tokens over the run (`None`: no limit).
    #[must_use]
    pub fn max_input_tokens(mut self, tokens: Option<u64>) -> Self {
        self.max_input_tokens = tokens;
        self
    }

    /// At most this many output tokens over the run (`None`: no limit).
    #[must_use]
    pub fn max_output_tokens(mut self, tokens: Option<u64>) -> Self {
        self.max_output_tokens = tokens;
        self
    }

    /// At most this many tokens, input and output, over the run (`None`: no limit).
    #[must_use]
    pub fn max_total_tokens(mut self, tokens: Option<u64>) -> Self {
        self.max_total_tokens = tokens;
        self
    }

    /// No limit at all: a run goes on until the model stops calling tools.
    pub fn unlimited() -> Self {
        RunLimits {
            max_turns: None,
            ..RunLimits::default()
        }
    }

    /// Whether a run that used `usage` may not call the model again; the text says which limit.
    pub fn usage_exceeded(&self, usage: &Usage) -> Option<String> {
        let over = |used: u64, limit: Option<u64>, what: &str| {
            limit
                .filter(|limit| used >= *limit)
                .map(|limit| format!("{used} {what} used of the {limit} allowed"))
        };
        over(usage.input_tokens, self.max_input_tokens, "input tokens")
            .or_else(|| over(usage.output_tokens, self.max_output_tokens, "output tokens"))
            .or_else(|| over(usage.total(), self.max_total_tokens, "tokens"))
    }

    /// Whether `turns` model calls use up the turn limit.
    pub fn turn_limit_reached(&self, turns: u32) -> bool {
        self.max_turns.is_some_and(|limit| turns >= limit)
    }
}
