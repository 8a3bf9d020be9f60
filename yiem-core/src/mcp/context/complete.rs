//! Completions of prompt arguments and template parameters (`completion/complete`): a function's
//! candidates or an enum's variants, filtered by what the client typed and bounded as MCP says.

use std::sync::Arc;

use rmcp::model::CompletionInfo;
use serde_json::Value;

/// A function from what was typed so far to the candidates.
type CompleteFn = Arc<dyn Fn(&str) -> Vec<String> + Send + Sync>;

/// Where an argument's candidates come from.
#[derive(Clone)]
pub(crate) enum Completer {
    /// A function of what was typed so far.
    Function(CompleteFn),
    /// A fixed list: an enum's variants.
    Values(Arc<[String]>),
}

impl Completer {
    pub(crate) fn function(complete: impl Fn(&str) -> Vec<String> + Send + Sync + 'static) -> Self {
        Completer::Function(Arc::new(complete))
    }

    /// The candidates that start with `typed` (ignoring case), at most [`CompletionInfo::MAX_VALUES`],
    /// with the total and whether there were more.
    pub(crate) fn complete(&self, typed: &str) -> CompletionInfo {
        let candidates = match self {
            Completer::Function(complete) => complete(typed),
            Completer::Values(values) => values.to_vec(),
        };
        let typed = typed.to_lowercase();
        let matching: Vec<String> = candidates
            .into_iter()
            .filter(|candidate| candidate.to_lowercase().starts_with(&typed))
            .collect();
        let total = matching.len();
        let values: Vec<String> = matching
            .into_iter()
            .take(CompletionInfo::MAX_VALUES)
            .collect();
        let has_more = total > values.len();
        let total = u32::try_from(total).unwrap_or(u32::MAX);
        CompletionInfo::with_pagination(values, Some(total), has_more)
            .expect("at most MAX_VALUES values")
    }
}

/// The values a string property of `schema` (an object schema) may take, when it names them: an
/// `enum`, or a `oneOf`/`anyOf` of `const`s (an enum whose variants have doc comments), directly or
/// through a `$ref` to `$defs`.
pub(crate) fn enum_values(schema: &Value, property: &Value) -> Option<Vec<String>> {
    let property = match property.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let name = reference.strip_prefix("#/$defs/")?;
            schema.get("$defs")?.get(name)?
        }
        None => property,
    };
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .map(|value| value.as_str().map(str::to_owned))
            .collect();
    }
    let choices = property
        .get("oneOf")
        .or_else(|| property.get("anyOf"))?
        .as_array()?;
    choices
        .iter()
        .map(|choice| choice.get("const")?.as_str().map(str::to_owned))
        .collect()
}
