//! The keys of `#[tool(...)]`, parsed with `syn::meta::parser`. Each key is one line of [`KEYS`]: its
//! name, its field of [`Attrs`], and the reader that parses its value once. Adding a key means adding a
//! field and a line here, and reading the field in `valid`.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitStr, Token};

use crate::ctxt::Ctxt;

/// A value together with the span of the key it was written with.
pub(crate) struct Keyed<T> {
    pub key: Span,
    pub value: T,
}

/// What the attribute said, each value parsed once; `None` for a key that was not written (or whose value
/// was refused, with the error recorded).
#[derive(Default)]
pub(crate) struct Attrs {
    pub name: Option<Keyed<LitStr>>,
    pub label: Option<Keyed<LitStr>>,
    pub description: Option<Keyed<LitStr>>,
    pub parallel: Option<Keyed<()>>,
    pub sequential: Option<Keyed<()>>,
    pub needs_approval: Option<Keyed<()>>,
    pub code_only: Option<Keyed<()>>,
    /// How an MCP server may run calls as tasks: `task` alone is `"optional"`.
    pub task: Option<Keyed<String>>,
    /// The time limit, already a positive number of milliseconds.
    pub timeout_ms: Option<Keyed<u64>>,
    pub prepare: Option<Keyed<syn::Path>>,
    pub validate: Option<Keyed<syn::Path>>,
    pub read_only: Option<Keyed<bool>>,
    pub destructive: Option<Keyed<bool>>,
    pub idempotent: Option<Keyed<bool>>,
    pub open_world: Option<Keyed<bool>>,
    pub krate: Option<Keyed<syn::Path>>,
    /// Examples of good arguments, as JSON text, in the order written (the key may repeat).
    pub examples: Vec<LitStr>,
    pub strict: Option<Keyed<()>>,
    pub eager_input_streaming: Option<Keyed<()>>,
    pub defer_loading: Option<Keyed<()>>,
    pub free_text: Option<Keyed<()>>,
    /// The grammar's syntax (`lark` or `regex`) and its definition.
    pub grammar: Option<Keyed<(syn::Ident, LitStr)>>,
}

/// How one key's value is read: from the key onwards, recording problems in `cx`.
type ParseKey = fn(&mut Attrs, &mut Ctxt, Span, &ParseNestedMeta<'_>) -> syn::Result<()>;

/// One entry of [`KEYS`]: the key, the field of [`Attrs`] it fills, and how its value is read.
macro_rules! key {
    ($name:literal, $field:ident, $read:ident) => {
        ($name, |attrs, cx, key, meta| {
            let value = $read(cx, meta, $name)?;
            set(cx, &mut attrs.$field, key, $name, value)
        })
    };
}

/// Every key `#[tool]` accepts, in the order errors list them.
pub(crate) const KEYS: &[(&str, ParseKey)] = &[
    key!("name", name, string),
    key!("label", label, string),
    key!("description", description, string),
    key!("parallel", parallel, flag),
    key!("sequential", sequential, flag),
    key!("needs_approval", needs_approval, flag),
    key!("code_only", code_only, flag),
    key!("task", task, task_support),
    key!("timeout_ms", timeout_ms, millis),
    key!("prepare", prepare, path),
    key!("validate", validate, path),
    key!("read_only", read_only, hint),
    key!("destructive", destructive, hint),
    key!("idempotent", idempotent, hint),
    key!("open_world", open_world, hint),
    key!("crate", krate, crate_path),
    ("example", |attrs, cx, _key, meta| {
        if let Some(example) = json_text(cx, meta)? {
            attrs.examples.push(example);
        }
        Ok(())
    }),
    key!("strict", strict, flag),
    key!("eager_input_streaming", eager_input_streaming, flag),
    key!("defer_loading", defer_loading, flag),
    key!("free_text", free_text, flag),
    key!("grammar", grammar, grammar),
];

/// The syntaxes a grammar may be written in (OpenAI's custom tools take these two).
pub(crate) const GRAMMAR_SYNTAXES: [&str; 2] = ["lark", "regex"];

/// Parses the attribute's arguments, recording every problem in `cx` (all of them, not only the first).
pub(crate) fn parse(cx: &mut Ctxt, args: TokenStream) -> Attrs {
    let mut attrs = Attrs::default();
    let parser = syn::meta::parser(|meta| {
        let text = path_text(&meta.path);
        let key = meta.path.span();
        match KEYS.iter().find(|(name, _)| *name == text) {
            Some((_, parse_key)) => parse_key(&mut attrs, cx, key, &meta),
            None => {
                cx.error_spanned_by(
                    &meta.path,
                    format!(
                        "unknown #[tool] key `{text}`; valid keys are: {}",
                        KEYS.iter()
                            .map(|(k, _)| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
                skip_value(&meta)
            }
        }
    });
    if let Err(error) = parser.parse2(args) {
        cx.push(error);
    }
    attrs
}

fn path_text(path: &syn::Path) -> String {
    quote::quote!(#path).to_string().replace(' ', "")
}

/// Consumes whatever follows a key (`= value` or `(...)`), so parsing goes on with the next key.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _ = meta.input.parse::<proc_macro2::Group>()?;
    }
    Ok(())
}

/// The value after `=`, as an expression; `None` (recorded) when the key has no `= value`.
fn value(cx: &mut Ctxt, meta: &ParseNestedMeta<'_>, message: String) -> syn::Result<Option<Expr>> {
    if meta.input.peek(Token![=]) {
        return Ok(Some(meta.value()?.parse::<Expr>()?));
    }
    cx.error_spanned_by(&meta.path, message);
    skip_value(meta)?;
    Ok(None)
}

fn set<T>(
    cx: &mut Ctxt,
    slot: &mut Option<Keyed<T>>,
    key: Span,
    name: &str,
    value: Option<T>,
) -> syn::Result<()> {
    let Some(value) = value else { return Ok(()) };
    if slot.is_some() {
        cx.push(syn::Error::new(
            key,
            format!("duplicate #[tool] key `{name}`; write each key once"),
        ));
    } else {
        *slot = Some(Keyed { key, value });
    }
    Ok(())
}

fn string(cx: &mut Ctxt, meta: &ParseNestedMeta<'_>, name: &str) -> syn::Result<Option<LitStr>> {
    let Some(expr) = value(
        cx,
        meta,
        format!("`{name}` takes a value: write `{name} = \"...\"`"),
    )?
    else {
        return Ok(None);
    };
    Ok(match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Some(lit),
        other => {
            cx.error_spanned_by(
                other,
                format!("`{name}` takes a string literal, e.g. `{name} = \"...\"`"),
            );
            None
        }
    })
}

/// JSON text in a string literal (an example of arguments); anything else up to the next key is refused
/// as a whole.
fn json_text(cx: &mut Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<Option<LitStr>> {
    let message = "`example` takes the arguments as JSON text in a string literal, e.g. `example = r#\"{\"city\": \"Oslo\"}\"#`";
    if !meta.input.peek(Token![=]) {
        cx.error_spanned_by(&meta.path, message);
        skip_value(meta)?;
        return Ok(None);
    }
    let input = meta.value()?;
    if input.peek(LitStr) {
        return Ok(Some(input.parse()?));
    }
    let mut tokens = TokenStream::new();
    while !input.is_empty() && !input.peek(Token![,]) {
        tokens.extend([input.parse::<proc_macro2::TokenTree>()?]);
    }
    cx.error_spanned_by(tokens, message);
    Ok(None)
}

/// The path of the runtime crate, written as a string.
fn crate_path(
    cx: &mut Ctxt,
    meta: &ParseNestedMeta<'_>,
    name: &str,
) -> syn::Result<Option<syn::Path>> {
    Ok(
        string(cx, meta, name)?.and_then(|lit| match lit.parse::<syn::Path>() {
            Ok(path) => Some(path),
            Err(_) => {
                cx.error_spanned_by(
                    &lit,
                    "`crate` takes the path of the runtime crate, e.g. `crate = \"my_app::yiem\"`",
                );
                None
            }
        }),
    )
}

/// A positive number of milliseconds, without a suffix.
fn millis(cx: &mut Ctxt, meta: &ParseNestedMeta<'_>, _name: &str) -> syn::Result<Option<u64>> {
    let message =
        "`timeout_ms` takes a positive whole number of milliseconds, e.g. `timeout_ms = 5000`";
    let Some(expr) = value(cx, meta, message.to_owned())? else {
        return Ok(None);
    };
    let Expr::Lit(ExprLit {
        lit: Lit::Int(lit), ..
    }) = &expr
    else {
        cx.error_spanned_by(expr, message);
        return Ok(None);
    };
    match lit.base10_parse::<u64>() {
        Ok(ms) if ms > 0 && lit.suffix().is_empty() => Ok(Some(ms)),
        _ => {
            cx.error_spanned_by(
                lit,
                "`timeout_ms` takes a positive whole number of milliseconds without a suffix, e.g. `timeout_ms = 5000`",
            );
            Ok(None)
        }
    }
}

fn path(cx: &mut Ctxt, meta: &ParseNestedMeta<'_>, name: &str) -> syn::Result<Option<syn::Path>> {
    let message = format!("`{name}` takes the path of a function, e.g. `{name} = check_args`");
    let Some(expr) = value(cx, meta, message.clone())? else {
        return Ok(None);
    };
    Ok(match expr {
        Expr::Path(path) if path.qself.is_none() => Some(path.path),
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => match lit.parse::<syn::Path>() {
            Ok(path) => Some(path),
            Err(_) => {
                cx.error_spanned_by(lit, message);
                None
            }
        },
        other => {
            cx.error_spanned_by(other, message);
            None
        }
    })
}

fn flag(cx: &mut Ctxt, meta: &ParseNestedMeta<'_>, name: &str) -> syn::Result<Option<()>> {
    if meta.input.is_empty() || meta.input.peek(Token![,]) {
        return Ok(Some(()));
    }
    cx.error_spanned_by(
        &meta.path,
        format!("`{name}` is a flag and takes no value: write `{name}`"),
    );
    skip_value(meta)?;
    Ok(None)
}

/// The values `task = "..."` takes, as `TaskSupport`'s variants.
pub(crate) const TASK_SUPPORTS: [(&str, &str); 3] = [
    ("optional", "Optional"),
    ("required", "Required"),
    ("required_after_questions", "RequiredAfterQuestions"),
];

/// `task` (optional) or `task = "optional" | "required" | "required_after_questions"`.
fn task_support(
    cx: &mut Ctxt,
    meta: &ParseNestedMeta<'_>,
    name: &str,
) -> syn::Result<Option<String>> {
    if meta.input.is_empty() || meta.input.peek(Token![,]) {
        return Ok(Some("optional".to_owned()));
    }
    let Some(value) = string(cx, meta, name)? else {
        return Ok(None);
    };
    if TASK_SUPPORTS.iter().any(|(said, _)| *said == value.value()) {
        return Ok(Some(value.value()));
    }
    cx.error_spanned_by(
        &value,
        format!(
            "unknown task support `{}`; write `task` (optional), or `task = ` one of: {}",
            value.value(),
            TASK_SUPPORTS
                .iter()
                .map(|(said, _)| format!("\"{said}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    Ok(None)
}

/// `grammar(lark = "...")` or `grammar(regex = "...")`: one syntax and its definition, a non-empty string.
fn grammar(
    cx: &mut Ctxt,
    meta: &ParseNestedMeta<'_>,
    _name: &str,
) -> syn::Result<Option<(syn::Ident, LitStr)>> {
    let shape = "write `grammar(lark = \"...\")` or `grammar(regex = \"...\")`";
    if !meta.input.peek(syn::token::Paren) {
        cx.error_spanned_by(
            &meta.path,
            format!("`grammar` takes its syntax and its definition: {shape}"),
        );
        skip_value(meta)?;
        return Ok(None);
    }
    let mut found: Option<(syn::Ident, LitStr)> = None;
    let mut refused = false;
    meta.parse_nested_meta(|inner| {
        let syntax = path_text(&inner.path);
        if !GRAMMAR_SYNTAXES.contains(&syntax.as_str()) {
            cx.error_spanned_by(
                &inner.path,
                format!("unknown grammar syntax `{syntax}`; {shape}"),
            );
            refused = true;
            return skip_value(&inner);
        }
        let Some(definition) = string(cx, &inner, &syntax)? else {
            refused = true;
            return Ok(());
        };
        if definition.value().trim().is_empty() {
            cx.error_spanned_by(
                &definition,
                "the grammar is empty: write its definition, e.g. `grammar(regex = \"[0-9]{4}\")`",
            );
            refused = true;
        } else if found.is_some() {
            cx.error_spanned_by(
                &inner.path,
                "a grammar has one syntax: keep either `lark = ...` or `regex = ...`, not both",
            );
            refused = true;
        } else {
            let ident = inner.path.get_ident().cloned().expect("a one-word syntax");
            found = Some((ident, definition));
        }
        Ok(())
    })?;
    if found.is_none() && !refused {
        cx.error_spanned_by(
            &meta.path,
            format!("`grammar` needs a syntax and a definition: {shape}"),
        );
    }
    Ok(found.filter(|_| !refused))
}

/// An MCP hint: a flag (`read_only`) or an explicit `read_only = false`.
fn hint(cx: &mut Ctxt, meta: &ParseNestedMeta<'_>, name: &str) -> syn::Result<Option<bool>> {
    if meta.input.is_empty() || meta.input.peek(Token![,]) {
        return Ok(Some(true));
    }
    if !meta.input.peek(Token![=]) {
        cx.error_spanned_by(&meta.path, format!("`{name}` is a flag: write `{name}`"));
        skip_value(meta)?;
        return Ok(None);
    }
    Ok(match meta.value()?.parse::<Expr>()? {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(lit),
            ..
        }) => Some(lit.value),
        other => {
            cx.error_spanned_by(
                other,
                format!("`{name}` is a flag, or takes `true` or `false`"),
            );
            None
        }
    })
}
