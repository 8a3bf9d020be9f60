//! Requests checked against the official Python SDKs' request types for streamed calls (`openai`'s and
//! `anthropic`'s, in `tests/python/sdk_request.py`), and Gemini function declarations against
//! `google-genai`'s, with unknown keys refused at any depth.
//!
//! The SDKs' Python is `$YIEM_SDK_PYTHON`, else `<target dir>/python-sdks/bin/python` (where `.ci/run`
//! installs `openai==3.51.0`, `anthropic==2.10.0` and `google-genai==3.6.1`); when it is not there, the first check installs
//! them (a virtualenv and `pip install`), so `cargo test` on a fresh machine needs only Python 3 and the
//! network.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::Server;

/// The SDK's request type a body is checked against.
#[derive(Clone, Copy)]
pub enum Request {
    /// `ResponseCreateParamsStreaming`.
    Responses,
    /// `CompletionCreateParamsStreaming`.
    Chat,
    /// `anthropic`'s `MessageCreateParamsStreaming`.
    Anthropic,
    /// `google-genai`'s `FunctionDeclaration` (a body is one declaration).
    GeminiFunction,
}

const SDKS: [&str; 3] = ["openai==3.51.0", "anthropic==2.10.0", "google-genai==3.6.1"];

fn sdk_python() -> PathBuf {
    if let Some(path) = std::env::var_os("YIEM_SDK_PYTHON") {
        return PathBuf::from(path);
    }
    static INSTALLED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            super::venv::venv_program(
                "python-sdks",
                &SDKS,
                "openai, anthropic, google.genai",
                "python",
            )
        })
        .clone()
}

/// Asserts that every request the server got fits the SDK's type `kind`.
pub fn assert_sdk_accepts(kind: Request, server: &Server) {
    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert!(!bodies.is_empty(), "no request was sent");
    assert_sdk_accepts_bodies(kind, &bodies);
}

/// Asserts that every body fits the SDK's type `kind`.
pub fn assert_sdk_accepts_bodies(kind: Request, bodies: &[Value]) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/sdk_request.py");
    let kind = match kind {
        Request::Responses => "responses",
        Request::Chat => "chat",
        Request::Anthropic => "anthropic",
        Request::GeminiFunction => "gemini-function",
    };
    let mut child = Command::new(sdk_python())
        .arg(&script)
        .arg(kind)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the SDK's Python starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(bodies).unwrap().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the SDK refuses a `{kind}` request:\n{}{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        serde_json::to_string_pretty(bodies).unwrap()
    );
}
