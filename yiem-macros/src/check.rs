//! `check_tools!`: the test a tool crate runs to check its tools for every provider. A proc macro rather
//! than `macro_rules!` because it must name the crate whose tools it checks: a test file that never
//! mentions its own library does not link it, so its `#[tool]`s would be missing and the check would pass
//! on nothing. The expansion therefore `use`s the package's library (found from Cargo's environment and
//! manifest), and fails when it finds no tool at all.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Token};

/// `RUNTIME; [crate = NAME,] EXPR, ...`: the path of yiem-core (`$crate` from `yiem_core::check_tools!`),
/// then what the user wrote.
struct Input {
    runtime: TokenStream,
    krate: Option<Ident>,
    extra: Punctuated<Expr, Token![,]>,
}

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut runtime = TokenStream::new();
        while !input.peek(Token![;]) {
            runtime.extend([input.parse::<proc_macro2::TokenTree>()?]);
        }
        input.parse::<Token![;]>()?;
        let mut krate = None;
        if input.peek(Token![crate]) && input.peek2(Token![=]) {
            input.parse::<Token![crate]>()?;
            input.parse::<Token![=]>()?;
            krate = Some(input.parse::<Ident>()?);
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        let extra = Punctuated::parse_terminated(input)?;
        Ok(Input {
            runtime,
            krate,
            extra,
        })
    }
}

pub(crate) fn check_tools(input: TokenStream) -> TokenStream {
    let input = match syn::parse2::<Input>(input) {
        Ok(input) => input,
        Err(error) => return error.to_compile_error(),
    };
    let link = match input.krate.clone().or_else(package_library) {
        Some(library) => quote! {
            // The library whose tools are checked, linked so that its `#[tool]`s are registered.
            #[allow(unused_imports)]
            use #library as _;
        },
        None => TokenStream::new(),
    };
    let extra = input.extra.iter();
    let runtime = &input.runtime;
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    let none = if input.krate.is_none() && in_a_test_file_of_a_binary_only_package() {
        // The two suggestions below do not apply: there is no library to link, the tools are the binary's.
        format!(
            "yiem_core::check_tools! found no tool to check in package `{package}`: the package has no library, \
             so a file in `tests/` cannot link the tools of its binary. Put the check in `src/main.rs` instead: \
             `#[cfg(test)] mod tool_checks {{ yiem_core::check_tools!(); }}` (and delete it here)."
        )
    } else {
        format!(
            "yiem_core::check_tools! found no tool to check in package `{package}`: this test binary links no `#[tool]`. \
             If the tools live in a library of another name, name it: `yiem_core::check_tools!(crate = my_tools);`. \
             Tools of a `#[tools]` impl are passed in: `yiem_core::check_tools!(std::sync::Arc::new(MyTools::default()).tools());` \
             (with `use yiem_core::store::ToolMethods;`)."
        )
    };
    quote! {
        #link
        #[test]
        fn yiem_check_tools() {
            #[allow(unused_mut)]
            let mut tools = #runtime::__private::static_tools();
            #(tools.extend(#extra);)*
            if tools.is_empty() {
                ::core::panic!("{}", #none);
            }
            if let ::core::result::Result::Err(report) = #runtime::__private::check_tools(&tools) {
                ::core::panic!("{report}");
            }
        }
    }
}

/// The library of the package being compiled, when the code being compiled is not that library itself (an
/// integration test, an example, a binary): `[lib] name` of its manifest, else the package's name with
/// `-` as `_`; `None` for a package without a library.
fn package_library() -> Option<Ident> {
    let dir = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
    let named = lib_name(&manifest);
    if named.is_none() && !manifest.contains("[lib]") && !dir.join("src/lib.rs").is_file() {
        return None;
    }
    let name = named.unwrap_or_else(|| {
        std::env::var("CARGO_PKG_NAME")
            .unwrap_or_default()
            .replace('-', "_")
    });
    let compiling = std::env::var("CARGO_CRATE_NAME").unwrap_or_default();
    if name.is_empty() || name == compiling {
        return None;
    }
    Some(format_ident!("{name}"))
}

/// Whether the code being compiled is an integration test (not a binary's own unit tests, where
/// `CARGO_BIN_NAME` is set) of a package with no library.
fn in_a_test_file_of_a_binary_only_package() -> bool {
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR").map(std::path::PathBuf::from) else {
        return false;
    };
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    std::env::var_os("CARGO_BIN_NAME").is_none()
        && !manifest.contains("[lib]")
        && !dir.join("src/lib.rs").is_file()
}

/// `name = "..."` of the manifest's `[lib]` table, read line by line (a manifest that spells it another
/// way can name the crate: `check_tools!(crate = ...)`).
fn lib_name(manifest: &str) -> Option<String> {
    let mut in_lib = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_lib = line == "[lib]";
            continue;
        }
        if !in_lib {
            continue;
        }
        if let Some(value) = line.strip_prefix("name").map(str::trim_start)
            && let Some(value) = value.strip_prefix('=')
        {
            return Some(value.trim().trim_matches('"').replace('-', "_"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::lib_name;

    #[test]
    fn the_lib_name_comes_from_the_lib_table_only() {
        let manifest = "[package]\nname = \"my-tools\"\n\n[lib]\nname = \"tools_lib\"\npath = \"src/lib.rs\"\n";
        assert_eq!(lib_name(manifest).as_deref(), Some("tools_lib"));
        assert_eq!(lib_name("[package]\nname = \"my-tools\"\n"), None);
    }
}
