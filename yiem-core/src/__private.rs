//! Not public API: items used by the code `#[tool]` generates. Nothing here is covered by semver.

use std::borrow::Cow;
use std::time::Duration;

/// What `#[resource]` and `#[prompt]` generate code against.
#[cfg(feature = "mcp")]
pub use crate::mcp::__context as mcp;
pub use inventory;
pub use serde_json::Value;
pub use std::sync::Arc;
pub use std::vec::Vec;

pub use crate::args::ArgumentCheck;
// The public names the generated code writes, so that it reaches the runtime only through here.
pub use crate::grammar::{Grammar, GrammarSyntax, TextFormat};
pub use crate::store::registry::ToolMethods;
pub use crate::tool::context::ContextSlot;
pub use crate::tool::definition::ErasedHandler;
pub use crate::tool::definition::SchemaCell;
pub use crate::tool::definition::TaskSupport;
pub use crate::tool::definition::{AgentTool, ExecutionMode};
pub use crate::tool::handler::{
    ArgsSpec, AsyncCall, AsyncTool, Bare, BlockingCall, BlockingTool, FromToolContext, NoArgs,
    OutputSpec, ToolArgs, ValidateFn, WithArgs, args_spec, free_text_spec, no_args_spec,
    output_spec,
};
// What `check_tools!` expands to.
pub use crate::state::{StateKey, ToolState};
pub use crate::store::check::check_tools;
pub use crate::store::registry::ToolRegistration;
pub use crate::store::registry::static_tools;
pub use yiem_macros::check_tools_in;

use crate::args::ArgumentCache;
use crate::tool::definition::{
    PrepareFn, ProviderOptions, SchemaSource, SourceLocation, ToolAnnotations, ToolDefinition,
    title_case,
};

/// What `#[tool]` knows about a tool at compile time.
pub struct ToolSpec {
    pub name: &'static str,
    pub label: Option<&'static str>,
    pub description: &'static str,
    pub mode: ExecutionMode,
    pub needs_approval: bool,
    /// `#[tool(code_only)]`.
    pub code_only: bool,
    pub timeout_ms: Option<u64>,
    pub annotations: ToolAnnotations,
    pub prepare: Option<fn(Value) -> Value>,
    /// Examples of good arguments, as JSON text (`#[tool]` checked that each parses).
    pub examples: &'static [&'static str],
    pub strict: bool,
    pub eager_input_streaming: bool,
    pub defer_loading: bool,
    /// `#[tool(free_text)]` or `#[tool(grammar(...))]`.
    pub free_text: Option<crate::grammar::TextFormat>,
    /// What the tool asks the person (`ctx.elicit::<T>`): each type's check, run at registration.
    pub questions: &'static [fn() -> Result<(), String>],
    /// `#[tool(task)]`, `#[tool(task = "required")]`.
    pub task: crate::tool::TaskSupport,
    pub file: &'static str,
    pub line: u32,
}

impl ToolSpec {
    /// Builds the tool; its schemas are computed on first use and cached in the given statics.
    pub fn build<A, R, H: ErasedHandler>(
        self,
        input: &'static SchemaCell,
        output: &'static SchemaCell,
        (args, result): (ArgsSpec<A>, OutputSpec<R>),
        handler: H,
    ) -> AgentTool {
        let label = match self.label {
            Some(label) => Cow::Borrowed(label),
            None => Cow::Owned(title_case(self.name)),
        };
        let definition = ToolDefinition {
            name: Cow::Borrowed(self.name),
            label,
            description: Cow::Borrowed(self.description),
            input_schema: SchemaSource::Lazy {
                cell: input,
                make: args.schema(),
            },
            output_schema: SchemaSource::Lazy {
                cell: output,
                make: result.schema(),
            },
            mode: self.mode,
            timeout: self.timeout_ms.map(Duration::from_millis),
            annotations: self.annotations,
            needs_approval: self.needs_approval,
            code_only: self.code_only,
            options: ProviderOptions {
                // Each parsed at compile time by `#[tool]`; one that somehow does not is kept as
                // text, for the examples check to refuse.
                examples: self
                    .examples
                    .iter()
                    .map(|text| serde_json::from_str(text).unwrap_or_else(|_| Value::from(*text)))
                    .collect(),
                strict: self.strict,
                eager_input_streaming: self.eager_input_streaming,
                defer_loading: self.defer_loading,
                free_text: self.free_text,
                namespace: None,
            },
            source: SourceLocation {
                file: self.file,
                line: self.line,
            },
            questions: self.questions,
            task: self.task,
        };
        let prepare = self
            .prepare
            .map(|prepare| Box::new(prepare) as Box<PrepareFn>);
        AgentTool::from_parts(
            definition,
            Box::new(handler),
            prepare,
            ArgumentCache::default(),
        )
    }
}

/// A `#[tool]`'s hints, as its attribute gives them.
pub const fn annotations(
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    open_world: Option<bool>,
) -> ToolAnnotations {
    ToolAnnotations {
        read_only,
        destructive,
        idempotent,
        open_world,
    }
}

/// Whether `T`, which a tool asks the person for (`ctx.elicit::<T>`), is a form MCP can show: the reason
/// it is not, naming the type and the field.
pub fn question_fits<T: schemars::JsonSchema>() -> Result<(), String> {
    crate::dialect::elicitation_schema(&schemars::schema_for!(T).to_value())
        .map(drop)
        .map_err(|error| {
            let error = crate::ask::elicit::ElicitError::InvalidQuestion(error);
            format!("`{}`: {error}", std::any::type_name::<T>())
        })
}

/// Checks, on the user's own token, that a `State<T>` parameter's `T` can be tool state, with yiem's note
/// whatever makes it fail (`Rc<T>` itself, or a field that is not `Sync`, such as a `RefCell` inside a
/// database connection): `assert_state::<T, _>((&StateProbe::<T>::new()).verdict())`.
///
/// A bound `T: ToolState` would do, but for a field that is not `Sync` rustc reports that field's own
/// error and leaves the bound's note out. So the verdict is reached by method resolution instead: the
/// `ThreadSafe` method applies only when `T: ToolState`; otherwise the one of `&StateProbe<T>` (one
/// autoref further) does, and its verdict, [`NotThreadSafe`], fails [`ToolStateVerdict`], whose note
/// names `T` and says what to write.
pub fn assert_state<T: ?Sized, V: ToolStateVerdict<T>>(_verdict: V) {}

/// The type `T` of a `State<T>` parameter, for [`assert_state`].
#[derive(Debug)]
pub struct StateProbe<T: ?Sized>(std::marker::PhantomData<fn() -> Box<T>>);

impl<T: ?Sized> StateProbe<T> {
    /// The probe of `T`.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        StateProbe(std::marker::PhantomData)
    }
}

/// The verdict of a type that can be tool state.
#[derive(Debug)]
pub struct ThreadSafeState;

/// The verdict of a type that cannot.
#[derive(Debug)]
pub struct NotThreadSafe;

/// The probe of a type that can be tool state.
pub trait ThreadSafe {
    /// [`ThreadSafeState`].
    fn verdict(&self) -> ThreadSafeState {
        ThreadSafeState
    }
}

impl<T: ToolState> ThreadSafe for StateProbe<T> {}

/// The probe of any other type (reached only when [`ThreadSafe`] does not apply).
pub trait MaybeNotThreadSafe {
    /// [`NotThreadSafe`].
    fn verdict(&self) -> NotThreadSafe {
        NotThreadSafe
    }
}

impl<T: ?Sized> MaybeNotThreadSafe for &StateProbe<T> {}

/// Holds for the verdict of a type that can be tool state.
#[diagnostic::on_unimplemented(
    message = "`{T}` cannot be tool state: it is not `Send + Sync + 'static`",
    label = "tool state is shared by calls on many threads",
    note = "wrap a type that is not `Sync` (a database connection, anything holding a `Cell` or `RefCell`) in a `Mutex<T>` or `RwLock<T>` (`State<Mutex<Connection>>`, registered with `Mutex::new(connection)`), use `Arc` instead of `Rc`, and own the data instead of borrowing it"
)]
pub trait ToolStateVerdict<T: ?Sized> {}

impl<T: ?Sized> ToolStateVerdict<T> for ThreadSafeState {}

/// Entry points for the fuzz harness (`tests/tests/fuzz.rs`) into parts that are not public.
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
pub mod fuzz {
    #[cfg(feature = "anthropic")]
    pub use crate::llm::parse_anthropic_events_for_fuzzing as anthropic_events;
    #[cfg(feature = "openai")]
    pub use crate::llm::parse_chunks_for_fuzzing as openai_chunks;
    #[cfg(feature = "gemini")]
    pub use crate::llm::parse_gemini_responses_for_fuzzing as gemini_responses;
    #[cfg(feature = "openai-responses")]
    pub use crate::llm::parse_responses_events_for_fuzzing as responses_events;
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec").finish_non_exhaustive()
    }
}
