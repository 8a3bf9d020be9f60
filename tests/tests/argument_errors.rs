//! The error a model sees for bad arguments: every problem with its JSON pointer, what was expected and
//! what came, the valid property names and a "did you mean" for a misspelt property; unknown properties
//! reported unless the arguments opt in to extra fields. Also the dialect normalization a strict-mode model
//! needs before its arguments parse.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::{
    store::{ArgumentChecking, Dialect, DialectError, ToolStore},
    tool,
    tool::AgentTool,
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WeatherArgs {
    /// City name, e.g. "Tokyo".
    city: String,
    /// Temperature unit; metric when left out.
    #[serde(default)]
    unit: Option<Unit>,
    /// Days ahead, 0 for today.
    #[serde(default)]
    days: u8,
}

/// Temperature unit.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Degrees Celsius.
    Metric,
    /// Degrees Fahrenheit.
    Imperial,
}

/// Fetch the weather forecast for a city.
#[tool]
async fn forecast(args: WeatherArgs) -> String {
    let unit = match args.unit {
        Some(Unit::Imperial) => "°F",
        _ => "°C",
    };
    format!("{} in {} days: 21 {unit}", args.city, args.days)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct OrderArgs {
    /// The order lines.
    items: Vec<Line>,
    /// Where to send it.
    address: Address,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Line {
    /// Stock keeping unit.
    sku: String,
    /// How many.
    qty: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Address {
    /// Street and number.
    street: String,
    /// Postal code.
    zip: String,
}

/// Place an order.
#[tool]
async fn place_order(args: OrderArgs) -> String {
    let lines: Vec<String> = args
        .items
        .iter()
        .map(|l| format!("{} x{}", l.sku, l.qty))
        .collect();
    format!(
        "{} to {} {}",
        lines.join(", "),
        args.address.street,
        args.address.zip
    )
}

/// A shape, tagged by its `kind`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shape {
    /// A circle.
    Circle {
        /// Radius in metres.
        radius: f64,
    },
    /// A square.
    Square {
        /// Side in metres.
        side: f64,
    },
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DrawArgs {
    /// What to draw.
    shape: Shape,
}

/// Draw a shape.
#[tool]
async fn draw(args: DrawArgs) -> String {
    format!("{:?}", args.shape)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecordArgs {
    /// The record's id.
    id: String,
    /// Any other fields.
    #[serde(flatten)]
    fields: HashMap<String, String>,
}

/// Store a record with any fields.
#[tool]
async fn store_record(args: RecordArgs) -> String {
    let mut keys: Vec<&String> = args.fields.keys().collect();
    keys.sort();
    format!("{}: {keys:?}", args.id)
}

/// Tell the time.
#[tool]
async fn clock() -> &'static str {
    "12:00"
}

async fn error_text(tool: AgentTool, args: serde_json::Value) -> String {
    let result = tool.execute("call", args).await;
    assert!(result.is_error);
    result.text_content()
}

// The five typical mistakes.

#[tokio::test]
async fn a_misspelt_property_gets_a_suggestion_and_the_missing_one_is_named() {
    assert_eq!(
        error_text(forecast_tool(), json!({"citty": "Oslo"})).await,
        "invalid arguments for tool `forecast` (2 problems):\n\
         - at `/citty`: unknown property `citty`; did you mean `city`?\n\
         - missing required property `city` (expected a string)\n\
         valid properties: `city`, `unit`, `days`"
    );
}

#[tokio::test]
async fn a_wrong_type_says_what_was_expected_and_what_came() {
    assert_eq!(
        error_text(forecast_tool(), json!({"city": "Oslo", "days": "three"})).await,
        "invalid arguments for tool `forecast`: at `/days`: expected an integer from 0 to 255, got the string \"three\"\n\
         valid properties: `city`, `unit`, `days`"
    );
}

#[tokio::test]
async fn a_value_out_of_the_enum_lists_the_allowed_values() {
    assert_eq!(
        error_text(forecast_tool(), json!({"city": "Oslo", "unit": "kelvin"})).await,
        "invalid arguments for tool `forecast`: at `/unit`: expected one of \"metric\", \"imperial\" or null, got the string \"kelvin\"\n\
         valid properties: `city`, `unit`, `days`"
    );
}

#[tokio::test]
async fn every_problem_in_nested_values_is_listed_with_its_path() {
    let args = json!({
        "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}, {"sku": 3, "qty": -1}],
        "address": {"street": "Main 1", "zip_code": "0150"}
    });
    assert_eq!(
        error_text(place_order_tool(), args).await,
        "invalid arguments for tool `place_order` (4 problems):\n\
         - at `/items/2/sku`: expected a string, got the number 3\n\
         - at `/items/2/qty`: expected an integer ≥ 0, got the number -1\n\
         - at `/address/zip_code`: unknown property `zip_code`; did you mean `zip`?\n\
         - at `/address`: missing required property `zip` (expected a string)\n\
         valid properties: `items`, `address`"
    );
}

#[tokio::test]
async fn arguments_that_are_not_an_object_say_what_came() {
    assert_eq!(
        error_text(forecast_tool(), json!("\"Oslo\"")).await,
        "arguments for tool `forecast` must be a JSON object, got a string"
    );
}

// Unknown properties.

#[tokio::test]
async fn an_unknown_property_is_reported_even_when_everything_else_parses() {
    assert_eq!(
        error_text(forecast_tool(), json!({"city": "Oslo", "verbose": true})).await,
        "invalid arguments for tool `forecast`: at `/verbose`: unknown property `verbose`\n\
         valid properties: `city`, `unit`, `days`"
    );
}

#[tokio::test]
async fn a_property_in_another_case_is_suggested() {
    assert_eq!(
        error_text(forecast_tool(), json!({"City": "Oslo"})).await,
        "invalid arguments for tool `forecast` (2 problems):\n\
         - at `/City`: unknown property `City`; did you mean `city`?\n\
         - missing required property `city` (expected a string)\n\
         valid properties: `city`, `unit`, `days`"
    );
}

#[tokio::test]
async fn a_flattened_map_opts_in_to_extra_properties() {
    let result = store_record_tool()
        .execute("c", json!({"id": "r1", "colour": "red", "size": "L"}))
        .await;
    assert!(!result.is_error);
    assert_eq!(result.text_content(), "r1: [\"colour\", \"size\"]");
}

#[tokio::test]
async fn a_tool_without_arguments_refuses_arguments() {
    assert_eq!(
        error_text(clock_tool(), json!({"timezone": "UTC"})).await,
        "invalid arguments for tool `clock`: at `/timezone`: unknown property `timezone`"
    );
    assert_eq!(
        clock_tool().execute("c", json!({})).await.text_content(),
        "12:00"
    );
}

#[tokio::test]
async fn the_variant_a_tagged_value_meant_is_the_one_explained() {
    assert_eq!(
        error_text(
            draw_tool(),
            json!({"shape": {"kind": "square", "side": "big"}})
        )
        .await,
        "invalid arguments for tool `draw`: at `/shape/side`: expected a number, got the string \"big\"\n\
         valid properties: `shape`"
    );
    assert_eq!(
        error_text(draw_tool(), json!({"shape": {"kind": "triangle"}})).await,
        "invalid arguments for tool `draw`: at `/shape`: expected an object with `kind`: \"circle\" or an object with `kind`: \"square\", got an object with `kind`\n\
         valid properties: `shape`"
    );
}

#[tokio::test]
async fn valid_nested_arguments_still_run() {
    let args =
        json!({"items": [{"sku": "a", "qty": 2}], "address": {"street": "Main 1", "zip": "0150"}});
    let result = place_order_tool().execute("c", args).await;
    assert_eq!(result.text_content(), "a x2 to Main 1 0150");
}

#[tokio::test]
async fn valid_arguments_still_run() {
    let result = forecast_tool()
        .execute("c", json!({"city": "Oslo", "unit": "imperial", "days": 2}))
        .await;
    assert_eq!(result.text_content(), "Oslo in 2 days: 21 °F");
}

// Dialects at run time.

#[tokio::test]
async fn strict_mode_nulls_for_optional_fields_are_treated_as_absent() {
    let tool = forecast_tool();
    let sent = json!({"city": "Oslo", "unit": null, "days": null});
    let refused = tool.execute("c1", sent.clone()).await;
    assert_eq!(
        refused.text_content(),
        "invalid arguments for tool `forecast`: at `/days`: expected an integer from 0 to 255, got null\n\
         valid properties: `city`, `unit`, `days`"
    );
    let args = tool.normalize_arguments(Dialect::OpenAiStrict, sent);
    assert_eq!(args, json!({"city": "Oslo"}));
    let result = tool.execute("c2", args).await;
    assert!(!result.is_error);
    assert_eq!(result.text_content(), "Oslo in 0 days: 21 °C");
}

#[test]
fn normalization_keeps_nulls_of_required_properties_and_reaches_nested_objects() {
    let tool = place_order_tool();
    let sent = json!({"items": [{"sku": null, "qty": 1}], "address": null});
    assert_eq!(
        tool.normalize_arguments(Dialect::OpenAiStrict, sent.clone()),
        sent
    );
}

#[test]
fn a_name_a_provider_refuses_is_an_error_naming_the_rule() {
    let tool = AgentTool::builder("3d-render")
        .description("Render a scene.")
        .handler(|_, _| async { "ok" })
        .build()
        .unwrap();
    assert_eq!(
        tool.definition(Dialect::Gemini).unwrap_err(),
        DialectError::InvalidName {
            tool: "3d-render".into(),
            dialect: Dialect::Gemini,
            rule: "a letter or `_`, then letters, digits, `_`, `.`, `:` or `-`; at most 64 characters",
        }
    );
    assert_eq!(
        tool.definition(Dialect::Gemini).unwrap_err().to_string(),
        "tool `3d-render` cannot be described for Gemini: its name breaks the rule for tool names (a letter or `_`, then letters, digits, `_`, `.`, `:` or `-`; at most 64 characters); give it another name, e.g. #[tool(name = \"...\")]"
    );
    assert!(tool.definition(Dialect::OpenAi).is_ok());
}

#[test]
fn definitions_are_computed_once_per_tool_and_dialect() {
    let tool = forecast_tool();
    let first = tool.definition(Dialect::Anthropic).unwrap();
    let second = tool.clone().definition(Dialect::Anthropic).unwrap() as *const _;
    assert!(std::ptr::eq(first, second));
}

#[test]
fn a_store_lists_its_tools_in_each_providers_shape() {
    let store = ToolStore::new("agent");
    store.register(clock_tool()).unwrap();
    store.register(forecast_tool()).unwrap();
    let openai = store.definitions(Dialect::OpenAi).unwrap();
    assert_eq!(
        openai,
        json!([
            {"type": "function", "function": {
                "name": "clock",
                "description": "Tell the time.",
                "parameters": {"type": "object", "properties": {}}
            }},
            {"type": "function", "function": {
                "name": "forecast",
                "description": "Fetch the weather forecast for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "City name, e.g. \"Tokyo\"."},
                        "unit": {
                            "description": "Temperature unit; metric when left out.\n- `metric`: Degrees Celsius.\n- `imperial`: Degrees Fahrenheit.",
                            "anyOf": [{"type": "string", "enum": ["metric", "imperial"]}, {"type": "null"}]
                        },
                        "days": {
                            "type": "integer",
                            "description": "Days ahead, 0 for today.",
                            "minimum": 0,
                            "maximum": 255,
                            "default": 0
                        }
                    },
                    "required": ["city"]
                }
            }}
        ])
    );
    let gemini = store.definitions(Dialect::Gemini).unwrap();
    assert_eq!(
        gemini[0]["functionDeclarations"][0],
        json!({"name": "clock", "description": "Tell the time."})
    );
    assert_eq!(gemini[0]["functionDeclarations"][1]["name"], "forecast");
    let mcp = store.definitions(Dialect::Mcp).unwrap();
    assert_eq!(
        mcp[0],
        json!({
            "name": "clock",
            "title": "Clock",
            "description": "Tell the time.",
            "inputSchema": {"type": "object", "properties": {}}
        })
    );
}

/// A run-time tool whose schema has a `pattern`: what only the full validator judges.
fn sku_tool() -> AgentTool {
    AgentTool::builder("stock")
        .description("How many of a product are in stock.")
        .input_schema(json!({
            "type": "object",
            "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}},
            "required": ["sku"]
        }))
        .handler(|_, args: serde_json::Value| async move { format!("12 of {}", args["sku"]) })
        .build()
        .unwrap()
}

#[tokio::test]
async fn argument_checking_is_a_value_of_the_store() {
    let full = ToolStore::new("full");
    full.register(sku_tool()).unwrap();
    let walk = ToolStore::new("walk").with_argument_checking(ArgumentChecking::Walk);
    walk.register(sku_tool()).unwrap();
    assert_eq!(
        full.argument_checking(),
        ArgumentChecking::Full,
        "the default with schema-validation"
    );

    // The pattern is the validator's: the full store refuses, the walking store lets the call through.
    let refused = full.execute("c1", "stock", json!({"sku": "abc"})).await;
    assert_eq!(
        refused.text_content(),
        "invalid arguments for tool `stock`: at `/sku`: expected a string matching `^[A-Z]{3}-[0-9]{4}$`, \
         got the string \"abc\"\nvalid properties: `sku`"
    );
    let let_through = walk.execute("c2", "stock", json!({"sku": "abc"})).await;
    assert_eq!(let_through.text_content(), "12 of \"abc\"");

    // What both judge reads the same in both stores, and in an executor's batch as in hand.
    for store in [&full, &walk] {
        let wrong = store
            .execute("c3", "stock", json!({"sku": 7, "skew": 1}))
            .await;
        assert_eq!(
            wrong.text_content(),
            "invalid arguments for tool `stock` (2 problems):\n\
             - at `/skew`: unknown property `skew`\n\
             - at `/sku`: expected a string matching `^[A-Z]{3}-[0-9]{4}$`, got the number 7\n\
             valid properties: `sku`"
        );
        let batch = yiem_core::exec::ToolExecutor::new()
            .execute(
                store,
                vec![yiem_core::exec::ToolCall::new(
                    "c4",
                    "stock",
                    json!({"sku": "abc"}),
                )],
                &yiem_core::exec::CancellationToken::new(),
            )
            .await;
        assert_eq!(
            batch.messages[0].is_error(),
            store.argument_checking() == ArgumentChecking::Full,
            "{}",
            store.name()
        );
    }
}
