//! Schema dialects: one canonical schema per tool, rewritten for each target that reads tool definitions.
//!
//! This module owns [`Dialect`], the per-target rewrite of a tool's canonical schema (in `rewrite`), the
//! request-ready shape of one tool's definition and of a list of them (in `definition`), the tool-name
//! rules of each target, and the run-time normalization of the arguments a model sends back
//! ([`Dialect::normalize_arguments`], in `normalize`). It is a leaf: it turns a tool's facts (name,
//! label, description, schemas, hints) into a provider's shape and imports nothing else of the crate. The
//! cached definitions live with each tool ([`AgentTool::definition`](crate::tool::AgentTool::definition)), the
//! cached lists with the store ([`ToolStore::definitions`](crate::store::ToolStore::definitions)).
//!
//! # What each dialect does
//!
//! | | `$ref` / `$defs` | `Option<T>` property | other nullable | dropped |
//! |---|---|---|---|---|
//! | [`Mcp`](Dialect::Mcp) | inlined; kept for recursive types | not required, `anyOf` with `{"type":"null"}` | `anyOf` with `{"type":"null"}` | `$schema`, root `title` |
//! | [`OpenAi`](Dialect::OpenAi) | same | same | same | also numeric `format`s (`uint32`...) |
//! | [`OpenAiStrict`](Dialect::OpenAiStrict) | same | **required**, `anyOf` with `null` | same | every keyword strict mode does not list (`minLength`, `default`...) |
//! | [`Anthropic`](Dialect::Anthropic) | same as MCP | same | same | numeric `format`s |
//! | [`Gemini`](Dialect::Gemini) | inlined; a recursive type goes as `parametersJsonSchema` | not required, `nullable: true` | `nullable: true` | every keyword outside Gemini's `Schema`; `additionalProperties` |
//!
//! A schema written by hand (`ToolBuilder::input_schema`, an MCP server's tool) goes to MCP as written, after the
//! same checks: JSON Schema 2020-12 is MCP's dialect, so `$schema`, `$defs`, `$anchor` and conditionals stay.
//!
//! So every dialect admits `null` wherever the type does (an `Option`, at any depth), and strict mode also
//! for the properties it makes required. In every dialect an enum of documented unit variants becomes a
//! plain `enum` list with each variant's doc appended to the description, and every node that can have a
//! `type` gets one. Arguments that are a union at the root (a `#[serde(flatten)]`ed enum, or an enum as the
//! arguments type) become one object with the properties of every variant: the tag an `enum` of the tags,
//! the fields not every variant requires optional and nullable, each variant's fields named in the
//! descriptions. OpenAI strict mode and Gemini also get `anyOf` for `oneOf`, a one-value `enum` for `const`,
//! and merged `allOf`s; strict mode puts `additionalProperties: false` on every object and lists every
//! property as required. Gemini takes a schema its `parameters` subset cannot express (recursion, a map, any
//! JSON value) whole, as `parametersJsonSchema`: the OpenAI rewrite with `$ref`/`$defs` kept for recursive
//! types, `const` as a one-value `enum`, and only the keywords of Gemini's JSON Schema subset. What a target
//! cannot express (a map in strict mode, more than 10 levels of nesting in strict mode, a root union with a
//! variant that is not an object) is a [`DialectError`] that names the tool and the type, never a broken
//! schema.

pub(crate) mod definition;
mod normalize;
mod rewrite;

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use serde_json::Value;

pub(crate) use definition::ToolFacts;

/// A target that reads tool definitions: an MCP client or an LLM provider's API.
///
/// ```
/// use yiem_core::store::Dialect;
///
/// assert_eq!("openai-strict".parse::<Dialect>().unwrap(), Dialect::OpenAiStrict);
/// assert_eq!(Dialect::OpenAiStrict.as_str(), "openai-strict");
/// assert_eq!(Dialect::OpenAiStrict.to_string(), "OpenAI strict mode");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// MCP `tools/list` entries (`inputSchema`, JSON Schema 2020-12).
    Mcp,
    /// OpenAI chat completions `tools` (function calling without strict mode).
    OpenAi,
    /// OpenAI function calling with `strict: true` (structured outputs).
    OpenAiStrict,
    /// Anthropic Messages API `tools` (`input_schema`).
    Anthropic,
    /// Gemini `functionDeclarations` (`parameters`, a subset of the OpenAPI 3.0 schema; else
    /// `parametersJsonSchema`).
    Gemini,
}

impl Dialect {
    /// Every dialect.
    pub const ALL: [Dialect; 5] = [
        Dialect::Mcp,
        Dialect::OpenAi,
        Dialect::OpenAiStrict,
        Dialect::Anthropic,
        Dialect::Gemini,
    ];

    /// The dialect's short name: `mcp`, `openai`, `openai-strict`, `anthropic`, `gemini`.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Mcp => "mcp",
            Dialect::OpenAi => "openai",
            Dialect::OpenAiStrict => "openai-strict",
            Dialect::Anthropic => "anthropic",
            Dialect::Gemini => "gemini",
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            Dialect::Mcp => 0,
            Dialect::OpenAi => 1,
            Dialect::OpenAiStrict => 2,
            Dialect::Anthropic => 3,
            Dialect::Gemini => 4,
        }
    }

    /// The target's rule for tool names, in words.
    ///
    /// ```
    /// use yiem_core::store::Dialect;
    ///
    /// assert!(Dialect::OpenAi.accepts_name("3d-render"));
    /// assert!(!Dialect::Gemini.accepts_name("3d-render"));
    /// assert_eq!(
    ///     Dialect::Gemini.name_rule(),
    ///     "a letter or `_`, then letters, digits, `_`, `.`, `:` or `-`; at most 64 characters"
    /// );
    /// ```
    pub fn name_rule(self) -> &'static str {
        match self {
            Dialect::Mcp => "1 to 128 ASCII letters, digits, `_`, `-` or `.`",
            Dialect::OpenAi | Dialect::OpenAiStrict | Dialect::Anthropic => {
                "1 to 64 ASCII letters, digits, `_` or `-`"
            }
            Dialect::Gemini => {
                "a letter or `_`, then letters, digits, `_`, `.`, `:` or `-`; at most 64 characters"
            }
        }
    }

    /// Whether the target accepts `name` as a tool name.
    pub fn accepts_name(self, name: &str) -> bool {
        let bytes = name.as_bytes();
        match self {
            Dialect::Mcp => {
                (1..=128).contains(&bytes.len())
                    && bytes
                        .iter()
                        .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(b))
            }
            Dialect::OpenAi | Dialect::OpenAiStrict | Dialect::Anthropic => {
                (1..=64).contains(&bytes.len())
                    && bytes
                        .iter()
                        .all(|b| b.is_ascii_alphanumeric() || b"_-".contains(b))
            }
            Dialect::Gemini => {
                (1..=64).contains(&bytes.len())
                    && (bytes[0].is_ascii_alphabetic() || bytes[0] == b'_')
                    && bytes
                        .iter()
                        .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(b))
            }
        }
    }

    /// Brings the arguments a model sent back to what the tool's canonical `schema` and serde expect: an
    /// optional property sent as `null` (OpenAI strict mode requires every property, so "none" comes back
    /// as `null`), and a `null` for a field of a variant the arguments did not choose (a union at the root,
    /// merged into one object), is removed, at every depth, so serde applies the field's default. A tool in
    /// hand does it with [`AgentTool::normalize_arguments`](crate::tool::AgentTool::normalize_arguments).
    ///
    /// ```
    /// use serde_json::json;
    /// use yiem_core::store::Dialect;
    ///
    /// let schema = json!({
    ///     "type": "object",
    ///     "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
    ///     "required": ["query"]
    /// });
    /// let sent = json!({"query": "rust", "limit": null}); // strict mode's way to say "no limit"
    /// assert_eq!(Dialect::OpenAiStrict.normalize_arguments(&schema, sent), json!({"query": "rust"}));
    /// ```
    pub fn normalize_arguments(self, schema: &Value, args: Value) -> Value {
        let mut args = args;
        normalize::drop_optional_nulls(schema, schema, &mut args, 0);
        args
    }
}

/// The target's name for people: `MCP`, `OpenAI`, `OpenAI strict mode`, `Anthropic`, `Gemini`.
impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::Mcp => "MCP",
            Dialect::OpenAi => "OpenAI",
            Dialect::OpenAiStrict => "OpenAI strict mode",
            Dialect::Anthropic => "Anthropic",
            Dialect::Gemini => "Gemini",
        })
    }
}

/// A dialect name that is not one of `mcp`, `openai`, `openai-strict`, `anthropic`, `gemini`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown dialect `{0}`: use one of `mcp`, `openai`, `openai-strict`, `anthropic`, `gemini`"
)]
pub struct UnknownDialect(pub String);

impl FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Dialect::ALL
            .into_iter()
            .find(|dialect| dialect.as_str() == text)
            .ok_or_else(|| UnknownDialect(text.to_owned()))
    }
}

/// Why a tool cannot be described in a dialect.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DialectError {
    /// The tool's name breaks the target's naming rule.
    #[error(
        "tool `{tool}` cannot be described for {dialect}: its name breaks the rule for tool names ({rule}); give it another name, e.g. #[tool(name = \"...\")]"
    )]
    InvalidName {
        /// The tool.
        tool: String,
        /// The target.
        dialect: Dialect,
        /// The target's naming rule.
        rule: &'static str,
    },
    /// A recursive argument type, for a target without `$ref`.
    #[error(
        "tool `{tool}` cannot be described for {dialect}: type `{type_name}` is recursive, and {dialect} cannot express recursion (no `$ref`); bound the depth with distinct types or use another dialect"
    )]
    Recursive {
        /// The tool.
        tool: String,
        /// The target.
        dialect: Dialect,
        /// The recursive Rust type (its schema name).
        type_name: String,
    },
    /// Part of the schema that the target cannot express.
    #[error(
        "tool `{tool}` cannot be described for {dialect}: `{path}` in type `{type_name}` {reason}"
    )]
    Unsupported {
        /// The tool.
        tool: String,
        /// The target.
        dialect: Dialect,
        /// The Rust type (its schema name) the offending part belongs to.
        type_name: String,
        /// Where in the arguments: `/counts`, `/items[]` for array items, `/*` for map values.
        path: String,
        /// What the target cannot express.
        reason: String,
    },
    /// The schema is past one of the target's size limits.
    #[error("tool `{tool}` cannot be described for {dialect}: {detail}")]
    TooLarge {
        /// The tool.
        tool: String,
        /// The target.
        dialect: Dialect,
        /// Which limit, and by how much.
        detail: String,
    },
}

/// One cached value per dialect, computed on first use (a tool's definitions, a list's serialized text).
pub(crate) struct DialectCache<T>([OnceLock<Result<T, DialectError>>; 5]);

impl<T> Default for DialectCache<T> {
    fn default() -> Self {
        DialectCache(Default::default())
    }
}

impl<T> DialectCache<T> {
    /// The value for `dialect`, made by `make` the first time.
    pub(crate) fn get_or_init(
        &self,
        dialect: Dialect,
        make: impl FnOnce() -> Result<T, DialectError>,
    ) -> Result<&T, DialectError> {
        self.0[dialect.index()]
            .get_or_init(make)
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// The schema a local `$ref` (`#/$defs/Name`, `#`) points at.
pub(crate) fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let fragment = reference.strip_prefix('#')?;
    root.pointer(fragment)
}

/// The form schema of an MCP elicitation for a type whose canonical schema is `canonical`: rewritten as
/// for [`Dialect::Mcp`] (references inlined), and checked to be an object of plain fields, the only
/// forms MCP clients show. The error says why not (the asker makes it an
/// `ElicitError::InvalidQuestion`).
pub(crate) fn elicitation_schema(canonical: &Value) -> Result<Value, String> {
    let mut schema = rewrite::rewrite("elicitation", Dialect::Mcp, canonical)
        .map_err(|error| error.to_string())?;
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| "the answer's type must be a struct with named fields".to_owned())?;
    for (name, property) in properties {
        let nested = |kind: &str| {
            property.get("type") == Some(&Value::from(kind)) || property.get("properties").is_some()
        };
        if nested("object") {
            return Err(format!(
                "the field `{name}` is an object; a form holds only strings, numbers, integers, \
                 booleans and enums of strings"
            ));
        }
    }
    Ok(schema)
}
