//! The report a model reads when its arguments fail: every problem with its JSON Pointer, what was expected
//! (the schema described in English) and what came, the valid property names, "did you mean" for a
//! misspelt property, and for a union at the root the variant meant.

#[cfg(feature = "schema-validation")]
use jsonschema::ValidationError;
#[cfg(feature = "schema-validation")]
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::{Map, Value};

use super::check::ArgumentCheck;
use super::words::escape;
#[cfg(feature = "schema-validation")]
use super::words::{article, got, join_or};
use super::{ArgumentError, ArgumentProblem};
#[cfg(feature = "schema-validation")]
use crate::dialect::resolve_ref;
use crate::suggest::did_you_mean;

impl ArgumentCheck<'_> {
    /// The full report for arguments that failed: unknown properties, then every schema violation; serde's
    /// own complaint when the schema finds nothing wrong (serde can be stricter than the schema).
    pub(crate) fn explain(
        &self,
        args: &Value,
        serde_problem: Option<ArgumentProblem>,
    ) -> ArgumentError {
        let top = self.top_level();
        let mut problems = Vec::new();
        if let (false, Some(object)) = (top.open, args.as_object()) {
            for key in object.keys().filter(|key| !top.knows(key)) {
                problems.push(unknown_property("", key, &top.names, object));
            }
        }
        let unknown_count = problems.len();
        #[cfg(feature = "schema-validation")]
        if let Some(validator) = self.validator() {
            for error in validator.iter_errors(args) {
                let at_root = error.instance_path().as_str().is_empty();
                if at_root
                    && matches!(
                        error.kind(),
                        ValidationErrorKind::AdditionalProperties { .. }
                    )
                {
                    continue; // already reported above, with suggestions
                }
                self.describe(&error, "", &mut problems);
            }
        }
        #[cfg(not(feature = "schema-validation"))]
        self.lean().problems(args, &mut problems);
        if problems.len() == unknown_count
            && let Some(problem) = serde_problem
        {
            problems.push(problem);
        }
        ArgumentError::Invalid {
            tool: self.tool.to_owned(),
            problems,
            valid_properties: top.names.clone(),
        }
    }
}

/// Every schema violation, described (only with the validator).
#[cfg(feature = "schema-validation")]
impl ArgumentCheck<'_> {
    /// The schema object an error's keyword sits in.
    fn node_of(&self, error: &ValidationError<'_>) -> Option<&Value> {
        let path = error.schema_path().as_str();
        let parent = &path[..path.rfind('/')?];
        self.schema().pointer(parent)
    }

    /// Adds the problems `error` stands for; `when` (` when `action` is `close``, or empty) names the
    /// variant of a root union the arguments meant.
    fn describe(
        &self,
        error: &ValidationError<'_>,
        when: &str,
        problems: &mut Vec<ArgumentProblem>,
    ) {
        let path = error.instance_path().as_str().to_owned();
        let node = self.node_of(error);
        let message = match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let known: Vec<String> = node
                    .and_then(|n| n.get("properties"))
                    .and_then(Value::as_object)
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                let empty = Map::new();
                let siblings = error.instance().as_object().unwrap_or(&empty);
                for key in unexpected {
                    problems.push(unknown_property(&path, key, &known, siblings));
                }
                return;
            }
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                let expected = node
                    .and_then(|n| n.get("properties"))
                    .and_then(|p| p.get(name))
                    .map(|schema| self.expected(schema));
                match expected {
                    Some(expected) => {
                        format!("missing required property `{name}`{when} (expected {expected})")
                    }
                    None => format!("missing required property `{name}`{when}"),
                }
            }
            ValidationErrorKind::AnyOf { context }
            | ValidationErrorKind::OneOfNotValid { context } => {
                // The dialects merge a union at the root into one object, so the model never saw which
                // fields each variant needs: name the variant the arguments meant.
                let at_root = path.is_empty();
                if let Some((index, branch)) = closest_branch(&path, context) {
                    let variant = at_root.then(|| self.variant_meant(error, index));
                    let when = variant.as_deref().unwrap_or(when);
                    for inner in branch {
                        self.describe(inner, when, problems);
                    }
                    return;
                }
                if at_root {
                    self.explain_root_union(error, context, problems);
                    return;
                }
                self.expected_got(node, error, when)
            }
            ValidationErrorKind::Type { .. }
            | ValidationErrorKind::Enum { .. }
            | ValidationErrorKind::Constant { .. }
            | ValidationErrorKind::Minimum { .. }
            | ValidationErrorKind::Maximum { .. }
            | ValidationErrorKind::ExclusiveMinimum { .. }
            | ValidationErrorKind::ExclusiveMaximum { .. }
            | ValidationErrorKind::MinLength { .. }
            | ValidationErrorKind::MaxLength { .. }
            | ValidationErrorKind::Pattern { .. }
            | ValidationErrorKind::MinItems { .. }
            | ValidationErrorKind::MaxItems { .. }
            | ValidationErrorKind::MultipleOf { .. } => self.expected_got(node, error, when),
            _ if when.is_empty() => error.to_string(),
            _ => format!("{error} ({})", when.trim_start()),
        };
        problems.push(ArgumentProblem { path, message });
    }

    fn expected_got(
        &self,
        node: Option<&Value>,
        error: &ValidationError<'_>,
        when: &str,
    ) -> String {
        let got = got(error.instance());
        match node {
            Some(node) => format!("expected {}{when}, got {got}", self.expected(node)),
            None => match error.kind() {
                ValidationErrorKind::Type { kind } => {
                    format!("expected {}{when}, got {got}", type_kind(kind))
                }
                _ if when.is_empty() => error.to_string(),
                _ => format!("{error} ({})", when.trim_start()),
            },
        }
    }

    /// The variant that branch `index` of the failed root union `error` stands for: ` when `action` is
    /// `close`` for a tagged union, ` in form 2` for an untagged one (the dialects' merged schema lists
    /// the forms in that order).
    fn variant_meant(&self, error: &ValidationError<'_>, index: usize) -> String {
        let union = error.schema_path().as_str();
        let tag = self
            .schema_at(&format!("{union}/{index}"))
            .and_then(|branch| branch.get("properties")?.as_object())
            .and_then(|properties| {
                let instance = error.instance().as_object()?;
                properties.iter().find_map(|(name, property)| {
                    let tag = tag_value(property)?;
                    (instance.get(name) == Some(tag)).then_some((name, tag))
                })
            });
        match tag {
            Some((name, tag)) => {
                let tag = tag.as_str().map_or_else(|| tag.to_string(), str::to_owned);
                format!(" when `{name}` is `{tag}`")
            }
            None => format!(" in form {}", index + 1),
        }
    }

    /// Arguments that fit no branch of the root union, and no branch better than the others: for a
    /// tagged union, the tag that is missing or unknown; for an untagged one, each form's problems.
    fn explain_root_union(
        &self,
        error: &ValidationError<'_>,
        context: &[Vec<ValidationError<'static>>],
        problems: &mut Vec<ArgumentProblem>,
    ) {
        let union = error.schema_path().as_str();
        let branches: Vec<&Value> = (0..context.len())
            .filter_map(|index| self.schema_at(&format!("{union}/{index}")))
            .collect();
        if let Some((tag, values)) = root_tag(self.schema(), &branches) {
            let listed: Vec<String> = values.iter().map(|value| value.to_string()).collect();
            let expected = match listed.as_slice() {
                [one] => one.clone(),
                _ => format!("one of {}", join_or(&listed)),
            };
            let (path, message) = match error.instance().get(tag) {
                None => (
                    String::new(),
                    format!("missing required property `{tag}` (expected {expected})"),
                ),
                Some(sent) => (
                    format!("/{}", escape(tag)),
                    format!("expected {expected}, got {}", got(sent)),
                ),
            };
            problems.push(ArgumentProblem { path, message });
            return;
        }
        for (index, branch) in context.iter().enumerate() {
            let when = format!(" in form {}", index + 1);
            for inner in branch {
                self.describe(inner, &when, problems);
            }
        }
    }

    /// The schema at a validator's schema path (a JSON Pointer whose `$ref` segments go through the
    /// reference).
    fn schema_at(&self, path: &str) -> Option<&Value> {
        let root = self.schema();
        let mut node = root;
        for segment in path.split('/').skip(1) {
            let segment = segment.replace("~1", "/").replace("~0", "~");
            node = if segment == "$ref" {
                resolve_ref(root, node.get("$ref")?.as_str()?)?
            } else {
                match node {
                    Value::Object(object) => object.get(&segment)?,
                    Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
                    _ => return None,
                }
            };
        }
        Some(node)
    }

    /// What a schema accepts, in words: `an integer from 0 to 255`, `one of "metric", "imperial" or null`.
    fn expected(&self, schema: &Value) -> String {
        describe_schema(self.schema(), schema, 0)
    }
}

#[cfg(feature = "schema-validation")]
/// The one value a tag property allows (`const`, or an `enum` of one).
fn tag_value(property: &Value) -> Option<&Value> {
    match (property.get("const"), property.get("enum")) {
        (Some(value), _) => Some(value),
        (None, Some(Value::Array(values))) if values.len() == 1 => Some(&values[0]),
        _ => None,
    }
}

#[cfg(feature = "schema-validation")]
/// The tag of a union's branches (`$ref`s resolved in `root`): a property every branch declares with a
/// constant of its own; its name and the constants, in branch order.
fn root_tag<'a>(root: &'a Value, branches: &[&'a Value]) -> Option<(&'a str, Vec<&'a Value>)> {
    let resolve = |branch: &'a Value| -> &'a Value {
        branch
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| resolve_ref(root, r))
            .unwrap_or(branch)
    };
    let properties = |branch: &'a Value| resolve(branch).get("properties")?.as_object();
    let first = properties(branches.first()?)?;
    first.keys().find_map(|name| {
        let values: Option<Vec<&Value>> = branches
            .iter()
            .map(|branch| properties(branch)?.get(name).and_then(tag_value))
            .collect();
        values.map(|values| (name.as_str(), values))
    })
}

#[cfg(feature = "schema-validation")]
/// The branch of a failed `anyOf`/`oneOf` that the value meant, with its index: the only one whose problems
/// all sit inside the value (a tag that matched, a wrong field below), so its problems are more useful than
/// "none matched".
fn closest_branch<'e>(
    path: &str,
    context: &'e [Vec<ValidationError<'static>>],
) -> Option<(usize, &'e [ValidationError<'static>])> {
    let mut found = None;
    for (index, branch) in context.iter().enumerate() {
        let inside = !branch.is_empty()
            && branch.iter().all(|error| {
                let at = error.instance_path().as_str();
                let tag_mismatch = matches!(
                    error.kind(),
                    ValidationErrorKind::Constant { .. } | ValidationErrorKind::Enum { .. }
                );
                let below = at.len() > path.len() && at.starts_with(path);
                (below && !tag_mismatch)
                    || (at == path && matches!(error.kind(), ValidationErrorKind::Required { .. }))
            });
        if inside {
            if found.is_some() {
                return None;
            }
            found = Some((index, branch.as_slice()));
        }
    }
    found
}

fn unknown_property(
    path: &str,
    key: &str,
    known: &[String],
    present: &Map<String, Value>,
) -> ArgumentProblem {
    let mut message = format!("unknown property `{key}`");
    if let Some(suggestion) = did_you_mean(key, known.iter().filter(|k| !present.contains_key(*k)))
    {
        message.push_str(&format!("; did you mean `{suggestion}`?"));
    }
    ArgumentProblem {
        path: format!("{path}/{}", escape(key)),
        message,
    }
}

#[cfg(feature = "schema-validation")]
fn type_kind(kind: &TypeKind) -> String {
    match kind {
        TypeKind::Single(one) => article(&one.to_string()),
        TypeKind::Multiple(set) => {
            let names: Vec<String> = set.iter().map(|t| article(&t.to_string())).collect();
            join_or(&names)
        }
    }
}

#[cfg(feature = "schema-validation")]
/// A schema in words, for "expected ..." messages.
pub(crate) fn describe_schema(root: &Value, schema: &Value, depth: usize) -> String {
    let Some(object) = schema.as_object() else {
        return if schema == &Value::Bool(false) {
            "nothing".into()
        } else {
            "any value".into()
        };
    };
    if depth > 6 {
        return "a value".into();
    }
    if let Some(target) = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
    {
        return describe_schema(root, target, depth + 1);
    }
    if let Some(value) = object.get("const") {
        return value.to_string();
    }
    if let Some(Value::Array(values)) = object.get("enum") {
        let values: Vec<String> = values.iter().map(Value::to_string).collect();
        return match values.as_slice() {
            [one] => one.clone(),
            _ => format!("one of {}", values.join(", ")),
        };
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = object.get(keyword) {
            let mut values = Vec::new();
            let mut others = Vec::new();
            for branch in branches {
                let text = describe_schema(root, branch, depth + 1);
                if let Some(listed) = text.strip_prefix("one of ") {
                    values.push(listed.to_owned());
                } else if branch.get("const").is_some() {
                    values.push(text);
                } else {
                    others.push(text);
                }
            }
            let values = match values.len() {
                0 => None,
                1 if !values[0].contains(", ") => Some(values.remove(0)),
                _ => Some(format!("one of {}", values.join(", "))),
            };
            return match (values, others.is_empty()) {
                (Some(values), true) => values,
                (Some(values), false) => format!("{values} or {}", join_or(&others)),
                (None, _) => join_or(&others),
            };
        }
    }
    let types: Vec<&str> = match object.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ if object.contains_key("properties") => vec!["object"],
        _ if object.contains_key("items") => vec!["array"],
        _ => return "any value".into(),
    };
    let described: Vec<String> = types
        .iter()
        .map(|kind| describe_type(root, object, kind, depth))
        .collect();
    join_or(&described)
}

#[cfg(feature = "schema-validation")]
fn describe_type(root: &Value, object: &Map<String, Value>, kind: &str, depth: usize) -> String {
    let number = |key: &str| {
        object
            .get(key)
            .filter(|v| v.is_number())
            .map(Value::to_string)
    };
    let unsigned = |key: &str| object.get(key).and_then(Value::as_u64);
    let mut text = article(kind);
    match kind {
        "integer" | "number" => {
            match (number("minimum"), number("maximum")) {
                (Some(min), Some(max)) => text.push_str(&format!(" from {min} to {max}")),
                (Some(min), None) => text.push_str(&format!(" ≥ {min}")),
                (None, Some(max)) => text.push_str(&format!(" ≤ {max}")),
                (None, None) => {}
            }
            if let Some(min) = number("exclusiveMinimum") {
                text.push_str(&format!(" > {min}"));
            }
            if let Some(max) = number("exclusiveMaximum") {
                text.push_str(&format!(" < {max}"));
            }
            if let Some(step) = number("multipleOf") {
                text.push_str(&format!(", a multiple of {step}"));
            }
        }
        "string" => {
            if let Some(format) = object.get("format").and_then(Value::as_str) {
                text.push_str(&format!(" in `{format}` format"));
            }
            match (unsigned("minLength"), unsigned("maxLength")) {
                (Some(min), Some(max)) => {
                    text.push_str(&format!(" of {min} to {max} characters"));
                }
                (Some(min), None) => {
                    text.push_str(&format!(" of at least {min} character{}", plural(min)))
                }
                (None, Some(max)) => {
                    text.push_str(&format!(" of at most {max} character{}", plural(max)))
                }
                (None, None) => {}
            }
            if let Some(pattern) = object.get("pattern").and_then(Value::as_str) {
                text.push_str(&format!(" matching `{pattern}`"));
            }
        }
        "array" => {
            match (unsigned("minItems"), unsigned("maxItems")) {
                (Some(min), Some(max)) => text.push_str(&format!(" of {min} to {max} items")),
                (Some(min), None) => {
                    text.push_str(&format!(" of at least {min} item{}", plural(min)))
                }
                (None, Some(max)) => {
                    text.push_str(&format!(" of at most {max} item{}", plural(max)))
                }
                (None, None) => {}
            }
            if let Some(items) = object.get("items").filter(|i| i.is_object()) {
                text.push_str(&format!(
                    " (each item: {})",
                    describe_schema(root, items, depth + 1)
                ));
            }
        }
        "object" => {
            let tags: Vec<String> = object
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(name, property)| {
                    property
                        .get("const")
                        .map(|value| format!("`{name}`: {value}"))
                })
                .collect();
            if !tags.is_empty() {
                text.push_str(&format!(" with {}", tags.join(", ")));
            }
        }
        _ => {}
    }
    text
}

#[cfg(feature = "schema-validation")]
fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}
