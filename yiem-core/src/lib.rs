//! # yiem-core
//!
//! The runtime of yiem: give LLM agents tools written as ordinary Rust functions.
//!
//! yiem is not on crates.io yet: clone its repository and name the path of `yiem-core` in it.
//!
//! ```toml
//! [dependencies]
//! yiem-core = { path = "path/to/yiem/yiem-core" }
//! serde = { version = "1", features = ["derive"] }
//! schemars = "1"
//! serde_json = "1"
//! tokio = { version = "1", features = ["rt-multi-thread", "macros"] }
//! ```
//!
//! Write an `async fn` over a serde argument struct and put [`#[tool]`](macro@tool) on it. The tool gets its name
//! from the function, its description from the doc comment and its JSON Schema from `schemars`; it registers
//! itself, so [`register_all_tools`](store::register_all_tools) finds it without a hand-kept list.
//!
//! ```standalone_crate
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use yiem_core::prelude::*;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs {
//!     /// The first addend.
//!     a: i64,
//!     /// The second addend.
//!     b: i64,
//! }
//!
//! /// Add two integers.
//! #[tool(parallel)]
//! async fn add(args: AddArgs) -> String {
//!     (args.a + args.b).to_string()
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! // The function stays callable as written ...
//! assert_eq!(add(AddArgs { a: 1, b: 2 }).await, "3");
//!
//! // ... and `add_tool()` is the tool a model can call.
//! let result = add_tool().execute("call-1", serde_json::json!({"a": 2, "b": 3})).await;
//! assert_eq!(result.text_content(), "5");
//!
//! let store = ToolStore::new("calculator");
//! register_all_tools(&store).unwrap();
//! assert!(store.get("add").is_some());
//! # });
//! ```
//!
//! ## The guide
//!
//! The chapters are the modules of [`guide`]: [defining tools](guide::tools), [state](guide::state),
//! [schemas and dialects](guide::schemas), [the call pipeline](guide::pipeline),
//! [agents and approvals](guide::agents), [providers](guide::providers), [MCP](guide::mcp),
//! [code mode](guide::code_mode), [tool search](guide::tool_search), [telemetry](guide::telemetry),
//! [the security model](guide::security) and [the CLI and chat](guide::cli); durable runs are `yiem-restate`'s.
//!
//! ## Defining tools
//!
//! See [`#[tool]`](macro@tool) for the accepted signatures, return types and attribute keys. A tool reaches shared state
//! (a pool, a client, a root directory) as [`State<T>`](tool::State), held per store ([`ToolStore::with_state`](store::ToolStore::with_state)); tools
//! that are methods of one instance come from [`tools`] on an `impl` block. [`check_tools!`] in a test
//! file checks every tool for what a provider would refuse. Tools built at run time (from configuration or
//! another process) use [`AgentTool::builder`](tool::AgentTool::builder). Examples of arguments, strict mode and eager input
//! streaming ([`ProviderOptions`](tool::ProviderOptions)) go to the providers that take them.
//!
//! ## Features
//!
//! The default build is what a tool author needs and nothing that talks to a network: `#[tool]`, the
//! types, the store and registration, dialects, the pipeline and executor, events, the agent loop and
//! [`ScriptedModel`](llm::ScriptedModel). No HTTP client, no TLS, no OpenSSL.
//!
//! | feature | default | adds |
//! |---|---|---|
//! | `schema-validation` | no | the full JSON Schema validator (`jsonschema`) beside yiem's own check: it adds what that check cannot judge (`pattern`, `format`, which form of a union at the root was meant), and `regex` for yiem's own check of a free-text tool's regex grammar ([`TextFormat`](tool::TextFormat)). Without it, every tool's arguments are still checked at every depth for unknown properties, required ones, types, ranges and allowed values, in the same words |
//! | `openai` | no | `llm::OpenAiModel`, `llm::OpenAiConfig`, `llm::RetryPolicy`: the OpenAI-compatible chat-completions client (reqwest over rustls) |
//! | `openai-responses` | no | `llm::OpenAiResponsesModel`, `llm::OpenAiResponsesConfig`: OpenAI's Responses API (`/v1/responses`), reasoning items carried from turn to turn; turns on `openai` |
//! | `anthropic` | no | `llm::AnthropicModel`, `llm::AnthropicConfig`: Anthropic's Messages API, over the same transport |
//! | `gemini` | no | `llm::GeminiModel`, `llm::GeminiConfig`: Gemini's `streamGenerateContent`, over the same transport |
//! | `mcp` | no | `mcp::serve_stdio` and `mcp::McpServer`: an MCP server over stdio (rmcp) |
//! | `mcp-client` | no | `mcp::McpClient`: MCP servers' tools in a store, over stdio or streamable HTTP |
//! | `mcp-oauth` | no | `mcp::oauth`: OAuth 2.1 for `McpClient` over HTTP (discovery, PKCE, refresh, step-up), on rmcp's `auth` |
//! | `mcp-http` | no | `mcp::McpHttpServer`: a streamable HTTP MCP server, stateless or with sessions (rmcp on hyper, no TLS) |
//! | `mcp-skills` | no | `McpServer::skills` with `mcp::SkillCatalog`: a folder of Agent Skills served over MCP (SEP-2640), on rmcp's skill catalog (cap-std, YAML) |
//! | `tool-search` | no | `catalog::Bm25Ranker`, `catalog::ToolSearch::bm25`: the local `search_tools` tool's BM25 ranking for deferred tools, and `catalog::HybridRanker` (BM25 mixed with your `catalog::Embedder`'s sentence embeddings) (`rust-stemmers`, `stop-words`; deferred tools and the providers' own searches need no feature) |
//! | `embeddings` | no | `catalog::SentenceEmbedder`: a sentence-transformers BERT model (all-MiniLM-L6-v2, say) read from a folder and run on the CPU, for `catalog::HybridRanker`'s meaning; turns on `tool-search` (candle and Hugging Face's `tokenizers`, pure Rust; about 115 crates more) |
//! | `code-mode` | no | `code::CodeMode`: the `run_code` tool, whose JavaScript programs call tools through the pipeline (QuickJS in a sandbox, approvals inside programs) |
//! | `otel` | no | `otel`: yiem's GenAI spans in OpenTelemetry (`tracing-opentelemetry`), trace context across MCP, GenAI metrics |
//! | `otel-otlp` | no | `otel::Otlp`: spans and metrics to an OTLP collector over HTTP/protobuf |
//!
//! The default build is already the lean one (no feature is on by default):
//!
//! ```toml
//! yiem-core = { path = "path/to/yiem/yiem-core", features = ["openai"] }   # to talk to a model
//! ```
//!
//! ## Serving tools over MCP
//!
//! With the `mcp` feature, `mcp::serve_stdio` serves every tool of a store to MCP clients (Claude Desktop,
//! Cursor, IDEs) over stdio, through the same pipeline an agent uses; `mcp::McpServer` adds hooks, a
//! server name and instructions. A tool that needs approval is asked about through the client (MCP
//! elicitation) before each call. See the [MCP chapter](guide::mcp).
//!
//! ## Asking the user from a tool
//!
//! [`ToolContext::elicit`](tool::ToolContext::elicit) asks the person behind the call to fill in a typed form, and
//! [`ToolContext::log`](tool::ToolContext::log) logs to them: over MCP through the client, in an agent through the handler given
//! to [`AgentSettings::elicitation`](agent::AgentSettings::elicitation); where nobody can be asked, [`ElicitError::CannotAsk`](ask::ElicitError::CannotAsk) says why.
//!
//! ## Errors the model can act on
//!
//! Every call gets a result. Bad arguments, an `Err`, a panic or a timeout become an error result whose text
//! names the tool, the field and what was expected:
//!
//! ```
//! # use schemars::JsonSchema;
//! # use serde::Deserialize;
//! # use yiem_core::tool;
//! # #[derive(Deserialize, JsonSchema)]
//! # struct AddArgs { a: i64, b: i64 }
//! # /// Add two integers.
//! # #[tool]
//! # async fn add(args: AddArgs) -> String { (args.a + args.b).to_string() }
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let result = add_tool().execute("call-2", serde_json::json!({"a": "two", "b": 3})).await;
//! assert!(result.is_error);
//! assert_eq!(
//!     result.text_content(),
//!     "invalid arguments for tool `add`: at `/a`: expected an integer, got the string \"two\"\n\
//!      valid properties: `a`, `b`"
//! );
//! # });
//! ```

//! ## Builders
//!
//! One setter rule, tokio's (`runtime::Builder`): a method that takes `self`, sets one thing and returns
//! `Self` is named for what it sets, bare — [`AgentBuilder::model`](agent::AgentBuilder::model),
//! [`ToolBuilder::timeout`](tool::ToolBuilder::timeout), [`RunLimits::max_turns`](agent::RunLimits::max_turns),
//! [`ToolAnnotations::read_only`](tool::ToolAnnotations::read_only) — and a getter keeps its natural name. A type read back through a
//! getter of that name ([`AgentToolResult::details`](tool::AgentToolResult::details),
//! [`ToolExecutor::events`](exec::ToolExecutor::events), [`ToolStore::state`](store::ToolStore::state),
//! [`ToolContext::state`](tool::ToolContext::state)) names its setters `with_*`, "this value, with that part
//! set", as std's [`Path::with_extension`](std::path::Path::with_extension) beside `Path::extension`.
//! Constructors keep std's names ([`EventBus::with_capacity`](event::EventBus::with_capacity)).
//!
//! ## Modules
//!
//! The crate root holds the macros ([`#[tool]`](macro@tool), [`#[tools]`](macro@tools),
//! [`check_tools!`](macro@check_tools), [`link_tools!`]), the [`prelude`] and one module per concept.
//! Every public name has one home, the module of its concept; the prelude re-exports what most programs
//! name. The module `tool` shares its name with the attribute: `use yiem_core::tool;` brings both, so in a
//! crate with a `tool` of its own write `#[yiem_core::tool]` or import the prelude.
//!
//! | module | owns |
//! |---|---|
//! | [`tool`](mod@tool) | what a tool is and what its author names: [`AgentTool`](tool::AgentTool), [`ToolBuilder`](tool::ToolBuilder), [`ToolContext`](tool::ToolContext), [`State`](tool::State), results and content, free-text grammars |
//! | [`store`] | the tools of an agent or a server: [`ToolStore`](store::ToolStore), registration, dialects and the request-ready lists, argument checking, [`check_tools`](fn@store::check_tools) |
//! | [`exec`] | running calls: [`ToolCall`](exec::ToolCall), [`ToolExecutor`](exec::ToolExecutor) and its batches, [`ToolHooks`](exec::ToolHooks), the call journal, cancellation |
//! | [`ask`] | asking from inside a call: elicitation, sampling, logging |
//! | [`message`] | the conversation: user, assistant and tool-result messages, [`Usage`](message::Usage) |
//! | [`event`] | [`AgentEvent`](event::AgentEvent) and [`EventBus`](event::EventBus): what happens, for sinks and streams |
//! | [`agent`] | the agent protocol ([`AgentRun`](agent::AgentRun), the step machine), its configuration, approvals, and [`Agent`](agent::Agent), the in-process driver |
//! | [`llm`] | the [`Model`](llm::Model) trait, the scripted model, the message formats, and (features) the OpenAI, Anthropic and Gemini clients |
//! | [`catalog`] | large catalogs: deferred tools, the local tool search, the policy |
//! | `code` | (feature `code-mode`) the `run_code` tool: programs that call tools through the pipeline |
//! | `mcp` | (features `mcp`, `mcp-client`, `mcp-http`, `mcp-oauth`, `mcp-skills`) MCP servers over a store, and MCP servers' tools in a store |
//! | [`telemetry`] | the OpenTelemetry GenAI spans as `tracing` spans, and whether they record content |
//! | `otel` | (feature `otel`) the bridge to OpenTelemetry: trace context across MCP, GenAI metrics, OTLP export |
//! | [`prelude`] | what most programs import: `use yiem_core::prelude::*;` |
//! | [`guide`] | the chapters of the guide, from `docs/*.md` (no items) |

// How the crate is laid out inside. Each public module is a folder of its parts: `tool/` (the definition,
// the handler adapters, the context), `store/` (the registry, the checks), `exec/` (the one `Call` in
// `pipeline`, the executor, its order, the hooks), `ask/` (elicitation, sampling, the questions a batch
// stops at), `agent/`, `llm/`, `catalog/`, `code/`, `mcp/` (`server/`, `client/`, their conversions). The
// data every layer shares sits flat beside them (`call`, `content`, `result`, `message`, `state`,
// `grammar`, `journal`, `decision`, `guard`, `id`, `suggest`), as do the schema layer (`args/`,
// `dialect/`) and the approval gate (`approval`). Which layer may import which is written once, in
// `tests/tests/layers.rs`, which fails on an import in the wrong direction and on any import cycle.
//
// Every public name has one home, the module of its concept; nothing is declared or re-exported at the
// crate root but the modules and the macros (a `#[macro_export]` macro lands at the root too, so each is
// named in the crate docs), and no name is public at two paths, the prelude aside: `crate_docs` below
// checks it.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

#[cfg(test)]
mod crate_docs {
    /// The features of the manifest, default first.
    fn features() -> Vec<String> {
        let manifest = include_str!("../Cargo.toml");
        let table = manifest
            .split("\n[features]\n")
            .nth(1)
            .and_then(|rest| rest.split("\n[").next())
            .expect("a [features] table");
        table
            .lines()
            .filter_map(|line| {
                line.split_once(" = ")
                    .map(|(name, _)| name.trim().to_owned())
            })
            .filter(|name| !name.starts_with('#') && !name.starts_with('"'))
            .collect()
    }

    #[test]
    fn the_crate_root_holds_only_modules_the_macros_and_the_prelude() {
        let root = include_str!("lib.rs");
        let names: Vec<&str> = root
            .lines()
            .filter(|line| line.starts_with("pub use "))
            .collect();
        assert_eq!(
            names,
            ["pub use yiem_macros::tool;", "pub use yiem_macros::tools;",],
            "a public name belongs in the module of its concept, not at the crate root"
        );
        for line in root.lines().filter(|line| line.starts_with("pub ")) {
            assert!(
                line.starts_with("pub mod ") || line.starts_with("pub use yiem_macros::"),
                "the crate root declares `{line}`: move it into the module of its concept"
            );
        }
        // A `#[macro_export]` macro lands at the root wherever it is written: each is named in the
        // crate docs.
        let mut exported = Vec::new();
        exported_macros(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut exported,
        );
        exported.sort();
        assert_eq!(
            exported,
            ["check_tools", "link_tools"],
            "macros exported at the crate root"
        );
        for name in &exported {
            assert!(
                root.contains(&format!("[`{name}!`]")),
                "the crate docs do not name `{name}!`"
            );
        }
    }

    /// The names of the `#[macro_export]` macros under `dir`.
    fn exported_macros(dir: std::path::PathBuf, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                exported_macros(path, found);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let mut lines = text.lines();
                while let Some(line) = lines.next() {
                    if line.trim() != "#[macro_export]" {
                        continue;
                    }
                    let name = lines
                        .find_map(|line| line.trim().strip_prefix("macro_rules! "))
                        .and_then(|after| after.split_whitespace().next())
                        .expect("a macro_rules! after #[macro_export]");
                    found.push(name.to_owned());
                }
            }
        }
    }

    /// The names a module's source makes public at its own path: its `pub` items and what its `pub use`s
    /// bring (the last segment, or the alias), at the indentation `indent`.
    fn public_names(source: &str, indent: &str) -> Vec<String> {
        let mut names = Vec::new();
        let mut statement = String::new();
        for line in source.lines() {
            let Some(code) = line.strip_prefix(indent) else {
                continue;
            };
            if !statement.is_empty() || code.starts_with("pub use ") {
                statement.push_str(code.trim());
                statement.push(' ');
                if code.trim_end().ends_with(';') {
                    let list = statement
                        .trim_start_matches("pub use ")
                        .trim_end()
                        .trim_end_matches(';');
                    for item in list.split([',', '{', '}']) {
                        let item = item.trim();
                        let name = match item.split_once(" as ") {
                            Some((_, alias)) => alias.trim(),
                            None => item.rsplit("::").next().unwrap_or(item),
                        };
                        if !name.is_empty() && name != "self" && name != "*" && name != "_" {
                            names.push(name.to_owned());
                        }
                    }
                    statement.clear();
                }
                continue;
            }
            for kind in [
                "struct", "enum", "trait", "fn", "async fn", "type", "const", "static",
            ] {
                if let Some(rest) = code.strip_prefix(&format!("pub {kind} ")) {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    names.push(name);
                }
            }
        }
        names
    }

    #[test]
    fn no_public_name_has_two_paths() {
        let mut modules: Vec<(&str, Vec<String>)> = Vec::new();
        for (name, source) in [
            ("tool", include_str!("tool/mod.rs")),
            ("store", include_str!("store/mod.rs")),
            ("exec", include_str!("exec/mod.rs")),
            ("ask", include_str!("ask/mod.rs")),
            ("agent", include_str!("agent/mod.rs")),
            ("event", include_str!("event.rs")),
            ("message", include_str!("message.rs")),
            ("llm", include_str!("llm/mod.rs")),
            ("catalog", include_str!("catalog/mod.rs")),
            ("code", include_str!("code/mod.rs")),
            ("mcp", include_str!("mcp/mod.rs")),
            ("mcp::oauth", include_str!("mcp/oauth/mod.rs")),
            ("otel", include_str!("otel.rs")),
            ("telemetry", include_str!("telemetry.rs")),
        ] {
            modules.push((name, public_names(source, "")));
        }
        assert!(
            modules.iter().map(|(_, names)| names.len()).sum::<usize>() > 150,
            "{modules:?}"
        );
        let mut homes: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for (module, names) in &modules {
            for name in names {
                homes.entry(name).or_default().push(module);
            }
        }
        let twice: Vec<_> = homes.iter().filter(|(_, homes)| homes.len() > 1).collect();
        assert!(
            twice.is_empty(),
            "public at two paths (give each one home): {twice:?}"
        );
    }

    #[test]
    fn the_readme_is_a_front_door_that_tells_the_install_story_of_the_crate_docs() {
        let readme = include_str!("../../README.md");
        let lines: Vec<&str> = readme.lines().collect();
        assert!(
            lines.len() <= 250,
            "README.md has {} lines: keep it a front door (at most 250), and move the rest into a chapter",
            lines.len()
        );
        let first = lines.iter().position(|line| *line == "```rust");
        assert!(
            first.is_some_and(|at| at < 60),
            "README.md's first Rust example starts at line {:?}: bring it into the first 60",
            first.map(|at| at + 1)
        );
        // One install story, told the same in both.
        let install = r#"yiem-core = { path = "path/to/yiem/yiem-core" }"#;
        assert!(readme.contains(install), "README.md lacks `{install}`");
        assert!(
            include_str!("lib.rs").contains(&format!("//! {install}")),
            "the crate docs lack `{install}`"
        );
        // Every document it links is there.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for link in readme.split("](").skip(1) {
            let target = link.split(')').next().unwrap();
            if !target.starts_with("http") {
                assert!(
                    root.join(target).exists(),
                    "README.md links `{target}`, which is not there"
                );
            }
        }
    }

    #[test]
    fn every_chapter_of_the_docs_folder_is_in_the_guide() {
        let guide = include_str!("guide.rs");
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
        let mut chapters = 0;
        for entry in std::fs::read_dir(docs).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            chapters += 1;
            assert!(
                guide.contains(&format!("include_str!(\"../docs/{name}\")")),
                "docs/{name} is not a chapter of `guide`: its snippets are not doctests"
            );
        }
        assert!(chapters >= 12, "{chapters} chapters");
    }

    #[test]
    fn the_benchmarks_open_with_the_current_table_and_keep_no_diary() {
        let benchmarks = include_str!("../../BENCHMARKS.md");
        let first_table = benchmarks.find("\n| ").expect("a table");
        let first_section = benchmarks.find("\n## ").expect("sections");
        assert!(
            first_table < first_section,
            "BENCHMARKS.md opens with the current table"
        );
        for heading in benchmarks.lines().filter(|line| line.starts_with('#')) {
            let words = heading.to_lowercase();
            assert!(
                !words.contains("stop") && !words.contains(" pass"),
                "BENCHMARKS.md keeps today's figures, not a diary: `{heading}`"
            );
        }
    }

    #[test]
    fn the_crate_docs_and_the_readme_list_every_feature_of_the_manifest() {
        let features = features();
        assert!(features.len() >= 8, "{features:?}");
        let docs = include_str!("lib.rs");
        let readme = include_str!("../../README.md");
        for feature in features.iter().filter(|name| *name != "default") {
            let row = format!("| `{feature}` | no |");
            assert!(
                docs.contains(&format!("//! {row}")),
                "the crate docs' feature table lacks `{feature}`"
            );
            assert!(
                readme.contains(&row),
                "README's feature table lacks `{feature}`"
            );
        }
    }
}

pub mod agent;
mod approval;
mod args;
pub mod ask;
mod call;
pub mod catalog;
#[cfg(feature = "code-mode")]
pub mod code;
mod content;
mod decision;
mod dialect;
pub mod event;
pub mod exec;
mod grammar;
mod guard;
pub mod guide;
mod id;
mod journal;
pub mod llm;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod message;
#[cfg(feature = "otel")]
pub mod otel;
#[cfg(feature = "code-mode")]
mod program;
mod result;
mod state;
pub mod store;
mod suggest;
pub mod telemetry;
pub mod tool;

#[doc(hidden)]
pub mod __private;

/// What most programs import: `use yiem_core::prelude::*;` brings the tool macros, the store, the agent and
/// its setters ([`AgentSettings`](agent::AgentSettings)), the executor, the scripted model and the types a
/// tool or a hook names.
///
/// ```
/// use yiem_core::prelude::*;
///
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([]))
///     .tools(ToolStore::new("demo"))
///     .max_turns(Some(5))
///     .build();
/// # let _ = agent;
/// ```
///
/// Its `tool` is the attribute alone; the module of that name is `yiem_core::tool`:
///
/// ```compile_fail
/// use yiem_core::prelude::tool::AgentTool; // error: `tool` here is a macro, not a module
/// ```
pub mod prelude {
    pub use crate::agent::{Agent, AgentConfig, AgentSettings, Decision, RunStop};
    pub use crate::event::AgentEvent;
    pub use crate::exec::{CancellationToken, ToolCall, ToolExecutor, ToolHooks};
    pub use crate::llm::{Model, ModelRequest, ScriptedModel, ScriptedTurn};
    pub use crate::message::AgentMessage;
    pub use crate::store::{ToolMethods, ToolStore, register_all_tools};
    pub use crate::tool::{AgentTool, AgentToolResult, Content, Json, State, ToolContext};
    pub use yiem_macros::{tool, tools};
}

/// Turns an `async fn` (or a plain `fn`) into a tool an LLM can call.
///
/// The function stays callable exactly as written. Beside it, with the same visibility, the macro adds a
/// constructor `<fn>_tool() -> AgentTool` and registers the tool with [`register_all_tools`](store::register_all_tools).
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use yiem_core::{tool, tool::ExecutionMode}; // the attribute, and the module of the same name
///
/// #[derive(Deserialize, JsonSchema)]
/// struct WeatherArgs {
///     /// City name, e.g. "Tokyo".
///     city: String,
/// }
///
/// /// Fetch the current weather for a city.
/// #[tool(label = "Weather Lookup", parallel, read_only)]
/// async fn get_weather(args: WeatherArgs) -> Result<String, std::io::Error> {
///     Ok(format!("{}: 21 °C", args.city))
/// }
///
/// let tool = get_weather_tool();
/// assert_eq!(tool.name(), "get_weather");
/// assert_eq!(tool.label(), "Weather Lookup");
/// assert_eq!(tool.description(), "Fetch the current weather for a city.");
/// assert_eq!(tool.execution_mode(), ExecutionMode::Parallel);
/// assert_eq!(tool.input_schema()["required"], serde_json::json!(["city"]));
/// ```
///
/// # Signatures
///
/// `async fn f(args: A)`, `async fn f(ctx: ToolContext, args: A)`, `async fn f()` and
/// `async fn f(ctx: ToolContext)`, where `A: Deserialize + JsonSchema` (a struct deriving both). Before the
/// argument struct a tool may also take [`State<T>`](tool::State) parameters, the state of the store it runs in
/// (`async fn f(State(db): State<Db>, args: A)`; at most five `ToolContext` and `State` parameters, in any
/// order). Plain `fn`s with the same parameters are accepted too and run on tokio's blocking threads, so they
/// never stall other tools. The future of an async tool must be `Send`. Methods with `&self` are tools in an
/// impl block under [`tools`].
///
/// # Return types
///
/// Anything that implements [`IntoToolResult`](tool::IntoToolResult): `String`, `&'static str`, `()`, [`AgentToolResult`](tool::AgentToolResult),
/// [`Json<T>`](tool::Json) (text plus structured content and an output schema), [`Content`](tool::Content), `Vec<Content>`, and
/// `Result<T, E>` where `T` is one of these and `E: Display`; an `Err` becomes an error result whose text is
/// the error's `Display`, so the model sees it and can recover.
///
/// # Keys
///
/// | key | meaning | default |
/// |---|---|---|
/// | `name = "..."` | the name the model calls (`^[a-zA-Z0-9_-]{1,64}$`, checked at compile time) | the fn name |
/// | `label = "..."` | human-readable name | the name in title case |
/// | `description = "..."` | what the tool does | the doc comment (one of the two is required) |
/// | `parallel` / `sequential` | may it run concurrently with other tools of a batch | `sequential` |
/// | `needs_approval` | an agent waits for a person's decision before it runs a call ([`Decision`](agent::Decision)) | off |
/// | `timeout_ms = N` | time limit; the call gets an error result when it passes | none |
/// | `prepare = path` | `fn(serde_json::Value) -> serde_json::Value`, rewrites raw arguments first | none |
/// | `validate = path` | `fn(&A) -> Result<(), String>`, extra checks after parsing | none |
/// | `read_only`, `destructive`, `idempotent`, `open_world` | MCP hints, as flags or `= true/false` | unsaid |
/// | `crate = "path"` | where the runtime is, for re-exports | `::yiem_core` |
/// | `example = r#"{...}"#` | an example of good arguments as JSON text, repeatable; Anthropic's `input_examples` ([`ProviderOptions`](tool::ProviderOptions)); [`check_tools!`] checks it against the schema | none |
/// | `strict` | strict mode where the provider has it (OpenAI, Anthropic); the schema must be one strict mode expresses | off |
/// | `eager_input_streaming` | Anthropic streams the arguments unbuffered | off |
/// | `defer_loading` | the definition is sent only once the model has found the tool ([`catalog`]) | off |
/// | `free_text` | the tool takes free text, as its one `String` parameter: OpenAI's Responses API sends it as a custom tool, other providers as one string parameter `input` ([`TextFormat`](tool::TextFormat)) | off |
/// | `grammar(lark = "...")`, `grammar(regex = "...")` | as `free_text`, the text in the grammar's language: the Responses API constrains the model to it, other providers read it in the description, yiem checks a regex grammar itself ([`TextFormat`](tool::TextFormat)) | none |
///
/// ```
/// use yiem_core::{store::Dialect, tool, tool::GrammarSyntax};
///
/// /// Save a date.
/// #[tool(grammar(regex = r"\d{4}-\d{2}-\d{2}"))]
/// async fn save_date(date: String) -> String {
///     format!("saved {date}")
/// }
///
/// let tool = save_date_tool();
/// let grammar = tool.provider_options().free_text.as_ref().and_then(|f| f.grammar()).unwrap();
/// assert_eq!(grammar.syntax(), GrammarSyntax::Regex);
/// // The text arrives as the arguments `{"input": "<text>"}`.
/// assert_eq!(tool.input_schema()["required"], serde_json::json!(["input"]));
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let saved = tool.execute("c1", serde_json::json!({"input": "2026-12-24"})).await;
/// assert_eq!(saved.text_content(), "saved 2026-12-24");
/// # });
/// ```
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use yiem_core::tool;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct RangeArgs {
///     low: i32,
///     high: i32,
/// }
///
/// fn ordered(args: &RangeArgs) -> Result<(), String> {
///     if args.low <= args.high { Ok(()) } else { Err("`low` must not exceed `high`".into()) }
/// }
///
/// /// Size of an integer range.
/// #[tool(name = "range-size", validate = ordered, timeout_ms = 1000, idempotent)]
/// fn range_size(args: RangeArgs) -> String {
///     (args.high - args.low).to_string()
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let refused = range_size_tool().execute("c1", serde_json::json!({"low": 3, "high": 1})).await;
/// assert_eq!(
///     refused.text_content(),
///     "invalid arguments for tool `range-size`: `low` must not exceed `high`"
/// );
/// # });
/// ```
///
/// # Misuse is a compile error on your token
///
/// A tool without a description, with borrowed or several argument structs, generic, taking `self` outside
/// a [`tools`] impl, with a `State` parameter after the arguments or of a type that is not
/// `Send + Sync + 'static`, with an unknown or repeated key, or with arguments that are not
/// `Deserialize + JsonSchema` does not compile, and the error says what to write instead:
///
/// ```compile_fail
/// use yiem_core::tool;
///
/// #[tool] // error: a tool needs a description for the model: add a doc comment ...
/// async fn undocumented() -> String {
///     String::new()
/// }
/// ```
///
/// ```compile_fail
/// use yiem_core::tool;
///
/// /// Greet someone.
/// #[tool]
/// async fn greet(name: &str) -> String { // error: ... take `String` instead of `&str` ...
///     format!("hello {name}")
/// }
/// ```
pub use yiem_macros::tool;

/// Turns the `#[tool]` methods of an inherent `impl` block into the tools of one instance.
///
/// Each `#[tool]` method takes `&self` first, then the same parameters as a free `#[tool]` fn
/// (`ToolContext`, [`State<T>`](tool::State), one argument struct), and accepts the same keys. The macro implements
/// [`ToolMethods`](store::ToolMethods) for the type: `instance.tools()` on an `Arc<Self>` gives one tool per method, in the
/// order of the block, each calling the method on that instance; [`ToolStore::register_methods`](store::ToolStore::register_methods)
/// registers them in one call. Method tools are not registered statically (they need an instance), so
/// [`register_all_tools`](store::register_all_tools) does not see them.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use yiem_core::{store::ToolMethods, tool, tools};
///
/// struct Inventory {
///     items: Mutex<Vec<String>>,
/// }
///
/// #[derive(Deserialize, JsonSchema)]
/// struct StockArgs {
///     /// The item to add.
///     item: String,
/// }
///
/// #[tools]
/// impl Inventory {
///     /// Add an item to the inventory.
///     #[tool(idempotent)]
///     async fn stock(&self, args: StockArgs) -> String {
///         let mut items = self.items.lock().unwrap();
///         items.push(args.item);
///         format!("{} items", items.len())
///     }
///
///     /// Not a tool: methods without `#[tool]` stay as they are.
///     fn len(&self) -> usize {
///         self.items.lock().unwrap().len()
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let inventory = Arc::new(Inventory { items: Mutex::new(Vec::new()) });
/// let tools = Arc::clone(&inventory).tools();
/// assert_eq!(tools[0].name(), "stock");
/// assert_eq!(tools[0].description(), "Add an item to the inventory.");
/// let result = tools[0].execute("c1", serde_json::json!({"item": "apple"})).await;
/// assert_eq!(result.text_content(), "1 items");
/// assert_eq!(inventory.len(), 1);
/// # });
/// ```
///
/// A method that takes `&mut self`, a generic impl, or a `#[tool]` method outside a `#[tools]` impl does
/// not compile, and the error says what to write instead:
///
/// ```compile_fail
/// use yiem_core::{tool, tools};
///
/// struct Counter(u64);
///
/// #[tools]
/// impl Counter {
///     /// Count.
///     #[tool]
///     async fn bump(&mut self) -> String { // error: a method tool takes `&self`, not `&mut self` ...
///         self.0 += 1;
///         self.0.to_string()
///     }
/// }
/// ```
pub use yiem_macros::tools;

/// A test that checks every tool of the crate with [`check_tools`](fn@store::check_tools) (plus any tools you list, such as the
/// tools of a `#[tools]` instance), and fails with every problem listed. Put it in a test file of the crate
/// that defines the tools:
///
/// ```text
/// // tests/tools.rs
/// yiem_core::check_tools!();
/// // or, with method tools too:
/// yiem_core::check_tools!(std::sync::Arc::new(my_crate::Notes::default()).tools());
/// // tools in a library whose name is not the package's:
/// yiem_core::check_tools!(crate = my_tools_lib);
/// ```
///
/// It links the package's library itself (a test file that never names its library would otherwise
/// link none of its tools), and fails when it finds no tool at all, saying what to write. `cargo test`
/// then fails on a tool Gemini or OpenAI strict mode would reject, naming the tool and the type, before it
/// ships.
///
/// It names yiem-core as `$crate`, so it works under a renamed dependency
/// (`yc = { package = "yiem-core", .. }` and `yc::check_tools!();`) or a re-export.
#[macro_export]
macro_rules! check_tools {
    ($($input:tt)*) => {
        $crate::__private::check_tools_in!($crate; $($input)*);
    };
}
