//! Serving a [`ToolStore`] over the Model Context Protocol (MCP), so any MCP client (Claude Desktop, Cursor,
//! IDEs) can call the tools. Needs the `mcp` feature.
//!
//! This module owns [`McpServer`], an rmcp [`ServerHandler`] written over a store, and [`serve_stdio`], the
//! shortest way to run one. A binary serves its own `#[tool]`s in three lines:
//!
//! ```no_run
//! use yiem_core::store::{ToolStore, register_all_tools};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let store = ToolStore::new("my-tools");
//!     register_all_tools(&store)?;
//!     yiem_core::mcp::serve_stdio(store).await?;
//!     Ok(())
//! }
//! ```
//!
//! # What the client sees
//!
//! - `tools/list`: every tool of the store, in the store's order, as [`Dialect::Mcp`] describes it
//!   (`name`, `title` = the label, `description`, `inputSchema`, `outputSchema` for tools that return
//!   [`Json<T>`](crate::tool::Json), `annotations`). The list is read at each request, so tools registered while
//!   the server runs show up.
//!   A store of more than [`DEFAULT_PAGE_SIZE`] tools is listed in pages ([`McpServer::page_size`]):
//!   each response but the last has a `nextCursor`, and the pages resume after the last tool sent, so a
//!   client that pages through a changing store sees every remaining tool once, in order.
//! - `notifications/tools/list_changed`: the server declares `tools.listChanged` and sends the notification
//!   whenever the store's tools change ([`ToolStore::changes`]), so a client re-lists: over stdio
//!   ([`McpServer::serve`]) on the connection, and to a client of the 2026-07-28 revision on its
//!   `subscriptions/listen` stream (stdio or HTTP). A client of an earlier revision of the HTTP server
//!   (`McpHttpServer`) has no standing stream to receive it on, and re-lists when it needs to.
//! - `tools/call`: runs through a [`ToolExecutor`] (the pipeline an agent uses, hooks included), so an MCP
//!   call and an agent call behave the same. Bad arguments, a blocking hook, an `Err`, a panic or a timeout
//!   come back as a result with `isError: true` and the text the model would see; a tool the store does not
//!   have is a JSON-RPC invalid-params error (`-32602`). Text and image content map to MCP text and image
//!   content; structured output becomes `structuredContent` beside its JSON text block.
//! - Progress: when the request carries a `progressToken`, each [`ToolContext::update`](crate::tool::ToolContext::update)
//!   of the tool becomes a `notifications/progress` with a progress count that goes up by one per update and
//!   the partial result's text as the message. All of them are sent before the call's result.
//! - Cancellation: `notifications/cancelled` cancels the call's token (the tool sees
//!   [`ToolContext::cancelled`](crate::tool::ToolContext::cancelled)); no result is sent for a cancelled call.
//! - Sequential tools run alone: calls arrive concurrently, so a tool marked `sequential` (the default)
//!   waits until every running call has finished and holds back new ones while it runs, as it would in an
//!   agent's batch; `parallel` tools run concurrently with each other.
//!
//! - Logging: the server declares `logging`; what a tool logs with
//!   [`ToolContext::log`](crate::tool::ToolContext::log) becomes a `notifications/message` (logger: the tool's
//!   name) when its level is at or above the one the client set with `logging/setLevel` (`info` until it
//!   sets one), sent before the call's result.
//! - Questions: a tool's [`ToolContext::elicit`](crate::tool::ToolContext::elicit) reaches the client when it
//!   declared the `elicitation` capability (form mode); otherwise the tool gets
//!   [`ElicitError::CannotAsk`](crate::ask::ElicitError) saying why. How depends on the client's revision:
//!   - **before 2026-07-28**: an `elicitation/create` request, on a connection that can carry its
//!     answer back — stdio, or HTTP with sessions (`McpHttpServer::sessions`);
//!   - **2026-07-28** (no requests from server to client, on any transport): the call is answered
//!     `input_required` with its unanswered questions (SEP-2322), and the client calls again with the
//!     answers. The call then runs again from the start, its questions answered in the order it asks
//!     them (keys `question-1`, `question-2`, ...), so a tool must ask the same questions in the same
//!     order each time, and what it does before a question is done again on every round. The answers of
//!     earlier rounds travel in the `requestState` the client echoes; that state is the client's own
//!     answers, so a client that forges it grants nothing it could not have answered itself.
//!
//!   Log messages go at or above the level the client set with `logging/setLevel` (before 2026-07-28)
//!   or the level its request carries in `_meta` (2026-07-28; none: no messages).
//!
//! - Resources, resource templates, prompts and completions: from a [`ContextStore`] given to
//!   [`McpServer::context`], made with [`#[resource]`](macro@resource) and [`#[prompt]`](macro@prompt)
//!   or built at run time ([`McpResource`], [`McpPrompt`]); see the
//!   [MCP chapter](crate::guide::mcp#resources-prompts-and-completions).
//!
//! - Skills: with the `mcp-skills` feature, a folder of Agent Skills given to `McpServer::skills`
//!   (SEP-2640: `skills/list`, `skills/get`, `resources/directory/read`, the files through
//!   `resources/read`); see the [MCP chapter](crate::guide::mcp#skills).
//!
//! # Approval
//!
//! A tool that needs approval ([`AgentTool::needs_approval`], `#[tool(needs_approval)]`) is listed with
//! `"_meta": {"yiem/needsApproval": true}` beside its annotations, and each of its calls first asks the
//! client's user, on the same path as a tool's own question: an `elicitation/create` whose message names
//! the tool and shows its arguments, with a form of one required boolean, `approve`. Only an `accept`
//! with `approve: true` runs the call; `approve: false`, `decline` and `cancel` answer it with an error
//! result (`isError: true`) telling the model the user declined and not to retry as it was. A client
//! that did not declare `elicitation` cannot be asked, and neither can a client of a revision before
//! 2026-07-28 of the HTTP server without sessions (its transport cannot carry the answer back): their
//! calls are refused with an error result that says so, and that the server's operator can let the
//! tool run without asking —
//! [`McpServer::allowed_tools`], [`McpServer::all_tools_allowed`] (`yiem mcp --allow TOOL`,
//! `--allow-all`). The server decides through the same approval gate as an agent, by the tool's own
//! flag ([`ApprovalPolicy::default`]) less those grants; an agent's own policy is not the server's.
//!
//! Nothing but protocol is written to stdout: yiem and rmcp log through `tracing`, and a subscriber that
//! prints must write to stderr (`tracing_subscriber::fmt().with_writer(std::io::stderr)`).
//!
//! [`ToolStore`]: crate::store::ToolStore
//! [`ToolStore::changes`]: crate::store::ToolStore::changes
//! [`ToolExecutor`]: crate::exec::ToolExecutor
//! [`ServerHandler`]: rmcp::ServerHandler
//! [`Dialect::Mcp`]: crate::store::Dialect::Mcp
//! [`AgentTool::needs_approval`]: crate::tool::AgentTool::needs_approval
//! [`ApprovalPolicy::default`]: crate::agent::ApprovalPolicy::default

#[cfg(feature = "mcp-client")]
mod client;
mod context;
mod convert;
#[cfg(feature = "mcp-client")]
mod error;
#[cfg(feature = "mcp-oauth")]
pub mod oauth;
#[cfg(feature = "mcp-client")]
mod private_file;
mod server;

#[cfg(feature = "mcp-client")]
pub use client::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_LIST_TIMEOUT, DEFAULT_MAX_PAGES,
    DEFAULT_MAX_SCHEMA_DEPTH, DEFAULT_MAX_TOOLS, DriftHandler, DriftKind, DriftPolicy, LeftOutTool,
    LoadedSkill, MAX_SKILL_BYTES, McpClient, McpClientBuilder, ToolDrift, ToolPins,
};
#[doc(hidden)]
pub use context::__private as __context;
pub use context::{
    ContextError, ContextStore, IntoPromptMessages, IntoResourceBody, McpPrompt, McpResource,
    PromptContext, PromptError, ResourceBody, ResourceError, ResourceRead, register_all_prompts,
    register_all_resources,
};
#[cfg(feature = "mcp-client")]
pub use error::McpClientError;
/// rmcp's catalog of the Agent Skills in a folder, served by [`McpServer::skills`] (SEP-2640).
#[cfg(feature = "mcp-skills")]
pub use rmcp::handler::server::skill_catalog::{SkillCatalog, SkillCatalogError};
/// rmcp's types of what prompts say, so that a `#[prompt]` needs no `rmcp` dependency of its own.
pub use rmcp::model::{ContentBlock, PromptArgument, PromptMessage, ResourceContents, Role};
/// rmcp's types of a skill's entry (SEP-2640), as [`McpClient::skills`] lists them.
#[cfg(feature = "mcp-client")]
pub use rmcp::model::{Skill, SkillFrontmatter, SkillResource, SkillResources};
#[cfg(feature = "mcp-http")]
pub use server::http::{
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PEER, McpHttpServer,
};
pub use server::{
    DEFAULT_MAX_RESULT_BYTES, DEFAULT_MAX_TASKS, DEFAULT_PAGE_SIZE, DEFAULT_TASK_TTL,
    MAX_LOG_BYTES_PER_CALL, MAX_LOG_MESSAGES_PER_CALL, McpServeError, McpServer, MemoryTaskStore,
    PROTOCOL_VERSIONS, StoredTask, TaskRequest, TaskStore, TaskStoreError, serve_stdio,
};
pub use yiem_macros::{prompt, resource};
