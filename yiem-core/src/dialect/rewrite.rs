//! The rewrite of a canonical schema into one dialect. It works on a copy; the canonical schema is never
//! changed.
//!
//! First, arguments that are a union at the root become one object schema (in `root_union`). Then one walk
//! over the schema, top down. At each node: inline a `$ref` (a recursive type stays a `$ref` into `$defs`,
//! or is an error where the target cannot express recursion), take `null` out of the node and remember
//! that it was nullable, collapse an enum of unit variants into a plain `enum` (variant docs folded into
//! the description), walk the children, adapt the node's keywords to the target, and finally write
//! "nullable" back the target's way wherever the canonical schema admits `null` (and, in strict mode, on
//! every optional property, which strict mode makes required).

mod root_union;

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use super::{Dialect, DialectError};

/// Where a node sits, which decides how its nullability is written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The arguments object.
    Root,
    /// A property of an object; `optional` when not in `required`.
    Property { optional: bool },
    /// Anything else: array items, map values, union branches, definitions.
    Other,
}

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

pub(super) fn rewrite(
    tool: &str,
    dialect: Dialect,
    canonical: &Value,
) -> Result<Value, DialectError> {
    let defs = canonical
        .get("$defs")
        .or_else(|| canonical.get("definitions"))
        .and_then(Value::as_object);
    let root_name = canonical
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or("arguments")
        .to_owned();
    let mut rewriter = Rewriter {
        tool,
        dialect,
        defs,
        recursive: recursive_definitions(defs),
        used_recursive: Vec::new(),
        types: vec![root_name],
    };
    let mut root = canonical.clone();
    if let Some(object) = root.as_object_mut() {
        for keyword in ["$schema", "$id", "title", "$defs", "definitions"] {
            object.remove(keyword);
        }
    }
    rewriter.merge_root_union(&mut root)?;
    rewriter.check_root(&mut root)?;
    rewriter.node(&mut root, Slot::Root, "")?;

    let mut kept = Map::new();
    let mut next = 0;
    while let Some(name) = rewriter.used_recursive.get(next).cloned() {
        next += 1;
        let mut body = rewriter.definition(&name)?.clone();
        rewriter.types.push(name.clone());
        rewriter.node(&mut body, Slot::Other, "")?;
        rewriter.types.pop();
        kept.insert(name, body);
    }
    if !kept.is_empty() {
        root["$defs"] = Value::Object(kept);
    }
    if dialect == Dialect::OpenAiStrict {
        rewriter.check_strict_limits(&root)?;
    }
    Ok(root)
}

struct Rewriter<'a> {
    tool: &'a str,
    dialect: Dialect,
    defs: Option<&'a Map<String, Value>>,
    /// Definitions that reach themselves through `$ref`s.
    recursive: HashSet<String>,
    /// Recursive definitions referenced so far, in order of first use: they go to the output's `$defs`.
    used_recursive: Vec<String>,
    /// The Rust types being walked, innermost last, for error messages.
    types: Vec<String>,
}

impl Rewriter<'_> {
    fn unsupported(&self, path: &str, reason: impl Into<String>) -> DialectError {
        let at = if path.is_empty() { "/" } else { path };
        DialectError::Unsupported {
            tool: self.tool.to_owned(),
            dialect: self.dialect,
            type_name: self.types.last().cloned().unwrap_or_default(),
            path: at.to_owned(),
            reason: reason.into(),
        }
    }

    fn definition(&self, name: &str) -> Result<&Value, DialectError> {
        self.defs.and_then(|defs| defs.get(name)).ok_or_else(|| {
            self.unsupported("", format!("`$ref` to `{name}`, which is not in `$defs`"))
        })
    }

    fn strict_or_gemini(&self) -> bool {
        matches!(self.dialect, Dialect::OpenAiStrict | Dialect::Gemini)
    }

    fn check_root(&self, root: &mut Value) -> Result<(), DialectError> {
        let Some(object) = root.as_object_mut() else {
            return Err(self.unsupported("", "the arguments schema is not a JSON object schema"));
        };
        match object.get("type") {
            Some(Value::String(kind)) if kind == "object" => Ok(()),
            None if object.contains_key("properties") => {
                object.insert("type".into(), json!("object"));
                Ok(())
            }
            None if !self.strict_or_gemini() => {
                object.insert("type".into(), json!("object"));
                Ok(())
            }
            None => Err(self.unsupported(
                "",
                "does not say the arguments are an object, and the target needs an object schema at the root (`\"type\": \"object\"` with its `properties`)",
            )),
            Some(other) => Err(self.unsupported(
                "",
                format!("the arguments have type {other}; tool arguments are a JSON object"),
            )),
        }
    }

    fn node(&mut self, node: &mut Value, slot: Slot, path: &str) -> Result<(), DialectError> {
        if !node.is_object() {
            if self.strict_or_gemini() {
                return Err(self.unsupported(
                    path,
                    "accepts any JSON value, which the target cannot express",
                ));
            }
            return Ok(());
        }
        let pushed = self.types.len();
        let mut nullable = false;
        loop {
            if self.inline_ref(node, path)? {
                continue;
            }
            if strip_null(node) {
                nullable = true;
                continue;
            }
            break;
        }
        if node.get("$ref").is_none() {
            self.merge_all_of(node, path)?;
            collapse_unit_enum(node);
            self.children(node, path)?;
            self.adapt(node, slot, path)?;
        }
        self.types.truncate(pushed);
        // A node says "null" exactly when the canonical schema does (an `Option`, at any depth), so that
        // every dialect admits what serde accepts. Strict mode adds one case: it lists every property as
        // required, so an optional property is written nullable and `null` is how the model leaves it
        // out ("To emulate an optional parameter, it is possible to use a union type with `null`":
        // OpenAI, Structured Outputs, "All fields must be required"); `Dialect::normalize_arguments`
        // takes those `null`s out again.
        let wants_null = match slot {
            Slot::Root => false,
            Slot::Property { optional: true } if self.dialect == Dialect::OpenAiStrict => true,
            Slot::Property { .. } | Slot::Other => nullable,
        };
        if wants_null {
            self.make_nullable(node);
        }
        Ok(())
    }

    /// Replaces a `$ref` by its definition (the node's own keywords win); keeps a bare `$ref` to a
    /// recursive type. Returns whether the node changed.
    fn inline_ref(&mut self, node: &mut Value, path: &str) -> Result<bool, DialectError> {
        let Some(reference) = node.get("$ref").and_then(Value::as_str).map(str::to_owned) else {
            return Ok(false);
        };
        let name = match definition_name(&reference) {
            Some(name) => name.to_owned(),
            None if reference == "#" => {
                let root = self.types.first().cloned().unwrap_or_default();
                if self.dialect == Dialect::Gemini {
                    return Err(self.recursion(root));
                }
                return Ok(false);
            }
            None => {
                return Err(self.unsupported(
                    path,
                    format!("`$ref` to `{reference}`, which yiem cannot resolve"),
                ));
            }
        };
        let object = node.as_object_mut().expect("checked above");
        if self.recursive.contains(&name) {
            if self.dialect == Dialect::Gemini {
                return Err(self.recursion(name));
            }
            if !self.used_recursive.contains(&name) {
                self.used_recursive.push(name.clone());
            }
            if object.len() == 1 {
                return Ok(false);
            }
        }
        let mut merged = self.definition(&name)?.clone();
        let siblings = std::mem::take(object);
        if let Some(body) = merged.as_object_mut() {
            for (key, value) in siblings {
                if key != "$ref" {
                    body.insert(key, value);
                }
            }
        }
        *node = merged;
        self.types.push(name);
        Ok(true)
    }

    fn recursion(&self, type_name: String) -> DialectError {
        DialectError::Recursive {
            tool: self.tool.to_owned(),
            dialect: self.dialect,
            type_name,
        }
    }

    /// Strict mode and Gemini have no `allOf`: merge object branches into the node.
    fn merge_all_of(&mut self, node: &mut Value, path: &str) -> Result<(), DialectError> {
        if !self.strict_or_gemini() {
            return Ok(());
        }
        let object = node.as_object_mut().expect("nodes are objects here");
        let Some(Value::Array(branches)) = object.remove("allOf") else {
            return Ok(());
        };
        for mut branch in branches {
            while self.inline_ref(&mut branch, path)? {}
            let Value::Object(branch) = branch else {
                return Err(self.unsupported(path, "an `allOf` branch that is not a schema object"));
            };
            if branch.contains_key("$ref")
                || branch.contains_key("anyOf")
                || branch.contains_key("oneOf")
            {
                return Err(self.unsupported(
                    path,
                    "an `allOf` of unions, which the target cannot express",
                ));
            }
            for (key, value) in branch {
                match (key.as_str(), object.get_mut(&key), value) {
                    ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                        mine.extend(theirs)
                    }
                    ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                        for name in theirs {
                            if !mine.contains(&name) {
                                mine.push(name);
                            }
                        }
                    }
                    (_, Some(_), _) => {}
                    (_, None, value) => {
                        object.insert(key, value);
                    }
                }
            }
        }
        Ok(())
    }

    fn children(&mut self, node: &mut Value, path: &str) -> Result<(), DialectError> {
        let object = node.as_object_mut().expect("nodes are objects here");
        let required: Vec<String> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(Value::Object(properties)) = object.get_mut("properties") {
            for (name, property) in properties.iter_mut() {
                let optional = !required.contains(name);
                let at = format!("{path}/{}", name.replace('~', "~0").replace('/', "~1"));
                self.node(property, Slot::Property { optional }, &at)?;
            }
        }
        if let Some(items) = object.get_mut("items") {
            self.node(items, Slot::Other, &format!("{path}[]"))?;
        }
        if let Some(Value::Array(items)) = object.get_mut("prefixItems") {
            for (index, item) in items.iter_mut().enumerate() {
                self.node(item, Slot::Other, &format!("{path}[{index}]"))?;
            }
        }
        if let Some(extra @ Value::Object(_)) = object.get_mut("additionalProperties") {
            self.node(extra, Slot::Other, &format!("{path}/*"))?;
        }
        for keyword in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(branches)) = object.get_mut(keyword) {
                for branch in branches {
                    self.node(branch, Slot::Other, path)?;
                }
            }
        }
        Ok(())
    }

    /// Adapts one node's own keywords to the target.
    fn adapt(&mut self, node: &mut Value, slot: Slot, path: &str) -> Result<(), DialectError> {
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

    /// Writes "this may be null" the target's way:
    ///
    /// - Gemini: `nullable: true`, the field its `Schema` has for it ("Indicates if the value may be
    ///   null"; Gemini API reference, `Schema`, <https://ai.google.dev/api/caching#Schema>); that
    ///   `Schema` has no `null` type.
    /// - Every JSON Schema target: `anyOf` with a `{"type": "null"}` branch (description, title and
    ///   default stay on the outside). One form that works for every node (an `enum`, an object, a
    ///   union, a `$ref`), where `"type": [T, "null"]` would also need `null` inside an `enum`. OpenAI
    ///   lists `anyOf` among the schemas strict mode supports, except at the root (Structured Outputs,
    ///   "Supported schemas", <https://platform.openai.com/docs/guides/structured-outputs#supported-schemas>);
    ///   Anthropic's `input_schema` is JSON Schema and refuses `anyOf` only at the top level (its API
    ///   error: "input_schema does not support oneOf, allOf, or anyOf at the top level"); MCP's
    ///   `inputSchema` is JSON Schema 2020-12.
    fn make_nullable(&self, node: &mut Value) {
        let object = node.as_object_mut().expect("nodes are objects here");
        if self.dialect == Dialect::Gemini {
            object.insert("nullable".into(), Value::Bool(true));
            return;
        }
        let only_union = object
            .keys()
            .all(|key| matches!(key.as_str(), "anyOf" | "description" | "title" | "default"));
        if only_union && let Some(Value::Array(branches)) = object.get_mut("anyOf") {
            branches.push(json!({"type": "null"}));
            return;
        }
        let mut inner = std::mem::take(object);
        for keyword in ["description", "title", "default"] {
            if let Some(value) = inner.shift_remove(keyword) {
                object.insert(keyword.into(), value);
            }
        }
        object.insert(
            "anyOf".into(),
            json!([Value::Object(inner), {"type": "null"}]),
        );
    }

    fn check_strict_limits(&self, root: &Value) -> Result<(), DialectError> {
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

/// `Name` for `#/$defs/Name` (or `#/definitions/Name`).
fn definition_name(reference: &str) -> Option<&str> {
    reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
}

/// The definitions that reach themselves through `$ref`s.
fn recursive_definitions(defs: Option<&Map<String, Value>>) -> HashSet<String> {
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

fn collect_refs(value: &Value, refs: &mut Vec<String>) {
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

fn is_null_schema(schema: &Value) -> bool {
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
fn strip_null(node: &mut Value) -> bool {
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
fn collapse_unit_enum(node: &mut Value) {
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
fn tuple_as_items(object: &mut Map<String, Value>) {
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
fn position_label(position: &Value) -> String {
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
fn infer_type(object: &mut Map<String, Value>) {
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

fn value_type(value: &Value) -> &'static str {
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

fn append_description(object: &mut Map<String, Value>, note: &str) {
    let text = match object.get("description").and_then(Value::as_str) {
        Some(own) => format!("{own} {note}"),
        None => note.to_owned(),
    };
    object.insert("description".into(), Value::String(text));
}

/// The subschemas directly under a schema node (not following `$ref`), `$defs` bodies excluded.
fn subschemas(object: &Map<String, Value>) -> Vec<&Value> {
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
