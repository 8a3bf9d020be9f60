//! OAuth for `chat --mcp-url`: a server that asks for it is authorized in the user's browser. The
//! authorization URL is printed (and opened with `$BROWSER` when set), the browser comes back to a
//! listener on a loopback port, and the tokens are kept per server in `yiem/mcp-oauth/` under the user's
//! data directory (`$XDG_DATA_HOME`, else `~/.local/share`), one file each, readable by the user only
//! (0600), so the next chat uses (and refreshes) them without asking again.

use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use yiem_core::mcp::oauth::{FileTokenStore, OAuth};

use crate::chat::safe;

/// How long the person has for the browser step (and the authorization around it).
const AUTHORIZATION_TIMEOUT: Duration = Duration::from_secs(300);

/// The file that keeps `url`'s tokens (see [`data_file`]).
pub(super) fn token_file(url: &str) -> Option<PathBuf> {
    data_file("mcp-oauth", url)
}

/// The file of `key` (a server's URL or command line) in `yiem/FOLDER/` under the user's data directory:
/// its name is the key with every character but letters, digits, `.` and `-` made `_`.
pub(super) fn data_file(folder: &str, key: &str) -> Option<PathBuf> {
    let name: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dirs::data_dir().map(|dir| dir.join("yiem").join(folder).join(format!("{name}.json")))
}

/// The OAuth configuration for `url`: the browser step through a loopback listener bound now (on
/// 127.0.0.1, a port the system picks), tokens in [`token_file`] (in memory when there is no data
/// directory).
pub(super) fn for_server(url: &str) -> std::io::Result<OAuth> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    let listener = std::sync::Arc::new(std::sync::Mutex::new(Some(listener)));
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let mut oauth = OAuth::authorization_code(redirect_uri, move |authorization_url: String| {
        let listener = std::sync::Arc::clone(&listener);
        async move {
            let listener = listener
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(|listener| listener.try_clone())
                .transpose()
                .map_err(|error| error.to_string())?
                .ok_or("the redirect listener is gone")?;
            let listener = TcpListener::from_std(listener).map_err(|error| error.to_string())?;
            say_err!(
                "[MCP server asks you to sign in: open {}]",
                safe::line(&authorization_url)
            );
            open_browser(&authorization_url);
            redirected(&listener, port).await
        }
    })
    .client_name("yiem chat")
    .authorization_timeout(AUTHORIZATION_TIMEOUT);
    if let Some(file) = token_file(url) {
        oauth = oauth.token_store(FileTokenStore::new(file));
    }
    Ok(oauth)
}

/// Opens `url` with `$BROWSER` when it is set (nothing is started otherwise: the URL is printed).
fn open_browser(url: &str) {
    if let Some(browser) = std::env::var_os("BROWSER").filter(|b| !b.is_empty()) {
        let _ = std::process::Command::new(browser)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

/// Waits for the browser's `GET /callback?…` on the listener, answers it with a page that says it can
/// be closed, and returns the full address it came to. Other requests (a favicon) get 404.
async fn redirected(listener: &TcpListener, port: u16) -> Result<String, String> {
    loop {
        let (mut stream, _) = listener.accept().await.map_err(|error| error.to_string())?;
        let mut request = Vec::new();
        let mut buffer = [0u8; 2048];
        // The request line and headers: at most 16 KiB, or the connection is dropped.
        while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16 * 1024 {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => request.extend_from_slice(&buffer[..read]),
            }
        }
        let text = String::from_utf8_lossy(&request);
        let target = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or("");
        if target.starts_with("/callback?") {
            let body = "<!doctype html><title>yiem</title><p>Signed in. You can close this window and return to yiem.";
            let _ = stream
                .write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                )
                .await;
            return Ok(format!("http://127.0.0.1:{port}{target}"));
        }
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
    }
}
