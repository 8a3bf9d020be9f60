//! What a program may use ([`CodeLimits`]), and the limit that stopped one ([`LimitExceeded`]).

use std::time::Duration;

/// What a program may use. Each exceeded limit stops the program with a [`LimitExceeded`] naming it.
///
/// ```
/// use std::time::Duration;
/// use yiem_core::code::CodeLimits;
///
/// let limits = CodeLimits::default().max_tool_calls(50).max_time(Duration::from_secs(2));
/// assert_eq!(limits.max_tool_calls, 50);
/// assert_eq!(CodeLimits::default().max_memory_bytes, 64 << 20);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeLimits {
    /// Memory the interpreter may allocate (default 64 MiB).
    pub max_memory_bytes: usize,
    /// Time the interpreter may run, waiting for tools not counted (default 10 s).
    pub max_time: Duration,
    /// Bytes of the program's result (default 64 KiB): what it printed, its value and its error's
    /// message are held to it together, the rest cut with a note saying how much was left out. Printing
    /// past it does not stop the program: what it prints then is left out, and it goes on.
    pub max_output_bytes: usize,
    /// Tool calls the program may make (default 1000).
    pub max_tool_calls: u32,
    /// The interpreter's stack (default 512 KiB): deeper recursion is a `RangeError`.
    pub max_stack_bytes: usize,
}

impl Default for CodeLimits {
    fn default() -> Self {
        CodeLimits {
            max_memory_bytes: 64 << 20,
            max_time: Duration::from_secs(10),
            max_output_bytes: 64 << 10,
            max_tool_calls: 1000,
            max_stack_bytes: 512 << 10,
        }
    }
}

impl CodeLimits {
    /// Sets [`max_memory_bytes`](Self::max_memory_bytes).
    #[must_use]
    pub fn max_memory_bytes(mut self, bytes: usize) -> Self {
        self.max_memory_bytes = bytes;
        self
    }

    /// Sets [`max_time`](Self::max_time).
    #[must_use]
    pub fn max_time(mut self, time: Duration) -> Self {
        self.max_time = time;
        self
    }

    /// Sets [`max_output_bytes`](Self::max_output_bytes).
    #[must_use]
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Sets [`max_tool_calls`](Self::max_tool_calls).
    #[must_use]
    pub fn max_tool_calls(mut self, calls: u32) -> Self {
        self.max_tool_calls = calls;
        self
    }

    /// Sets [`max_stack_bytes`](Self::max_stack_bytes).
    #[must_use]
    pub fn max_stack_bytes(mut self, bytes: usize) -> Self {
        self.max_stack_bytes = bytes;
        self
    }
}

/// The limit a program exceeded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitExceeded {
    /// It allocated more than its memory limit.
    #[error(
        "the program exceeded its memory limit ({} MiB); work on less data at once",
        bytes >> 20
    )]
    Memory {
        /// The limit.
        bytes: usize,
    },
    /// It ran longer than its time limit.
    #[error("the program exceeded its time limit ({limit:?} of run time); make it do less")]
    Time {
        /// The limit.
        limit: Duration,
    },
    /// It made more tool calls than its limit.
    #[error("the program exceeded its limit on tool calls ({calls}); make fewer calls per program")]
    ToolCalls {
        /// The limit.
        calls: u32,
    },
}
