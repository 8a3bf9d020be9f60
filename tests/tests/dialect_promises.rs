//! What each dialect's schema promises, tried the way a model and a validating client would: a sample is
//! validated against the dialect's definition with a JSON Schema validator, then executed through
//! `AgentTool::execute`.
//!
//! - An `Option` field is optional *and* nullable in every dialect, so `null` validates and runs.

#[path = "dialects/schemas.rs"]
mod schemas;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use yiem_core::{AgentTool, Dialect, tool};

use schemas::{dialect_schema, fill_nulls, problems};

/// Someone else to remind.
#[derive(Deserialize, JsonSchema)]
struct Contact {
    /// Their email address.
    email: String,
    /// Their name, if known.
    name: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct ReminderArgs {
    /// What to remind about.
    text: String,
    /// Minutes to wait; now when left out.
    delay_minutes: Option<u32>,
    /// Who else to remind.
    cc: Option<Vec<Contact>>,
}

/// Set a reminder.
#[tool]
async fn remind(args: ReminderArgs) -> String {
    let when = match args.delay_minutes {
        Some(minutes) => format!("in {minutes} min"),
        None => "now".to_owned(),
    };
    let cc: Vec<String> = args
        .cc
        .unwrap_or_default()
        .into_iter()
        .map(|contact| match contact.name {
            Some(name) => format!("{name} <{}>", contact.email),
            None => contact.email,
        })
        .collect();
    format!("{} {when}; cc: {}", args.text, cc.join(", "))
}

/// The schema of `tool` in `dialect`, ready for a validator.
fn schema_of(tool: &AgentTool, dialect: Dialect) -> Value {
    let definition = tool.definition(dialect).unwrap();
    dialect_schema(dialect, definition).unwrap()
}

/// Validates `sample` against the tool's definition in `dialect`, then executes it; the result's text.
async fn validate_and_execute(tool: &AgentTool, dialect: Dialect, sample: Value) -> String {
    let schema = schema_of(tool, dialect);
    assert_eq!(
        problems(&schema, &sample),
        Vec::<String>::new(),
        "{sample} in {dialect}: {schema}"
    );
    let result = tool.execute("c1", sample).await;
    assert!(!result.is_error, "{}", result.text_content());
    result.text_content()
}

fn reminder_with_nulls() -> Value {
    json!({
        "text": "stretch",
        "delay_minutes": null,
        "cc": [{"email": "ada@example.com", "name": null}, {"email": "bo@example.com", "name": "Bo"}]
    })
}

#[tokio::test]
async fn mcp_accepts_null_for_an_optional_field_and_runs_it() {
    let text = validate_and_execute(&remind_tool(), Dialect::Mcp, reminder_with_nulls()).await;
    assert_eq!(
        text,
        "stretch now; cc: ada@example.com, Bo <bo@example.com>"
    );
}

#[tokio::test]
async fn openai_accepts_null_for_an_optional_field_and_runs_it() {
    let text = validate_and_execute(&remind_tool(), Dialect::OpenAi, reminder_with_nulls()).await;
    assert_eq!(
        text,
        "stretch now; cc: ada@example.com, Bo <bo@example.com>"
    );
}

#[tokio::test]
async fn openai_strict_accepts_null_for_an_optional_field_and_runs_it() {
    // The sample has every property, as strict mode requires.
    let schema = schema_of(&remind_tool(), Dialect::OpenAiStrict);
    let mut filled = reminder_with_nulls();
    fill_nulls(&schema, &schema, &mut filled);
    assert_eq!(filled, reminder_with_nulls());
    let text =
        validate_and_execute(&remind_tool(), Dialect::OpenAiStrict, reminder_with_nulls()).await;
    assert_eq!(
        text,
        "stretch now; cc: ada@example.com, Bo <bo@example.com>"
    );
}

#[tokio::test]
async fn anthropic_accepts_null_for_an_optional_field_and_runs_it() {
    let text =
        validate_and_execute(&remind_tool(), Dialect::Anthropic, reminder_with_nulls()).await;
    assert_eq!(
        text,
        "stretch now; cc: ada@example.com, Bo <bo@example.com>"
    );
}

#[tokio::test]
async fn gemini_accepts_null_for_an_optional_field_and_runs_it() {
    let text = validate_and_execute(&remind_tool(), Dialect::Gemini, reminder_with_nulls()).await;
    assert_eq!(
        text,
        "stretch now; cc: ada@example.com, Bo <bo@example.com>"
    );
}

#[test]
fn null_for_an_optional_list_validates_in_every_dialect() {
    let sample = json!({"text": "stretch", "delay_minutes": 5, "cc": null});
    for dialect in Dialect::ALL {
        let schema = schema_of(&remind_tool(), dialect);
        assert_eq!(
            problems(&schema, &sample),
            Vec::<String>::new(),
            "{dialect}"
        );
    }
}

#[test]
fn a_required_field_stays_non_nullable_in_every_dialect() {
    let sample = json!({"text": null, "delay_minutes": null, "cc": null});
    for dialect in Dialect::ALL {
        let schema = schema_of(&remind_tool(), dialect);
        assert_eq!(
            problems(&schema, &sample),
            ["/text: null is not of type \"string\""],
            "{dialect}"
        );
    }
}

#[test]
fn a_nullable_optional_field_still_refuses_other_types_in_every_dialect() {
    let sample = json!({"text": "stretch", "delay_minutes": "soon", "cc": null});
    for dialect in Dialect::ALL {
        let schema = schema_of(&remind_tool(), dialect);
        assert_eq!(problems(&schema, &sample).len(), 1, "{dialect}: {schema}");
    }
}

#[tokio::test]
async fn a_wrong_type_for_an_optional_field_names_the_tool_the_field_and_what_was_expected() {
    let result = remind_tool()
        .execute(
            "c1",
            json!({"text": "stretch", "delay_minutes": "soon", "cc": null}),
        )
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `remind`: at `/delay_minutes`: expected an integer ≥ 0 or null, got the string \"soon\"\n\
         valid properties: `text`, `delay_minutes`, `cc`"
    );
}
