//! What a model is told about arguments that do not fit: the same words at every depth, for JSON objects
//! and JSON text, and in every build — this file runs without features (`cargo test -p yiem-core`) and
//! with `schema-validation` (`cargo test -p yiem-core --features schema-validation`), and expects the very
//! same text in both.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use yiem_core::{tool, tool::AgentTool};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sort {
    /// Newest first.
    Newest,
    /// Most relevant first.
    Relevance,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)] // read by serde and the schema only
pub struct Filters {
    /// Only records with this tag.
    tag: Option<String>,
    /// Only records from this year.
    year: Option<u16>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)] // some fields are read by serde and the schema only
pub struct SearchArgs {
    /// What to look for.
    query: String,
    /// Narrow the results.
    #[serde(default)]
    filters: Option<Filters>,
    /// The order of the results.
    #[serde(default)]
    sort: Option<Sort>,
    /// The port of the search service.
    #[serde(default)]
    port: Option<u16>,
    /// Record ids to include.
    #[serde(default)]
    ids: Vec<u8>,
}

/// Search the records.
#[tool]
async fn search(args: SearchArgs) -> String {
    format!("{} ({} ids)", args.query, args.ids.len())
}

/// The text a model reads for `args`, sent as a JSON object and as JSON text: both must say the same.
async fn told(tool: &AgentTool, args: Value) -> String {
    let as_object = tool.execute("c1", args.clone()).await;
    let as_text = tool.execute("c2", Value::String(args.to_string())).await;
    assert!(as_object.is_error, "{args} must be refused");
    assert_eq!(
        as_object.text_content(),
        as_text.text_content(),
        "JSON text and a JSON object are told the same"
    );
    as_object.text_content()
}

const VALID: &str = "valid properties: `query`, `filters`, `sort`, `port`, `ids`";

#[tokio::test]
async fn an_unknown_property_in_a_nested_object_is_refused_with_did_you_mean() {
    let text = told(
        &search_tool(),
        json!({"query": "q", "filters": {"tagg": "sf"}}),
    )
    .await;
    assert_eq!(
        text,
        format!(
            "invalid arguments for tool `search`: at `/filters/tagg`: unknown property `tagg`; did you mean `tag`?\n{VALID}"
        )
    );
}

#[tokio::test]
async fn a_number_out_of_range_says_the_range() {
    let text = told(&search_tool(), json!({"query": "q", "port": 70000})).await;
    assert_eq!(
        text,
        format!(
            "invalid arguments for tool `search`: at `/port`: expected an integer from 0 to 65535 or null, got the number 70000\n{VALID}"
        )
    );
}

#[tokio::test]
async fn a_nested_value_of_the_wrong_type_says_what_was_expected() {
    let text = told(
        &search_tool(),
        json!({"query": "q", "filters": {"year": "1900"}}),
    )
    .await;
    assert_eq!(
        text,
        format!(
            "invalid arguments for tool `search`: at `/filters/year`: expected an integer from 0 to 65535 or null, got the string \"1900\"\n{VALID}"
        )
    );
}

#[tokio::test]
async fn a_value_outside_the_enum_lists_the_allowed_ones() {
    let text = told(&search_tool(), json!({"query": "q", "sort": "sideways"})).await;
    assert_eq!(
        text,
        format!(
            "invalid arguments for tool `search`: at `/sort`: expected one of \"newest\", \"relevance\" or null, got the string \"sideways\"\n{VALID}"
        )
    );
}

#[tokio::test]
async fn a_missing_property_says_what_it_takes() {
    let text = told(&search_tool(), json!({"sort": "newest"})).await;
    assert_eq!(
        text,
        format!(
            "invalid arguments for tool `search`: missing required property `query` (expected a string)\n{VALID}"
        )
    );
}

#[tokio::test]
async fn a_hundred_thousand_unknown_keys_get_a_short_report() {
    let mut args = serde_json::Map::new();
    args.insert("query".into(), json!("q"));
    for i in 0..100_000 {
        args.insert(format!("extra_{i}"), json!(i));
    }
    let text = told(&search_tool(), Value::Object(args)).await;
    assert!(
        text.starts_with("invalid arguments for tool `search` (100000 problems):\n- at `/extra_0`: unknown property `extra_0`\n"),
        "{}",
        &text[..200]
    );
    assert_eq!(
        text.lines()
            .filter(|line| line.starts_with("- at "))
            .count(),
        20
    );
    assert!(text.contains("\n- and 99980 more problems (fix these first)\n"));
    assert!(text.len() < 4_000, "the report is {} bytes", text.len());
}

#[tokio::test]
async fn a_hundred_thousand_wrong_items_get_the_first_twenty_and_a_count() {
    let ids: Vec<Value> = (0..100_000).map(|i| json!(format!("id{i}"))).collect();
    let text = told(&search_tool(), json!({"query": "q", "ids": ids})).await;
    assert!(
        text.starts_with("invalid arguments for tool `search` (100000 problems):\n- at `/ids/0`: expected an integer from 0 to 255, got the string \"id0\"\n"),
        "{}",
        &text[..200]
    );
    assert!(
        text.contains(
            "- at `/ids/19`: expected an integer from 0 to 255, got the string \"id19\"\n"
        )
    );
    assert!(!text.contains("/ids/20`"));
    assert!(text.contains("\n- and 99980 more problems (fix these first)\n"));
    assert!(text.len() < 4_000, "the report is {} bytes", text.len());
}

#[tokio::test]
async fn a_key_a_megabyte_long_is_cut_in_the_report() {
    let key = "k".repeat(1 << 20);
    let text = told(&search_tool(), json!({"query": "q", key: 1})).await;
    assert!(text.len() < 1_000, "the report is {} bytes", text.len());
    assert!(text.contains("unknown property `kkkk"));
    assert!(text.contains('…'));
}

#[tokio::test]
async fn arguments_that_fit_at_every_depth_run() {
    let tool = search_tool();
    let args = json!({"query": "q", "filters": {"tag": "sf", "year": 1900}, "sort": "newest", "ids": [1, 2]});
    assert_eq!(
        tool.execute("c1", args.clone()).await.text_content(),
        "q (2 ids)"
    );
    assert_eq!(
        tool.execute("c2", Value::String(args.to_string()))
            .await
            .text_content(),
        "q (2 ids)"
    );
}
