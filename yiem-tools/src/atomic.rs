//! Atomic file writes: the content goes to a temporary file beside the target, is flushed to disk, then
//! renamed over the target, so a reader (or a crash) sees the old file or the new one, never a torn one.

use std::io::{self, Write};
use std::path::Path;

/// Writes `content` to `path` atomically, creating missing parent directories. An existing file keeps its
/// permissions.
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
    std::fs::create_dir_all(parent)?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".yiem-tmp")
        .tempfile_in(parent)?;
    temp.write_all(content)?;
    temp.as_file().sync_all()?;
    if let Ok(existing) = std::fs::metadata(path) {
        temp.as_file().set_permissions(existing.permissions())?;
    }
    temp.persist(path).map_err(|error| error.error)?;
    Ok(())
}
