//! [`partial_arguments`]: a tool call's arguments while they stream in, parsed leniently — what is
//! complete so far, with the string being written kept as far as it goes — so a UI can show a path or a
//! command before the call runs. The parse is `jiter`'s partial mode (pydantic's JSON parser; the mode
//! Anthropic's and OpenAI's Python SDKs use for the same job), so no hand-written JSON completer.

use serde_json::{Map, Value};

/// The arguments parsed from the partial JSON `text`: every complete member, and the last string cut
/// where the text ends. `None` while nothing parses yet (empty text, a lone `{"pa`), or when the text is
/// not the start of any JSON value.
///
/// ```
/// use serde_json::json;
/// use yiem_core::llm::partial_arguments;
///
/// assert_eq!(partial_arguments(r#"{"path": "src/ma"#), Some(json!({"path": "src/ma"})));
/// assert_eq!(partial_arguments(r#"{"path": "a.txt", "lines": [1, 2"#), Some(json!({"path": "a.txt", "lines": [1, 2]})));
/// assert_eq!(partial_arguments(r#"{"path": "a.txt"}"#), Some(json!({"path": "a.txt"})));
/// assert_eq!(partial_arguments(""), None);
/// assert_eq!(partial_arguments("not json"), None);
/// ```
pub fn partial_arguments(text: &str) -> Option<Value> {
    let text = text.trim_start();
    if text.is_empty() {
        return None;
    }
    let value = jiter::JsonValue::parse_with_config(
        text.as_bytes(),
        false,
        jiter::PartialMode::TrailingStrings,
    )
    .ok()?;
    Some(to_value(&value))
}

fn to_value(value: &jiter::JsonValue<'_>) -> Value {
    use jiter::JsonValue as J;
    match value {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(*b),
        J::Int(i) => Value::from(*i),
        J::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        J::Str(s) => Value::String(s.to_string()),
        J::Array(items) => Value::Array(items.iter().map(to_value).collect()),
        J::Object(members) => {
            let mut map = Map::new();
            for (key, member) in members.iter() {
                map.insert(key.to_string(), to_value(member));
            }
            Value::Object(map)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_prefix_of_a_call_parses_to_a_prefix_of_its_arguments_or_nothing() {
        let full = r#"{"path": "dir/a \"q\" é.txt", "n": 12.5, "flags": [true, null, {"x": -3}], "s": "\u00e9"}"#;
        let end: Value = serde_json::from_str(full).unwrap();
        for cut in (0..=full.len()).filter(|&i| full.is_char_boundary(i)) {
            let Some(value) = partial_arguments(&full[..cut]) else {
                continue;
            };
            let object = value.as_object().expect("an object");
            for (key, got) in object {
                // Every key is one of the call's, and a string is a prefix of its final value.
                let want = end.get(key).unwrap_or_else(|| panic!("{cut}: key {key:?}"));
                if let (Value::String(got), Value::String(want)) = (got, want) {
                    assert!(want.starts_with(got.as_str()), "{cut}: {got:?} vs {want:?}");
                }
            }
        }
        assert_eq!(partial_arguments(full), Some(end));
    }

    #[test]
    fn a_huge_or_hostile_text_is_no_panic() {
        assert_eq!(partial_arguments(&"[".repeat(100_000)), None);
        assert_eq!(partial_arguments("}}}"), None);
        let long = format!("{{\"content\": \"{}", "x".repeat(1 << 20));
        assert_eq!(
            partial_arguments(&long).unwrap()["content"]
                .as_str()
                .unwrap()
                .len(),
            1 << 20
        );
        // Text after a complete value is not read.
        assert_eq!(
            partial_arguments("{\"a\": 1} trailing"),
            Some(json!({"a": 1}))
        );
        assert_eq!(partial_arguments("{\"a\": tr"), Some(json!({})));
    }
}
