//! The chapters of yiem's guide, one module each, from `yiem-core/docs/*.md` (pulled in with `include_str!`, so
//! every Rust snippet in them is a doctest of this crate). A snippet that needs a feature says so and
//! compiles only with it (`cargo test -p yiem-core --doc --all-features` runs them all).
//!
//! | chapter | what it covers |
//! |---|---|
//! | [`tools`] | defining tools: `#[tool]`, methods as tools, checking them in your tests, registration, `list_tools` |
//! | [`state`] | a tool's shared state: `State<T>`, held per store |
//! | [`schemas`] | one schema, every provider: dialects, provider options, strict mode, free text and grammars |
//! | [`pipeline`] | the call pipeline: errors the model can act on, the executor, time limits, events |
//! | [`agents`] | agents and approvals: the loop, limits, pauses, saved and signed runs, questions from tools |
//! | [`providers`] | the scripted model and the OpenAI, Responses, Anthropic and Gemini clients, each behind its feature |
//! | [`mcp`] | serving tools over MCP (stdio, HTTP) and using MCP servers' tools, with OAuth |
//! | [`code_mode`] | `run_code`: one program that calls many tools, and the providers' own sandboxes |
//! | [`tool_search`] | large catalogs: deferred tools, the local `search_tools` and the providers' searches |
//! | [`telemetry`] | OpenTelemetry GenAI spans, metrics and export |
//! | [`security`] | the security model: what yiem protects, against whom, and what not yet |
//! | [`cli`] | the `yiem` program: `tools`, `mcp` and `chat`, and the built-in tools |
//!
//! Durable runs on Restate are the chapter of the `yiem-restate` crate's documentation
//! (`yiem-restate/docs/durable.md`).

#[doc = include_str!("../docs/tools.md")]
pub mod tools {}

#[doc = include_str!("../docs/state.md")]
pub mod state {}

#[doc = include_str!("../docs/schemas.md")]
pub mod schemas {}

#[doc = include_str!("../docs/pipeline.md")]
pub mod pipeline {}

#[doc = include_str!("../docs/agents.md")]
pub mod agents {}

#[doc = include_str!("../docs/providers.md")]
pub mod providers {}

#[doc = include_str!("../docs/mcp.md")]
pub mod mcp {}

#[doc = include_str!("../docs/code_mode.md")]
pub mod code_mode {}

#[doc = include_str!("../docs/tool_search.md")]
pub mod tool_search {}

#[doc = include_str!("../docs/telemetry.md")]
pub mod telemetry {}

#[doc = include_str!("../docs/security.md")]
pub mod security {}

#[doc = include_str!("../docs/cli.md")]
pub mod cli {}
