//! Turning the JSON arguments a model sent into a tool's typed arguments, and the errors that explain to the
//! model what was wrong: every problem with its JSON Pointer, what was expected and what came, the valid
//! property names, and a "did you mean" for a misspelt property.
//!
//! # Unknown properties
//!
//! serde silently ignores a property it does not know, so a model that misspells `city` as `citty` would get
//! the default instead of an error. yiem reports every property of the arguments object that the schema does
//! not declare, **unless the schema opts in to extra properties**: the root schema (or, for arguments that are
//! an enum of objects, one of its top-level `anyOf`/`oneOf`/`allOf` branches) has an `additionalProperties`
//! or `unevaluatedProperties` that is present and not `false` (schemars emits one for a `#[serde(flatten)]`
//! map), has `patternProperties`, or declares no `properties` at all (a run-time schema such as
//! `{"type": "object"}` says nothing about names). A missing `additionalProperties` counts as `false`. The
//! check covers the top level of the arguments, where a misspelling costs the most, and is cheap: a set
//! lookup per key. Nested objects are held to their schema (`#[serde(deny_unknown_fields)]` emits
//! `additionalProperties: false`) whenever the arguments fail.
//!
//! # Cost
//!
//! Arguments that parse and have no unknown property never touch the JSON Schema validator. Only a failing
//! call compiles the tool's validator (once per tool, then cached) to list every problem.

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde::de::DeserializeOwned;

use crate::dialect::resolve_ref;
use crate::suggest::did_you_mean;
use serde_json::{Map, Value};

/// One problem with a tool's arguments: where it is and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgumentProblem {
    /// A JSON Pointer to the offending value (`/items/2/qty`); empty for the arguments object itself.
    pub path: String,
    /// What was expected and what came.
    pub message: String,
}

impl fmt::Display for ArgumentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "at `{}`: {}", self.path, self.message)
        }
    }
}

/// Why a tool's arguments were refused. Its `Display` is written for the model that has to fix the call.
///
/// ```
/// use serde_json::json;
/// use yiem_core::ArgumentError;
///
/// let error = ArgumentError::not_an_object("get_weather", &json!([1, 2]));
/// assert_eq!(
///     error.to_string(),
///     "arguments for tool `get_weather` must be a JSON object, got an array"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentError {
    /// The arguments came as a string that is not JSON.
    #[error(
        "arguments for tool `{tool}` are not valid JSON ({detail}); send the arguments as a JSON object"
    )]
    NotJson {
        /// The tool that was called.
        tool: String,
        /// What the JSON parser said.
        detail: String,
    },
    /// The arguments are JSON, but not an object.
    #[error("arguments for tool `{tool}` must be a JSON object, got {got}")]
    NotAnObject {
        /// The tool that was called.
        tool: String,
        /// What came instead (`an array`, `a number`, ...).
        got: &'static str,
    },
    /// The arguments object does not fit the tool's parameters.
    #[error("{}", describe_invalid(tool, problems, valid_properties))]
    Invalid {
        /// The tool that was called.
        tool: String,
        /// Every problem found, each with its path.
        problems: Vec<ArgumentProblem>,
        /// The properties the arguments object may have, in schema order (empty when the problem is not
        /// about the shape of the arguments, e.g. a failed `validate` check).
        valid_properties: Vec<String>,
    },
}

impl ArgumentError {
    /// The error for arguments that are JSON but not an object.
    pub fn not_an_object(tool: &str, value: &Value) -> Self {
        ArgumentError::NotAnObject {
            tool: tool.to_owned(),
            got: json_kind(value),
        }
    }

    /// The error for one problem in the arguments object.
    ///
    /// ```
    /// use yiem_core::ArgumentError;
    ///
    /// let error = ArgumentError::invalid("book", "/nights", "at most 30 nights");
    /// assert_eq!(error.to_string(), "invalid arguments for tool `book`: at `/nights`: at most 30 nights");
    /// ```
    pub fn invalid(tool: &str, path: impl Into<String>, message: impl Into<String>) -> Self {
        ArgumentError::Invalid {
            tool: tool.to_owned(),
            problems: vec![ArgumentProblem {
                path: path.into(),
                message: message.into(),
            }],
            valid_properties: Vec::new(),
        }
    }

    /// The problems found, one per offending value (empty for JSON and shape errors).
    pub fn problems(&self) -> &[ArgumentProblem] {
        match self {
            ArgumentError::Invalid { problems, .. } => problems,
            _ => &[],
        }
    }
}

fn describe_invalid(tool: &str, problems: &[ArgumentProblem], valid: &[String]) -> String {
    let mut text = match problems {
        [one] => format!("invalid arguments for tool `{tool}`: {one}"),
        many => {
            let mut text = format!(
                "invalid arguments for tool `{tool}` ({} problems):",
                many.len()
            );
            for problem in many {
                text.push_str("\n- ");
                text.push_str(&problem.to_string());
            }
            text
        }
    };
    if !valid.is_empty() {
        text.push_str("\nvalid properties: ");
        text.push_str(&backticked(valid.iter().map(String::as_str)));
    }
    text
}

/// `a string`, `an array`, ... for error messages.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Brings raw arguments into the one shape tools accept, a JSON object: a string is parsed as JSON (the
/// OpenAI wire format), `null` and an empty string mean "no arguments". An object is borrowed, not copied.
pub(crate) fn normalize<'a>(tool: &str, raw: &'a Value) -> Result<Cow<'a, Value>, ArgumentError> {
    match raw {
        Value::Object(_) => Ok(Cow::Borrowed(raw)),
        Value::Null => Ok(Cow::Owned(Value::Object(Map::new()))),
        Value::String(text) if text.trim().is_empty() => Ok(Cow::Owned(Value::Object(Map::new()))),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Null) => Ok(Cow::Owned(Value::Object(Map::new()))),
            Ok(value @ Value::Object(_)) => Ok(Cow::Owned(value)),
            Ok(other) => Err(ArgumentError::not_an_object(tool, &other)),
            Err(error) => Err(ArgumentError::NotJson {
                tool: tool.to_owned(),
                detail: error.to_string(),
            }),
        },
        other => Err(ArgumentError::not_an_object(tool, other)),
    }
}

/// Deserializes `args` into `A`; on failure, the path of the value that did not fit and serde's message.
pub(crate) fn parse<A: DeserializeOwned>(args: &Value) -> Result<A, ArgumentProblem> {
    // The fast path tracks no path; only a failure pays for a second, path-tracking pass.
    if let Ok(parsed) = A::deserialize(args) {
        return Ok(parsed);
    }
    serde_path_to_error::deserialize(args).map_err(|error| ArgumentProblem {
        path: pointer(error.path()),
        message: error.into_inner().to_string(),
    })
}

/// A JSON Pointer (RFC 6901) for a serde path.
fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        out.push('/');
        match segment {
            Segment::Seq { index } => out.push_str(&index.to_string()),
            Segment::Map { key } => out.push_str(&escape(key)),
            Segment::Enum { variant } => out.push_str(variant),
            Segment::Unknown => out.push('?'),
        }
    }
    out
}

/// One JSON Pointer segment, escaped.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `` `a`, `b`, `c` ``
fn backticked<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a tool caches to check its arguments: the top-level property names (computed on the first call)
/// and the JSON Schema validator (compiled on the first failure).
#[derive(Default)]
pub(crate) struct ArgumentCache {
    validator: OnceLock<Option<Validator>>,
    top_level: OnceLock<TopLevel>,
}

impl ArgumentCache {
    /// A cache whose validator is already compiled (run-time tools validate every call).
    pub(crate) fn with_validator(validator: Validator) -> Self {
        ArgumentCache {
            validator: OnceLock::from(Some(validator)),
            top_level: OnceLock::new(),
        }
    }
}

/// The properties the arguments object may have.
struct TopLevel {
    /// Every declared name, in schema order.
    names: Vec<String>,
    /// Whether other names are allowed too (see the module docs).
    open: bool,
}

impl TopLevel {
    fn of(schema: &Value) -> Self {
        let mut top = TopLevel {
            names: Vec::new(),
            open: false,
        };
        let mut declared = false;
        collect_top_level(schema, schema, &mut top, &mut declared, 0);
        if !declared {
            top.open = true;
        }
        top
    }

    fn knows(&self, name: &str) -> bool {
        self.names.iter().any(|known| known == name)
    }
}

fn collect_top_level(
    root: &Value,
    node: &Value,
    top: &mut TopLevel,
    declared: &mut bool,
    depth: usize,
) {
    let Some(object) = node.as_object() else {
        return;
    };
    if depth > 8 {
        top.open = true;
        return;
    }
    if let Some(properties) = object.get("properties").and_then(Value::as_object) {
        *declared = true;
        for name in properties.keys() {
            if !top.knows(name) {
                top.names.push(name.clone());
            }
        }
    }
    let allows = |keyword: &str| {
        object
            .get(keyword)
            .is_some_and(|v| v != &Value::Bool(false))
    };
    if allows("additionalProperties")
        || allows("unevaluatedProperties")
        || object.contains_key("patternProperties")
    {
        top.open = true;
    }
    if let Some(target) = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
    {
        collect_top_level(root, target, top, declared, depth + 1);
    }
    for keyword in ["allOf", "anyOf", "oneOf"] {
        for branch in object
            .get(keyword)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            collect_top_level(root, branch, top, declared, depth + 1);
        }
    }
}

/// Everything the check of one call needs: the tool's name, its canonical schema and its caches.
#[doc(hidden)]
pub struct ArgumentCheck<'a> {
    pub(crate) tool: &'a str,
    pub(crate) schema: &'a Value,
    pub(crate) cache: &'a ArgumentCache,
}

impl ArgumentCheck<'_> {
    /// The tool's name.
    pub fn tool(&self) -> &str {
        self.tool
    }

    fn top_level(&self) -> &TopLevel {
        self.cache
            .top_level
            .get_or_init(|| TopLevel::of(self.schema))
    }

    fn validator(&self) -> Option<&Validator> {
        self.cache
            .validator
            .get_or_init(|| jsonschema::validator_for(self.schema).ok())
            .as_ref()
    }

    /// Whether the arguments object has a property the schema does not allow (cheap: no validator).
    pub(crate) fn has_unknown_properties(&self, args: &Value) -> bool {
        let top = self.top_level();
        !top.open
            && args
                .as_object()
                .is_some_and(|args| args.keys().any(|key| !top.knows(key)))
    }

    /// Whether the arguments satisfy the schema and have no unknown property.
    pub(crate) fn is_valid(&self, args: &Value) -> bool {
        !self.has_unknown_properties(args) && self.validator().is_none_or(|v| v.is_valid(args))
    }

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

    /// The schema object an error's keyword sits in.
    fn node_of(&self, error: &ValidationError<'_>) -> Option<&Value> {
        let path = error.schema_path().as_str();
        let parent = &path[..path.rfind('/')?];
        self.schema.pointer(parent)
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
        if let Some((tag, values)) = root_tag(self.schema, &branches) {
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
        let mut node = self.schema;
        for segment in path.split('/').skip(1) {
            let segment = segment.replace("~1", "/").replace("~0", "~");
            node = if segment == "$ref" {
                resolve_ref(self.schema, node.get("$ref")?.as_str()?)?
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
        describe_schema(self.schema, schema, 0)
    }
}

/// The one value a tag property allows (`const`, or an `enum` of one).
fn tag_value(property: &Value) -> Option<&Value> {
    match (property.get("const"), property.get("enum")) {
        (Some(value), _) => Some(value),
        (None, Some(Value::Array(values))) if values.len() == 1 => Some(&values[0]),
        _ => None,
    }
}

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

/// What came, in words: `the string "three"`, `the number -2`, `an object with `kind`, `side``.
fn got(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.chars().count() > 40 => {
            let head: String = s.chars().take(40).collect();
            format!("the string {}…", Value::String(head))
        }
        Value::String(_) => format!("the string {value}"),
        Value::Array(items) if items.is_empty() => "an empty array".into(),
        Value::Array(items) => format!(
            "an array of {} item{}",
            items.len(),
            if items.len() == 1 { "" } else { "s" }
        ),
        Value::Object(map) if map.is_empty() => "an empty object".into(),
        Value::Object(map) => format!(
            "an object with {}",
            backticked(map.keys().map(String::as_str))
        ),
    }
}

fn type_kind(kind: &TypeKind) -> String {
    match kind {
        TypeKind::Single(one) => article(&one.to_string()),
        TypeKind::Multiple(set) => {
            let names: Vec<String> = set.iter().map(|t| article(&t.to_string())).collect();
            join_or(&names)
        }
    }
}

fn article(type_name: &str) -> String {
    match type_name {
        "null" => "null".into(),
        "integer" | "array" | "object" => format!("an {type_name}"),
        other => format!("a {other}"),
    }
}

fn join_or(items: &[String]) -> String {
    match items {
        [] => "nothing".into(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

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

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Order {
        items: Vec<Item>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        qty: u32,
    }

    #[test]
    fn nested_type_error_is_reported_with_its_json_pointer() {
        let args = json!({"items": [{"qty": 1}, {"qty": 2}, {"qty": "three"}]});
        let problem = parse::<Order>(&args).unwrap_err();
        assert_eq!(
            problem.to_string(),
            "at `/items/2/qty`: invalid type: string \"three\", expected u32"
        );
    }

    #[test]
    fn string_arguments_are_parsed_as_json() {
        let raw = json!("{\"a\": 1}");
        assert_eq!(*normalize("t", &raw).unwrap(), json!({"a": 1}));
    }

    #[test]
    fn null_and_empty_string_mean_no_arguments() {
        assert_eq!(*normalize("t", &Value::Null).unwrap(), json!({}));
        assert_eq!(*normalize("t", &json!("  ")).unwrap(), json!({}));
        let object = json!({"a": 1});
        assert!(matches!(normalize("t", &object).unwrap(), Cow::Borrowed(_)));
    }

    #[test]
    fn a_string_that_is_not_json_is_refused() {
        let error = normalize("t", &json!("{city: Tokyo")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "arguments for tool `t` are not valid JSON (key must be a string at line 1 column 2); send the arguments as a JSON object"
        );
    }

    #[test]
    fn did_you_mean_takes_the_closest_plausible_name() {
        let known: Vec<String> = ["city", "unit", "first_name", "zip"]
            .map(String::from)
            .to_vec();
        let suggest = |typed: &str| did_you_mean(typed, known.iter());
        assert_eq!(suggest("citty"), Some("city"));
        assert_eq!(suggest("firstName"), Some("first_name"));
        assert_eq!(suggest("zip_code"), Some("zip"));
        assert_eq!(suggest("units"), Some("unit"));
        assert_eq!(suggest("verbose"), None);
        assert_eq!(suggest("ab"), None);
    }

    #[test]
    fn pointer_escapes_slash_and_tilde() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct M {
            m: std::collections::BTreeMap<String, u8>,
        }
        let problem = parse::<M>(&json!({"m": {"a/b~c": "x"}})).unwrap_err();
        assert_eq!(problem.path, "/m/a~1b~0c");
    }
}
