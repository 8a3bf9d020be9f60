//! `write_tool`: the file it writes, and every refusal (after which nothing is written).

use std::path::Path;

use serde_json::{Value, json};
use yiem_core::{
    store::ToolStore,
    tool::{AgentTool, AgentToolResult},
};
use yiem_tools::write_tool::{ToolsDir, WriteToolArgs, write_tool_tool};

/// A store with `write_tool` writing into `dir`, and builder tools named `taken` (an MCP server's, say).
fn store_with(dir: &Path, taken: &[String]) -> ToolStore {
    let store = ToolStore::new("agent");
    let store = store
        .clone()
        .with_state(ToolsDir::new(dir).refusing_names_of(&store));
    for name in taken {
        let tool = AgentTool::builder(name.as_str())
            .description("A tool from elsewhere.")
            .handler(|_, _| async { "none" })
            .build()
            .unwrap();
        store.register(tool).unwrap();
    }
    store.register(write_tool_tool()).unwrap();
    store
}

/// `write_tool` as a model calls it, in a store whose tools directory is `dir` and that already holds
/// tools named `taken`.
fn write_tool_in(dir: &Path, taken: &[String], args: WriteToolArgs) -> AgentToolResult {
    let store = store_with(dir, taken);
    let args = serde_json::to_value(&args).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(store.execute("c", "write_tool", args))
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn args(value: Value) -> WriteToolArgs {
    serde_json::from_value(value).unwrap()
}

fn search_wine() -> Value {
    json!({
        "name": "search_wine",
        "label": "Wine Search",
        "description": "Search the wine list.\nMatches names and grapes.",
        "fields": [
            {"name": "query", "type": "string", "description": "Words to look for, e.g. \"cabernet\"."},
            {"name": "maxResults", "type": "integer", "required": false},
            {"name": "type", "type": "string_list", "description": "Red, white, rosé."}
        ],
        "body": "let limit = args.max_results.unwrap_or(5);\nOk(format!(\"{limit} wines for {}\", args.query))",
        "parallel": true
    })
}

const SEARCH_WINE_RS: &str = r#"//! `search_wine`: Search the wine list.
//!
//! Written by `write_tool`; `build.rs` compiles in every file of this directory.

use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::tool;

/// Arguments of `search_wine`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchWineArgs {
    #[doc = "Words to look for, e.g. \"cabernet\"."]
    pub query: String,
    #[doc = "The `maxResults` argument."]
    #[serde(rename = "maxResults")]
    #[serde(default)]
    pub max_results: Option<i64>,
    #[doc = "Red, white, rosé."]
    #[serde(rename = "type")]
    pub type_: Vec<String>,
}

#[doc = "Search the wine list.\nMatches names and grapes."]
#[tool(label = "Wine Search", parallel)]
pub async fn search_wine(args: SearchWineArgs) -> Result<String, String> {
let limit = args.max_results.unwrap_or(5);
Ok(format!("{limit} wines for {}", args.query))
}
"#;

#[test]
fn writes_an_argument_struct_and_a_tool_fn_from_fields() {
    let dir = tempfile::tempdir().unwrap();
    let result = write_tool_in(dir.path(), &[], args(search_wine()));
    assert!(!result.is_error, "{}", result.text_content());
    let path = dir.path().join("search_wine.rs");
    assert_eq!(
        result.text_content(),
        format!(
            "Wrote tool `search_wine` to `{}`. The next `cargo build` compiles it in (every file in the tools directory is included); restart the program to call `search_wine`.",
            path.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), SEARCH_WINE_RS);
    assert_eq!(files(dir.path()), ["search_wine.rs"]);
}

#[test]
fn writes_fields_from_a_json_schema() {
    let dir = tempfile::tempdir().unwrap();
    let result = write_tool_in(
        dir.path(),
        &[],
        args(json!({
            "name": "plan_trip",
            "label": "Trip Planner",
            "description": "Plan a trip.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "Where to."},
                    "days": {"type": ["integer", "null"]},
                    "stops": {"type": "array", "items": {"type": "number"}},
                    "extra": {"type": "object"},
                    "flexible": {"type": "boolean"}
                },
                "required": ["city", "days", "stops", "extra"]
            },
            "body": "Ok(format!(\"{} for {:?} days\", args.city, args.days))"
        })),
    );
    assert!(!result.is_error, "{}", result.text_content());
    let source = std::fs::read_to_string(dir.path().join("plan_trip.rs")).unwrap();
    let expected_struct = r#"pub struct PlanTripArgs {
    #[doc = "Where to."]
    pub city: String,
    #[doc = "The `days` argument."]
    #[serde(default)]
    pub days: Option<i64>,
    #[doc = "The `stops` argument."]
    pub stops: Vec<f64>,
    #[doc = "The `extra` argument."]
    pub extra: serde_json::Value,
    #[doc = "The `flexible` argument."]
    #[serde(default)]
    pub flexible: Option<bool>,
}
"#;
    assert!(source.contains(expected_struct), "{source}");
    assert!(
        source.contains(
            "#[tool(label = \"Trip Planner\")]\npub async fn plan_trip(args: PlanTripArgs)"
        )
    );
}

#[test]
fn a_tool_without_arguments_gets_an_empty_struct_and_an_unused_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let result = write_tool_in(
        dir.path(),
        &[],
        args(
            json!({"name": "coin", "label": "Coin", "description": "Flip a coin.", "body": "Ok(\"heads\".to_string())"}),
        ),
    );
    assert!(!result.is_error, "{}", result.text_content());
    let source = std::fs::read_to_string(dir.path().join("coin.rs")).unwrap();
    assert!(source.contains("pub struct CoinArgs {}\n"));
    assert!(source.contains("pub async fn coin(_args: CoinArgs) -> Result<String, String> {\nOk(\"heads\".to_string())\n}\n"));
}

/// Runs `write_tool_in` with `change` applied to the search_wine arguments and returns the error text;
/// asserts nothing was written.
fn refusal(change: impl FnOnce(&mut Value)) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("taken_file.rs"), "// already here\n").unwrap();
    let mut value = search_wine();
    change(&mut value);
    let result = write_tool_in(dir.path(), &["from_the_store".to_owned()], args(value));
    assert!(
        result.is_error,
        "expected a refusal: {}",
        result.text_content()
    );
    assert_eq!(
        files(dir.path()),
        ["taken_file.rs"],
        "something was written"
    );
    result.text_content()
}

#[test]
fn refuses_names_that_are_not_snake_case_identifiers() {
    for bad in [
        "SearchWine",
        "search-wine",
        "fn",
        "1wine",
        "a__b",
        "search wine",
    ] {
        assert_eq!(
            refusal(|v| v["name"] = json!(bad)),
            format!(
                "tool `write_tool`: `name` `{bad}` is not usable: it must be a snake_case Rust identifier (lowercase letters, digits and single `_`, starting with a letter, not a keyword) of at most 64 characters, e.g. `search_wine`"
            )
        );
    }
}

#[test]
fn refuses_the_name_of_an_existing_tool_or_file() {
    for taken in ["read", "list_tools", "get_time", "from_the_store"] {
        assert_eq!(
            refusal(|v| v["name"] = json!(taken)),
            format!(
                "tool `write_tool`: a tool named `{taken}` already exists; call `list_tools` and choose a free name"
            )
        );
    }
    let message = refusal(|v| v["name"] = json!("taken_file"));
    assert!(
        message.starts_with("tool `write_tool`: the file `"),
        "{message}"
    );
    assert!(
        message.ends_with("taken_file.rs` already exists; choose another name"),
        "{message}"
    );
}

#[test]
fn refuses_a_body_that_is_not_a_block() {
    let message = refusal(|v| v["body"] = json!("Ok(1) } fn sneaky() {"));
    assert!(
        message.starts_with("tool `write_tool`: `body` is not a valid Rust function body: "),
        "{message}"
    );
    assert!(message.ends_with(
        "; give the statements inside the braces of `async fn search_wine(args) -> Result<String, String> { ... }`, with balanced brackets"
    ));
    let unbalanced = refusal(|v| v["body"] = json!("Ok(vec![1, 2)"));
    assert!(
        unbalanced.starts_with("tool `write_tool`: `body` is not a valid Rust function body: ")
    );
}

#[test]
fn refuses_unusable_argument_definitions() {
    assert_eq!(
        refusal(|v| v["input_schema"] = json!({"type": "object", "properties": {}})),
        "tool `write_tool`: give either `input_schema` or `fields`, not both"
    );
    assert_eq!(
        refusal(|v| {
            v.as_object_mut().unwrap().remove("fields");
            v["input_schema"] = json!({"type": "array"});
        }),
        "tool `write_tool`: `input_schema` has type \"array\"; tool arguments are an object: use \"type\": \"object\""
    );
    assert_eq!(
        refusal(|v| {
            v.as_object_mut().unwrap().remove("fields");
            v["input_schema"] =
                json!({"type": "object", "properties": {"a": {}}, "required": ["b"]});
        }),
        "tool `write_tool`: `input_schema.required` names `b`, which is not in `properties`"
    );
    assert_eq!(
        refusal(
            |v| v["fields"] = json!([{"name": "max-results", "type": "integer"}, {"name": "maxResults", "type": "integer"}])
        ),
        "tool `write_tool`: arguments `max-results` and `maxResults` would both become the Rust field `max_results`; rename one"
    );
    assert_eq!(
        refusal(|v| v["label"] = json!(" ")),
        "tool `write_tool`: `label` is empty; give a human-readable name such as `Wine Search`"
    );
}

#[test]
fn refuses_a_missing_tools_directory() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let result = write_tool_in(&missing, &[], args(search_wine()));
    assert_eq!(
        result.text_content(),
        format!(
            "tool `write_tool`: the tools directory `{}` does not exist",
            missing.display()
        )
    );
}

#[tokio::test]
async fn write_tool_for_a_store_refuses_the_names_its_list_tools_lists() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with(dir.path(), &["search_wine".to_owned()]);
    let refused = store.execute("c", "write_tool", search_wine()).await;
    assert_eq!(
        refused.text_content(),
        "tool `write_tool`: a tool named `search_wine` already exists; call `list_tools` and choose a free name"
    );
    let mut other = search_wine();
    other["name"] = json!("search_beer");
    let written = store.execute("c", "write_tool", other).await;
    assert!(!written.is_error, "{}", written.text_content());
    assert_eq!(files(dir.path()), ["search_beer.rs"]);
}

// ---- the compile check, and the body kept as given ---------------------------------------------

fn body_tool(name: &str, body: &str) -> WriteToolArgs {
    args(json!({"name": name, "label": "Probe", "description": "A probe.", "body": body}))
}

#[test]
fn a_body_cannot_read_this_machine_at_compile_time() {
    // Each would put a file outside the root or a key into the compiler's error, which is returned.
    let secret = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let dir = tempfile::tempdir().unwrap();
    let attempts = [
        (
            format!("compile_error!(include_str!({secret:?}))"),
            "`include_str!`",
        ),
        (
            "compile_error!(env!(\"OPENAI_API_KEY\"))".to_owned(),
            "`env!`",
        ),
        (
            format!("Ok(format!(\"{{}}\", include_bytes!({secret:?}).len()))"),
            "`include_bytes!`",
        ),
        (
            format!(
                "macro_rules! read {{ ($m:ident) => {{ compile_error!($m!({secret:?})) }} }}\nread!(include_str)"
            ),
            "`macro_rules!`",
        ),
        (
            "#[path = \"/etc/passwd\"]\nmod passwd;\nOk(String::new())".to_owned(),
            "a `#[path]` attribute",
        ),
        (
            "Ok(option_env!(\"HOME\").unwrap_or(\"\").to_owned())".to_owned(),
            "`option_env!`",
        ),
    ];
    for (body, named) in attempts {
        let result = write_tool_in(dir.path(), &[], body_tool("reader", &body));
        assert_eq!(
            result.text_content(),
            format!(
                "tool `write_tool`: `body` uses {named}: a tool written by `write_tool` may not read a file or an environment variable of this machine when it is compiled (`include_str!`, `include_bytes!`, `include!`, `env!`, `option_env!`, `#[path]`, file modules) nor define macros (`macro_rules!`); it reads what it needs at run time, from its arguments. Remove it; nothing was written"
            ),
            "{body}"
        );
        assert!(!result.text_content().contains("[package]"));
    }
    // A run-time read of the environment is the tool's own business, and compiles.
    let runtime = write_tool_in(
        dir.path(),
        &[],
        body_tool(
            "runtime_env",
            "Ok(std::env::var(\"HOME\").unwrap_or_default())",
        ),
    );
    assert!(!runtime.is_error, "{}", runtime.text_content());
}

#[test]
fn a_body_that_does_not_type_check_is_refused_with_the_compilers_first_error() {
    let dir = tempfile::tempdir().unwrap();
    let result = write_tool_in(
        dir.path(),
        &[],
        body_tool("undefined", "Ok(undefined_name)"),
    );
    assert!(result.is_error);
    let text = result.text_content();
    assert!(
        text.starts_with("tool `write_tool`: the tool does not compile: undefined.rs:"),
        "{text}"
    );
    assert!(
        text.contains("error[E0425]: cannot find value `undefined_name`"),
        "{text}"
    );
    assert!(!dir.path().join("undefined.rs").exists());

    let reserved = write_tool_in(
        dir.path(),
        &[],
        body_tool("reserved", "let gen = 1;\nOk(gen.to_string())"),
    );
    assert!(reserved.is_error);
    assert!(
        reserved.text_content().contains("reserved.rs:"),
        "{}",
        reserved.text_content()
    );
    assert!(!dir.path().join("reserved.rs").exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_multi_line_string_in_the_body_is_kept_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let body = "let text = \"first\n  second\n\tthird   \n\";\n    Ok(text.to_string())";
    let result = write_tool_in(dir.path(), &[], body_tool("poem", body));
    assert!(!result.is_error, "{}", result.text_content());
    let source = std::fs::read_to_string(dir.path().join("poem.rs")).unwrap();
    assert!(
        source.contains(&format!(
            "pub async fn poem(_args: PoemArgs) -> Result<String, String> {{\n{body}\n}}\n"
        )),
        "{source}"
    );
}

#[test]
fn an_inner_attribute_at_the_start_of_the_body_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let body = "#![allow(unused)]\nlet spare = 1;\nOk(\"fine\".into())";
    let result = write_tool_in(dir.path(), &[], body_tool("lenient", body));
    assert!(!result.is_error, "{}", result.text_content());
    assert!(
        std::fs::read_to_string(dir.path().join("lenient.rs"))
            .unwrap()
            .contains(body)
    );
}

#[test]
fn a_body_that_closes_the_function_early_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let result = write_tool_in(
        dir.path(),
        &[],
        body_tool("sneaky", "Ok(String::new())\n}\nfn other() {"),
    );
    assert!(result.is_error);
    assert!(
        result
            .text_content()
            .starts_with("tool `write_tool`: `body` is not a valid Rust function body"),
        "{}",
        result.text_content()
    );
}
