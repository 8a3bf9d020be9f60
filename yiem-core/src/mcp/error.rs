//! [`McpClientError`]: what went wrong talking to an MCP server, for the client and its OAuth.

/// What went wrong talking to an MCP server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpClientError {
    /// The server could not be started or reached, or the handshake failed.
    #[error("MCP server `{server}` could not be connected: {detail}")]
    Connect {
        /// The server's name.
        server: String,
        /// What failed.
        detail: String,
    },
    /// A request to the server failed.
    #[error("MCP server `{server}` failed to answer `{request}`: {detail}")]
    Request {
        /// The server's name.
        server: String,
        /// The request.
        request: String,
        /// What failed.
        detail: String,
    },
    /// A listed tool cannot be offered (its name or schema is not valid here).
    #[error("MCP server `{server}` lists a tool yiem cannot offer: {detail}")]
    Tool {
        /// The server's name.
        server: String,
        /// What is wrong.
        detail: String,
    },
    /// Registering the server's tools clashed with tools already in the store.
    #[error("MCP server `{server}`: {detail}")]
    Register {
        /// The server's name.
        server: String,
        /// The registration error.
        detail: String,
    },
    /// The client's tool pins could not be read or written ([`ToolPins`](super::ToolPins)); no tool of
    /// the server was taken.
    #[error("MCP server `{server}`: the tool pins could not be kept: {detail}")]
    Pins {
        /// The server's name.
        server: String,
        /// What failed.
        detail: String,
    },
    /// The server asked for authorization and it could not be obtained: no OAuth configured, the
    /// authorization server refused or failed, or the server still refused after the one try each
    /// request gets.
    #[error("MCP server `{server}` refused access: {detail}")]
    Authorization {
        /// The server's name.
        server: String,
        /// What failed, and what to do.
        detail: String,
    },
    /// A skill's file failed verification against the server's listing (SEP-2640): a URI the skill
    /// does not list, another size or digest, frontmatter that differs or is missing, or an entry that
    /// breaks the extension's rules. Its content was not used.
    #[error("MCP server `{server}`: the skill file `{uri}` failed verification: {detail}")]
    Skill {
        /// The server's name.
        server: String,
        /// The file's URI.
        uri: String,
        /// What differs.
        detail: String,
    },
    /// The server went past one of the client's limits (see [`McpClientBuilder`](super::McpClientBuilder)).
    #[error("MCP server `{server}` went past the `{limit}` limit: {detail}")]
    Limit {
        /// The server's name.
        server: String,
        /// The setting of [`McpClientBuilder`](super::McpClientBuilder) that raises the limit (`connect_timeout`, `list_timeout`,
        /// `max_pages`, `max_tools` or `max_schema_depth`), or `authorization_timeout` of the OAuth
        /// configuration.
        limit: &'static str,
        /// What happened, and how to raise the limit.
        detail: String,
    },
}
