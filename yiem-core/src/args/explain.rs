//! The report a model reads when its arguments fail: every problem with its JSON Pointer, what was expected
//! (the schema described in English) and what came, the valid property names, "did you mean" for a
//! misspelt property, and for a union at the root the variant meant.
//!
//! The problems come from the walk (`walk`), the same in every build. With `schema-validation`, the full
//! validator adds what the walk cannot judge (a `pattern`, a `format`, …), and explains a union at the
//! root that the walk leaves to it; without it, serde's own complaint stands in when the walk finds
//! nothing.

#[cfg(feature = "schema-validation")]
use jsonschema::ValidationError;
#[cfg(feature = "schema-validation")]
use jsonschema::error::{TypeKind, ValidationErrorKind};
#[cfg(feature = "schema-validation")]
use serde_json::Map;
use serde_json::Value;

use super::check::ArgumentCheck;
use super::walk::{Look, Walk};
#[cfg(feature = "schema-validation")]
use super::walk::{MAX_PROBLEMS, unknown_property};
#[cfg(feature = "schema-validation")]
use super::words::{article, describe_schema, escape, got, join_or};
use super::{ArgumentError, ArgumentProblem};
#[cfg(feature = "schema-validation")]
use crate::dialect::resolve_ref;

impl ArgumentCheck<'_> {
    /// The full report for arguments that failed: the walk's problems; what the validator adds; serde's own
    /// complaint when nothing else finds anything wrong (serde can be stricter than the schema).
    pub(crate) fn explain(
        &self,
        args: &Value,
        serde_problem: Option<ArgumentProblem>,
    ) -> ArgumentError {
        let walk = Walk::report(self.schema(), Look::Everything, args);
        #[cfg(feature = "schema-validation")]
        let (mut problems, omitted) = self.validated(args, walk.problems, walk.omitted);
        #[cfg(not(feature = "schema-validation"))]
        let (mut problems, omitted) = (walk.problems, walk.omitted);
        if problems.is_empty()
            && let Some(problem) = serde_problem
        {
            problems.push(problem);
        }
        ArgumentError::Invalid {
            tool: self.tool.to_owned(),
            problems,
            valid_properties: self.top_level().names.clone(),
            omitted,
        }
    }
}

/// Every schema violation, described (only with the validator).
#[cfg(feature = "schema-validation")]
impl ArgumentCheck<'_> {
    /// The walk's problems, with what the validator adds: everything the walk cannot judge, and (when the
    /// walk found nothing) the validator's whole account.
    fn validated(
        &self,
        args: &Value,
        mut problems: Vec<ArgumentProblem>,
        mut omitted: usize,
    ) -> (Vec<ArgumentProblem>, usize) {
        let Some(validator) = self.validator() else {
            return (problems, omitted);
        };
        let walked = problems.len();
        for error in validator.iter_errors(args) {
            if walked > 0 && (self.walk_judges(&error) || reported(&problems, &error)) {
                continue;
            }
            if problems.len() >= MAX_PROBLEMS {
                omitted += 1;
                continue;
            }
            self.describe(&error, "", &mut problems);
        }
        if problems.len() > MAX_PROBLEMS {
            omitted += problems.len() - MAX_PROBLEMS;
            problems.truncate(MAX_PROBLEMS);
        }
        (problems, omitted)
    }

    /// Whether the walk judges what `error` is about (then its own words stand). A failed union is left
    /// to `reported`: the walk judges it only where it reports something there.
    fn walk_judges(&self, error: &ValidationError<'_>) -> bool {
        matches!(
            error.kind(),
            ValidationErrorKind::AdditionalProperties { .. }
                | ValidationErrorKind::Required { .. }
                | ValidationErrorKind::Type { .. }
                | ValidationErrorKind::Enum { .. }
                | ValidationErrorKind::Constant { .. }
                | ValidationErrorKind::Minimum { .. }
                | ValidationErrorKind::Maximum { .. }
                | ValidationErrorKind::ExclusiveMinimum { .. }
                | ValidationErrorKind::ExclusiveMaximum { .. }
                | ValidationErrorKind::MinLength { .. }
                | ValidationErrorKind::MaxLength { .. }
                | ValidationErrorKind::MinItems { .. }
                | ValidationErrorKind::MaxItems { .. }
        )
    }

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
                let known: Vec<&String> = known.iter().collect();
                for key in unexpected {
                    problems.push(ArgumentProblem {
                        path: format!("{path}/{}", escape(key)),
                        message: unknown_property(key, &known, siblings),
                    });
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

/// Whether the walk already reported a problem at `error`'s value or around it.
#[cfg(feature = "schema-validation")]
fn reported(problems: &[ArgumentProblem], error: &ValidationError<'_>) -> bool {
    let at = error.instance_path().as_str();
    problems.iter().any(|problem| {
        let path = problem.path.as_str();
        at == path || at.starts_with(&format!("{path}/")) || path.starts_with(&format!("{at}/"))
    })
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
