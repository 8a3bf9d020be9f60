//! Tools whose input is free text: [`TextFormat`] (any text, or text in a [`Grammar`]'s language), its
//! one argument shape, how it is described to providers without free-text tools, and yiem's own check
//! of a regex grammar.

use std::borrow::Cow;
use std::fmt;

use serde_json::{Value, json};

/// The property of a free-text tool's arguments that holds the text.
pub(crate) const INPUT: &str = "input";

/// How much of a grammar's definition the description of a function tool carries (in characters); a
/// longer one is cut, and the description says how long it is.
pub const MAX_GRAMMAR_IN_DESCRIPTION: usize = 4000;

/// The input schema of every free-text tool: `{"input": "<text>"}`, one required string property.
pub(crate) fn free_text_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"input": {"type": "string", "description": "The tool's input, as free text."}},
        "required": ["input"],
        "additionalProperties": false
    })
}

/// The syntax a [`Grammar`] is written in, as OpenAI's custom tools name it.
///
/// ```
/// use yiem_core::tool::GrammarSyntax;
///
/// assert_eq!(GrammarSyntax::Lark.to_string(), "lark");
/// assert_eq!(GrammarSyntax::Regex.to_string(), "regex");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GrammarSyntax {
    /// A [Lark](https://lark-parser.readthedocs.io/) context-free grammar (OpenAI's subset: no terminal
    /// priorities, templates, `%declare`, or imports other than `common`).
    Lark,
    /// A regular expression in the syntax of Rust's `regex` crate (no lookaround, no backreferences);
    /// the whole text must match it.
    Regex,
}

impl fmt::Display for GrammarSyntax {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GrammarSyntax::Lark => "lark",
            GrammarSyntax::Regex => "regex",
        })
    }
}

/// The language a free-text tool's input is written in: a [`GrammarSyntax`] and the grammar's definition.
///
/// ```
/// use yiem_core::tool::{Grammar, GrammarSyntax};
///
/// let date = Grammar::regex(r"\d{4}-\d{2}-\d{2}");
/// assert_eq!(date.syntax(), GrammarSyntax::Regex);
/// assert_eq!(date.definition(), r"\d{4}-\d{2}-\d{2}");
/// // With `schema-validation`, yiem checks a regex grammar itself; a lark one only a provider checks.
/// if cfg!(feature = "schema-validation") {
///     assert_eq!(date.matches("2026-12-24"), Some(true));
///     assert_eq!(date.matches("24 December"), Some(false));
/// }
/// assert_eq!(Grammar::lark("start: \"yes\"").matches("no"), None);
/// ```
#[derive(Clone)]
pub struct Grammar {
    syntax: GrammarSyntax,
    definition: Cow<'static, str>,
    /// A regex grammar, compiled on first use (anchored at both ends), or why it does not compile.
    #[cfg(feature = "schema-validation")]
    compiled: std::sync::Arc<std::sync::OnceLock<Result<regex::Regex, String>>>,
}

impl Grammar {
    /// A grammar in `syntax`.
    pub fn new(syntax: GrammarSyntax, definition: impl Into<Cow<'static, str>>) -> Self {
        Grammar {
            syntax,
            definition: definition.into(),
            #[cfg(feature = "schema-validation")]
            compiled: Default::default(),
        }
    }

    /// A Lark grammar.
    pub fn lark(definition: impl Into<Cow<'static, str>>) -> Self {
        Grammar::new(GrammarSyntax::Lark, definition)
    }

    /// A regex grammar: the whole text must match it.
    pub fn regex(definition: impl Into<Cow<'static, str>>) -> Self {
        Grammar::new(GrammarSyntax::Regex, definition)
    }

    /// The syntax.
    pub fn syntax(&self) -> GrammarSyntax {
        self.syntax
    }

    /// The definition, as written.
    pub fn definition(&self) -> &str {
        &self.definition
    }

    /// Whether `text` is in the grammar's language, as far as yiem can tell: `Some` for a regex grammar
    /// with the `schema-validation` feature (the whole text must match), `None` for a lark grammar, a
    /// regex grammar without the feature, or one that does not compile.
    pub fn matches(&self, text: &str) -> Option<bool> {
        #[cfg(feature = "schema-validation")]
        if let Some(Ok(regex)) = self.compiled() {
            return Some(regex.is_match(text));
        }
        let _ = text;
        None
    }

    /// Why yiem cannot use the grammar (a regex that does not compile), if it cannot.
    pub(crate) fn compile_error(&self) -> Option<String> {
        #[cfg(feature = "schema-validation")]
        if let Some(Err(error)) = self.compiled() {
            return Some(error.clone());
        }
        None
    }

    #[cfg(feature = "schema-validation")]
    fn compiled(&self) -> Option<&Result<regex::Regex, String>> {
        (self.syntax == GrammarSyntax::Regex).then(|| {
            self.compiled.get_or_init(|| {
                // The definition alone first: wrapped, `a)|(b` would compile, as another grammar.
                regex::Regex::new(&self.definition).map_err(|error| error.to_string())?;
                // Anchored at both ends: the grammar describes the whole text.
                regex::Regex::new(&format!(r"\A(?:{})\z", self.definition))
                    .map_err(|error| error.to_string())
            })
        })
    }

    /// The grammar as the Responses API's custom tool `format` takes it.
    #[cfg_attr(not(feature = "openai-responses"), allow(dead_code))]
    pub(crate) fn format(&self) -> Value {
        json!({"type": "grammar", "syntax": self.syntax.to_string(), "definition": self.definition})
    }
}

impl PartialEq for Grammar {
    fn eq(&self, other: &Self) -> bool {
        self.syntax == other.syntax && self.definition == other.definition
    }
}

impl Eq for Grammar {}

impl fmt::Debug for Grammar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grammar")
            .field("syntax", &self.syntax)
            .field("definition", &self.definition)
            .finish()
    }
}

/// What a free-text tool's input may be: any text, or text in a grammar's language. Set with
/// `#[tool(free_text)]` or `#[tool(grammar(lark = "..."))]` on a function that takes one `String`, or
/// [`ToolBuilder::free_text`](crate::tool::ToolBuilder::free_text) and
/// [`ToolBuilder::grammar`](crate::tool::ToolBuilder::grammar); it is the tool's
/// [`ProviderOptions::free_text`](crate::tool::ProviderOptions::free_text).
///
/// # One rule for the text
///
/// A free-text tool's arguments are `{"input": "<text>"}`: its input schema is one required string
/// property `input` and nothing else. Every call of such a tool takes that shape whichever provider made
/// it, so the argument check, the hooks, approvals, events and saved runs see an ordinary call. A
/// `#[tool(grammar(...))]` function gets the text as its `String` parameter; a builder's handler gets the
/// arguments object.
///
/// # Per provider
///
/// - **OpenAI's Responses API** sends the tool as a custom tool (`{"type": "custom", "name",
///   "description", "format"}`, the format `{"type": "text"}` or `{"type": "grammar", "syntax",
///   "definition"}`); the model's call comes back as a `custom_tool_call` whose `input` is the text, and
///   the API constrains the text to the grammar.
/// - **Every other provider** (Chat Completions, Anthropic, Gemini, MCP, the scripted model) gets an
///   ordinary function tool with the one string parameter `input`, and a description that states the
///   grammar (its syntax and definition, cut after [`MAX_GRAMMAR_IN_DESCRIPTION`] characters). These
///   providers do not enforce it; a `tracing` debug note says so, once per tool and dialect.
///
/// # Checked by yiem
///
/// When a call comes, from any provider, yiem checks its text against a **regex** grammar itself, with
/// the `schema-validation` feature (which brings the `regex` engine; its syntax is the one OpenAI's regex
/// grammars use): text the whole pattern does not match is an argument error the model reads, like any
/// other. Without that feature, and for a **lark** grammar always, the grammar is checked only by a
/// provider that enforces it (OpenAI's Responses API), and yiem passes the text on as it came.
///
/// ```
/// # #[cfg(feature = "schema-validation")]
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use serde_json::json;
/// use yiem_core::tool::{AgentTool, GrammarSyntax, ToolContext};
///
/// let save = AgentTool::builder("save_date")
///     .description("Save a date.")
///     .grammar(GrammarSyntax::Regex, r"\d{4}-\d{2}-\d{2}")
///     .handler(|_ctx: ToolContext, args: serde_json::Value| async move {
///         format!("saved {}", args["input"].as_str().unwrap_or_default())
///     })
///     .build()
///     .unwrap();
///
/// let saved = save.execute("c1", json!({"input": "2026-12-24"})).await;
/// assert_eq!(saved.text_content(), "saved 2026-12-24");
/// let refused = save.execute("c2", json!({"input": "Christmas Eve"})).await;
/// assert!(refused.is_error);
/// assert!(refused.text_content().contains("does not match the tool's regex grammar"));
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TextFormat {
    /// Any text.
    Text,
    /// Text in the grammar's language.
    Grammar(Grammar),
}

impl TextFormat {
    /// The grammar, if there is one.
    pub fn grammar(&self) -> Option<&Grammar> {
        match self {
            TextFormat::Text => None,
            TextFormat::Grammar(grammar) => Some(grammar),
        }
    }

    /// The format as the Responses API's custom tool takes it: `{"type": "text"}` or `{"type": "grammar",
    /// "syntax", "definition"}`.
    #[cfg_attr(not(feature = "openai-responses"), allow(dead_code))]
    pub(crate) fn openai_format(&self) -> Value {
        match self {
            TextFormat::Text => json!({"type": "text"}),
            TextFormat::Grammar(grammar) => grammar.format(),
        }
    }

    /// The description a function tool carries for a provider without free-text tools: `description`,
    /// then the language of the `input` parameter (the grammar, cut at [`MAX_GRAMMAR_IN_DESCRIPTION`]);
    /// any text needs no word beyond the parameter's own.
    pub(crate) fn describe<'a>(&self, description: &'a str) -> Cow<'a, str> {
        let Some(grammar) = self.grammar() else {
            return Cow::Borrowed(description);
        };
        let definition = grammar.definition();
        let (shown, cut) = match definition.char_indices().nth(MAX_GRAMMAR_IN_DESCRIPTION) {
            Some((end, _)) => (&definition[..end], true),
            None => (definition, false),
        };
        let whole = match grammar.syntax() {
            GrammarSyntax::Regex => " (the whole text must match it)",
            GrammarSyntax::Lark => "",
        };
        let mut text = format!(
            "{description}\n\nThe `input` parameter is text in the language of this {} grammar{whole}:\n{shown}",
            grammar.syntax()
        );
        if cut {
            text.push_str(&format!(
                "\n[the grammar is cut here: it is {} characters long]",
                definition.chars().count()
            ));
        }
        Cow::Owned(text)
    }

    /// The problem with a call's arguments, if their text is not in the grammar's language (only what
    /// yiem can check: see [`Grammar::matches`]); arguments without a string `input` are the schema
    /// check's to refuse.
    pub(crate) fn mismatch(&self, args: &Value) -> Option<String> {
        let grammar = self.grammar()?;
        if let Some(error) = grammar.compile_error() {
            return Some(format!(
                "the tool's regex grammar does not compile ({error}), so no input can be checked: the \
                 tool cannot be called until its author fixes the grammar"
            ));
        }
        let text = args.get(INPUT)?.as_str()?;
        match grammar.matches(text) {
            Some(false) => Some(format!(
                "the text does not match the tool's {} grammar; send text the whole grammar matches: {}",
                grammar.syntax(),
                grammar.definition()
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "schema-validation")]
    fn a_regex_grammar_matches_the_whole_text_or_nothing() {
        let either = Grammar::regex("yes|no");
        assert_eq!(either.matches("yes"), Some(true));
        assert_eq!(either.matches("no"), Some(true));
        // Anchored around the whole alternation: neither branch may match a part.
        assert_eq!(either.matches("yes, and no"), Some(false));
        assert_eq!(either.matches("not now"), Some(false));
        // A definition that anchors itself means the same.
        let year = Grammar::regex("^[0-9]{4}$");
        assert_eq!(year.matches("2026"), Some(true));
        assert_eq!(year.matches("2026\n"), Some(false));
        // A grammar that does not compile judges nothing, and says why.
        let broken = Grammar::regex("(");
        assert_eq!(broken.matches("("), None);
        assert!(broken.compile_error().unwrap().contains("unclosed group"));
        // One that would compile only inside yiem's anchors is refused as written.
        assert!(Grammar::regex("a)|(b").compile_error().is_some());
    }

    #[test]
    fn yiem_judges_no_lark_grammar_and_passes_its_text_on() {
        let format = TextFormat::Grammar(Grammar::lark("start: \"a\""));
        assert_eq!(format.grammar().unwrap().matches("b"), None);
        assert_eq!(format.mismatch(&json!({"input": "b"})), None);
        assert_eq!(TextFormat::Text.mismatch(&json!({"input": "b"})), None);
    }

    #[test]
    fn the_openai_format_is_the_documented_shape() {
        assert_eq!(TextFormat::Text.openai_format(), json!({"type": "text"}));
        assert_eq!(
            TextFormat::Grammar(Grammar::regex("[0-9]+")).openai_format(),
            json!({"type": "grammar", "syntax": "regex", "definition": "[0-9]+"})
        );
    }
}
