//! The write_tool round trip: `write_tool` writes a new tool into a copy of a small crate whose `build.rs`
//! is yiem-tools' own, `cargo build` compiles it in with no other edit, and `register_all_tools` in the
//! rebuilt program finds it and can call it.
//!
//! The copy is built offline (with this workspace's lock file) into a target directory kept under this
//! test's `CARGO_TARGET_TMPDIR`, so only the first run compiles yiem-core's dependencies.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use yiem_core::store::{ToolStore, register_all_tools};

yiem_core::link_tools!(yiem_tools);

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/roundtrip");

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A copy of the fixture crate, with yiem-tools' build.rs and this workspace's lock file.
fn crate_copy(dir: &Path) {
    let tools_crate = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = tools_crate.parent().unwrap();
    copy_dir(Path::new(FIXTURE), dir);
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml.in"))
        .unwrap()
        .replace(
            "@YIEM_CORE@",
            &workspace.join("yiem-core").display().to_string(),
        );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::remove_file(dir.join("Cargo.toml.in")).unwrap();
    std::fs::copy(tools_crate.join("build.rs"), dir.join("build.rs")).unwrap();
    std::fs::copy(workspace.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
}

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("write-tool-roundtrip")
}

fn cargo_build(dir: &Path) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["build", "--offline", "--quiet"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("YIEM_TOOLS_DIR")
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo build failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn run(args: &[&str]) -> String {
    let output = Command::new(target_dir().join("debug/roundtrip-tools"))
        .args(args)
        .output()
        .expect("the built program runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .trim_end()
        .to_owned()
}

#[tokio::test]
async fn a_tool_written_by_write_tool_is_compiled_in_by_the_next_build() {
    let dir = tempfile::tempdir().unwrap();
    crate_copy(dir.path());
    cargo_build(dir.path());
    assert_eq!(run(&["list"]), "hello,list_tools");

    // The model's path: the registered write_tool, pointed at the copy's tools directory.
    let store = ToolStore::new("author")
        .with_state(yiem_tools::ToolRoot::new(dir.path()).unwrap())
        .with_state(yiem_tools::ToolsDir::new(dir.path().join("src/tools")));
    register_all_tools(&store).unwrap();
    let result = store
        .execute(
            "call-1",
            "write_tool",
            json!({
                "name": "search_wine",
                "label": "Wine Search",
                "description": "Search the wine list.",
                "fields": [
                    {"name": "query", "type": "string", "description": "Words to look for."},
                    {"name": "max", "type": "integer", "required": false}
                ],
                "body": "let max = args.max.unwrap_or(5);\nOk(format!(\"{max} wines for {}\", args.query))",
                "parallel": true
            }),
        )
        .await;
    assert!(!result.is_error, "{}", result.text_content());

    // No other file changes: the next build finds the new file by itself.
    cargo_build(dir.path());
    assert_eq!(run(&["list"]), "hello,list_tools,search_wine");
    assert_eq!(
        run(&["call", "search_wine", r#"{"query": "cabernet"}"#]),
        "5 wines for cabernet"
    );
    assert_eq!(
        run(&["call", "search_wine", r#"{"query": "merlot", "max": 2}"#]),
        "2 wines for merlot"
    );
}
