//! How the report on failing arguments phrases things: a value in words ("the string \"three\""), a type
//! with its article, a list joined with "or", names in backticks, a JSON Pointer segment. A leaf of
//! `args`: the modules that write text (`explain`, `lean`, `parse`) use it, and it uses none of them.

use serde_json::{Map, Value};

use crate::dialect::resolve_ref;

/// How many keys of an object `got` names.
const MAX_KEYS_SHOWN: usize = 10;

/// What came, in words: `the string "three"`, `the number -2`, `an object with `kind`, `side``.
pub(super) fn got(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.chars().count() > 40 => {
            let head: String = s.chars().take(40).collect();
            format!("the string {}…", Value::String(head))
        }
        Value::String(_) => format!("the string {value}"),
        Value::Array(items) if items.is_empty() => "an empty array".into(),
        Value::Array(items) => format!(
            "an array of {} item{}",
            items.len(),
            if items.len() == 1 { "" } else { "s" }
        ),
        Value::Object(map) if map.is_empty() => "an empty object".into(),
        Value::Object(map) if map.len() > MAX_KEYS_SHOWN => format!(
            "an object with {} and {} more keys",
            backticked(map.keys().take(MAX_KEYS_SHOWN).map(String::as_str)),
            map.len() - MAX_KEYS_SHOWN
        ),
        Value::Object(map) => format!(
            "an object with {}",
            backticked(map.keys().map(String::as_str))
        ),
    }
}

pub(super) fn article(type_name: &str) -> String {
    match type_name {
        "null" => "null".into(),
        "integer" | "array" | "object" => format!("an {type_name}"),
        other => format!("a {other}"),
    }
}

pub(super) fn join_or(items: &[String]) -> String {
    match items {
        [] => "nothing".into(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// One JSON Pointer segment, escaped.
pub(super) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `` `a`, `b`, `c` ``
pub(super) fn backticked<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A schema in words, for "expected ..." messages.
pub(super) fn describe_schema(root: &Value, schema: &Value, depth: usize) -> String {
    let Some(object) = schema.as_object() else {
        return if schema == &Value::Bool(false) {
            "nothing".into()
        } else {
            "any value".into()
        };
    };
    if depth > 6 {
        return "a value".into();
    }
    if let Some(target) = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
    {
        return describe_schema(root, target, depth + 1);
    }
    if let Some(value) = object.get("const") {
        return value.to_string();
    }
    if let Some(Value::Array(values)) = object.get("enum") {
        let values: Vec<String> = values.iter().map(Value::to_string).collect();
        return match values.as_slice() {
            [one] => one.clone(),
            _ => format!("one of {}", values.join(", ")),
        };
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = object.get(keyword) {
            let mut values = Vec::new();
            let mut others = Vec::new();
            for branch in branches {
                let text = describe_schema(root, branch, depth + 1);
                if let Some(listed) = text.strip_prefix("one of ") {
                    values.push(listed.to_owned());
                } else if branch.get("const").is_some() {
                    values.push(text);
                } else {
                    others.push(text);
                }
            }
            let values = match values.len() {
                0 => None,
                1 if !values[0].contains(", ") => Some(values.remove(0)),
                _ => Some(format!("one of {}", values.join(", "))),
            };
            return match (values, others.is_empty()) {
                (Some(values), true) => values,
                (Some(values), false) => format!("{values} or {}", join_or(&others)),
                (None, _) => join_or(&others),
            };
        }
    }
    let types: Vec<&str> = match object.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ if object.contains_key("properties") => vec!["object"],
        _ if object.contains_key("items") => vec!["array"],
        _ => return "any value".into(),
    };
    let described: Vec<String> = types
        .iter()
        .map(|kind| describe_type(root, object, kind, depth))
        .collect();
    join_or(&described)
}

fn describe_type(root: &Value, object: &Map<String, Value>, kind: &str, depth: usize) -> String {
    let number = |key: &str| {
        object
            .get(key)
            .filter(|v| v.is_number())
            .map(Value::to_string)
    };
    let unsigned = |key: &str| object.get(key).and_then(Value::as_u64);
    let mut text = article(kind);
    match kind {
        "integer" | "number" => {
            match (number("minimum"), number("maximum")) {
                (Some(min), Some(max)) => text.push_str(&format!(" from {min} to {max}")),
                (Some(min), None) => text.push_str(&format!(" ≥ {min}")),
                (None, Some(max)) => text.push_str(&format!(" ≤ {max}")),
                (None, None) => {}
            }
            if let Some(min) = number("exclusiveMinimum") {
                text.push_str(&format!(" > {min}"));
            }
            if let Some(max) = number("exclusiveMaximum") {
                text.push_str(&format!(" < {max}"));
            }
            if let Some(step) = number("multipleOf") {
                text.push_str(&format!(", a multiple of {step}"));
            }
        }
        "string" => {
            if let Some(format) = object.get("format").and_then(Value::as_str) {
                text.push_str(&format!(" in `{format}` format"));
            }
            match (unsigned("minLength"), unsigned("maxLength")) {
                (Some(min), Some(max)) => {
                    text.push_str(&format!(" of {min} to {max} characters"));
                }
                (Some(min), None) => {
                    text.push_str(&format!(" of at least {min} character{}", plural(min)))
                }
                (None, Some(max)) => {
                    text.push_str(&format!(" of at most {max} character{}", plural(max)))
                }
                (None, None) => {}
            }
            if let Some(pattern) = object.get("pattern").and_then(Value::as_str) {
                text.push_str(&format!(" matching `{pattern}`"));
            }
        }
        "array" => {
            match (unsigned("minItems"), unsigned("maxItems")) {
                (Some(min), Some(max)) => text.push_str(&format!(" of {min} to {max} items")),
                (Some(min), None) => {
                    text.push_str(&format!(" of at least {min} item{}", plural(min)))
                }
                (None, Some(max)) => {
                    text.push_str(&format!(" of at most {max} item{}", plural(max)))
                }
                (None, None) => {}
            }
            if let Some(items) = object.get("items").filter(|i| i.is_object()) {
                text.push_str(&format!(
                    " (each item: {})",
                    describe_schema(root, items, depth + 1)
                ));
            }
        }
        "object" => {
            let tags: Vec<String> = object
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(name, property)| {
                    property
                        .get("const")
                        .map(|value| format!("`{name}`: {value}"))
                })
                .collect();
            if !tags.is_empty() {
                text.push_str(&format!(" with {}", tags.join(", ")));
            }
        }
        _ => {}
    }
    text
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}
