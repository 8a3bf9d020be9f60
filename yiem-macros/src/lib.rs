//! The `#[tool]` and `#[tools]` attributes of yiem. Use them through `yiem_core`; the documentation lives
//! there.
//!
//! The work is split by phase, like serde_derive and thiserror: `attr` parses the attribute keys, `ast`
//! gives a typed view of the function, `valid` checks both (collecting every error) into one complete
//! description of the tool, `expand` generates the code from that description alone, and `fallback` is
//! what is emitted when there are errors: the user's code unchanged plus the errors, so nothing else breaks.

#![warn(unreachable_pub, missing_debug_implementations)]

mod ast;
mod attr;
mod check;
mod context;
mod ctxt;
mod expand;
mod fallback;
mod valid;

use proc_macro::TokenStream;

/// Turns an `async fn` (or plain `fn`) into a tool an LLM can call. See the `#[yiem_core::tool]` attribute's
/// documentation (the macro at `yiem_core`'s root, not the module of the same name).
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::tool(args.into(), input.into()).into()
}

/// Turns the `#[tool]` methods of an `impl` block into the tools of one instance (`Arc<Self>`). See
/// `yiem_core::tools` for the full documentation.
#[proc_macro_attribute]
pub fn tools(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::tools(args.into(), input.into()).into()
}

/// The test a tool crate runs to check its tools for every provider, called by `yiem_core::check_tools!`
/// with the path of yiem-core first (`$crate;`), so that it follows a renamed or re-exported crate. See
/// `yiem_core::check_tools!` for the documentation.
#[doc(hidden)]
#[proc_macro]
pub fn check_tools_in(input: TokenStream) -> TokenStream {
    check::check_tools(input.into()).into()
}

/// Turns an `async fn` into an MCP resource: a fixed URI, or a URI template whose `{parameters}` bind to
/// the function's arguments by name. See `yiem_core::mcp::resource` for the full documentation.
#[proc_macro_attribute]
pub fn resource(args: TokenStream, input: TokenStream) -> TokenStream {
    context::resource(args.into(), input.into()).into()
}

/// Turns an `async fn` over one argument struct (and, to ask the client, a `PromptContext`) into an MCP
/// prompt. See `yiem_core::mcp::prompt` for
/// the full documentation.
#[proc_macro_attribute]
pub fn prompt(args: TokenStream, input: TokenStream) -> TokenStream {
    context::prompt(args.into(), input.into()).into()
}
