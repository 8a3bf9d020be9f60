//! Arguments that are a union at the root, merged into one object schema.
//!
//! A `#[serde(flatten)]`ed enum, or an enum used as the arguments type itself, gives the canonical schema a
//! `oneOf` or `anyOf` (or an `allOf` of them) at the root. No target takes that as a tool's parameters:
//!
//! - Anthropic refuses it: "input_schema does not support oneOf, allOf, or anyOf at the top level" (the
//!   API's error, e.g. anthropics/claude-code#27337);
//! - OpenAI refuses it: "schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not'
//!   at the top level" (the API's error, e.g. langchain-ai/langchainjs#9804), and strict mode documents
//!   "Root objects must not be `anyOf` and must be an object" (Structured Outputs, "Supported schemas");
//! - Gemini's `parameters` "Reflects the Open API 3.03 Parameter Object": an object whose properties are
//!   the parameters (Gemini API reference, `FunctionDeclaration`);
//! - MCP types `Tool.inputSchema` as `{type: "object", properties?, required?}` (schema.ts), and clients
//!   such as Claude Desktop and Claude Code hand it to Anthropic unchanged, where one such tool fails every
//!   request of the session (anthropics/claude-code#27337, #40075).
//!
//! So every dialect gets one object with the properties of every branch. A discriminator (a property that
//! every branch requires with a constant of its own: the tag of an internally or adjacently tagged enum)
//! becomes an `enum` of the tags, and its description lists each variant with its fields. A property that
//! not every branch requires becomes optional and nullable, and its description names the variants it
//! belongs to; a property whose schema differs between branches becomes an `anyOf` of its schemas. Without
//! a discriminator (an untagged enum), the root description lists the forms instead.
//!
//! The merged schema admits combinations the type refuses (`"action": "close"` without its `reason`); yiem
//! checks the arguments against the canonical schema, so those come back to the model as an argument error
//! that names the variant. A branch that is not an object (a unit variant of an externally tagged enum is
//! a bare string) could never be sent as tool arguments, so it is an error that names the tool and type.

use serde_json::{Map, Value, json};

use super::nodes::{append_description, definition_name, is_null_schema};
use super::{DialectError, Rewriter};

/// Unions inside a root union are expanded up to this depth.
const MAX_NESTING: usize = 4;

/// One shape the arguments can take: a branch of a root union, with the keywords that matter here.
#[derive(Clone, Default)]
struct Branch {
    properties: Map<String, Value>,
    required: Vec<String>,
    description: Option<String>,
}

impl Branch {
    fn of(object: &Map<String, Value>) -> Self {
        Branch {
            properties: object
                .get("properties")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            required: required_names(object),
            description: object
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }

    /// This branch with `inner`'s properties and requirements added (a union nested in a branch).
    fn joined(&self, inner: Branch) -> Branch {
        let mut joined = self.clone();
        for (name, schema) in inner.properties {
            insert_property(&mut joined.properties, name, schema);
        }
        for name in inner.required {
            if !joined.required.contains(&name) {
                joined.required.push(name);
            }
        }
        joined.description = match (joined.description, inner.description) {
            (Some(own), Some(inner)) => Some(format!("{own} {inner}")),
            (own, inner) => own.or(inner),
        };
        joined
    }

    fn requires(&self, name: &str) -> bool {
        self.required.iter().any(|required| required == name)
    }
}

/// How the branches of one union are told apart, for descriptions.
enum Discriminator {
    /// By a tag property: its name and each branch's value.
    Tag { name: String, values: Vec<Value> },
    /// By their fields alone: "form 1", "form 2".
    Forms,
}

impl Discriminator {
    /// "`action` is `close`", "`action` is `close` or `assign`", "form 2", "forms 1 and 3".
    fn condition(&self, branches: &[usize]) -> String {
        match self {
            Discriminator::Tag { name, values } => {
                let tags: Vec<String> = branches.iter().map(|&i| tag_text(&values[i])).collect();
                format!("`{name}` is {}", join_or(&tags))
            }
            Discriminator::Forms => {
                let numbers: Vec<String> = branches.iter().map(|i| (i + 1).to_string()).collect();
                match numbers.as_slice() {
                    [one] => format!("form {one}"),
                    [init @ .., last] => format!("forms {} and {last}", init.join(", ")),
                    [] => String::new(),
                }
            }
        }
    }

    /// "when `action` is `close`" / "in form 2".
    fn when(&self, branches: &[usize]) -> String {
        match self {
            Discriminator::Tag { .. } => format!("when {}", self.condition(branches)),
            Discriminator::Forms => format!("in {}", self.condition(branches)),
        }
    }
}

impl Rewriter<'_> {
    /// Replaces a root union by one object schema (see the module docs); leaves other roots alone.
    pub(super) fn merge_root_union(&self, root: &mut Value) -> Result<(), DialectError> {
        let Some(object) = root.as_object_mut() else {
            return Ok(());
        };
        if !["oneOf", "anyOf", "allOf"]
            .iter()
            .any(|keyword| object.contains_key(*keyword))
        {
            return Ok(());
        }
        let mut groups: Vec<Vec<Branch>> = Vec::new();
        let mut base = Branch::of(object);
        if let Some(Value::Array(parts)) = object.remove("allOf") {
            for part in parts {
                let Value::Object(mut part) = self.resolved(part)? else {
                    return Err(
                        self.unsupported("", "has an `allOf` part that is not a schema object")
                    );
                };
                let union = take_union(&mut part);
                if part.contains_key("allOf") {
                    return Err(self.unsupported(
                        "",
                        "nests `allOf` inside `allOf` at the root, which yiem cannot merge into one object",
                    ));
                }
                self.refuse_non_object(&part)?;
                base = base.joined(Branch::of(&part));
                if let Some(branches) = union {
                    groups.push(self.alternatives(branches, 0)?);
                }
            }
        }
        for keyword in ["oneOf", "anyOf"] {
            if let Some(Value::Array(branches)) = object.remove(keyword) {
                groups.push(self.alternatives(branches, 0)?);
            }
        }

        let mut properties = base.properties.clone();
        let mut required = base.required.clone();
        let mut forms = Vec::new();
        for branches in &groups {
            self.merge_group(branches, &mut properties, &mut required, &mut forms)?;
        }
        if !forms.is_empty() {
            let listing = format!(
                "Send the fields of one of these forms:\n{}",
                forms.join("\n")
            );
            let text = match object.get("description").and_then(Value::as_str) {
                Some(own) => format!("{own}\n{listing}"),
                None => listing,
            };
            object.insert("description".into(), Value::String(text));
        }

        let mut merged = Map::new();
        merged.insert("type".into(), json!("object"));
        merged.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            merged.insert(
                "required".into(),
                Value::Array(required.into_iter().map(Value::String).collect()),
            );
        }
        for (key, value) in std::mem::take(object) {
            if !matches!(key.as_str(), "type" | "properties" | "required") {
                merged.insert(key, value);
            }
        }
        *object = merged;
        Ok(())
    }

    /// Merges the branches of one union into `properties` and `required`; for a union without a tag,
    /// pushes one line per branch to `forms`.
    fn merge_group(
        &self,
        branches: &[Branch],
        properties: &mut Map<String, Value>,
        required: &mut Vec<String>,
        forms: &mut Vec<String>,
    ) -> Result<(), DialectError> {
        if branches.is_empty() {
            return Err(self.unsupported("", "is a union that no value can match"));
        }
        let discriminator = find_tag(branches).unwrap_or(Discriminator::Forms);
        let tag = match &discriminator {
            Discriminator::Tag { name, .. } => Some(name.clone()),
            Discriminator::Forms => None,
        };

        let mut names: Vec<String> = Vec::new();
        for branch in branches {
            for name in branch.properties.keys().chain(branch.required.iter()) {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }

        let mut listing = Vec::new();
        for (index, branch) in branches.iter().enumerate() {
            let fields: Vec<String> = branch
                .properties
                .keys()
                .chain(
                    branch
                        .required
                        .iter()
                        .filter(|name| !branch.properties.contains_key(*name)),
                )
                .filter(|name| Some(*name) != tag.as_ref())
                .map(|name| {
                    if branch.requires(name) {
                        format!("`{name}`")
                    } else {
                        format!("`{name}` (optional)")
                    }
                })
                .collect();
            let fields = if fields.is_empty() {
                "No other fields.".to_owned()
            } else {
                format!("Fields: {}.", fields.join(", "))
            };
            let line = match &branch.description {
                Some(doc) => format!("{doc} {fields}"),
                None => fields,
            };
            match &discriminator {
                Discriminator::Tag { values, .. } => {
                    listing.push(format!("- {}: {line}", tag_text(&values[index])))
                }
                Discriminator::Forms => forms.push(format!("{}. {line}", index + 1)),
            }
        }

        for name in names {
            if let (Some(tag), Discriminator::Tag { values, .. }) = (&tag, &discriminator)
                && *tag == name
            {
                let schema = json!({
                    "type": "string",
                    "enum": values,
                    "description": listing.join("\n"),
                });
                insert_property(properties, name.clone(), schema);
                if !required.contains(&name) {
                    required.push(name);
                }
                continue;
            }
            let present: Vec<usize> = (0..branches.len())
                .filter(|&i| branches[i].properties.contains_key(&name))
                .collect();
            let requiring: Vec<usize> = (0..branches.len())
                .filter(|&i| branches[i].requires(&name))
                .collect();
            let everywhere = requiring.len() == branches.len();
            let declared: Vec<usize> = (0..branches.len())
                .filter(|&i| {
                    branches[i].properties.contains_key(&name) || branches[i].requires(&name)
                })
                .collect();
            let note = if everywhere {
                None
            } else if declared.len() < branches.len() {
                let mut note = format!("Only {}", discriminator.when(&declared));
                if requiring == declared {
                    note.push_str(", where it is required.");
                } else if requiring.is_empty() {
                    note.push('.');
                } else {
                    note.push_str(&format!("; required {}.", discriminator.when(&requiring)));
                }
                Some(note)
            } else if !requiring.is_empty() {
                Some(format!("Required {}.", discriminator.when(&requiring)))
            } else {
                None
            };

            let schemas: Vec<&Value> = present
                .iter()
                .map(|&i| &branches[i].properties[&name])
                .collect();
            let mut schema = match merge_schemas(&schemas) {
                Some(schema) => schema,
                // Declared only outside the union, which only requires it: say where it is required.
                None => match properties.get_mut(&name) {
                    Some(existing) => {
                        if let (false, Some(existing)) = (everywhere, existing.as_object_mut()) {
                            let note = format!("Required {}.", discriminator.when(&requiring));
                            append_description(existing, &note);
                        }
                        if everywhere && !required.contains(&name) {
                            required.push(name);
                        }
                        continue;
                    }
                    None if everywhere => {
                        return Err(self.unsupported(
                            "",
                            format!("is a union that requires `{name}` without declaring it"),
                        ));
                    }
                    None => continue,
                },
            };
            if let (Some(note), Some(object)) = (&note, schema.as_object_mut()) {
                append_description(object, note);
            }
            if everywhere {
                if !required.contains(&name) {
                    required.push(name.clone());
                }
            } else {
                schema = nullable(schema);
            }
            insert_property(properties, name, schema);
        }
        Ok(())
    }

    /// The object shapes a union's branches allow, nested unions expanded (each inner branch joined to
    /// its outer one). A `null` branch is skipped: the arguments are never `null`.
    fn alternatives(
        &self,
        branches: Vec<Value>,
        depth: usize,
    ) -> Result<Vec<Branch>, DialectError> {
        if depth > MAX_NESTING {
            return Err(self.unsupported(
                "",
                format!("nests unions more than {MAX_NESTING} deep at the root, which yiem cannot merge into one object"),
            ));
        }
        let mut out = Vec::new();
        for branch in branches {
            let branch = self.resolved(branch)?;
            if is_null_schema(&branch) {
                continue;
            }
            let mut object = match branch {
                Value::Bool(true) => Map::new(),
                Value::Bool(false) => continue,
                Value::Object(object) => object,
                other => {
                    return Err(self.unsupported(
                        "",
                        format!("is a union with a branch {other} that is not a schema"),
                    ));
                }
            };
            self.refuse_non_object(&object)?;
            let union = take_union(&mut object);
            if let Some(Value::Array(parts)) = object.remove("allOf") {
                for part in parts {
                    let Value::Object(part) = self.resolved(part)? else {
                        return Err(
                            self.unsupported("", "has an `allOf` part that is not a schema object")
                        );
                    };
                    if part.contains_key("oneOf")
                        || part.contains_key("anyOf")
                        || part.contains_key("allOf")
                    {
                        return Err(self.unsupported(
                            "",
                            "is a union with a branch that is an `allOf` of unions, which yiem cannot merge into one object",
                        ));
                    }
                    let own = Branch::of(&object).joined(Branch::of(&part));
                    object.insert("properties".into(), Value::Object(own.properties));
                    object.insert(
                        "required".into(),
                        Value::Array(own.required.into_iter().map(Value::String).collect()),
                    );
                }
            }
            let own = Branch::of(&object);
            match union {
                None => out.push(own),
                Some(inner) => {
                    for alternative in self.alternatives(inner, depth + 1)? {
                        out.push(own.joined(alternative));
                    }
                }
            }
        }
        Ok(out)
    }

    /// A root union branch that can only match something other than an object is an error: tool
    /// arguments are always a JSON object, so that variant could never be called.
    fn refuse_non_object(&self, branch: &Map<String, Value>) -> Result<(), DialectError> {
        let what = if let Some(value) = branch.get("const") {
            Some(value.to_string())
        } else if let Some(Value::Array(values)) = branch.get("enum") {
            let listed: Vec<String> = values.iter().map(Value::to_string).collect();
            Some(join_or(&listed))
        } else {
            match branch.get("type") {
                Some(Value::String(kind)) if kind != "object" => Some(format!("any {kind}")),
                Some(Value::Array(kinds)) if !kinds.iter().any(|k| k == "object") => {
                    let listed: Vec<String> = kinds
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|kind| format!("any {kind}"))
                        .collect();
                    Some(join_or(&listed))
                }
                _ => None,
            }
        };
        match what {
            Some(what) => Err(self.unsupported(
                "",
                format!(
                    "is a union with a variant that is {what}, not an object, and tool arguments are always a JSON object, so that variant could never be called; make it a struct variant (`Name {{}}`) or put the enum in a field of a struct"
                ),
            )),
            None => Ok(()),
        }
    }

    /// `schema` with any `$ref` at its top replaced by the definition (the node's own keywords win).
    fn resolved(&self, schema: Value) -> Result<Value, DialectError> {
        let mut schema = schema;
        for _ in 0..=MAX_NESTING {
            let Some(reference) = schema
                .get("$ref")
                .and_then(Value::as_str)
                .map(str::to_owned)
            else {
                return Ok(schema);
            };
            let Some(name) = definition_name(&reference) else {
                return Err(self.unsupported(
                    "",
                    format!("is a union with a branch `$ref` to `{reference}`, which yiem cannot merge into one object"),
                ));
            };
            let mut body = self.definition(name)?.clone();
            if let (Some(body), Value::Object(siblings)) = (body.as_object_mut(), schema) {
                for (key, value) in siblings {
                    if key != "$ref" {
                        body.insert(key, value);
                    }
                }
            }
            schema = body;
        }
        Err(self.unsupported(
            "",
            "is a union whose branch is a chain of `$ref`s, which yiem cannot merge into one object",
        ))
    }
}

/// Takes the `oneOf` or `anyOf` branches out of a schema object.
fn take_union(object: &mut Map<String, Value>) -> Option<Vec<Value>> {
    ["oneOf", "anyOf"]
        .into_iter()
        .find_map(|keyword| match object.remove(keyword) {
            Some(Value::Array(branches)) => Some(branches),
            _ => None,
        })
}

/// The tag property of a union: required by every branch, each with a different string constant.
fn find_tag(branches: &[Branch]) -> Option<Discriminator> {
    let first = branches.first()?;
    'candidates: for name in first.properties.keys() {
        let mut values = Vec::new();
        for branch in branches {
            let constant = branch.properties.get(name).and_then(string_constant);
            match constant {
                Some(value) if branch.requires(name) && !values.contains(&value) => {
                    values.push(value)
                }
                _ => continue 'candidates,
            }
        }
        return Some(Discriminator::Tag {
            name: name.clone(),
            values,
        });
    }
    None
}

/// The one string a schema allows (`const`, or an `enum` of one string).
fn string_constant(schema: &Value) -> Option<Value> {
    match (schema.get("const"), schema.get("enum")) {
        (Some(value @ Value::String(_)), _) => Some(value.clone()),
        (None, Some(Value::Array(values))) if values.len() == 1 && values[0].is_string() => {
            Some(values[0].clone())
        }
        _ => None,
    }
}

fn tag_text(value: &Value) -> String {
    match value.as_str() {
        Some(text) => format!("`{text}`"),
        None => format!("`{value}`"),
    }
}

/// One schema for a property that several branches declare: the schema itself when they agree (up to
/// their descriptions), else an `anyOf` of the distinct ones. `None` when no branch declares it.
fn merge_schemas(schemas: &[&Value]) -> Option<Value> {
    let mut distinct: Vec<&Value> = Vec::new();
    for schema in schemas {
        if !distinct.iter().any(|seen| same_shape(seen, schema)) {
            distinct.push(schema);
        }
    }
    match distinct.as_slice() {
        [] => None,
        [one] => Some((*one).clone()),
        many => {
            // One description for all goes outside; different ones stay with their branches.
            let descriptions: Vec<Option<&Value>> = many
                .iter()
                .map(|schema| schema.get("description"))
                .collect();
            let shared = descriptions
                .iter()
                .all(|description| *description == descriptions[0]);
            let mut merged = Map::new();
            if shared && let Some(description) = descriptions[0] {
                merged.insert("description".into(), description.clone());
            }
            let branches: Vec<Value> = many
                .iter()
                .map(|schema| {
                    let mut schema = (*schema).clone();
                    if let (true, Some(object)) = (shared, schema.as_object_mut()) {
                        object.shift_remove("description");
                    }
                    schema
                })
                .collect();
            merged.insert("anyOf".into(), Value::Array(branches));
            Some(Value::Object(merged))
        }
    }
}

/// Two schemas that allow the same values, as far as their keywords show (descriptions and titles apart).
fn same_shape(a: &Value, b: &Value) -> bool {
    let strip = |schema: &Value| -> Value {
        let mut schema = schema.clone();
        if let Some(object) = schema.as_object_mut() {
            object.remove("description");
            object.remove("title");
        }
        schema
    };
    strip(a) == strip(b)
}

/// Adds `schema` as property `name`; a different schema already there makes it an `anyOf` of both.
fn insert_property(properties: &mut Map<String, Value>, name: String, schema: Value) {
    match properties.get_mut(&name) {
        None => {
            properties.insert(name, schema);
        }
        Some(existing) if same_shape(existing, &schema) => {}
        Some(existing) => {
            let merged = merge_schemas(&[existing, &schema]).expect("two schemas");
            *existing = merged;
        }
    }
}

/// `schema`, admitting `null` as well: an `anyOf` with a `null` branch, which the rewrite then writes the
/// target's way. A schema that admits `null` already is returned as it is.
fn nullable(schema: Value) -> Value {
    if admits_null(&schema) {
        return schema;
    }
    let mut schema = schema;
    let mut outer = Map::new();
    if let Some(object) = schema.as_object_mut()
        && let Some(description) = object.shift_remove("description")
    {
        outer.insert("description".into(), description);
    }
    outer.insert("anyOf".into(), json!([schema, {"type": "null"}]));
    Value::Object(outer)
}

fn admits_null(schema: &Value) -> bool {
    let Some(object) = schema.as_object() else {
        return schema == &Value::Bool(true);
    };
    let by_type = match object.get("type") {
        Some(Value::String(kind)) => kind == "null",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "null"),
        _ => false,
    };
    by_type
        || ["anyOf", "oneOf"].iter().any(|keyword| {
            object
                .get(*keyword)
                .and_then(Value::as_array)
                .is_some_and(|branches| branches.iter().any(admits_null))
        })
}

fn required_names(object: &Map<String, Value>) -> Vec<String> {
    object
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}
