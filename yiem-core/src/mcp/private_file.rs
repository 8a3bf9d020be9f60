//! Files only their owner may read and write, in a folder only its owner may write: where the OAuth
//! tokens ([`FileTokenStore`](super::oauth::FileTokenStore)) and the tool pins
//! ([`ToolPins::file`](super::ToolPins::file)) are kept.
//!
//! A document is written whole to a fresh temporary file beside it, created exclusively (so a link
//! planted at its name is never followed) with mode 0600, and renamed over it, so a crash never leaves
//! half a document. A folder that others can write (group or other write bit, as `/tmp` has) is refused
//! on read and on write: whoever can write the folder can replace the file or read the next one through
//! a link. yiem never changes the mode of a folder it did not create.

use std::io::Write;
use std::path::Path;

/// The file's folder (`.` for a bare file name).
fn folder(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Refuses a folder that others can write (`what` names the file's kind in the error); a folder that
/// does not exist yet is fine.
fn check_folder(path: &Path, what: &str) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let folder = folder(path);
        let mode = match std::fs::metadata(folder) {
            Ok(metadata) => metadata.permissions().mode(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(error),
        };
        if mode & 0o022 != 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "the folder `{}` of the {what} can be written by others (mode {:o}), who could \
                     replace or read the {what}; keep the {what} in a folder only you can write \
                     (`chmod 700` it, or choose another)",
                    folder.display(),
                    mode & 0o7777
                ),
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = (path, what);
    Ok(())
}

/// The document at `path`, if there is one.
pub(crate) fn read(path: &Path, what: &str) -> std::io::Result<Option<String>> {
    check_folder(path, what)?;
    match std::fs::read_to_string(path) {
        Ok(document) => Ok(Some(document)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Replaces the document at `path` with `document` (its folder is created, owner-only, if missing).
pub(crate) fn write(path: &Path, what: &str, document: &str) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(folder(path))?;
    check_folder(path, what)?;
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(format!(".{}.tmp", std::process::id()));
    let temporary = path.with_file_name(name);
    // `create_new` is O_CREAT|O_EXCL: it fails on any existing entry, a link included, and never
    // follows one. What is there is a leftover (a crash) or was planted: it is removed (the link
    // itself, not what it points to) and the file created afresh, once.
    let create = || {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(&temporary)
    };
    let mut file = match create() {
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(&temporary)?;
            create()?
        }
        opened => opened?,
    };
    let written = file
        .write_all(document.as_bytes())
        .and_then(|()| file.sync_all());
    drop(file);
    if let Err(error) = written.and_then(|()| std::fs::rename(&temporary, path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(error);
    }
    Ok(())
}

/// Removes the document at `path`, if there is one.
#[cfg(feature = "mcp-oauth")]
pub(crate) fn remove(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}
