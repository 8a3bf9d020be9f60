//! What the macros emit when they find errors: the user's code unchanged, the errors, and placeholders for
//! what they would have generated, so the IDE keeps working and no second wave of errors (`cannot find
//! function get_weather_tool`, `Notes: ToolMethods` unsatisfied) follows.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{ItemFn, ItemImpl};

/// For `#[tool]`: the function, the errors, and a placeholder constructor.
pub(crate) fn emit(errors: syn::Error, item: &ItemFn, krate: &syn::Path) -> TokenStream {
    let errors = errors.to_compile_error();
    let vis = &item.vis;
    let constructor = format_ident!(
        "{}_tool",
        item.sig.ident.to_string().trim_start_matches("r#")
    );
    quote! {
        #item
        #errors
        #[doc(hidden)]
        #[allow(dead_code, unreachable_code)]
        #vis fn #constructor() -> #krate::__private::AgentTool {
            ::core::unreachable!("#[tool] reported an error for this function")
        }
    }
}

/// For `#[tools]`: the impl block (without its `#[tool]` attributes), the errors, and, when the block is
/// an inherent impl of a concrete type, a placeholder `ToolMethods` impl.
pub(crate) fn emit_impl(
    errors: syn::Error,
    item: &ItemImpl,
    placeholder: bool,
    krate: &syn::Path,
) -> TokenStream {
    let errors = errors.to_compile_error();
    let self_ty = &item.self_ty;
    let placeholder = placeholder.then(|| {
        quote! {
            #[allow(unreachable_code)]
            impl #krate::__private::ToolMethods for #self_ty {
                fn tools(self: #krate::__private::Arc<Self>) -> #krate::__private::Vec<#krate::__private::AgentTool> {
                    ::core::unreachable!("#[tools] reported an error for this impl")
                }
            }
        }
    });
    quote! {
        #item
        #errors
        #placeholder
    }
}
