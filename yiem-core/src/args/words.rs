//! How the report on failing arguments phrases things: a value in words ("the string \"three\""), a type
//! with its article, a list joined with "or", names in backticks, a JSON Pointer segment. A leaf of
//! `args`: the modules that write text (`explain`, `lean`, `parse`) use it, and it uses none of them.

use serde_json::Value;

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
