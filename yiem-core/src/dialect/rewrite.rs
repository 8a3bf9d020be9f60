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
//!
//! This file holds the walk; its parts: `targets` (what each target accepts — its keywords, formats and
//! strict mode's limits — and a node adapted to them), `nodes` (plain functions over schema nodes: `null`
//! taken out, unit enums collapsed, tuples, types inferred, `$ref`s followed) and `root_union`.

mod nodes;
mod root_union;
mod targets;

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use self::nodes::{collapse_unit_enum, definition_name, recursive_definitions, strip_null};
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
}
