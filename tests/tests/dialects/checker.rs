//! Each provider's documented constraints on tool definitions, written down independently of the rewrite
//! so that the goldens are checked against the providers' rules, not against themselves.
//!
//! - OpenAI strict mode (structured outputs): the root is an object and not `anyOf`; every object has
//!   `additionalProperties: false` and lists every property in `required`; only the supported keywords
//!   (types, `enum`, `anyOf`, `$ref`/`$defs`, `pattern`, the listed string `format`s, number bounds and
//!   `multipleOf`, `minItems`/`maxItems`, `description`, `title`); at most 10 levels of object nesting,
//!   5000 object properties and 1000 enum values; every `$ref` resolves inside `$defs`.
//! - Gemini function declarations: `parameters` is a `Schema`, a subset of OpenAPI 3.0: only its fields, no
//!   `$ref`/`$defs`, `type` a single name, `nullable` a boolean, `enum` only on strings, an object has
//!   properties; the name starts with a letter or `_`.
//! - MCP `tools/list`: `inputSchema` (and `outputSchema`) is an object schema; annotations are the four
//!   hints.
//! - OpenAI (not strict) and Anthropic: `parameters` / `input_schema` is an object schema.
//! - All: the names follow the provider's rule, there is no `$schema`, and the root schema has no
//!   `oneOf`, `anyOf`, `allOf`, `enum` or `not`. Anthropic refuses those at the top level ("input_schema
//!   does not support oneOf, allOf, or anyOf at the top level", the API's error), OpenAI too ("schema must
//!   have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level"), Gemini's
//!   `parameters` is an object of parameters, and MCP's `Tool.inputSchema` is typed `{type: "object",
//!   properties, required}` and handed on to those providers by the clients.

use serde_json::{Map, Value};
use yiem_core::store::Dialect;

/// What strict mode reads, in OpenAI's words: its Structured Outputs guide
/// (<https://platform.openai.com/docs/guides/structured-outputs>, "Supported schemas"), quoted.
const STRICT_DOC: &str = "Supported string properties: pattern, format. \
    Supported formats: date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid. \
    Supported number properties: multipleOf, maximum, exclusiveMaximum, minimum, exclusiveMinimum. \
    Supported array properties: minItems, maxItems.";
/// The structure the same guide's rules and examples use besides: types, objects (`properties`, every
/// one `required`, `additionalProperties: false`), arrays (`items`), `enum`, `anyOf`, definitions
/// (`$defs`) and recursion (`$ref`), and `description` and `title`.
const STRICT_STRUCTURE: &str =
    "type properties required additionalProperties items enum anyOf $defs $ref description title";

/// The keywords strict mode reads.
fn strict_keywords() -> Vec<&'static str> {
    let mut keywords = listed(STRICT_DOC, "properties: ");
    keywords.extend(STRICT_STRUCTURE.split_whitespace());
    keywords
}

/// The items of every list `label` opens in `doc` ("label: a, b (a note), c."), notes left out.
fn listed(doc: &'static str, label: &str) -> Vec<&'static str> {
    doc.split(label)
        .skip(1)
        .flat_map(|after| {
            let list = after.split(". ").next().unwrap_or("");
            list.trim_end_matches('.')
                .split(", ")
                .map(|item| item.split(" (").next().unwrap_or(item).trim())
        })
        .collect()
}

const GEMINI_TYPES: &[&str] = &["string", "number", "integer", "boolean", "array", "object"];
const JSON_TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "array", "object", "null",
];

/// Every violation of `dialect`'s documented constraints in `definition`, as `path: problem`.
pub fn check(dialect: Dialect, definition: &Value) -> Vec<String> {
    let mut violations = Vec::new();
    let (name, schema) = match dialect {
        Dialect::Mcp => {
            keys_within(
                definition,
                &[
                    "name",
                    "title",
                    "description",
                    "inputSchema",
                    "outputSchema",
                    "annotations",
                ],
                &mut violations,
            );
            if let Some(annotations) = definition.get("annotations") {
                keys_within(
                    annotations,
                    &[
                        "title",
                        "readOnlyHint",
                        "destructiveHint",
                        "idempotentHint",
                        "openWorldHint",
                    ],
                    &mut violations,
                );
            }
            if let Some(output) = definition.get("outputSchema") {
                root_is_object(output, &mut violations);
                no_root_combinators(output, &mut violations);
                no_schema_keyword(output, "/outputSchema", &mut violations);
            }
            (definition.get("name"), definition.get("inputSchema"))
        }
        Dialect::OpenAi | Dialect::OpenAiStrict => {
            keys_within(definition, &["type", "function"], &mut violations);
            if definition["type"] != "function" {
                violations.push("/type: must be \"function\"".into());
            }
            let function = &definition["function"];
            keys_within(
                function,
                &["name", "description", "parameters", "strict"],
                &mut violations,
            );
            let strict = function.get("strict") == Some(&Value::Bool(true));
            if strict != (dialect == Dialect::OpenAiStrict) {
                violations.push("/function/strict: must be true exactly in strict mode".into());
            }
            (function.get("name"), function.get("parameters"))
        }
        Dialect::Anthropic => {
            keys_within(
                definition,
                &["name", "description", "input_schema"],
                &mut violations,
            );
            (definition.get("name"), definition.get("input_schema"))
        }
        Dialect::Gemini if definition.get("parametersJsonSchema").is_some() => {
            keys_within(
                definition,
                &["name", "description", "parametersJsonSchema"],
                &mut violations,
            );
            let schema = &definition["parametersJsonSchema"];
            walk(schema, "", &mut |path, node| {
                gemini_json_schema_node(path, node, &mut violations)
            });
            refs_resolve(schema, &mut violations);
            (definition.get("name"), Some(schema))
        }
        Dialect::Gemini => {
            keys_within(
                definition,
                &["name", "description", "parameters"],
                &mut violations,
            );
            (definition.get("name"), definition.get("parameters"))
        }
        other => panic!("the checker knows no documented constraints of {other:?}"),
    };
    let name = name.and_then(Value::as_str).unwrap_or_default();
    if !name_is_valid(dialect, name) {
        violations.push(format!("name `{name}` breaks the provider's rule"));
    }
    let Some(schema) = schema else {
        if dialect != Dialect::Gemini {
            violations.push("the definition has no schema".into());
        }
        return violations;
    };
    root_is_object(schema, &mut violations);
    no_root_combinators(schema, &mut violations);
    no_schema_keyword(schema, "", &mut violations);
    if matches!(dialect, Dialect::OpenAi | Dialect::OpenAiStrict)
        || (dialect == Dialect::Gemini && definition.get("parameters").is_some())
    {
        walk(schema, "", &mut |path, node| {
            arrays_have_items(path, node, &mut violations)
        });
    }
    match dialect {
        Dialect::OpenAiStrict => check_strict(schema, &mut violations),
        Dialect::Gemini if definition.get("parametersJsonSchema").is_some() => {}
        Dialect::Gemini => walk(schema, "", &mut |path, node| {
            gemini_node(path, node, &mut violations)
        }),
        _ => {}
    }
    violations
}

fn name_is_valid(dialect: Dialect, name: &str) -> bool {
    let ok = |c: char, extra: &str| c.is_ascii_alphanumeric() || extra.contains(c);
    match dialect {
        Dialect::Mcp => (1..=128).contains(&name.len()) && name.chars().all(|c| ok(c, "_-.")),
        Dialect::Gemini => {
            (1..=64).contains(&name.len())
                && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| ok(c, "_.:-"))
        }
        _ => (1..=64).contains(&name.len()) && name.chars().all(|c| ok(c, "_-")),
    }
}

/// OpenAI refuses an array without `items` ("array schema missing items"), and Gemini's `Schema` reads
/// only `items` for what an array holds (it has no `prefixItems`).
fn arrays_have_items(path: &str, node: &Map<String, Value>, violations: &mut Vec<String>) {
    let is_array = match node.get("type") {
        Some(Value::String(kind)) => kind.eq_ignore_ascii_case("array"),
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "array"),
        _ => false,
    };
    if is_array && !node.get("items").is_some_and(Value::is_object) {
        violations.push(format!("{path}: array schema missing items"));
    }
}

fn keys_within(value: &Value, allowed: &[&str], violations: &mut Vec<String>) {
    for key in value.as_object().into_iter().flat_map(Map::keys) {
        if !allowed.contains(&key.as_str()) {
            violations.push(format!("unexpected key `{key}` in the definition"));
        }
    }
}

fn root_is_object(schema: &Value, violations: &mut Vec<String>) {
    if schema.get("type") != Some(&Value::String("object".into())) {
        violations.push("/: the root schema must have \"type\": \"object\"".into());
    }
}

fn no_root_combinators(schema: &Value, violations: &mut Vec<String>) {
    for keyword in ["oneOf", "anyOf", "allOf", "enum", "not"] {
        if schema.get(keyword).is_some() {
            violations.push(format!("/: the root must not have `{keyword}`"));
        }
    }
}

fn no_schema_keyword(schema: &Value, at: &str, violations: &mut Vec<String>) {
    walk(schema, at, &mut |path, node| {
        if node.contains_key("$schema") {
            violations.push(format!("{path}: keyword `$schema` is not accepted"));
        }
    });
}

/// Calls `visit` on every schema object: properties, items, union branches, map values and `$defs`.
fn walk(schema: &Value, path: &str, visit: &mut dyn FnMut(&str, &Map<String, Value>)) {
    let Some(node) = schema.as_object() else {
        return;
    };
    visit(if path.is_empty() { "/" } else { path }, node);
    if let Some(Value::Object(properties)) = node.get("properties") {
        for (name, property) in properties {
            walk(property, &format!("{path}/{name}"), visit);
        }
    }
    if let Some(items) = node.get("items") {
        walk(items, &format!("{path}[]"), visit);
    }
    if let Some(extra) = node.get("additionalProperties") {
        walk(extra, &format!("{path}/*"), visit);
    }
    for keyword in ["anyOf", "oneOf", "allOf"] {
        for (index, branch) in node
            .get(keyword)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            walk(branch, &format!("{path}|{keyword}{index}"), visit);
        }
    }
    if let Some(Value::Object(defs)) = node.get("$defs") {
        for (name, body) in defs {
            walk(body, &format!("#{name}"), visit);
        }
    }
}

fn check_strict(schema: &Value, violations: &mut Vec<String>) {
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let (keywords, formats) = (strict_keywords(), listed(STRICT_DOC, "formats: "));
    let mut properties = 0;
    let mut enum_values = 0;
    walk(schema, "", &mut |path, node| {
        for key in node.keys() {
            if !keywords.contains(&key.as_str()) {
                violations.push(format!("{path}: keyword `{key}` is not supported"));
            }
        }
        if path != "/" && node.contains_key("$defs") {
            violations.push(format!("{path}: `$defs` only at the root"));
        }
        match node.get("type") {
            Some(Value::String(kind)) if JSON_TYPES.contains(&kind.as_str()) => {}
            Some(Value::Array(kinds))
                if kinds
                    .iter()
                    .all(|k| JSON_TYPES.contains(&k.as_str().unwrap_or(""))) => {}
            Some(other) => violations.push(format!("{path}: unknown type {other}")),
            None if node.contains_key("anyOf") || node.contains_key("$ref") => {}
            None => violations.push(format!("{path}: no `type`")),
        }
        if let Some(reference) = node.get("$ref").and_then(Value::as_str) {
            let target = reference.strip_prefix("#/$defs/");
            if target.is_none_or(|name| !defs.contains_key(name)) && reference != "#" {
                violations.push(format!(
                    "{path}: `$ref` {reference} does not resolve in `$defs`"
                ));
            }
        }
        if let Some(format) = node.get("format").and_then(Value::as_str)
            && !(node.get("type") == Some(&Value::String("string".into()))
                && formats.contains(&format))
        {
            violations.push(format!("{path}: format `{format}` is not supported"));
        }
        let is_object = node.get("type") == Some(&Value::String("object".into()));
        if is_object {
            if node.get("additionalProperties") != Some(&Value::Bool(false)) {
                violations.push(format!(
                    "{path}: objects need `additionalProperties: false`"
                ));
            }
            let declared: Vec<&String> = node
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().collect())
                .unwrap_or_default();
            let required: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for name in &declared {
                if !required.contains(&name.as_str()) {
                    violations.push(format!("{path}: property `{name}` must be required"));
                }
            }
            properties += declared.len();
        }
        if let Some(Value::Array(values)) = node.get("enum") {
            enum_values += values.len();
        }
    });
    let depth = nesting(schema);
    if depth > 10 {
        violations.push(format!("/: {depth} levels of object nesting, more than 10"));
    }
    if properties > 5000 {
        violations.push(format!("/: {properties} object properties, more than 5000"));
    }
    if enum_values > 1000 {
        violations.push(format!("/: {enum_values} enum values, more than 1000"));
    }
}

/// Object nesting depth: the root object is level 1; `$defs` bodies count from 1.
fn nesting(schema: &Value) -> usize {
    let Some(node) = schema.as_object() else {
        return 0;
    };
    let own = usize::from(node.get("type") == Some(&Value::String("object".into())));
    let mut below = 0;
    if let Some(Value::Object(properties)) = node.get("properties") {
        below = properties.values().map(nesting).max().unwrap_or(0);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = node.get(key) {
            below = below.max(nesting(child));
        }
    }
    for branch in node
        .get("anyOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        below = below.max(nesting(branch));
    }
    let defs = node
        .get("$defs")
        .and_then(Value::as_object)
        .map(|defs| defs.values().map(nesting).max().unwrap_or(0))
        .unwrap_or(0);
    (own + below).max(defs)
}

/// Gemini's documented constraints on a `Schema` node. Which fields a node may have is checked by Google's
/// own SDK (`the_gemini_goldens_fit_the_sdks_function_declaration` in `yiem-core/tests/gemini.rs`), not by
/// a list here.
fn gemini_node(path: &str, node: &Map<String, Value>, violations: &mut Vec<String>) {
    match node.get("type") {
        Some(Value::String(kind)) if GEMINI_TYPES.contains(&kind.as_str()) => {}
        None if node.contains_key("anyOf") => {}
        Some(other) => {
            violations.push(format!("{path}: `type` must be one type name, got {other}"))
        }
        None => violations.push(format!("{path}: no `type`")),
    }
    if let Some(nullable) = node.get("nullable")
        && !nullable.is_boolean()
    {
        violations.push(format!("{path}: `nullable` must be a boolean"));
    }
    if node.contains_key("enum") && node.get("type") != Some(&Value::String("string".into())) {
        violations.push(format!("{path}: `enum` only on strings"));
    }
    if node.get("type") == Some(&Value::String("object".into()))
        && path != "/"
        && node
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
    {
        violations.push(format!("{path}: an object needs properties"));
    }
}

/// The JSON Schema Gemini reads (in `parametersJsonSchema` as in `responseJsonSchema`), in Google's words:
/// the Gemini API reference's `GenerationConfig.responseJsonSchema`
/// (<https://ai.google.dev/api/generate-content>), as the google-genai SDKs' docstrings also carry it,
/// quoted.
const GEMINI_JSON_SCHEMA_DOC: &str = "While the full JSON Schema may be sent, not all features are \
    supported. Specifically, only the following properties are supported: $id, $defs, $ref, $anchor, \
    type, format, title, description, enum (for strings and numbers), items, prefixItems, minItems, \
    maxItems, minimum, maximum, anyOf, oneOf (interpreted the same as anyOf), properties, \
    additionalProperties, required. The non-standard propertyOrdering property may also be set.";

/// The keywords Gemini reads in a JSON Schema.
fn gemini_json_schema_keywords() -> Vec<&'static str> {
    let mut keywords = listed(GEMINI_JSON_SCHEMA_DOC, "are supported: ");
    keywords.extend(
        listed(GEMINI_JSON_SCHEMA_DOC, "The non-standard ")
            .iter()
            .map(|also| also.split(' ').next().unwrap_or(also)),
    );
    keywords
}

fn gemini_json_schema_node(path: &str, node: &Map<String, Value>, violations: &mut Vec<String>) {
    let keywords = gemini_json_schema_keywords();
    for key in node.keys() {
        if !keywords.contains(&key.as_str()) {
            violations.push(format!(
                "{path}: `{key}` is not in Gemini's JSON Schema subset"
            ));
        }
    }
}

/// Every `$ref` points into the root's `$defs`.
fn refs_resolve(schema: &Value, violations: &mut Vec<String>) {
    let defs = schema.get("$defs").and_then(Value::as_object);
    walk(schema, "", &mut |path, node| {
        if let Some(Value::String(reference)) = node.get("$ref") {
            let found = reference
                .strip_prefix("#/$defs/")
                .is_some_and(|name| defs.is_some_and(|defs| defs.contains_key(name)));
            if !found {
                violations.push(format!("{path}: `$ref` {reference} does not resolve"));
            }
        }
    });
}

#[test]
fn the_quoted_documentation_reads_as_keyword_lists() {
    let formats = listed(STRICT_DOC, "formats: ");
    assert_eq!(formats.len(), 9, "{formats:?}");
    assert!(formats.contains(&"date-time") && formats.contains(&"uuid"));
    assert_eq!(strict_keywords().len(), 20);
    let gemini = gemini_json_schema_keywords();
    assert_eq!(gemini.len(), 21);
    assert!(
        ["$anchor", "enum", "oneOf", "required", "propertyOrdering"]
            .iter()
            .all(|k| gemini.contains(k))
    );
}
