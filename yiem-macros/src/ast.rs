//! A typed view of the function under `#[tool]`. It keeps references into the original syntax so every
//! error can point at the user's own token.

use syn::{Attribute, Expr, ExprLit, FnArg, ItemFn, Lit, Meta, PatType, Receiver, Type};

/// One parameter of the tool function.
pub enum Param<'a> {
    /// `self`, `&self`, ... (refused).
    Receiver(&'a Receiver),
    /// `ctx: ToolContext`.
    Context(&'a PatType),
    /// Anything else: the argument struct.
    Args(&'a PatType),
}

pub struct ToolFn<'a> {
    pub item: &'a ItemFn,
    pub params: Vec<Param<'a>>,
    /// The doc comment, one leading space stripped per line, outer blank lines removed.
    pub docs: Option<String>,
}

impl<'a> ToolFn<'a> {
    pub fn from_item(item: &'a ItemFn) -> Self {
        let params = item
            .sig
            .inputs
            .iter()
            .map(|input| match input {
                FnArg::Receiver(receiver) => Param::Receiver(receiver),
                FnArg::Typed(pat_type) if is_context(&pat_type.ty) => Param::Context(pat_type),
                FnArg::Typed(pat_type) => Param::Args(pat_type),
            })
            .collect();
        ToolFn {
            item,
            params,
            docs: doc_text(&item.attrs),
        }
    }

    pub fn is_async(&self) -> bool {
        self.item.sig.asyncness.is_some()
    }
}

/// `ToolContext` (by any path ending in it) marks the context parameter.
fn is_context(ty: &Type) -> bool {
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            path.path.segments.last().is_some_and(|segment| {
                segment.ident == "ToolContext" && segment.arguments.is_none()
            })
        }
        _ => false,
    }
}

fn doc_text(attrs: &[Attribute]) -> Option<String> {
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
