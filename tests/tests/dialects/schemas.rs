//! The schema inside a dialect's definition, as JSON Schema a validator understands, and the arguments a
//! model following it would send.

use serde_json::{Value, json};
use yiem_core::store::Dialect;

/// The schema inside a definition, as JSON Schema a validator understands (Gemini's OpenAPI `nullable`
/// becomes an `anyOf` with `null`); `None` for a Gemini tool without parameters.
pub fn dialect_schema(dialect: Dialect, definition: &Value) -> Option<Value> {
    let schema = match dialect {
        Dialect::Mcp => definition.get("inputSchema"),
        Dialect::OpenAi | Dialect::OpenAiStrict => definition["function"].get("parameters"),
        Dialect::Anthropic => definition.get("input_schema"),
        Dialect::Gemini => definition.get("parameters"),
        other => panic!("no schema place known for {other:?}"),
    }?;
    let mut schema = schema.clone();
    if dialect == Dialect::Gemini {
        nullable_to_any_of(&mut schema);
    }
    Some(schema)
}

fn nullable_to_any_of(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    for (_, child) in object.iter_mut() {
        match child {
            Value::Object(map) => {
                if map.contains_key("type")
                    || map.contains_key("anyOf")
                    || map.contains_key("nullable")
                {
                    nullable_to_any_of(child);
                } else {
                    for (_, grandchild) in map.iter_mut() {
                        nullable_to_any_of(grandchild);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(nullable_to_any_of),
            _ => {}
        }
    }
    if object.remove("nullable") == Some(Value::Bool(true)) {
        let inner = std::mem::take(object);
        object.insert(
            "anyOf".into(),
            json!([Value::Object(inner), {"type": "null"}]),
        );
    }
}

/// Every way `value` breaks `schema`, as `pointer: message` (empty when it validates).
pub fn problems(schema: &Value, value: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("the schema compiles");
    validator
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// `value` as a model in OpenAI strict mode sends it: every property the schema declares is present, `null`
/// where the value has none (strict mode requires them all). Walks `schema` (`root` holds its `$defs`); in
/// an `anyOf`, follows the first branch the filled value validates against.
pub fn fill_nulls(root: &Value, schema: &Value, value: &mut Value) {
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some("#") => root,
        Some(reference) => root
            .pointer(reference.trim_start_matches('#'))
            .expect("the reference resolves"),
        None => schema,
    };
    if let Some(Value::Array(branches)) = schema.get("anyOf") {
        for branch in branches {
            let mut candidate = value.clone();
            fill_nulls(root, branch, &mut candidate);
            if validates(root, branch, &candidate) {
                *value = candidate;
                return;
            }
        }
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = schema.get("properties") {
                for (name, property) in properties {
                    match map.get_mut(name) {
                        Some(v) => fill_nulls(root, property, v),
                        None => {
                            map.insert(name.clone(), Value::Null);
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                items.iter_mut().for_each(|v| fill_nulls(root, item, v));
            }
        }
        _ => {}
    }
}

/// Whether `value` validates against `branch`, a part of `root` (whose `$defs` it may reference).
fn validates(root: &Value, branch: &Value, value: &Value) -> bool {
    let mut document = branch.clone();
    if let (Some(defs), Some(object)) = (root.get("$defs"), document.as_object_mut()) {
        object.insert("$defs".into(), defs.clone());
    }
    problems(&document, value).is_empty()
}
