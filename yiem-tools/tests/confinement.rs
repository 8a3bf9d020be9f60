//! Attacks on the root directory of the file tools: a directory swapped with a symlink that leads out
//! while calls run (`renameat2(RENAME_EXCHANGE)`), FIFOs and sockets where a file is expected, numbers
//! from the model at the edge of their type, and the modes of written files.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use yiem_core::{
    store::ToolStore,
    tool::{AgentToolResult, IntoToolResult, State},
};
use yiem_tools::edit::{EditArgs, edit};
use yiem_tools::grep::{GrepArgs, grep};
use yiem_tools::ls::{LsArgs, ls};
use yiem_tools::read::{ReadArgs, read};
use yiem_tools::write::{WriteArgs, write};
use yiem_tools::{ToolRoot, file_tools};

/// Calls a file tool's function as written, in `root`, without a store: the race below makes thousands
/// of calls and wants nothing else in the way.
fn direct<A, R: IntoToolResult>(
    tool: fn(State<ToolRoot>, A) -> R,
    root: &ToolRoot,
    args: A,
) -> AgentToolResult {
    tool(State(Arc::new(root.clone())), args).into_tool_result()
}

/// Every path under `dir` (recursively, symlinks not followed).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        let Ok(entries) = fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out
}

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).unwrap()
}

/// Swaps `a` and `b` atomically (both names keep existing throughout).
fn exchange(a: &CString, b: &CString) -> bool {
    // SAFETY: both pointers are valid NUL-terminated strings that outlive the call.
    unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        ) == 0
    }
}

#[test]
fn a_directory_swapped_with_a_symlink_out_never_lets_a_call_through() {
    let base = tempfile::tempdir().unwrap();
    let root_path = base.path().join("root");
    let outside = base.path().join("outside");
    fs::create_dir_all(root_path.join("race")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(root_path.join("race/secret.txt"), "inside\n").unwrap();
    fs::write(outside.join("secret.txt"), "OUTSIDE\n").unwrap();
    fs::write(outside.join("only-outside.txt"), "OUTSIDE\n").unwrap();
    std::os::unix::fs::symlink("../outside", root_path.join("swap")).unwrap();
    let outside_before: BTreeSet<PathBuf> = walk(&outside).into_iter().collect();
    let root = ToolRoot::new(&root_path).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, swaps) = (stop.clone(), swaps.clone());
        let (a, b) = (
            c_path(&root_path.join("race")),
            c_path(&root_path.join("swap")),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if !exchange(&a, &b) {
                    return Err(std::io::Error::last_os_error());
                }
                swaps.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })
    };
    while swaps.load(Ordering::Relaxed) < 2 {
        std::thread::yield_now();
    }

    let (mut allowed, mut refused, mut written) = (0u64, 0u64, BTreeSet::new());
    let mut call = 0u64;
    // At least 3000 calls, and on until both outcomes were seen (the swap loop runs throughout).
    while call < 3000 || allowed == 0 || refused == 0 {
        assert!(call < 200_000, "the swap never raced a call");
        let result: AgentToolResult = match call % 4 {
            0 => direct(
                read,
                &root,
                ReadArgs {
                    path: "race/secret.txt".into(),
                    offset: None,
                    limit: None,
                },
            ),
            1 => direct(
                ls,
                &root,
                LsArgs {
                    path: Some("race".into()),
                    limit: None,
                },
            ),
            2 => {
                let name = format!("race/new-{call}.txt");
                let result = direct(
                    write,
                    &root,
                    WriteArgs {
                        path: name.clone(),
                        content: "written\n".into(),
                    },
                );
                if !result.is_error {
                    written.insert(format!("new-{call}.txt"));
                }
                result
            }
            _ => direct(
                grep,
                &root,
                GrepArgs {
                    pattern: "OUTSIDE|inside".into(),
                    path: Some("race".into()),
                    glob: None,
                    ignore_case: false,
                    limit: None,
                },
            ),
        };
        let text = result.text_content();
        assert!(
            !text.contains("OUTSIDE"),
            "call {call} read outside: {text}"
        );
        assert!(
            !text.contains("only-outside"),
            "call {call} listed outside: {text}"
        );
        if result.is_error {
            assert!(
                text.contains("outside the root directory") || text.contains("does not exist"),
                "call {call}: unexpected refusal: {text}"
            );
            refused += 1;
        } else {
            allowed += 1;
        }
        call += 1;
    }
    stop.store(true, Ordering::Relaxed);
    swapper
        .join()
        .unwrap()
        .expect("renameat2(RENAME_EXCHANGE) works here");

    let outside_after: BTreeSet<PathBuf> = walk(&outside).into_iter().collect();
    assert_eq!(outside_after, outside_before, "files were created outside");
    assert_eq!(
        fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "OUTSIDE\n"
    );
    let strays: Vec<PathBuf> = walk(base.path())
        .into_iter()
        .filter(|path| path.to_string_lossy().contains("yiem-tmp"))
        .collect();
    assert!(strays.is_empty(), "stray temporary files: {strays:?}");
    // Every write that reported success is inside the root (in the real directory, whatever its name now).
    let real = if root_path.join("race").is_symlink() {
        root_path.join("swap")
    } else {
        root_path.join("race")
    };
    let landed: BTreeSet<String> = fs::read_dir(&real)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("new-"))
        .collect();
    assert_eq!(landed, written);
    eprintln!(
        "{call} calls, {allowed} allowed, {refused} refused, {} swaps",
        swaps.load(Ordering::Relaxed)
    );
}

// ---- files that never end ----------------------------------------------------------------------

struct Root {
    dir: tempfile::TempDir,
    store: ToolStore,
}

impl Root {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = ToolStore::new("root").with_state(ToolRoot::new(dir.path()).unwrap());
        for tool in file_tools() {
            store.register(tool).unwrap();
        }
        Root { dir, store }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn fifo(&self, name: &str) {
        let path = c_path(&self.path().join(name));
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
    }

    /// Calls `name`; a hang fails the test instead of stalling it (the bound is generous, not a timing).
    async fn call(&self, name: &str, args: Value) -> AgentToolResult {
        assert!(self.store.contains(name), "no tool `{name}`");
        tokio::time::timeout(
            Duration::from_secs(60),
            self.store.execute("c1", name, args),
        )
        .await
        .unwrap_or_else(|_| panic!("`{name}` hung"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_file_tool_refuses_a_fifo_instead_of_hanging() {
    let root = Root::new();
    root.fifo("pipe");
    let expected = |tool: &str| {
        format!(
            "tool `{tool}`: `pipe` is a FIFO (named pipe), not a regular file; `{tool}` works on regular files only"
        )
    };
    for (tool, args) in [
        ("read", json!({"path": "pipe"})),
        ("grep", json!({"pattern": "x", "path": "pipe"})),
        (
            "edit",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        ),
        ("write", json!({"path": "pipe", "content": "x"})),
    ] {
        let result = root.call(tool, args).await;
        assert!(result.is_error, "{tool}: {}", result.text_content());
        assert_eq!(result.text_content(), expected(tool));
    }
    let kind = fs::symlink_metadata(root.path().join("pipe"))
        .unwrap()
        .file_type();
    assert!(
        std::os::unix::fs::FileTypeExt::is_fifo(&kind),
        "write replaced the FIFO"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_and_ls_of_a_directory_pass_over_a_fifo_and_a_socket() {
    let root = Root::new();
    root.fifo("pipe");
    let _socket = std::os::unix::net::UnixListener::bind(root.path().join("sock")).unwrap();
    fs::write(root.path().join("a.txt"), "needle\n").unwrap();
    let result = root.call("grep", json!({"pattern": "needle"})).await;
    assert_eq!(result.text_content(), "a.txt:1: needle");
    let listing = root.call("ls", json!({})).await;
    assert_eq!(listing.text_content(), "a.txt\npipe\nsock");
    let refused = root.call("read", json!({"path": "sock"})).await;
    assert_eq!(
        refused.text_content(),
        "tool `read`: `sock` is a socket, not a regular file; `read` works on regular files only"
    );
}

#[test]
fn every_file_tool_has_a_time_limit() {
    for tool in file_tools().iter().filter(|tool| tool.name() != "bash") {
        assert!(
            tool.timeout().is_some(),
            "`{}` has no time limit",
            tool.name()
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let store = ToolStore::new("limits")
        .with_state(ToolRoot::new(dir.path()).unwrap())
        .with_state(yiem_tools::ToolsDir::new(dir.path()));
    yiem_core::store::register_all_tools(&store).unwrap();
    for name in ["read", "write", "edit", "ls", "grep"] {
        let tool = store.get(name).unwrap();
        assert!(
            tool.timeout().is_some(),
            "registered `{name}` has no time limit"
        );
    }
}

yiem_core::link_tools!(yiem_tools);

// ---- numbers from the model ---------------------------------------------------------------------

#[tokio::test]
async fn read_offsets_and_limits_at_the_edge_of_their_type_are_answered_not_panicked() {
    let root = Root::new();
    fs::write(root.path().join("a.txt"), "one\ntwo\n").unwrap();
    let max = u64::MAX;
    let result = root
        .call("read", json!({"path": "a.txt", "offset": max}))
        .await;
    assert_eq!(
        result.text_content(),
        format!(
            "tool `read`: offset {max} is past the end of `a.txt`, which has 2 lines; use an offset from 1 to 2"
        )
    );
    let result = root
        .call("read", json!({"path": "a.txt", "offset": 2, "limit": max}))
        .await;
    assert_eq!(result.text_content(), "     2\ttwo");
    let result = root.call("ls", json!({"path": ".", "limit": max})).await;
    assert_eq!(result.text_content(), "a.txt");
    let result = root
        .call("grep", json!({"pattern": "t", "limit": max}))
        .await;
    assert_eq!(result.text_content(), "a.txt:2: two");
}

// ---- modes -------------------------------------------------------------------------------------

#[tokio::test]
async fn a_new_file_gets_the_umask_mode_and_an_existing_one_keeps_its_mode() {
    let root = Root::new();
    // SAFETY: umask only sets the process's file creation mask.
    let previous = unsafe { libc::umask(0o022) };
    let created = root
        .call("write", json!({"path": "new.txt", "content": "x"}))
        .await;
    assert!(!created.is_error, "{}", created.text_content());
    let mode = |name: &str| {
        fs::metadata(root.path().join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("new.txt"), 0o644);

    fs::write(root.path().join("secret.txt"), "a").unwrap();
    fs::set_permissions(
        root.path().join("secret.txt"),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    root.call("write", json!({"path": "secret.txt", "content": "b"}))
        .await;
    assert_eq!(mode("secret.txt"), 0o600);
    root.call(
        "edit",
        json!({"path": "secret.txt", "old_string": "b", "new_string": "c"}),
    )
    .await;
    assert_eq!(mode("secret.txt"), 0o600);
    assert_eq!(
        fs::read_to_string(root.path().join("secret.txt")).unwrap(),
        "c"
    );
    // SAFETY: as above.
    unsafe { libc::umask(previous) };
}

#[test]
fn edit_through_the_library_refuses_a_fifo_too() {
    let root = Root::new();
    root.fifo("pipe");
    let tool_root = ToolRoot::new(root.path()).unwrap();
    let result = direct(
        edit,
        &tool_root,
        EditArgs {
            path: "pipe".into(),
            old_string: "a".into(),
            new_string: "b".into(),
            replace_all: false,
        },
    );
    assert!(result.is_error);
}
