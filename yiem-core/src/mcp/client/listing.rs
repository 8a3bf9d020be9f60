//! `tools/list`: the server's tools, bounded and checked, as yiem's tools.

use super::*;

impl Inner {
    /// The last listing's tools, if the server said they are still fresh.
    pub(super) fn fresh_listing(&self) -> Option<Vec<Tool>> {
        let listing = self.listing.lock().unwrap_or_else(|p| p.into_inner());
        let listing = listing.as_ref()?;
        let fresh = listing.fresh_until? > Instant::now();
        fresh.then(|| listing.tools.clone())
    }

    /// Every page of the server's `tools/list`, within the limits: each page answered in time, at most
    /// so many pages and tools, no schema nested too deep. Kept as the listing, fresh for the shortest
    /// `ttlMs` of its pages.
    pub(super) async fn list_all(
        &self,
        peer: &Peer<RoleClient>,
    ) -> Result<Vec<Tool>, McpClientError> {
        let asked = Instant::now();
        let (tools, ttl) = self.list_pages(peer).await?;
        let fresh_until = (ttl > 0).then(|| asked + Duration::from_millis(ttl).min(MAX_LIST_TTL));
        *self.listing.lock().unwrap_or_else(|p| p.into_inner()) = Some(Listing {
            tools: tools.clone(),
            fresh_until,
        });
        Ok(tools)
    }

    /// Every page of the server's `tools/list` (see [`list_all`](Self::list_all)), with the shortest
    /// `ttlMs` of the pages (a page without one counts as 0).
    pub(super) async fn list_pages(
        &self,
        peer: &Peer<RoleClient>,
    ) -> Result<(Vec<Tool>, u64), McpClientError> {
        let Limits {
            list_timeout,
            max_pages,
            max_tools,
            max_schema_depth,
            ..
        } = self.limits;
        let limit = |limit: &'static str, detail: String| McpClientError::Limit {
            server: self.name.clone(),
            limit,
            detail,
        };
        let mut tools = Vec::new();
        let mut ttl = u64::MAX;
        let mut cursor = None;
        for page in 1.. {
            if page > max_pages {
                return Err(limit(
                    "max_pages",
                    format!(
                        "its `tools/list` still had a `nextCursor` after {max_pages} pages; raise the \
                         limit with `McpClientBuilder::max_pages` if it really lists that many"
                    ),
                ));
            }
            let mut tries = Tries::default();
            let answer = loop {
                let generation = self.generation();
                let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(
                    PaginatedRequestParams::default().with_cursor(cursor.clone()),
                ));
                // rmcp's own time limit, which also tells the server the request was cancelled.
                let answer = match peer
                    .send_request_with_option(
                        request,
                        PeerRequestOptions::with_timeout(list_timeout),
                    )
                    .await
                {
                    Ok(handle) => handle.await_response().await,
                    Err(error) => Err(error),
                };
                match answer.as_ref().err().and_then(ServiceError::auth_challenge) {
                    Some(challenge) => {
                        self.get_through(challenge, generation, &mut tries).await?;
                    }
                    None => break answer,
                }
            };
            let listed = match answer {
                Ok(ServerResult::ListToolsResult(listed)) => listed,
                Ok(other) => {
                    return Err(self.request_error(
                        "tools/list",
                        format!(
                            "the answer is not a tool list: {}",
                            serde_json::to_string(&other).unwrap_or_default()
                        ),
                    ));
                }
                Err(ServiceError::Timeout { .. }) => {
                    return Err(limit(
                        "list_timeout",
                        format!(
                            "it did not answer page {page} of `tools/list` within {list_timeout:?} (an \
                             answer that is not JSON or nests deeper than 128 levels counts as none); \
                             raise the limit with `McpClientBuilder::list_timeout` if it is only slow"
                        ),
                    ));
                }
                Err(error) => return Err(self.request_error("tools/list", error)),
            };
            if tools.len() + listed.tools.len() > max_tools {
                return Err(limit(
                    "max_tools",
                    format!(
                        "it lists more than {max_tools} tools; raise the limit with \
                         `McpClientBuilder::max_tools` if an agent should see them all"
                    ),
                ));
            }
            for tool in &listed.tools {
                let mut schemas = std::iter::once(&tool.input_schema).chain(&tool.output_schema);
                if schemas.any(|schema| nests_deeper(schema, max_schema_depth)) {
                    return Err(limit(
                        "max_schema_depth",
                        format!(
                            "the schema of its tool `{}` nests deeper than {max_schema_depth} levels; \
                             raise the limit with `McpClientBuilder::max_schema_depth` if the schema \
                             is meant to",
                            tool.name
                        ),
                    ));
                }
            }
            tools.extend(listed.tools);
            ttl = ttl.min(listed.ttl_ms.unwrap_or(0));
            match listed.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Ok((tools, ttl))
    }

    pub(super) fn request_error(
        &self,
        request: &str,
        error: impl std::fmt::Display,
    ) -> McpClientError {
        McpClientError::Request {
            server: self.name.clone(),
            request: request.to_owned(),
            detail: error.to_string(),
        }
    }

    /// The group of this server's tools, for a provider's tool search: named after the server, described
    /// by its instructions (their first 300 characters) when it gave some.
    pub(super) fn namespace(&self, instructions: Option<&str>) -> ToolNamespace {
        let mut description = format!("The tools of the MCP server `{}`.", self.name);
        if let Some(instructions) = instructions.map(str::trim).filter(|text| !text.is_empty()) {
            description.push(' ');
            description.extend(instructions.chars().take(300));
        }
        ToolNamespace::new(&self.name, description)
    }

    /// The tool that forwards calls of `tool` to this server.
    pub(super) fn agent_tool(
        self: &Arc<Self>,
        tool: &Tool,
        namespace: &ToolNamespace,
    ) -> Result<AgentTool, McpClientError> {
        let listed = serde_json::to_value(tool).unwrap_or_default();
        let remote = tool.name.to_string();
        let name = format!("{}{}", self.prefix, remote);
        let description = tool
            .description
            .as_deref()
            .filter(|text| !text.trim().is_empty())
            .map(str::to_owned)
            .unwrap_or_else(|| format!("The `{remote}` tool of MCP server `{}`.", self.name));
        let schema = Value::Object((*tool.input_schema).clone());
        // A `null` for a property the server does not require means "not given", as SEP-2243 reads it
        // ("null or not provided") and as OpenAI strict mode writes every optional property: it is taken
        // out before the check, so the call goes out without it instead of being refused for a type the
        // server never asked for.
        let optional = schema.clone();
        let mut builder = AgentTool::builder(name)
            .description(description)
            .input_schema(schema)
            .prepare_arguments(move |args| Dialect::Mcp.normalize_arguments(&optional, args))
            .namespace(namespace.clone())
            .parallel()
            .annotations(annotations(&listed["annotations"]));
        if let Some(title) = tool.title.as_deref().filter(|title| !title.is_empty()) {
            builder = builder.label(title);
        }
        if let Some(output) = &tool.output_schema {
            builder = builder.output_schema(Value::Object((**output).clone()));
        }
        let client = Arc::downgrade(self);
        builder = builder.handler(move |ctx: ToolContext, args: Value| {
            let client = client.clone();
            let remote = remote.clone();
            async move {
                match client.upgrade() {
                    Some(client) => client.call(&remote, ctx, args).await,
                    None => AgentToolResult::error(format!(
                        "the MCP client for tool `{remote}` was closed; connect it again"
                    )),
                }
            }
        });
        builder.build().map_err(|error| McpClientError::Tool {
            server: self.name.clone(),
            detail: error.to_string(),
        })
    }
}

/// Whether `schema` nests objects and arrays deeper than `levels` (the schema itself is level 1), found
/// without recursion.
pub(super) fn nests_deeper(schema: &serde_json::Map<String, Value>, levels: usize) -> bool {
    if levels == 0 {
        return true;
    }
    let mut stack: Vec<(&Value, usize)> = schema.values().map(|value| (value, 2)).collect();
    while let Some((value, depth)) = stack.pop() {
        let is_container = matches!(value, Value::Object(_) | Value::Array(_));
        if is_container && depth > levels {
            return true;
        }
        match value {
            Value::Object(map) => stack.extend(map.values().map(|child| (child, depth + 1))),
            Value::Array(items) => stack.extend(items.iter().map(|child| (child, depth + 1))),
            _ => {}
        }
    }
    false
}

pub(super) fn annotations(listed: &Value) -> ToolAnnotations {
    let hint = |key: &str| listed.get(key).and_then(Value::as_bool);
    ToolAnnotations {
        read_only: hint("readOnlyHint"),
        destructive: hint("destructiveHint"),
        idempotent: hint("idempotentHint"),
        open_world: hint("openWorldHint"),
    }
}
