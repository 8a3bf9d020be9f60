//! The durable MCP tasks scenario: the tools both processes of the test serve (the Restate service
//! that runs tasks, and the replicas of the MCP server that keep them in Restate), ordered by files in
//! the test's folder (`YIEM_TASKS_DIR`), never by time.
//!
//! - `report` (a task): writes `report-started`, waits for `report-release`, appends `report` to
//!   `effects` and answers `report done`;
//! - `ticker` (a task): appends `tick` to `ticks`, then waits for `ticker-go`, again and again; when
//!   its call is dropped while it runs (cancelled) it writes `ticker-stopped`;
//! - `deploy` (a task that needs approval): appends `deploy` to `effects` and answers `deployed`.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use yiem_core::{
    store::ToolStore,
    tool::{AgentTool, TaskSupport, ToolContext},
};

use crate::durable::append_to;
use crate::server::PATIENCE;

/// The folder of the files that order the scenario.
pub const DIR_ENV: &str = "YIEM_TASKS_DIR";
/// `service`: the Restate service that runs tasks; `replica`: an MCP server over HTTP.
pub const ROLE_ENV: &str = "YIEM_TASKS_ROLE";
/// A replica's Restate ingress.
pub const INGRESS_ENV: &str = "YIEM_TASKS_INGRESS";
/// The key that signs a task's answers between rounds, the same in every service process.
pub const STATE_KEY: [u8; 32] = [7; 32];
/// Set: the replica serves HTTP sessions (a task is then its session's own).
pub const SESSIONS_ENV: &str = "YIEM_TASKS_SESSIONS";

fn file(name: &str) -> PathBuf {
    PathBuf::from(std::env::var_os(DIR_ENV).expect("YIEM_TASKS_DIR is set")).join(name)
}

/// Waits for `name` to exist, within a generous bound (a hang guard): whether it does.
async fn arrived(name: &str) -> bool {
    yiem_tests::poll::wait_until(|| file(name).exists(), PATIENCE).await
}

/// Writes `ticker-stopped` when dropped: the ticker's call was dropped while it ran.
struct Stopped;

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = std::fs::write(file("ticker-stopped"), "stopped");
    }
}

/// The scenario's tools.
pub fn tools() -> ToolStore {
    let store = ToolStore::new("tasks");
    let report = AgentTool::builder("report")
        .description("Write the report, once released.")
        .task(TaskSupport::Required)
        .parallel()
        .handler(|_ctx: ToolContext, _args: Value| async move {
            let _ = std::fs::write(file("report-started"), "started");
            if !arrived("report-release").await {
                return "the report was never released".to_owned();
            }
            append_to(&file("effects"), "report");
            "report done".to_owned()
        })
        .build()
        .unwrap();
    let ticker = AgentTool::builder("ticker")
        .description("Tick until cancelled.")
        .task(TaskSupport::Required)
        .parallel()
        .handler(|_ctx: ToolContext, _args: Value| async move {
            let stopped = Stopped;
            loop {
                append_to(&file("ticks"), "tick");
                // The test never creates it before the task is cancelled; a hang guard (twice the
                // test's own, so the test gives up first), not a clock. Run out, the call ends
                // without saying it was stopped.
                if !yiem_tests::poll::wait_until(|| file("ticker-go").exists(), 2 * PATIENCE).await
                {
                    std::mem::forget(stopped);
                    return "the ticker was never stopped".to_owned();
                }
                let _ = std::fs::remove_file(file("ticker-go"));
                tokio::time::sleep(Duration::ZERO).await;
            }
        })
        .build()
        .unwrap();
    let deploy = AgentTool::builder("deploy")
        .description("Deploy, once approved.")
        .task(TaskSupport::Required)
        .needs_approval()
        .parallel()
        .handler(|_ctx: ToolContext, _args: Value| async move {
            append_to(&file("effects"), "deploy");
            "deployed"
        })
        .build()
        .unwrap();
    for tool in [report, ticker, deploy] {
        store.register(tool).unwrap();
    }
    store
}
