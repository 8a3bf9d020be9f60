//! Python virtualenvs under the target directory, made and given their packages with pip on first use,
//! so that a test on a fresh machine needs only Python 3 and the package index. The one helper for
//! every crate's tests: yiem-core's include this file by path, as they cannot depend on this crate.

use std::path::PathBuf;
use std::process::Command;

/// The target directory: `CARGO_TARGET_DIR`, else the one holding the running test
/// (`target/<profile>/deps/<test>`).
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("the test knows its own path");
    exe.ancestors()
        .nth(3)
        .expect("a test runs from target/<profile>/deps")
        .to_owned()
}

/// Runs `command`, panicking with `what` when it cannot start or fails.
pub fn run(command: &mut Command, what: &str) {
    let status = command.status().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(status.success(), "{what} failed: {status}");
}

/// `program` (in `bin/`) of the virtualenv `name` in the target directory: the virtualenv is made when
/// it is missing, and `packages` are installed when Python cannot `import` the module `module` in it.
pub fn venv_program(name: &str, packages: &[&str], module: &str, program: &str) -> PathBuf {
    let venv = target_dir().join(name);
    let python = venv.join("bin/python");
    if !python.exists() {
        run(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            &format!("python3 -m venv {}", venv.display()),
        );
    }
    let ready = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .status()
        .is_ok_and(|status| status.success());
    if !ready {
        run(
            Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet"])
                .args(packages),
            &format!("pip install {}", packages.join(" ")),
        );
    }
    venv.join("bin").join(program)
}
