//! The weather example as a user runs it: offline it answers, and against a server that fails it shows
//! the model's error and exits non-zero (it used to print an empty answer and exit 0).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;

/// The example binary, which `cargo test` builds beside this test (target/<profile>/examples/weather).
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    profile_dir.join("examples").join("weather")
}

#[test]
fn offline_it_answers_and_exits_zero() {
    let output = Command::new(example())
        .env_remove("YIEM_BASE_URL")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("YIEM_PROVIDER")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Here is what I found"), "{stdout}");
}

/// A server on loopback that answers every request with `status` and `body`; its port.
fn failing_server(status: &'static str, body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(8) {
            let Ok(mut stream) = stream else { return };
            let mut buffer = [0u8; 65536];
            let _ = stream.read(&mut buffer);
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn an_anthropic_error_is_reported_and_the_exit_code_is_not_zero() {
    let port = failing_server(
        "401 Unauthorized",
        r#"{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}"#,
    );
    let output = Command::new(example())
        .env_remove("YIEM_BASE_URL")
        .env("YIEM_PROVIDER", "anthropic")
        .env("ANTHROPIC_API_KEY", "sk-ant-bad")
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "error: POST http://127.0.0.1:{port}/v1/messages failed: HTTP 401 Unauthorized: invalid x-api-key"
        )),
        "{stderr}"
    );
}

#[test]
fn a_named_provider_without_its_key_exits_2_saying_what_to_set() {
    let output = Command::new(example())
        .env_remove("YIEM_BASE_URL")
        .env_remove("GEMINI_API_KEY")
        .env("YIEM_PROVIDER", "gemini")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: the model is misconfigured: `GEMINI_API_KEY` is not set: set it to your API key\n"
    );
}

#[test]
fn a_failing_server_is_reported_and_the_exit_code_is_not_zero() {
    let port = failing_server(
        "500 Internal Server Error",
        r#"{"error": {"message": "the model is overloaded"}}"#,
    );
    let output = Command::new(example())
        .env_remove("YIEM_PROVIDER")
        .env("YIEM_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error: ") && stderr.contains("the model is overloaded"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("(no answer: the model failed)"), "{stdout}");
}
