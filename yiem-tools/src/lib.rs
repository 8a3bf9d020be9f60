//! # yiem-tools
//!
//! Built-in tools for yiem agents, and the `yiem` command-line program.
//!
//! ```toml
//! [dependencies]
//! yiem-tools = { path = "yiem-tools", default-features = false }   # without the CLI's clap
//! ```
//!
//! | tool | what it does | hints |
//! |---|---|---|
//! | `read` | a text file with line numbers (2000 lines / 50 KB per call, `offset`/`limit`), or an image | read-only |
//! | `write` | creates or replaces a file, atomically, creating parent directories | destructive, needs approval |
//! | `edit` | exact-string replacement, once (or `replace_all`); unified diff in the details | destructive, needs approval |
//! | `ls` | the entries of a directory | read-only |
//! | `grep` | regular-expression search over files | read-only |
//! | `bash` | a shell command in an OS sandbox (bubblewrap, else Landlock + seccomp; refused unconfined unless opted in), with a timeout; streams output; every process it started dies with the call | destructive, needs approval |
//! | `get_time` | the time in an IANA time zone | read-only |
//! | `write_tool` | checks a new `#[tool]` compiles, then writes it into the tools directory, compiled in by the next build | needs approval |
//! | `list_tools` | the tools of the store (from `yiem-core`, added by `register_all_tools`) | read-only |
//!
//! A tool that *needs approval* waits for a person before each call wherever a model decides to call it:
//! an [`Agent`](yiem_core::agent::Agent) pauses ([`RunStop::AwaitingApproval`](yiem_core::agent::RunStop)), `yiem chat`
//! asks, `yiem mcp` asks its client (or refuses, unless `--allow`ed), and `yiem tools call` asks on the
//! terminal (from a pipe it refuses, unless `--allow`ed).
//!
//! Every file tool opens paths beneath a handle on its root (cap-std), so no path, `..` or symlink swapped
//! in mid-call reaches outside it. Unix only (Linux, macOS); on macOS `bash` has no sandbox and refuses to
//! run unless the unconfined shell is opted into.
//!
//! Linking this crate registers them all, so [`register_all_tools`](yiem_core::store::register_all_tools) finds
//! them. The file tools and `bash` take their root directory as the store's state (a [`ToolRoot`]), and
//! `write_tool` its directory (a [`ToolsDir`]); a store must hold both before it registers them:
//!
//! ```
//! use yiem_core::store::{ToolStore, register_all_tools};
//! use yiem_tools::{ToolRoot, ToolsDir};
//! yiem_core::link_tools!(yiem_tools);
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = ToolStore::new("agent")
//!     .with_state(ToolRoot::new(dir.path()).unwrap())
//!     .with_state(ToolsDir::new(dir.path()));
//! let names = register_all_tools(&store).unwrap();
//! for builtin in ["bash", "edit", "get_time", "grep", "list_tools", "ls", "read", "write", "write_tool"] {
//!     assert!(names.iter().any(|name| name == builtin), "{builtin}");
//! }
//! ```
//!
//! ## The root directory
//!
//! Every file tool (and `bash`, which runs there) works inside a root directory. A path that leads outside
//! it — through `..`, as an absolute path elsewhere, or through a symlink — is refused with an error that
//! says so. The root is the state of the store the tools are registered in
//! (`ToolStore::new(..).with_state(ToolRoot::new(dir)?)`), so several agents in one process each have their
//! own, with the same typed argument errors; the CLI's `--root` sets the root of its store.
//!
//! ## Tools written at run time
//!
//! `write_tool` writes a new tool as a `.rs` file into `src/tools/` (see [`write_tool`]); `build.rs` makes
//! every file there a module of [`tools`], so the next `cargo build` compiles it in with no edit to any other
//! file, and `register_all_tools` finds it.

#![warn(unreachable_pub, missing_debug_implementations)]
#![warn(missing_docs)]

pub mod bash;
mod confined;
pub mod edit;
pub mod grep;
pub mod ls;
pub mod read;
mod root;
pub mod sandbox;
pub mod truncate;
pub mod write;
pub mod write_tool;

pub use root::ToolRoot;
pub use sandbox::{HostFiles, SandboxKind, ShellPolicy};
pub use write_tool::ToolsDir;

use yiem_core::tool::AgentTool;

/// `bash`, `edit`, `grep`, `ls`, `read` and `write` (sorted by name): the tools that work in a
/// [`ToolRoot`]. Register them into a store that holds the root as its state.
///
/// ```
/// use yiem_core::store::ToolStore;
/// use yiem_tools::{ToolRoot, file_tools};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("hello.txt"), "hi").unwrap();
///
/// let store = ToolStore::new("agent-in-dir").with_state(ToolRoot::new(dir.path()).unwrap());
/// for tool in file_tools() {
///     store.register(tool).unwrap();
/// }
/// assert_eq!(store.names(), ["bash", "edit", "grep", "ls", "read", "write"]);
///
/// let result = store.execute("c1", "read", serde_json::json!({"path": "hello.txt"})).await;
/// assert_eq!(result.text_content(), "     1\thi");
/// let refused = store.execute("c2", "read", serde_json::json!({"path": "../secret"})).await;
/// assert!(refused.text_content().starts_with("tool `read`: path `../secret` is outside the root directory"));
/// # });
/// ```
pub fn file_tools() -> Vec<AgentTool> {
    vec![
        bash::bash_tool(),
        edit::edit_tool(),
        grep::grep_tool(),
        ls::ls_tool(),
        read::read_tool(),
        write::write_tool(),
    ]
}

/// The tools found in the tools directory at build time, one module per file (see `build.rs`); `get_time`
/// is the one that ships, and `write_tool` adds more.
pub mod tools {
    include!(concat!(env!("OUT_DIR"), "/discovered_tools.rs"));
}
