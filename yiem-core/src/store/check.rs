//! The check a tool crate runs in its own tests: [`check_tools`] (and the [`check_tools!`](crate::check_tools!)
//! test it generates) and [`ToolStore::check`], which find, before anything ships, the tools a provider
//! would refuse: an empty description, a name some provider rejects, two tools of one name, an example of
//! arguments that does not fit the schema, a regex grammar that does not compile, a schema a dialect cannot
//! express (OpenAI strict mode), or state a store does not hold.

use std::fmt;

use crate::dialect::{Dialect, DialectError};
use crate::grammar::TextFormat;
use crate::state::MissingState;
use crate::store::registry::ToolStore;
use crate::tool::definition::{AgentTool, SourceLocation, is_valid_tool_name};

/// One thing wrong with a tool.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolProblem {
    /// The description is empty: the model would not know when to call the tool.
    #[error(
        "tool `{tool}` (defined at {defined}) has an empty description: say what the tool does"
    )]
    EmptyDescription {
        /// The tool.
        tool: String,
        /// Where it was defined.
        defined: SourceLocation,
    },
    /// The name breaks the rule every provider shares.
    #[error(
        "tool `{tool}` (defined at {defined}) has a name some providers refuse: use 1 to 64 ASCII letters, digits, `_` or `-`"
    )]
    InvalidName {
        /// The tool.
        tool: String,
        /// Where it was defined.
        defined: SourceLocation,
    },
    /// Two tools share a name.
    #[error(
        "two tools are called `{tool}` (defined at {first} and at {second}): give one of them another name, e.g. #[tool(name = \"...\")]"
    )]
    Duplicate {
        /// The name.
        tool: String,
        /// Where the first was defined.
        first: SourceLocation,
        /// Where the second was defined.
        second: SourceLocation,
    },
    /// An example of good arguments does not fit the tool's input schema.
    #[error(
        "tool `{tool}` (defined at {defined}) has an example that does not fit its input schema (example {index}, counting from 0); fix the example or the schema: {detail}"
    )]
    InvalidExample {
        /// The tool.
        tool: String,
        /// Where it was defined.
        defined: SourceLocation,
        /// The example's position among the tool's examples, from 0.
        index: usize,
        /// What is wrong with it.
        detail: String,
    },
    /// The tool's regex grammar does not compile (see [`TextFormat`](crate::tool::TextFormat)).
    #[error(
        "tool `{tool}` (defined at {defined}) has a regex grammar that does not compile, so no call of it can be checked: {detail}"
    )]
    InvalidGrammar {
        /// The tool.
        tool: String,
        /// Where it was defined.
        defined: SourceLocation,
        /// The regex engine's error.
        detail: String,
    },
    /// The tool asks the person for a type MCP cannot show as a form (`ctx.elicit::<T>`).
    #[error(
        "tool `{tool}` (defined at {defined}) asks the person for {detail}; ask for a flat struct of strings, numbers, booleans and enums"
    )]
    InvalidQuestion {
        /// The tool.
        tool: String,
        /// Where it was defined.
        defined: SourceLocation,
        /// The type and why it cannot be a form.
        detail: String,
    },
    /// A dialect cannot describe the tool (the documented refusal, naming the tool and the type).
    #[error(transparent)]
    Dialect(DialectError),
    /// The tool takes state its store does not hold.
    #[error(transparent)]
    MissingState(MissingState),
}

/// Every problem [`check_tools`] or [`ToolStore::check`] found, in the order of the tools. Its `Display`
/// lists them one per line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolCheck {
    /// The problems, in the order of the tools.
    pub problems: Vec<ToolProblem>,
}

impl fmt::Display for ToolCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.problems.len();
        write!(
            f,
            "{count} problem{} with the tools:",
            if count == 1 { "" } else { "s" }
        )?;
        for problem in &self.problems {
            write!(f, "\n- {problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ToolCheck {}

/// Checks `tools` for what a provider would refuse: each has a non-empty description and a name every
/// provider accepts, no two share a name, each example of arguments fits the tool's input schema (and its
/// grammar), each regex grammar compiles (with `schema-validation`), and each has a definition in every
/// [`Dialect`]. Every problem is reported, not only the first.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use yiem_core::{store::{ToolProblem, check_tools}, tool};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct WeatherArgs {
///     /// The city.
///     city: String,
/// }
///
/// /// Fetch the weather.
/// #[tool(example = r#"{"city": "Oslo"}"#, example = r#"{"town": "Oslo"}"#)]
/// async fn weather(args: WeatherArgs) -> String {
///     args.city
/// }
///
/// let report = check_tools(&[weather_tool()]).unwrap_err();
/// assert!(matches!(
///     &report.problems[..],
///     [ToolProblem::InvalidExample { tool, index: 1, .. }] if tool == "weather"
/// ));
/// ```
pub fn check_tools(tools: &[AgentTool]) -> Result<(), ToolCheck> {
    let mut problems = Vec::new();
    for (index, tool) in tools.iter().enumerate() {
        let name = tool.name();
        if let Some(first) = tools[..index].iter().find(|t| t.name() == name) {
            problems.push(ToolProblem::Duplicate {
                tool: name.to_owned(),
                first: first.source(),
                second: tool.source(),
            });
            continue;
        }
        if tool.description().trim().is_empty() {
            problems.push(ToolProblem::EmptyDescription {
                tool: name.to_owned(),
                defined: tool.source(),
            });
        }
        if !is_valid_tool_name(name) {
            problems.push(ToolProblem::InvalidName {
                tool: name.to_owned(),
                defined: tool.source(),
            });
            continue;
        }
        if let Some(detail) = tool
            .provider_options()
            .free_text
            .as_ref()
            .and_then(TextFormat::grammar)
            .and_then(|grammar| grammar.compile_error())
        {
            problems.push(ToolProblem::InvalidGrammar {
                tool: name.to_owned(),
                defined: tool.source(),
                detail,
            });
        }
        if let Err(detail) = tool.check_questions() {
            problems.push(ToolProblem::InvalidQuestion {
                tool: name.to_owned(),
                defined: tool.source(),
                detail,
            });
        }
        if let Err((index, error)) = tool.check_examples() {
            problems.push(ToolProblem::InvalidExample {
                tool: name.to_owned(),
                defined: tool.source(),
                index,
                detail: error.to_string(),
            });
        }
        // One problem once: a strict tool's OpenAI definition is its strict-mode one, refused in the same
        // words (naming the dialect, OpenAI strict mode) as the `OpenAiStrict` definition.
        for dialect in Dialect::ALL {
            if let Err(error) = tool.definition(dialect) {
                let problem = ToolProblem::Dialect(error);
                if !problems.contains(&problem) {
                    problems.push(problem);
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ToolCheck { problems })
    }
}

impl ToolStore {
    /// Checks the whole store up front: [`check_tools`] over its tools, and that the store holds the
    /// [state](crate::tool::State) of every tool.
    ///
    /// ```
    /// use yiem_core::prelude::*;
    ///
    /// struct Db;
    ///
    /// /// Count the rows.
    /// #[tool]
    /// async fn rows(State(_db): State<Db>) -> String {
    ///     "0".into()
    /// }
    ///
    /// let store = ToolStore::new("agent").with_state(Db);
    /// store.register(rows_tool()).unwrap();
    /// store.check().unwrap();
    /// ```
    pub fn check(&self) -> Result<(), ToolCheck> {
        let tools = self.tools();
        let mut problems = match check_tools(&tools) {
            Ok(()) => Vec::new(),
            Err(check) => check.problems,
        };
        problems.extend(
            self.missing_states(&tools)
                .into_iter()
                .map(ToolProblem::MissingState),
        );
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ToolCheck { problems })
        }
    }
}
