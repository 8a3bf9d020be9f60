//! The rmcp [`ServerHandler`] of an [`McpServer`]: what each request of a client does.

use rmcp::model::{
    CompleteRequestMethod, CompleteRequestParams, CompleteResult, GetPromptRequestMethod,
    GetPromptRequestParams, GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ReadResourceRequestMethod, ReadResourceRequestParams,
    ReadResourceResponse, SubscribeRequestParams, UnsubscribeRequestParams,
};

use super::context;
use super::listing::{mcp_tool, params_problem, resume_at};
use super::*;

impl ServerHandler for McpServer {
    #[allow(deprecated)] // logging: see the `use` above
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools();
        let mut capabilities = match self.config.list_changed {
            true => capabilities.enable_tool_list_changed().build(),
            false => capabilities.build(),
        };
        self.declare_context(&mut capabilities);
        #[cfg(feature = "mcp-skills")]
        self.declare_skills(&mut capabilities);
        self.declare_tasks(&mut capabilities);
        let config = ServerConfig::new(capabilities).with_server_info(self.config.info.clone());
        match &self.config.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    /// The revisions in [`PROTOCOL_VERSIONS`], said deliberately rather than whatever rmcp knows.
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        static VERSIONS: std::sync::LazyLock<Vec<ProtocolVersion>> =
            std::sync::LazyLock::new(|| {
                PROTOCOL_VERSIONS
                    .iter()
                    .map(|version| {
                        serde_json::from_value(Value::String((*version).to_owned()))
                            .expect("a protocol version is a string")
                    })
                    .collect()
            });
        std::borrow::Cow::Borrowed(VERSIONS.as_slice())
    }

    /// `subscriptions/listen` (2026-07-28): the tool list's changes, the only ones this server has.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::default();
        accepted.tools_list_changed = requested.tools_list_changed;
        if self.context_store().is_some() {
            accepted.prompts_list_changed = requested.prompts_list_changed;
            accepted.resources_list_changed = requested.resources_list_changed;
            accepted
                .resource_subscriptions
                .clone_from(&requested.resource_subscriptions);
        }
        Some(accepted)
    }

    /// Sends `notifications/tools/list_changed` on the subscription whenever the store's tools change,
    /// until the client ends it or the server shuts down.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        // Boxed, as every method that awaits more than a lookup: rmcp spawns each request's handling
        // as one future the size of the largest method's, copied whole on each spawn.
        Box::pin(async move {
            let mut changes = self.config.store.changes();
            changes.mark_unchanged();
            // The resources' and prompts' changes, and the updates of resources, when there are any: rmcp
            // drops the notifications the subscription's filter did not accept.
            let context = self.context_store().cloned();
            let context_listening = async {
                let Some(store) = context else {
                    return std::future::pending().await;
                };
                context::listen(&store, &subscription).await
            };
            tokio::pin!(context_listening);
            loop {
                tokio::select! {
                    () = subscription.cancelled() => return Ok(()),
                    () = self.config.shutdown.cancelled() => return Ok(()),
                    () = &mut context_listening => return Ok(()),
                    changed = changes.changed() => {
                        if changed.is_err() {
                            return Ok(()); // the store is gone
                        }
                        changes.mark_unchanged();
                        let notification = ServerNotification::ToolListChangedNotification(
                            rmcp::model::ToolListChangedNotification::default(),
                        );
                        if subscription.sink().send(notification).await.is_err() {
                            return Ok(()); // the subscription ended
                        }
                    }
                }
            }
        })
        .await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.config.listing.tools(&self.config.store);
        let cursor = request
            .as_ref()
            .and_then(|request| request.cursor.as_deref());
        let start = match cursor {
            None => 0,
            Some(cursor) => resume_at(&tools, cursor)?,
        };
        let end = start.saturating_add(self.config.page_size).min(tools.len());
        let next_cursor = (end < tools.len()).then(|| format!("{end}:{}", tools[end - 1].name));
        let mut page = ListToolsResult::with_all_items(tools[start..end].to_vec());
        page.next_cursor = next_cursor;
        if let Some((ttl, scope)) = context::cache_hints(self, &context) {
            page.ttl_ms = Some(ttl);
            page.cache_scope = Some(scope);
        }
        Ok(page)
    }

    /// `logging/setLevel`: the calls of this connection send log messages at `level` and above. Over
    /// the stateless HTTP server a request is a connection of its own, so the level holds for nothing
    /// after it; calls there send `info` and above.
    #[allow(deprecated)] // logging: see the `use` above
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = serde_json::to_value(request.level)
            .and_then(serde_json::from_value::<LogLevel>)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        *self
            .log_level
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = level;
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        #[cfg(feature = "mcp-skills")]
        if let Some(catalog) = self.skill_catalog() {
            return self.list_resources_with_skills(catalog, &context);
        }
        self.list_context_resources(&context)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.list_context_templates(&context)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        #[cfg(feature = "mcp-skills")]
        if let Some(read) = self.read_skill_file(&request.uri, &context) {
            return read.map(Into::into);
        }
        Box::pin(self.read_context_resource(request, &context))
            .await
            .map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribe_context(request.uri, &context, true)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribe_context(request.uri, &context, false)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.list_context_prompts(&context)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        Box::pin(self.get_context_prompt(request, &context)).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.complete_context(request)
    }

    #[cfg(feature = "mcp-skills")]
    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, ErrorData> {
        match self.skill_catalog() {
            Some(catalog) => Ok(self.list_skills_of(catalog, &context)),
            None => Err(ErrorData::method_not_found::<
                rmcp::model::ListSkillsRequestMethod,
            >()),
        }
    }

    #[cfg(feature = "mcp-skills")]
    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, ErrorData> {
        match self.skill_catalog() {
            Some(catalog) => self.get_skill_of(catalog, &request.uri, &context),
            None => Err(ErrorData::method_not_found::<
                rmcp::model::GetSkillRequestMethod,
            >()),
        }
    }

    #[cfg(feature = "mcp-skills")]
    async fn read_resource_directory(
        &self,
        request: rmcp::model::ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceDirectoryResult, ErrorData> {
        match self.skill_catalog() {
            Some(catalog) => Self::read_skill_directory(catalog, &request.uri),
            None => Err(ErrorData::method_not_found::<
                rmcp::model::ReadResourceDirectoryRequestMethod,
            >()),
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.config.store.get(name).as_ref().and_then(mcp_tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self.config.store.get(&request.name) else {
            return Err(ErrorData::invalid_params(
                pipeline::unknown_tool(&self.config.store, &request.name),
                None,
            ));
        };
        // No `arguments` is `null`, which the pipeline reads as `{}`.
        let arguments = request.arguments.map_or(Value::Null, Value::Object);
        // Boxed: see `listen`. A task keeps the state and the answers, and opens them on each run.
        let state = request.request_state.as_deref();
        let responses = request.input_responses.as_ref();
        if let Some(answer) =
            Box::pin(self.dispatch_task(&tool, &arguments, state, responses, &context)).await
        {
            return answer;
        }
        let answers = self.config.state_key.open(
            "tools/call",
            tool.name(),
            request.request_state.as_deref(),
            request.input_responses,
        )?;
        let span = telemetry::mcp_tool_call(tool.name(), &context.id);
        // A client that sent its trace context (`_meta.traceparent`) gets this call in its trace.
        #[cfg(feature = "otel")]
        if let Some(parent) = context.meta.0.get_traceparent() {
            crate::otel::set_remote_parent(&span, parent, context.meta.0.get_tracestate());
        }
        // Boxed: see `listen`.
        let calling = Box::pin(self.call(&tool, arguments, answers, &context));
        let outcome = if span.is_disabled() {
            calling.await
        } else {
            calling.instrument(span).await
        };
        outcome
            .map(|message| call_tool_result(bounded(message, self.config.max_result_bytes)))
            .response(tool.name())
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.get_task_of(request, &context).await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.update_task_of(request, &context).await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.cancel_task_of(request, &context).await
    }

    /// A request rmcp could not read as any request it knows. For a method the server serves, that is
    /// bad params (`-32602`, with what is wrong); only other methods are not found (`-32601`).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method.as_str();
        let problem = match method {
            CallToolRequestMethod::VALUE => match &request.params {
                None => "`params` with the tool's `name` are required".to_owned(),
                Some(params) => params_problem::<CallToolRequestParams>(params),
            },
            ListToolsRequestMethod::VALUE => match &request.params {
                None => "`params` must be an object".to_owned(),
                Some(params) => params_problem::<PaginatedRequestParams>(params),
            },
            // Served only with a context store; without one these are not found.
            ReadResourceRequestMethod::VALUE if self.context_store().is_some() => {
                match &request.params {
                    None => "`params` with the resource's `uri` are required".to_owned(),
                    Some(params) => params_problem::<ReadResourceRequestParams>(params),
                }
            }
            GetPromptRequestMethod::VALUE if self.context_store().is_some() => {
                match &request.params {
                    None => "`params` with the prompt's `name` are required".to_owned(),
                    Some(params) => params_problem::<GetPromptRequestParams>(params),
                }
            }
            CompleteRequestMethod::VALUE if self.context_store().is_some() => {
                match &request.params {
                    None => "`params` with `ref` and `argument` are required".to_owned(),
                    Some(params) => params_problem::<CompleteRequestParams>(params),
                }
            }
            // Served only with skills (SEP-2640).
            #[cfg(feature = "mcp-skills")]
            "skills/get" | "resources/directory/read" if self.skill_catalog().is_some() => {
                match &request.params {
                    None => "`params` with the `uri` are required".to_owned(),
                    Some(params) => params_problem::<rmcp::model::GetSkillRequestParams>(params),
                }
            }
            _ => {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    method.to_owned(),
                    None,
                ));
            }
        };
        Err(ErrorData::invalid_params(
            format!("invalid params for `{method}`: {problem}"),
            None,
        ))
    }
}
