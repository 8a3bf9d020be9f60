//! A typed view of a function under `#[tool]`, free or a method of a `#[tools]` impl. It keeps references
//! into the original syntax so every error can point at the user's own token.

use syn::{
    Attribute, Expr, ExprLit, FnArg, GenericArgument, Lit, Meta, PatType, PathArguments, Receiver,
    Signature, Type,
};

/// One parameter of the tool function, as written.
pub(crate) enum Param<'a> {
    /// `self`, `&self`, `&mut self`, `self: Arc<Self>`, ...
    Receiver(&'a Receiver),
    /// `ctx: ToolContext`.
    Context(&'a PatType),
    /// `State(db): State<Db>`, with `Db`.
    State(&'a PatType, &'a Type),
    /// Anything else: the argument struct.
    Args(&'a PatType),
}

pub(crate) struct ToolFn<'a> {
    pub sig: &'a Signature,
    pub params: Vec<Param<'a>>,
    /// The doc comment, one leading space stripped per line, outer blank lines removed.
    pub docs: Option<String>,
}

impl<'a> ToolFn<'a> {
    pub(crate) fn new(sig: &'a Signature, attrs: &'a [Attribute]) -> Self {
        let params = sig
            .inputs
            .iter()
            .map(|input| match input {
                FnArg::Receiver(receiver) => Param::Receiver(receiver),
                FnArg::Typed(pat_type) if is_named(&pat_type.ty, "ToolContext") => {
                    Param::Context(pat_type)
                }
                FnArg::Typed(pat_type) => match state_inner(&pat_type.ty) {
                    Some(inner) => Param::State(pat_type, inner),
                    None => Param::Args(pat_type),
                },
            })
            .collect();
        ToolFn {
            sig,
            params,
            docs: doc_text(attrs),
        }
    }
}

/// A path type whose last segment is `name`, without generic arguments.
fn is_named(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == name && segment.arguments.is_none()),
        _ => false,
    }
}

/// `T` of `State<T>` (by any path ending in `State`).
fn state_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    if path.qself.is_some() {
        return None;
    }
    let segment = path.path.segments.last()?;
    if segment.ident != "State" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(inner)] => Some(inner),
        _ => None,
    }
}

pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        let Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        let Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) = &nv.value
        else {
            continue;
        };
        let text = text.value();
        if text.is_empty() {
            lines.push(String::new());
        }
        for line in text.lines() {
            lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
        }
    }
    while lines.first().is_some_and(|l| l.trim().is_empty()) {
        lines.remove(0);
    }
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}
