//! Schema dialects: one canonical schema per tool, rewritten for each target that reads tool definitions.
//!
//! This module owns [`Dialect`], the per-target rewrite of a tool's canonical schema (in `rewrite`), the
//! request-ready definition of a tool ([`AgentTool::definition`]) and of a whole store
//! ([`ToolStore::definitions`]), the tool-name rules of each target, and the run-time normalization of the
//! arguments a model sends back ([`Dialect::normalize_arguments`], in `normalize`).
//!
//! # What each dialect does
//!
//! | | `$ref` / `$defs` | `Option<T>` property | other nullable | dropped |
//! |---|---|---|---|---|
//! | [`Mcp`](Dialect::Mcp) | inlined; kept for recursive types | not required, `anyOf` with `{"type":"null"}` | `anyOf` with `{"type":"null"}` | `$schema`, root `title` |
//! | [`OpenAi`](Dialect::OpenAi) | same | same | same | also numeric `format`s (`uint32`...) |
//! | [`OpenAiStrict`](Dialect::OpenAiStrict) | same | **required**, `anyOf` with `null` | same | every keyword strict mode does not list (`minLength`, `default`...) |
//! | [`Anthropic`](Dialect::Anthropic) | same as MCP | same | same | numeric `format`s |
//! | [`Gemini`](Dialect::Gemini) | inlined; a recursive type is an error | not required, `nullable: true` | `nullable: true` | every keyword outside Gemini's `Schema`; `additionalProperties` |
//!
//! So every dialect admits `null` wherever the type does (an `Option`, at any depth), and strict mode also
//! for the properties it makes required. In every dialect an enum of documented unit variants becomes a
//! plain `enum` list with each variant's doc appended to the description, and every node that can have a
//! `type` gets one. Arguments that are a union at the root (a `#[serde(flatten)]`ed enum, or an enum as the
//! arguments type) become one object with the properties of every variant: the tag an `enum` of the tags,
//! the fields not every variant requires optional and nullable, each variant's fields named in the
//! descriptions. OpenAI strict mode and Gemini also get `anyOf` for `oneOf`, a one-value `enum` for `const`,
//! and merged `allOf`s; strict mode puts `additionalProperties: false` on every object and lists every
//! property as required. What a target cannot express (a map in strict mode or Gemini, recursion in Gemini,
//! more than 10 levels of nesting in strict mode, a root union with a variant that is not an object) is a
//! [`DialectError`] that names the tool and the type, never a broken schema.

mod normalize;
mod rewrite;

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::registry::ToolStore;
use crate::tool::AgentTool;

/// A target that reads tool definitions: an MCP client or an LLM provider's API.
///
/// ```
/// use yiem_core::Dialect;
///
/// assert_eq!("openai-strict".parse::<Dialect>().unwrap(), Dialect::OpenAiStrict);
/// assert_eq!(Dialect::OpenAiStrict.as_str(), "openai-strict");
/// assert_eq!(Dialect::OpenAiStrict.to_string(), "OpenAI strict mode");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// MCP `tools/list` entries (`inputSchema`, JSON Schema 2020-12).
    Mcp,
    /// OpenAI chat completions `tools` (function calling without strict mode).
    OpenAi,
    /// OpenAI function calling with `strict: true` (structured outputs).
    OpenAiStrict,
    /// Anthropic Messages API `tools` (`input_schema`).
    Anthropic,
    /// Gemini `functionDeclarations` (`parameters`, a subset of the OpenAPI 3.0 schema).
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

    fn index(self) -> usize {
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
    /// use yiem_core::Dialect;
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

    /// Brings the arguments a model sent for `tool` back to what the tool's canonical schema and serde
    /// expect: an optional property sent as `null` (OpenAI strict mode requires every property, so "none"
    /// comes back as `null`), and a `null` for a field of a variant the arguments did not choose (a union at
    /// the root, merged into one object), is removed, at every depth, so serde applies the field's default.
    /// Call it after [`AgentTool::prepare_arguments`] and before binding the call.
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use serde_json::json;
    /// use yiem_core::{Dialect, tool};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct SearchArgs {
    ///     query: String,
    ///     #[serde(default = "ten")]
    ///     limit: u32,
    /// }
    /// fn ten() -> u32 { 10 }
    ///
    /// /// Search the notes.
    /// #[tool]
    /// async fn search(args: SearchArgs) -> String {
    ///     format!("{} x{}", args.query, args.limit)
    /// }
    ///
    /// let tool = search_tool();
    /// let sent = json!({"query": "rust", "limit": null}); // strict mode's way to say "no limit"
    /// let args = Dialect::OpenAiStrict.normalize_arguments(&tool, sent);
    /// assert_eq!(args, json!({"query": "rust"}));
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// assert_eq!(tool.execute("c1", args).await.text_content(), "rust x10");
    /// # });
    /// ```
    pub fn normalize_arguments(self, tool: &AgentTool, args: Value) -> Value {
        let mut args = args;
        let schema = tool.input_schema();
        normalize::drop_optional_nulls(schema, schema, &mut args, 0);
        args
    }

    /// Wraps tool definitions of this dialect into the list a request carries: a JSON array of them, or
    /// for Gemini one tool holding them all as `functionDeclarations`.
    fn tool_list(self, definitions: Vec<Value>) -> Value {
        match self {
            // Built by hand: `json!` would serialize the definitions into a second copy.
            Dialect::Gemini => {
                let mut tool = Map::new();
                tool.insert("functionDeclarations".into(), Value::Array(definitions));
                Value::Array(vec![Value::Object(tool)])
            }
            _ => Value::Array(definitions),
        }
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

/// A tool's definitions, computed once per dialect.
#[derive(Default)]
pub(crate) struct DialectCache([OnceLock<Result<Value, DialectError>>; 5]);

impl AgentTool {
    /// The tool's definition in `dialect`, ready to put in a request (computed on first use, then cached):
    ///
    /// - [`Mcp`](Dialect::Mcp): a `tools/list` entry `{name, title, description, inputSchema,
    ///   outputSchema?, annotations?}` (annotations as `readOnlyHint`...; only the hints that are set);
    /// - [`OpenAi`](Dialect::OpenAi): `{"type": "function", "function": {name, description, parameters}}`,
    ///   and [`OpenAiStrict`](Dialect::OpenAiStrict) with `"strict": true` inside `function`;
    /// - [`Anthropic`](Dialect::Anthropic): `{name, description, input_schema}`;
    /// - [`Gemini`](Dialect::Gemini): a function declaration `{name, description, parameters}`, without
    ///   `parameters` for a tool that takes none (Gemini refuses an object without properties).
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use serde_json::json;
    /// use yiem_core::{Dialect, tool};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct WeatherArgs {
    ///     /// City name.
    ///     city: String,
    ///     /// Days ahead, 0 for today.
    ///     days: Option<u8>,
    /// }
    ///
    /// /// Fetch the weather.
    /// #[tool]
    /// async fn weather(args: WeatherArgs) -> String {
    ///     args.city
    /// }
    ///
    /// let tool = weather_tool();
    /// assert_eq!(
    ///     tool.definition(Dialect::OpenAiStrict).unwrap(),
    ///     &json!({
    ///         "type": "function",
    ///         "function": {
    ///             "name": "weather",
    ///             "description": "Fetch the weather.",
    ///             "parameters": {
    ///                 "type": "object",
    ///                 "properties": {
    ///                     "city": {"description": "City name.", "type": "string"},
    ///                     "days": {
    ///                         "description": "Days ahead, 0 for today.",
    ///                         "anyOf": [{"type": "integer", "minimum": 0, "maximum": 255}, {"type": "null"}]
    ///                     }
    ///                 },
    ///                 "required": ["city", "days"],
    ///                 "additionalProperties": false
    ///             },
    ///             "strict": true
    ///         }
    ///     })
    /// );
    /// assert_eq!(
    ///     tool.definition(Dialect::Gemini).unwrap()["parameters"]["properties"]["days"],
    ///     json!({
    ///         "description": "Days ahead, 0 for today.",
    ///         "type": "integer", "minimum": 0, "maximum": 255, "nullable": true
    ///     })
    /// );
    /// ```
    pub fn definition(&self, dialect: Dialect) -> Result<&Value, DialectError> {
        self.inner.dialects.0[dialect.index()]
            .get_or_init(|| self.make_definition(dialect))
            .as_ref()
            .map_err(Clone::clone)
    }

    fn make_definition(&self, dialect: Dialect) -> Result<Value, DialectError> {
        let name = self.name();
        if !dialect.accepts_name(name) {
            return Err(DialectError::InvalidName {
                tool: name.to_owned(),
                dialect,
                rule: dialect.name_rule(),
            });
        }
        let schema = rewrite::rewrite(name, dialect, self.input_schema())?;
        let description = self.description();
        Ok(match dialect {
            Dialect::Mcp => {
                let mut entry = Map::new();
                entry.insert("name".into(), json!(name));
                entry.insert("title".into(), json!(self.label()));
                entry.insert("description".into(), json!(description));
                entry.insert("inputSchema".into(), schema);
                if let Some(output) = self.output_schema() {
                    let output = rewrite::rewrite(name, dialect, output)?;
                    entry.insert("outputSchema".into(), output);
                }
                let hints = self.annotations();
                let mut annotations = Map::new();
                for (key, hint) in [
                    ("readOnlyHint", hints.read_only),
                    ("destructiveHint", hints.destructive),
                    ("idempotentHint", hints.idempotent),
                    ("openWorldHint", hints.open_world),
                ] {
                    if let Some(hint) = hint {
                        annotations.insert(key.into(), json!(hint));
                    }
                }
                if !annotations.is_empty() {
                    entry.insert("annotations".into(), Value::Object(annotations));
                }
                Value::Object(entry)
            }
            Dialect::OpenAi => json!({
                "type": "function",
                "function": {"name": name, "description": description, "parameters": schema}
            }),
            Dialect::OpenAiStrict => json!({
                "type": "function",
                "function": {"name": name, "description": description, "parameters": schema, "strict": true}
            }),
            Dialect::Anthropic => {
                json!({"name": name, "description": description, "input_schema": schema})
            }
            Dialect::Gemini => {
                let takes_arguments = schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|properties| !properties.is_empty());
                if takes_arguments {
                    json!({"name": name, "description": description, "parameters": schema})
                } else {
                    json!({"name": name, "description": description})
                }
            }
        })
    }
}

impl ToolStore {
    /// The store's tools as a request carries them, in registration order: the `tools` array of an OpenAI
    /// chat request or an Anthropic request, the `tools` of an MCP `tools/list` result, or for Gemini
    /// `[{"functionDeclarations": [...]}]`. The first tool that cannot be described is the error.
    ///
    /// ```
    /// use serde_json::json;
    /// use yiem_core::{AgentTool, Dialect, ToolStore};
    ///
    /// let ping = AgentTool::builder("ping")
    ///     .description("Answer pong.")
    ///     .handler(|_, _| async { "pong" })
    ///     .build()
    ///     .unwrap();
    /// let mut store = ToolStore::new("agent");
    /// store.register(ping).unwrap();
    ///
    /// assert_eq!(
    ///     store.definitions(Dialect::Gemini).unwrap(),
    ///     json!([{"functionDeclarations": [{"name": "ping", "description": "Answer pong."}]}])
    /// );
    /// assert_eq!(
    ///     store.definitions(Dialect::Anthropic).unwrap(),
    ///     json!([{
    ///         "name": "ping",
    ///         "description": "Answer pong.",
    ///         "input_schema": {"type": "object", "properties": {}}
    ///     }])
    /// );
    /// ```
    pub fn definitions(&self, dialect: Dialect) -> Result<Value, DialectError> {
        let definitions = self
            .tools()
            .iter()
            .map(|tool| tool.definition(dialect).cloned())
            .collect::<Result<Vec<Value>, DialectError>>()?;
        Ok(dialect.tool_list(definitions))
    }
}
