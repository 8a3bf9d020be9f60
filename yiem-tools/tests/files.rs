//! The file tools (`read`, `write`, `edit`, `ls`, `grep`) on real temporary directories, through the tools
//! a model calls (`file_tools()` in a store whose state is the root), and every refusal.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};
use yiem_core::{
    store::ToolStore,
    tool::{AgentToolResult, Content},
};
use yiem_tools::{ToolRoot, file_tools};

struct Sandbox {
    dir: tempfile::TempDir,
    store: ToolStore,
}

impl Sandbox {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = ToolStore::new("files").with_state(ToolRoot::new(dir.path()).unwrap());
        for tool in file_tools() {
            store.register(tool).unwrap();
        }
        Sandbox { dir, store }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn put(&self, relative: &str, content: &str) {
        let path = self.path().join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn get(&self, relative: &str) -> String {
        fs::read_to_string(self.path().join(relative)).unwrap()
    }

    async fn call(&self, name: &str, args: Value) -> AgentToolResult {
        assert!(self.store.contains(name), "no tool `{name}`");
        self.store.execute("call-1", name, args).await
    }

    async fn ok(&self, name: &str, args: Value) -> AgentToolResult {
        let result = self.call(name, args).await;
        assert!(!result.is_error, "{}", result.text_content());
        result
    }

    async fn refused(&self, name: &str, args: Value) -> String {
        let result = self.call(name, args).await;
        assert!(
            result.is_error,
            "expected an error, got {}",
            result.text_content()
        );
        result.text_content()
    }

    fn root(&self) -> String {
        self.path().canonicalize().unwrap().display().to_string()
    }
}

// ---- the root directory -------------------------------------------------------------------------

#[tokio::test]
async fn parent_directory_paths_are_refused() {
    let sandbox = Sandbox::new();
    let root = sandbox.root();
    assert_eq!(
        sandbox
            .refused("read", json!({"path": "../etc/passwd"}))
            .await,
        format!(
            "tool `read`: path `../etc/passwd` is outside the root directory `{root}`; use a path inside it, relative to the root (e.g. `src/main.rs`)"
        )
    );
    assert_eq!(
        sandbox
            .refused("write", json!({"path": "a/../../x.txt", "content": "x"}))
            .await,
        format!(
            "tool `write`: path `a/../../x.txt` is outside the root directory `{root}`; use a path inside it, relative to the root (e.g. `src/main.rs`)"
        )
    );
    assert!(!sandbox.path().parent().unwrap().join("x.txt").exists());
}

#[tokio::test]
async fn absolute_paths_outside_are_refused_and_inside_are_accepted() {
    let sandbox = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let secret = outside.path().join("secret.txt").display().to_string();
    let message = sandbox.refused("read", json!({"path": secret})).await;
    assert_eq!(
        message,
        format!(
            "tool `read`: path `{secret}` is outside the root directory `{}`; use a path inside it, relative to the root (e.g. `src/main.rs`)",
            sandbox.root()
        )
    );

    sandbox.put("inside.txt", "in");
    let inside = sandbox.path().join("inside.txt").display().to_string();
    let result = sandbox.ok("read", json!({"path": inside})).await;
    assert_eq!(result.text_content(), "     1\tin");
}

#[tokio::test]
async fn symlinks_that_lead_out_are_refused_for_reading_and_writing() {
    let sandbox = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(outside.path(), sandbox.path().join("escape")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        sandbox.path().join("link.txt"),
    )
    .unwrap();
    let root = sandbox.root();
    let expected = |path: &str, tool: &str| {
        format!(
            "tool `{tool}`: path `{path}` goes through a symlink that leads outside the root directory `{root}`; only files inside the root can be used"
        )
    };
    assert_eq!(
        sandbox
            .refused("read", json!({"path": "escape/secret.txt"}))
            .await,
        expected("escape/secret.txt", "read")
    );
    assert_eq!(
        sandbox.refused("read", json!({"path": "link.txt"})).await,
        expected("link.txt", "read")
    );
    assert_eq!(
        sandbox
            .refused("write", json!({"path": "escape/new.txt", "content": "x"}))
            .await,
        expected("escape/new.txt", "write")
    );
    assert_eq!(
        sandbox
            .refused(
                "edit",
                json!({"path": "link.txt", "old_string": "secret", "new_string": "mine"})
            )
            .await,
        expected("link.txt", "edit")
    );
    assert_eq!(
        sandbox.refused("ls", json!({"path": "escape"})).await,
        expected("escape", "ls")
    );
    assert_eq!(
        sandbox
            .refused("grep", json!({"pattern": "secret", "path": "escape"}))
            .await,
        expected("escape", "grep")
    );
    assert!(!outside.path().join("new.txt").exists());
    assert_eq!(
        fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "secret"
    );
}

#[tokio::test]
async fn a_dangling_symlink_is_refused_rather_than_written_through() {
    let sandbox = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("created-through-link.txt");
    std::os::unix::fs::symlink(&target, sandbox.path().join("dangling")).unwrap();
    let message = sandbox
        .refused("write", json!({"path": "dangling", "content": "x"}))
        .await;
    assert!(
        message.starts_with("tool `write`: path `dangling` cannot be resolved: `"),
        "{message}"
    );
    assert!(
        message.contains("is a symlink to nowhere or in a loop"),
        "{message}"
    );
    assert!(!target.exists());
}

#[tokio::test]
async fn symlinks_that_stay_inside_are_followed() {
    let sandbox = Sandbox::new();
    sandbox.put("real/data.txt", "data");
    std::os::unix::fs::symlink(sandbox.path().join("real"), sandbox.path().join("alias")).unwrap();
    let result = sandbox.ok("read", json!({"path": "alias/data.txt"})).await;
    assert_eq!(result.text_content(), "     1\tdata");
    assert_eq!(result.details()["path"], "real/data.txt");
}

// ---- read ----------------------------------------------------------------------------------------

#[tokio::test]
async fn read_numbers_lines_and_reports_details() {
    let sandbox = Sandbox::new();
    sandbox.put("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    let result = sandbox.ok("read", json!({"path": "src/main.rs"})).await;
    assert_eq!(
        result.text_content(),
        "     1\tfn main() {\n     2\t    println!(\"hi\");\n     3\t}"
    );
    assert_eq!(
        result.details(),
        &json!({"path": "src/main.rs", "start_line": 1, "end_line": 3, "total_lines": 3, "truncated": false})
    );
}

#[tokio::test]
async fn read_offset_and_limit_select_a_window_and_say_how_to_continue() {
    let sandbox = Sandbox::new();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    sandbox.put("ten.txt", &text);
    let result = sandbox
        .ok("read", json!({"path": "ten.txt", "offset": 4, "limit": 3}))
        .await;
    assert_eq!(
        result.text_content(),
        "     4\tline 4\n     5\tline 5\n     6\tline 6\n\n[Showing lines 4-6 of 10. Use offset=7 to continue.]"
    );
    let last = sandbox
        .ok("read", json!({"path": "ten.txt", "offset": 10}))
        .await;
    assert_eq!(last.text_content(), "    10\tline 10");
}

#[tokio::test]
async fn read_stops_at_2000_lines_by_default() {
    let sandbox = Sandbox::new();
    let text: String = (1..=2500).map(|i| format!("{i}\n")).collect();
    sandbox.put("long.txt", &text);
    let result = sandbox.ok("read", json!({"path": "long.txt"})).await;
    let shown = result.text_content();
    assert!(shown.starts_with("     1\t1\n"));
    assert!(
        shown.ends_with(
            "  2000\t2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"
        )
    );
    assert_eq!(result.details()["truncated"], true);
}

#[tokio::test]
async fn read_stops_at_50_kb_and_cuts_very_long_lines() {
    let sandbox = Sandbox::new();
    let line = "x".repeat(1000);
    let text: String = (0..100).map(|_| format!("{line}\n")).collect();
    sandbox.put("wide.txt", &text);
    let result = sandbox.ok("read", json!({"path": "wide.txt"})).await;
    // Each numbered line is 7 + 1000 bytes, plus a newline between lines: 50 fit in 51200 bytes.
    assert!(result.text_content().ends_with(
        "\n\n[Showing lines 1-50 of 100 (the 50 KB limit of one read). Use offset=51 to continue.]"
    ));
    assert_eq!(result.details()["end_line"], 50);

    sandbox.put("one-line.txt", &"y".repeat(2500));
    let cut = sandbox.ok("read", json!({"path": "one-line.txt"})).await;
    assert_eq!(
        cut.text_content(),
        format!(
            "     1\t{}… [line cut: 500 more characters]",
            "y".repeat(2000)
        )
    );
}

#[tokio::test]
async fn read_returns_images_as_image_content() {
    let sandbox = Sandbox::new();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    fs::write(sandbox.path().join("pixel.png"), png).unwrap();
    let result = sandbox.ok("read", json!({"path": "pixel.png"})).await;
    assert_eq!(
        result.content,
        vec![
            Content::text("Image `pixel.png` (image/png, 16 bytes)"),
            Content::image("iVBORw0KGgoAAAANSUhEUg==", "image/png"),
        ]
    );
}

#[tokio::test]
async fn read_refusals_say_what_to_do_instead() {
    let sandbox = Sandbox::new();
    sandbox.put("dir/a.txt", "a\nb\n");
    fs::write(sandbox.path().join("blob.bin"), [1u8, 0, 2, 3]).unwrap();
    assert_eq!(
        sandbox
            .refused("read", json!({"path": "missing.txt"}))
            .await,
        "tool `read`: file `missing.txt` does not exist; use `ls` or `grep` to find the right path"
    );
    assert_eq!(
        sandbox.refused("read", json!({"path": "dir"})).await,
        "tool `read`: `dir` is a directory; use `ls` to list it"
    );
    assert_eq!(
        sandbox.refused("read", json!({"path": "blob.bin"})).await,
        "tool `read`: `blob.bin` is a binary file (4 bytes); `read` shows text files and PNG, JPEG, GIF or WebP images"
    );
    assert_eq!(
        sandbox
            .refused("read", json!({"path": "dir/a.txt", "offset": 3}))
            .await,
        "tool `read`: offset 3 is past the end of `dir/a.txt`, which has 2 lines; use an offset from 1 to 2"
    );
    assert_eq!(
        sandbox
            .refused("read", json!({"path": "dir/a.txt", "offset": 0}))
            .await,
        "tool `read`: `offset` counts lines from 1; use 1 for the first line"
    );
    assert_eq!(
        sandbox.refused("read", json!({"path": ""})).await,
        "tool `read`: the path is empty; give a path relative to the root directory, e.g. `src/main.rs` (or `.` for the root itself)"
    );
}

#[tokio::test]
async fn read_of_an_empty_file_says_so() {
    let sandbox = Sandbox::new();
    sandbox.put("empty.txt", "");
    let result = sandbox.ok("read", json!({"path": "empty.txt"})).await;
    assert_eq!(result.text_content(), "[`empty.txt` is empty]");
}

// ---- write ---------------------------------------------------------------------------------------

#[tokio::test]
async fn write_creates_parents_then_overwrites() {
    let sandbox = Sandbox::new();
    let created = sandbox
        .ok("write", json!({"path": "a/b/c.txt", "content": "first"}))
        .await;
    assert_eq!(created.text_content(), "Created `a/b/c.txt` (5 bytes).");
    assert_eq!(
        created.details(),
        &json!({"path": "a/b/c.txt", "bytes": 5, "created": true})
    );
    let replaced = sandbox
        .ok("write", json!({"path": "a/b/c.txt", "content": "second!"}))
        .await;
    assert_eq!(replaced.text_content(), "Overwrote `a/b/c.txt` (7 bytes).");
    assert_eq!(sandbox.get("a/b/c.txt"), "second!");
}

#[tokio::test]
async fn write_leaves_no_temporary_file_and_keeps_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::new();
    sandbox.put("run.sh", "#!/bin/sh\n");
    fs::set_permissions(
        sandbox.path().join("run.sh"),
        fs::Permissions::from_mode(0o750),
    )
    .unwrap();
    sandbox
        .ok(
            "write",
            json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
        )
        .await;
    let mode = fs::metadata(sandbox.path().join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o750);
    let names: Vec<String> = fs::read_dir(sandbox.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["run.sh"]);
}

#[tokio::test]
async fn write_replaces_by_rename_so_an_open_reader_keeps_the_old_file() {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let sandbox = Sandbox::new();
    sandbox.put("data.txt", "old content");
    let before = fs::metadata(sandbox.path().join("data.txt")).unwrap().ino();
    let mut reader = fs::File::open(sandbox.path().join("data.txt")).unwrap();
    sandbox
        .ok(
            "write",
            json!({"path": "data.txt", "content": "new content"}),
        )
        .await;
    let after = fs::metadata(sandbox.path().join("data.txt")).unwrap().ino();
    assert_ne!(
        before, after,
        "the new content is a new file renamed into place"
    );
    let mut seen = String::new();
    reader.read_to_string(&mut seen).unwrap();
    assert_eq!(seen, "old content");
    assert_eq!(sandbox.get("data.txt"), "new content");
}

#[tokio::test]
async fn write_refuses_a_directory() {
    let sandbox = Sandbox::new();
    fs::create_dir(sandbox.path().join("dir")).unwrap();
    assert_eq!(
        sandbox
            .refused("write", json!({"path": "dir", "content": "x"}))
            .await,
        "tool `write`: `dir` is a directory; give the path of a file inside it"
    );
}

// ---- edit ----------------------------------------------------------------------------------------

#[tokio::test]
async fn edit_replaces_one_occurrence_and_reports_a_unified_diff() {
    let sandbox = Sandbox::new();
    sandbox.put("lib.rs", "a\nb\nc\nd\ne\nf\ng\nh\n");
    let result = sandbox
        .ok(
            "edit",
            json!({"path": "lib.rs", "old_string": "e\n", "new_string": "E\nE2\n"}),
        )
        .await;
    assert_eq!(
        result.text_content(),
        "Replaced 1 occurrence in `lib.rs`; first change at line 5."
    );
    assert_eq!(sandbox.get("lib.rs"), "a\nb\nc\nd\nE\nE2\nf\ng\nh\n");
    assert_eq!(result.details()["replacements"], 1);
    assert_eq!(result.details()["first_changed_line"], 5);
    assert_eq!(
        result.details()["diff"],
        "--- a/lib.rs\n+++ b/lib.rs\n@@ -2,7 +2,8 @@\n b\n c\n d\n-e\n+E\n+E2\n f\n g\n h\n"
    );
}

#[tokio::test]
async fn edit_refuses_an_ambiguous_match_unless_replace_all() {
    let sandbox = Sandbox::new();
    sandbox.put("a.txt", "x = 1\ny = 2\nx = 1\n");
    assert_eq!(
        sandbox
            .refused(
                "edit",
                json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 3"})
            )
            .await,
        "tool `edit`: `old_string` occurs 2 times in `a.txt` (at lines 1, 3); include more surrounding text to make it unique, or set `replace_all` to true"
    );
    assert_eq!(sandbox.get("a.txt"), "x = 1\ny = 2\nx = 1\n");
    let result = sandbox
        .ok(
            "edit",
            json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 3", "replace_all": true}),
        )
        .await;
    assert_eq!(
        result.text_content(),
        "Replaced 2 occurrences in `a.txt`; first change at line 1."
    );
    assert_eq!(sandbox.get("a.txt"), "x = 3\ny = 2\nx = 3\n");
}

#[tokio::test]
async fn edit_refusals_change_nothing() {
    let sandbox = Sandbox::new();
    sandbox.put("a.txt", "hello world\n");
    assert_eq!(
        sandbox
            .refused(
                "edit",
                json!({"path": "a.txt", "old_string": "Hello", "new_string": "Bye"})
            )
            .await,
        "tool `edit`: `old_string` was not found in `a.txt`; `read` the file and copy the text exactly, including whitespace and indentation"
    );
    assert_eq!(
        sandbox
            .refused(
                "edit",
                json!({"path": "a.txt", "old_string": "", "new_string": "x"})
            )
            .await,
        "tool `edit`: `old_string` is empty; give the exact text to replace (to create or overwrite `a.txt` whole, use `write`)"
    );
    assert_eq!(
        sandbox
            .refused(
                "edit",
                json!({"path": "a.txt", "old_string": "hello", "new_string": "hello"})
            )
            .await,
        "tool `edit`: `old_string` and `new_string` are the same, so nothing would change"
    );
    assert_eq!(
        sandbox
            .refused(
                "edit",
                json!({"path": "b.txt", "old_string": "a", "new_string": "b"})
            )
            .await,
        "tool `edit`: file `b.txt` does not exist; create it with `write`"
    );
    assert_eq!(sandbox.get("a.txt"), "hello world\n");
}

// ---- ls ------------------------------------------------------------------------------------------

#[tokio::test]
async fn ls_lists_sorted_with_kinds_marked() {
    let sandbox = Sandbox::new();
    sandbox.put("src/lib.rs", "");
    sandbox.put(".hidden", "");
    sandbox.put("b.txt", "");
    std::os::unix::fs::symlink("b.txt", sandbox.path().join("a-link")).unwrap();
    let result = sandbox.ok("ls", json!({})).await;
    assert_eq!(result.text_content(), ".hidden\na-link@\nb.txt\nsrc/");
    let nested = sandbox.ok("ls", json!({"path": "src"})).await;
    assert_eq!(nested.text_content(), "lib.rs");
}

#[tokio::test]
async fn ls_limit_says_how_many_are_left_out() {
    let sandbox = Sandbox::new();
    for name in ["a", "b", "c", "d"] {
        sandbox.put(name, "");
    }
    let result = sandbox.ok("ls", json!({"limit": 2})).await;
    assert_eq!(
        result.text_content(),
        "a\nb\n\n[Showing 2 of 4 entries. Raise `limit` to see more.]"
    );
}

#[tokio::test]
async fn ls_refusals() {
    let sandbox = Sandbox::new();
    sandbox.put("file.txt", "");
    assert_eq!(
        sandbox.refused("ls", json!({"path": "nope"})).await,
        "tool `ls`: directory `nope` does not exist; list its parent to see what is there"
    );
    assert_eq!(
        sandbox.refused("ls", json!({"path": "file.txt"})).await,
        "tool `ls`: `file.txt` is a file, not a directory; use `read` to see it"
    );
    fs::create_dir(sandbox.path().join("empty")).unwrap();
    assert_eq!(
        sandbox
            .ok("ls", json!({"path": "empty"}))
            .await
            .text_content(),
        "[`empty` is empty]"
    );
}

// ---- grep ----------------------------------------------------------------------------------------

#[tokio::test]
async fn grep_finds_matching_lines_in_name_order() {
    let sandbox = Sandbox::new();
    sandbox.put("src/b.rs", "fn beta() {}\nlet x = 1;\n");
    sandbox.put("src/a.rs", "// nothing\nfn alpha() {}\n");
    sandbox.put("notes.md", "fn in prose\n");
    let result = sandbox.ok("grep", json!({"pattern": r"fn \w+\("})).await;
    assert_eq!(
        result.text_content(),
        "src/a.rs:2: fn alpha() {}\nsrc/b.rs:1: fn beta() {}"
    );
    assert_eq!(
        result.details(),
        &json!({"matches": 2, "files_searched": 3, "truncated": false})
    );
}

#[tokio::test]
async fn grep_glob_ignore_case_and_path_narrow_the_search() {
    let sandbox = Sandbox::new();
    sandbox.put("src/a.rs", "TODO: rust\n");
    sandbox.put("src/a.md", "todo: docs\n");
    sandbox.put("other/c.rs", "todo: other\n");
    let globbed = sandbox
        .ok(
            "grep",
            json!({"pattern": "todo", "glob": "*.rs", "ignore_case": true}),
        )
        .await;
    assert_eq!(
        globbed.text_content(),
        "other/c.rs:1: todo: other\nsrc/a.rs:1: TODO: rust"
    );
    let scoped = sandbox
        .ok("grep", json!({"pattern": "todo", "path": "src"}))
        .await;
    assert_eq!(scoped.text_content(), "src/a.md:1: todo: docs");
    let one_file = sandbox
        .ok("grep", json!({"pattern": "rust", "path": "src/a.rs"}))
        .await;
    assert_eq!(one_file.text_content(), "src/a.rs:1: TODO: rust");
}

#[tokio::test]
async fn grep_skips_git_target_binary_files_and_symlinks() {
    let sandbox = Sandbox::new();
    sandbox.put(".git/config", "needle\n");
    sandbox.put("target/debug/out.txt", "needle\n");
    sandbox.put("real.txt", "needle\n");
    fs::write(sandbox.path().join("blob.bin"), b"needle\0\n").unwrap();
    std::os::unix::fs::symlink("real.txt", sandbox.path().join("link.txt")).unwrap();
    let result = sandbox.ok("grep", json!({"pattern": "needle"})).await;
    assert_eq!(result.text_content(), "real.txt:1: needle");
    let inside_target = sandbox
        .ok("grep", json!({"pattern": "needle", "path": "target"}))
        .await;
    assert_eq!(
        inside_target.text_content(),
        "target/debug/out.txt:1: needle"
    );
}

#[tokio::test]
async fn grep_stops_at_its_limit_and_reports_no_matches_plainly() {
    let sandbox = Sandbox::new();
    sandbox.put("many.txt", "hit\nhit\nhit\n");
    let limited = sandbox
        .ok("grep", json!({"pattern": "hit", "limit": 2}))
        .await;
    assert_eq!(
        limited.text_content(),
        "many.txt:1: hit\nmany.txt:2: hit\n\n[Stopped at 2 matches. Narrow the pattern, the path or the glob, or raise `limit`.]"
    );
    let none = sandbox.ok("grep", json!({"pattern": "miss"})).await;
    assert_eq!(
        none.text_content(),
        "No matches for `miss` in `.` (1 files searched)."
    );
}

#[tokio::test]
async fn grep_refuses_an_invalid_regex() {
    let sandbox = Sandbox::new();
    let message = sandbox.refused("grep", json!({"pattern": "fn (("})).await;
    assert!(
        message.starts_with("tool `grep`: `pattern` is not a valid regular expression: "),
        "{message}"
    );
    assert!(message.ends_with("; escape special characters such as `(` or `.` with `\\`"));
    assert!(!message.contains('\n'));
}

// ---- arguments -----------------------------------------------------------------------------------

#[tokio::test]
async fn rooted_tools_validate_arguments_against_the_schema() {
    let sandbox = Sandbox::new();
    let result = sandbox.call("read", json!({"path": 7})).await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `read`: at `/path`: expected a string, got the number 7\nvalid properties: `path`, `offset`, `limit`"
    );
    let missing = sandbox.call("write", json!({"path": "a.txt"})).await;
    assert_eq!(
        missing.text_content(),
        "invalid arguments for tool `write`: missing required property `content` (expected a string)\nvalid properties: `path`, `content`"
    );
}

#[tokio::test]
async fn read_counts_lines_like_an_editor_whatever_the_line_ends() {
    let sandbox = Sandbox::new();
    sandbox.put("crlf.txt", "a\r\nb\r\nc");
    let result = sandbox
        .ok("read", json!({"path": "crlf.txt", "limit": 1}))
        .await;
    assert_eq!(
        result.text_content(),
        "     1\ta\n\n[Showing lines 1-1 of 3. Use offset=2 to continue.]"
    );
    let rest = sandbox
        .ok("read", json!({"path": "crlf.txt", "offset": 2}))
        .await;
    assert_eq!(rest.text_content(), "     2\tb\n     3\tc");
}

#[tokio::test]
async fn read_of_a_large_file_counts_every_line_past_the_window() {
    let sandbox = Sandbox::new();
    let text: String = (1..=300_000).map(|i| format!("{i}\n")).collect();
    sandbox.put("big.log", &text);
    let result = sandbox
        .ok(
            "read",
            json!({"path": "big.log", "offset": 150000, "limit": 2}),
        )
        .await;
    assert_eq!(
        result.text_content(),
        "150000\t150000\n150001\t150001\n\n[Showing lines 150000-150001 of 300000. Use offset=150002 to continue.]"
    );
}
