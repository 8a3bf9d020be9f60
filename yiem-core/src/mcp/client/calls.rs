//! One call of a server's tool: progress, cancellation, time limit, rounds of questions, and the
//! server's requests answered.

use super::*;
use crate::mcp::convert::*;

impl Inner {
    /// One call of `remote` on the server: progress, cancellation, time limit and failures as the module
    /// docs say.
    pub(super) async fn call(
        self: Arc<Self>,
        remote: &str,
        ctx: ToolContext,
        args: Value,
    ) -> AgentToolResult {
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return AgentToolResult::error(format!(
                    "tool `{remote}` takes a JSON object of arguments, not {other}"
                ));
            }
        };
        // A listing past the time the server said it is fresh is renewed first, so the next request
        // to the model sees what the server offers now.
        if self.take_stale_listing() {
            let client = McpClient {
                inner: Arc::clone(&self),
            };
            if let Err(error) = client.refresh().await {
                tracing::warn!(%error, "could not list the tools again after their `ttlMs`");
            }
        }
        let _waits = self.ask_through_calls.then(|| self.waits(&ctx));
        // A call refused for authorization is retried once it has been obtained (once per call).
        let mut tries = Tries::default();
        loop {
            let generation = self.generation();
            let challenge = match self.call_once(remote, &ctx, arguments.clone()).await {
                Ok(result) => return result,
                Err(challenge) => challenge,
            };
            if let Err(error) = self.get_through(&challenge, generation, &mut tries).await {
                return AgentToolResult::error(format!("{error}; `{remote}` was not run"));
            }
        }
    }

    /// Whether the last listing was fresh for a time the server gave, which is over; if so it is marked
    /// as being listed again, so one caller lists it.
    pub(super) fn take_stale_listing(&self) -> bool {
        let mut listing = self.listing.lock().unwrap_or_else(|p| p.into_inner());
        let Some(listing) = listing.as_mut() else {
            return false;
        };
        match listing.fresh_until {
            Some(until) if Instant::now() >= until => {
                listing.fresh_until = None;
                true
            }
            _ => false,
        }
    }

    /// Counts `ctx`'s call among those waiting for the server until the returned guard drops.
    pub(super) fn waits(self: &Arc<Self>, ctx: &ToolContext) -> Waits {
        let number = self.calls.fetch_add(1, Ordering::Relaxed);
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(WaitingCall {
                number,
                ctx: ctx.clone(),
                ended: CancellationToken::new(),
            });
        Waits {
            client: Arc::clone(self),
            number,
        }
    }

    /// The context of the one call waiting for the server, with its end; none when no call or several
    /// wait, as a question of an earlier revision's server cannot say which call it is for.
    pub(super) fn only_waiting_call(&self) -> Option<(ToolContext, CancellationToken)> {
        match self
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_slice()
        {
            [call] => Some((call.ctx.clone(), call.ended.clone())),
            _ => None,
        }
    }

    /// One try of a call: its result, or the challenge of a server that refused it (401, 403).
    pub(super) async fn call_once(
        self: &Arc<Self>,
        remote: &str,
        ctx: &ToolContext,
        arguments: Option<serde_json::Map<String, Value>>,
    ) -> Result<AgentToolResult, String> {
        let server = &self.name;
        let (peer, alive) = match self.peer_and_flag().await {
            Ok(connected) => connected,
            Err(error) => {
                return Ok(AgentToolResult::error(format!(
                    "{error}; `{remote}` was not run"
                )));
            }
        };
        let mut params = CallToolRequestParams::new(remote.to_owned());
        params.arguments = arguments;
        // The call's trace goes on in the server: the context of the span this runs in (the pipeline's
        // `execute_tool`), in `_meta` as the protocol's 2026-07-28 revision carries it.
        #[cfg(feature = "otel")]
        if let Some((parent, state)) = crate::otel::traceparent(&tracing::Span::current()) {
            let mut meta = rmcp::model::RequestMetaObject::new();
            meta.0.set_traceparent(parent);
            if let Some(state) = state {
                meta.0.set_tracestate(state);
            }
            params.meta = Some(meta);
        }
        // The call's time limit covers every round, the person's answers included.
        let limit = tokio::time::sleep(self.call_timeout);
        tokio::pin!(limit);
        let mut rounds = 0;
        loop {
            let answer = match self
                .call_round(remote, ctx, &peer, &alive, params.clone(), limit.as_mut())
                .await?
            {
                Round::Done(result) => return Ok(result),
                Round::Ask(asked) => asked,
            };
            // A server of the 2026-07-28 revision asks its questions by answering `input_required`;
            // the call is made again with the answers and the state it gave.
            rounds += 1;
            if rounds > MAX_INPUT_ROUNDS {
                return Ok(AgentToolResult::error(format!(
                    "MCP server `{server}` asked for input more than {MAX_INPUT_ROUNDS} times during \
                     `{remote}`; the call was given up"
                )));
            }
            let answers = tokio::select! {
                biased;
                () = ctx.cancelled() => return Ok(AgentToolResult::error(format!(
                    "the call of `{remote}` on MCP server `{server}` was cancelled"
                ))),
                () = &mut limit => return Ok(AgentToolResult::error(format!(
                    "MCP server `{server}` did not answer `{remote}` within {:?}; the call was cancelled",
                    self.call_timeout
                ))),
                answers = self.answer_inputs(ctx, answer.input_requests.unwrap_or_default()) => answers,
            };
            match answers {
                Ok(answers) => params.input_responses = Some(answers),
                Err(refusal) => {
                    return Ok(AgentToolResult::error(format!(
                        "MCP server `{server}` asked for input during `{remote}` that this client cannot \
                     give: {refusal}; the call was given up"
                    )));
                }
            }
            params.request_state = answer.request_state;
        }
    }

    /// One round of a call: the request, its progress, cancellation and time limit, and the server's
    /// answer — the result, or questions to answer before the call can go on.
    pub(super) async fn call_round(
        self: &Arc<Self>,
        remote: &str,
        ctx: &ToolContext,
        peer: &Peer<RoleClient>,
        alive: &AtomicBool,
        params: CallToolRequestParams,
        mut limit: std::pin::Pin<&mut tokio::time::Sleep>,
    ) -> Result<Round, String> {
        let server = &self.name;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(error) => {
                if let Some(challenge) = error.auth_challenge() {
                    return Err(challenge.to_owned());
                }
                alive.store(false, Ordering::SeqCst);
                return Ok(Round::Done(AgentToolResult::error(format!(
                    "MCP server `{server}` is not reachable ({error}); `{remote}` was not run, and the \
                     server is started again on the next call"
                ))));
            }
        };
        let (progress, mut updates) = mpsc::unbounded_channel();
        let route = Route::open(&self.routes, handle.progress_token.clone(), progress);
        let mut abandoned = Abandoned {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        let response = handle.await_response();
        tokio::pin!(response);
        let outcome = loop {
            tokio::select! {
                biased;
                () = ctx.cancelled() => break Err(format!("the call of `{remote}` on MCP server `{server}` was cancelled")),
                () = &mut limit => break Err(format!(
                    "MCP server `{server}` did not answer `{remote}` within {:?}; the call was cancelled",
                    self.call_timeout
                )),
                Some(update) = updates.recv() => ctx.update(AgentToolResult::text(progress_text(&update))),
                answer = &mut response => break Ok(answer),
            }
        };
        drop(route);
        Ok(Round::Done(match outcome {
            // The server answered: nothing to cancel.
            Ok(Ok(ServerResult::CallToolResult(result))) => {
                abandoned.id = None;
                from_mcp(result)
            }
            Ok(Ok(ServerResult::InputRequiredResult(asked))) => {
                abandoned.id = None;
                return Ok(Round::Ask(asked));
            }
            // The server runs the call as a task: followed to its end (see `tasks`).
            Ok(Ok(ServerResult::CreateTaskResult(created))) => {
                abandoned.id = None;
                self.follow_task(remote, ctx, peer, created.task, limit)
                    .await
            }
            Ok(Ok(other)) => {
                abandoned.id = None;
                AgentToolResult::error(format!(
                    "MCP server `{server}` answered `{remote}` with something other than a tool result: {}",
                    serde_json::to_string(&other).unwrap_or_default()
                ))
            }
            Ok(Err(error)) => {
                abandoned.id = None;
                // Refused for authorization: the connection is fine, the caller gets through and
                // retries.
                if let Some(challenge) = error.auth_challenge() {
                    return Err(challenge.to_owned());
                }
                // The server answered with an error: the connection is fine.
                if let ServiceError::McpError(refusal) = &error {
                    return Ok(Round::Done(AgentToolResult::error(format!(
                        "MCP server `{server}` refused `{remote}` (error {}): {}",
                        refusal.code.0, refusal.message
                    ))));
                }
                alive.store(false, Ordering::SeqCst);
                AgentToolResult::error(format!(
                    "MCP server `{server}` failed during `{remote}` ({error}); the server is started \
                     again on the next call"
                ))
            }
            // Cancelled or out of time: `abandoned` tells the server on drop.
            Err(reason) => AgentToolResult::error(reason),
        }))
    }

    /// The answers to a server's questions (elicitations and sampling requests), each from the handler
    /// the application gave; `Err` names a question this client cannot answer.
    pub(super) async fn answer_inputs(
        &self,
        ctx: &ToolContext,
        asked: InputRequests,
    ) -> Result<InputResponses, String> {
        let mut answers = InputResponses::new();
        for (key, request) in asked {
            let through_call = self.ask_through_calls.then_some(ctx);
            let answer = match request {
                InputRequest::Elicitation(request) => match (&self.elicitation, through_call) {
                    (None, Some(ctx)) => elicit_through(ctx, request.params).await,
                    _ => {
                        answer_elicitation(self.elicitation.as_ref(), &self.name, request.params)
                            .await
                    }
                }
                .and_then(|answer| serde_json::to_value(answer).map_err(internal)),
                InputRequest::CreateMessage(request) => match (&self.sampling, through_call) {
                    (None, Some(ctx)) => sample_through(ctx, request.params).await,
                    _ => answer_sampling(self.sampling.as_ref(), &self.name, request.params).await,
                }
                .and_then(|answer| serde_json::to_value(answer).map_err(internal)),
                _ => Err(ErrorData::invalid_params(
                    "this client offers no roots",
                    None,
                )),
            };
            match answer {
                Ok(answer) => answers.insert(key, answer),
                Err(error) => return Err(format!("`{key}`: {}", error.message)),
            };
        }
        Ok(answers)
    }
}

/// A server's question asked as the waiting call's own ([`McpClientBuilder::ask_through_calls`]); the
/// answer as MCP's elicitation result.
pub(super) async fn elicit_through(
    ctx: &ToolContext,
    request: ElicitRequestParams,
) -> Result<ElicitResult, ErrorData> {
    let (message, schema) = form_of(request)?;
    let answer = match ctx.elicit_with_schema(message, schema.clone()).await {
        Ok(answer) => answer,
        // Nobody to ask where the call runs: declined, as a client without a handler does.
        Err(error) => {
            tracing::debug!(%error, "a server's question could not be asked through the call");
            ElicitationAnswer::Decline
        }
    };
    Ok(elicit_result(answer, &schema))
}

/// A server's sampling request made as the waiting call's own ([`McpClientBuilder::ask_through_calls`]).
#[allow(deprecated)]
pub(super) async fn sample_through(
    ctx: &ToolContext,
    params: CreateMessageRequestParams,
) -> Result<CreateMessageResult, ErrorData> {
    // The call's context names who asks (its store).
    let request = sampling_of(String::new(), params);
    match ctx.sample(request).await {
        Ok(answer) => message_result(answer),
        Err(error) => Err(ErrorData::new(ErrorCode(-1), error.to_string(), None)),
    }
}

pub(super) fn internal(error: serde_json::Error) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

/// The answer of `handler` (none: declined) to a server's question, asked by a request of the server's
/// or in a call's `input_required` answer.
pub(super) async fn answer_elicitation(
    handler: Option<&Arc<dyn ElicitationHandler>>,
    server: &str,
    request: ElicitRequestParams,
) -> Result<ElicitResult, ErrorData> {
    let Some(handler) = handler else {
        return Ok(ElicitResult::new(ElicitationAction::Decline));
    };
    let (message, schema) = form_of(request)?;
    let question = Elicitation {
        server: server.to_owned(),
        message,
        schema: schema.clone(),
    };
    Ok(elicit_result(handler.elicit(question).await, &schema))
}

/// The answer of `handler` to a server's sampling request (none: refused as not offered).
#[allow(deprecated)]
pub(super) async fn answer_sampling(
    handler: Option<&Arc<dyn SamplingHandler>>,
    server: &str,
    params: CreateMessageRequestParams,
) -> Result<CreateMessageResult, ErrorData> {
    let Some(handler) = handler else {
        return Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "this client does not offer sampling",
            None,
        ));
    };
    message_result(handler.sample(sampling_of(server.to_owned(), params)).await)
}

impl Route {
    fn open(
        routes: &Routes,
        token: ProgressToken,
        sender: mpsc::UnboundedSender<ProgressNotificationParam>,
    ) -> Route {
        routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.clone(), sender);
        Route {
            routes: Arc::clone(routes),
            token,
        }
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.token);
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        let notification = CancelledNotification::new(CancelledNotificationParam::new(
            Some(id),
            Some("the caller cancelled the tool call".into()),
        ));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.send_notification(notification.into()).await;
            });
        }
    }
}

pub(super) fn progress_text(update: &ProgressNotificationParam) -> String {
    match (&update.message, update.total) {
        (Some(message), _) => message.clone(),
        (None, Some(total)) => format!("{}/{}", update.progress, total),
        (None, None) => update.progress.to_string(),
    }
}
