//! [`RestateTaskStore`]: an [`McpServer`](yiem_core::mcp::McpServer)'s tasks in Restate, read and
//! written through its ingress over plain HTTP/1.1 (no TLS: the ingress is on the same network as
//! the servers), so that any replica of a stateless MCP server answers for any task.

use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde::{Serialize, de::DeserializeOwned};
use yiem_core::mcp::{StoredTask, TaskRequest, TaskStore, TaskStoreError};

/// How long a request to the ingress may take before the store gives up on it.
const INGRESS_TIMEOUT: Duration = Duration::from_secs(30);

/// The most of an ingress error's body an error message quotes.
const MAX_ERROR_BYTES: usize = 300;

/// A [`TaskStore`] in Restate: each task is an `McpTask` virtual object, and its run an invocation
/// of `McpTaskRun` (served by [`DurableTasks`](super::DurableTasks)), each round of its call a
/// journaled step. Every replica given a store of the same ingress reads and updates every task.
///
/// ```
/// use yiem_core::{mcp::McpServer, store::ToolStore};
/// use yiem_restate::mcp::RestateTaskStore;
///
/// let store = RestateTaskStore::new("http://127.0.0.1:8080").unwrap();
/// let server = McpServer::new(ToolStore::new("reports")).task_store(store);
/// # let _ = server;
/// ```
#[derive(Clone, Debug)]
pub struct RestateTaskStore {
    ingress: String,
    http: Client<HttpConnector, Full<Bytes>>,
}

impl RestateTaskStore {
    /// A store over the Restate ingress at `ingress` (`http://host:port`); an address that is not
    /// plain `http://` is refused.
    pub fn new(ingress: &str) -> Result<RestateTaskStore, TaskStoreError> {
        let ingress = ingress.trim_end_matches('/');
        if !ingress.starts_with("http://") || ingress.parse::<http::Uri>().is_err() {
            return Err(TaskStoreError::Failed(format!(
                "`{ingress}` is not a Restate ingress address; give one as http://host:port"
            )));
        }
        Ok(RestateTaskStore {
            ingress: ingress.to_owned(),
            http: Client::builder(TokioExecutor::new()).build_http(),
        })
    }

    /// Calls `handler` of `McpTask` `id` with `body`: its answer.
    async fn call<T: DeserializeOwned>(
        &self,
        id: &str,
        handler: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T, TaskStoreError> {
        let key = utf8_percent_encode(id, NON_ALPHANUMERIC);
        let uri = format!("{}/McpTask/{key}/{handler}", self.ingress);
        let request = http::Request::post(&uri);
        let request = match body {
            Some(body) => request
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Full::new(Bytes::from(
                    serde_json::to_vec(body).map_err(failed)?,
                ))),
            None => request.body(Full::new(Bytes::new())),
        }
        .map_err(failed)?;
        let exchange = async {
            let response = self.http.request(request).await.map_err(failed)?;
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(failed)?
                .to_bytes();
            Ok::<_, TaskStoreError>((status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(INGRESS_TIMEOUT, exchange)
            .await
            .map_err(|_| {
                TaskStoreError::Failed(format!(
                    "Restate's ingress did not answer `{handler}` within {}s",
                    INGRESS_TIMEOUT.as_secs()
                ))
            })??;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            let mut end = text.len().min(MAX_ERROR_BYTES);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            return Err(TaskStoreError::Failed(format!(
                "Restate's ingress answered `{handler}` with {status}: {}",
                &text[..end]
            )));
        }
        // A handler that answers nothing answers an empty body.
        let bytes = match bytes.is_empty() {
            true => Bytes::from_static(b"null"),
            false => bytes,
        };
        serde_json::from_slice(&bytes).map_err(failed)
    }
}

fn failed(error: impl std::fmt::Display) -> TaskStoreError {
    TaskStoreError::Failed(error.to_string())
}

impl TaskStore for RestateTaskStore {
    fn save(&self, task: StoredTask) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        Box::pin(async move {
            // A task that ended stays as it ended: `false` is no failure.
            let _saved: bool = self
                .call(&task.task.task.task_id, "save", Some(&task))
                .await?;
            Ok(())
        })
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredTask>, TaskStoreError>> {
        Box::pin(async move {
            let task: Option<StoredTask> = self.call(id, "load", None::<&()>).await?;
            Ok(task.filter(|task| !task.is_expired()))
        })
    }

    fn run<'a>(
        &'a self,
        task: &'a StoredTask,
        request: &'a TaskRequest,
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>> {
        Box::pin(async move {
            let () = self.call(task.id(), "start", Some(request)).await?;
            Ok(true)
        })
    }
}
