//! The built-in tools as registered: names, labels, modes, MCP hints, the process default root, and
//! `get_time`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;
use yiem_core::{
    store::{ToolStore, register_all_tools},
    tool::{ExecutionMode, ToolAnnotations},
};
use yiem_tools::tools::get_time::time_at;

yiem_core::link_tools!(yiem_tools);

/// A store with the state the built-in tools need (a root and a tools directory, both a temporary one).
fn empty_store() -> (tempfile::TempDir, ToolStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = ToolStore::new("builtins")
        .with_state(yiem_tools::ToolRoot::new(dir.path()).unwrap())
        .with_state(yiem_tools::ToolsDir::new(dir.path()));
    (dir, store)
}

#[test]
fn register_all_tools_without_a_root_is_refused_naming_the_tool_and_the_type() {
    let store = ToolStore::new("rootless");
    let refused = register_all_tools(&store).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "tool `bash` needs state of type `yiem_tools::root::ToolRoot`, which store `rootless` does not \
         hold: give the store one before registering the tool, `ToolStore::new(\"rootless\").with_state(value)`"
    );
}

#[test]
fn register_all_tools_finds_every_builtin() {
    let (_dir, store) = empty_store();
    let names = register_all_tools(&store).unwrap();
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
    let (_dir, store) = empty_store();
    register_all_tools(&store).unwrap();
    let hints = |read_only, destructive, idempotent, open_world| {
        let mut hints = ToolAnnotations::new();
        hints.read_only = read_only;
        hints.destructive = destructive;
        hints.idempotent = idempotent;
        hints.open_world = open_world;
        hints
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
    let (_dir, store) = empty_store();
    register_all_tools(&store).unwrap();
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

/// The registered tools take their root from the store: two stores with different roots in one process,
/// each with the full typed argument errors.
#[tokio::test]
async fn registered_file_tools_use_the_root_of_their_store() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(one.path().join("note.txt"), "from root one").unwrap();
    std::fs::write(two.path().join("note.txt"), "from root two").unwrap();
    let store = |dir: &std::path::Path| {
        let store = ToolStore::new("rooted")
            .with_state(yiem_tools::ToolRoot::new(dir).unwrap())
            .with_state(yiem_tools::ToolsDir::new(dir));
        register_all_tools(&store).unwrap();
        store
    };
    let (first, second) = (store(one.path()), store(two.path()));

    let read = json!({"path": "note.txt"});
    let result = first.execute("c", "read", read.clone()).await;
    assert_eq!(result.text_content(), "     1\tfrom root one");
    let result = second.execute("c", "read", read).await;
    assert_eq!(result.text_content(), "     1\tfrom root two");

    second
        .execute("c", "write", json!({"path": "out/new.txt", "content": "x"}))
        .await;
    assert_eq!(
        std::fs::read_to_string(two.path().join("out/new.txt")).unwrap(),
        "x"
    );
    assert!(!one.path().join("out").exists());

    let pwd = first.execute("c", "bash", json!({"command": "pwd"})).await;
    if !pwd.is_error {
        assert_eq!(
            pwd.text_content(),
            format!("{}\n", one.path().canonicalize().unwrap().display())
        );
    }

    let refused = first
        .execute("c", "read", json!({"path": "/etc/hostname"}))
        .await;
    assert!(refused.is_error);
    assert!(
        refused
            .text_content()
            .contains("is outside the root directory")
    );

    // The model-facing argument report, not a plain serde message.
    let typo = second
        .execute("c", "read", json!({"pth": "note.txt"}))
        .await;
    assert!(
        typo.text_content().starts_with("invalid arguments for tool `read` (2 problems):\n- at `/pth`: unknown property `pth`; did you mean `path`?"),
        "{}",
        typo.text_content()
    );

    let missing = yiem_tools::ToolRoot::new(one.path().join("nope")).unwrap_err();
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
        tokyo.details(),
        &json!({"timezone": "Asia/Tokyo", "iso8601": "2025-01-15T21:00:00+09:00[Asia/Tokyo]", "unix_seconds": 1736942400})
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
    let seconds = result.details()["unix_seconds"].as_i64().unwrap();
    assert!((before..=after).contains(&seconds));
    assert_eq!(result.details()["timezone"], "UTC");
    assert!(
        result.text_content().contains(" UTC (UTC+00:00), "),
        "{}",
        result.text_content()
    );
}

#[test]
fn the_tools_that_run_commands_or_change_files_need_approval() {
    let (_dir, store) = empty_store();
    register_all_tools(&store).unwrap();
    let asking: Vec<String> = store
        .tools()
        .iter()
        .filter(|tool| tool.needs_approval())
        .map(|tool| tool.name().to_owned())
        .collect();
    assert_eq!(asking, ["bash", "edit", "write", "write_tool"]);
}
