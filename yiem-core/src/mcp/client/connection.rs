//! Opening a connection to a server (stdio or HTTP, both revisions, OAuth) and the client's handler of
//! what the server sends.

use super::calls::{answer_elicitation, answer_sampling, elicit_through, sample_through};
use super::*;

impl Handler {
    /// The call a question without a handler goes to ([`McpClientBuilder::ask_through_calls`]): a
    /// request of an earlier revision's server names no call, so it is the one waiting call's, if
    /// exactly one waits. (2026-07-28 servers ask in the call's own answer instead.)
    fn through_call(&self, handled: bool) -> Option<(ToolContext, CancellationToken)> {
        if !self.ask_through_calls || handled {
            return None;
        }
        self.client.upgrade()?.only_waiting_call()
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicitation.is_some() || self.ask_through_calls {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        if self.sampling.is_some() || self.ask_through_calls {
            #[allow(deprecated)]
            let sampling = SamplingCapability::default();
            capabilities.sampling = Some(sampling);
        }
        // A long call may be run as a task, which the client follows (see `tasks`).
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(
                rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                serde_json::Map::new(),
            );
        ClientConfig::new(
            capabilities,
            Implementation::new("yiem", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let Some((ctx, ended)) = self.through_call(self.elicitation.is_some()) {
            return tokio::select! {
                answer = elicit_through(&ctx, request) => answer,
                () = ended.cancelled() => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            };
        }
        answer_elicitation(self.elicitation.as_ref(), &self.server, request).await
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        if let Some((ctx, ended)) = self.through_call(self.sampling.is_some()) {
            return tokio::select! {
                answer = sample_through(&ctx, params) => answer,
                () = ended.cancelled() => Err(ErrorData::new(
                    ErrorCode(-1),
                    "the call that was waiting for this ended",
                    None,
                )),
            };
        }
        answer_sampling(self.sampling.as_ref(), &self.server, params).await
    }

    /// A task changed: the calls following tasks read theirs now rather than at their next poll.
    async fn on_task_status(
        &self,
        _params: rmcp::model::TaskStatusNotificationParams,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(client) = self.client.upgrade() {
            client.task_changes.notify_waiters();
        }
    }

    // Logging is deprecated by SEP-2577 (the 2026-07-28 revision), but servers of the earlier
    // revisions send it.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // What the server wrote goes out escaped (`?`), never raw into a terminal.
        let server = self.server.as_str();
        let logger = params.logger.as_deref().unwrap_or("");
        let data = &params.data;
        match params.level {
            LoggingLevel::Debug => tracing::debug!(server, logger, ?data, "MCP server log"),
            LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::info!(server, logger, ?data, "MCP server log")
            }
            LoggingLevel::Warning => tracing::warn!(server, logger, ?data, "MCP server log"),
            _ => tracing::error!(server, logger, ?data, "MCP server log"),
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(route) = routes.get(&params.progress_token) {
            let _ = route.send(params);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(client) = self.client.upgrade() {
            let client = McpClient { inner: client };
            tokio::spawn(async move {
                if let Err(error) = client.refresh().await {
                    tracing::warn!(%error, "could not re-list the tools after tools/list_changed");
                }
            });
        }
    }
}

/// Over HTTP the client speaks the 2026-07-28 revision (`server/discover`, no session) to servers
/// that offer it and falls back to `initialize` at 2025-11-25 for those that answer it as unknown
/// (or not within 10 s).
pub(super) fn both_revisions() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

impl Inner {
    /// The count of authorizations completed so far, read before a request goes out.
    pub(super) fn generation(&self) -> u64 {
        self.authorizer
            .as_ref()
            .map_or(0, |authorizer| authorizer.generation())
    }

    /// Gets a request refused with `challenge` (sent at `generation`) through: authorizes or steps up
    /// once per request, after which the caller retries it; an error when that is not possible.
    pub(super) async fn get_through(
        &self,
        challenge: &str,
        generation: u64,
        tries: &mut Tries,
    ) -> Result<(), McpClientError> {
        match &self.authorizer {
            Some(authorizer) => authorizer.recover(challenge, generation, tries).await,
            None => Err(McpClientError::Authorization {
                server: self.name.clone(),
                detail: format!(
                    "it asks for authorization (`WWW-Authenticate: {}`); configure OAuth with \
                     `McpClientBuilder::oauth` (feature `mcp-oauth`) or give a token with \
                     `McpClientBuilder::bearer_token`",
                    challenge.escape_debug()
                ),
            }),
        }
    }

    pub(super) fn lock_stores(&self) -> std::sync::MutexGuard<'_, Vec<(ToolStore, Vec<String>)>> {
        self.stores.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the server (or opens the HTTP session) and completes the handshake.
    pub(super) async fn open(self: &Arc<Self>) -> Result<Connection, McpClientError> {
        // A new connection (a restarted server, say) lists anew.
        *self.listing.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let connect_error = |detail: String| McpClientError::Connect {
            server: self.name.clone(),
            detail,
        };
        let handler = || Handler {
            routes: Arc::clone(&self.routes),
            client: Arc::downgrade(self),
            server: self.name.clone(),
            elicitation: self.elicitation.clone(),
            sampling: self.sampling.clone(),
            ask_through_calls: self.ask_through_calls,
        };
        let handshake = || async {
            match &self.target {
                Target::Command { program, args, env } => {
                    let mut command = tokio::process::Command::new(program);
                    command.args(args).kill_on_drop(true);
                    for (key, value) in env {
                        command.env(key, value);
                    }
                    let (transport, _stderr) = TokioChildProcess::builder(command)
                        .stderr(std::process::Stdio::inherit())
                        .spawn()
                        .map_err(|error| {
                            Handshake::Failed(connect_error(format!(
                                "cannot start `{program}`: {error}"
                            )))
                        })?;
                    handler()
                        .serve(transport)
                        .await
                        .map_err(|error| Handshake::Failed(connect_error(error.to_string())))
                }
                Target::Http { url, bearer, .. } => {
                    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    config.allow_stateless = true;
                    config.reinit_on_expired_session = true;
                    if let Some(token) = bearer {
                        config = config.auth_header(token.clone());
                    }
                    let serve = |lifecycle: ClientLifecycleMode| {
                        let config = config.clone();
                        async move {
                            match &self.authorizer {
                                #[cfg(feature = "mcp-oauth")]
                                Some(authorizer) => {
                                    let transport = StreamableHttpClientTransport::with_client(
                                        authorizer.http_client(),
                                        config,
                                    );
                                    handler().serve_with_lifecycle(transport, lifecycle).await
                                }
                                _ => {
                                    let transport =
                                        StreamableHttpClientTransport::from_config(config);
                                    handler().serve_with_lifecycle(transport, lifecycle).await
                                }
                            }
                        }
                    };
                    let served = match serve(both_revisions()).await {
                        // A server that answers `server/discover` with something else than a
                        // discovery result or an error (some answer every request with `{}`) gets
                        // the `initialize` handshake of the earlier revisions.
                        Err(error) if error.auth_challenge().is_none() => {
                            tracing::debug!(server = %self.name, %error, "discovery failed; trying `initialize`");
                            serve(ClientLifecycleMode::Initialize).await
                        }
                        served => served,
                    };
                    served.map_err(|error| match error.auth_challenge() {
                        Some(challenge) => Handshake::Refused(challenge.to_owned()),
                        None => Handshake::Failed(connect_error(error.to_string())),
                    })
                }
            }
        };
        let limit = self.limits.connect_timeout;
        let mut tries = Tries::default();
        let service = loop {
            let generation = self.generation();
            // Out of time, the handshake's future is dropped, and with it the transport and its
            // process.
            let outcome =
                tokio::time::timeout(limit, handshake())
                    .await
                    .map_err(|_| McpClientError::Limit {
                        server: self.name.clone(),
                        limit: "connect_timeout",
                        detail: format!(
                            "it did not complete the `initialize` handshake within {limit:?}; if it is \
                             only slow to start, raise the limit with `McpClientBuilder::connect_timeout`"
                        ),
                    })?;
            match outcome {
                Ok(service) => break service,
                Err(Handshake::Failed(error)) => return Err(error),
                Err(Handshake::Refused(challenge)) => {
                    self.get_through(&challenge, generation, &mut tries).await?;
                }
            }
        };
        let listening = self.listen(service.peer());
        Ok(Connection {
            service,
            alive: Arc::new(AtomicBool::new(true)),
            _listening: listening,
        })
    }

    /// For a server of the 2026-07-28 revision that announces tool-list changes, which it sends only
    /// on a `subscriptions/listen` stream: opens one and re-lists the tools at each change (the
    /// earlier revisions' notification is handled by `Handler::on_tool_list_changed`).
    pub(super) fn listen(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
    ) -> Option<tokio_util::task::AbortOnDropHandle<()>> {
        let server = peer.peer_info()?;
        let announces = server
            .capabilities
            .tools
            .as_ref()
            .is_some_and(|tools| tools.list_changed == Some(true));
        if server.protocol_version < ProtocolVersion::V_2026_07_28 || !announces {
            return None;
        }
        let peer = peer.clone();
        let client = Arc::downgrade(self);
        let name = self.name.clone();
        let listening = tokio::spawn(async move {
            let mut filter = SubscriptionFilter::default();
            filter.tools_list_changed = Some(true);
            let mut subscription = match peer.listen(filter).await {
                Ok(subscription) => subscription,
                Err(error) => {
                    tracing::debug!(server = name, %error, "could not listen for tool-list changes");
                    return;
                }
            };
            while let Ok(Some(notification)) = subscription.next().await {
                if !matches!(
                    notification,
                    ServerNotification::ToolListChangedNotification(_)
                ) {
                    continue;
                }
                let Some(inner) = client.upgrade() else {
                    return;
                };
                if let Err(error) = (McpClient { inner }).refresh().await {
                    tracing::warn!(%error, "could not re-list the tools after tools/list_changed");
                }
            }
        });
        Some(tokio_util::task::AbortOnDropHandle::new(listening))
    }

    /// The live connection's peer, reconnecting (after a bounded backoff) if the last one died.
    pub(super) async fn peer(self: &Arc<Self>) -> Result<Peer<RoleClient>, McpClientError> {
        self.peer_and_flag().await.map(|(peer, _)| peer)
    }

    pub(super) async fn peer_and_flag(
        self: &Arc<Self>,
    ) -> Result<(Peer<RoleClient>, Arc<AtomicBool>), McpClientError> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref()
            && connection.alive.load(Ordering::SeqCst)
            && !connection.service.is_transport_closed()
        {
            return Ok((
                connection.service.peer().clone(),
                Arc::clone(&connection.alive),
            ));
        }
        // A dead connection is dropped here, which ends its process.
        slot.take();
        let failures = *self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if failures > 0 {
            // 100 ms, 200 ms, 400 ms … at most 5 s between attempts after failures in a row.
            let delay =
                Duration::from_millis(100u64 << failures.min(6)).min(Duration::from_secs(5));
            tokio::time::sleep(delay).await;
        }
        match self.open().await {
            Ok(connection) => {
                *self.failures.lock().unwrap_or_else(|p| p.into_inner()) = 0;
                let peer = connection.service.peer().clone();
                let alive = Arc::clone(&connection.alive);
                *slot = Some(connection);
                Ok((peer, alive))
            }
            Err(error) => {
                *self.failures.lock().unwrap_or_else(|p| p.into_inner()) += 1;
                Err(error)
            }
        }
    }
}
