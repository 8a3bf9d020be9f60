//! Registration: `register_all_tools`, isolated stores, duplicates, `list_tools`, and run-time tools.

use std::time::Duration;

use serde_json::json;
use yiem_core::{
    store::{RegistrationError, ToolStore, register_all_tools},
    tool,
    tool::{AgentTool, ToolContext, ToolDefinitionError},
};

/// Zebra facts.
#[tool]
async fn zebra() -> &'static str {
    "stripes"
}

/// Aardvark facts.
#[tool]
async fn aardvark() -> &'static str {
    "ants"
}

/// Mongoose facts.
#[tool(label = "Mongoose Facts")]
fn mongoose() -> &'static str {
    "snakes"
}

fn echo_tool(name: &str) -> AgentTool {
    AgentTool::builder(name)
        .description("Repeat `text`.\nSecond line of detail.")
        .input_schema(json!({
            "type": "object",
            "properties": {"text": {"type": "string", "minLength": 1}, "times": {"type": "integer", "minimum": 1}},
            "required": ["text"],
            "additionalProperties": false
        }))
        .handler(|_ctx: ToolContext, args: serde_json::Value| async move {
            let times = args["times"].as_u64().unwrap_or(1) as usize;
            args["text"].as_str().unwrap_or_default().repeat(times)
        })
        .build()
        .expect("a valid definition")
}

#[test]
fn register_all_tools_returns_every_tool_sorted_by_name_with_list_tools() {
    let store = ToolStore::new("zoo");
    let names = register_all_tools(&store).unwrap();
    assert_eq!(names, ["aardvark", "list_tools", "mongoose", "zebra"]);
    assert_eq!(store.names(), names);
    assert_eq!(store.get("mongoose").unwrap().label(), "Mongoose Facts");
}

#[test]
fn two_stores_are_isolated_and_clear_leaves_the_other_alone() {
    let a = ToolStore::new("a");
    let b = ToolStore::new("b");
    register_all_tools(&a).unwrap();
    b.register(echo_tool("echo")).unwrap();
    assert!(a.get("echo").is_none());
    assert!(b.get("zebra").is_none());
    a.clear();
    assert!(a.is_empty());
    assert_eq!(b.names(), ["echo"]);
}

#[test]
fn registration_order_is_kept_and_remove_keeps_the_rest_in_order() {
    let store = ToolStore::new("ordered");
    for name in ["c", "a", "b"] {
        store.register(echo_tool(name)).unwrap();
    }
    assert_eq!(store.names(), ["c", "a", "b"]);
    assert_eq!(
        store.remove("c").map(|t| t.name().to_owned()),
        Some("c".to_owned())
    );
    assert_eq!(store.names(), ["a", "b"]);
    assert!(store.remove("c").is_none());
}

/// The 1-based line of this file that contains `needle`.
fn line_of(needle: &str) -> u32 {
    let index = include_str!("registry.rs")
        .lines()
        .position(|line| line.contains(needle) && !line.contains("line_of"));
    index.expect("the needle is in this file") as u32 + 1
}

#[test]
fn a_duplicate_name_is_refused_naming_both_definitions() {
    let store = ToolStore::new("dup");
    store.register(zebra_tool()).unwrap();
    let error = store.register(echo_tool("zebra")).unwrap_err();
    let RegistrationError::Duplicate {
        existing, refused, ..
    } = &error
    else {
        panic!("not a duplicate: {error}");
    };
    let zebra_line = line_of("async fn zebra()");
    let builder_line = line_of("AgentTool::builder(name)");
    assert_eq!(existing.file, "tests/tests/registry.rs");
    assert_eq!(existing.line, zebra_line, "the line of `async fn zebra`");
    assert_eq!(refused.file, "tests/tests/registry.rs");
    assert_eq!(
        refused.line, builder_line,
        "the line of `AgentTool::builder`"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "tool `zebra` is already registered in store `dup` (defined at tests/tests/registry.rs:{zebra_line}); \
             refused the definition at tests/tests/registry.rs:{builder_line}: give one of them another name, \
             e.g. #[tool(name = \"...\")]"
        )
    );
}

#[test]
fn register_all_tools_is_all_or_nothing() {
    let store = ToolStore::new("taken");
    store.register(echo_tool("mongoose")).unwrap();
    let error = register_all_tools(&store).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("tool `mongoose` is already registered in store `taken`")
    );
    assert_eq!(store.names(), ["mongoose"], "nothing else was registered");
}

#[tokio::test]
async fn list_tools_lists_what_is_in_its_store_when_called() {
    let store = ToolStore::new("live");
    store.register(store.list_tools_tool()).unwrap();
    store.register(zebra_tool()).unwrap();
    let list = store.get("list_tools").unwrap();
    let before = list.execute("l1", json!({})).await;
    assert_eq!(
        before.text_content(),
        "Available tools:\n- list_tools: List Tools — List the tools available to you, with their labels and \
         descriptions. Call it to discover tools and to check a name is free before creating a new tool.\n- zebra: \
         Zebra — Zebra facts."
    );
    store.register(echo_tool("echo")).unwrap();
    let after = list.execute("l2", json!({})).await;
    assert!(
        after
            .text_content()
            .ends_with("\n- echo: Echo — Repeat `text`."),
        "{}",
        after.text_content()
    );
}

#[tokio::test]
async fn list_tools_of_a_dropped_store_says_so() {
    let store = ToolStore::new("gone");
    let list = store.list_tools_tool();
    drop(store);
    let result = list.execute("l", json!({})).await;
    assert_eq!(
        result.text_content(),
        "the tool store `gone` no longer exists"
    );
    assert!(result.is_error);
}

#[tokio::test]
async fn run_time_tools_validate_arguments_against_their_schema() {
    let echo = echo_tool("echo");
    assert_eq!(
        echo.execute("e1", json!({"text": "ab", "times": 2}))
            .await
            .text_content(),
        "abab"
    );

    let result = echo
        .execute("e2", json!({"text": "", "times": 0, "loud": true}))
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `echo` (3 problems):\n\
         - at `/loud`: unknown property `loud`\n\
         - at `/text`: expected a string of at least 1 character, got the string \"\"\n\
         - at `/times`: expected an integer ≥ 1, got the number 0\n\
         valid properties: `text`, `times`"
    );
    let result = echo.execute("e3", json!({})).await;
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `echo`: missing required property `text` (expected a string of at least 1 character)\n\
         valid properties: `text`, `times`"
    );
}

#[test]
fn run_time_definitions_are_checked() {
    let handler = |_ctx: ToolContext, _args: serde_json::Value| async { "x" };
    let invalid_name = AgentTool::builder("no spaces")
        .description("d")
        .handler(handler)
        .build();
    assert_eq!(
        invalid_name.unwrap_err(),
        ToolDefinitionError::InvalidName("no spaces".into())
    );
    let no_description = AgentTool::builder("t").handler(handler).build();
    assert_eq!(
        no_description.unwrap_err(),
        ToolDefinitionError::MissingDescription("t".into())
    );
    let no_handler = AgentTool::builder("t").description("d").build();
    assert_eq!(
        no_handler.unwrap_err(),
        ToolDefinitionError::MissingHandler("t".into())
    );
    let not_object = AgentTool::builder("t")
        .description("d")
        .input_schema(json!({"type": "string"}))
        .handler(handler)
        .build();
    assert_eq!(
        not_object.unwrap_err().to_string(),
        "the input schema of tool `t` is not usable: tool arguments are a JSON object: the schema needs `\"type\": \"object\"`"
    );
    let broken = AgentTool::builder("t")
        .description("d")
        .input_schema(json!({"type": "object", "properties": {"a": {"type": "nonsense"}}}))
        .handler(handler)
        .build();
    assert!(matches!(
        broken.unwrap_err(),
        ToolDefinitionError::InvalidSchema { .. }
    ));
}

#[tokio::test]
async fn run_time_tools_get_defaults_and_settings() {
    let tool = AgentTool::builder("slow_echo")
        .description("d")
        .parallel()
        .timeout(Duration::from_millis(20))
        .handler(|_ctx: ToolContext, _args: serde_json::Value| async {
            std::future::pending::<()>().await;
            "late"
        })
        .build()
        .unwrap();
    assert_eq!(tool.label(), "Slow Echo");
    assert_eq!(
        *tool.input_schema(),
        json!({"type": "object", "properties": {}})
    );
    let result = tool.execute("s", json!({})).await;
    assert_eq!(
        result.text_content(),
        "tool `slow_echo` timed out after 20 ms"
    );
}
