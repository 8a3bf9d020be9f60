//! Adapters from a `#[tool]` function to the type-erased tool handler. The macro passes the user's function
//! unchanged; these traits say which signatures and types are accepted, and their diagnostics say what to
//! write instead.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::args::{self, ArgumentCheck, ArgumentError, ArgumentProblem};
use crate::guard;
use crate::result::{AgentToolResult, IntoToolResult};
use crate::state::{MissingState, State, StateKey, ToolState};
use crate::tool::context::{ContextSlot, ToolContext};
use crate::tool::definition::{ErasedHandler, Refusal, ToolFuture};

/// Parses JSON text in one pass, given which top-level keys are allowed.
type ParseText<A> = fn(&str, &dyn Fn(&str) -> bool) -> Option<A>;

/// How to parse a tool's arguments, and their canonical schema. Made by [`args_spec`] (typed arguments) or
/// [`no_args_spec`], so that a bad argument type is reported once, on the user's type.
pub struct ArgsSpec<A> {
    parse: fn(&Value) -> Result<A, ArgumentProblem>,
    /// The one-pass path for JSON text; `None` sends the call down the `Value` path.
    parse_text: ParseText<A>,
    schema: fn() -> Option<Value>,
}

impl<A> Clone for ArgsSpec<A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for ArgsSpec<A> {}

impl<A> ArgsSpec<A> {
    /// The canonical schema (`None`: no arguments).
    pub fn schema(&self) -> fn() -> Option<Value> {
        self.schema
    }
}

/// The spec of typed arguments.
pub fn args_spec<A: ToolArgs>() -> ArgsSpec<A> {
    ArgsSpec {
        parse: args::parse::<A>,
        parse_text: args::parse_text::<A>,
        schema: || Some(schemars::schema_for!(A).to_value()),
    }
}

/// The spec of "no arguments": anything object-shaped is accepted, the schema is the empty object.
pub fn no_args_spec() -> ArgsSpec<NoArgs> {
    ArgsSpec {
        parse: |_| Ok(NoArgs),
        parse_text: |_, _| None,
        schema: || None,
    }
}

/// The text of a free-text tool's arguments, `{"input": "<text>"}` (see [`TextFormat`](crate::tool::TextFormat)).
#[derive(serde::Deserialize)]
struct FreeText {
    input: String,
}

/// The spec of a free-text tool's `String` parameter (`#[tool(free_text)]`, `#[tool(grammar(...))]`): the
/// text of `{"input": "<text>"}`.
pub fn free_text_spec() -> ArgsSpec<String> {
    ArgsSpec {
        parse: |value| args::parse::<FreeText>(value).map(|args| args.input),
        parse_text: |text, allows| {
            args::parse_text::<FreeText>(text, allows).map(|args| args.input)
        },
        schema: || Some(crate::grammar::free_text_schema()),
    }
}

/// How a tool's return value becomes a result, and its output schema. Made by [`output_spec`].
pub struct OutputSpec<R> {
    finish: fn(R) -> AgentToolResult,
    schema: fn() -> Option<Value>,
}

impl<R> Clone for OutputSpec<R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R> Copy for OutputSpec<R> {}

impl<R> OutputSpec<R> {
    /// The output schema.
    pub fn schema(&self) -> fn() -> Option<Value> {
        self.schema
    }
}

/// The spec of a return type.
pub fn output_spec<R: IntoToolResult>() -> OutputSpec<R> {
    OutputSpec {
        finish: R::into_tool_result,
        schema: R::output_schema,
    }
}

/// The arguments of a `#[tool]` function: an owned type that serde can deserialize and schemars can
/// describe. Implemented for every such type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the arguments of a tool",
    label = "tool arguments need `Deserialize` and `JsonSchema`",
    note = "derive both on the argument struct: `#[derive(serde::Deserialize, schemars::JsonSchema)]`"
)]
pub trait ToolArgs: DeserializeOwned + JsonSchema + Send + 'static {}

impl<T: DeserializeOwned + JsonSchema + Send + 'static> ToolArgs for T {}

/// Signature marker: the function takes the extractors `E` (a tuple of [`FromToolContext`] types, in
/// order), then the argument struct.
pub struct WithArgs<E>(PhantomData<fn() -> E>);
/// Signature marker: the function takes the extractors `E` and no argument struct.
pub struct Bare<E>(PhantomData<fn() -> E>);

/// The "arguments" of a tool that takes none.
pub struct NoArgs;

/// Checks made on typed arguments after they parse (`#[tool(validate = path)]`).
pub type ValidateFn<A> = fn(&A) -> Result<(), String>;

/// A parameter a tool takes from its call's context rather than from the model: [`ToolContext`] itself, or
/// [`State<T>`] from the store the call runs in.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be taken from a tool call's context",
    note = "a tool takes `ToolContext`, `State<T>`, then one argument struct"
)]
pub trait FromToolContext: Sized + Send + 'static {
    /// Takes the value from `ctx`; `tool` names the tool for the error.
    fn from_context(ctx: &ToolContext, tool: &str) -> Result<Self, MissingState>;

    /// The state type this extractor needs from the store, if any.
    fn state_key() -> Option<StateKey> {
        None
    }
}

impl FromToolContext for ToolContext {
    fn from_context(ctx: &ToolContext, _tool: &str) -> Result<Self, MissingState> {
        Ok(ctx.clone())
    }
}

impl<T: ToolState> FromToolContext for State<T> {
    fn from_context(ctx: &ToolContext, tool: &str) -> Result<Self, MissingState> {
        ctx.state::<T>().map(State).ok_or_else(|| MissingState {
            tool: tool.to_owned(),
            type_name: std::any::type_name::<T>(),
            store: ctx.store_name().map(str::to_owned),
            at_call: true,
        })
    }

    fn state_key() -> Option<StateKey> {
        Some(StateKey::of::<T>())
    }
}

/// A tuple of extractors, taken from the context in order.
pub trait Extractors: Sized + Send + 'static {
    /// Takes every extractor from the call's context (made only when there is an extractor).
    fn extract(ctx: &mut ContextSlot<'_>, tool: &str) -> Result<Self, MissingState>;
    /// The state types the extractors need.
    fn state_keys() -> Vec<StateKey>;
}

/// How an async tool function of signature kind `K` is called, once its extractors are taken.
pub trait AsyncCall<A, K>: Send + Sync + 'static {
    /// The extractors the function takes before its arguments.
    type Extracted: Extractors;
    /// The future the function returns.
    type Fut: Future + Send + 'static;
    /// Calls the function.
    fn call(&self, extracted: Self::Extracted, args: A) -> Self::Fut;
}

/// How a plain (blocking) tool function of signature kind `K` is called, once its extractors are taken.
pub trait BlockingCall<A, K>: Send + Sync + 'static {
    /// The extractors the function takes before its arguments.
    type Extracted: Extractors;
    /// What the function returns.
    type Output;
    /// Calls the function.
    fn call(&self, extracted: Self::Extracted, args: A) -> Self::Output;
}

macro_rules! signatures {
    (@one $e:ident) => { 1 };
    ($($e:ident $v:ident),*) => {
        impl<$($e: FromToolContext),*> Extractors for ($($e,)*) {
            #[allow(unused_variables)]
            fn extract(ctx: &mut ContextSlot<'_>, tool: &str) -> Result<Self, MissingState> {
                Ok(($($e::from_context(ctx.get(), tool)?,)*))
            }
            fn state_keys() -> Vec<StateKey> {
                let keys: [Option<StateKey>; 0 $(+ signatures!(@one $e))*] = [$($e::state_key()),*];
                keys.into_iter().flatten().collect()
            }
        }

        impl<F, Fut, A, $($e: FromToolContext),*> AsyncCall<A, WithArgs<($($e,)*)>> for F
        where
            F: Fn($($e,)* A) -> Fut + Send + Sync + 'static,
            Fut: Future + Send + 'static,
        {
            type Extracted = ($($e,)*);
            type Fut = Fut;
            fn call(&self, ($($v,)*): Self::Extracted, args: A) -> Fut {
                self($($v,)* args)
            }
        }

        impl<F, Fut, $($e: FromToolContext),*> AsyncCall<NoArgs, Bare<($($e,)*)>> for F
        where
            F: Fn($($e),*) -> Fut + Send + Sync + 'static,
            Fut: Future + Send + 'static,
        {
            type Extracted = ($($e,)*);
            type Fut = Fut;
            fn call(&self, ($($v,)*): Self::Extracted, _args: NoArgs) -> Fut {
                self($($v),*)
            }
        }

        impl<F, R, A, $($e: FromToolContext),*> BlockingCall<A, WithArgs<($($e,)*)>> for F
        where
            F: Fn($($e,)* A) -> R + Send + Sync + 'static,
        {
            type Extracted = ($($e,)*);
            type Output = R;
            fn call(&self, ($($v,)*): Self::Extracted, args: A) -> R {
                self($($v,)* args)
            }
        }

        impl<F, R, $($e: FromToolContext),*> BlockingCall<NoArgs, Bare<($($e,)*)>> for F
        where
            F: Fn($($e),*) -> R + Send + Sync + 'static,
        {
            type Extracted = ($($e,)*);
            type Output = R;
            fn call(&self, ($($v,)*): Self::Extracted, _args: NoArgs) -> R {
                self($($v),*)
            }
        }
    };
}

signatures!();
signatures!(E1 e1);
signatures!(E1 e1, E2 e2);
signatures!(E1 e1, E2 e2, E3 e3);
signatures!(E1 e1, E2 e2, E3 e3, E4 e4);
signatures!(E1 e1, E2 e2, E3 e3, E4 e4, E5 e5);

/// An async `#[tool]` function of signature kind `K`, over arguments `A`, returning `R`.
pub struct AsyncTool<F, A, R, K> {
    f: F,
    args: ArgsSpec<A>,
    output: OutputSpec<R>,
    validate: Option<ValidateFn<A>>,
    _kind: PhantomData<fn() -> K>,
}

impl<F, A, R, K> AsyncTool<F, A, R, K> {
    /// Wraps `f`.
    pub fn new(
        f: F,
        args: ArgsSpec<A>,
        output: OutputSpec<R>,
        validate: Option<ValidateFn<A>>,
    ) -> Self {
        AsyncTool {
            f,
            args,
            output,
            validate,
            _kind: PhantomData,
        }
    }
}

/// A plain (blocking) `#[tool]` function; it runs on tokio's blocking threads.
pub struct BlockingTool<F, A, R, K> {
    f: Arc<F>,
    args: ArgsSpec<A>,
    output: OutputSpec<R>,
    validate: Option<ValidateFn<A>>,
    _kind: PhantomData<fn() -> K>,
}

impl<F, A, R, K> BlockingTool<F, A, R, K> {
    /// Wraps `f`.
    pub fn new(
        f: F,
        args: ArgsSpec<A>,
        output: OutputSpec<R>,
        validate: Option<ValidateFn<A>>,
    ) -> Self {
        BlockingTool {
            f: Arc::new(f),
            args,
            output,
            validate,
            _kind: PhantomData,
        }
    }
}

/// Unknown properties first (cheap), then serde; only a failure runs the schema validator, to list every
/// problem at once. `Deserialize` and `validate` are user code: each runs under a guard.
#[inline(always)]
fn parse_and_validate<A>(
    check: &ArgumentCheck<'_>,
    args: &Value,
    spec: ArgsSpec<A>,
    validate: Option<ValidateFn<A>>,
) -> Result<A, Refusal> {
    if check.has_unknown_properties(args) {
        return Err(check.explain(args, None).into());
    }
    let parsed = guard::catch(|| (spec.parse)(args))
        .map_err(|panic| deserialize_panicked(check, panic))?
        .map_err(|problem| check.explain(args, Some(problem)))?;
    validated(check, parsed, validate)
}

/// The one-pass path: `None` when the text must take the `Value` path (see `args::text`).
fn parse_text_and_validate<A>(
    check: &ArgumentCheck<'_>,
    text: &str,
    spec: ArgsSpec<A>,
    validate: Option<ValidateFn<A>>,
) -> Option<Result<A, Refusal>> {
    // The one pass checks the top-level keys only.
    if check.looks_below_the_top() {
        return None;
    }
    match guard::catch(|| (spec.parse_text)(text, &|key| check.allows_key(key))) {
        Ok(Some(parsed)) => Some(validated(check, parsed, validate)),
        Ok(None) => None,
        Err(panic) => Some(Err(deserialize_panicked(check, panic))),
    }
}

/// Takes a call's extractors (state, context) before its arguments are parsed: a store that lacks the
/// state is a problem of setup, reported before anything the model sent.
fn extract<E: Extractors>(
    check: &ArgumentCheck<'_>,
    ctx: &mut ContextSlot<'_>,
) -> Result<E, Refusal> {
    E::extract(ctx, check.tool()).map_err(|missing| Refusal::MissingState(Box::new(missing)))
}

fn deserialize_panicked(check: &ArgumentCheck<'_>, panic: String) -> Refusal {
    Refusal::Panicked(format!(
        "tool `{}` panicked while its arguments were deserialized: {panic}",
        check.tool()
    ))
}

/// Runs `validate` (under a guard) on parsed arguments.
#[inline(always)]
fn validated<A>(
    check: &ArgumentCheck<'_>,
    parsed: A,
    validate: Option<ValidateFn<A>>,
) -> Result<A, Refusal> {
    let Some(validate) = validate else {
        return Ok(parsed);
    };
    let tool = check.tool();
    let refusal = match guard::catch(|| validate(&parsed)) {
        Ok(Ok(())) => return Ok(parsed),
        Ok(Err(message)) => ArgumentError::invalid(tool, "", message).into(),
        Err(panic) => Refusal::Panicked(format!(
            "the `validate` check of tool `{tool}` panicked: {panic}"
        )),
    };
    guard::drop_quietly(parsed);
    Err(refusal)
}

impl<F, A, R, K> AsyncTool<F, A, R, K>
where
    F: AsyncCall<A, K>,
    F::Fut: Future<Output = R>,
    A: Send + 'static,
    R: 'static,
    K: 'static,
{
    fn start(
        &self,
        check: &ArgumentCheck<'_>,
        parsed: A,
        extracted: F::Extracted,
    ) -> Result<ToolFuture, Refusal> {
        let call = guard::catch(|| self.f.call(extracted, parsed)).map_err(|panic| {
            Refusal::Panicked(format!(
                "tool `{}` panicked before it returned its future: {panic}",
                check.tool()
            ))
        })?;
        let finish = self.output.finish;
        Ok(Box::pin(async move { finish(call.await) }))
    }
}

impl<F, A, R, K> ErasedHandler for AsyncTool<F, A, R, K>
where
    F: AsyncCall<A, K>,
    F::Fut: Future<Output = R>,
    A: Send + 'static,
    R: 'static,
    K: 'static,
{
    fn bind(
        &self,
        check: &ArgumentCheck<'_>,
        args: &Value,
        ctx: &mut ContextSlot<'_>,
    ) -> Result<ToolFuture, Refusal> {
        let extracted = extract::<F::Extracted>(check, ctx)?;
        let parsed = parse_and_validate(check, args, self.args, self.validate)?;
        self.start(check, parsed, extracted)
    }

    fn bind_text(
        &self,
        check: &ArgumentCheck<'_>,
        text: &str,
        ctx: &mut ContextSlot<'_>,
    ) -> Option<Result<ToolFuture, Refusal>> {
        let extracted = match extract::<F::Extracted>(check, ctx) {
            Ok(extracted) => extracted,
            Err(refusal) => return Some(Err(refusal)),
        };
        let parsed = parse_text_and_validate(check, text, self.args, self.validate)?;
        Some(parsed.and_then(|parsed| self.start(check, parsed, extracted)))
    }

    fn required_state(&self) -> Vec<StateKey> {
        F::Extracted::state_keys()
    }
}

impl<F, A, R, K> BlockingTool<F, A, R, K>
where
    F: BlockingCall<A, K, Output = R>,
    A: Send + 'static,
    R: 'static,
    K: 'static,
{
    fn start(&self, parsed: A, extracted: F::Extracted) -> ToolFuture {
        let f = Arc::clone(&self.f);
        let finish = self.output.finish;
        Box::pin(async move {
            // Off the async threads, so a slow plain fn never stalls other tools.
            guard::off_async_threads(move || finish(f.call(extracted, parsed)))
                .await
                .unwrap_or_else(|| AgentToolResult::error("the tool's blocking task was cancelled"))
        })
    }
}

impl<F, A, R, K> ErasedHandler for BlockingTool<F, A, R, K>
where
    F: BlockingCall<A, K, Output = R>,
    A: Send + 'static,
    R: 'static,
    K: 'static,
{
    fn bind(
        &self,
        check: &ArgumentCheck<'_>,
        args: &Value,
        ctx: &mut ContextSlot<'_>,
    ) -> Result<ToolFuture, Refusal> {
        let extracted = extract::<F::Extracted>(check, ctx)?;
        let parsed = parse_and_validate(check, args, self.args, self.validate)?;
        Ok(self.start(parsed, extracted))
    }

    fn bind_text(
        &self,
        check: &ArgumentCheck<'_>,
        text: &str,
        ctx: &mut ContextSlot<'_>,
    ) -> Option<Result<ToolFuture, Refusal>> {
        let extracted = match extract::<F::Extracted>(check, ctx) {
            Ok(extracted) => extracted,
            Err(refusal) => return Some(Err(refusal)),
        };
        let parsed = parse_text_and_validate(check, text, self.args, self.validate)?;
        Some(parsed.map(|parsed| self.start(parsed, extracted)))
    }

    fn required_state(&self) -> Vec<StateKey> {
        F::Extracted::state_keys()
    }

    fn runs_on_blocking_pool(&self) -> bool {
        true
    }
}

impl<A> std::fmt::Debug for ArgsSpec<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgsSpec").finish_non_exhaustive()
    }
}

impl<R> std::fmt::Debug for OutputSpec<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSpec").finish_non_exhaustive()
    }
}

impl<E> std::fmt::Debug for WithArgs<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithArgs").finish_non_exhaustive()
    }
}

impl<E> std::fmt::Debug for Bare<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bare").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for NoArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoArgs").finish_non_exhaustive()
    }
}

impl<F, A, R, K> std::fmt::Debug for AsyncTool<F, A, R, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncTool").finish_non_exhaustive()
    }
}

impl<F, A, R, K> std::fmt::Debug for BlockingTool<F, A, R, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingTool").finish_non_exhaustive()
    }
}
