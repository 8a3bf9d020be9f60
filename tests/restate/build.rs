//! Makes every Rust snippet of the workspace's README.md a doctest of this crate (the `readme` module), so
//! the README's code compiles or CI is red (issue 29). A snippet that is a whole program (it has a `main`)
//! is taken as it is; a fragment gets the set-up it needs from `SETUP` below, as hidden lines — so
//! README.md itself shows only what a reader needs, and GitHub shows no `# ` lines. Fragments are compiled,
//! not run (`no_run`): they talk to models, servers and files.
//!
//! This crate is the one that can: its dependencies include yiem-core with every feature (through
//! yiem-tests), yiem-restate and restate-sdk.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// Each fragment of the README, by its first line: what comes before it and after it.
const SETUP: &[(&str, &str, &str)] = &[
    (
        "use yiem_core::{agent::{Agent, AgentSettings}, llm::{OpenAiResponsesConfig, OpenAiResponsesModel}};",
        "fn readme(store: yiem_core::store::ToolStore) -> Result<(), Box<dyn std::error::Error>> {",
        "let _ = agent;\nOk(())\n}\nfn main() {}",
    ),
    (
        "use yiem_core::llm::{PromptCache, ToolChoice};",
        "use yiem_core::llm::{AnthropicConfig, OpenAiResponsesConfig};\nfn readme(key: String) {",
        "let _ = (anthropic, openai);\n}\nfn main() {}",
    ),
    (
        "use yiem_core::mcp::{McpHttpServer, McpServer};",
        "async fn readme(\n    store: yiem_core::store::ToolStore,\n    token: String,\n    shutdown: std::future::Pending<()>,\n\
         ) -> Result<(), Box<dyn std::error::Error>> {",
        "Ok(())\n}\nfn main() {}",
    ),
    ("// tests/tools.rs", "", "fn main() {}"),
    (
        "use yiem_core::{catalog::{RequestTools, ToolSearch}, store::ToolStore, tool::AgentTool};",
        "fn readme() {",
        "}\nfn main() {}",
    ),
    (
        "// A tool that asks the user, and logs.",
        "",
        "fn main() {}",
    ),
    (
        "yiem_core::link_tools!(weather_tools, file_tools);",
        "mod weather_tools {}\nmod file_tools {}",
        "fn main() {}",
    ),
    (
        "use yiem_core::store::Dialect;",
        "use serde_json::Value;\nuse yiem_core::{store::ToolStore, tool::AgentTool};\n\
         fn readme(store: ToolStore, tool: AgentTool, args: Value) -> Result<(), Box<dyn std::error::Error>> {",
        "let _ = (tools, text, args);\nOk(())\n}\nfn main() {}",
    ),
    (
        "use yiem_core::prelude::*;   // Agent, AgentSettings (the setters), ToolStore, ...",
        "async fn readme(store: yiem_core::store::ToolStore) -> Result<(), Box<dyn std::error::Error>> {",
        "Ok(())\n}\nfn main() {}",
    ),
    (
        "let agent = Agent::builder()",
        "use yiem_core::prelude::*;\nuse yiem_core::{agent::AgentRun, llm::OpenAiModel};\n\
         async fn readme(model: OpenAiModel, store: ToolStore) -> Result<(), Box<dyn std::error::Error>> {",
        "Ok(())\n}\nfn main() {}",
    ),
    (
        "let outcome = agent.prompt(\"merge #12\").await;",
        "use yiem_core::prelude::*;\nuse yiem_core::{agent::{AgentRun, RunKey}, ask::ElicitationAnswer, llm::OpenAiModel};\n\
         async fn readme(agent: Agent, model: OpenAiModel, store: ToolStore, key: RunKey) -> Result<(), Box<dyn std::error::Error>> {",
        "Ok(())\n}\nfn main() {}",
    ),
    (
        "let key = RunKey::from_hex(&std::fs::read_to_string(key_file)?).unwrap();  // 32 bytes only you read",
        "use yiem_core::agent::{Agent, AgentRun, RunKey};\n\
         fn readme(agent: Agent, key_file: &str) -> Result<(), Box<dyn std::error::Error>> {",
        "let _ = (run, signature);\nOk(())\n}\nfn main() {}",
    ),
    (
        "let store = ToolStore::new(\"my-tools\");",
        "use yiem_core::store::{ToolStore, register_all_tools};\n\
         async fn readme() -> Result<(), Box<dyn std::error::Error>> {",
        "Ok(())\n}\nfn main() {}",
    ),
    (
        "let store = ToolStore::new(\"agent\");",
        "use std::time::Duration;\nuse yiem_core::store::ToolStore;\nuse yiem_core::mcp::McpClient;\n\
         async fn readme(token: String) -> Result<(), Box<dyn std::error::Error>> {",
        "let _ = remote;\nOk(())\n}\nfn main() {}",
    ),
    (
        "use yiem_core::mcp::oauth::{FileTokenStore, OAuth};",
        "use yiem_core::mcp::McpClient;\n\
         async fn open_browser_and_wait(url: String) -> Result<String, String> { Err(url) }\n\
         async fn readme() -> Result<(), Box<dyn std::error::Error>> {",
        "let _ = linear;\nOk(())\n}\nfn main() {}",
    ),
    (
        "use restate_sdk::prelude::*;",
        "use yiem_core::store::ToolStore;\n\
         fn my_model() -> yiem_core::llm::ScriptedModel { yiem_core::llm::ScriptedModel::new([]) }\n\
         async fn readme(store: ToolStore) -> Result<(), Box<dyn std::error::Error>> {",
        "Ok(())\n}\nfn main() {}",
    ),
];

fn main() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    println!("cargo:rerun-if-changed={}", readme.display());
    println!("cargo:rerun-if-changed=build.rs");
    let text = fs::read_to_string(&readme).expect("README.md at the workspace's root");
    let mut doctests = String::new();
    let mut snippet: Option<Vec<&str>> = None;
    for line in text.lines() {
        match (&mut snippet, line) {
            (None, "```rust") => snippet = Some(Vec::new()),
            (Some(lines), "```") => {
                doctests.push_str(&doctest(lines));
                snippet = None;
            }
            (Some(lines), line) => lines.push(line),
            (None, _) => {}
        }
    }
    let out = Path::new(&env::var("OUT_DIR").expect("OUT_DIR")).join("readme.md");
    fs::write(out, doctests).expect("the doctests written");
}

/// One snippet as a doctest.
fn doctest(lines: &[&str]) -> String {
    let first = lines.first().copied().unwrap_or_default();
    let whole = lines
        .iter()
        .any(|line| line.starts_with("fn main") || line.starts_with("async fn main"));
    // A whole program runs in a crate of its own: merged with the others, its `register_all_tools` would
    // find their tools too.
    if whole {
        return format!("```rust,standalone_crate\n{}\n```\n\n", lines.join("\n"));
    }
    let Some((_, before, after)) = SETUP.iter().find(|(head, _, _)| *head == first) else {
        panic!(
            "README.md has a Rust snippet that is not a whole program and has no set-up: add one for \
             `{first}` to SETUP in tests/restate/build.rs"
        );
    };
    let mut text = String::from("```rust,no_run\n");
    for line in before.lines() {
        let _ = writeln!(text, "# {line}");
    }
    for line in lines {
        let _ = writeln!(text, "{line}");
    }
    for line in after.lines() {
        let _ = writeln!(text, "# {line}");
    }
    text.push_str("```\n\n");
    text
}
