//! TypeScript declarations of tools, made from their JSON Schemas: what the model reads in `run_code`'s
//! description to write a program against the tools. Each tool becomes a method of `tools` taking one
//! object (its input schema) and returning a promise of its result (its output schema where it has one,
//! else `string`, the result's text); descriptions become doc comments.

use serde_json::{Map, Value};

use crate::tool::definition::AgentTool;

/// How deep a schema is followed before it is written as `any` (recursive `$ref`s stop here).
const MAX_DEPTH: usize = 8;

/// The declaration of `tools` with one method per tool.
pub(super) fn declarations(tools: &[&AgentTool]) -> String {
    let mut out = String::from("declare const tools: {\n");
    for tool in tools {
        doc(&mut out, "  ", tool.description());
        let input = tool.input_schema();
        let args = ts_type(input, input, 1, 0);
        let result = match tool.output_schema() {
            Some(output) => ts_type(output, output, 1, 0),
            None => "string".to_owned(),
        };
        out.push_str(&format!(
            "  {}(args: {args}): Promise<{result}>;\n",
            property_name(tool.name())
        ));
    }
    out.push_str("};\n");
    out
}

fn doc(out: &mut String, indent: &str, text: &str) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let text = text.replace("*/", "*\\/");
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() == 1 {
        out.push_str(&format!("{indent}/** {} */\n", lines[0].trim()));
        return;
    }
    out.push_str(&format!("{indent}/**\n"));
    for line in lines {
        out.push_str(&format!("{indent} * {}\n", line.trim_end()));
    }
    out.push_str(&format!("{indent} */\n"));
}

fn property_name(name: &str) -> String {
    let identifier = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        name.to_owned()
    } else {
        Value::String(name.to_owned()).to_string()
    }
}

/// The TypeScript type of `schema` (inside `root`, for `$ref`s), indented `level` deep.
fn ts_type(schema: &Value, root: &Value, level: usize, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "any".into();
    }
    let Some(object) = schema.as_object() else {
        // `true` accepts anything; `false` nothing.
        return if schema == &Value::Bool(false) {
            "never"
        } else {
            "any"
        }
        .into();
    };
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        return match resolve(root, reference) {
            Some(target) => ts_type(target, root, level, depth + 1),
            None => "any".into(),
        };
    }
    if let Some(value) = object.get("const") {
        return value.to_string();
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return union(values.iter().map(Value::to_string).collect());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = object.get(key).and_then(Value::as_array) {
            return union(
                options
                    .iter()
                    .map(|option| ts_type(option, root, level, depth + 1))
                    .collect(),
            );
        }
    }
    if let Some(all) = object.get("allOf").and_then(Value::as_array) {
        let parts: Vec<String> = all
            .iter()
            .map(|part| ts_type(part, root, level, depth + 1))
            .collect();
        return if parts.is_empty() {
            "any".into()
        } else {
            parts.join(" & ")
        };
    }
    match object.get("type") {
        Some(Value::String(kind)) => of_kind(kind, object, root, level, depth),
        Some(Value::Array(kinds)) => union(
            kinds
                .iter()
                .filter_map(Value::as_str)
                .map(|kind| of_kind(kind, object, root, level, depth))
                .collect(),
        ),
        _ if object.contains_key("properties") => of_kind("object", object, root, level, depth),
        _ => "any".into(),
    }
}

fn of_kind(
    kind: &str,
    object: &Map<String, Value>,
    root: &Value,
    level: usize,
    depth: usize,
) -> String {
    match kind {
        "string" => "string".into(),
        "integer" | "number" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "array" => match object.get("items") {
            Some(items) => {
                let item = ts_type(items, root, level, depth + 1);
                if item.contains(' ') || item.contains('\n') {
                    format!("Array<{item}>")
                } else {
                    format!("{item}[]")
                }
            }
            None => "any[]".into(),
        },
        "object" => object_type(object, root, level, depth),
        _ => "any".into(),
    }
}

fn object_type(object: &Map<String, Value>, root: &Value, level: usize, depth: usize) -> String {
    let properties = object.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = properties.filter(|p| !p.is_empty()) else {
        return match object.get("additionalProperties") {
            Some(values) if values.is_object() => format!(
                "Record<string, {}>",
                ts_type(values, root, level, depth + 1)
            ),
            _ => "{}".into(),
        };
    };
    let indent = "  ".repeat(level + 1);
    let mut out = String::from("{\n");
    for (name, schema) in properties {
        if let Some(description) = schema.get("description").and_then(Value::as_str) {
            doc(&mut out, &indent, description);
        }
        let optional = if required.contains(&name.as_str()) {
            ""
        } else {
            "?"
        };
        out.push_str(&format!(
            "{indent}{}{optional}: {};\n",
            property_name(name),
            ts_type(schema, root, level + 1, depth + 1)
        ));
    }
    out.push_str(&"  ".repeat(level));
    out.push('}');
    out
}

fn union(mut parts: Vec<String>) -> String {
    parts.dedup();
    match parts.len() {
        0 => "never".into(),
        1 => parts.remove(0),
        _ => parts.join(" | "),
    }
}

/// The schema a local `$ref` (`#/$defs/Name`, `#/definitions/Name`) points at.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    root.pointer(pointer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_schema_becomes_a_typed_argument_with_doc_comments() {
        let schema = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name."},
                "unit": {"anyOf": [{"$ref": "#/$defs/Unit"}, {"type": "null"}]},
                "days": {"type": "array", "items": {"type": "integer"}}
            },
            "required": ["city"],
            "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}}
        });
        assert_eq!(
            ts_type(&schema, &schema, 1, 0),
            "{\n    /** City name. */\n    city: string;\n    unit?: \"c\" | \"f\" | null;\n    days?: number[];\n  }"
        );
    }

    #[test]
    fn a_recursive_schema_ends_in_any() {
        let schema = json!({"$ref": "#"});
        assert_eq!(ts_type(&schema, &schema, 1, 0), "any");
    }
}
