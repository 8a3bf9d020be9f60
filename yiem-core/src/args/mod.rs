//! Turning the JSON arguments a model sent into a tool's typed arguments, and the errors that explain to the
//! model what was wrong: every problem with its JSON Pointer, what was expected and what came, the valid
//! property names, and a "did you mean" for a misspelt property.
//!
//! # One check, at every depth
//!
//! The arguments are walked beside the tool's schema (`walk`), in every build: unknown properties (with a
//! "did you mean"), missing required ones, and values of the wrong type, outside their range or not among
//! their allowed values — at the top level and in every nested object and array, in the words a model
//! reads ("at `/filters/year`: expected an integer from 0 to 65535 or null, got the string "1900""). With
//! the `schema-validation` feature the full JSON Schema validator adds what the walk cannot judge (a
//! `pattern`, a `format`, which form of a union at the root the arguments meant); the words for what
//! both judge are the walk's, so a report reads the same in every build. A report lists 20 problems and
//! counts the rest, and cuts a long key, so its size is bounded whatever the model sent.
//!
//! # Unknown properties
//!
//! serde silently ignores a property it does not know, so a model that misspells `city` as `citty` would get
//! the default instead of an error. yiem reports every property of an object that its schema does not
//! declare, **unless the schema opts in to extra properties**: the object's schema (or, for an enum of
//! objects, one of its `anyOf`/`oneOf`/`allOf` branches) has an `additionalProperties` or
//! `unevaluatedProperties` that is present and not `false` (schemars emits one for a `#[serde(flatten)]`
//! map), has `patternProperties`, or declares no `properties` at all (a run-time schema such as
//! `{"type": "object"}` says nothing about names). A missing `additionalProperties` counts as `false`.
//!
//! # Cost
//!
//! Arguments that parse are checked for unknown properties only (serde has judged the rest): for a schema
//! whose properties hold only scalars — most tools — that is a set lookup per top-level key, and JSON text
//! is read in one pass (`text`); a schema with nested objects is walked. Only a failing call is walked in
//! full, and only a failing call compiles the tool's validator (once per tool, then cached).
//!
//! # Modules
//!
//! `parse` turns raw arguments into the typed ones (normalization, serde with paths), `text` deserializes
//! JSON text straight into the argument type in one pass; `walk` is the one check against the schema;
//! `check` holds what a tool caches for it and the entry points; `explain` writes the report a model reads
//! when arguments fail (the walk's problems, and the validator's additions); `words` is how the report
//! phrases things, the schema described in English included. No module of `args` imports one that
//! imports it back.

mod check;
mod explain;
mod parse;
mod text;
mod walk;
mod words;

use std::fmt;

use serde_json::Value;

use words::backticked;

pub(crate) use check::ArgumentCache;
pub use check::ArgumentCheck;
pub(crate) use parse::{normalize, parse};
pub(crate) use text::parse_text;

/// How a store checks the arguments of its tools' calls ([`ToolStore::with_argument_checking`]): a value
/// of the store, the same error text whichever runs (see the module docs).
///
/// [`ToolStore::with_argument_checking`]: crate::store::ToolStore::with_argument_checking
///
/// ```
/// use yiem_core::store::{ArgumentChecking, ToolStore};
///
/// // The walk only, even in a build with `schema-validation`: no `pattern` or `format` checks, and no
/// // validator compiled for a failing call.
/// let store = ToolStore::new("fast").with_argument_checking(ArgumentChecking::Walk);
/// assert_eq!(store.argument_checking(), ArgumentChecking::Walk);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArgumentChecking {
    /// yiem's own check, at every depth: unknown and required properties, types, ranges, lengths,
    /// allowed values and unions. The default without the `schema-validation` feature.
    Walk,
    /// The walk and the full JSON Schema validator, which adds what the walk cannot judge (`pattern`,
    /// `format`, which form of a union at the root was meant). The default with `schema-validation`;
    /// without the feature there is no validator to run, and this checks as [`Walk`](Self::Walk) does.
    Full,
}

impl Default for ArgumentChecking {
    fn default() -> Self {
        if cfg!(feature = "schema-validation") {
            ArgumentChecking::Full
        } else {
            ArgumentChecking::Walk
        }
    }
}

/// One problem with a tool's arguments: where it is and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArgumentProblem {
    /// A JSON Pointer to the offending value (`/items/2/qty`); empty for the arguments object itself.
    pub path: String,
    /// What was expected and what came.
    pub message: String,
}

impl fmt::Display for ArgumentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "at `{}`: {}", self.path, self.message)
        }
    }
}

/// Why a tool's arguments were refused. Its `Display` is written for the model that has to fix the call.
///
/// ```
/// use serde_json::json;
/// use yiem_core::store::ArgumentError;
///
/// let error = ArgumentError::not_an_object("get_weather", &json!([1, 2]));
/// assert_eq!(
///     error.to_string(),
///     "arguments for tool `get_weather` must be a JSON object, got an array"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentError {
    /// The arguments came as a string that is not JSON.
    #[error(
        "arguments for tool `{tool}` are not valid JSON ({detail}); send the arguments as a JSON object"
    )]
    NotJson {
        /// The tool that was called.
        tool: String,
        /// What the JSON parser said.
        detail: String,
    },
    /// The arguments are JSON, but not an object.
    #[error("arguments for tool `{tool}` must be a JSON object, got {got}")]
    NotAnObject {
        /// The tool that was called.
        tool: String,
        /// What came instead (`an array`, `a number`, ...).
        got: &'static str,
    },
    /// The arguments object does not fit the tool's parameters.
    #[error("{}", describe_invalid(tool, problems, *omitted, valid_properties))]
    Invalid {
        /// The tool that was called.
        tool: String,
        /// Every problem found, each with its path.
        problems: Vec<ArgumentProblem>,
        /// The properties the arguments object may have, in schema order (empty when the problem is not
        /// about the shape of the arguments, e.g. a failed `validate` check).
        valid_properties: Vec<String>,
        /// How many more problems were found than `problems` lists (it lists at most 20).
        omitted: usize,
    },
}

impl ArgumentError {
    /// The error for arguments that are JSON but not an object.
    pub fn not_an_object(tool: &str, value: &Value) -> Self {
        ArgumentError::NotAnObject {
            tool: tool.to_owned(),
            got: json_kind(value),
        }
    }

    /// The error for one problem in the arguments object.
    ///
    /// ```
    /// use yiem_core::store::ArgumentError;
    ///
    /// let error = ArgumentError::invalid("book", "/nights", "at most 30 nights");
    /// assert_eq!(error.to_string(), "invalid arguments for tool `book`: at `/nights`: at most 30 nights");
    /// ```
    pub fn invalid(tool: &str, path: impl Into<String>, message: impl Into<String>) -> Self {
        ArgumentError::Invalid {
            tool: tool.to_owned(),
            problems: vec![ArgumentProblem {
                path: path.into(),
                message: message.into(),
            }],
            valid_properties: Vec::new(),
            omitted: 0,
        }
    }

    /// The problems found, one per offending value (empty for JSON and shape errors).
    pub fn problems(&self) -> &[ArgumentProblem] {
        match self {
            ArgumentError::Invalid { problems, .. } => problems,
            _ => &[],
        }
    }
}

/// The longest a problem's line gets in the report (a key a megabyte long is cut, not repeated).
const MAX_PROBLEM_CHARS: usize = 300;

fn describe_invalid(
    tool: &str,
    problems: &[ArgumentProblem],
    omitted: usize,
    valid: &[String],
) -> String {
    let line = |problem: &ArgumentProblem| {
        let text = problem.to_string();
        match text.char_indices().nth(MAX_PROBLEM_CHARS) {
            Some((end, _)) => format!("{}…", &text[..end]),
            None => text,
        }
    };
    let mut text = match (problems, omitted) {
        ([one], 0) => format!("invalid arguments for tool `{tool}`: {}", line(one)),
        (many, omitted) => {
            let mut text = format!(
                "invalid arguments for tool `{tool}` ({} problems):",
                many.len() + omitted
            );
            for problem in many {
                text.push_str("\n- ");
                text.push_str(&line(problem));
            }
            if omitted > 0 {
                text.push_str(&format!(
                    "\n- and {omitted} more problem{} (fix these first)",
                    if omitted == 1 { "" } else { "s" }
                ));
            }
            text
        }
    };
    if !valid.is_empty() {
        text.push_str("\nvalid properties: ");
        text.push_str(&backticked(valid.iter().map(String::as_str)));
    }
    text
}

/// `a string`, `an array`, ... for error messages.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::suggest::did_you_mean;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Order {
        items: Vec<Item>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        qty: u32,
    }

    #[test]
    fn nested_type_error_is_reported_with_its_json_pointer() {
        let args = json!({"items": [{"qty": 1}, {"qty": 2}, {"qty": "three"}]});
        let problem = parse::<Order>(&args).unwrap_err();
        assert_eq!(
            problem.to_string(),
            "at `/items/2/qty`: invalid type: string \"three\", expected u32"
        );
    }

    #[test]
    fn string_arguments_are_parsed_as_json() {
        let raw = json!("{\"a\": 1}");
        assert_eq!(*normalize("t", &raw).unwrap(), json!({"a": 1}));
    }

    #[test]
    fn null_and_empty_string_mean_no_arguments() {
        assert_eq!(*normalize("t", &Value::Null).unwrap(), json!({}));
        assert_eq!(*normalize("t", &json!("  ")).unwrap(), json!({}));
        let object = json!({"a": 1});
        assert!(matches!(normalize("t", &object).unwrap(), Cow::Borrowed(_)));
    }

    #[test]
    fn a_string_that_is_not_json_is_refused() {
        let error = normalize("t", &json!("{city: Tokyo")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "arguments for tool `t` are not valid JSON (key must be a string at line 1 column 2); send the arguments as a JSON object"
        );
    }

    #[test]
    fn did_you_mean_takes_the_closest_plausible_name() {
        let known: Vec<String> = ["city", "unit", "first_name", "zip"]
            .map(String::from)
            .to_vec();
        let suggest = |typed: &str| did_you_mean(typed, known.iter());
        assert_eq!(suggest("citty"), Some("city"));
        assert_eq!(suggest("firstName"), Some("first_name"));
        assert_eq!(suggest("zip_code"), Some("zip"));
        assert_eq!(suggest("units"), Some("unit"));
        assert_eq!(suggest("verbose"), None);
        assert_eq!(suggest("ab"), None);
    }

    #[test]
    fn pointer_escapes_slash_and_tilde() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct M {
            m: std::collections::BTreeMap<String, u8>,
        }
        let problem = parse::<M>(&json!({"m": {"a/b~c": "x"}})).unwrap_err();
        assert_eq!(problem.path, "/m/a~1b~0c");
    }
}
