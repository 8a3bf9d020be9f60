//! What a `bash` command can reach of the `yiem` process that runs it, under bubblewrap and under
//! Landlock: no environment variable but the allow-list (API keys and tokens stay out), and no
//! descriptor yiem inherited (a file and a directory outside the root, open in yiem, are closed).

use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

const SECRETS: &[(&str, &str)] = &[
    ("OPENAI_API_KEY", "sk-yiem-test-openai"),
    ("ANTHROPIC_API_KEY", "sk-ant-yiem-test"),
    ("GEMINI_API_KEY", "yiem-test-gemini"),
    ("AWS_SECRET_ACCESS_KEY", "yiem-test-aws"),
    ("GITHUB_TOKEN", "ghp_yiemtest"),
    ("MCP_TOKEN", "yiem-test-bearer"),
];

fn bash(sandbox: &str, root: &std::path::Path, command: &str, extra: &[&str]) -> Command {
    let mut yiem = Command::new(env!("CARGO_BIN_EXE_yiem"));
    let args = serde_json::json!({ "command": command }).to_string();
    yiem.args([
        "tools", "call", "bash", "--allow", "--args", &args, "--root",
    ])
    .arg(root)
    .args(["--sandbox", sandbox])
    .args(extra)
    .envs(SECRETS.iter().copied())
    .env("YIEM_TEST_PASSED", "passed-on")
    .env_remove("RUST_BACKTRACE");
    yiem
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn no_secret_of_the_host_reaches_a_command() {
    let dir = tempfile::tempdir().unwrap();
    for sandbox in ["bubblewrap", "landlock"] {
        let output = bash(
            sandbox,
            dir.path(),
            "env",
            &["--shell-env", "YIEM_TEST_PASSED"],
        )
        .output()
        .unwrap();
        let env = text(&output);
        assert!(output.status.success(), "{sandbox}: {env}");
        for (name, value) in SECRETS {
            assert!(
                !env.contains(name) && !env.contains(value),
                "{sandbox}: `{name}` reached the command:\n{env}"
            );
        }
        let names: Vec<&str> = env
            .lines()
            .filter_map(|line| line.split_once('=').map(|(name, _)| name))
            .filter(|name| !["PWD", "SHLVL", "_", "OLDPWD"].contains(name))
            .collect();
        assert!(
            env.lines().any(|line| line == "YIEM_TEST_PASSED=passed-on"),
            "{sandbox}: --shell-env did not pass the variable on:\n{env}"
        );
        for name in &names {
            assert!(
                ["PATH", "HOME", "LANG", "TERM", "TMPDIR", "YIEM_TEST_PASSED"].contains(name),
                "{sandbox}: `{name}` is not on the allow-list but reached the command:\n{env}"
            );
        }
    }
}

#[test]
fn a_variable_not_named_with_shell_env_stays_out() {
    let dir = tempfile::tempdir().unwrap();
    for sandbox in ["bubblewrap", "landlock"] {
        let output = bash(sandbox, dir.path(), "echo \"[$YIEM_TEST_PASSED]\"", &[])
            .output()
            .unwrap();
        assert_eq!(text(&output), "[]\n", "{sandbox}");
    }
}

#[test]
fn descriptors_yiem_inherited_are_closed_before_the_command_runs() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let outside = base.path().join("outside.txt");
    std::fs::write(&outside, "").unwrap();
    for sandbox in ["bubblewrap", "landlock"] {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(&outside)
            .unwrap();
        let dir = std::fs::File::open(base.path()).unwrap();
        let (file_fd, dir_fd) = (file.as_raw_fd(), dir.as_raw_fd());
        // The command tries both descriptors at the numbers yiem inherited them under.
        let probe = "for fd in 7 8; do if { echo escaped >&$fd; } 2>/dev/null; then echo \"fd $fd is open\"; fi; \
                     if ls /proc/self/fd/$fd >/dev/null 2>&1; then echo \"fd $fd is listed\"; fi; done; echo done";
        let mut command = bash(sandbox, &root, probe, &[]);
        // SAFETY: dup2 in the child between fork and exec: the descriptors are open in the parent, and
        // dup2 clears close-on-exec on the copies, so yiem inherits them as a program's caller may leave them.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(file_fd, 7) < 0 || libc::dup2(dir_fd, 8) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let output = command.output().unwrap();
        assert_eq!(text(&output), "done\n", "{sandbox}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "", "{sandbox}");
    }
}

#[test]
fn a_command_cannot_push_input_into_the_users_terminal() {
    // yiem runs with a terminal of its own as its controlling terminal (as `yiem chat` does); a command
    // tries to push a line into that terminal's input with TIOCSTI, through /dev/tty and by the pty's path.
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes the two descriptors; the name, termios and winsize pointers may be null.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
    let path = std::fs::read_link(format!("/proc/self/fd/{slave}")).unwrap();
    let inject = format!(
        "python3 -c \"import fcntl, os, termios\nfor path in ['/dev/tty', '{}']:\n    try:\n        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY)\n        for byte in b'echo INJECTED\\n':\n            fcntl.ioctl(fd, termios.TIOCSTI, bytes([byte]))\n        print('injected through', path)\n    except OSError as error:\n        print('refused:', path, error.strerror)\"",
        path.display()
    );
    let dir = tempfile::tempdir().unwrap();
    for sandbox in ["bubblewrap", "landlock"] {
        let mut command = bash(sandbox, dir.path(), &inject, &[]);
        // SAFETY: between fork and exec: a new session whose controlling terminal is the pty.
        unsafe {
            command.pre_exec(move || {
                if libc::setsid() < 0 || libc::ioctl(slave, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let output = command.output().unwrap();
        let said = text(&output);
        assert!(said.contains("refused: /dev/tty"), "{sandbox}: {said}");
        assert!(!said.contains("injected"), "{sandbox}: {said}");
        // Whatever was pushed would wait in the terminal's input queue: it is empty.
        // SAFETY: fcntl and read on our own open descriptor, into a buffer of the given size.
        let queued = unsafe {
            libc::fcntl(slave, libc::F_SETFL, libc::O_NONBLOCK);
            let mut buffer = [0u8; 64];
            libc::read(slave, buffer.as_mut_ptr().cast(), buffer.len())
        };
        assert_eq!(queued, -1, "{sandbox}: the terminal received input");
    }
    // SAFETY: closing our own descriptors once.
    unsafe {
        libc::close(master);
        libc::close(slave);
    }
}
