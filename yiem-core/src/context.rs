//! [`ToolContext`]: what a running tool knows about its call — the call id, the cancellation token, and a way
//! to stream partial results.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

use crate::result::{AgentToolResult, IntoToolResult};

type UpdateFn = dyn Fn(AgentToolResult) + Send + Sync;

/// Receives partial results and stops accepting them once the call has ended, so an update can never
/// arrive after the call's end.
struct UpdateSink {
    open: AtomicBool,
    deliver: Box<UpdateFn>,
}

/// The context a tool runs in.
///
/// A tool that takes a `ToolContext` (as its first parameter) can read its call id, observe cancellation
/// and stream partial results with [`update`](Self::update).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use yiem_core::ToolContext;
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let ctx = ToolContext::new("call-1").with_updates(move |partial| {
///     sink.lock().unwrap().push(partial.text_content());
/// });
/// ctx.update("50%");
/// ctx.close_updates();
/// ctx.update("too late"); // dropped: the call has ended
/// assert_eq!(*seen.lock().unwrap(), ["50%"]);
/// assert_eq!(ctx.call_id(), "call-1");
/// ```
#[derive(Clone)]
pub struct ToolContext {
    call_id: Arc<str>,
    cancel: CancellationToken,
    updates: Option<Arc<UpdateSink>>,
}

impl ToolContext {
    /// A context for the call `call_id`, with a fresh cancellation token and no update receiver.
    pub fn new(call_id: impl Into<Arc<str>>) -> Self {
        ToolContext {
            call_id: call_id.into(),
            cancel: CancellationToken::new(),
            updates: None,
        }
    }

    /// Uses `token` as this call's cancellation token.
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Delivers each partial result to `deliver` until [`close_updates`](Self::close_updates) is called.
    pub fn with_updates(
        mut self,
        deliver: impl Fn(AgentToolResult) + Send + Sync + 'static,
    ) -> Self {
        self.updates = Some(Arc::new(UpdateSink {
            open: AtomicBool::new(true),
            deliver: Box::new(deliver),
        }));
        self
    }

    /// The id of the tool call being executed.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The call's cancellation token: cancelled when the run is aborted or the call times out.
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes when the call is cancelled; use it in `tokio::select!` to stop early.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// Streams a partial result (each becomes a `ToolExecutionUpdate` event). Updates sent after the call
    /// has ended are dropped.
    pub fn update(&self, partial: impl IntoToolResult) {
        if let Some(sink) = &self.updates
            && sink.open.load(Ordering::Acquire)
        {
            (sink.deliver)(partial.into_tool_result());
        }
    }

    /// Stops delivering updates; called by the executor when the call ends.
    pub fn close_updates(&self) {
        if let Some(sink) = &self.updates {
            sink.open.store(false, Ordering::Release);
        }
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("cancelled", &self.cancel.is_cancelled())
            .field("streams_updates", &self.updates.is_some())
            .finish()
    }
}
