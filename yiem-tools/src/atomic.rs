//! Atomic file writes: the content goes to a temporary file beside the target, is flushed to disk, then
//! renamed over the target, so a reader (or a crash) sees the old file or the new one, never a torn one.

use std::io;
use std::path::Path;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

/// Writes `content` to `path` atomically, creating missing parent directories. A new file gets the mode
/// the umask gives (0644 under 022); an existing file keeps its mode.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("deep/er/file.txt");
/// yiem_tools::write_atomically(&path, b"hello").unwrap();
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello");
/// ```
pub fn write_atomically(path: &Path, content: &[u8]) -> io::Result<()> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` names no file", path.display()),
        )
    })?;
    std::fs::create_dir_all(parent)?;
    let dir = Dir::open_ambient_dir(parent, ambient_authority())?;
    crate::confined::write_atomically_beneath(&dir, Path::new(name), content)
}
