//! Hooks around each tool call: `before_tool_call` may block a call, `after_tool_call` may patch its result.
//! A hook that returns an error or panics turns the call into an error result; it never breaks the batch.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::call::ToolCall;
use crate::content::Content;
use crate::message::AssistantMessage;
use crate::result::{AgentToolResult, Usage};
use crate::tool::definition::AgentTool;

/// What `before_tool_call` sees: the call, its prepared and validated arguments, and the tool.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BeforeToolCallContext {
    /// The call as the model sent it.
    pub call: Arc<ToolCall>,
    /// The arguments after normalization and the tool's prepare step; they passed validation.
    pub args: Arc<Value>,
    /// The tool that will run.
    pub tool: AgentTool,
    /// The assistant message that asked for the call, when the batch came from one.
    pub assistant: Option<Arc<AssistantMessage>>,
}

/// Returned by `before_tool_call` to refuse a call; the reason is the error result the model sees.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Block {
    /// Why the call was refused, for the model.
    pub reason: String,
}

impl Block {
    /// Refuses the call with `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Block {
            reason: reason.into(),
        }
    }
}

/// What `after_tool_call` sees: everything `before_tool_call` saw, plus the result.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AfterToolCallContext {
    /// The call as the model sent it.
    pub call: Arc<ToolCall>,
    /// The validated arguments.
    pub args: Arc<Value>,
    /// The tool that ran.
    pub tool: AgentTool,
    /// Its result.
    pub result: AgentToolResult,
    /// Whether the result is an error.
    pub is_error: bool,
    /// The assistant message that asked for the call, when the batch came from one.
    pub assistant: Option<Arc<AssistantMessage>>,
}

/// Changes `after_tool_call` makes to a result; `None` keeps a field as it is.
///
/// ```
/// use yiem_core::{exec::ToolResultPatch, tool::Content};
///
/// let redact = ToolResultPatch::default().content(vec![Content::text("[redacted]")]);
/// assert!(redact.terminate.is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolResultPatch {
    /// New content.
    pub content: Option<Vec<Content>>,
    /// New details.
    pub details: Option<Value>,
    /// New usage.
    pub usage: Option<Usage>,
    /// New terminate flag.
    pub terminate: Option<bool>,
    /// New error flag.
    pub is_error: Option<bool>,
}

impl ToolResultPatch {
    /// A patch that changes nothing yet.
    pub fn new() -> Self {
        ToolResultPatch::default()
    }

    /// Replaces the content the model reads.
    #[must_use]
    pub fn content(mut self, content: Vec<Content>) -> Self {
        self.content = Some(content);
        self
    }

    /// Replaces the details.
    #[must_use]
    pub fn details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Replaces the usage.
    #[must_use]
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets whether the run ends after this batch.
    #[must_use]
    pub fn terminate(mut self, terminate: bool) -> Self {
        self.terminate = Some(terminate);
        self
    }

    /// Sets whether the result is an error.
    #[must_use]
    pub fn is_error(mut self, is_error: bool) -> Self {
        self.is_error = Some(is_error);
        self
    }

    /// Applies the patch.
    pub fn apply(self, mut result: AgentToolResult) -> AgentToolResult {
        if let Some(content) = self.content {
            result.content = content.into();
        }
        if let Some(details) = self.details {
            result.set_details(details);
        }
        if let Some(usage) = self.usage {
            result = result.with_usage(usage);
        }
        if let Some(terminate) = self.terminate {
            result.terminate = terminate;
        }
        if let Some(is_error) = self.is_error {
            result.is_error = is_error;
        }
        result
    }
}

/// What a hook may return: `Option<T>`, or `Result<Option<T>, E>` with `E: Display` for hooks that can fail.
pub trait HookOutput<T> {
    /// `Err` carries the failure's text.
    fn into_hook_result(self) -> Result<Option<T>, String>;
}

impl<T> HookOutput<T> for Option<T> {
    fn into_hook_result(self) -> Result<Option<T>, String> {
        Ok(self)
    }
}

impl<T, E: Display> HookOutput<T> for Result<Option<T>, E> {
    fn into_hook_result(self) -> Result<Option<T>, String> {
        self.map_err(|error| error.to_string())
    }
}

pub(crate) type BeforeHook = Arc<
    dyn Fn(BeforeToolCallContext) -> BoxFuture<'static, Result<Option<Block>, String>>
        + Send
        + Sync,
>;
pub(crate) type AfterHook = Arc<
    dyn Fn(AfterToolCallContext) -> BoxFuture<'static, Result<Option<ToolResultPatch>, String>>
        + Send
        + Sync,
>;

/// The hooks run around every tool call of a batch.
///
/// ```
/// use yiem_core::exec::{Block, ToolHooks, ToolResultPatch};
///
/// let hooks = ToolHooks::new()
///     .before_tool_call(|ctx| async move {
///         (ctx.call.name == "rm").then(|| Block::new("`rm` needs a human's approval"))
///     })
///     .after_tool_call(|ctx| async move {
///         let failed = ctx.is_error;
///         Ok::<_, String>(failed.then(|| ToolResultPatch::default().terminate(false)))
///     });
/// assert!(hooks.has_before() && hooks.has_after());
/// ```
#[derive(Clone, Default)]
pub struct ToolHooks {
    pub(crate) before: Option<BeforeHook>,
    pub(crate) after: Option<AfterHook>,
}

impl ToolHooks {
    /// No hooks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs before each call, after its arguments validated; returning a [`Block`] refuses the call.
    pub fn before_tool_call<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(BeforeToolCallContext) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: HookOutput<Block>,
    {
        self.before = Some(Arc::new(move |ctx| {
            let outcome = hook(ctx);
            Box::pin(async move { outcome.await.into_hook_result() })
        }));
        self
    }

    /// Runs after each executed call; a [`ToolResultPatch`] changes the result.
    pub fn after_tool_call<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(AfterToolCallContext) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: HookOutput<ToolResultPatch>,
    {
        self.after = Some(Arc::new(move |ctx| {
            let outcome = hook(ctx);
            Box::pin(async move { outcome.await.into_hook_result() })
        }));
        self
    }

    /// Whether a `before_tool_call` hook is set.
    pub fn has_before(&self) -> bool {
        self.before.is_some()
    }

    /// Whether an `after_tool_call` hook is set.
    pub fn has_after(&self) -> bool {
        self.after.is_some()
    }
}

impl std::fmt::Debug for ToolHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolHooks")
            .field("before_tool_call", &self.before.is_some())
            .field("after_tool_call", &self.after.is_some())
            .finish()
    }
}
