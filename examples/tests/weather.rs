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
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Here is what I found"), "{stdout}");
}

#[test]
fn a_failing_server_is_reported_and_the_exit_code_is_not_zero() {
    // A server that answers every request with a 500.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(8) {
            let Ok(mut stream) = stream else { return };
            let mut buffer = [0u8; 65536];
            let _ = stream.read(&mut buffer);
            let body = r#"{"error": {"message": "the model is overloaded"}}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let output = Command::new(example())
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
