//! The `#[each_dispatcher]` test attribute, re-exported by volley-testkit
//! (see `volley_testkit::each_dispatcher` for its documentation).
//!
//! A proc macro because it must rewrite one test function into two while
//! keeping the test attributes (`#[test]`, `#[tokio::test(..)]`,
//! `#[ignore]`, `#[should_panic]`) on each copy: a `macro_rules!` wrapper
//! would have to enclose every test body in braces rustfmt does not format.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use proc_macro::TokenStream;
use quote::quote;
use syn::{parse_macro_input, ItemFn};

/// Runs one test body once per dispatcher kind: expands `fn name` into a
/// module `name` with the tests `work_stealing` and `app_runtime`, each
/// of which waits for the other to finish, then sets the kind under test
/// for its thread before the body runs.
#[proc_macro_attribute]
pub fn each_dispatcher(args: TokenStream, item: TokenStream) -> TokenStream {
    if !args.is_empty() {
        return syn::Error::new(
            proc_macro2::Span::call_site(),
            "#[each_dispatcher] takes no arguments",
        )
        .to_compile_error()
        .into();
    }
    let test = parse_macro_input!(item as ItemFn);
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = test;
    let name = &sig.ident;
    let kinds = [
        (quote!(work_stealing), quote!(WorkStealing)),
        (quote!(app_runtime), quote!(AppRuntime)),
    ];
    let copies = kinds.iter().map(|(fn_name, kind)| {
        let mut sig = sig.clone();
        sig.ident = syn::parse2(fn_name.clone()).expect("an identifier");
        quote! {
            #(#attrs)*
            pub(super) #sig {
                let _kind = ::volley_testkit::DispatcherUnderTest::set_taking_turns(
                    ::volley::DispatcherKind::#kind,
                    &TURN,
                );
                #block
            }
        }
    });
    quote! {
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;
            /// The copies share names and ports: one runs at a time.
            static TURN: ::std::sync::Mutex<()> = ::std::sync::Mutex::new(());
            #(#copies)*
        }
    }
    .into()
}
