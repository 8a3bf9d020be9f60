//! Durable MCP tasks on a real Restate server: the `restate-mcp-tasks` binary runs as the Restate
//! service that runs tasks and as replicas of a stateless MCP server over HTTP that keep their tasks
//! in Restate; the tests talk MCP's 2026-07-28 revision to the replicas with rmcp's client, kill
//! processes with SIGKILL and order everything by the files the scenario's tools write and wait for
//! (`yiem_restate_tests::tasks`). Each test has a Restate server of its own; they run one at a time.

use std::path::{Path, PathBuf};

use rmcp::model::{CancelTaskParams, GetTaskParams, UpdateTaskParams};
use serde_json::json;
use yiem_restate_tests::mcp_client::{
    approve, client, get, only_question, session, start, until_status,
};
use yiem_restate_tests::server::{PATIENCE, RestateServer, Service, TempDir, free_port};
use yiem_restate_tests::tasks::{DIR_ENV, INGRESS_ENV, ROLE_ENV, SESSIONS_ENV};
use yiem_tests::poll::wait_until;

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_restate-mcp-tasks"))
}

/// The lines of `name` in the test's folder.
fn lines(dir: &TempDir, name: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(name))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A Restate server, the test's folder, and the service that runs tasks, registered.
struct Setup {
    _alone: tokio::sync::MutexGuard<'static, ()>,
    server: RestateServer,
    dir: TempDir,
    service_port: u16,
}

async fn setup(name: &str) -> (Setup, Service) {
    let alone = ONE_AT_A_TIME.lock().await;
    let server = RestateServer::start().await;
    let dir = TempDir::new(name);
    let setup = Setup {
        _alone: alone,
        server,
        dir,
        service_port: free_port(),
    };
    let service = setup.service().await;
    (setup, service)
}

impl Setup {
    /// The service that runs tasks, started (again) on its port and registered.
    async fn service(&self) -> Service {
        let role = Path::new("service");
        let env = [(ROLE_ENV, role), (DIR_ENV, self.dir.0.as_path())];
        let service = Service::start(&binary(), self.service_port, &env, None).await;
        self.server.register(&service.uri).await;
        service
    }

    /// A replica of the MCP server, keeping its tasks in this Restate (with HTTP sessions, each
    /// task its session's own, when `sessions`): the process, and its URL.
    async fn replica(&self, sessions: bool) -> (Service, String) {
        let role = Path::new("replica");
        let ingress = PathBuf::from(&self.server.ingress);
        let mut env = vec![
            (ROLE_ENV, role),
            (DIR_ENV, self.dir.0.as_path()),
            (INGRESS_ENV, ingress.as_path()),
        ];
        if sessions {
            env.push((SESSIONS_ENV, Path::new("1")));
        }
        let replica = Service::start(&binary(), free_port(), &env, None).await;
        let url = format!("{}/mcp", replica.uri);
        (replica, url)
    }

    /// Waits for `name` in the test's folder, within the hang guard.
    async fn arrived(&self, name: &str) {
        let path = self.dir.join(name);
        assert!(
            wait_until(|| path.exists(), PATIENCE).await,
            "`{name}` never came\n--- server log (warnings) ---\n{}",
            self.server.warnings()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_started_through_a_replica_that_is_killed_is_read_and_ended_through_another() {
    let (setup, _service) = setup("tasks-replicas").await;
    let (first, first_url) = setup.replica(false).await;
    let (_second, second_url) = setup.replica(false).await;

    let through_first = client(&first_url).await;
    let id = start(&through_first, "report", json!({})).await;
    setup.arrived("report-started").await;
    drop(through_first);
    first.kill();

    let through_second = client(&second_url).await;
    let working = get(&through_second, &id).await;
    assert_eq!(working["status"], "working", "{working}");
    std::fs::write(setup.dir.join("report-release"), "go").unwrap();
    let done = until_status(&through_second, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "report done",
        "{done}"
    );
    assert_eq!(lines(&setup.dir, "effects"), ["report"]);

    // A task id that never existed: the protocol's error, as the in-memory store gives it.
    let unknown = through_second
        .peer()
        .get_task(GetTaskParams::new("no-such-task".to_owned()))
        .await
        .expect_err("an unknown task is an error");
    let unknown = unknown.to_string();
    assert!(unknown.contains("no task `no-such-task`"), "{unknown}");
    // An id Restate's ingress would read as a path is just an unknown id.
    let odd = through_second
        .peer()
        .get_task(GetTaskParams::new("../McpTaskRun/x/run".to_owned()))
        .await
        .expect_err("an odd id is an unknown task");
    assert!(odd.to_string().contains("no task"), "{odd}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_task_cancelled_mid_run_stops_its_side_effect_and_stays_cancelled() {
    let (setup, _service) = setup("tasks-cancel").await;
    let (_first, first_url) = setup.replica(false).await;
    let (_second, second_url) = setup.replica(false).await;

    let through_first = client(&first_url).await;
    let id = start(&through_first, "ticker", json!({})).await;
    setup.arrived("ticks").await;

    let through_second = client(&second_url).await;
    through_second
        .peer()
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .expect("the task is cancelled");
    // The running call is dropped: its side effect stops.
    setup.arrived("ticker-stopped").await;
    let cancelled = get(&through_first, &id).await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    // Released now, a ticker that still ran would tick again; it does not, and stays cancelled.
    std::fs::write(setup.dir.join("ticker-go"), "go").unwrap();
    through_second
        .peer()
        .update_task(UpdateTaskParams::new(id.clone(), Default::default()))
        .await
        .expect("an update of an ended task is no error");
    let still = get(&through_second, &id).await;
    assert_eq!(still["status"], "cancelled", "{still}");
    assert!(
        still.get("result").is_none(),
        "a cancelled task has no result: {still}"
    );
    assert_eq!(lines(&setup.dir, "ticks"), ["tick"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_task_that_needs_approval_waits_for_it_across_a_restart() {
    let (setup, service) = setup("tasks-approval").await;
    let (first, first_url) = setup.replica(false).await;

    let through_first = client(&first_url).await;
    let id = start(&through_first, "deploy", json!({})).await;
    let asked = until_status(&through_first, &id, "input_required").await;
    let key = only_question(&asked);
    assert!(
        lines(&setup.dir, "effects").is_empty(),
        "it ran before it was approved"
    );

    // Everything restarts: the service that runs the task and the replica.
    drop(through_first);
    first.kill();
    service.kill();
    let _service = setup.service().await;
    let (_second, second_url) = setup.replica(false).await;
    let through_second = client(&second_url).await;
    let waiting = get(&through_second, &id).await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");

    approve(&through_second, &id, &key).await;
    let done = until_status(&through_second, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "deployed", "{done}");
    assert_eq!(lines(&setup.dir, "effects"), ["deploy"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_sessions_task_is_unknown_to_a_session_as_the_in_memory_store_says() {
    let (setup, _service) = setup("tasks-sessions").await;
    let (_replica, url) = setup.replica(true).await;

    let owner = session(&url).await;
    let id = start(&owner, "report", json!({})).await;
    setup.arrived("report-started").await;

    // The task of another session is unknown to this one, for reading, answering and cancelling.
    let other = session(&url).await;
    let read = other.peer().get_task(GetTaskParams::new(id.clone())).await;
    let answered = other
        .peer()
        .update_task(UpdateTaskParams::new(id.clone(), Default::default()))
        .await;
    let cancelled = other
        .peer()
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await;
    for (method, error) in [
        ("tasks/get", read.map(|_| ()).expect_err("read")),
        ("tasks/update", answered.expect_err("answered")),
        ("tasks/cancel", cancelled.expect_err("cancelled")),
    ] {
        let error = error.to_string();
        assert!(
            error.contains("-32602") || error.contains("no task"),
            "{method}: {error}"
        );
        assert!(
            error.contains(&format!("no task `{id}`")),
            "{method}: {error}"
        );
    }
    let still = get(&owner, &id).await;
    assert_eq!(
        still["status"], "working",
        "another session's cancel took: {still}"
    );

    std::fs::write(setup.dir.join("report-release"), "go").unwrap();
    let done = until_status(&owner, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "report done",
        "{done}"
    );
}
