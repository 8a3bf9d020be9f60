//! The request-ready shape of one tool's definition in each dialect, and of a list of definitions as a
//! request carries it, both built from plain facts about a tool.

use serde_json::{Map, Value, json};

use super::{Dialect, DialectError, rewrite};
use crate::grammar::TextFormat;

/// What a definition is made of.
pub(crate) struct ToolFacts<'a> {
    pub name: &'a str,
    pub label: &'a str,
    pub description: &'a str,
    pub input_schema: &'a Value,
    pub output_schema: Option<&'a Value>,
    /// MCP behaviour hints, by their MCP key (`readOnlyHint`, ...); `None` leaves one unsaid.
    pub hints: [(&'static str, Option<bool>); 4],
    /// The tool's calls wait for a person's approval ([`AgentTool::needs_approval`](crate::tool::AgentTool::needs_approval)).
    pub needs_approval: bool,
    /// Examples of good arguments (Anthropic's `input_examples`).
    pub examples: &'a [Value],
    /// Strict mode where the target has it (OpenAI, Anthropic).
    pub strict: bool,
    /// Anthropic's `eager_input_streaming`.
    pub eager_input_streaming: bool,
    /// The schemas were written by hand (`ToolBuilder`, an MCP server's tool), not derived: MCP gets
    /// them as written.
    pub schemas_as_written: bool,
    /// The tool takes free text: no dialect has a field for it (OpenAI's Responses API sends such a
    /// tool as a custom tool, without this definition), so the description says what the text is.
    pub free_text: Option<&'a TextFormat>,
}

/// The `_meta` key of an MCP tool entry that says the tool's calls need a person's approval: an MCP
/// server made with `mcp::McpServer` asks its client before each call.
pub(crate) const NEEDS_APPROVAL_META: &str = "yiem/needsApproval";

/// The definition of a tool in `dialect`:
///
/// - `Mcp`: a `tools/list` entry `{name, title, description, inputSchema, outputSchema?, annotations?,
///   _meta?}`, with `"_meta": {"yiem/needsApproval": true}` for a tool that needs approval; schemas
///   written by hand go as written (`$schema`, `$defs`, `$anchor`, conditionals kept, as JSON Schema
///   2020-12 is MCP's dialect), derived ones rewritten like the others;
/// - `OpenAi`: `{"type": "function", "function": {name, description, parameters}}`, and `OpenAiStrict`
///   (or a tool that asks for strict mode) with the strict schema and `"strict": true` inside `function`;
/// - `Anthropic`: `{name, description, input_schema}`, with `input_examples`, `strict: true` (and every
///   object closed) and `eager_input_streaming: true` when the tool asks for them;
/// - `Gemini`: a function declaration `{name, description, parameters}`, without `parameters` for a tool
///   that takes none (Gemini refuses an object without properties); a schema the `parameters` subset
///   cannot express (a recursive type, a map, any JSON value) goes whole, as `parametersJsonSchema`.
///
/// A free-text tool is, in every dialect, a tool of one string parameter `input` whose description says
/// what the text is (its grammar, when it has one).
pub(crate) fn definition(tool: &ToolFacts<'_>, dialect: Dialect) -> Result<Value, DialectError> {
    let name = tool.name;
    if !dialect.accepts_name(name) {
        return Err(DialectError::InvalidName {
            tool: name.to_owned(),
            dialect,
            rule: dialect.name_rule(),
        });
    }
    // Gemini takes its `parameters` subset where the schema fits it, else the full JSON Schema.
    let mut full_json_schema = false;
    let schema = match dialect {
        Dialect::OpenAi if tool.strict => {
            rewrite::rewrite(name, Dialect::OpenAiStrict, tool.input_schema)?
        }
        Dialect::Gemini => match rewrite::rewrite(name, dialect, tool.input_schema) {
            Ok(schema) => schema,
            Err(refused @ (DialectError::Recursive { .. } | DialectError::Unsupported { .. })) => {
                full_json_schema = true;
                gemini_json_schema(name, tool.input_schema).map_err(|_| refused)?
            }
            Err(refused) => return Err(refused),
        },
        // Checked like any other, then sent as the author wrote it.
        Dialect::Mcp if tool.schemas_as_written => {
            rewrite::rewrite(name, dialect, tool.input_schema)?;
            tool.input_schema.clone()
        }
        _ => rewrite::rewrite(name, dialect, tool.input_schema)?,
    };
    note_left_out(tool, dialect);
    let description = match tool.free_text {
        Some(format) => format.describe(tool.description),
        None => tool.description.into(),
    };
    let description = description.as_ref();
    Ok(match dialect {
        Dialect::Mcp => {
            let mut entry = Map::new();
            entry.insert("name".into(), json!(name));
            entry.insert("title".into(), json!(tool.label));
            entry.insert("description".into(), json!(description));
            entry.insert("inputSchema".into(), schema);
            if let Some(output) = tool.output_schema {
                let rewritten = rewrite::rewrite(name, dialect, output)?;
                let output = match tool.schemas_as_written {
                    true => output.clone(),
                    false => rewritten,
                };
                entry.insert("outputSchema".into(), output);
            }
            let annotations: Map<String, Value> = tool
                .hints
                .iter()
                .filter_map(|(key, hint)| hint.map(|hint| ((*key).to_owned(), json!(hint))))
                .collect();
            if !annotations.is_empty() {
                entry.insert("annotations".into(), Value::Object(annotations));
            }
            if tool.needs_approval {
                entry.insert("_meta".into(), json!({ NEEDS_APPROVAL_META: true }));
            }
            Value::Object(entry)
        }
        Dialect::OpenAi if !tool.strict => json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema}
        }),
        Dialect::OpenAi => json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema, "strict": true}
        }),
        Dialect::OpenAiStrict => json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema, "strict": true}
        }),
        Dialect::Anthropic => {
            let mut schema = schema;
            if tool.strict {
                close_objects(&mut schema);
            }
            let mut entry = Map::new();
            entry.insert("name".into(), json!(name));
            entry.insert("description".into(), json!(description));
            entry.insert("input_schema".into(), schema);
            if !tool.examples.is_empty() {
                entry.insert(
                    "input_examples".into(),
                    Value::Array(tool.examples.to_vec()),
                );
            }
            if tool.strict {
                entry.insert("strict".into(), json!(true));
            }
            if tool.eager_input_streaming {
                entry.insert("eager_input_streaming".into(), json!(true));
            }
            Value::Object(entry)
        }
        Dialect::Gemini if full_json_schema => {
            json!({"name": name, "description": description, "parametersJsonSchema": schema})
        }
        Dialect::Gemini => {
            let takes_arguments = schema
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|properties| !properties.is_empty());
            if takes_arguments {
                json!({"name": name, "description": description, "parameters": schema})
            } else {
                json!({"name": name, "description": description})
            }
        }
    })
}

/// Says (a `tracing` debug note, once per tool and dialect: definitions are cached) which of the tool's
/// provider options `dialect` has no field for.
fn note_left_out(tool: &ToolFacts<'_>, dialect: Dialect) {
    let has_strict = matches!(
        dialect,
        Dialect::OpenAi | Dialect::OpenAiStrict | Dialect::Anthropic
    );
    let left_out: Vec<&str> = [
        (
            "input examples",
            !tool.examples.is_empty() && dialect != Dialect::Anthropic,
        ),
        ("strict mode", tool.strict && !has_strict),
        (
            "eager input streaming",
            tool.eager_input_streaming && dialect != Dialect::Anthropic,
        ),
    ]
    .into_iter()
    .filter_map(|(option, dropped)| dropped.then_some(option))
    .collect();
    if let Some(grammar) = tool.free_text.and_then(TextFormat::grammar) {
        tracing::debug!(
            tool = tool.name,
            %dialect,
            "{dialect} has no tools that take text in a grammar's language: the {} grammar goes in the \
             description and the provider does not enforce it (yiem checks a regex grammar itself, with \
             the `schema-validation` feature)",
            grammar.syntax()
        );
    }
    if !left_out.is_empty() {
        tracing::debug!(
            tool = tool.name,
            %dialect,
            "{dialect} has no field for {}: left out of the definition",
            left_out.join(", ")
        );
    }
}

/// Keywords Gemini reads in `parametersJsonSchema` (its documented JSON Schema subset).
const GEMINI_JSON_SCHEMA_KEYWORDS: &[&str] = &[
    "$id",
    "$defs",
    "$ref",
    "$anchor",
    "type",
    "format",
    "title",
    "description",
    "enum",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "oneOf",
    "properties",
    "additionalProperties",
    "required",
    "propertyOrdering",
];

/// The schema for Gemini's `parametersJsonSchema`: the OpenAI rewrite (references inlined except for
/// recursive types, numeric formats dropped), with a `const` as a one-value `enum` and every keyword
/// outside Gemini's JSON Schema subset dropped.
fn gemini_json_schema(name: &str, canonical: &Value) -> Result<Value, DialectError> {
    fn keep_known(schema: &mut Value) {
        match schema {
            Value::Object(node) => {
                if let Some(value) = node.remove("const") {
                    node.entry("enum").or_insert_with(|| json!([value]));
                }
                node.retain(|key, _| GEMINI_JSON_SCHEMA_KEYWORDS.contains(&key.as_str()));
                for (key, value) in node.iter_mut() {
                    match key.as_str() {
                        "properties" | "$defs" => {
                            if let Value::Object(members) = value {
                                members.values_mut().for_each(keep_known);
                            }
                        }
                        "enum" | "required" | "propertyOrdering" => {}
                        _ => keep_known(value),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(keep_known),
            _ => {}
        }
    }
    let mut schema = rewrite::rewrite(name, Dialect::OpenAi, canonical)?;
    keep_known(&mut schema);
    Ok(schema)
}

/// Closes every object of `schema` that says nothing of other properties (`additionalProperties: false`),
/// as Anthropic's strict mode requires.
fn close_objects(schema: &mut Value) {
    match schema {
        Value::Object(node) => {
            let is_object = node.get("type").is_some_and(|kind| kind == "object")
                || node.contains_key("properties");
            if is_object && !node.contains_key("additionalProperties") {
                node.insert("additionalProperties".into(), json!(false));
            }
            for (key, value) in node.iter_mut() {
                // A property may be named like a keyword: `properties` holds names, not schemas.
                if key == "properties" || key == "$defs" {
                    if let Value::Object(members) = value {
                        members.values_mut().for_each(close_objects);
                    }
                } else if key != "enum" && key != "const" && key != "default" && key != "examples" {
                    close_objects(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

/// Definitions of `dialect` as the list a request carries: a JSON array of them, or for Gemini one tool
/// holding them all as `functionDeclarations`.
pub(crate) fn list(dialect: Dialect, definitions: Vec<Value>) -> Value {
    match dialect {
        // Built by hand: `json!` would serialize the definitions into a second copy.
        Dialect::Gemini => {
            let mut tool = Map::new();
            tool.insert("functionDeclarations".into(), Value::Array(definitions));
            Value::Array(vec![Value::Object(tool)])
        }
        _ => Value::Array(definitions),
    }
}

/// The same list as [`list`], written as JSON text straight from the definitions, with no copy of them.
pub(crate) fn list_text<'a>(
    dialect: Dialect,
    definitions: impl IntoIterator<Item = &'a Value>,
) -> String {
    let mut out = Vec::with_capacity(256);
    let (open, close): (&[u8], &[u8]) = match dialect {
        Dialect::Gemini => (b"[{\"functionDeclarations\":[", b"]}]"),
        _ => (b"[", b"]"),
    };
    out.extend_from_slice(open);
    for (i, definition) in definitions.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Writing a `Value` into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut out, definition);
    }
    out.extend_from_slice(close);
    // serde_json writes UTF-8, and the brackets are ASCII.
    String::from_utf8(out).unwrap_or_default()
}
