//! Adapters from a `#[tool]` function to the type-erased tool handler. The macro passes the user's function
//! unchanged; these traits say which signatures and types are accepted, and their diagnostics say what to
//! write instead.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::args::{self, ArgumentError};
use crate::context::ToolContext;
use crate::result::{AgentToolResult, IntoToolResult};
use crate::tool::{ErasedHandler, ToolFuture};

/// The arguments of a `#[tool]` function: an owned type that serde can deserialize and schemars can
/// describe. Implemented for every such type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the arguments of a tool",
    label = "tool arguments need `Deserialize` and `JsonSchema`",
    note = "derive both on the argument struct: `#[derive(serde::Deserialize, schemars::JsonSchema)]`"
)]
pub trait ToolArgs: DeserializeOwned + JsonSchema + Send + 'static {}

impl<T: DeserializeOwned + JsonSchema + Send + 'static> ToolArgs for T {}

/// Signature marker: `fn(args)`.
pub enum ArgsOnly {}
/// Signature marker: `fn(ctx, args)`.
pub enum CtxArgs {}
/// Signature marker: `fn()`.
pub enum Nothing {}
/// Signature marker: `fn(ctx)`.
pub enum CtxOnly {}

/// The "arguments" of a tool that takes none.
pub struct NoArgs;

/// Checks made on typed arguments after they parse (`#[tool(validate = path)]`).
pub type ValidateFn<A> = fn(&A) -> Result<(), String>;

/// How an async tool function of signature kind `K` is called.
pub trait AsyncCall<A, K>: Send + Sync + 'static {
    /// The future the function returns.
    type Fut: Future + Send + 'static;
    /// Calls the function.
    fn call(&self, ctx: ToolContext, args: A) -> Self::Fut;
}

/// How a plain (blocking) tool function of signature kind `K` is called.
pub trait BlockingCall<A, K>: Send + Sync + 'static {
    /// What the function returns.
    type Output: IntoToolResult;
    /// Calls the function.
    fn call(&self, ctx: ToolContext, args: A) -> Self::Output;
}

impl<F, Fut, A> AsyncCall<A, ArgsOnly> for F
where
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
{
    type Fut = Fut;
    fn call(&self, _ctx: ToolContext, args: A) -> Fut {
        self(args)
    }
}

impl<F, Fut, A> AsyncCall<A, CtxArgs> for F
where
    F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
{
    type Fut = Fut;
    fn call(&self, ctx: ToolContext, args: A) -> Fut {
        self(ctx, args)
    }
}

impl<F, R, A> BlockingCall<A, ArgsOnly> for F
where
    F: Fn(A) -> R + Send + Sync + 'static,
    R: IntoToolResult,
{
    type Output = R;
    fn call(&self, _ctx: ToolContext, args: A) -> R {
        self(args)
    }
}

impl<F, R, A> BlockingCall<A, CtxArgs> for F
where
    F: Fn(ToolContext, A) -> R + Send + Sync + 'static,
    R: IntoToolResult,
{
    type Output = R;
    fn call(&self, ctx: ToolContext, args: A) -> R {
        self(ctx, args)
    }
}

impl<F, Fut> AsyncCall<NoArgs, Nothing> for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
{
    type Fut = Fut;
    fn call(&self, _ctx: ToolContext, _args: NoArgs) -> Fut {
        self()
    }
}

impl<F, Fut> AsyncCall<NoArgs, CtxOnly> for F
where
    F: Fn(ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
{
    type Fut = Fut;
    fn call(&self, ctx: ToolContext, _args: NoArgs) -> Fut {
        self(ctx)
    }
}

impl<F, R> BlockingCall<NoArgs, Nothing> for F
where
    F: Fn() -> R + Send + Sync + 'static,
    R: IntoToolResult,
{
    type Output = R;
    fn call(&self, _ctx: ToolContext, _args: NoArgs) -> R {
        self()
    }
}

impl<F, R> BlockingCall<NoArgs, CtxOnly> for F
where
    F: Fn(ToolContext) -> R + Send + Sync + 'static,
    R: IntoToolResult,
{
    type Output = R;
    fn call(&self, ctx: ToolContext, _args: NoArgs) -> R {
        self(ctx)
    }
}

/// What a `#[tool]` function's handler knows about its types.
pub trait TypedHandler: Send + Sync + 'static {
    /// The canonical input schema (`None`: no arguments).
    fn input_schema() -> Option<Value>;
    /// The output schema of the return type.
    fn output_schema() -> Option<Value>;
    /// Parses and validates the arguments and returns the call, not yet started.
    fn bind_typed(
        &self,
        tool: &str,
        args: &Value,
        ctx: ToolContext,
    ) -> Result<ToolFuture, ArgumentError>;
}

impl<H: TypedHandler> ErasedHandler for H {
    fn bind(
        &self,
        tool: &str,
        args: &Value,
        ctx: ToolContext,
    ) -> Result<ToolFuture, ArgumentError> {
        self.bind_typed(tool, args, ctx)
    }
}

/// An async `#[tool]` function of signature kind `K` over arguments `A`.
pub struct AsyncTool<F, A, K> {
    f: F,
    validate: Option<ValidateFn<A>>,
    _kind: PhantomData<fn() -> K>,
}

impl<F, A, K> AsyncTool<F, A, K> {
    /// Wraps `f`.
    pub fn new(f: F, validate: Option<ValidateFn<A>>) -> Self {
        AsyncTool {
            f,
            validate,
            _kind: PhantomData,
        }
    }
}

/// A plain (blocking) `#[tool]` function; it runs on tokio's blocking threads.
pub struct BlockingTool<F, A, K> {
    f: Arc<F>,
    validate: Option<ValidateFn<A>>,
    _kind: PhantomData<fn() -> K>,
}

impl<F, A, K> BlockingTool<F, A, K> {
    /// Wraps `f`.
    pub fn new(f: F, validate: Option<ValidateFn<A>>) -> Self {
        BlockingTool {
            f: Arc::new(f),
            validate,
            _kind: PhantomData,
        }
    }
}

fn parse_and_validate<A: Parse>(
    tool: &str,
    args: &Value,
    validate: Option<ValidateFn<A>>,
) -> Result<A, ArgumentError> {
    let parsed = A::parse(tool, args)?;
    if let Some(validate) = validate {
        validate(&parsed).map_err(|message| ArgumentError::invalid(tool, "", message))?;
    }
    Ok(parsed)
}

/// Argument parsing for both typed arguments and "no arguments".
pub trait Parse: Sized + Send + 'static {
    /// The canonical schema (`None`: no arguments).
    fn schema() -> Option<Value>;
    /// Parses `args`.
    fn parse(tool: &str, args: &Value) -> Result<Self, ArgumentError>;
}

impl<A: ToolArgs> Parse for A {
    fn schema() -> Option<Value> {
        Some(schemars::schema_for!(A).to_value())
    }
    fn parse(tool: &str, args: &Value) -> Result<Self, ArgumentError> {
        args::parse(tool, args)
    }
}

impl Parse for NoArgs {
    fn schema() -> Option<Value> {
        None
    }
    fn parse(_tool: &str, _args: &Value) -> Result<Self, ArgumentError> {
        Ok(NoArgs)
    }
}

impl<F, A, K> TypedHandler for AsyncTool<F, A, K>
where
    F: AsyncCall<A, K>,
    <F::Fut as Future>::Output: IntoToolResult,
    A: Parse,
    K: 'static,
{
    fn input_schema() -> Option<Value> {
        A::schema()
    }

    fn output_schema() -> Option<Value> {
        <<F::Fut as Future>::Output as IntoToolResult>::output_schema()
    }

    fn bind_typed(
        &self,
        tool: &str,
        args: &Value,
        ctx: ToolContext,
    ) -> Result<ToolFuture, ArgumentError> {
        let parsed = parse_and_validate(tool, args, self.validate)?;
        let call = self.f.call(ctx, parsed);
        Ok(Box::pin(async move { call.await.into_tool_result() }))
    }
}

impl<F, A, K> TypedHandler for BlockingTool<F, A, K>
where
    F: BlockingCall<A, K>,
    A: Parse,
    K: 'static,
{
    fn input_schema() -> Option<Value> {
        A::schema()
    }

    fn output_schema() -> Option<Value> {
        <F::Output as IntoToolResult>::output_schema()
    }

    fn bind_typed(
        &self,
        tool: &str,
        args: &Value,
        ctx: ToolContext,
    ) -> Result<ToolFuture, ArgumentError> {
        let parsed = parse_and_validate(tool, args, self.validate)?;
        let f = Arc::clone(&self.f);
        Ok(Box::pin(async move {
            let run = move || f.call(ctx, parsed).into_tool_result();
            match tokio::runtime::Handle::try_current() {
                // Off the async threads, so a slow plain fn never stalls other tools.
                Ok(runtime) => match runtime.spawn_blocking(run).await {
                    Ok(result) => result,
                    Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
                    Err(_) => AgentToolResult::error("the tool's blocking task was cancelled"),
                },
                Err(_) => run(),
            }
        }))
    }
}
