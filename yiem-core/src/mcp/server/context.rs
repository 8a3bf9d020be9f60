//! Resources, templates, prompts and completions of an [`McpServer`] with a [`ContextStore`]: what each
//! request does, and the notifications of their changes and of subscribed resources' updates.

use std::collections::HashSet;
use std::sync::Weak;

use rmcp::model::{
    CacheScope, CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    PromptsCapability, ReadResourceRequestParams, ReadResourceResult, Reference,
    ResourceUpdatedNotificationParam, ResourcesCapability,
};
use rmcp::service::SubscriptionSendError;
use tokio::sync::{broadcast, watch};

use super::asker::ClientAsker;
use super::*;
use crate::mcp::context::{Completer, PromptContext, PromptError, ResourceError};

/// The resources one connection's client subscribed to, and the task that tells it of their updates
/// (started by its first subscription, ended with the connection).
#[derive(Default)]
pub(super) struct Subscribed {
    uris: Mutex<HashSet<String>>,
    forwarding: Mutex<Option<tokio_util::task::AbortOnDropHandle<()>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A client of 2026-07-28, which has no `resources/subscribe` (it listens instead).
fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// The caching hints of a list or a read for a 2026-07-28 client (SEP-2549; none for earlier
/// revisions, which have no such fields): how long it may keep it (`ttlMs`, the server's
/// [`list_ttl`](McpServer::list_ttl), else 0) and that it is the same for every client
/// (`public`: what this server lists does not depend on who asks).
pub(super) fn cache_hints(
    server: &McpServer,
    context: &RequestContext<RoleServer>,
) -> Option<(u64, CacheScope)> {
    is_modern(context).then(|| {
        let ttl = server
            .config
            .list_ttl
            .map_or(0, |ttl| u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        (ttl, CacheScope::Public)
    })
}

/// Sends the list changes of a context store to a client over stdio, until the connection ends.
pub(super) async fn notify_list_changes(
    mut changes: watch::Receiver<(u64, u64)>,
    peer: &Peer<RoleServer>,
) {
    let mut seen = *changes.borrow_and_update();
    while changes.changed().await.is_ok() {
        let now = *changes.borrow_and_update();
        let sent = if now.0 != seen.0 {
            peer.notify_resource_list_changed().await
        } else {
            Ok(())
        };
        let sent = match (sent, now.1 != seen.1) {
            (Ok(()), true) => peer.notify_prompt_list_changed().await,
            (other, _) => other,
        };
        if sent.is_err() {
            return; // the connection is gone
        }
        seen = now;
    }
}

impl McpServer {
    pub(super) fn context_store(&self) -> Option<&ContextStore> {
        self.config.context.as_ref()
    }

    /// The store, or the error a server without one answers: the method is not found (`-32601`).
    fn context_or_not_found(&self, method: &str) -> Result<&ContextStore, ErrorData> {
        self.context_store()
            .ok_or_else(|| ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method.to_owned(), None))
    }

    /// The capabilities a context store adds.
    pub(super) fn declare_context(&self, capabilities: &mut ServerCapabilities) {
        if self.context_store().is_none() {
            return;
        }
        let mut resources = ResourcesCapability::default();
        resources.subscribe = Some(true);
        resources.list_changed = Some(true);
        capabilities.resources = Some(resources);
        let mut prompts = PromptsCapability::default();
        prompts.list_changed = Some(true);
        capabilities.prompts = Some(prompts);
        capabilities.completions = Some(Default::default());
    }

    /// A read of `bytes` bytes at `uri` is refused past [`McpServer::max_result_bytes`] (`-32603`).
    pub(super) fn within_limit(&self, uri: &str, bytes: usize) -> Result<(), ErrorData> {
        let limit = self.config.max_result_bytes;
        if bytes <= limit {
            return Ok(());
        }
        Err(ErrorData::internal_error(
            format!(
                "the resource `{uri}` is {bytes} bytes, over this server's limit of {limit} bytes"
            ),
            Some(serde_json::json!({ "uri": uri })),
        ))
    }

    pub(super) fn list_context_resources(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let store = self.context_or_not_found("resources/list")?;
        let resources = store
            .resources()
            .iter()
            .filter_map(|resource| resource.as_resource())
            .collect();
        let mut listed = ListResourcesResult::with_all_items(resources);
        if let Some((ttl, scope)) = cache_hints(self, context) {
            listed = listed.with_ttl_ms(ttl).with_cache_scope(scope);
        }
        Ok(listed)
    }

    pub(super) fn list_context_templates(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let store = self.context_or_not_found("resources/templates/list")?;
        let templates = store
            .resources()
            .iter()
            .filter_map(|resource| resource.as_template())
            .collect();
        let mut listed = ListResourceTemplatesResult::with_all_items(templates);
        if let Some((ttl, scope)) = cache_hints(self, context) {
            listed = listed.with_ttl_ms(ttl).with_cache_scope(scope);
        }
        Ok(listed)
    }

    pub(super) fn list_context_prompts(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let store = self.context_or_not_found("prompts/list")?;
        let prompts = store
            .prompts()
            .iter()
            .map(|prompt| prompt.listed())
            .collect();
        let mut listed = ListPromptsResult::with_all_items(prompts);
        if let Some((ttl, scope)) = cache_hints(self, context) {
            listed = listed.with_ttl_ms(ttl).with_cache_scope(scope);
        }
        Ok(listed)
    }

    /// `resources/read`: the resource at the URI, a fixed one first, then the first template that
    /// matches. A URI no resource has is `-32602` with the URI in `data` (SEP-2164) for a client of
    /// 2026-07-28 and `-32002` (resource not found) for one of an earlier revision; a read that fails
    /// is `-32603` with its message; one larger than the result bound is `-32603` saying both sizes.
    pub(super) async fn read_context_resource(
        &self,
        request: ReadResourceRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, ErrorData> {
        let store = self.context_or_not_found("resources/read")?;
        let uri = request.uri;
        let Some((resource, params)) = store.resource_at(&uri) else {
            let message = format!(
                "no resource at `{uri}`: list the resources (resources/list) and templates \
                 (resources/templates/list) for what this server has"
            );
            let data = Some(serde_json::json!({ "uri": uri }));
            return Err(if is_modern(context) {
                ErrorData::invalid_params(message, data)
            } else {
                ErrorData::resource_not_found(message, data)
            });
        };
        let body = tokio::select! {
            body = resource.read_at(&uri, params) => body,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the read was cancelled", None));
            }
        }
        .map_err(|error| {
            let data = Some(serde_json::json!({ "uri": uri }));
            match error {
                ResourceError::InvalidUri(message) => ErrorData::invalid_params(message, data),
                other => {
                    ErrorData::internal_error(format!("reading `{uri}` failed: {other}"), data)
                }
            }
        })?;
        self.within_limit(&uri, body.len())?;
        let mut result = ReadResourceResult::new(vec![resource.contents(&uri, body)]);
        if let Some((ttl, scope)) = cache_hints(self, context) {
            result.ttl_ms = Some(ttl);
            result.cache_scope = Some(scope);
        }
        Ok(result)
    }

    /// `prompts/get`: an unknown prompt and arguments that do not fit are `-32602` saying what is
    /// wrong; a prompt whose function fails is `-32603` with its message; messages larger than the
    /// result bound are `-32603` saying both sizes.
    pub(super) async fn get_context_prompt(
        &self,
        request: GetPromptRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let store = self.context_or_not_found("prompts/get")?;
        let Some(prompt) = store.prompt(&request.name) else {
            let names: Vec<String> = store
                .prompts()
                .iter()
                .map(|p| p.name().to_owned())
                .collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "no prompt named `{}`; the prompts: {}",
                    request.name,
                    if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.join(", ")
                    }
                ),
                None,
            ));
        };
        // The prompt may ask the client, as a tool may: by requests, or in `input_required` rounds.
        let answers = self.config.state_key.open(
            "prompts/get",
            prompt.name(),
            request.request_state.as_deref(),
            request.input_responses,
        )?;
        let (asker, _forwarding, rounds) = ClientAsker::open(self, context, answers);
        let ctx = PromptContext::asking(self.config.info.name.clone(), asker);
        let getting = async {
            tokio::select! {
                messages = prompt.messages(request.arguments.unwrap_or_default(), ctx) => Some(messages),
                () = context.ct.cancelled() => None,
            }
        };
        let messages = match self
            .in_round(rounds.as_deref(), "prompts/get", prompt.name(), getting)
            .await
        {
            Outcome::Done(Some(messages)) => messages,
            Outcome::Done(None) => {
                return Err(ErrorData::internal_error("the prompt was cancelled", None));
            }
            stopped => {
                return stopped
                    .map(|_| -> GetPromptResult { unreachable!("done above") })
                    .response(prompt.name());
            }
        }
        .map_err(|error| match error {
            PromptError::InvalidArguments(message) => ErrorData::invalid_params(message, None),
            other => ErrorData::internal_error(
                format!("the prompt `{}` failed: {other}", prompt.name()),
                None,
            ),
        })?;
        let size = serde_json::to_vec(&messages).map_or(usize::MAX, |json| json.len());
        let limit = self.config.max_result_bytes;
        if size > limit {
            return Err(ErrorData::internal_error(
                format!(
                    "the prompt `{}` made {size} bytes of messages, over this server's limit of {limit} bytes",
                    prompt.name()
                ),
                None,
            ));
        }
        let mut result = GetPromptResult::new(messages);
        result.description.clone_from(&prompt.listed().description);
        Ok(result.into())
    }

    /// `completion/complete`: the candidates of a prompt's argument or a template's parameter. A
    /// reference to nothing the server has is `-32602`; an argument without completions gets none.
    pub(super) fn complete_context(
        &self,
        request: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        let store = self.context_or_not_found("completion/complete")?;
        let argument = &request.argument.name;
        let completer: Option<Completer> = match &request.r#ref {
            Reference::Prompt(reference) => {
                let prompt = store.prompt(&reference.name).ok_or_else(|| {
                    ErrorData::invalid_params(format!("no prompt named `{}`", reference.name), None)
                })?;
                if !prompt.arguments.iter().any(|known| &known.name == argument) {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "the prompt `{}` has no argument `{argument}`",
                            reference.name
                        ),
                        None,
                    ));
                }
                prompt.completers.get(argument).cloned()
            }
            Reference::Resource(reference) => {
                let template = store.template(&reference.uri).ok_or_else(|| {
                    ErrorData::invalid_params(
                        format!("no resource template `{}`", reference.uri),
                        None,
                    )
                })?;
                template.completers.get(argument).cloned()
            }
            _ => {
                return Err(ErrorData::invalid_params(
                    "completion/complete completes `ref/prompt` and `ref/resource` references",
                    None,
                ));
            }
        };
        let completion = match completer {
            Some(completer) => completer.complete(&request.argument.value),
            None => Default::default(),
        };
        Ok(CompleteResult::new(completion))
    }

    /// `resources/subscribe`: the connection hears `notifications/resources/updated` for `uri` from
    /// now on. Not a method of 2026-07-28 (`-32601`), whose clients listen instead.
    pub(super) fn subscribe_context(
        &self,
        uri: String,
        context: &RequestContext<RoleServer>,
        subscribe: bool,
    ) -> Result<(), ErrorData> {
        let method = if subscribe {
            "resources/subscribe"
        } else {
            "resources/unsubscribe"
        };
        let store = self.context_or_not_found(method)?;
        if is_modern(context) {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                method.to_owned(),
                None,
            ));
        }
        if !subscribe {
            lock(&self.subscribed.uris).remove(&uri);
            return Ok(());
        }
        lock(&self.subscribed.uris).insert(uri);
        let mut forwarding = lock(&self.subscribed.forwarding);
        if forwarding.is_none() {
            let updates = store.updates();
            let subscribed = Arc::downgrade(&self.subscribed);
            let peer = context.peer.clone();
            let shutdown = self.config.shutdown.clone();
            let task = tokio::spawn(async move {
                tokio::select! {
                    () = forward_updates(updates, subscribed, peer) => {}
                    () = shutdown.cancelled() => {}
                }
            });
            *forwarding = Some(tokio_util::task::AbortOnDropHandle::new(task));
        }
        Ok(())
    }
}

/// A 2026-07-28 client's `subscriptions/listen` stream: the lists' changes and the updates of the
/// resources it named, until the subscription ends (rmcp drops what its filter did not accept).
pub(super) async fn listen(store: &ContextStore, subscription: &SubscriptionContext) {
    let mut changes = store.changes();
    let mut updates = store.updates();
    let mut seen = *changes.borrow_and_update();
    let sink = subscription.sink();
    loop {
        let sent = tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                let now = *changes.borrow_and_update();
                let (resources, prompts) = (now.0 != seen.0, now.1 != seen.1);
                seen = now;
                let mut sent = Ok(());
                if resources {
                    sent = sent.and(sink.notify_resource_list_changed().await);
                }
                if prompts {
                    sent = sent.and(sink.notify_prompt_list_changed().await);
                }
                sent
            }
            update = updates.recv() => match update {
                Ok(uri) => sink.notify_resource_updated(uri).await,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            },
        };
        // A notification the filter did not accept is not sent; only a closed subscription ends this.
        if matches!(sent, Err(SubscriptionSendError::SubscriptionClosed)) {
            return;
        }
    }
}

/// Tells the client of each update of a resource it subscribed to, while its connection lasts.
async fn forward_updates(
    mut updates: broadcast::Receiver<String>,
    subscribed: Weak<Subscribed>,
    peer: Peer<RoleServer>,
) {
    loop {
        let uri = match updates.recv().await {
            Ok(uri) => uri,
            // Updates missed while the client was slow: it re-reads what it hears of next.
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(subscribed) = subscribed.upgrade() else {
            return; // the connection is gone
        };
        if !lock(&subscribed.uris).contains(&uri) {
            continue;
        }
        drop(subscribed);
        let notification = ResourceUpdatedNotificationParam::new(uri);
        if peer.notify_resource_updated(notification).await.is_err() {
            return;
        }
    }
}
