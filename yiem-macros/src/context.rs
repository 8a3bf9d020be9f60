//! `#[resource]` and `#[prompt]`: an MCP resource (a fixed URI or a URI template whose parameters bind to
//! the function's arguments by name) and an MCP prompt (over one serde + schemars argument struct), each
//! with a constructor beside the function and an `inventory` registration. Parsed into [`Keys`], checked
//! (every error collected), then generated from the checked description alone, like `#[tool]`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::Parser;
use syn::{FnArg, ItemFn, LitStr, Pat, Token};

use crate::ast::doc_text;
use crate::ctxt::Ctxt;

/// Which attribute.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Resource,
    Prompt,
}

impl Kind {
    fn attr(self) -> &'static str {
        match self {
            Kind::Resource => "#[resource]",
            Kind::Prompt => "#[prompt]",
        }
    }

    fn keys(self) -> &'static [&'static str] {
        match self {
            Kind::Resource => &[
                "uri",
                "name",
                "title",
                "description",
                "mime_type",
                "complete",
                "crate",
            ],
            Kind::Prompt => &["name", "title", "description", "complete", "crate"],
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            Kind::Resource => "resource",
            Kind::Prompt => "prompt",
        }
    }
}

/// What the attribute said.
#[derive(Default)]
struct Keys {
    uri: Option<LitStr>,
    name: Option<LitStr>,
    title: Option<LitStr>,
    description: Option<LitStr>,
    mime_type: Option<LitStr>,
    /// `complete(argument = path, ...)`.
    complete: Vec<(syn::Ident, syn::Path)>,
    krate: Option<syn::Path>,
}

fn parse(cx: &mut Ctxt, kind: Kind, args: TokenStream) -> Keys {
    let mut keys = Keys::default();
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        if !kind.keys().contains(&key.as_str()) {
            cx.error_spanned_by(
                &meta.path,
                format!(
                    "unknown {} key `{}`; valid keys are: {}",
                    kind.attr(),
                    quote::ToTokens::to_token_stream(&meta.path)
                        .to_string()
                        .replace(' ', ""),
                    kind.keys()
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            if meta.input.peek(Token![=]) {
                meta.value()?.parse::<syn::Expr>()?;
            } else if meta.input.peek(syn::token::Paren) {
                let _ = meta.input.parse::<proc_macro2::Group>()?;
            }
            return Ok(());
        }
        if key == "complete" {
            return meta.parse_nested_meta(|inner| {
                let Some(argument) = inner.path.get_ident().cloned() else {
                    return Err(inner.error("write `complete(argument = path::to::fn)`"));
                };
                let path: syn::Path = inner.value()?.parse()?;
                keys.complete.push((argument, path));
                Ok(())
            });
        }
        if key == "crate" {
            let text: LitStr = meta.value()?.parse()?;
            keys.krate = Some(text.parse()?);
            return Ok(());
        }
        let value: LitStr = meta.value()?.parse()?;
        let slot = match key.as_str() {
            "uri" => &mut keys.uri,
            "name" => &mut keys.name,
            "title" => &mut keys.title,
            "description" => &mut keys.description,
            _ => &mut keys.mime_type,
        };
        if slot.is_some() {
            cx.error_spanned_by(&meta.path, format!("`{key}` is given twice; keep one"));
        }
        *slot = Some(value);
        Ok(())
    });
    if let Err(error) = parser.parse2(args) {
        cx.push(error);
    }
    keys
}

/// The parameters of a URI template, or why it cannot be matched (the runtime's rules, checked here so
/// that registration cannot fail).
fn template_params(template: &str) -> Result<Vec<String>, String> {
    let mut params: Vec<String> = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let literal = &rest[..open];
        if literal.contains('}') {
            return Err("a `}` without its `{`".into());
        }
        if literal.is_empty() && !params.is_empty() {
            return Err(
                "two parameters with nothing between them: a URI cannot say where one ends".into(),
            );
        }
        let Some(close) = rest[open..].find('}') else {
            return Err("a `{` without its `}`".into());
        };
        let name = &rest[open + 1..open + close];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "the parameter `{{{name}}}`: write `{{name}}` with letters, digits and `_` only \
                 (operators such as `+`, `?`, `#` are not supported)"
            ));
        }
        if params.iter().any(|p| p == name) {
            return Err(format!("the parameter `{name}` twice"));
        }
        params.push(name.to_owned());
        rest = &rest[open + close + 1..];
    }
    if rest.contains('}') {
        return Err("a `}` without its `{`".into());
    }
    Ok(params)
}

/// Names clients can send and type: letters, digits, `_`, `-`, `.`; 1 to 128 characters.
fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

pub(crate) fn resource(args: TokenStream, input: TokenStream) -> TokenStream {
    expand(Kind::Resource, args, input)
}

pub(crate) fn prompt(args: TokenStream, input: TokenStream) -> TokenStream {
    expand(Kind::Prompt, args, input)
}

fn expand(kind: Kind, args: TokenStream, input: TokenStream) -> TokenStream {
    let item: ItemFn = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            let message = format!(
                "{} goes on a function: `async fn name(...) -> ...`",
                kind.attr()
            );
            let error = syn::Error::new(Span::call_site(), message).to_compile_error();
            return quote!(#input #error);
        }
    };
    let mut cx = Ctxt::default();
    let keys = parse(&mut cx, kind, args);
    let krate = keys
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::yiem_core));
    let sig = &item.sig;
    let fn_name = &sig.ident;
    let fn_text = fn_name.to_string().trim_start_matches("r#").to_owned();

    if sig.asyncness.is_none() {
        cx.error_spanned_by(
            sig.fn_token,
            format!(
                "{} functions are async: write `async fn {fn_text}`",
                kind.attr()
            ),
        );
    }
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics,
            format!(
                "{} functions cannot be generic: name the concrete types",
                kind.attr()
            ),
        );
    }
    let name = keys
        .name
        .as_ref()
        .map_or_else(|| fn_text.clone(), LitStr::value);
    if !valid_name(&name) {
        let at: &dyn quote::ToTokens = match &keys.name {
            Some(lit) => lit,
            None => fn_name,
        };
        cx.error_spanned_by(
            at,
            format!(
                "{} name `{name}` is invalid: use 1 to 128 letters, digits, `_`, `-` or `.`",
                kind.attr()
            ),
        );
    }
    let description = keys
        .description
        .as_ref()
        .map(LitStr::value)
        .or_else(|| doc_text(&item.attrs));
    if description.is_none() {
        cx.error_spanned_by(
            fn_name,
            format!(
                "{} `{fn_text}` needs a description: add a doc comment (`/// What it is.`) or `description = \"...\"`",
                kind.attr()
            ),
        );
    }
    // The typed parameters, by name.
    let mut params: Vec<(syn::Ident, &syn::Type)> = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(receiver) => cx.error_spanned_by(
                receiver,
                format!("{} goes on a free function, not a method", kind.attr()),
            ),
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
                    params.push((ident.ident.clone(), &typed.ty));
                }
                other => cx.error_spanned_by(
                    other,
                    "name the argument with a plain identifier (`id: u32`, `args: Args`)",
                ),
            },
        }
    }

    let body = match kind {
        Kind::Resource => resource_body(&mut cx, &keys, &params, fn_name, &krate),
        Kind::Prompt => prompt_body(&mut cx, &keys, &params, fn_name, &krate),
    };
    let constructor = format_ident!("{}_{}", fn_text, kind.suffix());
    let private = quote!(#krate::__private::mcp);
    let output = match kind {
        Kind::Resource => quote!(#krate::mcp::McpResource),
        Kind::Prompt => quote!(#krate::mcp::McpPrompt),
    };
    let vis = &item.vis;
    if let Err(errors) = cx.check() {
        let errors = errors.to_compile_error();
        return quote! {
            #item
            #errors
            #[doc(hidden)]
            #[allow(dead_code, unreachable_code)]
            #vis fn #constructor() -> #output {
                ::core::unreachable!("the attribute reported an error for this function")
            }
        };
    }
    let description = description.unwrap_or_default();
    let title = keys.title.as_ref().map(|title| quote!(.title(#title)));
    let registration = match kind {
        Kind::Resource => quote!(#private::ResourceRegistration::new(#constructor)),
        Kind::Prompt => quote!(#private::PromptRegistration::new(#constructor)),
    };
    let doc = format!(
        "The MCP {} of [`{fn_text}`]: `{name}`. Generated by `{}`.",
        kind.suffix(),
        kind.attr()
    );
    quote! {
        #item

        #[doc = #doc]
        #[must_use]
        #vis fn #constructor() -> #output {
            #body
                .description(#description)
                #title
        }

        #[doc(hidden)]
        const _: () = {
            #krate::__private::inventory::submit! { #registration }
        };
    }
}

fn completions(keys: &Keys) -> TokenStream {
    let each = keys.complete.iter().map(|(argument, path)| {
        let text = argument.to_string();
        quote!(.complete(#text, |typed: &str| -> ::std::vec::Vec<::std::string::String> { #path(typed) }))
    });
    quote!(#(#each)*)
}

fn resource_body(
    cx: &mut Ctxt,
    keys: &Keys,
    params: &[(syn::Ident, &syn::Type)],
    fn_name: &syn::Ident,
    krate: &syn::Path,
) -> TokenStream {
    let private = quote!(#krate::__private::mcp);
    let Some(uri) = &keys.uri else {
        cx.error_spanned_by(
            fn_name,
            "#[resource] needs its URI: `#[resource(uri = \"docs://readme\")]`, or a template `uri = \"users://{id}\"`",
        );
        return TokenStream::new();
    };
    let name = keys
        .name
        .as_ref()
        .map_or_else(|| fn_name.to_string(), LitStr::value);
    let template = match template_params(&uri.value()) {
        Ok(template) => template,
        Err(problem) => {
            cx.error_spanned_by(uri, format!("the URI template has {problem}"));
            return TokenStream::new();
        }
    };
    for (param, _) in params {
        if !template.iter().any(|name| param == name) {
            let message = match template.is_empty() {
                true => format!(
                    "a resource at a fixed URI takes no arguments: put `{{{param}}}` in the URI to make it a template, or remove `{param}`"
                ),
                false => format!(
                    "`{param}` is not a parameter of the URI template; its parameters: {}",
                    template.join(", ")
                ),
            };
            cx.error_spanned_by(param, message);
        }
    }
    for name in &template {
        if !params.iter().any(|(param, _)| param == name) {
            cx.error_spanned_by(
                uri,
                format!("the URI template's parameter `{name}` has no argument: add `{name}: String` (or any `FromStr` type) to the function"),
            );
        }
    }
    for (argument, _) in &keys.complete {
        if !template.iter().any(|name| argument == name) {
            cx.error_spanned_by(
                argument,
                match template.is_empty() {
                    true => "`complete` completes a template's parameters, and this resource's URI has none".to_owned(),
                    false => format!("`{argument}` is not a parameter of the URI template; its parameters: {}", template.join(", ")),
                },
            );
        }
    }
    let mime_type = keys
        .mime_type
        .as_ref()
        .map(|mime| quote!(.mime_type(#mime)));
    // Each parameter is bound under a name of its own, so one named like the function (`page` of
    // `async fn page(page: u32)`) cannot shadow the function it is passed to.
    let local = |param: &syn::Ident| quote::format_ident!("__yiem_param_{}", param);
    let bound = params.iter().map(|(param, ty)| {
        let text = param.to_string();
        let local = local(param);
        quote!(let #local: #ty = #private::template_param::<#ty>(&read, #text)?;)
    });
    let args: Vec<_> = params.iter().map(|(param, _)| local(param)).collect();
    // Named only when a parameter reads it, so a fixed URI's function gets no unused-variable warning.
    let read = match params.is_empty() {
        true => quote!(_read),
        false => quote!(read),
    };
    let start = match template.is_empty() {
        true => quote!(#private::McpResource::new(#uri, #name)),
        false => quote!(#private::McpResource::template(#uri, #name)
            .expect("#[resource] checked the URI template")),
    };
    let completions = completions(keys);
    quote! {
        #start
            #mime_type
            #completions
            .read(|#read: #private::ResourceRead| async move {
                #(#bound)*
                #private::IntoResourceBody::into_resource_body(#fn_name(#(#args),*).await)
                    .map_err(#private::ResourceError::Failed)
            })
    }
}

fn prompt_body(
    cx: &mut Ctxt,
    keys: &Keys,
    params: &[(syn::Ident, &syn::Type)],
    fn_name: &syn::Ident,
    krate: &syn::Path,
) -> TokenStream {
    let private = quote!(#krate::__private::mcp);
    let name = keys
        .name
        .as_ref()
        .map_or_else(|| fn_name.to_string(), LitStr::value);
    let completions = completions(keys);
    // A `PromptContext` parameter, wherever it is, gets the request's context (the prompt can ask the
    // client); the other parameter, if any, is the argument struct.
    let asks = params.iter().position(|(_, ty)| is_prompt_context(ty));
    let call: Vec<TokenStream> = params
        .iter()
        .enumerate()
        .map(|(at, _)| match Some(at) == asks {
            true => quote!(ctx),
            false => quote!(arguments),
        })
        .collect();
    let (getter, closure) = match asks {
        Some(_) => (
            format_ident!("asking"),
            quote!(arguments, ctx: #private::PromptContext),
        ),
        None => (format_ident!("get"), quote!(arguments)),
    };
    let args: Vec<&(syn::Ident, &syn::Type)> = params
        .iter()
        .enumerate()
        .filter(|(at, _)| Some(*at) != asks)
        .map(|(_, param)| param)
        .collect();
    match args.as_slice() {
        [] => {
            if let Some((argument, _)) = keys.complete.first() {
                cx.error_spanned_by(
                    argument,
                    "`complete` completes the prompt's arguments, and this prompt takes none",
                );
            }
            quote! {
                #private::McpPrompt::new(#name)
                    .#getter(|#closure| async move {
                        let _ = arguments;
                        #private::IntoPromptMessages::into_prompt_messages(#fn_name(#(#call),*).await)
                    })
            }
        }
        [(_, ty)] => quote! {
            #private::McpPrompt::new(#name)
                .schema(&#private::prompt_schema::<#ty>())
                #completions
                .#getter(|#closure| async move {
                    let arguments = #private::prompt_arguments::<#ty>(arguments)?;
                    #private::IntoPromptMessages::into_prompt_messages(#fn_name(#(#call),*).await)
                })
        },
        [_, (second, _), ..] => {
            cx.error_spanned_by(
                second,
                "#[prompt] functions take one argument struct (`args: Args`, `Args: Deserialize + JsonSchema`): put every argument in it",
            );
            TokenStream::new()
        }
    }
}

/// Whether `ty` names `PromptContext` (by any path: `PromptContext`, `yiem_core::mcp::PromptContext`).
fn is_prompt_context(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(path)
        if path.qself.is_none()
            && path.path.segments.last().is_some_and(|last| last.ident == "PromptContext"))
}
