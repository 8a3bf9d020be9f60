//! Compile-time behaviour of `#[tool]`: every accepted form compiles and runs, every misuse fails with an
//! error on the user's token that says what to write instead.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/pass/*.rs");
    cases.compile_fail("ui/fail/*.rs");
}
