//! From raw arguments to typed ones: normalization (a JSON string is parsed, `null` is `{}`), serde with the
//! path of the value that did not fit, and the one-pass path that deserializes JSON text straight into the
//! argument type.

use std::borrow::Cow;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::words::escape;
use super::{ArgumentError, ArgumentProblem};

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

/// Deserializes `args` into `A`; on failure, the path of the value that did not fit and serde's message.
pub(crate) fn parse<A: DeserializeOwned>(args: &Value) -> Result<A, ArgumentProblem> {
    // The fast path tracks no path; only a failure pays for a second, path-tracking pass.
    if let Ok(parsed) = A::deserialize(args) {
        return Ok(parsed);
    }
    serde_path_to_error::deserialize(args).map_err(|error| ArgumentProblem {
        path: pointer(error.path()),
        message: error.into_inner().to_string(),
    })
}

/// A JSON Pointer (RFC 6901) for a serde path.
pub(super) fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        out.push('/');
        match segment {
            Segment::Seq { index } => out.push_str(&index.to_string()),
            Segment::Map { key } => out.push_str(&escape(key)),
            Segment::Enum { variant } => out.push_str(variant),
            Segment::Unknown => out.push('?'),
        }
    }
    out
}
