//! What `#[tool]` emits when it finds errors: the user's function unchanged, the errors, and a placeholder
//! constructor, so the IDE keeps working and no second wave of errors (`cannot find function
//! get_weather_tool`) follows.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::ItemFn;

pub fn emit(errors: syn::Error, item: Option<&ItemFn>, krate: &syn::Path) -> TokenStream {
    let errors = errors.to_compile_error();
    let Some(item) = item else {
        return errors;
    };
    let vis = &item.vis;
    let constructor = format_ident!("{}_tool", item.sig.ident);
    quote! {
        #item
        #errors
        #[doc(hidden)]
        #[allow(dead_code, unreachable_code)]
        #vis fn #constructor() -> #krate::AgentTool {
            ::core::unreachable!("#[tool] reported an error for this function")
        }
    }
}
