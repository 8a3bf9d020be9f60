//! Run-time normalization of the arguments a model sent in a dialect, before they are deserialized.
//!
//! OpenAI strict mode makes every property required, and an optional one nullable, so the model says "none"
//! with `null` even where the type has no `null` (`#[serde(default)] limit: u32`). Arguments that are a
//! union at the root are merged into one object whose variant-only properties are nullable, so the model
//! sends `null` for the fields of the variants it did not choose. An optional property that came as
//! `null`, and a property of another variant that came as `null`, is therefore removed, at every depth, so
//! serde sees it absent and applies `#[serde(default)]`. (An `Option` field takes `null` as it is; it is
//! removed all the same, which serde reads as `None` too.)

use serde_json::{Map, Value};

use super::resolve_ref;

/// Removes `null` values of optional properties from `value`, walking `schema` (the canonical schema)
/// alongside it.
pub(super) fn drop_optional_nulls(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    if depth > 64 {
        return;
    }
    let Some(object) = schema.as_object() else {
        return;
    };
    if let Some(target) = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
    {
        drop_optional_nulls(root, target, value, depth + 1);
    }
    for branch in object
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        drop_optional_nulls(root, branch, value, depth + 1);
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = object.get(keyword)
            && let Some(branch) = branches.iter().find(|b| fits(root, b, value, depth))
        {
            drop_optional_nulls(root, branch, value, depth + 1);
            drop_other_branches_nulls(root, object, branches, branch, value);
        }
    }
    match value {
        Value::Object(map) => {
            let properties = object.get("properties").and_then(Value::as_object);
            if let Some(properties) = properties {
                let required = |name: &str| {
                    object
                        .get("required")
                        .and_then(Value::as_array)
                        .is_some_and(|names| names.iter().any(|n| n == name))
                };
                map.retain(|name, v| {
                    !(v.is_null() && properties.contains_key(name) && !required(name))
                });
                for (name, property) in properties {
                    if let Some(v) = map.get_mut(name) {
                        drop_optional_nulls(root, property, v, depth + 1);
                    }
                }
            }
            if let Some(extra) = object.get("additionalProperties").filter(|e| e.is_object()) {
                for (name, v) in map.iter_mut() {
                    if properties.is_none_or(|p| !p.contains_key(name)) {
                        drop_optional_nulls(root, extra, v, depth + 1);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = object.get("items").filter(|i| i.is_object()) {
                for v in items {
                    drop_optional_nulls(root, item, v, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Removes the `null`s that `value` (an object) has for properties declared only by branches other than
/// `chosen`: the fields of the variants the model did not pick, which the merged root of a union makes
/// nullable.
fn drop_other_branches_nulls(
    root: &Value,
    node: &Map<String, Value>,
    branches: &[Value],
    chosen: &Value,
    value: &mut Value,
) {
    let Value::Object(map) = value else {
        return;
    };
    let declares = |schema: &Value, name: &str| {
        let schema = resolved(root, schema);
        schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|properties| properties.contains_key(name))
    };
    let own = node.get("properties").and_then(Value::as_object);
    map.retain(|name, v| {
        let elsewhere = !declares(chosen, name)
            && own.is_none_or(|own| !own.contains_key(name))
            && branches.iter().any(|branch| declares(branch, name));
        !(v.is_null() && elsewhere)
    });
}

/// The schema a `$ref` at the top of `schema` points at (one hop), or `schema` itself.
fn resolved<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
        .unwrap_or(schema)
}

/// Whether `schema` admits `null`: a `null` type, `null` among its values, nothing that restricts the type,
/// or a union with a branch that admits it.
fn admits_null(root: &Value, schema: &Value, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    let Some(object) = resolved(root, schema).as_object() else {
        return schema == &Value::Bool(true);
    };
    let by_type = match object.get("type") {
        Some(Value::String(kind)) => kind == "null",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "null"),
        _ => false,
    };
    let by_value = match (object.get("const"), object.get("enum")) {
        (Some(constant), _) => constant.is_null(),
        (None, Some(Value::Array(values))) => values.contains(&Value::Null),
        (None, _) => false,
    };
    // No keyword that restricts the type: any value, `null` included.
    let unrestricted = !object.keys().any(|key| {
        matches!(
            key.as_str(),
            "type" | "const" | "enum" | "anyOf" | "oneOf" | "allOf" | "$ref" | "not"
        )
    });
    by_type
        || by_value
        || unrestricted
        || ["anyOf", "oneOf"].iter().any(|keyword| {
            object
                .get(*keyword)
                .and_then(Value::as_array)
                .is_some_and(|branches| branches.iter().any(|b| admits_null(root, b, depth + 1)))
        })
}

/// Whether `value` has the shape of union branch `schema`: the same JSON type and, for objects, every
/// required property present (and not `null`, unless its schema admits `null`) and every constant
/// property (an enum tag) equal. Enough to pick the branch a tagged enum's value belongs to, and the form
/// of an untagged one whose other forms' fields came as `null`.
fn fits(root: &Value, schema: &Value, value: &Value, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    let Some(object) = schema.as_object() else {
        return schema != &Value::Bool(false);
    };
    if let Some(target) = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
    {
        return fits(root, target, value, depth + 1);
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = object.get(keyword) {
            return branches.iter().any(|b| fits(root, b, value, depth + 1));
        }
    }
    if let Some(constant) = object.get("const") {
        return constant == value;
    }
    if let Some(Value::Array(values)) = object.get("enum") {
        return values.contains(value);
    }
    let type_ok = match object.get("type") {
        Some(Value::String(kind)) => type_matches(kind, value),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .any(|k| type_matches(k, value)),
        _ => true,
    };
    if !type_ok {
        return false;
    }
    let (Value::Object(map), Some(properties)) =
        (value, object.get("properties").and_then(Value::as_object))
    else {
        return true;
    };
    let required_present = object
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .all(|name| match map.get(name) {
            None => false,
            Some(Value::Null) => properties
                .get(name)
                .is_none_or(|property| admits_null(root, property, depth + 1)),
            Some(_) => true,
        });
    required_present && tags_match(properties, map)
}

fn tags_match(properties: &Map<String, Value>, map: &Map<String, Value>) -> bool {
    properties.iter().all(
        |(name, property)| match (property.get("const"), map.get(name)) {
            (Some(constant), Some(v)) => constant == v,
            _ => true,
        },
    )
}

fn type_matches(kind: &str, value: &Value) -> bool {
    match kind {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    }
}
