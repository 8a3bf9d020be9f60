//! The MCP implementations nobody here wrote that the integration tests start: the official Python SDK
//! (`mcp>=2.3,<3`) in a virtualenv and npm packages in one folder, both under the target directory and
//! installed on first use, as `.ci/run` installs them up front.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

pub use crate::venv::{run, target_dir};

/// The virtualenv's Python with the official MCP SDK, created once.
pub fn python() -> PathBuf {
    static READY: OnceLock<PathBuf> = OnceLock::new();
    READY
        .get_or_init(|| {
            crate::venv::venv_program(
                "python-mcp",
                &["mcp>=2.3,<3"],
                "mcp.server.mcpserver",
                "python",
            )
        })
        .clone()
}

/// Starts the SDK's Python with `args` (a server script and its arguments) and `env`, its output
/// dropped, and waits, under a generous bound, until it listens on `port` of 127.0.0.1.
pub async fn python_listening<S: AsRef<OsStr>>(
    args: impl IntoIterator<Item = S>,
    env: impl IntoIterator<Item = (S, S)>,
    port: u16,
) -> Child {
    let child = Command::new(python())
        .args(args)
        .envs(env)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the Python server starts");
    let up = crate::poll::wait_until(
        || crate::poll::listens(([127, 0, 0, 1], port).into()),
        Duration::from_secs(60),
    )
    .await;
    assert!(up, "the Python server listens on port {port}");
    child
}

/// The official TypeScript SDK (`@modelcontextprotocol/sdk`) the tests drive.
pub const TS_SDK_VERSION: &str = "1.32.2";

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
