//! The check of the arguments' top level when the `schema-validation` feature is off: a required property
//! that is missing, and a property whose schema names its JSON `type` but that holds another kind of value.
//! It is what keeps a tool built at run time (`AgentTool::builder`, an MCP server's tool) from receiving
//! `{"text": 5}` for a string, and it writes those problems the way the full validator does, so the report a
//! model reads does not depend on the feature for the common mistakes. Deeper problems are left to serde
//! (typed tools) or to the tool.

use serde_json::Value;

use super::ArgumentProblem;
use super::words::{article, escape, got, join_or};
use crate::dialect::resolve_ref;

/// What the root of a schema says about the arguments' top level.
pub(super) struct LeanSchema {
    /// The `required` names of the root object.
    required: Vec<String>,
    /// Each root property whose schema names its JSON types: the name and the types.
    typed: Vec<(String, Vec<String>)>,
}

impl LeanSchema {
    pub(super) fn of(schema: &Value) -> Self {
        let root = follow(schema, schema);
        let required = root
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let typed = root
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(name, property)| {
                let types = match follow(schema, property).get("type")? {
                    Value::String(one) => vec![one.clone()],
                    Value::Array(many) => many
                        .iter()
                        .map(|t| t.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()?,
                    _ => return None,
                };
                Some((name.clone(), types))
            })
            .collect();
        LeanSchema { required, typed }
    }

    /// Adds the problems of `args` (an object; anything else is refused before this) to `problems`.
    pub(super) fn problems(&self, args: &Value, problems: &mut Vec<ArgumentProblem>) {
        problems.extend(self.findings(args).map(|finding| match finding {
            Finding::Missing(name) => ArgumentProblem {
                path: String::new(),
                message: match self.types_of(name) {
                    Some(types) => format!(
                        "missing required property `{name}` (expected {})",
                        expected(types)
                    ),
                    None => format!("missing required property `{name}`"),
                },
            },
            Finding::Mistyped(name, types, value) => ArgumentProblem {
                path: format!("/{}", escape(name)),
                message: format!("expected {}, got {}", expected(types), got(value)),
            },
        }));
    }

    /// Whether `args` has none of the problems this check finds (nothing is written when it has none).
    pub(super) fn accepts(&self, args: &Value) -> bool {
        self.findings(args).next().is_none()
    }

    /// What is wrong with `args`, lazily: missing required names first, then mistyped properties.
    fn findings<'a>(&'a self, args: &'a Value) -> impl Iterator<Item = Finding<'a>> {
        let object = args.as_object();
        let missing = self
            .required
            .iter()
            .filter(move |name| object.is_some_and(|object| !object.contains_key(*name)))
            .map(|name| Finding::Missing(name));
        let mistyped = self.typed.iter().filter_map(move |(name, types)| {
            let value = object?.get(name)?;
            (!types.iter().any(|kind| is_of(value, kind)))
                .then_some(Finding::Mistyped(name, types, value))
        });
        missing.chain(mistyped)
    }

    fn types_of(&self, name: &str) -> Option<&[String]> {
        self.typed
            .iter()
            .find(|(typed, _)| typed == name)
            .map(|(_, types)| types.as_slice())
    }
}

/// One problem of the arguments' top level.
enum Finding<'a> {
    /// A required property is not there.
    Missing(&'a str),
    /// A property holds a value of none of its types.
    Mistyped(&'a str, &'a [String], &'a Value),
}

/// `node`, or what its `$ref` points to (a few hops at most).
fn follow<'a>(root: &'a Value, mut node: &'a Value) -> &'a Value {
    for _ in 0..8 {
        match node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| resolve_ref(root, reference))
        {
            Some(target) => node = target,
            None => break,
        }
    }
    node
}

fn expected(types: &[String]) -> String {
    join_or(&types.iter().map(|t| article(t)).collect::<Vec<_>>())
}

/// Whether `value` is of the JSON Schema type `kind` (an unknown type name accepts anything).
fn is_of(value: &Value, kind: &str) -> bool {
    match kind {
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|n| n.fract() == 0.0)
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::LeanSchema;

    fn problems(schema: serde_json::Value, args: serde_json::Value) -> Vec<String> {
        let lean = LeanSchema::of(&schema);
        let mut found = Vec::new();
        lean.problems(&args, &mut found);
        assert_eq!(
            lean.accepts(&args),
            found.is_empty(),
            "accepts agrees with problems"
        );
        found
            .into_iter()
            .map(|p| format!("{}: {}", p.path, p.message))
            .collect()
    }

    #[test]
    fn missing_and_mistyped_top_level_properties_are_reported() {
        let schema = json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "count": {"type": ["integer", "null"]},
                "mode": {"$ref": "#/$defs/Mode"},
                "free": {}
            },
            "required": ["text", "mode"],
            "$defs": {"Mode": {"type": "string", "enum": ["a", "b"]}}
        });
        assert_eq!(
            problems(schema.clone(), json!({"count": 1.5, "free": [1]})),
            [
                ": missing required property `text` (expected a string)",
                ": missing required property `mode` (expected a string)",
                "/count: expected an integer or null, got the number 1.5",
            ]
        );
        assert_eq!(
            problems(
                schema.clone(),
                json!({"text": 5, "mode": true, "count": 2.0})
            ),
            [
                "/text: expected a string, got the number 5",
                "/mode: expected a string, got true",
            ]
        );
        assert!(problems(schema, json!({"text": "hi", "mode": "a", "count": null})).is_empty());
    }

    #[test]
    fn a_schema_without_properties_accepts_any_object() {
        assert!(problems(json!({"type": "object"}), json!({"x": 1})).is_empty());
        assert!(problems(json!(true), json!({})).is_empty());
    }
}
