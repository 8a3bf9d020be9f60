//! The keys of `#[tool(...)]`.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitBool, LitInt, LitStr, Meta, Token};

use crate::ctxt::Ctxt;

/// Every key `#[tool]` accepts, listed in errors about unknown keys.
pub const KEYS: &[&str] = &[
    "name",
    "label",
    "description",
    "parallel",
    "sequential",
    "timeout_ms",
    "prepare",
    "validate",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "crate",
];

/// A value together with the key token it was written with, for spans.
pub struct Keyed<T> {
    pub key: syn::Path,
    pub value: T,
}

#[derive(Default)]
pub struct Attrs {
    pub name: Option<Keyed<LitStr>>,
    pub label: Option<Keyed<LitStr>>,
    pub description: Option<Keyed<LitStr>>,
    pub parallel: Option<Keyed<()>>,
    pub sequential: Option<Keyed<()>>,
    pub timeout_ms: Option<Keyed<LitInt>>,
    pub prepare: Option<Keyed<syn::Path>>,
    pub validate: Option<Keyed<syn::Path>>,
    pub read_only: Option<Keyed<bool>>,
    pub destructive: Option<Keyed<bool>>,
    pub idempotent: Option<Keyed<bool>>,
    pub open_world: Option<Keyed<bool>>,
    pub krate: Option<Keyed<syn::Path>>,
}

/// Parses the attribute's arguments, recording every problem in `cx`.
pub fn parse(cx: &mut Ctxt, args: TokenStream) -> Attrs {
    let mut attrs = Attrs::default();
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args) {
        Ok(metas) => metas,
        Err(error) => {
            cx.push(error);
            return attrs;
        }
    };
    for meta in metas {
        let key = meta.path().clone();
        let Some(ident) = key.get_ident().map(ToString::to_string) else {
            unknown_key(cx, &key, &path_text(&key));
            continue;
        };
        match ident.as_str() {
            "name" => set(&mut attrs.name, &key, string_value(cx, &meta), cx),
            "label" => set(&mut attrs.label, &key, string_value(cx, &meta), cx),
            "description" => set(&mut attrs.description, &key, string_value(cx, &meta), cx),
            "parallel" => set(&mut attrs.parallel, &key, flag(cx, &meta), cx),
            "sequential" => set(&mut attrs.sequential, &key, flag(cx, &meta), cx),
            "timeout_ms" => set(&mut attrs.timeout_ms, &key, int_value(cx, &meta), cx),
            "prepare" => set(&mut attrs.prepare, &key, path_value(cx, &meta), cx),
            "validate" => set(&mut attrs.validate, &key, path_value(cx, &meta), cx),
            "read_only" => set(&mut attrs.read_only, &key, hint(cx, &meta), cx),
            "destructive" => set(&mut attrs.destructive, &key, hint(cx, &meta), cx),
            "idempotent" => set(&mut attrs.idempotent, &key, hint(cx, &meta), cx),
            "open_world" => set(&mut attrs.open_world, &key, hint(cx, &meta), cx),
            "crate" => {
                let path = string_value(cx, &meta).and_then(|lit| match lit.parse::<syn::Path>() {
                    Ok(path) => Some(path),
                    Err(_) => {
                        cx.error_spanned_by(
                            &lit,
                            "`crate` takes the path of the runtime crate, e.g. `crate = \"my_app::yiem\"`",
                        );
                        None
                    }
                });
                set(&mut attrs.krate, &key, path, cx)
            }
            other => unknown_key(cx, &key, other),
        }
    }
    attrs
}

fn path_text(path: &syn::Path) -> String {
    quote::quote!(#path).to_string().replace(' ', "")
}

fn unknown_key(cx: &mut Ctxt, key: &syn::Path, text: &str) {
    cx.error_spanned_by(
        key,
        format!(
            "unknown #[tool] key `{text}`; valid keys are: {}",
            KEYS.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
}

fn set<T>(slot: &mut Option<Keyed<T>>, key: &syn::Path, value: Option<T>, cx: &mut Ctxt) {
    let Some(value) = value else { return };
    if slot.is_some() {
        cx.error_spanned_by(
            key,
            format!(
                "duplicate #[tool] key `{}`; write each key once",
                path_text(key)
            ),
        );
        return;
    }
    *slot = Some(Keyed {
        key: key.clone(),
        value,
    });
}

fn name_of(meta: &Meta) -> String {
    path_text(meta.path())
}

fn string_value(cx: &mut Ctxt, meta: &Meta) -> Option<LitStr> {
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) => Some(lit.clone()),
            other => {
                cx.error_spanned_by(
                    other,
                    format!(
                        "`{}` takes a string literal, e.g. `{} = \"...\"`",
                        name_of(meta),
                        name_of(meta)
                    ),
                );
                None
            }
        },
        _ => {
            cx.error_spanned_by(
                meta,
                format!(
                    "`{}` takes a value: write `{} = \"...\"`",
                    name_of(meta),
                    name_of(meta)
                ),
            );
            None
        }
    }
}

fn int_value(cx: &mut Ctxt, meta: &Meta) -> Option<LitInt> {
    let message = format!(
        "`{}` takes a positive whole number of milliseconds, e.g. `{} = 5000`",
        name_of(meta),
        name_of(meta)
    );
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Int(lit), ..
            }) => Some(lit.clone()),
            other => {
                cx.error_spanned_by(other, message);
                None
            }
        },
        _ => {
            cx.error_spanned_by(meta, message);
            None
        }
    }
}

fn path_value(cx: &mut Ctxt, meta: &Meta) -> Option<syn::Path> {
    let message = format!(
        "`{}` takes the path of a function, e.g. `{} = check_args`",
        name_of(meta),
        name_of(meta)
    );
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Path(path) if path.qself.is_none() => Some(path.path.clone()),
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
        },
        _ => {
            cx.error_spanned_by(meta, message);
            None
        }
    }
}

fn flag(cx: &mut Ctxt, meta: &Meta) -> Option<()> {
    match meta {
        Meta::Path(_) => Some(()),
        _ => {
            cx.error_spanned_by(
                meta,
                format!(
                    "`{}` is a flag and takes no value: write `{}`",
                    name_of(meta),
                    name_of(meta)
                ),
            );
            None
        }
    }
}

/// An MCP hint: a flag (`read_only`) or an explicit `read_only = false`.
fn hint(cx: &mut Ctxt, meta: &Meta) -> Option<bool> {
    match meta {
        Meta::Path(_) => Some(true),
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Bool(LitBool { value, .. }),
                ..
            }) => Some(*value),
            other => {
                cx.error_spanned_by(
                    other,
                    format!("`{}` is a flag, or takes `true` or `false`", name_of(meta)),
                );
                None
            }
        },
        Meta::List(_) => {
            cx.error_spanned_by(
                meta,
                format!("`{}` is a flag: write `{}`", name_of(meta), name_of(meta)),
            );
            None
        }
    }
}

impl<T> Keyed<T> {
    pub fn key_span(&self) -> Span {
        self.key.span()
    }
}
