//! What each dialect's schema promises, tried the way a model and a validating client would: a sample is
//! validated against the dialect's definition with a JSON Schema validator, then executed through
//! `AgentTool::execute`.
//!
//! - An `Option` field is optional *and* nullable in every dialect, so `null` validates and runs.
//! - Arguments that are a union at the root (a flattened tagged enum, a tagged or untagged enum as the
//!   arguments type) get one object root that every provider accepts; a combination the type refuses
//!   comes back as an argument error that names the tool, the field and the variant.
//! - What a target cannot express is a `DialectError` that names the tool and the type.

#[path = "dialects/schemas.rs"]
mod schemas;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use yiem_core::{
    store::{Dialect, DialectError},
    tool,
    tool::AgentTool,
};

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

// Arguments that are a union at the root.

/// What to do with a ticket.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
enum TicketAction {
    /// Close the ticket.
    Close {
        /// Why it is closed.
        reason: String,
    },
    /// Assign the ticket to someone.
    Assign {
        /// Who takes it.
        assignee: String,
        /// Whether to notify them; yes when left out.
        notify: Option<bool>,
    },
    /// Reopen a closed ticket.
    Reopen,
}

#[derive(Deserialize, JsonSchema)]
struct TicketArgs {
    /// The ticket, e.g. "T-12".
    ticket: String,
    #[serde(flatten)]
    action: TicketAction,
}

/// Change a ticket.
#[tool]
async fn change_ticket(args: TicketArgs) -> String {
    match args.action {
        TicketAction::Close { reason } => format!("{} closed: {reason}", args.ticket),
        TicketAction::Assign { assignee, notify } => format!(
            "{} assigned to {assignee}{}",
            args.ticket,
            if notify.unwrap_or(true) {
                ", notified"
            } else {
                ""
            }
        ),
        TicketAction::Reopen => format!("{} reopened", args.ticket),
    }
}

#[test]
fn a_flattened_tagged_enum_gets_an_object_root_in_every_dialect() {
    for dialect in Dialect::ALL {
        let schema = schema_of(&change_ticket_tool(), dialect);
        assert_eq!(schema["type"], "object", "{dialect}");
        for keyword in ["oneOf", "anyOf", "allOf"] {
            assert!(schema.get(keyword).is_none(), "{dialect}: {schema}");
        }
        let properties: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            properties,
            ["ticket", "action", "reason", "assignee", "notify"],
            "{dialect}"
        );
        assert_eq!(
            schema["properties"]["action"]["enum"],
            json!(["close", "assign", "reopen"]),
            "{dialect}"
        );
    }
}

#[tokio::test]
async fn anthropic_takes_a_variant_without_fields_and_runs_it() {
    let sample = json!({"ticket": "T-12", "action": "reopen"});
    let text = validate_and_execute(&change_ticket_tool(), Dialect::Anthropic, sample).await;
    assert_eq!(text, "T-12 reopened");
}

#[tokio::test]
async fn anthropic_takes_null_for_the_fields_of_other_variants_and_runs_it() {
    let sample = json!({"ticket": "T-12", "action": "close", "reason": "duplicate", "assignee": null, "notify": null});
    let text = validate_and_execute(&change_ticket_tool(), Dialect::Anthropic, sample).await;
    assert_eq!(text, "T-12 closed: duplicate");
}

#[tokio::test]
async fn strict_mode_sends_every_field_and_runs_after_normalization() {
    let tool = change_ticket_tool();
    let schema = schema_of(&tool, Dialect::OpenAiStrict);
    let sent = json!({"ticket": "T-12", "action": "assign", "reason": null, "assignee": "ada", "notify": null});
    assert_eq!(problems(&schema, &sent), Vec::<String>::new());
    let args = tool.normalize_arguments(Dialect::OpenAiStrict, sent);
    assert_eq!(
        args,
        json!({"ticket": "T-12", "action": "assign", "assignee": "ada"})
    );
    let result = tool.execute("c1", args).await;
    assert_eq!(result.text_content(), "T-12 assigned to ada, notified");
}

#[test]
fn strict_mode_refuses_a_sample_that_leaves_out_another_variants_field() {
    let schema = schema_of(&change_ticket_tool(), Dialect::OpenAiStrict);
    let sent = json!({"ticket": "T-12", "action": "reopen"});
    assert_eq!(
        problems(&schema, &sent),
        [
            ": \"reason\" is a required property",
            ": \"assignee\" is a required property",
            ": \"notify\" is a required property",
        ]
    );
}

#[tokio::test]
async fn a_variant_missing_its_field_is_an_argument_error_naming_the_variant() {
    let sample = json!({"ticket": "T-12", "action": "close", "assignee": null, "notify": null});
    // The merged schema lets it through, as it must (the field is optional there) ...
    for dialect in [Dialect::Anthropic, Dialect::OpenAi, Dialect::Gemini] {
        let schema = schema_of(&change_ticket_tool(), dialect);
        assert_eq!(
            problems(&schema, &sample),
            Vec::<String>::new(),
            "{dialect}"
        );
    }
    // ... and yiem refuses it against the canonical schema, naming the variant.
    let result = change_ticket_tool().execute("c1", sample).await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `change_ticket`: missing required property `reason` when `action` is `close` (expected a string)\n\
         valid properties: `ticket`, `action`, `reason`, `assignee`, `notify`"
    );
}

#[tokio::test]
async fn a_null_for_a_variants_own_field_is_an_argument_error_naming_the_variant() {
    let sample = json!({"ticket": "T-12", "action": "close", "reason": null});
    let result = change_ticket_tool().execute("c1", sample).await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `change_ticket`: at `/reason`: expected a string when `action` is `close`, got null\n\
         valid properties: `ticket`, `action`, `reason`, `assignee`, `notify`"
    );
}

#[tokio::test]
async fn an_unknown_tag_is_an_argument_error_listing_the_tags() {
    let sample = json!({"ticket": "T-12", "action": "delete"});
    let result = change_ticket_tool().execute("c1", sample).await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `change_ticket`: at `/action`: expected one of \"close\", \"assign\" or \"reopen\", got the string \"delete\"\n\
         valid properties: `ticket`, `action`, `reason`, `assignee`, `notify`"
    );
}

#[tokio::test]
async fn a_missing_tag_is_an_argument_error_listing_the_tags() {
    let result = change_ticket_tool()
        .execute("c1", json!({"ticket": "T-12"}))
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `change_ticket`: missing required property `action` (expected one of \"close\", \"assign\" or \"reopen\")\n\
         valid properties: `ticket`, `action`, `reason`, `assignee`, `notify`"
    );
}

#[test]
fn gemini_describes_a_root_union_as_one_object_with_nullable_variant_fields() {
    let definition = change_ticket_tool()
        .definition(Dialect::Gemini)
        .unwrap()
        .clone();
    let parameters = &definition["parameters"];
    assert_eq!(parameters["type"], "object");
    assert_eq!(parameters["required"], json!(["ticket", "action"]));
    assert_eq!(
        parameters["properties"]["reason"],
        json!({
            "type": "string",
            "description": "Why it is closed. Only when `action` is `close`, where it is required.",
            "nullable": true
        })
    );
    assert_eq!(
        parameters["properties"]["action"],
        json!({
            "type": "string",
            "enum": ["close", "assign", "reopen"],
            "description": "- `close`: Close the ticket. Fields: `reason`.\n\
                            - `assign`: Assign the ticket to someone. Fields: `assignee`, `notify` (optional).\n\
                            - `reopen`: Reopen a closed ticket. No other fields."
        })
    );
}

/// How to find a user.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum FindUser {
    /// By numeric id.
    ById {
        /// The user's id.
        id: u64,
    },
    /// By name.
    ByName {
        /// The user's name.
        name: String,
        /// Whether the name must match exactly; yes when left out.
        exact: Option<bool>,
    },
}

/// Find a user.
#[tool]
async fn find_user(args: FindUser) -> String {
    match args {
        FindUser::ById { id } => format!("user #{id}"),
        FindUser::ByName { name, exact } => {
            format!("user {name:?}, exact: {}", exact.unwrap_or(true))
        }
    }
}

#[tokio::test]
async fn an_untagged_root_takes_the_form_whose_fields_are_not_null_in_every_dialect() {
    let tool = find_user_tool();
    for dialect in Dialect::ALL {
        let schema = schema_of(&tool, dialect);
        let mut sent = json!({"name": "ada", "exact": false});
        if dialect == Dialect::OpenAiStrict {
            fill_nulls(&schema, &schema, &mut sent);
            assert_eq!(sent, json!({"name": "ada", "exact": false, "id": null}));
        }
        assert_eq!(problems(&schema, &sent), Vec::<String>::new(), "{dialect}");
        let args = tool.normalize_arguments(dialect, sent.clone());
        assert_eq!(args, json!({"name": "ada", "exact": false}), "{dialect}");
        let result = tool.execute("c1", args).await;
        assert_eq!(
            result.text_content(),
            "user \"ada\", exact: false",
            "{dialect}"
        );
        let as_sent = tool.execute("c2", sent).await;
        assert_eq!(
            as_sent.text_content(),
            "user \"ada\", exact: false",
            "{dialect}"
        );
    }
}

#[tokio::test]
async fn arguments_that_fit_no_untagged_form_get_each_forms_problems() {
    let result = find_user_tool().execute("c1", json!({"name": 5})).await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `find_user` (2 problems):\n\
         - missing required property `id` in form 1 (expected an integer ≥ 0)\n\
         - at `/name`: expected a string in form 2, got the number 5\n\
         valid properties: `id`, `name`, `exact`"
    );
}

#[test]
fn an_untagged_root_lists_its_forms_in_the_description() {
    let schema = schema_of(&find_user_tool(), Dialect::Anthropic);
    assert_eq!(
        schema["description"],
        "How to find a user.\nSend the fields of one of these forms:\n\
         1. By numeric id. Fields: `id`.\n\
         2. By name. Fields: `name`, `exact` (optional)."
    );
    assert_eq!(
        schema["properties"]["id"]["description"],
        "The user's id. Only in form 1, where it is required."
    );
    assert!(schema.get("required").is_none(), "{schema}");
}

/// The next move.
#[derive(Deserialize, JsonSchema)]
enum Command {
    /// Stand still.
    Stop,
    /// Move by an offset.
    Move {
        /// Metres east.
        dx: i32,
    },
}

/// Move the robot.
#[tool]
async fn command(args: Command) -> String {
    match args {
        Command::Stop => "stopped".into(),
        Command::Move { dx } => format!("moved {dx} m east"),
    }
}

#[test]
fn a_root_union_with_a_unit_variant_is_an_error_naming_the_tool_and_type_in_every_dialect() {
    for dialect in Dialect::ALL {
        let error = command_tool().definition(dialect).unwrap_err();
        assert_eq!(
            error,
            DialectError::Unsupported {
                tool: "command".into(),
                dialect,
                type_name: "Command".into(),
                path: "/".into(),
                reason: "is a union with a variant that is \"Stop\", not an object, and tool arguments are always a JSON object, so that variant could never be called; make it a struct variant (`Name {}`) or put the enum in a field of a struct".into(),
            },
            "{dialect}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "tool `command` cannot be described for {dialect}: `/` in type `Command` is a union with a variant that is \"Stop\", not an object, and tool arguments are always a JSON object, so that variant could never be called; make it a struct variant (`Name {{}}`) or put the enum in a field of a struct"
            )
        );
    }
}

/// Fields of two flattened enums.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "auth", rename_all = "snake_case")]
enum Auth {
    /// With a token.
    Token {
        /// The token.
        token: String,
    },
    /// Without credentials.
    Anonymous,
}

#[derive(Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Op {
    /// Read a key.
    Get {
        /// The key.
        key: String,
    },
    /// Write a key.
    Put {
        /// The key.
        key: String,
        /// The new value.
        value: u32,
    },
}

#[derive(Deserialize, JsonSchema)]
struct StoreArgs {
    /// The store.
    store: String,
    #[serde(flatten)]
    auth: Auth,
    #[serde(flatten)]
    op: Op,
}

/// Use a key-value store.
#[tool]
async fn kv(args: StoreArgs) -> String {
    let who = match args.auth {
        Auth::Token { token } => format!("token {token}"),
        Auth::Anonymous => "anonymous".into(),
    };
    match args.op {
        Op::Get { key } => format!("{who} reads {}/{key}", args.store),
        Op::Put { key, value } => format!("{who} writes {}/{key} = {value}", args.store),
    }
}

#[tokio::test]
async fn two_flattened_enums_merge_into_one_object_with_two_tags() {
    let tool = kv_tool();
    for dialect in Dialect::ALL {
        let schema = schema_of(&tool, dialect);
        let names: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            names,
            ["store", "auth", "token", "op", "key", "value"],
            "{dialect}"
        );
        for keyword in ["oneOf", "anyOf", "allOf"] {
            assert!(schema.get(keyword).is_none(), "{dialect}: {schema}");
        }
        let mut sent =
            json!({"store": "s", "auth": "anonymous", "op": "put", "key": "k", "value": 3});
        if dialect == Dialect::OpenAiStrict {
            fill_nulls(&schema, &schema, &mut sent);
        }
        assert_eq!(problems(&schema, &sent), Vec::<String>::new(), "{dialect}");
        let args = tool.normalize_arguments(dialect, sent);
        let result = tool.execute("c1", args).await;
        assert_eq!(
            result.text_content(),
            "anonymous writes s/k = 3",
            "{dialect}"
        );
    }
    // `key` is in both `op` variants with the same schema, so it is required.
    let schema = schema_of(&tool, Dialect::Anthropic);
    assert_eq!(schema["required"], json!(["store", "auth", "op", "key"]));
}

/// A measurement whose `value` differs in type between the variants.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Measure {
    /// A length.
    Length {
        /// Metres.
        value: f64,
    },
    /// A named size.
    Size {
        /// One of S, M, L.
        value: String,
    },
}

/// Record a measurement.
#[tool]
async fn record(args: Measure) -> String {
    match args {
        Measure::Length { value } => format!("{value} m"),
        Measure::Size { value } => format!("size {value}"),
    }
}

#[tokio::test]
async fn a_field_whose_type_differs_between_variants_becomes_an_any_of_of_both() {
    let tool = record_tool();
    let schema = schema_of(&tool, Dialect::Anthropic);
    assert_eq!(
        schema["properties"]["value"],
        json!({
            "anyOf": [
                {"type": "number", "description": "Metres."},
                {"type": "string", "description": "One of S, M, L."}
            ]
        })
    );
    assert_eq!(schema["required"], json!(["kind", "value"]));
    for (sample, expected) in [
        (json!({"kind": "length", "value": 1.5}), "1.5 m"),
        (json!({"kind": "size", "value": "M"}), "size M"),
    ] {
        for dialect in Dialect::ALL {
            let text = validate_and_execute(&tool, dialect, sample.clone()).await;
            assert_eq!(text, expected, "{dialect}");
        }
    }
    // A combination the merged schema admits and the type refuses comes back naming the variant.
    let result = tool
        .execute("c1", json!({"kind": "length", "value": "M"}))
        .await;
    assert_eq!(
        result.text_content(),
        "invalid arguments for tool `record`: at `/value`: expected a number when `kind` is `length`, got the string \"M\"\n\
         valid properties: `kind`, `value`"
    );
}

#[tokio::test]
async fn a_run_time_schema_that_requires_one_of_two_fields_gets_an_object_root() {
    let tool = AgentTool::builder("post")
        .description("Post a note.")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "The title."},
                "body": {"type": "string", "description": "The text."}
            },
            "anyOf": [{"required": ["title"]}, {"required": ["body"]}]
        }))
        .handler(|_, args| async move { format!("posted {args}") })
        .build()
        .unwrap();
    let schema = schema_of(&tool, Dialect::Anthropic);
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "The title. Required in form 1."},
                "body": {"type": "string", "description": "The text. Required in form 2."}
            },
            "description": "Send the fields of one of these forms:\n1. Fields: `title`.\n2. Fields: `body`."
        })
    );
    let text = validate_and_execute(&tool, Dialect::Anthropic, json!({"body": "hi"})).await;
    assert_eq!(text, "posted {\"body\":\"hi\"}");
    let refused = tool.execute("c2", json!({})).await;
    assert!(refused.is_error);
}
