//! The one check of arguments against their schema, the same at every depth and in every build: a walk of
//! the arguments beside the schema that finds unknown properties (with "did you mean"), missing required
//! properties, and values of the wrong type, outside their range, or not among their allowed values, each
//! written the way a model reads it ("expected an integer from 0 to 65535, got the number 70000").
//!
//! The walk understands the keywords that schemas of tool arguments are made of: `$ref`, `type`,
//! `properties`, `required`, `additionalProperties`, `items`, `enum`, `const`, the numeric bounds, the
//! length and item counts, and unions (`anyOf`/`oneOf`: a value that fits one branch fits; otherwise the
//! one branch of its kind, or the one whose tag it carries, says what is wrong). What it cannot judge — a
//! `pattern`, a `format`, a union at the root that no branch fits better than the others — it leaves to
//! the full validator (`schema-validation`) or to serde.
//!
//! A report lists at most [`MAX_PROBLEMS`] problems and counts the others, so arguments with 100 000 bad
//! keys get a short answer.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::ArgumentProblem;
use super::words::{describe_schema, escape, got};
use crate::dialect::resolve_ref;
use crate::suggest::did_you_mean;

/// How many problems a report lists; the others are counted.
pub(crate) const MAX_PROBLEMS: usize = 20;

/// How deep the walk follows the arguments; deeper values are not checked.
const MAX_DEPTH: usize = 64;

/// What a walk looks at.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Look {
    /// Unknown properties only, at every depth: what serde cannot see (it drops them silently).
    UnknownProperties,
    /// Everything the walk understands.
    Everything,
}

/// One walk over a value and its schema.
pub(super) struct Walk<'s> {
    root: &'s Value,
    look: Look,
    /// Stop at the first problem (a yes/no check).
    first_only: bool,
    /// The problems found, at most [`MAX_PROBLEMS`].
    pub(super) problems: Vec<ArgumentProblem>,
    /// How many more were found.
    pub(super) omitted: usize,
}

impl<'s> Walk<'s> {
    /// A walk that reports every problem (up to the limit) of `value` against the root schema.
    pub(super) fn report(root: &'s Value, look: Look, value: &Value) -> Self {
        let mut walk = Walk::new(root, look, false);
        walk.value(root, value, &mut String::new(), 0);
        walk
    }

    /// Whether `value` has none of the problems `look` looks for.
    pub(super) fn accepts(root: &'s Value, look: Look, value: &Value) -> bool {
        Walk::accepts_at(root, root, look, value, "", 0)
    }

    fn accepts_at(
        root: &'s Value,
        node: &'s Value,
        look: Look,
        value: &Value,
        path: &str,
        depth: usize,
    ) -> bool {
        let mut walk = Walk::new(root, look, true);
        walk.value(node, value, &mut path.to_owned(), depth);
        !walk.found()
    }

    fn new(root: &'s Value, look: Look, first_only: bool) -> Self {
        Walk {
            root,
            look,
            first_only,
            problems: Vec::new(),
            omitted: 0,
        }
    }

    fn found(&self) -> bool {
        !self.problems.is_empty() || self.omitted > 0
    }

    fn done(&self) -> bool {
        self.first_only && self.found()
    }

    /// Adds a problem; once the report is full it is only counted, and never written.
    fn add(&mut self, problem: impl FnOnce() -> ArgumentProblem) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(problem());
        } else {
            self.omitted += 1;
        }
    }

    /// Adds `expected …, got …` for `value` at `path`.
    fn add_expected(&mut self, node: &Value, value: &Value, path: &str) {
        let root = self.root;
        self.add(|| ArgumentProblem {
            path: path.to_owned(),
            message: expected(root, node, value),
        });
    }

    fn value(&mut self, node: &'s Value, value: &Value, path: &mut String, depth: usize) {
        if self.done() || depth > MAX_DEPTH {
            return;
        }
        let node = follow(self.root, node);
        let Some(schema) = node.as_object() else {
            return;
        };
        if self.look == Look::Everything {
            if !fits_keywords(schema, value) {
                return self.add_expected(node, value, path);
            }
            // A union at the root, or beside properties of its own (a flattened enum), is checked as the
            // one object it stands for (the names of every branch); which branch the value fits is the
            // full validator's (or serde's) to say.
            if let Some(branches) = union_of(schema)
                && !path.is_empty()
                && !schema.contains_key("properties")
            {
                return self.union(node, branches, value, path, depth);
            }
        }
        match value {
            Value::Object(map) => self.object(node, map, path, depth),
            Value::Array(items) => {
                let Some(each) = schema.get("items").filter(|items| !items.is_array()) else {
                    return;
                };
                for (index, item) in items.iter().enumerate() {
                    if self.done() {
                        return;
                    }
                    let length = path.len();
                    let _ = write!(path, "/{index}");
                    self.value(each, item, path, depth + 1);
                    path.truncate(length);
                }
            }
            _ => {}
        }
    }

    /// A value at a union (`anyOf`/`oneOf`), in a full walk.
    fn union(
        &mut self,
        node: &'s Value,
        branches: &'s [Value],
        value: &Value,
        path: &mut String,
        depth: usize,
    ) {
        let (root, look) = (self.root, self.look);
        if branches
            .iter()
            .any(|branch| Walk::accepts_at(root, branch, look, value, path, depth + 1))
        {
            return;
        }
        match meant_branch(root, branches, value) {
            Some(branch) => {
                let before = self.problems.len();
                self.value(branch, value, path, depth + 1);
                // The value itself refused by the branch: what the whole union allows is the better
                // answer ("one of "metric", "imperial" or null").
                for problem in &mut self.problems[before..] {
                    if problem.path == *path && problem.message.starts_with("expected ") {
                        problem.message = expected(root, node, value);
                    }
                }
            }
            None => self.add_expected(node, value, path),
        }
    }

    /// An object: its unknown keys first, then the values of the others, then (in a full walk) the
    /// required names it lacks.
    fn object(
        &mut self,
        node: &'s Value,
        map: &Map<String, Value>,
        path: &mut String,
        depth: usize,
    ) {
        let shape = Shape::of(self.root, node);
        if !shape.open {
            for key in map.keys().filter(|key| shape.declared(key).is_none()) {
                if self.done() {
                    return;
                }
                self.add(|| ArgumentProblem {
                    path: format!("{path}/{}", escape(&shown(key))),
                    message: unknown_property(key, &shape.names, map),
                });
            }
        }
        for (key, item) in map {
            if self.done() {
                return;
            }
            let (schema, in_union) = match shape.declared(key) {
                Some((schema, in_union)) => (schema, in_union),
                None => match shape.additional {
                    Some(schema) if shape.open => (schema, false),
                    _ => continue,
                },
            };
            let length = path.len();
            path.push('/');
            path.push_str(&escape(key));
            // Only its branch can judge a value a union's branch declared: below it, the walk looks for
            // unknown properties only.
            let look = self.look;
            if in_union {
                self.look = Look::UnknownProperties;
            }
            self.value(schema, item, path, depth + 1);
            self.look = look;
            path.truncate(length);
        }
        if self.look != Look::Everything {
            return;
        }
        for name in &shape.required {
            if self.done() {
                return;
            }
            if map.contains_key(*name) {
                continue;
            }
            let root = self.root;
            self.add(|| ArgumentProblem {
                path: path.clone(),
                message: match shape.declared(name) {
                    Some((schema, _)) => format!(
                        "missing required property `{name}` (expected {})",
                        describe_schema(root, schema, 0)
                    ),
                    None => format!("missing required property `{name}`"),
                },
            });
        }
    }
}

/// What an object may hold, gathered through `$ref`, `allOf` and (as a union of their names) `anyOf` and
/// `oneOf`.
pub(super) struct Shape<'s> {
    /// Each declared name with its schema, in schema order (the first declaration of a name wins), and
    /// whether it was declared in a branch of a union (whose value only the branch can judge).
    properties: Vec<(&'s String, &'s Value, bool)>,
    /// The declared names, in schema order.
    pub(super) names: Vec<&'s String>,
    /// Names the object must have (from the node itself and its `allOf` branches).
    required: Vec<&'s str>,
    /// Whether other names are allowed too (see the module docs of `args`).
    pub(super) open: bool,
    /// The schema of the other names, when one is given.
    additional: Option<&'s Value>,
}

impl<'s> Shape<'s> {
    pub(super) fn of(root: &'s Value, node: &'s Value) -> Self {
        let mut shape = Shape {
            properties: Vec::new(),
            names: Vec::new(),
            required: Vec::new(),
            open: false,
            additional: None,
        };
        let mut declared = false;
        shape.collect(root, node, &mut declared, true, false, 0);
        if !declared {
            shape.open = true;
        }
        shape
    }

    /// The schema of the declared property `name`, and whether a union's branch declared it.
    fn declared(&self, name: &str) -> Option<(&'s Value, bool)> {
        self.properties
            .iter()
            .find(|(known, _, _)| known.as_str() == name)
            .map(|(_, schema, in_union)| (*schema, *in_union))
    }

    /// Whether a declared property, or the other names' schema, can hold an object or an array (so that a
    /// check of the top level alone could miss something below it).
    pub(super) fn is_deep(&self, root: &'s Value) -> bool {
        self.properties
            .iter()
            .map(|(_, schema, _)| *schema)
            .chain(self.additional)
            .any(|schema| !is_flat(root, schema))
    }

    fn collect(
        &mut self,
        root: &'s Value,
        node: &'s Value,
        declared: &mut bool,
        required: bool,
        in_union: bool,
        depth: usize,
    ) {
        let Some(object) = node.as_object() else {
            return;
        };
        if depth > 8 {
            self.open = true;
            return;
        }
        if let Some(properties) = object.get("properties").and_then(Value::as_object) {
            *declared = true;
            for (name, schema) in properties {
                if self.declared(name).is_none() {
                    self.properties.push((name, schema, in_union));
                    self.names.push(name);
                }
            }
        }
        if required {
            let names = object.get("required").and_then(Value::as_array);
            for name in names.into_iter().flatten().filter_map(Value::as_str) {
                if !self.required.contains(&name) {
                    self.required.push(name);
                }
            }
        }
        for keyword in ["additionalProperties", "unevaluatedProperties"] {
            match object.get(keyword) {
                None | Some(Value::Bool(false)) => {}
                Some(schema) => {
                    self.open = true;
                    if schema.is_object() && self.additional.is_none() {
                        self.additional = Some(schema);
                    }
                }
            }
        }
        if object.contains_key("patternProperties") {
            self.open = true;
        }
        if let Some(target) = object
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| resolve_ref(root, r))
        {
            self.collect(root, target, declared, required, in_union, depth + 1);
        }
        for (keyword, branch_of_union) in [("allOf", false), ("anyOf", true), ("oneOf", true)] {
            let branches = object.get(keyword).and_then(Value::as_array);
            for branch in branches.into_iter().flatten() {
                let (required, in_union) =
                    (required && !branch_of_union, in_union || branch_of_union);
                self.collect(root, branch, declared, required, in_union, depth + 1);
            }
        }
    }
}

/// `expected …, got …` for `value`, with `node` in words.
fn expected(root: &Value, node: &Value, value: &Value) -> String {
    let expected = describe_schema(root, node, 0);
    format!("expected {expected}, got {}", got(value))
}

/// The report's line for an unknown property: its name, and the closest declared name the object does
/// not have yet.
pub(super) fn unknown_property(
    key: &str,
    known: &[&String],
    present: &Map<String, Value>,
) -> String {
    let candidates = known
        .iter()
        .copied()
        .filter(|known| !present.contains_key(known.as_str()));
    let shown = shown(key);
    match did_you_mean(key, candidates) {
        Some(suggestion) => format!("unknown property `{shown}`; did you mean `{suggestion}`?"),
        None => format!("unknown property `{shown}`"),
    }
}

/// A key as the report shows it: cut after 64 characters.
fn shown(key: &str) -> std::borrow::Cow<'_, str> {
    match key.char_indices().nth(64) {
        Some((end, _)) => format!("{}…", &key[..end]).into(),
        None => key.into(),
    }
}

/// `node`, or what its `$ref` points to (a few hops at most).
fn follow<'s>(root: &'s Value, mut node: &'s Value) -> &'s Value {
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

fn union_of(schema: &Map<String, Value>) -> Option<&[Value]> {
    ["anyOf", "oneOf"]
        .into_iter()
        .find_map(|keyword| schema.get(keyword)?.as_array())
        .map(Vec::as_slice)
}

/// The branch of a union that `value` meant: the only one of its kind (`Option<T>` is `T` or null), or
/// the only one whose tag property it carries.
fn meant_branch<'s>(root: &'s Value, branches: &'s [Value], value: &Value) -> Option<&'s Value> {
    let of_its_kind: Vec<&'s Value> = branches
        .iter()
        .filter(|branch| admits_kind(follow(root, branch), value))
        .collect();
    if let [one] = of_its_kind.as_slice() {
        return Some(one);
    }
    let object = value.as_object()?;
    let carries_tag = |branch: &&'s Value| {
        let properties = follow(root, branch)
            .get("properties")
            .and_then(Value::as_object);
        properties.into_iter().flatten().any(|(name, property)| {
            let tag = follow(root, property);
            let constant = match (tag.get("const"), tag.get("enum")) {
                (Some(value), _) => Some(value),
                (None, Some(Value::Array(values))) if values.len() == 1 => values.first(),
                _ => None,
            };
            constant.is_some_and(|constant| object.get(name) == Some(constant))
        })
    };
    let tagged: Vec<&'s Value> = of_its_kind.into_iter().filter(carries_tag).collect();
    match tagged.as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

/// The JSON types a schema names (`type`, or what `properties` or `items` imply); `None` when it names
/// none (a value of any kind may fit).
fn types_of(schema: &Map<String, Value>) -> Option<Vec<&str>> {
    match schema.get("type") {
        Some(Value::String(one)) => Some(vec![one.as_str()]),
        Some(Value::Array(many)) => Some(many.iter().filter_map(Value::as_str).collect()),
        _ if schema.contains_key("properties") => Some(vec!["object"]),
        _ if schema.contains_key("items") => Some(vec!["array"]),
        _ => None,
    }
}

fn admits_kind(schema: &Value, value: &Value) -> bool {
    let Some(schema) = schema.as_object() else {
        return true;
    };
    types_of(schema).is_none_or(|types| types.iter().any(|kind| is_of(value, kind)))
}

/// Whether a schema holds only scalars (so nothing below it can have an unknown property).
fn is_flat(root: &Value, schema: &Value) -> bool {
    let Some(schema) = follow(root, schema).as_object() else {
        return false;
    };
    let scalar =
        |kind: &&str| matches!(*kind, "string" | "number" | "integer" | "boolean" | "null");
    union_of(schema).is_none() && types_of(schema).is_some_and(|types| types.iter().all(scalar))
}

/// Whether `value` satisfies the keywords of `schema` that judge a value by itself: its type, its allowed
/// values, its numeric bounds, its length or number of items. (Not `pattern` or `format`: those are the
/// full validator's.)
fn fits_keywords(schema: &Map<String, Value>, value: &Value) -> bool {
    let number = |key: &str| schema.get(key).and_then(Value::as_f64);
    let count = |key: &str| schema.get(key).and_then(Value::as_u64);
    if schema.contains_key("type")
        && let Some(types) = types_of(schema)
        && !types.iter().any(|kind| is_of(value, kind))
    {
        return false;
    }
    if schema
        .get("const")
        .is_some_and(|constant| !same_value(constant, value))
    {
        return false;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.iter().any(|allowed| same_value(allowed, value))
    {
        return false;
    }
    if let Some(n) = value.as_f64() {
        let below = number("minimum").is_some_and(|min| n < min)
            || number("exclusiveMinimum").is_some_and(|min| n <= min);
        let above = number("maximum").is_some_and(|max| n > max)
            || number("exclusiveMaximum").is_some_and(|max| n >= max);
        if below || above {
            return false;
        }
    }
    let length = match value {
        Value::String(text) => Some((text.chars().count(), "minLength", "maxLength")),
        Value::Array(items) => Some((items.len(), "minItems", "maxItems")),
        _ => None,
    };
    if let Some((length, min, max)) = length {
        let length = length as u64;
        if count(min).is_some_and(|min| length < min) || count(max).is_some_and(|max| length > max)
        {
            return false;
        }
    }
    true
}

/// JSON equality, with numbers compared by value (`1` and `1.0` are the same number).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
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
