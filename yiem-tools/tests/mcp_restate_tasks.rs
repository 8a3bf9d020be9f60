//! `yiem mcp` keeping its tasks on a real Restate server (the `restate` feature): replicas started
//! with `--http --restate-ingress`, the tasks run by `yiem mcp --restate-serve`, the test's calls of
//! `bash` (`--task bash`) made by rmcp's client over MCP's 2026-07-28 revision. Processes are killed
//! with SIGKILL; everything is ordered by files the commands write and wait for, never by time.

use std::path::Path;
use std::process::Command;

use serde_json::json;
use yiem_restate_tests::mcp_client::{approve, client, get, only_question, start, until_status};
use yiem_restate_tests::server::{PATIENCE, RestateServer, Service, TempDir, free_port};
use yiem_tests::poll::wait_until;

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const KEY_ENV: &str = "YIEM_TEST_STATE_KEY";
const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/// A command of `bash` that says it started, waits for `release` in the root, then records its
/// effect and answers `finished`.
const WAITS_FOR_RELEASE: &str =
    "touch started; until [ -e release ]; do sleep 0.05; done; echo ran >> effects; echo finished";

/// `yiem mcp` with the flags every process of a deployment shares: `bash` as a task, rooted in `root`.
fn yiem(root: &Path, allow_bash: bool, role: &[String]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_yiem"));
    command
        .args([
            "mcp",
            "--task",
            "bash",
            "--state-key-env",
            KEY_ENV,
            "--root",
        ])
        .arg(root)
        .args(role)
        .env(KEY_ENV, KEY);
    if allow_bash {
        command.args(["--allow", "bash"]);
    }
    command
}

/// A Restate server, the test's folder, and the port of the service that runs tasks.
struct Deployment {
    _alone: tokio::sync::MutexGuard<'static, ()>,
    server: RestateServer,
    dir: TempDir,
    service_port: u16,
    allow_bash: bool,
}

impl Deployment {
    async fn new(name: &str, allow_bash: bool) -> Deployment {
        let alone = ONE_AT_A_TIME.lock().await;
        Deployment {
            _alone: alone,
            server: RestateServer::start().await,
            dir: TempDir::new(name),
            service_port: free_port(),
            allow_bash,
        }
    }

    /// `yiem mcp --restate-serve`, started (again) on its port and registered with Restate.
    async fn service(&self) -> Service {
        let address = format!("127.0.0.1:{}", self.service_port);
        let role = ["--restate-serve".to_owned(), address];
        let command = yiem(&self.dir.0, self.allow_bash, &role);
        let service = Service::spawn(command, self.service_port).await;
        self.server.register(&service.uri).await;
        service
    }

    /// A replica, `yiem mcp --http --restate-ingress`: the process and its MCP URL.
    async fn replica(&self) -> (Service, String) {
        let port = free_port();
        let role = [
            "--http".to_owned(),
            format!("127.0.0.1:{port}"),
            "--restate-ingress".to_owned(),
            self.server.ingress.clone(),
        ];
        let replica = Service::spawn(yiem(&self.dir.0, self.allow_bash, &role), port).await;
        let url = format!("{}/mcp", replica.uri);
        (replica, url)
    }

    async fn arrived(&self, name: &str) {
        let path = self.dir.join(name);
        assert!(
            wait_until(|| path.exists(), PATIENCE).await,
            "`{name}` never came\n--- server log (warnings) ---\n{}",
            self.server.warnings()
        );
    }

    fn effects(&self) -> String {
        std::fs::read_to_string(self.dir.join("effects")).unwrap_or_default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bash_task_started_through_a_killed_replica_is_read_and_ended_through_another() {
    let deployment = Deployment::new("yiem-mcp-tasks-replicas", true).await;
    let _service = deployment.service().await;
    let (first, first_url) = deployment.replica().await;
    let (_second, second_url) = deployment.replica().await;

    let through_first = client(&first_url).await;
    let id = start(
        &through_first,
        "bash",
        json!({"command": WAITS_FOR_RELEASE}),
    )
    .await;
    deployment.arrived("started").await;
    drop(through_first);
    first.kill();

    let through_second = client(&second_url).await;
    let working = get(&through_second, &id).await;
    assert_eq!(working["status"], "working", "{working}");
    std::fs::write(deployment.dir.join("release"), "go").unwrap();
    let done = until_status(&through_second, &id, "completed").await;
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("finished"), "{done}");
    assert_eq!(deployment.effects(), "ran\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bash_task_waits_for_its_approval_across_a_restart_of_every_process() {
    let deployment = Deployment::new("yiem-mcp-tasks-approval", false).await;
    let service = deployment.service().await;
    let (first, first_url) = deployment.replica().await;

    let through_first = client(&first_url).await;
    let id = start(
        &through_first,
        "bash",
        json!({"command": "echo ran >> effects; echo deployed"}),
    )
    .await;
    let asked = until_status(&through_first, &id, "input_required").await;
    let key = only_question(&asked);
    assert_eq!(deployment.effects(), "", "it ran before it was approved");

    drop(through_first);
    first.kill();
    service.kill();
    let _service = deployment.service().await;
    let (_second, second_url) = deployment.replica().await;
    let through_second = client(&second_url).await;
    let waiting = get(&through_second, &id).await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");

    approve(&through_second, &id, &key).await;
    let done = until_status(&through_second, &id, "completed").await;
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("deployed"), "{done}");
    assert_eq!(deployment.effects(), "ran\n");
}

#[test]
fn the_restate_flags_refuse_what_cannot_work_with_a_clear_error() {
    let root = TempDir::new("yiem-mcp-tasks-flags");
    // No key to share between the processes that run tasks.
    let output = Command::new(env!("CARGO_BIN_EXE_yiem"))
        .args(["mcp", "--restate-serve", "127.0.0.1:0", "--root"])
        .arg(&root.0)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--restate-serve needs --state-key-env"),
        "{stderr}"
    );
    // A key that is not 64 hex digits, and a task of a tool that does not exist.
    for (args, says) in [
        (vec!["--state-key-env", KEY_ENV], "must hold 64 hex digits"),
        (vec!["--task", "nope"], "unknown tool `nope`"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_yiem"))
            .arg("mcp")
            .args(&args)
            .arg("--root")
            .arg(&root.0)
            .env(KEY_ENV, "not hex")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("not hex"),
            "the key's text is never shown: {stderr}"
        );
    }
}
