//! Every attribute key at once.
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use yiem_core::{tool, tool::{ExecutionMode, TaskSupport, ToolAnnotations}};

#[derive(Deserialize, JsonSchema)]
struct Args {
    n: u8,
}

fn prepare(raw: Value) -> Value {
    raw
}

fn validate(args: &Args) -> Result<(), String> {
    if args.n > 0 { Ok(()) } else { Err("`n` must be positive".into()) }
}

/// Ignored: the description key wins.
#[tool(
    name = "every-key",
    label = "Every Key",
    description = "Uses every key.",
    parallel,
    timeout_ms = 1500,
    prepare = prepare,
    validate = validate,
    read_only,
    destructive = false,
    idempotent = true,
    open_world = false,
    example = r#"{"n": 1}"#,
    example = r#"{"n": 2}"#,
    strict,
    eager_input_streaming,
    defer_loading,
    code_only,
    task = "required",
)]
async fn every_key(args: Args) -> String {
    args.n.to_string()
}

/// Sequential, said explicitly.
#[tool(sequential)]
async fn explicit_sequential() {}

/// A task when the client can take one.
#[tool(task)]
async fn optional_task() {}

/// Its questions before its task.
#[tool(task = "required_after_questions")]
async fn questions_then_task() {}

fn main() {
    let tool = every_key_tool();
    assert_eq!(tool.name(), "every-key");
    assert_eq!(tool.label(), "Every Key");
    assert_eq!(tool.description(), "Uses every key.");
    assert_eq!(tool.execution_mode(), ExecutionMode::Parallel);
    assert_eq!(tool.timeout(), Some(std::time::Duration::from_millis(1500)));
    assert_eq!(
        *tool.annotations(),
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false)
    );
    let options = tool.provider_options();
    assert_eq!(options.examples, [json!({"n": 1}), json!({"n": 2})]);
    assert!(options.strict && options.eager_input_streaming && options.defer_loading);
    assert!(tool.is_code_only());
    assert!(!explicit_sequential_tool().is_code_only());
    assert_eq!(explicit_sequential_tool().execution_mode(), ExecutionMode::Sequential);
    assert_eq!(tool.task_support(), TaskSupport::Required);
    assert_eq!(optional_task_tool().task_support(), TaskSupport::Optional);
    assert_eq!(questions_then_task_tool().task_support(), TaskSupport::RequiredAfterQuestions);
    assert_eq!(explicit_sequential_tool().task_support(), TaskSupport::Forbidden);
}
