//! A call's arguments on their way to the tool's code: brought into shape (the tool's prepare step),
//! checked against the input schema and the grammar, and bound into the call's future; and
//! [`Refusal`], why a call could not be bound.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use super::{AgentTool, ToolFuture};
use crate::args::{self, ArgumentCheck, ArgumentChecking, ArgumentError};
use crate::grammar::TextFormat;
use crate::state::MissingState;
use crate::tool::context::ContextSlot;

impl AgentTool {
    /// Checks each of the tool's [examples](super::ProviderOptions::examples) against its input schema (the
    /// check a call's arguments go through, in full: [`ArgumentChecking::Full`](crate::store::ArgumentChecking::Full)):
    /// the first that does not fit, by its position, with what is wrong with it.
    ///
    /// ```
    /// use serde_json::json;
    /// use yiem_core::tool::{AgentTool, ToolContext};
    ///
    /// let tool = AgentTool::builder("echo")
    ///     .description("Repeat the text.")
    ///     .input_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
    ///     .example(json!({"text": "hello"}))
    ///     .handler(|_ctx: ToolContext, _args: serde_json::Value| async move { "" })
    ///     .build()
    ///     .unwrap();
    /// assert!(tool.check_examples().is_ok());
    /// ```
    pub fn check_examples(&self) -> Result<(), (usize, ArgumentError)> {
        for (index, example) in self.inner.definition.options.examples.iter().enumerate() {
            let refused = self
                .with_argument_check(ArgumentChecking::Full, |check| {
                    (!example.is_object() || !check.is_valid(example))
                        .then(|| check.explain(example, None))
                })
                .or_else(|| self.grammar_mismatch(example).err());
            if let Some(error) = refused {
                return Err((index, error));
            }
        }
        Ok(())
    }

    /// Brings raw arguments into shape: a JSON string is parsed, `null` means `{}`, anything but an object
    /// is refused; then the tool's own prepare step (if any) rewrites them.
    ///
    /// An arguments object is borrowed as it is when the tool has no prepare step.
    pub(crate) fn prepare_arguments<'a>(
        &self,
        raw: &'a Value,
    ) -> Result<Cow<'a, Value>, ArgumentError> {
        let args = args::normalize(&self.inner.definition.name, raw)?;
        Ok(match &self.inner.prepare_arguments {
            Some(prepare) => Cow::Owned(prepare(args.into_owned())),
            None => args,
        })
    }

    /// Whether the tool has a [prepare step](crate::tool::ToolBuilder::prepare_arguments).
    pub(crate) fn has_prepare_step(&self) -> bool {
        self.inner.prepare_arguments.is_some()
    }

    /// Runs `f` with what checking this tool's arguments needs: its name, canonical schema (looked up
    /// only if needed) and caches.
    #[inline]
    fn with_argument_check<R>(
        &self,
        checking: ArgumentChecking,
        f: impl FnOnce(&ArgumentCheck<'_>) -> R,
    ) -> R {
        let schema = || self.input_schema();
        f(&ArgumentCheck {
            tool: &self.inner.definition.name,
            schema: &schema,
            cache: &self.inner.arguments,
            checking,
        })
    }

    /// The one-pass path for arguments sent as JSON text, for a tool without a prepare step: `None` when
    /// the text must be parsed into a `Value` first (see `args::text`).
    pub(crate) fn bind_text(
        &self,
        text: &str,
        ctx: &mut ContextSlot<'_>,
        checking: ArgumentChecking,
    ) -> Option<Result<ToolFuture, Refusal>> {
        // A grammar is checked on the parsed arguments, on the `Value` path.
        if self.has_prepare_step() || self.has_grammar() {
            return None;
        }
        self.with_argument_check(checking, |check| {
            self.inner.handler.bind_text(check, text, ctx)
        })
    }

    /// Parses and validates prepared arguments and returns the call, ready to run but not started.
    #[inline]
    pub(crate) fn bind(
        &self,
        args: &Value,
        ctx: &mut ContextSlot<'_>,
        checking: ArgumentChecking,
    ) -> Result<ToolFuture, Refusal> {
        self.grammar_mismatch(args)?;
        self.with_argument_check(checking, |check| self.inner.handler.bind(check, args, ctx))
    }

    /// Whether every type the tool asks the person for (`ctx.elicit::<T>` in a `#[tool]` body) is a form
    /// MCP can show; the first that is not, with why.
    pub(crate) fn check_questions(&self) -> Result<(), String> {
        self.inner
            .definition
            .questions
            .iter()
            .try_for_each(|fits| fits())
    }

    /// Whether the tool's input is text in a grammar's language.
    fn has_grammar(&self) -> bool {
        matches!(
            self.inner.definition.options.free_text,
            Some(TextFormat::Grammar(_))
        )
    }

    /// Refuses arguments whose text is not in the language of the tool's grammar (as far as yiem checks
    /// it: see [`TextFormat`]); arguments without a string `input` go on, for the schema check to refuse.
    fn grammar_mismatch(&self, args: &Value) -> Result<(), ArgumentError> {
        match self
            .inner
            .definition
            .options
            .free_text
            .as_ref()
            .and_then(|format| format.mismatch(args))
        {
            Some(problem) => Err(ArgumentError::invalid(self.name(), "/input", problem)),
            None => Ok(()),
        }
    }
}

/// Why a call could not be bound: its arguments do not fit, or user code panicked while binding.
#[doc(hidden)]
#[derive(Debug)]
#[non_exhaustive]
pub enum Refusal {
    /// The arguments do not fit the tool. (Boxed, like the state below: a refusal is rare, and a small
    /// one keeps the `Result` every call passes along small.)
    Arguments(Box<ArgumentError>),
    /// User code panicked; the text names the tool and what panicked.
    Panicked(String),
    /// The tool needs state the call does not have.
    MissingState(Box<MissingState>),
}

impl From<ArgumentError> for Refusal {
    fn from(error: ArgumentError) -> Self {
        Refusal::Arguments(Box::new(error))
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Arguments(error) => error.fmt(f),
            Refusal::Panicked(text) => f.write_str(text),
            Refusal::MissingState(missing) => missing.fmt(f),
        }
    }
}
