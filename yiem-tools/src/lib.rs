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
//! | `write` | creates or replaces a file, atomically, creating parent directories | destructive |
//! | `edit` | exact-string replacement, once (or `replace_all`); unified diff in the details | destructive |
//! | `ls` | the entries of a directory | read-only |
//! | `grep` | regular-expression search over files | read-only |
//! | `bash` | a shell command in an OS sandbox (bubblewrap, else Landlock + seccomp; refused unconfined unless opted in), with a timeout; streams output; every process it started dies with the call | destructive |
//! | `get_time` | the time in an IANA time zone | read-only |
//! | `write_tool` | checks a new `#[tool]` compiles, then writes it into the tools directory, compiled in by the next build | |
//! | `list_tools` | the tools of the store (from `yiem-core`, added by `register_all_tools`) | read-only |
//!
//! Every file tool opens paths beneath a handle on its root (cap-std), so no path, `..` or symlink swapped
//! in mid-call reaches outside it. Unix only (Linux, macOS); on macOS `bash` has no sandbox and refuses to
//! run unless the unconfined shell is opted into.
//!
//! Linking this crate registers them all, so [`register_all_tools`](yiem_core::register_all_tools) finds
//! them:
//!
//! ```
//! use yiem_core::{ToolStore, register_all_tools};
//! yiem_core::link_tools!(yiem_tools);
//!
//! let mut store = ToolStore::new("agent");
//! let names = register_all_tools(&mut store).unwrap();
//! for builtin in ["bash", "edit", "get_time", "grep", "list_tools", "ls", "read", "write", "write_tool"] {
//!     assert!(names.iter().any(|name| name == builtin), "{builtin}");
//! }
//! ```
//!
//! ## The root directory
//!
//! Every file tool (and `bash`, which runs there) works inside a root directory. A path that leads outside
//! it — through `..`, as an absolute path elsewhere, or through a symlink — is refused with an error that
//! says so. Two ways to choose the root:
//!
//! - The registered tools use the process's default root: [`set_default_root`] (the CLI's `--root`), else
//!   the current directory at the time of the call.
//! - [`file_tools`] builds the same tools bound to a root of their own, for several agents with different
//!   roots in one process.
//!
//! ## Tools written at run time
//!
//! `write_tool` writes a new tool as a `.rs` file into `src/tools/` (see [`write_tool`]); `build.rs` makes
//! every file there a module of [`tools`], so the next `cargo build` compiles it in with no edit to any other
//! file, and `register_all_tools` finds it.

#![warn(missing_docs)]

mod atomic;
pub mod bash;
mod confined;
pub mod edit;
pub mod grep;
pub mod ls;
pub mod read;
mod root;
mod rooted;
pub mod sandbox;
pub mod truncate;
pub mod write;
pub mod write_tool;

pub use atomic::write_atomically;
pub use root::{ToolRoot, set_default_root};
pub use rooted::file_tools;
pub use sandbox::{HostFiles, SandboxKind, ShellPolicy, set_default_shell_policy};
pub use write_tool::set_default_tools_dir;

/// The tools found in the tools directory at build time, one module per file (see `build.rs`); `get_time`
/// is the one that ships, and `write_tool` adds more.
pub mod tools {
    include!(concat!(env!("OUT_DIR"), "/discovered_tools.rs"));
}
