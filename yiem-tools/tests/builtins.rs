//! The built-in tools as registered: names, labels, modes, MCP hints, the process default root, and
//! `get_time`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;
use yiem_core::{ExecutionMode, ToolAnnotations, ToolStore, register_all_tools};
use yiem_tools::tools::get_time::time_at;

yiem_core::link_tools!(yiem_tools);

#[test]
fn register_all_tools_finds_every_builtin() {
    let mut store = ToolStore::new("builtins");
    let names = register_all_tools(&mut store).unwrap();
    assert_eq!(
        names,
        [
            "bash",
            "edit",
            "get_time",
            "grep",
            "list_tools",
            "ls",
            "read",
            "write",
            "write_tool"
        ]
    );
}

#[test]
fn labels_modes_and_hints_are_set_truthfully() {
    let mut store = ToolStore::new("builtins");
    register_all_tools(&mut store).unwrap();
    let hints = |read_only, destructive, idempotent, open_world| ToolAnnotations {
        read_only,
        destructive,
        idempotent,
        open_world,
    };
    let expected = [
        (
            "bash",
            "Run Shell Command",
            ExecutionMode::Sequential,
            hints(None, Some(true), None, Some(true)),
        ),
        (
            "edit",
            "Edit File",
            ExecutionMode::Sequential,
            hints(None, Some(true), None, Some(false)),
        ),
        (
            "get_time",
            "Time Lookup",
            ExecutionMode::Parallel,
            hints(Some(true), None, None, Some(false)),
        ),
        (
            "grep",
            "Search Files",
            ExecutionMode::Parallel,
            hints(Some(true), None, Some(true), Some(false)),
        ),
        (
            "ls",
            "List Directory",
            ExecutionMode::Parallel,
            hints(Some(true), None, Some(true), Some(false)),
        ),
        (
            "read",
            "Read File",
            ExecutionMode::Parallel,
            hints(Some(true), None, Some(true), Some(false)),
        ),
        (
            "write",
            "Write File",
            ExecutionMode::Sequential,
            hints(None, Some(true), Some(true), Some(false)),
        ),
        (
            "write_tool",
            "Write Tool",
            ExecutionMode::Sequential,
            hints(None, Some(false), None, Some(false)),
        ),
    ];
    for (name, label, mode, annotations) in expected {
        let tool = store.get(name).unwrap();
        assert_eq!(tool.label(), label, "{name}");
        assert_eq!(tool.execution_mode(), mode, "{name}");
        assert_eq!(*tool.annotations(), annotations, "{name}");
    }
}

#[test]
fn list_tools_lists_the_builtins() {
    let mut store = ToolStore::new("builtins");
    register_all_tools(&mut store).unwrap();
    let listing = block_on(store.get("list_tools").unwrap().execute("c", json!({})));
    let text = listing.text_content();
    assert!(
        text.starts_with("Available tools:\n- bash: Run Shell Command — "),
        "{text}"
    );
    assert!(
        text.contains("\n- get_time: Time Lookup — Get the current date and time"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 10);
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// The only test that touches the process default root, so no other test races it.
#[tokio::test]
async fn registered_file_tools_use_the_default_root() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("note.txt"), "from the default root").unwrap();
    yiem_tools::set_default_root(dir.path()).unwrap();
    let mut store = ToolStore::new("builtins");
    register_all_tools(&mut store).unwrap();

    let read = store.get("read").unwrap();
    let result = read.execute("c", json!({"path": "note.txt"})).await;
    assert_eq!(result.text_content(), "     1\tfrom the default root");

    let write = store.get("write").unwrap();
    write
        .execute("c", json!({"path": "out/new.txt", "content": "x"}))
        .await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/new.txt")).unwrap(),
        "x"
    );

    let bash = store.get("bash").unwrap();
    let pwd = bash.execute("c", json!({"command": "pwd"})).await;
    assert_eq!(
        pwd.text_content(),
        format!("{}\n", dir.path().canonicalize().unwrap().display())
    );

    let refused = read.execute("c", json!({"path": "/etc/hostname"})).await;
    assert!(refused.is_error);
    assert!(
        refused
            .text_content()
            .contains("is outside the root directory")
    );

    let missing = yiem_tools::set_default_root(dir.path().join("nope")).unwrap_err();
    assert!(
        missing.to_string().starts_with("root directory `"),
        "{missing}"
    );
}

#[test]
fn get_time_formats_an_instant_in_a_time_zone() {
    let at = "2025-01-15T12:00:00Z".parse().unwrap();
    let tokyo = time_at(at, "Asia/Tokyo");
    assert_eq!(
        tokyo.text_content(),
        "2025-01-15 21:00:00 JST (UTC+09:00), Wednesday, in Asia/Tokyo"
    );
    assert_eq!(
        tokyo.details,
        json!({"timezone": "Asia/Tokyo", "iso8601": "2025-01-15T21:00:00+09:00[Asia/Tokyo]", "unix_seconds": 1736942400})
    );
    let new_york = time_at(at, "America/New_York");
    assert_eq!(
        new_york.text_content(),
        "2025-01-15 07:00:00 EST (UTC-05:00), Wednesday, in America/New_York"
    );
}

#[test]
fn get_time_refuses_an_unknown_zone() {
    let result = time_at("2025-01-15T12:00:00Z".parse().unwrap(), "Mars/Olympus_Mons");
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "tool `get_time`: `Mars/Olympus_Mons` is not an IANA time zone; use a name such as `Asia/Tokyo`, `America/New_York`, `Europe/Paris` or `UTC`"
    );
}

#[tokio::test]
async fn get_time_answers_now_in_utc_by_default() {
    let tool = yiem_tools::tools::get_time::get_time_tool();
    let before = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let result = tool.execute("c", json!({})).await;
    let after = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let seconds = result.details["unix_seconds"].as_i64().unwrap();
    assert!((before..=after).contains(&seconds));
    assert_eq!(result.details["timezone"], "UTC");
    assert!(
        result.text_content().contains(" UTC (UTC+00:00), "),
        "{}",
        result.text_content()
    );
}
