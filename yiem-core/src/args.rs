//! Turning the JSON arguments a model sent into a tool's typed arguments, and the errors that explain to the
//! model what was wrong.

use std::borrow::Cow;
use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// One problem with a tool's arguments: where it is and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
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
/// use yiem_core::ArgumentError;
///
/// let error = ArgumentError::not_an_object("get_weather", &json!([1, 2]));
/// assert_eq!(
///     error.to_string(),
///     "arguments for tool `get_weather` must be a JSON object, got an array"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
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
    #[error("{}", describe_invalid(tool, problems))]
    Invalid {
        /// The tool that was called.
        tool: String,
        /// Every problem found, each with its path.
        problems: Vec<ArgumentProblem>,
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
    pub fn invalid(tool: &str, path: impl Into<String>, message: impl Into<String>) -> Self {
        ArgumentError::Invalid {
            tool: tool.to_owned(),
            problems: vec![ArgumentProblem {
                path: path.into(),
                message: message.into(),
            }],
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

fn describe_invalid(tool: &str, problems: &[ArgumentProblem]) -> String {
    match problems {
        [one] => format!("invalid arguments for tool `{tool}`: {one}"),
        many => {
            let mut text = format!(
                "invalid arguments for tool `{tool}` ({} problems):",
                many.len()
            );
            for problem in many {
                text.push_str("\n- ");
                text.push_str(&problem.to_string());
            }
            text
        }
    }
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

/// Brings raw arguments into the one shape tools accept, a JSON object: a string is parsed as JSON (the
/// OpenAI wire format), `null` and an empty string mean "no arguments". An object is borrowed, not copied.
pub(crate) fn normalize<'a>(tool: &str, raw: &'a Value) -> Result<Cow<'a, Value>, ArgumentError> {
    match raw {
        Value::Object(_) => Ok(Cow::Borrowed(raw)),
        Value::Null => Ok(Cow::Owned(Value::Object(Map::new()))),
        Value::String(text) if text.trim().is_empty() => Ok(Cow::Owned(Value::Object(Map::new()))),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Null) => Ok(Cow::Owned(Value::Object(Map::new()))),
            Ok(value @ Value::Object(_)) => Ok(Cow::Owned(value)),
            Ok(other) => Err(ArgumentError::not_an_object(tool, &other)),
            Err(error) => Err(ArgumentError::NotJson {
                tool: tool.to_owned(),
                detail: error.to_string(),
            }),
        },
        other => Err(ArgumentError::not_an_object(tool, other)),
    }
}

/// Deserializes `args` into `A`, reporting the path of the value that did not fit.
pub(crate) fn parse<A: DeserializeOwned>(tool: &str, args: &Value) -> Result<A, ArgumentError> {
    // The fast path tracks no path; only a failure pays for a second, path-tracking pass.
    if let Ok(parsed) = A::deserialize(args) {
        return Ok(parsed);
    }
    serde_path_to_error::deserialize(args).map_err(|error| {
        let path = pointer(error.path());
        ArgumentError::invalid(tool, path, error.into_inner().to_string())
    })
}

/// A JSON Pointer (RFC 6901) for a serde path.
fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        out.push('/');
        match segment {
            Segment::Seq { index } => out.push_str(&index.to_string()),
            Segment::Map { key } => out.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Segment::Enum { variant } => out.push_str(variant),
            Segment::Unknown => out.push('?'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let error = parse::<Order>("order", &args).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid arguments for tool `order`: at `/items/2/qty`: invalid type: string \"three\", expected u32"
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
    fn pointer_escapes_slash_and_tilde() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct M {
            m: std::collections::BTreeMap<String, u8>,
        }
        let error = parse::<M>("t", &json!({"m": {"a/b~c": "x"}})).unwrap_err();
        assert_eq!(error.problems()[0].path, "/m/a~1b~0c");
    }
}
