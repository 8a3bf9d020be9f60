//! The approval example as a user runs it: it pauses for `bash`, shows the call, and resumes with the
//! answer read from stdin — the command runs on "y" and is denied on "n" or no answer.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The example binary, which `cargo test` builds beside this test (target/<profile>/examples/approval).
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    profile_dir.join("examples").join("approval")
}

fn run_with(stdin: &str) -> String {
    let mut child = Command::new(example())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn yes_runs_the_command_after_the_pause() {
    let stdout = run_with("y\n");
    assert!(
        stdout.contains(
            "the model wants to run `bash` with {\"command\":\"echo hello from the shell\"}"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("✓ bash: hello from the shell"), "{stdout}");
    assert!(
        stdout.contains("assistant: The command ran; see its output above."),
        "{stdout}"
    );
}

#[test]
fn no_answer_denies_and_the_model_reads_why() {
    for stdin in ["", "n\n"] {
        let stdout = run_with(stdin);
        assert!(
            stdout.contains("✗ bash: the user denied this call: the user said no"),
            "{stdout}"
        );
    }
}
