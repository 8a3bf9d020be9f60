//! What each target accepts — OpenAI strict mode's and Gemini's keywords and formats, strict mode's
//! limits — and one node's own keywords adapted to its target.

use serde_json::{Map, Value, json};

use super::nodes::{append_description, infer_type, subschemas, tuple_as_items};
use super::{Rewriter, Slot};
use crate::dialect::{Dialect, DialectError};

/// String formats OpenAI strict mode documents.
const STRICT_STRING_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords OpenAI strict mode accepts.
const STRICT_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "title",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "anyOf",
    "$ref",
    "$defs",
    "pattern",
    "format",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "minItems",
    "maxItems",
];

/// Fields of Gemini's `Schema` (a subset of OpenAPI 3.0).
const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// Number formats Gemini documents.
const GEMINI_NUMBER_FORMATS: &[&str] = &["int32", "int64", "float", "double"];

/// String formats Gemini documents.
const GEMINI_STRING_FORMATS: &[&str] = &["date-time", "enum"];

/// OpenAI strict mode: at most this many levels of object nesting.
const STRICT_MAX_DEPTH: usize = 10;

/// OpenAI strict mode: at most this many object properties in all.
const STRICT_MAX_PROPERTIES: usize = 5000;

/// OpenAI strict mode: at most this many enum values in all.
const STRICT_MAX_ENUM_VALUES: usize = 1000;

impl Rewriter<'_> {
    /// Adapts one node's own keywords to the target.
    pub(super) fn adapt(
        &mut self,
        node: &mut Value,
        slot: Slot,
        path: &str,
    ) -> Result<(), DialectError> {
        let dialect = self.dialect;
        let object = node.as_object_mut().expect("nodes are objects here");
        object.remove("$schema");
        object.remove("$id");
        if self.strict_or_gemini() {
            if let Some(branches) = object.remove("oneOf") {
                object.insert("anyOf".into(), branches);
            }
            if let Some(value) = object.remove("const") {
                object.insert("enum".into(), Value::Array(vec![value]));
            }
        }
        if matches!(
            dialect,
            Dialect::OpenAi | Dialect::OpenAiStrict | Dialect::Gemini
        ) {
            tuple_as_items(object);
        }
        infer_type(object);
        self.adapt_format(object);
        let is_object = object.get("type") == Some(&json!("object"));
        match dialect {
            Dialect::OpenAiStrict => {
                if is_object {
                    if object
                        .get("additionalProperties")
                        .is_some_and(|extra| extra != &Value::Bool(false))
                    {
                        return Err(self.unsupported(
                            path,
                            "is a map with free keys (`additionalProperties`), and OpenAI strict mode needs `additionalProperties: false` on every object",
                        ));
                    }
                    let properties = object
                        .entry("properties")
                        .or_insert_with(|| Value::Object(Map::new()));
                    let names: Vec<Value> = properties
                        .as_object()
                        .map(|p| p.keys().cloned().map(Value::String).collect())
                        .unwrap_or_default();
                    object.insert("required".into(), Value::Array(names));
                    object.insert("additionalProperties".into(), Value::Bool(false));
                }
                object.retain(|key, _| STRICT_KEYWORDS.contains(&key.as_str()));
            }
            Dialect::Gemini => {
                if let Some(Value::Array(types)) = object.get("type") {
                    let branches: Vec<Value> = types.iter().map(|t| json!({"type": t})).collect();
                    object.remove("type");
                    object.insert("anyOf".into(), Value::Array(branches));
                }
                let kind = object
                    .get("type")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                if let (Some(kind), Some(Value::Array(values))) = (&kind, object.get("enum"))
                    && kind != "string"
                {
                    let listed: Vec<String> = values.iter().map(Value::to_string).collect();
                    let note = format!("One of {}.", listed.join(", "));
                    object.remove("enum");
                    append_description(object, &note);
                }
                if is_object {
                    let declared = object
                        .get("properties")
                        .and_then(Value::as_object)
                        .is_some_and(|p| !p.is_empty());
                    if !declared && slot != Slot::Root {
                        return Err(self.unsupported(
                            path,
                            "is an object without declared properties (a map or an empty struct), and Gemini needs at least one property on every object",
                        ));
                    }
                }
                object.retain(|key, _| GEMINI_KEYWORDS.contains(&key.as_str()));
            }
            Dialect::Mcp | Dialect::OpenAi | Dialect::Anthropic => {}
        }
        if self.strict_or_gemini() && !object.contains_key("type") && !object.contains_key("anyOf")
        {
            let is_ref = object.contains_key("$ref");
            if !is_ref {
                return Err(self.unsupported(
                    path,
                    "accepts any JSON value, which the target cannot express",
                ));
            }
        }
        Ok(())
    }

    /// Numeric formats are Rust names (`uint32`, `int64`): kept for MCP (JSON Schema ignores unknown
    /// formats), kept where Gemini documents them, dropped elsewhere. String formats the target does not
    /// know are dropped and named in the description.
    fn adapt_format(&self, object: &mut Map<String, Value>) {
        let Some(format) = object
            .get("format")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return;
        };
        let kind = object
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let numeric = matches!(kind, "integer" | "number");
        let keep = match (self.dialect, numeric) {
            (Dialect::Mcp, _) => true,
            (Dialect::Gemini, true) => GEMINI_NUMBER_FORMATS.contains(&format.as_str()),
            (Dialect::Gemini, false) => GEMINI_STRING_FORMATS.contains(&format.as_str()),
            (Dialect::OpenAi | Dialect::OpenAiStrict | Dialect::Anthropic, true) => false,
            (Dialect::OpenAiStrict, false) => STRICT_STRING_FORMATS.contains(&format.as_str()),
            (Dialect::OpenAi | Dialect::Anthropic, false) => true,
        };
        if !keep {
            object.remove("format");
            if !numeric {
                append_description(object, &format!("Format: {format}."));
            }
        }
    }

    pub(super) fn check_strict_limits(&self, root: &Value) -> Result<(), DialectError> {
        let depth = object_depth(root);
        let mut properties = 0;
        let mut enum_values = 0;
        count(root, &mut properties, &mut enum_values);
        let too_large = |detail: String| DialectError::TooLarge {
            tool: self.tool.to_owned(),
            dialect: self.dialect,
            detail,
        };
        if depth > STRICT_MAX_DEPTH {
            return Err(too_large(format!(
                "its arguments nest objects {depth} levels deep; OpenAI strict mode allows {STRICT_MAX_DEPTH}"
            )));
        }
        if properties > STRICT_MAX_PROPERTIES {
            return Err(too_large(format!(
                "its arguments have {properties} object properties in all; OpenAI strict mode allows {STRICT_MAX_PROPERTIES}"
            )));
        }
        if enum_values > STRICT_MAX_ENUM_VALUES {
            return Err(too_large(format!(
                "its arguments have {enum_values} enum values in all; OpenAI strict mode allows {STRICT_MAX_ENUM_VALUES}"
            )));
        }
        Ok(())
    }
}

/// Levels of object nesting (the root object is level 1); each `$defs` body counts from 1.
fn object_depth(schema: &Value) -> usize {
    let Some(object) = schema.as_object() else {
        return 0;
    };
    let own = usize::from(
        object.get("type") == Some(&json!("object")) || object.contains_key("properties"),
    );
    let below = subschemas(object)
        .into_iter()
        .map(object_depth)
        .max()
        .unwrap_or(0);
    let defs = object
        .get("$defs")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|defs| defs.values())
        .map(object_depth)
        .max()
        .unwrap_or(0);
    (own + below).max(defs)
}

/// Adds up object properties and enum values over a whole schema, `$defs` included.
fn count(schema: &Value, properties: &mut usize, enum_values: &mut usize) {
    let Some(object) = schema.as_object() else {
        return;
    };
    if let Some(Value::Object(declared)) = object.get("properties") {
        *properties += declared.len();
    }
    if let Some(Value::Array(values)) = object.get("enum") {
        *enum_values += values.len();
    }
    for child in subschemas(object) {
        count(child, properties, enum_values);
    }
    for body in object
        .get("$defs")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|d| d.values())
    {
        count(body, properties, enum_values);
    }
}
