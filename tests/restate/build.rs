//! Makes every Rust snippet of the workspace's README.md a doctest of this crate (the `readme` module), so
//! the README's code compiles or CI is red (issue 29). A snippet that is a whole program (it has a `main`)
//! is taken as it is; a fragment gets the set-up it needs from `SETUP` below, as hidden lines — so
//! README.md itself shows only what a reader needs, and GitHub shows no `# ` lines. Fragments are compiled,
//! not run (`no_run`): they talk to models, servers and files.
//!
//! This crate is the one that can: its dependencies include yiem-core with every feature (through
//! yiem-tests), yiem-restate and restate-sdk.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// Each fragment of the README, by its first line: what comes before it and after it. The README shows
/// only whole programs today, so there is none; a fragment added to it needs its set-up here.
const SETUP: &[(&str, &str, &str)] = &[];

fn main() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    println!("cargo:rerun-if-changed={}", readme.display());
    println!("cargo:rerun-if-changed=build.rs");
    let text = fs::read_to_string(&readme).expect("README.md at the workspace's root");
    let mut doctests = String::new();
    let mut snippet: Option<Vec<&str>> = None;
    for line in text.lines() {
        match (&mut snippet, line) {
            (None, "```rust") => snippet = Some(Vec::new()),
            (Some(lines), "```") => {
                doctests.push_str(&doctest(lines));
                snippet = None;
            }
            (Some(lines), line) => lines.push(line),
            (None, _) => {}
        }
    }
    let out = Path::new(&env::var("OUT_DIR").expect("OUT_DIR")).join("readme.md");
    fs::write(out, doctests).expect("the doctests written");
}

/// One snippet as a doctest.
fn doctest(lines: &[&str]) -> String {
    let first = lines.first().copied().unwrap_or_default();
    let whole = lines
        .iter()
        .any(|line| line.starts_with("fn main") || line.starts_with("async fn main"));
    // A whole program runs in a crate of its own: merged with the others, its `register_all_tools` would
    // find their tools too.
    if whole {
        return format!("```rust,standalone_crate\n{}\n```\n\n", lines.join("\n"));
    }
    let Some((_, before, after)) = SETUP.iter().find(|(head, _, _)| *head == first) else {
        panic!(
            "README.md has a Rust snippet that is not a whole program and has no set-up: add one for \
             `{first}` to SETUP in tests/restate/build.rs"
        );
    };
    let mut text = String::from("```rust,no_run\n");
    for line in before.lines() {
        let _ = writeln!(text, "# {line}");
    }
    for line in lines {
        let _ = writeln!(text, "{line}");
    }
    for line in after.lines() {
        let _ = writeln!(text, "# {line}");
    }
    text.push_str("```\n\n");
    text
}
