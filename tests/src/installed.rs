//! The MCP implementations nobody here wrote that the integration tests start: the official Python SDK
//! (`mcp>=2.3,<3`) in a virtualenv and npm packages in one folder, both under the target directory and
//! installed on first use, as `.ci/run` installs them up front.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

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

/// The virtualenv's Python with the official MCP SDK, created once.
pub fn python() -> PathBuf {
    static READY: OnceLock<PathBuf> = OnceLock::new();
    READY
        .get_or_init(|| {
            let venv = target_dir().join("python-mcp");
            let python = venv.join("bin/python");
            if !python.exists() {
                run(
                    Command::new("python3").args(["-m", "venv"]).arg(&venv),
                    "python3 -m venv",
                );
            }
            let ready = Command::new(&python)
                .args(["-c", "import mcp.server.mcpserver"])
                .status()
                .is_ok_and(|status| status.success());
            if !ready {
                run(
                    Command::new(venv.join("bin/pip")).args(["install", "--quiet", "mcp>=2.3,<3"]),
                    "pip install mcp",
                );
            }
            python
        })
        .clone()
}

/// The npm folder (`<target>/npm`), with `package` at `version` installed into it unless it is there
/// already. Installs are serialized: npm must not run twice at once on one folder.
pub fn npm_package(package: &str, version: &str) -> PathBuf {
    static INSTALLING: Mutex<()> = Mutex::new(());
    let folder = target_dir().join("npm");
    let _alone = INSTALLING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if installed_version(&folder, package).as_deref() != Some(version) {
        std::fs::create_dir_all(&folder).unwrap();
        run(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(&folder)
                .arg(format!("{package}@{version}")),
            &format!("npm install {package}@{version}"),
        );
    }
    folder
}

fn installed_version(folder: &Path, package: &str) -> Option<String> {
    let manifest = folder
        .join("node_modules")
        .join(package)
        .join("package.json");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(manifest).ok()?).ok()?;
    Some(manifest["version"].as_str()?.to_owned())
}
