//! The key `yiem chat` tags saved chats with ([`RunKey`]): `/save` writes the run with its tag, and
//! `/load` and `--resume` check it, so a saved chat edited by hand (or by another user) cannot approve a
//! call for the person: its approvals are asked again. One key per user, kept as hexadecimal digits in
//! `yiem/run-key` under the user's data directory (`$XDG_DATA_HOME`, else `~/.local/share`), readable by
//! the user only (0600, written as the OAuth tokens are), and made from the system's random source the
//! first time it is needed. Without a data directory the key lives as long as the process.

use std::path::PathBuf;
use std::sync::OnceLock;

use yiem_core::agent::RunKey;
use yiem_core::mcp::oauth::{FileTokenStore, TokenStore};

/// The file that keeps the key.
pub(super) fn key_file() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("yiem").join("run-key"))
}

/// The user's key: read from [`key_file`], or made and saved there.
pub(super) fn run_key() -> Result<RunKey, String> {
    let Some(file) = key_file() else {
        static PROCESS: OnceLock<RunKey> = OnceLock::new();
        return Ok(PROCESS
            .get_or_init(|| fresh().expect("the system's random source"))
            .clone());
    };
    let store = FileTokenStore::new(&file);
    let shown = file.display();
    match store.load() {
        Ok(Some(text)) => RunKey::from_hex(&text).ok_or_else(|| {
            format!(
                "{shown} does not hold a key (64 hexadecimal digits): remove it to make a new one"
            )
        }),
        Ok(None) => {
            let key = fresh()?;
            store
                .save(&key.to_hex())
                .map_err(|error| format!("cannot write the key {shown}: {error}"))?;
            Ok(key)
        }
        Err(error) => Err(format!("cannot read the key {shown}: {error}")),
    }
}

fn fresh() -> Result<RunKey, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|error| format!("no random source to make a key: {error}"))?;
    Ok(RunKey::new(bytes))
}
