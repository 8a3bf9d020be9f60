//! [`McpClientBuilder`]'s settings.

use super::*;

impl McpClientBuilder {
    /// The server's name in error messages (default: the program, or the URL's host).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Put `prefix` before every tool name, so two servers' tools cannot collide (`fs_` + `read`).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// An environment variable for the server's process (commands only).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Target::Command { env, .. } = &mut self.target {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// A bearer token sent with every HTTP request (URLs only).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        if let Target::Http { bearer, .. } = &mut self.target {
            *bearer = Some(token.into());
        }
        self
    }

    /// Authorize with OAuth 2.1 when the server asks (URLs only; see [`oauth`](crate::mcp::oauth)).
    #[cfg(feature = "mcp-oauth")]
    pub fn oauth(mut self, config: crate::mcp::oauth::OAuth) -> Self {
        if let Target::Http { oauth, .. } = &mut self.target {
            *oauth = Some(config);
        }
        self
    }

    /// Answer the server's elicitation requests (questions for the user, in a form the server
    /// describes with a schema) with `handler`, and declare the capability. The fields the answer
    /// leaves out that the schema gives a `default` are filled with it (SEP-1034). Without a handler
    /// the client does not declare elicitation, and servers do not ask.
    pub fn elicitation(mut self, handler: impl ElicitationHandler) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// Checks every listing of the server against `pins` (see [`ToolPins`]): a tool whose definition
    /// changed since it was pinned, or a new tool, is taken only if the pins' [`DriftPolicy`] accepts it.
    /// Without pins the client takes what the server lists.
    pub fn pins(mut self, pins: ToolPins) -> Self {
        self.pins = Some(pins);
        self
    }

    /// Pass the server's questions to the call that is waiting for them: an elicitation (a tool's
    /// approval, say) becomes the calling tool's own [`ToolContext::elicit`](crate::tool::ToolContext::elicit)
    /// question, a sampling request its [`ToolContext::sample`](crate::tool::ToolContext::sample) — so in an
    /// `Agent` without handlers the run pauses on it ([`RunStop::AwaitingAnswer`](crate::agent::RunStop)) and
    /// the call is made again with the answer, and behind an `McpServer` it goes on to that server's
    /// client. The client declares both capabilities. A server of the 2026-07-28 revision asks by
    /// answering the call `input_required`, so its question is the call's. A server of an earlier
    /// revision asks by a request of its own, which names no call: it goes to the one call of this
    /// client waiting for that server, and is declined while none or several wait. A handler given
    /// with [`elicitation`](Self::elicitation) or [`sampling`](Self::sampling) answers instead.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = yiem_core::mcp::McpClient::http("http://127.0.0.1:8000/mcp")
    ///     .ask_through_calls()
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn ask_through_calls(mut self) -> Self {
        self.ask_through_calls = true;
        self
    }

    /// Answer the server's sampling requests (a completion from the client's model) with `handler`,
    /// and declare the capability; see [`Sampling`](crate::ask::Sampling). Without a handler the client does not declare
    /// sampling and refuses such requests.
    pub fn sampling(mut self, handler: impl SamplingHandler) -> Self {
        self.sampling = Some(Arc::new(handler));
        self
    }

    /// How long one call may take before it is cancelled with an error result (default:
    /// [`DEFAULT_CALL_TIMEOUT`]).
    pub fn call_timeout(mut self, limit: Duration) -> Self {
        self.call_timeout = limit;
        self
    }

    /// How long starting (or reaching) the server and the `initialize` handshake may take, at the first
    /// connection and at each reconnection (default: [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.limits.connect_timeout = limit;
        self
    }

    /// How long the server may take to answer one `tools/list` page (default: [`DEFAULT_LIST_TIMEOUT`]).
    pub fn list_timeout(mut self, limit: Duration) -> Self {
        self.limits.list_timeout = limit;
        self
    }

    /// The most `tools/list` pages one listing follows (default: [`DEFAULT_MAX_PAGES`]).
    pub fn max_pages(mut self, pages: usize) -> Self {
        self.limits.max_pages = pages;
        self
    }

    /// The most tools one listing takes (default: [`DEFAULT_MAX_TOOLS`]).
    pub fn max_tools(mut self, tools: usize) -> Self {
        self.limits.max_tools = tools;
        self
    }

    /// The deepest nesting of objects and arrays taken in a tool's input or output schema, the schema
    /// itself counting as 1 (default: [`DEFAULT_MAX_SCHEMA_DEPTH`]).
    pub fn max_schema_depth(mut self, levels: usize) -> Self {
        self.limits.max_schema_depth = levels;
        self
    }

    /// Defers the server's tools in every store they are registered in (see [`crate::catalog`]): their
    /// definitions are sent once the model has found them. [`McpClient::set_defer_loading`] changes it
    /// later.
    pub fn defer_loading(mut self) -> Self {
        self.defer_loading = true;
        self
    }

    /// Starts (or reaches) the server and completes the MCP handshake.
    pub async fn connect(self) -> Result<McpClient, McpClientError> {
        let name = self.name.unwrap_or_else(|| match &self.target {
            Target::Command { program, .. } => program.clone(),
            Target::Http { url, .. } => url.clone(),
        });
        #[cfg(feature = "mcp-oauth")]
        let authorizer = match &self.target {
            Target::Http {
                url,
                oauth: Some(config),
                ..
            } => Some(Arc::new(
                crate::mcp::oauth::Authorizer::new(&name, url, config.clone()).await?,
            )),
            _ => None,
        };
        #[cfg(not(feature = "mcp-oauth"))]
        let authorizer = None;
        let inner = Arc::new(Inner {
            authorizer,
            elicitation: self.elicitation,
            sampling: self.sampling,
            ask_through_calls: self.ask_through_calls,
            name,
            prefix: self.prefix,
            target: self.target,
            call_timeout: self.call_timeout,
            limits: self.limits,
            connection: tokio::sync::Mutex::new(None),
            failures: Mutex::new(0),
            routes: Arc::default(),
            stores: Mutex::new(Vec::new()),
            defer: AtomicBool::new(self.defer_loading),
            listing: Mutex::new(None),
            left_out: Mutex::new(Vec::new()),
            pins: self.pins,
            waiting: Mutex::new(Vec::new()),
            calls: AtomicU64::new(0),
            task_changes: tokio::sync::Notify::new(),
        });
        let connection = inner.open().await?;
        *inner.connection.lock().await = Some(connection);
        Ok(McpClient { inner })
    }
}
