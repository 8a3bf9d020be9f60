//! `yiem chat --mcp-url` against a server that asks for OAuth: the server written with the official Python
//! SDK in `tests/python/mcp_oauth_server.py` (its own authorization server; the first grant lacks a scope,
//! so the chat signs in and then steps up). The test is the person at the browser: it reads the printed
//! authorization URL, fetches it, and follows the redirect to the chat's loopback listener. The tokens
//! land in a 0600 file under `$XDG_DATA_HOME`, and the next chat uses them without asking.
//!
//! The Python SDK is installed into `<target>/python-mcp` on first use, as `.ci/run` and the `tests`
//! crate do.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_owned()
}

/// The virtualenv's Python with the official MCP SDK, created on first use.
fn python() -> PathBuf {
    let venv = target_dir().join("python-mcp");
    let python = venv.join("bin/python");
    let ready = Command::new(&python)
        .args(["-c", "import mcp.server.mcpserver"])
        .status()
        .is_ok_and(|status| status.success());
    if !ready {
        if !python.exists() {
            assert!(
                Command::new("python3")
                    .args(["-m", "venv"])
                    .arg(&venv)
                    .status()
                    .unwrap()
                    .success()
            );
        }
        let pip = venv.join("bin/pip");
        assert!(
            Command::new(pip)
                .args(["install", "--quiet", "mcp>=2.3,<3"])
                .status()
                .unwrap()
                .success()
        );
    }
    python
}

/// The Python OAuth server; killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server() -> (Server, String) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/python/mcp_oauth_server.py");
    let child = Command::new(python())
        .arg(script)
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server(child);
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    // A failure guard only: the server is up when it accepts a connection.
    let start = Instant::now();
    while TcpStream::connect(address).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the Python OAuth server listens"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (server, format!("http://127.0.0.1:{port}/mcp"))
}

/// `GET url` on loopback, without following redirects: the status line and the `location` header.
fn get(url: &str) -> (String, Option<String>) {
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .expect("a loopback URL");
    let (port, path) = rest.split_once('/').unwrap();
    let mut stream = TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.lines().next().unwrap_or_default().to_owned();
    let location = response
        .lines()
        .find_map(|line| {
            line.strip_prefix("location: ")
                .or_else(|| line.strip_prefix("Location: "))
        })
        .map(str::to_owned);
    (status, location)
}

/// Runs `yiem chat --mcp-url url` with `data` as the data directory, answering every sign-in as a
/// browser would; returns the sign-ins asked for and what the chat printed.
fn chat(url: &str, data: &Path) -> (usize, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_yiem"))
        .args(["chat", "--mcp-url", url])
        .env("XDG_DATA_HOME", data)
        .env_remove("BROWSER")
        .env_remove("YIEM_BASE_URL")
        .env_remove("YIEM_PROVIDER")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut sign_ins = 0;
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut lines = stderr.lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(at) = line.find("sign in: open ") {
            sign_ins += 1;
            let authorization = line[at + "sign in: open ".len()..].trim_end_matches(']');
            let (status, location) = get(authorization);
            let callback = location.unwrap_or_else(|| panic!("no redirect: {status}"));
            let (status, _) = get(&callback);
            assert!(
                status.contains("200"),
                "the chat's listener answers the browser: {status}"
            );
        }
        if line.starts_with("[MCP server `") {
            break;
        }
    }
    // The chat goes on writing to stderr (its offline banner, the demo's approval question): keep
    // reading it, or the closed pipe would fail its writes.
    let rest =
        std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>().join("\n"));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello\n").unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{:?}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        rest.join().unwrap()
    );
    (sign_ins, String::from_utf8(output.stdout).unwrap())
}

#[test]
fn chat_signs_in_to_an_oauth_server_in_the_browser_and_keeps_the_tokens_for_the_next_chat() {
    let (_server, url) = start_server();
    let data = tempfile::tempdir().unwrap();

    let (sign_ins, output) = chat(&url, data.path());
    assert_eq!(
        sign_ins, 2,
        "a sign-in and a step-up for the scope the first grant lacked"
    );
    assert!(output.contains("whoami, expire, stats"), "{output}");

    let file = data
        .path()
        .join("yiem/mcp-oauth")
        .join(format!("{}.json", url.replace([':', '/'], "_")));
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "{}", file.display());

    let (sign_ins, output) = chat(&url, data.path());
    assert_eq!(sign_ins, 0, "the stored tokens are used");
    assert!(output.contains("whoami, expire, stats"), "{output}");
}
