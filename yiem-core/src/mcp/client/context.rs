//! A server's resources and prompts, read into the application (not the model's tools): listing them,
//! reading a resource, getting a prompt's messages. Each request is bounded by the list time limit
//! (`McpClientBuilder::list_timeout`).

use std::future::Future;

use rmcp::model::{
    GetPromptRequestParams, JsonObject, Prompt, PromptMessage, ReadResourceRequestParams, Resource,
    ResourceContents, ResourceTemplate,
};
use rmcp::service::ServiceError;

use super::*;

impl McpClient {
    /// Runs `request` on the server within the list time limit, naming `method` in its error.
    pub(super) async fn context_request<T, F>(
        &self,
        method: &str,
        request: impl FnOnce(Peer<RoleClient>) -> F,
    ) -> Result<T, McpClientError>
    where
        F: Future<Output = Result<T, ServiceError>>,
    {
        let peer = self.inner.peer().await?;
        let failed = |detail: String| McpClientError::Request {
            server: self.inner.name.clone(),
            request: method.to_owned(),
            detail,
        };
        match tokio::time::timeout(self.inner.limits.list_timeout, request(peer)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(error)) => Err(failed(error.to_string())),
            Err(_) => Err(failed(format!(
                "no answer within {:?} (`McpClientBuilder::list_timeout`)",
                self.inner.limits.list_timeout
            ))),
        }
    }

    /// The server's resources at fixed URIs (`resources/list`, every page).
    pub async fn resources(&self) -> Result<Vec<Resource>, McpClientError> {
        self.context_request("resources/list", |peer| async move {
            peer.list_all_resources().await
        })
        .await
    }

    /// The server's resource templates (`resources/templates/list`, every page).
    pub async fn resource_templates(&self) -> Result<Vec<ResourceTemplate>, McpClientError> {
        self.context_request("resources/templates/list", |peer| async move {
            peer.list_all_resource_templates().await
        })
        .await
    }

    /// What the resource at `uri` holds (`resources/read`): text or base64 bytes, each with its URI and
    /// MIME type.
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<ResourceContents>, McpClientError> {
        let params = ReadResourceRequestParams::new(uri);
        self.context_request("resources/read", |peer| async move {
            peer.read_resource(params).await
        })
        .await
        .map(|read| read.contents)
    }

    /// The server's prompts (`prompts/list`, every page).
    pub async fn prompts(&self) -> Result<Vec<Prompt>, McpClientError> {
        self.context_request("prompts/list", |peer| async move {
            peer.list_all_prompts().await
        })
        .await
    }

    /// The messages of the prompt `name` with `arguments` (`prompts/get`).
    pub async fn prompt(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<Vec<PromptMessage>, McpClientError> {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = Some(arguments);
        self.context_request("prompts/get", |peer| async move {
            peer.get_prompt(params).await
        })
        .await
        .map(|got| got.messages)
    }
}
