//! What `#[tool]` generates: names, labels, descriptions, schemas, every signature form and return type,
//! and the error results a model sees.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use yiem_core::{
    tool,
    tool::{AgentToolResult, ExecutionMode, Json, ToolAnnotations, ToolContext},
};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WeatherArgs {
    /// City name, e.g. "Tokyo".
    city: String,
    /// Temperature unit; metric when left out.
    #[serde(default)]
    unit: Option<Unit>,
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Metric,
    Imperial,
}

#[derive(Debug)]
pub struct WeatherError;

impl std::fmt::Display for WeatherError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no weather station in Atlantis")
    }
}

/// Fetch the current weather for a city.
///
/// Returns the temperature in the requested unit.
#[tool(label = "Weather Lookup", parallel)]
pub async fn get_weather(args: WeatherArgs) -> Result<String, WeatherError> {
    if args.city == "Atlantis" {
        return Err(WeatherError);
    }
    let degrees = match args.unit {
        Some(Unit::Imperial) => "72 °F",
        _ => "22 °C",
    };
    Ok(format!("{}: {degrees}", args.city))
}

/// Report the current server time.
#[tool]
async fn server_time() -> &'static str {
    "12:00"
}

/// Say which call this is.
#[tool(
    name = "whoami",
    description = "Tell the caller its own call id.",
    read_only,
    destructive = false
)]
async fn call_id_tool(ctx: ToolContext) -> String {
    ctx.call_id().to_owned()
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// How many updates to stream.
    n: u32,
}

/// Stream `n` progress updates, then finish.
#[tool(timeout_ms = 5000, idempotent, open_world = false)]
async fn progress(ctx: ToolContext, args: CountArgs) -> AgentToolResult {
    for i in 1..=args.n {
        ctx.update(format!("{i}/{}", args.n));
    }
    AgentToolResult::text("finished").with_details(json!({"updates": args.n}))
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Add two integers on a blocking thread.
#[tool]
fn add_blocking(args: AddArgs) -> String {
    (args.a + args.b).to_string()
}

/// Report the thread this runs on (plain fns run off the async threads).
#[tool]
fn thread_kind() -> String {
    format!("{:?}", std::thread::current().id())
}

/// A plain fn that takes the context.
#[tool]
fn blocking_with_ctx(ctx: ToolContext, args: AddArgs) -> String {
    format!("{}:{}", ctx.call_id(), args.a * args.b)
}

/// A plain fn that takes only the context.
#[tool]
fn blocking_ctx_only(ctx: ToolContext) -> String {
    format!("ctx {}", ctx.call_id())
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    /// The sum.
    total: i64,
}

/// Add two integers and return structured output.
#[tool]
async fn add_json(args: AddArgs) -> Json<Sum> {
    Json(Sum {
        total: args.a + args.b,
    })
}

/// Do nothing at all.
#[tool]
async fn nothing() {}

/// Panic on purpose.
#[tool]
async fn explode() -> String {
    panic!("the reactor core breached")
}

/// Sleep longer than the time limit.
#[tool(timeout_ms = 50)]
async fn too_slow() -> String {
    std::future::pending::<()>().await;
    "never".to_owned()
}

#[derive(Deserialize, JsonSchema)]
struct RangeArgs {
    low: i32,
    high: i32,
}

fn check_range(args: &RangeArgs) -> Result<(), String> {
    if args.low <= args.high {
        Ok(())
    } else {
        Err(format!(
            "`low` ({}) must not be greater than `high` ({})",
            args.low, args.high
        ))
    }
}

fn accept_legacy(mut raw: Value) -> Value {
    // Older clients sent `from`/`to`.
    if let Some(object) = raw.as_object_mut() {
        if let Some(from) = object.remove("from") {
            object.insert("low".into(), from);
        }
        if let Some(to) = object.remove("to") {
            object.insert("high".into(), to);
        }
    }
    raw
}

/// Size of an integer range.
#[tool(validate = check_range, prepare = accept_legacy)]
async fn range_size(args: RangeArgs) -> String {
    (args.high - args.low).to_string()
}

/// Eight calls meet here: none returns before all eight are running at once.
static EIGHT_AT_ONCE: std::sync::LazyLock<tokio::sync::Barrier> =
    std::sync::LazyLock::new(|| tokio::sync::Barrier::new(8));

/// Returns once eight of its calls run at once.
#[tool(parallel)]
async fn concurrent(args: AddArgs) -> String {
    EIGHT_AT_ONCE.wait().await;
    (args.a + args.b).to_string()
}

#[derive(Deserialize, JsonSchema)]
struct Nested {
    items: Vec<Item>,
    #[allow(dead_code)]
    tags: BTreeMap<String, String>,
}

#[derive(Deserialize, JsonSchema)]
struct Item {
    qty: u32,
}

/// Sum item quantities.
#[tool]
async fn total_qty(args: Nested) -> String {
    args.items.iter().map(|i| i.qty).sum::<u32>().to_string()
}

#[test]
fn name_label_and_description_come_from_the_fn_and_its_doc_comment() {
    let tool = get_weather_tool();
    assert_eq!(tool.name(), "get_weather");
    assert_eq!(tool.label(), "Weather Lookup");
    assert_eq!(
        tool.description(),
        "Fetch the current weather for a city.\n\nReturns the temperature in the requested unit."
    );
    assert_eq!(tool.execution_mode(), ExecutionMode::Parallel);
    assert_eq!(tool.timeout(), None);
}

#[test]
fn label_defaults_to_the_name_in_title_case_and_mode_to_sequential() {
    let tool = server_time_tool();
    assert_eq!(tool.label(), "Server Time");
    assert_eq!(tool.execution_mode(), ExecutionMode::Sequential);
}

#[test]
fn name_and_description_keys_override_the_fn_name_and_doc_comment() {
    let tool = call_id_tool_tool();
    assert_eq!(tool.name(), "whoami");
    assert_eq!(tool.label(), "Whoami");
    assert_eq!(tool.description(), "Tell the caller its own call id.");
    assert_eq!(
        *tool.annotations(),
        ToolAnnotations::new().read_only(true).destructive(false)
    );
}

#[test]
fn timeout_and_annotations_are_carried_over() {
    let tool = progress_tool();
    assert_eq!(tool.timeout(), Some(Duration::from_millis(5000)));
    assert_eq!(
        *tool.annotations(),
        ToolAnnotations::new().idempotent(true).open_world(false)
    );
}

#[test]
fn input_schema_is_exactly_the_schemars_schema_of_the_argument_struct() {
    let tool = get_weather_tool();
    assert_eq!(
        *tool.input_schema(),
        schemars::schema_for!(WeatherArgs).to_value()
    );
    assert_eq!(
        *tool.input_schema(),
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "WeatherArgs",
            "type": "object",
            "properties": {
                "city": {"description": "City name, e.g. \"Tokyo\".", "type": "string"},
                "unit": {
                    "description": "Temperature unit; metric when left out.",
                    "anyOf": [{"$ref": "#/$defs/Unit"}, {"type": "null"}]
                }
            },
            "required": ["city"],
            "$defs": {"Unit": {"type": "string", "enum": ["metric", "imperial"]}}
        })
    );
}

#[test]
fn a_tool_without_arguments_has_an_empty_object_schema() {
    assert_eq!(
        *server_time_tool().input_schema(),
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(
        *call_id_tool_tool().input_schema(),
        json!({"type": "object", "properties": {}})
    );
}

#[test]
fn the_schema_is_generated_once_and_shared_by_every_copy() {
    let first = get_weather_tool();
    let second = get_weather_tool();
    assert!(std::ptr::eq(first.input_schema(), second.input_schema()));
}

#[tokio::test]
async fn the_function_stays_callable_as_written() {
    let text = get_weather(WeatherArgs {
        city: "Oslo".into(),
        unit: Some(Unit::Imperial),
    })
    .await;
    assert_eq!(text.unwrap(), "Oslo: 72 °F");
    assert_eq!(add_blocking(AddArgs { a: 2, b: 2 }), "4");
}

#[tokio::test]
async fn executing_with_valid_arguments_gives_the_expected_content() {
    let result = get_weather_tool()
        .execute("c1", json!({"city": "Tokyo"}))
        .await;
    assert_eq!(result, AgentToolResult::text("Tokyo: 22 °C"));
    let result = get_weather_tool()
        .execute("c2", json!({"city": "Tokyo", "unit": "imperial"}))
        .await;
    assert_eq!(result.text_content(), "Tokyo: 72 °F");
}

#[tokio::test]
async fn arguments_may_arrive_as_a_json_string() {
    let result = get_weather_tool()
        .execute("c1", json!("{\"city\": \"Lima\"}"))
        .await;
    assert_eq!(result.text_content(), "Lima: 22 °C");
    assert!(!result.is_error);
}

#[tokio::test]
async fn an_err_becomes_an_error_result_with_the_errors_display() {
    let result = get_weather_tool()
        .execute("c1", json!({"city": "Atlantis"}))
        .await;
    assert_eq!(
        result,
        AgentToolResult::error("no weather station in Atlantis")
    );
}

#[tokio::test]
async fn a_wrong_type_names_the_tool_and_the_field() {
    let result = get_weather_tool().execute("c1", json!({"city": 42})).await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `get_weather`: at `/city`: expected a string, got the number 42\n\
         valid properties: `city`, `unit`"
    );
}

#[tokio::test]
async fn a_missing_field_names_the_tool_and_the_field() {
    let result = get_weather_tool()
        .execute("c1", json!({"unit": "metric"}))
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `get_weather`: missing required property `city` (expected a string)\n\
         valid properties: `city`, `unit`"
    );
}

#[tokio::test]
async fn a_bad_enum_value_names_the_field_and_the_variants() {
    let result = get_weather_tool()
        .execute("c1", json!({"city": "Oslo", "unit": "kelvin"}))
        .await;
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `get_weather`: at `/unit`: expected one of \"metric\", \"imperial\" or null, got the string \"kelvin\"\n\
         valid properties: `city`, `unit`"
    );
}

#[tokio::test]
async fn a_nested_error_gives_the_json_pointer_of_the_value() {
    let args = json!({"items": [{"qty": 1}, {"qty": -2}], "tags": {}});
    let result = total_qty_tool().execute("c1", args).await;
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `total_qty`: at `/items/1/qty`: expected an integer ≥ 0, got the number -2\n\
         valid properties: `items`, `tags`"
    );
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_refused() {
    let result = get_weather_tool().execute("c1", json!(["Tokyo"])).await;
    assert_eq!(
        result,
        AgentToolResult::error(
            "arguments for tool `get_weather` must be a JSON object, got an array"
        )
    );
    let result = get_weather_tool().execute("c1", json!(7)).await;
    assert_eq!(
        result.text_content(),
        "arguments for tool `get_weather` must be a JSON object, got a number"
    );
}

#[tokio::test]
async fn an_invalid_json_string_is_refused_with_the_parser_message() {
    let result = get_weather_tool()
        .execute("c1", json!("{\"city\": \"Tok"))
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "arguments for tool `get_weather` are not valid JSON (EOF while parsing a string at line 1 column 13); send the arguments as a JSON object"
    );
}

#[tokio::test]
async fn a_tool_without_arguments_accepts_null_and_an_empty_object() {
    assert_eq!(
        server_time_tool()
            .execute("c", Value::Null)
            .await
            .text_content(),
        "12:00"
    );
    assert_eq!(
        server_time_tool()
            .execute("c", json!({}))
            .await
            .text_content(),
        "12:00"
    );
    assert_eq!(
        server_time_tool()
            .execute("c", json!(""))
            .await
            .text_content(),
        "12:00"
    );
}

#[tokio::test]
async fn the_context_carries_the_call_id() {
    assert_eq!(
        call_id_tool_tool()
            .execute("call-77", json!({}))
            .await
            .text_content(),
        "call-77"
    );
}

#[tokio::test]
async fn updates_stream_through_the_context() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let ctx = ToolContext::new("p1")
        .with_updates(move |partial| sink.lock().unwrap().push(partial.text_content()));
    let result = progress_tool()
        .execute_with(ctx.clone(), json!({"n": 3}))
        .await;
    assert_eq!(result.text_content(), "finished");
    assert_eq!(result.details(), &json!({"updates": 3}));
    assert_eq!(*seen.lock().unwrap(), ["1/3", "2/3", "3/3"]);
    ctx.update("after the end");
    assert_eq!(
        seen.lock().unwrap().len(),
        3,
        "updates after the end are dropped"
    );
}

#[tokio::test]
async fn plain_fns_run_on_blocking_threads() {
    assert_eq!(
        add_blocking_tool()
            .execute("c", json!({"a": 40, "b": 2}))
            .await
            .text_content(),
        "42"
    );
    // The test runs on a current-thread runtime: its only async thread is this one.
    let runtime_thread = format!("{:?}", std::thread::current().id());
    let tool_thread = thread_kind_tool()
        .execute("c", json!({}))
        .await
        .text_content();
    assert_ne!(tool_thread, runtime_thread);
    assert_eq!(
        blocking_with_ctx_tool()
            .execute("b1", json!({"a": 6, "b": 7}))
            .await
            .text_content(),
        "b1:42"
    );
    assert_eq!(
        blocking_ctx_only_tool()
            .execute("b2", json!({}))
            .await
            .text_content(),
        "ctx b2"
    );
}

#[tokio::test]
async fn json_output_gives_text_structured_content_and_an_output_schema() {
    let tool = add_json_tool();
    let result = tool.execute("c", json!({"a": 1, "b": 2})).await;
    assert_eq!(result.text_content(), r#"{"total":3}"#);
    assert_eq!(result.structured_content(), Some(&json!({"total": 3})));
    assert_eq!(
        tool.output_schema(),
        Some(&schemars::schema_for!(Sum).to_value())
    );
    assert_eq!(get_weather_tool().output_schema(), None);
}

#[tokio::test]
async fn unit_output_gives_an_empty_successful_result() {
    let result = nothing_tool().execute("c", json!({})).await;
    assert_eq!(result, AgentToolResult::default());
}

#[tokio::test]
async fn a_panic_becomes_an_error_result() {
    let result = explode_tool().execute("c", json!({})).await;
    assert_eq!(
        result,
        AgentToolResult::error("tool `explode` panicked: the reactor core breached")
    );
}

#[tokio::test]
async fn the_time_limit_becomes_an_error_result_and_cancels_the_call() {
    let ctx = ToolContext::new("slow");
    let result = too_slow_tool().execute_with(ctx.clone(), json!({})).await;
    assert_eq!(
        result,
        AgentToolResult::error("tool `too_slow` timed out after 50 ms")
    );
    assert!(ctx.is_cancelled());
}

#[tokio::test]
async fn cancelling_the_context_aborts_the_call() {
    let ctx = ToolContext::new("abort-me");
    ctx.cancellation_token().cancel();
    let result = too_slow_tool().execute_with(ctx, json!({})).await;
    assert_eq!(
        result,
        AgentToolResult::error("tool `too_slow` was aborted before it finished")
    );
}

#[tokio::test]
async fn the_validate_step_refuses_arguments_with_its_message() {
    let result = range_size_tool()
        .execute("c", json!({"low": 5, "high": 1}))
        .await;
    assert_eq!(
        result,
        AgentToolResult::error(
            "invalid arguments for tool `range_size`: `low` (5) must not be greater than `high` (1)"
        )
    );
    assert_eq!(
        range_size_tool()
            .execute("c", json!({"low": 1, "high": 5}))
            .await
            .text_content(),
        "4"
    );
}

#[tokio::test]
async fn the_prepare_step_rewrites_raw_arguments_before_validation() {
    let result = range_size_tool()
        .execute("c", json!({"from": 2, "to": 10}))
        .await;
    assert_eq!(result.text_content(), "8");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tool_serves_concurrent_executions() {
    // Each call waits until all eight run at once: they finish only if one tool serves them together.
    // (The time limit only keeps a failure from hanging the suite; it decides nothing else.)
    let tool = concurrent_tool();
    let calls = (0..8).map(|i| {
        let tool = tool.clone();
        tokio::spawn(async move { tool.execute(format!("c{i}"), json!({"a": i, "b": 1})).await })
    });
    let results = tokio::time::timeout(Duration::from_secs(60), futures_join(calls))
        .await
        .expect("the eight calls never ran at once");
    let texts: Vec<String> = results.iter().map(AgentToolResult::text_content).collect();
    assert_eq!(texts, ["1", "2", "3", "4", "5", "6", "7", "8"]);
}

async fn futures_join(
    handles: impl Iterator<Item = tokio::task::JoinHandle<AgentToolResult>>,
) -> Vec<AgentToolResult> {
    let mut out = Vec::new();
    for handle in handles.collect::<Vec<_>>() {
        out.push(handle.await.expect("the call task finished"));
    }
    out
}

#[test]
fn tools_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<yiem_core::tool::AgentTool>();
    assert_send_sync::<yiem_core::store::ToolStore>();
}

#[derive(Deserialize, JsonSchema)]
struct FlightArgs {
    /// Departure airport.
    origin: String,
    /// How many travel.
    passengers: Option<u8>,
}

/// Find flights.
#[tool(
    example = r#"{"origin": "OSL"}"#,
    example = r#"{"origin": "OSL", "passengers": 2}"#,
    strict,
    eager_input_streaming
)]
async fn find_flights(args: FlightArgs) -> String {
    format!("{} x{}", args.origin, args.passengers.unwrap_or(1))
}

#[test]
fn provider_option_keys_reach_the_tool_in_the_order_written() {
    let tool = find_flights_tool();
    let options = tool.provider_options();
    assert_eq!(
        options.examples,
        [
            json!({"origin": "OSL"}),
            json!({"origin": "OSL", "passengers": 2})
        ]
    );
    assert!(options.strict);
    assert!(options.eager_input_streaming);
    assert!(tool.check_examples().is_ok());
    // Left unsaid, they are off.
    let plain = server_time_tool();
    assert_eq!(*plain.provider_options(), Default::default());
}

#[test]
fn provider_option_keys_shape_the_anthropic_and_openai_definitions() {
    use yiem_core::store::Dialect;
    let tool = find_flights_tool();
    let anthropic = tool.definition(Dialect::Anthropic).unwrap();
    assert_eq!(
        anthropic["input_examples"][1],
        json!({"origin": "OSL", "passengers": 2})
    );
    assert_eq!(anthropic["strict"], json!(true));
    assert_eq!(anthropic["eager_input_streaming"], json!(true));
    assert_eq!(
        anthropic["input_schema"]["additionalProperties"],
        json!(false)
    );
    let openai = tool.definition(Dialect::OpenAi).unwrap();
    assert_eq!(openai["function"]["strict"], json!(true));
    assert_eq!(
        openai["function"]["parameters"]["required"],
        json!(["origin", "passengers"])
    );
    let gemini = tool.definition(Dialect::Gemini).unwrap();
    let mut keys: Vec<&String> = gemini.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["description", "name", "parameters"]);
}
