//! Opening, reading and writing files *beneath the root's directory handle*: the only way the file tools
//! touch the file system. A symlink swapped in after a path was checked is refused by the kernel
//! (`openat2(RESOLVE_BENEATH)` through `cap-std`), FIFOs, sockets and devices are refused before anything
//! could block on them, and atomic writes create their temporary file in the target's own directory through
//! the same handle.

use std::io::{self, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, File, Metadata, OpenOptions, OpenOptionsExt as _, Permissions};
use cap_std::fs::{FileTypeExt as _, PermissionsExt as _};

use crate::root::{Located, ToolRoot};

/// Why a file could not be opened as a regular file.
pub(crate) enum OpenError {
    /// Nothing at the path.
    NotFound,
    /// A directory.
    Directory,
    /// A FIFO, socket or device: its kind, in words.
    NotRegular(&'static str),
    /// A symlink on the way led outside the root (the path changed after it was checked).
    Escaped,
    /// Anything else.
    Other(io::Error),
}

impl OpenError {
    /// The message for the model: `tool`'s name, the path, and what to do.
    pub(crate) fn message(&self, root: &ToolRoot, tool: &str, located: &Located) -> String {
        let shown = &located.shown;
        match self {
            OpenError::NotFound => format!(
                "tool `{tool}`: file `{shown}` does not exist; use `ls` or `grep` to find the right path"
            ),
            OpenError::Directory => {
                format!("tool `{tool}`: `{shown}` is a directory; use `ls` to list it")
            }
            OpenError::NotRegular(kind) => not_regular(tool, shown, kind),
            OpenError::Escaped => root.escaped(tool, located),
            OpenError::Other(error) => format!("tool `{tool}`: cannot open `{shown}`: {error}"),
        }
    }
}

/// The refusal of a FIFO, socket or device.
pub(crate) fn not_regular(tool: &str, shown: &str, kind: &str) -> String {
    format!(
        "tool `{tool}`: `{shown}` is {kind}, not a regular file; `{tool}` works on regular files only"
    )
}

/// `kind` in words, or `None` for a regular file, a directory or a symlink.
pub(crate) fn special_kind(metadata: &Metadata) -> Option<&'static str> {
    let kind = metadata.file_type();
    if kind.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else {
        None
    }
}

/// Whether `error` is cap-std's refusal of a path that leads outside the directory it was opened beneath.
pub(crate) fn is_escape(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::PermissionDenied
        && error.to_string().contains("led outside of the filesystem")
}

fn classify(error: io::Error) -> OpenError {
    if is_escape(&error) {
        OpenError::Escaped
    } else if error.kind() == io::ErrorKind::NotFound {
        OpenError::NotFound
    } else {
        OpenError::Other(error)
    }
}

/// Opens `rel` beneath `dir` for reading, as a regular file only. The open itself never blocks (a FIFO is
/// opened non-blocking, then refused), and the kind is checked on the opened file, not on the name.
pub(crate) fn open_regular(dir: &Dir, rel: &Path) -> Result<(std::fs::File, Metadata), OpenError> {
    let before = dir.metadata(rel).map_err(classify)?;
    if before.is_dir() {
        return Err(OpenError::Directory);
    }
    if let Some(kind) = special_kind(&before) {
        return Err(OpenError::NotRegular(kind));
    }
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    let file = dir.open_with(rel, &options).map_err(classify)?;
    let metadata = file.metadata().map_err(OpenError::Other)?;
    if metadata.is_dir() {
        return Err(OpenError::Directory);
    }
    if let Some(kind) = special_kind(&metadata) {
        return Err(OpenError::NotRegular(kind));
    }
    let file = file.into_std();
    clear_nonblock(&file);
    Ok((file, metadata))
}

/// Regular files ignore `O_NONBLOCK`; cleared anyway so the descriptor behaves as an ordinary one.
fn clear_nonblock(file: &std::fs::File) {
    use std::os::fd::AsRawFd as _;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own, reading and setting its status flags; no memory is passed.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `content` to `rel` beneath `dir` atomically: a temporary file in the target's own directory
/// (opened through `dir`, so it cannot be elsewhere), flushed, then renamed over the target within that
/// same directory handle. Missing parent directories are created beneath `dir`. A new file gets the mode
/// the umask gives (0644 under 022); an existing file keeps its mode. The temporary file is removed on
/// every failure.
pub(crate) fn write_atomically_beneath(dir: &Dir, rel: &Path, content: &[u8]) -> io::Result<()> {
    let name = rel.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path names no file (it ends in `.` or `..`)",
        )
    })?;
    let parent_rel = match rel.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let parent = match dir.open_dir(parent_rel) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            // Whatever creating fails on, opening again says why (a symlink out is refused there).
            let _ = dir.create_dir_all(parent_rel);
            dir.open_dir(parent_rel)?
        }
        other => other?,
    };
    let existing_mode = match parent.symlink_metadata(name) {
        Ok(metadata) if metadata.is_file() => Some(metadata.permissions().mode()),
        Ok(metadata) if metadata.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "it is a directory",
            ));
        }
        Ok(metadata) => {
            if let Some(kind) = special_kind(&metadata) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("it is {kind}, not a regular file"),
                ));
            }
            None
        }
        Err(_) => None,
    };
    let shown_name = name.to_string_lossy();
    let (temp_name, mut temp) = create_temp(&parent, &shown_name)?;
    let outcome = (|| {
        temp.write_all(content)?;
        if let Some(mode) = existing_mode {
            temp.set_permissions(Permissions::from_mode(mode & 0o7777))?;
        }
        temp.sync_all()?;
        drop(temp);
        parent.rename(&temp_name, &parent, name)
    })();
    if outcome.is_err() {
        let _ = parent.remove_file(&temp_name);
    }
    outcome
}

/// A new, empty temporary file in `parent`, created with mode 0666 less the umask.
fn create_temp(parent: &Dir, name: &str) -> io::Result<(String, File)> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).mode(0o666);
    let mut last = None;
    for _ in 0..16 {
        let serial = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp_name = format!(".{name}.{}.{serial}.yiem-tmp", std::process::id());
        match parent.open_with(&temp_name, &options) {
            Ok(file) => return Ok((temp_name, file)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => last = Some(error),
            Err(error) => return Err(error),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
}
