//! The request-ready shape of one tool's definition in each dialect, and of a list of definitions as a
//! request carries it, both built from plain facts about a tool.

use serde_json::{Map, Value, json};

use super::{Dialect, DialectError, rewrite};

/// What a definition is made of.
pub(crate) struct ToolFacts<'a> {
    pub name: &'a str,
    pub label: &'a str,
    pub description: &'a str,
    pub input_schema: &'a Value,
    pub output_schema: Option<&'a Value>,
    /// MCP behaviour hints, by their MCP key (`readOnlyHint`, ...); `None` leaves one unsaid.
    pub hints: [(&'static str, Option<bool>); 4],
    /// The tool's calls wait for a person's approval ([`AgentTool::needs_approval`](crate::AgentTool::needs_approval)).
    pub needs_approval: bool,
}

/// The `_meta` key of an MCP tool entry that says the tool's calls need a person's approval: an MCP
/// server made with `mcp::McpServer` asks its client before each call.
pub(crate) const NEEDS_APPROVAL_META: &str = "yiem/needsApproval";

/// The definition of a tool in `dialect`:
///
/// - `Mcp`: a `tools/list` entry `{name, title, description, inputSchema, outputSchema?, annotations?,
///   _meta?}`, with `"_meta": {"yiem/needsApproval": true}` for a tool that needs approval;
/// - `OpenAi`: `{"type": "function", "function": {name, description, parameters}}`, and `OpenAiStrict`
///   with `"strict": true` inside `function`;
/// - `Anthropic`: `{name, description, input_schema}`;
/// - `Gemini`: a function declaration `{name, description, parameters}`, without `parameters` for a tool
///   that takes none (Gemini refuses an object without properties).
pub(crate) fn definition(tool: &ToolFacts<'_>, dialect: Dialect) -> Result<Value, DialectError> {
    let name = tool.name;
    if !dialect.accepts_name(name) {
        return Err(DialectError::InvalidName {
            tool: name.to_owned(),
            dialect,
            rule: dialect.name_rule(),
        });
    }
    let schema = rewrite::rewrite(name, dialect, tool.input_schema)?;
    let description = tool.description;
    Ok(match dialect {
        Dialect::Mcp => {
            let mut entry = Map::new();
            entry.insert("name".into(), json!(name));
            entry.insert("title".into(), json!(tool.label));
            entry.insert("description".into(), json!(description));
            entry.insert("inputSchema".into(), schema);
            if let Some(output) = tool.output_schema {
                let output = rewrite::rewrite(name, dialect, output)?;
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
        Dialect::OpenAi => json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema}
        }),
        Dialect::OpenAiStrict => json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema, "strict": true}
        }),
        Dialect::Anthropic => {
            json!({"name": name, "description": description, "input_schema": schema})
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
