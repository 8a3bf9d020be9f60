//! Where the credentials live: the [`TokenStore`] trait, the two stores yiem ships, and rmcp's
//! credential store over one.

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};

/// Where one server's OAuth credentials are kept between requests and runs: the client ID, the access
/// and refresh tokens, the granted scopes and the issuer, as one JSON document yiem reads and writes
/// whole. Implement it over a keychain or a secrets service; [`MemoryTokenStore`] and
/// [`FileTokenStore`] come with yiem.
///
/// The methods are called from async code and should return quickly.
pub trait TokenStore: Send + Sync + 'static {
    /// The document last saved, if any.
    fn load(&self) -> std::io::Result<Option<String>>;
    /// Replaces the document.
    fn save(&self, credentials: &str) -> std::io::Result<()>;
    /// Forgets the document.
    fn clear(&self) -> std::io::Result<()>;
}

/// Credentials kept in memory, lost when the process ends (the default). Clones share the document.
#[derive(Clone, Default)]
pub struct MemoryTokenStore {
    document: Arc<Mutex<Option<String>>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryTokenStore").finish_non_exhaustive()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load(&self) -> std::io::Result<Option<String>> {
        Ok(self
            .document
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone())
    }

    fn save(&self, credentials: &str) -> std::io::Result<()> {
        *self.document.lock().unwrap_or_else(|p| p.into_inner()) = Some(credentials.to_owned());
        Ok(())
    }

    fn clear(&self) -> std::io::Result<()> {
        *self.document.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }
}

/// Credentials in one file, readable and writable by its owner only (mode 0600 on Unix), in a folder
/// only its owner can write. A document is written whole to a fresh temporary file beside it, created
/// exclusively (so a link planted at its name is never followed) and renamed over it, so a crash never
/// leaves half a document.
///
/// A folder that others can write (its mode has the group or other write bit, as `/tmp` and a folder
/// made `0777` do) is refused, on load and on save, with an error saying how to fix it: whoever can
/// write the folder can replace the tokens or read the next ones through a link. yiem does not change
/// the mode of a folder it did not create.
#[derive(Clone)]
pub struct FileTokenStore {
    path: PathBuf,
}

impl FileTokenStore {
    /// A store at `path` (its folder is created, owner-only, when the first document is saved).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileTokenStore { path: path.into() }
    }

    /// The file's path.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

impl fmt::Debug for FileTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileTokenStore")
            .field("path", &self.path)
            .finish()
    }
}

impl TokenStore for FileTokenStore {
    fn load(&self) -> std::io::Result<Option<String>> {
        crate::mcp::private_file::read(&self.path, "tokens")
    }

    fn save(&self, credentials: &str) -> std::io::Result<()> {
        crate::mcp::private_file::write(&self.path, "tokens", credentials)
    }

    fn clear(&self) -> std::io::Result<()> {
        crate::mcp::private_file::remove(&self.path)
    }
}

/// rmcp's credential store over a [`TokenStore`].
pub(super) struct StoreAdapter(pub(super) Arc<dyn TokenStore>);

fn store_error(error: std::io::Error) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for StoreAdapter {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(document) = self.0.load().map_err(store_error)? else {
            return Ok(None);
        };
        // A document yiem cannot read (another version's, damaged) means authorizing again.
        Ok(serde_json::from_str(&document).ok())
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let document = serde_json::to_string(&credentials)
            .map_err(|error| AuthError::CredentialStoreError(error.to_string()))?;
        self.0.save(&document).map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.0.clear().map_err(store_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_store_keeps_the_document_readable_by_its_owner_only() {
        let folder = std::env::temp_dir().join(format!("yiem-token-store-{}", std::process::id()));
        let store = FileTokenStore::new(folder.join("servers").join("example.json"));
        assert_eq!(store.load().unwrap(), None);
        store.save(r#"{"client_id":"a"}"#).unwrap();
        store.save(r#"{"client_id":"b"}"#).unwrap();
        assert_eq!(
            store.load().unwrap().as_deref(),
            Some(r#"{"client_id":"b"}"#)
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode =
                |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode();
            assert_eq!(mode(store.path()) & 0o777, 0o600);
            assert_eq!(mode(store.path().parent().unwrap()) & 0o777, 0o700);
        }
        store.clear().unwrap();
        assert_eq!(store.load().unwrap(), None);
        std::fs::remove_dir_all(&folder).unwrap();
    }

    /// A fresh folder under the system's temporary folder, for one test.
    #[cfg(unix)]
    fn scratch(test: &str) -> PathBuf {
        let folder =
            std::env::temp_dir().join(format!("yiem-token-store-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        folder
    }

    #[cfg(unix)]
    #[test]
    fn a_link_planted_at_the_temporary_files_name_is_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let folder = scratch("link");
        let tokens = folder.join("tokens");
        std::fs::create_dir(&tokens).unwrap();
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o700)).unwrap();
        // Someone else's file, readable by all, that a link at the temporary name points to.
        let elsewhere = folder.join("readable-by-all");
        std::fs::write(&elsewhere, "untouched").unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o644)).unwrap();
        let store = FileTokenStore::new(tokens.join("example.json"));
        let planted = tokens.join(format!("example.json.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&elsewhere, &planted).unwrap();
        store.save(r#"{"access_token":"secret"}"#).unwrap();
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "untouched");
        assert_eq!(
            store.load().unwrap().as_deref(),
            Some(r#"{"access_token":"secret"}"#)
        );
        let saved = std::fs::symlink_metadata(store.path()).unwrap();
        assert!(
            saved.file_type().is_file(),
            "the token file is a plain file"
        );
        assert_eq!(saved.permissions().mode() & 0o777, 0o600);
        assert!(!planted.exists() && std::fs::symlink_metadata(&planted).is_err());
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_others_can_write_is_refused_and_nothing_is_written() {
        use std::os::unix::fs::PermissionsExt;
        let folder = scratch("open");
        let tokens = folder.join("tokens");
        std::fs::create_dir(&tokens).unwrap();
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o777)).unwrap();
        let store = FileTokenStore::new(tokens.join("example.json"));
        let error = store.save(r#"{"access_token":"secret"}"#).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::PermissionDenied);
        let message = error.to_string();
        assert!(
            message.contains("can be written by others (mode 777)")
                && message.contains("chmod 700"),
            "{message}"
        );
        assert_eq!(
            std::fs::read_dir(&tokens).unwrap().count(),
            0,
            "nothing written"
        );
        // A document planted there is not read either.
        std::fs::write(store.path(), r#"{"access_token":"planted"}"#).unwrap();
        assert_eq!(
            store.load().unwrap_err().kind(),
            std::io::ErrorKind::PermissionDenied
        );
        // Once the folder is the user's alone, the store works.
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o700)).unwrap();
        store.save(r#"{"access_token":"mine"}"#).unwrap();
        assert_eq!(
            store.load().unwrap().as_deref(),
            Some(r#"{"access_token":"mine"}"#)
        );
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
