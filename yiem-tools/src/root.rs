//! [`ToolRoot`]: the directory the file tools and `bash` work in, and the check that keeps every path a
//! model sends inside it.
//!
//! The check only words the refusals: every file is then opened *through a handle on the root directory*
//! (`cap-std`, which uses `openat2(RESOLVE_BENEATH)` where the kernel has it), so a path that is swapped for
//! a symlink between the check and the use is refused by the kernel instead of followed out.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

/// The directory a set of file tools works in: the [`State`](yiem_core::tool::State) of a store that holds the
/// file tools and `bash`, so each store (each agent) can have its own. Every path a model sends is resolved against it and
/// refused when it leads outside: through `..`, as an absolute path elsewhere, or through a symlink.
///
/// The root is canonical (symlinks resolved), so two roots that name the same directory compare equal.
///
/// ```
/// use yiem_tools::ToolRoot;
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("notes.txt"), "hi").unwrap();
/// let root = ToolRoot::new(dir.path()).unwrap();
///
/// let inside = root.resolve("read", "notes.txt").unwrap();
/// assert_eq!(std::fs::read_to_string(inside).unwrap(), "hi");
///
/// let refused = root.resolve("read", "../secret.txt").unwrap_err();
/// assert!(refused.starts_with("tool `read`: path `../secret.txt` is outside the root directory"));
/// ```
#[derive(Clone)]
pub struct ToolRoot {
    path: Arc<Path>,
    /// The root directory itself, opened once: every file tool resolves paths beneath this handle.
    dir: Arc<Dir>,
}

impl PartialEq for ToolRoot {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

impl Eq for ToolRoot {}

impl Hash for ToolRoot {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.path.hash(state);
    }
}

/// A path the model sent, checked against the root: what to open beneath the root's handle, and how to
/// name it to the model.
#[derive(Clone, Debug)]
pub(crate) struct Located {
    /// Relative to the root, without `.` or `..`; `.` for the root itself.
    pub rel: PathBuf,
    /// The path as the model should see it (relative to the root, `.` for the root).
    pub shown: String,
    /// What the model sent.
    pub requested: String,
}

impl ToolRoot {
    /// A root at `path`, which must be an existing directory.
    pub fn new(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        let canonical = path.canonicalize().map_err(|error| {
            io::Error::new(
                error.kind(),
                format!("root directory `{}`: {error}", path.display()),
            )
        })?;
        if !canonical.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("root directory `{}` is not a directory", path.display()),
            ));
        }
        let dir = Dir::open_ambient_dir(&canonical, ambient_authority()).map_err(|error| {
            io::Error::new(
                error.kind(),
                format!("root directory `{}`: {error}", path.display()),
            )
        })?;
        Ok(ToolRoot {
            path: canonical.into(),
            dir: Arc::new(dir),
        })
    }

    /// The handle on the root directory that every file tool opens paths beneath.
    pub(crate) fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Checks `requested` for `tool` (see [`resolve`](Self::resolve)) and returns what to open beneath
    /// the root's handle.
    pub(crate) fn locate(&self, tool: &str, requested: &str) -> Result<Located, String> {
        let resolved = self.resolve(tool, requested)?;
        let rel = match resolved.strip_prefix(&self.path) {
            Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
            Ok(rel) => rel.to_path_buf(),
            Err(_) => {
                return Err(format!(
                    "tool `{tool}`: path `{requested}` is outside the root directory `{}`",
                    self.path.display()
                ));
            }
        };
        Ok(Located {
            shown: self.display(&resolved),
            rel,
            requested: requested.to_owned(),
        })
    }

    /// The refusal for `located` when opening it beneath the root failed because a symlink led out (the
    /// path changed after it was checked): the same words as [`resolve`](Self::resolve)'s.
    pub(crate) fn escaped(&self, tool: &str, located: &Located) -> String {
        format!(
            "tool `{tool}`: path `{}` goes through a symlink that leads outside the root directory `{}`; only files inside the root can be used",
            located.requested,
            self.path.display()
        )
    }

    /// The current directory as a root.
    ///
    /// ```
    /// let root = yiem_tools::ToolRoot::current_dir().unwrap();
    /// assert!(root.path().is_absolute());
    /// ```
    pub fn current_dir() -> io::Result<Self> {
        std::env::current_dir().and_then(ToolRoot::new)
    }

    /// The canonical path of the root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Resolves `requested` (relative to the root, or absolute) for `tool`, following symlinks, and
    /// refuses it with a message for the model when it leads outside the root. The path need not exist;
    /// its existing part is what symlinks are resolved in.
    pub fn resolve(&self, tool: &str, requested: &str) -> Result<PathBuf, String> {
        if requested.trim().is_empty() {
            return Err(format!(
                "tool `{tool}`: the path is empty; give a path relative to the root directory, e.g. `src/main.rs` (or `.` for the root itself)"
            ));
        }
        let joined = self.path.join(requested);
        let lexical = normalize(&joined);
        let resolved = resolve_symlinks(&lexical).map_err(|detail| {
            format!("tool `{tool}`: path `{requested}` cannot be resolved: {detail}")
        })?;
        if resolved.starts_with(&self.path) {
            return Ok(resolved);
        }
        let root = self.path.display();
        if lexical.starts_with(&self.path) {
            Err(format!(
                "tool `{tool}`: path `{requested}` goes through a symlink that leads outside the root directory `{root}`; only files inside the root can be used"
            ))
        } else {
            Err(format!(
                "tool `{tool}`: path `{requested}` is outside the root directory `{root}`; use a path inside it, relative to the root (e.g. `src/main.rs`)"
            ))
        }
    }

    /// `path` (inside the root) as the model should see it: relative to the root, `.` for the root.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let root = yiem_tools::ToolRoot::new(dir.path()).unwrap();
    /// assert_eq!(root.display(&root.path().join("a/b.txt")), "a/b.txt");
    /// assert_eq!(root.display(root.path()), ".");
    /// ```
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.path) {
            Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
            Ok(relative) => relative.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

impl fmt::Debug for ToolRoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ToolRoot").field(&self.path).finish()
    }
}

/// Removes `.` and resolves `..` without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Follows the symlinks in the existing part of `path` (absolute and normalized); the part that does not
/// exist yet is appended as it is.
fn resolve_symlinks(path: &Path) -> Result<PathBuf, String> {
    let mut existing = path;
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(existing).is_err() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => break,
        }
    }
    let mut resolved = existing.canonicalize().map_err(|error| {
        format!(
            "`{}` is a symlink to nowhere or in a loop ({error})",
            existing.display()
        )
    })?;
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_drops_dots_and_applies_parents() {
        assert_eq!(normalize(Path::new("/r/a/./b/../c")), Path::new("/r/a/c"));
        assert_eq!(normalize(Path::new("/r/../../x")), Path::new("/x"));
    }
}
