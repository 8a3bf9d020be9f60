//! Code generation: the user's function unchanged, a `<fn>_tool()` constructor beside it, and an
//! `inventory` registration. Generated code reaches the runtime only through `<crate>::__private`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, LitStr, ReturnType};

use crate::ast::ToolFn;
use crate::attr::{self, Attrs};
use crate::ctxt::Ctxt;
use crate::fallback;
use crate::valid::{self, Checked, Kind};

pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    let default_crate: syn::Path = syn::parse_quote!(::yiem_core);
    let item: ItemFn = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            let error = syn::Error::new(
                item_keyword_span(&input),
                "#[tool] goes on a function: `async fn name(args: Args) -> Output`",
            );
            // Keep whatever the user wrote, so only this error shows.
            let mut out = input;
            out.extend(error.to_compile_error());
            return out;
        }
    };

    let mut cx = Ctxt::default();
    let attrs = attr::parse(&mut cx, args);
    let krate = attrs
        .krate
        .as_ref()
        .map_or(default_crate, |k| k.value.clone());
    let tool = ToolFn::from_item(&item);
    let checked = valid::check(&mut cx, &attrs, &tool);
    match (cx.check(), checked) {
        (Ok(()), Some(checked)) => generate(&attrs, &tool, &checked, &krate),
        (Err(errors), _) => fallback::emit(errors, Some(&item), &krate),
        (Ok(()), None) => fallback::emit(
            syn::Error::new(Span::call_site(), "#[tool] could not read this function"),
            Some(&item),
            &krate,
        ),
    }
}

fn generate(
    attrs: &Attrs,
    tool: &ToolFn<'_>,
    checked: &Checked<'_>,
    krate: &syn::Path,
) -> TokenStream {
    let item = tool.item;
    let vis = &item.vis;
    let fn_name = &item.sig.ident;
    let constructor = format_ident!("{}_tool", fn_name.to_string().trim_start_matches("r#"));
    let private = quote!(#krate::__private);

    let name = LitStr::new(&checked.name, checked.name_span);
    let description = LitStr::new(&checked.description, Span::call_site());
    let label = match &attrs.label {
        Some(label) => {
            let label = &label.value;
            quote!(::core::option::Option::Some(#label))
        }
        None => quote!(::core::option::Option::None),
    };
    let mode = if attrs.parallel.is_some() {
        quote!(#krate::ExecutionMode::Parallel)
    } else {
        quote!(#krate::ExecutionMode::Sequential)
    };
    let timeout = match &attrs.timeout_ms {
        Some(ms) => {
            let ms = ms.value.base10_parse::<u64>().unwrap_or(1);
            quote!(::core::option::Option::Some(#ms))
        }
        None => quote!(::core::option::Option::None),
    };
    let hint = |value: &Option<attr::Keyed<bool>>| match value {
        Some(keyed) => {
            let value = keyed.value;
            quote!(::core::option::Option::Some(#value))
        }
        None => quote!(::core::option::Option::None),
    };
    let (read_only, destructive, idempotent, open_world) = (
        hint(&attrs.read_only),
        hint(&attrs.destructive),
        hint(&attrs.idempotent),
        hint(&attrs.open_world),
    );

    let (kind, args_ty) = match (checked.kind, checked.args_ty) {
        (Kind::ArgsOnly, Some(ty)) => (quote!(ArgsOnly), quote!(#ty)),
        (Kind::CtxArgs, Some(ty)) => (quote!(CtxArgs), quote!(#ty)),
        (Kind::CtxOnly, _) => (quote!(CtxOnly), quote!(#private::NoArgs)),
        (Kind::Nothing | Kind::ArgsOnly | Kind::CtxArgs, _) => {
            (quote!(Nothing), quote!(#private::NoArgs))
        }
    };
    let adapter = if tool.is_async() {
        quote!(AsyncTool)
    } else {
        quote!(BlockingTool)
    };

    // Each user-supplied path is checked against its expected signature on its own token.
    let prepare = match &attrs.prepare {
        Some(keyed) => {
            let path = &keyed.value;
            quote_spanned! {path.span()=>
                ::core::option::Option::Some({
                    let prepare: fn(#private::Value) -> #private::Value = #path;
                    prepare
                })
            }
        }
        None => quote!(::core::option::Option::None),
    };
    let validate = match &attrs.validate {
        Some(keyed) => {
            let path = &keyed.value;
            quote_spanned! {path.span()=>
                ::core::option::Option::Some({
                    let validate: #private::ValidateFn<#args_ty> = #path;
                    validate
                })
            }
        }
        None => quote!(::core::option::Option::None),
    };

    // Each type is checked once, on the user's own token: the argument type by `args_spec`, the return
    // type by `output_spec`. The handler itself only has to agree with them.
    let args_spec = match checked.args_ty {
        Some(ty) => quote_spanned! {ty.span()=> #private::args_spec::<#ty>()},
        None => quote!(#private::no_args_spec()),
    };
    let output_spec = match &item.sig.output {
        ReturnType::Type(_, ty) if contains_impl_trait(ty) => {
            quote_spanned! {ty.span()=> #private::output_spec::<_>()}
        }
        ReturnType::Type(_, ty) => quote_spanned! {ty.span()=> #private::output_spec::<#ty>()},
        ReturnType::Default => quote_spanned! {fn_name.span()=> #private::output_spec::<()>()},
    };
    // Spanned on the fn name: a future that is not `Send` is reported there.
    let handler = quote_spanned! {fn_name.span()=>
        #private::#adapter::<_, _, _, #private::#kind>::new(#fn_name, args, output, #validate)
    };
    let handler_ident = quote_spanned! {fn_name.span()=> handler};

    let location = quote_spanned! {fn_name.span()=> ::core::file!(), ::core::line!()};
    let doc = format!(
        "The tool for [`{fn_name}`], as the model sees it: name `{}`. Generated by `#[tool]`.",
        checked.name
    );

    quote! {
        #item

        #[doc = #doc]
        #[must_use]
        #vis fn #constructor() -> #krate::AgentTool {
            static __YIEM_INPUT_SCHEMA: #private::SchemaCell = #private::SchemaCell::new();
            static __YIEM_OUTPUT_SCHEMA: #private::SchemaCell = #private::SchemaCell::new();
            let args = #args_spec;
            let output = #output_spec;
            let #handler_ident = #handler;
            let (file, line) = (#location);
            #private::ToolSpec {
                name: #name,
                label: #label,
                description: #description,
                mode: #mode,
                timeout_ms: #timeout,
                annotations: #krate::ToolAnnotations {
                    read_only: #read_only,
                    destructive: #destructive,
                    idempotent: #idempotent,
                    open_world: #open_world,
                },
                prepare: #prepare,
                file,
                line,
            }
            .build(&__YIEM_INPUT_SCHEMA, &__YIEM_OUTPUT_SCHEMA, (args, output), #handler_ident)
        }

        #[doc(hidden)]
        const _: () = {
            #private::inventory::submit! {
                #private::ToolRegistration::new(#constructor)
            }
        };
    }
}

/// Whether `ty` mentions `impl Trait` (then the output type is left to inference).
fn contains_impl_trait(ty: &syn::Type) -> bool {
    struct Finder(bool);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
            self.0 = true;
        }
    }
    let mut finder = Finder(false);
    syn::visit::Visit::visit_type(&mut finder, ty);
    finder.0
}

/// The span of the keyword that starts an item (`struct`, `impl`, ...), past attributes and visibility.
fn item_keyword_span(input: &TokenStream) -> Span {
    use proc_macro2::TokenTree;
    let mut tokens = input.clone().into_iter().peekable();
    while let Some(token) = tokens.next() {
        match &token {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                tokens.next(); // the attribute's `[...]`
            }
            TokenTree::Ident(ident) if ident == "pub" => {
                if let Some(TokenTree::Group(_)) = tokens.peek() {
                    tokens.next(); // `pub(crate)`
                }
            }
            other => return other.span(),
        }
    }
    Span::call_site()
}
