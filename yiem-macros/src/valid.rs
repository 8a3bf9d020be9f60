//! Checks on the attribute and the function. Every problem is recorded, each on the smallest token that
//! shows it, with a message that says what to write instead.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{ReturnType, Type};

use crate::ast::{Param, ToolFn};
use crate::attr::Attrs;
use crate::ctxt::Ctxt;

/// Which of the accepted signatures the function has.
#[derive(Clone, Copy)]
pub enum Kind {
    ArgsOnly,
    CtxArgs,
    Nothing,
    CtxOnly,
}

/// What expansion needs, once everything has been checked.
pub struct Checked<'a> {
    pub kind: Kind,
    pub args_ty: Option<&'a Type>,
    pub name: String,
    pub name_span: Span,
    pub description: String,
}

pub fn check<'a>(cx: &mut Ctxt, attrs: &Attrs, tool: &ToolFn<'a>) -> Option<Checked<'a>> {
    check_signature(cx, tool);
    let (kind, args_ty) = check_params(cx, tool);
    check_attrs(cx, attrs, args_ty.is_some());

    let (name, name_span) = match &attrs.name {
        Some(name) => (name.value.value(), name.value.span()),
        None => {
            let ident = tool.item.sig.ident.to_string();
            let ident = ident.strip_prefix("r#").map(str::to_owned).unwrap_or(ident);
            (ident, tool.item.sig.ident.span())
        }
    };
    if !is_valid_tool_name(&name) {
        let hint = if attrs.name.is_some() {
            "pick another name"
        } else {
            "rename the function or set `#[tool(name = \"...\")]`"
        };
        cx.push(syn::Error::new(
            name_span,
            format!(
                "tool name `{name}` is invalid: names must match ^[a-zA-Z0-9_-]{{1,64}}$ (the limit LLM providers share); {hint}"
            ),
        ));
    }

    let description = match (&attrs.description, &tool.docs) {
        (Some(description), _) => description.value.value(),
        (None, Some(docs)) => docs.clone(),
        (None, None) => {
            cx.error_spanned_by(
                &tool.item.sig.ident,
                "a tool needs a description for the model: add a doc comment (`/// What the tool does.`) or `#[tool(description = \"...\")]`",
            );
            String::new()
        }
    };
    if let Some(description) = &attrs.description
        && description.value.value().trim().is_empty()
    {
        cx.error_spanned_by(
            &description.value,
            "the description is empty: say what the tool does",
        );
    }
    if let Some(label) = &attrs.label
        && label.value.value().trim().is_empty()
    {
        cx.error_spanned_by(
            &label.value,
            "the label is empty: give a human-readable name or leave `label` out",
        );
    }

    Some(Checked {
        kind,
        args_ty,
        name,
        name_span,
        description,
    })
}

fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn check_signature(cx: &mut Ctxt, tool: &ToolFn<'_>) {
    let sig = &tool.item.sig;
    if let Some(constness) = &sig.constness {
        cx.error_spanned_by(constness, "a tool cannot be a `const fn`: remove `const`");
    }
    if let Some(unsafety) = &sig.unsafety {
        cx.error_spanned_by(
            unsafety,
            "a tool cannot be an `unsafe fn`: a model calls it with arguments it chose; make the function safe",
        );
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(
            abi,
            "a tool cannot have an `extern` ABI: remove it and write a plain Rust fn",
        );
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(
            variadic,
            "a tool cannot be variadic: take one argument struct",
        );
    }
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics,
            "a tool cannot be generic: the model calls it with one concrete argument type; replace the type parameter with that type",
        );
    } else if let Some(where_clause) = &sig.generics.where_clause {
        cx.error_spanned_by(
            where_clause,
            "a tool cannot have a `where` clause: use concrete types",
        );
    }
    if sig.asyncness.is_none()
        && let ReturnType::Type(_, ty) = &sig.output
        && let Type::ImplTrait(_) = ty.as_ref()
    {
        cx.error_spanned_by(
            sig.fn_token,
            "a plain `fn` tool runs on a blocking thread and cannot return `impl Trait`: write `async fn` and return the output type",
        );
    }
}

fn check_params<'a>(cx: &mut Ctxt, tool: &ToolFn<'a>) -> (Kind, Option<&'a Type>) {
    let mut context = None;
    let mut args: Option<&'a Type> = None;
    for param in &tool.params {
        match param {
            Param::Receiver(receiver) => cx.error_spanned_by(
                receiver,
                "a tool cannot take `self`: make it a free function outside the `impl` block and pass state through the argument struct",
            ),
            Param::Context(pat_type) => {
                if context.is_some() {
                    cx.error_spanned_by(&pat_type.ty, "a tool takes at most one `ToolContext`: remove this one");
                } else if args.is_some() {
                    cx.error_spanned_by(
                        &pat_type.ty,
                        "put the `ToolContext` parameter first: `async fn f(ctx: ToolContext, args: Args)`",
                    );
                }
                context = Some(pat_type);
            }
            Param::Args(pat_type) => {
                check_args_type(cx, &pat_type.ty);
                if args.is_some() {
                    cx.error_spanned_by(
                        pat_type,
                        "a tool takes one argument struct: move this parameter into a field of the first one (which derives `Deserialize` and `JsonSchema`)",
                    );
                } else {
                    args = Some(&pat_type.ty);
                }
            }
        }
    }
    let kind = match (context.is_some(), args.is_some()) {
        (false, true) => Kind::ArgsOnly,
        (true, true) => Kind::CtxArgs,
        (false, false) => Kind::Nothing,
        (true, false) => Kind::CtxOnly,
    };
    (kind, args)
}

fn check_args_type(cx: &mut Ctxt, ty: &Type) {
    match ty {
        Type::Reference(reference) => {
            let is_str = matches!(reference.elem.as_ref(), Type::Path(p) if p.path.is_ident("str"));
            let instead = if is_str {
                "take `String` instead of `&str`, inside an argument struct".to_owned()
            } else {
                let elem = &reference.elem;
                format!("take `{}` by value", quote::quote!(#elem).to_string().replace(' ', ""))
            };
            cx.error_spanned_by(
                ty,
                format!("tool arguments are deserialized into an owned value and cannot be borrowed: {instead}"),
            );
        }
        Type::ImplTrait(_) => cx.error_spanned_by(
            ty,
            "a tool cannot take `impl Trait`: name the concrete argument struct (deriving `Deserialize` and `JsonSchema`)",
        ),
        _ => {}
    }
}

fn check_attrs(cx: &mut Ctxt, attrs: &Attrs, has_args: bool) {
    if let (Some(_), Some(sequential)) = (&attrs.parallel, &attrs.sequential) {
        cx.push(syn::Error::new(
            sequential.key_span(),
            "a tool is either `parallel` or `sequential`, not both: remove one",
        ));
    }
    if let Some(timeout) = &attrs.timeout_ms {
        let positive = timeout.value.base10_parse::<u64>().is_ok_and(|ms| ms > 0)
            && timeout.value.suffix().is_empty();
        if !positive {
            cx.error_spanned_by(
                &timeout.value,
                "`timeout_ms` takes a positive whole number of milliseconds without a suffix, e.g. `timeout_ms = 5000`",
            );
        }
    }
    if let Some(validate) = &attrs.validate
        && !has_args
    {
        cx.push(syn::Error::new(
            validate.key.span(),
            "`validate` checks the argument struct, but this tool takes no arguments: remove `validate`",
        ));
    }
}
