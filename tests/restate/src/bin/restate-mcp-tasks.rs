//! The durable MCP tasks scenario of `yiem_restate_tests::tasks` as a process the tests start and
//! kill: with `YIEM_TASKS_ROLE=service`, the Restate service that runs tasks (`DurableTasks`); with
//! `replica`, an MCP server over stateless HTTP (`McpHttpServer` at `/mcp`) that keeps its tasks in the
//! Restate of `YIEM_TASKS_INGRESS` (with sessions when `YIEM_TASKS_SESSIONS` is set). Listens on `YIEM_RESTATE_LISTEN`.

use yiem_core::mcp::{McpHttpServer, McpServer};
use yiem_restate::mcp::{DurableTasks, RestateTaskStore};
use yiem_restate::restate_sdk::prelude::*;
use yiem_restate_tests::tasks::{self, INGRESS_ENV, ROLE_ENV};

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let listen: std::net::SocketAddr = std::env::var("YIEM_RESTATE_LISTEN")
        .expect("YIEM_RESTATE_LISTEN is set")
        .parse()
        .expect("YIEM_RESTATE_LISTEN is an address");
    let server = McpServer::new(tasks::tools());
    match std::env::var(ROLE_ENV).as_deref() {
        Ok("service") => {
            HttpServer::new(DurableTasks::new(server, tasks::STATE_KEY).endpoint())
                .listen_and_serve(listen)
                .await;
        }
        Ok("replica") => {
            let ingress = std::env::var(INGRESS_ENV).expect("YIEM_TASKS_INGRESS is set");
            let store = RestateTaskStore::new(&ingress).expect("the ingress address is good");
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .expect("the replica listens");
            let mut http = McpHttpServer::new(server.task_store(store));
            if std::env::var_os(tasks::SESSIONS_ENV).is_some() {
                http = http.sessions(16);
            }
            http.serve(listener, std::future::pending::<()>())
                .await
                .expect("the replica serves");
        }
        other => panic!("YIEM_TASKS_ROLE is `service` or `replica`, not {other:?}"),
    }
}
