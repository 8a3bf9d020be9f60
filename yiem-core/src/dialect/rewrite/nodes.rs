//! Plain functions over schema nodes, for the walk: `$ref`s and the definitions that reach themselves,
//! `null` taken out of a node, an enum of unit variants collapsed, a tuple as `items`, a node's type
//! inferred from its keywords, a note appended to a description, a node's children.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

/// `Name` for `#/$defs/Name` (or `#/definitions/Name`).
pub(super) fn definition_name(reference: &str) -> Option<&str> {
    reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
}

/// The definitions that reach themselves through `$ref`s.
pub(super) fn recursive_definitions(defs: Option<&Map<String, Value>>) -> HashSet<String> {
    let Some(defs) = defs else {
        return HashSet::new();
    };
    let edges: HashMap<&str, Vec<String>> = defs
        .iter()
        .map(|(name, body)| {
            let mut refs = Vec::new();
            collect_refs(body, &mut refs);
            (name.as_str(), refs)
        })
        .collect();
    let mut recursive = HashSet::new();
    for start in defs.keys() {
        let mut seen = HashSet::new();
        let mut stack: Vec<&str> = edges[start.as_str()].iter().map(String::as_str).collect();
        while let Some(name) = stack.pop() {
            if name == start {
                recursive.insert(start.clone());
                break;
            }
            if seen.insert(name)
                && let Some(next) = edges.get(name)
            {
                stack.extend(next.iter().map(String::as_str));
            }
        }
    }
    recursive
}

pub(super) fn collect_refs(value: &Value, refs: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            for (key, child) in object {
                if key == "$ref"
                    && let Some(name) = child.as_str().and_then(definition_name)
                {
                    refs.push(name.to_owned());
                } else {
                    collect_refs(child, refs);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_refs(item, refs)),
        _ => {}
    }
}

pub(super) fn is_null_schema(schema: &Value) -> bool {
    schema.as_object().is_some_and(|object| {
        object.get("type") == Some(&json!("null"))
            && object
                .keys()
                .all(|key| matches!(key.as_str(), "type" | "description" | "title"))
    })
}

/// Takes `null` out of a node (`"type": [T, "null"]`, an `anyOf`/`oneOf` branch `{"type": "null"}`).
/// Returns whether there was one. A single remaining branch is merged into the node, whose own keywords
/// (the property's description) win.
pub(super) fn strip_null(node: &mut Value) -> bool {
    let object = node.as_object_mut().expect("nodes are objects here");
    let mut stripped = false;
    if let Some(Value::Array(types)) = object.get_mut("type")
        && types.iter().any(|t| t == "null")
    {
        types.retain(|t| t != "null");
        stripped = true;
        if types.len() == 1 {
            let only = types.remove(0);
            object.insert("type".into(), only);
        }
        if let Some(Value::Array(values)) = object.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
    }
    for keyword in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = object.get_mut(keyword) else {
            continue;
        };
        if !branches.iter().any(is_null_schema) {
            continue;
        }
        branches.retain(|branch| !is_null_schema(branch));
        stripped = true;
        if branches.len() == 1 {
            let only = branches.remove(0);
            object.remove(keyword);
            if let Value::Object(only) = only {
                for (key, value) in only {
                    object.entry(key).or_insert(value);
                }
            }
        }
    }
    if stripped && object.get("default") == Some(&Value::Null) {
        object.remove("default");
    }
    stripped
}

/// `oneOf` of string constants (schemars' shape for an enum with documented unit variants) → a plain
/// `enum`, with each variant's doc appended to the description as "- `value`: doc".
pub(super) fn collapse_unit_enum(node: &mut Value) {
    let object = node.as_object_mut().expect("nodes are objects here");
    for keyword in ["oneOf", "anyOf"] {
        let Some(Value::Array(branches)) = object.get(keyword) else {
            continue;
        };
        let mut values = Vec::new();
        let mut docs = Vec::new();
        for branch in branches {
            let Some(branch) = branch.as_object() else {
                return;
            };
            let plain = branch.keys().all(|key| {
                matches!(
                    key.as_str(),
                    "type" | "const" | "enum" | "description" | "title"
                )
            });
            let stringy = branch.get("type").is_none_or(|t| t == "string");
            let constants: Vec<Value> = match (branch.get("const"), branch.get("enum")) {
                (Some(value @ Value::String(_)), None) => vec![value.clone()],
                (None, Some(Value::Array(many))) if many.iter().all(Value::is_string) => {
                    many.clone()
                }
                _ => return,
            };
            if !plain || !stringy {
                return;
            }
            if let Some(doc) = branch.get("description").and_then(Value::as_str) {
                for value in &constants {
                    docs.push(format!("- `{}`: {doc}", value.as_str().unwrap_or_default()));
                }
            }
            values.extend(constants);
        }
        if values.is_empty() {
            return;
        }
        object.remove(keyword);
        object.insert("type".into(), json!("string"));
        object.insert("enum".into(), Value::Array(values));
        if !docs.is_empty() {
            let docs = docs.join("\n");
            let text = match object.get("description").and_then(Value::as_str) {
                Some(own) => format!("{own}\n{docs}"),
                None => docs,
            };
            object.insert("description".into(), Value::String(text));
        }
        return;
    }
}

/// A tuple (`prefixItems`, as schemars writes `(A, B)`) for a target that reads only `items` (OpenAI
/// refuses an array without it: "array schema missing items"; Gemini's `Schema` has no `prefixItems`):
/// `items` admits each position's schema (the one schema when all positions are alike, else an `anyOf` of
/// the distinct ones), and the description says what each position holds, in order. The arguments are
/// still checked against the canonical schema, position by position.
pub(super) fn tuple_as_items(object: &mut Map<String, Value>) {
    let Some(Value::Array(positions)) = object.remove("prefixItems") else {
        return;
    };
    let listed: Vec<String> = positions
        .iter()
        .enumerate()
        .map(|(index, position)| format!("{}. {}", index + 1, position_label(position)))
        .collect();
    append_description(
        object,
        &format!("Items in this order: {}.", listed.join("; ")),
    );
    let mut distinct: Vec<Value> = Vec::new();
    for position in positions {
        if !distinct.contains(&position) {
            distinct.push(position);
        }
    }
    let items = match distinct.len() {
        0 => return,
        1 => distinct.remove(0),
        _ => json!({ "anyOf": distinct }),
    };
    // A tuple's own `items` (what may follow the positions) gives way to the positions'.
    object.insert("items".into(), items);
}

/// How a tuple's position is named in its description: its own description, else its type (a union's
/// branches joined with "or").
pub(super) fn position_label(position: &Value) -> String {
    if let Some(text) = position.get("description").and_then(Value::as_str) {
        return text.trim_end_matches('.').to_owned();
    }
    let mut label = match (position.get("type"), position.get("anyOf")) {
        (Some(Value::String(kind)), _) => kind.clone(),
        (Some(Value::Array(kinds)), _) => kinds
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        (None, Some(Value::Array(branches))) => branches
            .iter()
            .map(position_label)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any value".to_owned(),
    };
    if position.get("nullable") == Some(&Value::Bool(true)) {
        label.push_str(" or null");
    }
    label
}

/// Gives a node the `type` its other keywords imply: an `enum` or `const` of strings is a string, a node
/// with `properties` an object, with `items` an array.
pub(super) fn infer_type(object: &mut Map<String, Value>) {
    if object.contains_key("type") {
        return;
    }
    let values: Option<Vec<&Value>> = match (object.get("enum"), object.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.iter().collect()),
        (None, Some(value)) => Some(vec![value]),
        _ => None,
    };
    let inferred = if let Some(values) = values {
        let kinds: HashSet<&str> = values.iter().map(|v| value_type(v)).collect();
        match kinds.len() {
            1 => kinds.into_iter().next(),
            _ => None,
        }
    } else if object.contains_key("properties") {
        Some("object")
    } else if object.contains_key("items") {
        Some("array")
    } else {
        None
    };
    if let Some(kind) = inferred {
        object.insert("type".into(), json!(kind));
    }
}

pub(super) fn value_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(super) fn append_description(object: &mut Map<String, Value>, note: &str) {
    let text = match object.get("description").and_then(Value::as_str) {
        Some(own) => format!("{own} {note}"),
        None => note.to_owned(),
    };
    object.insert("description".into(), Value::String(text));
}

/// The subschemas directly under a schema node (not following `$ref`), `$defs` bodies excluded.
pub(super) fn subschemas(object: &Map<String, Value>) -> Vec<&Value> {
    let mut children = Vec::new();
    for (key, child) in object {
        match key.as_str() {
            "properties" => children.extend(child.as_object().into_iter().flat_map(|p| p.values())),
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                children.extend(child.as_array().into_iter().flatten());
            }
            "items" | "additionalProperties" => children.push(child),
            _ => {}
        }
    }
    children
}
