//! A tool's provider options (examples, strict mode, eager input streaming), Gemini's
//! `parametersJsonSchema`, and a request's or an agent's own `ToolChoice`, in each provider's shape: the
//! tool lists every provider sends, pinned in `golden/tool_options.json` (rewrite it after a deliberate
//! change with `YIEM_BLESS=1 cargo test -p yiem-core --all-features --test tool_options`), the OpenAI and
//! Anthropic bodies checked against the official SDKs' request types, and each provider's request sent to a
//! loopback server.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::sdk::{Request, assert_sdk_accepts, assert_sdk_accepts_bodies};
use common::{Reply, Server, all_events, data, named};
use serde_json::{Map, Value, json};
use yiem_core::llm::ToolChoice;
use yiem_core::{
    agent::{Agent, AgentSettings},
    llm::{
        AnthropicConfig, AnthropicModel, GeminiConfig, GeminiModel, Model, ModelRequest,
        OpenAiConfig, OpenAiModel, OpenAiResponsesConfig, OpenAiResponsesModel, RetryPolicy,
        ScriptedModel, ScriptedTurn,
    },
    message::UserMessage,
    store::Dialect,
    tool::{AgentTool, GrammarSyntax, ToolContext, ToolDefinitionError},
};

/// A tool with every option: two examples, strict mode, eager input streaming; `date` and `passengers`
/// are optional.
fn flights() -> AgentTool {
    AgentTool::builder("find_flights")
        .description("Find flights between two airports.")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "origin": {"type": "string", "description": "IATA code of the departure airport."},
                "destination": {"type": "string", "description": "IATA code of the arrival airport."},
                "date": {"type": "string", "format": "date", "description": "The day; any day when left out."},
                "passengers": {"type": "integer", "minimum": 1, "description": "How many travel; one when left out."}
            },
            "required": ["origin", "destination"]
        }))
        .example(json!({"origin": "OSL", "destination": "HND"}))
        .example(json!({"origin": "OSL", "destination": "NRT", "date": "2026-12-24", "passengers": 2}))
        .strict()
        .eager_input_streaming()
        .handler(|_ctx: ToolContext, _args: Value| async move { "none" })
        .build()
        .unwrap()
}

/// A tool without options whose argument is recursive: Gemini's `parameters` subset cannot express it.
fn outline() -> AgentTool {
    AgentTool::builder("count_headings")
        .description("Count the headings of an outline.")
        .input_schema(json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Section"}},
            "required": ["root"],
            "$defs": {"Section": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "sections": {"type": "array", "items": {"$ref": "#/$defs/Section"}}
                },
                "required": ["title", "sections"]
            }}
        }))
        .handler(|_ctx: ToolContext, _args: Value| async move { "1" })
        .build()
        .unwrap()
}

fn request(choice: Option<ToolChoice>) -> ModelRequest {
    let mut request = ModelRequest::new(
        "Use the tools.",
        vec![UserMessage::text("Flights from Oslo to Tokyo?").into()],
    )
    .tools(vec![flights(), outline()].into());
    request.tool_choice = choice;
    request
}

const PROVIDERS: [&str; 4] = ["openai", "openai-responses", "anthropic", "gemini"];

/// Each provider's model, configured with `configured` as its tool choice, at `base` (a root URL).
fn models(base: &str, configured: &ToolChoice) -> [Box<dyn ModelBody>; 4] {
    let retry = RetryPolicy::new(0, Duration::from_millis(1), Duration::from_millis(1));
    [
        Box::new(
            OpenAiModel::new(
                OpenAiConfig::new(format!("{base}/v1"), "gpt-test")
                    .retry(retry)
                    .tool_choice(configured.clone()),
            )
            .unwrap(),
        ),
        Box::new(
            OpenAiResponsesModel::new(
                OpenAiResponsesConfig::new("gpt-test")
                    .base_url(format!("{base}/v1"))
                    .api_key("sk-test")
                    .retry(retry)
                    .tool_choice(configured.clone()),
            )
            .unwrap(),
        ),
        Box::new(
            AnthropicModel::new(
                AnthropicConfig::new("sk-ant-test", "claude-test")
                    .base_url(base)
                    .retry(retry)
                    .tool_choice(configured.clone()),
            )
            .unwrap(),
        ),
        Box::new(
            GeminiModel::new(
                GeminiConfig::new("AIza-test", "gemini-test")
                    .base_url(format!("{base}/v1beta"))
                    .retry(retry)
                    .tool_choice(configured.clone()),
            )
            .unwrap(),
        ),
    ]
}

/// A model and its request body.
trait ModelBody: Model {
    fn body(&self, request: &ModelRequest) -> Value;
}

macro_rules! model_body {
    ($($model:ty),*) => {$(
        impl ModelBody for $model {
            fn body(&self, request: &ModelRequest) -> Value {
                self.request_body(request).unwrap()
            }
        }
    )*};
}
model_body!(
    OpenAiModel,
    OpenAiResponsesModel,
    AnthropicModel,
    GeminiModel
);

fn bodies(request: &ModelRequest, configured: &ToolChoice) -> Vec<(&'static str, Value)> {
    PROVIDERS
        .into_iter()
        .zip(models("http://127.0.0.1:9", configured))
        .map(|(provider, model)| (provider, model.body(request)))
        .collect()
}

/// The field of a body that carries the tool choice.
fn choice_of(provider: &str, body: &Value) -> Value {
    let key = if provider == "gemini" {
        "toolConfig"
    } else {
        "tool_choice"
    };
    body.get(key).cloned().unwrap_or(Value::Null)
}

#[test]
fn every_provider_sends_the_tool_options_it_takes_in_its_own_shape() {
    let mut golden = Map::new();
    for (provider, body) in bodies(&request(None), &ToolChoice::Auto) {
        golden.insert(provider.into(), body["tools"].clone());
    }
    common::golden("tool_options.json", &Value::Object(golden));
}

#[test]
fn only_anthropic_carries_examples_and_eager_streaming_and_only_openai_and_anthropic_strict() {
    for (provider, body) in bodies(&request(None), &ToolChoice::Auto) {
        let text = body["tools"].to_string();
        let has = |key: &str| text.contains(&format!("\"{key}\""));
        assert_eq!(has("input_examples"), provider == "anthropic", "{provider}");
        assert_eq!(
            has("eager_input_streaming"),
            provider == "anthropic",
            "{provider}"
        );
        assert_eq!(has("strict"), provider != "gemini", "{provider}");
        assert_eq!(
            has("parametersJsonSchema"),
            provider == "gemini",
            "{provider}"
        );
    }
}

#[test]
fn the_sdks_accept_the_tool_options_and_a_request_tool_choice() {
    let (mut chat, mut responses, mut anthropic) = (Vec::new(), Vec::new(), Vec::new());
    for choice in [
        None,
        Some(ToolChoice::Tool("count_headings".into())),
        Some(ToolChoice::Allowed {
            tools: vec!["find_flights".into()],
            required: false,
        }),
    ] {
        let all = bodies(&request(choice), &ToolChoice::Required);
        chat.push(all[0].1.clone());
        responses.push(all[1].1.clone());
        anthropic.push(all[2].1.clone());
    }
    assert_sdk_accepts_bodies(Request::Chat, &chat);
    assert_sdk_accepts_bodies(Request::Responses, &responses);
    assert_sdk_accepts_bodies(Request::Anthropic, &anthropic);
}

#[test]
fn a_request_tool_choice_overrides_the_provider_configuration() {
    let choice = ToolChoice::Tool("count_headings".into());
    let expected = [
        json!({"type": "function", "function": {"name": "count_headings"}}),
        json!({"type": "function", "name": "count_headings"}),
        json!({"type": "tool", "name": "count_headings"}),
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["count_headings"]}}),
    ];
    let all = bodies(&request(Some(choice)), &ToolChoice::None);
    for ((provider, body), expected) in all.iter().zip(expected) {
        assert_eq!(choice_of(provider, body), expected, "{provider}");
    }
    // Without one of its own, the request takes the configuration's.
    let all = bodies(&request(None), &ToolChoice::None);
    assert_eq!(choice_of("openai", &all[0].1), json!("none"));
    assert_eq!(
        choice_of("gemini", &all[3].1),
        json!({"functionCallingConfig": {"mode": "NONE"}})
    );
}

#[test]
fn an_allowed_set_restricts_every_provider_in_its_own_way() {
    let choice = ToolChoice::Allowed {
        tools: vec!["find_flights".into()],
        required: false,
    };
    let all = bodies(&request(Some(choice)), &ToolChoice::Auto);
    assert_eq!(
        choice_of("openai", &all[0].1),
        json!({"type": "allowed_tools", "allowed_tools": {"mode": "auto",
               "tools": [{"type": "function", "function": {"name": "find_flights"}}]}})
    );
    assert_eq!(
        choice_of("openai-responses", &all[1].1),
        json!({"type": "allowed_tools", "mode": "auto",
               "tools": [{"type": "function", "name": "find_flights"}]})
    );
    // Anthropic: only the allowed tools go, and nothing forces a call.
    let names: Vec<&Value> = all[2].1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| &tool["name"])
        .collect();
    assert_eq!(names, [&json!("find_flights")]);
    assert_eq!(all[2].1.get("tool_choice"), None);
    // Gemini: VALIDATED, the model may call only the allowed functions or answer in text.
    assert_eq!(
        choice_of("gemini", &all[3].1),
        json!({"functionCallingConfig": {"mode": "VALIDATED", "allowedFunctionNames": ["find_flights"]}})
    );
}

#[test]
fn a_strict_tool_is_strict_in_chat_completions_and_responses_whatever_the_config() {
    let all = bodies(&request(None), &ToolChoice::Auto);
    let chat = &all[0].1["tools"][0]["function"];
    assert_eq!(chat["strict"], json!(true));
    assert_eq!(chat["parameters"]["additionalProperties"], json!(false));
    assert_eq!(
        chat["parameters"]["required"],
        json!(["origin", "destination", "date", "passengers"])
    );
    assert_eq!(
        chat["parameters"]["properties"]["passengers"]["anyOf"][1],
        json!({"type": "null"})
    );
    // The other tool stays as it was.
    assert_eq!(all[0].1["tools"][1]["function"].get("strict"), None);
    let responses = &all[1].1["tools"];
    assert_eq!(responses[0]["strict"], json!(true));
    assert_eq!(responses[1]["strict"], json!(false));
}

#[test]
fn the_builder_refuses_an_example_that_does_not_fit_naming_the_tool_and_the_example() {
    let refused = AgentTool::builder("find_flights")
        .description("Find flights.")
        .input_schema(
            json!({"type": "object", "properties": {"origin": {"type": "string"}}, "required": ["origin"]}),
        )
        .example(json!({"origin": "OSL"}))
        .example(json!({"from": "OSL"}))
        .handler(|_ctx: ToolContext, _args: Value| async move { "" })
        .build()
        .unwrap_err();
    let ToolDefinitionError::InvalidExample { name, index, .. } = &refused else {
        panic!("{refused:?}");
    };
    assert_eq!((name.as_str(), *index), ("find_flights", 1));
    let text = refused.to_string();
    assert!(
        text.starts_with(
            "example 1 (counting from 0) of tool `find_flights` does not fit its input schema; \
             fix the example or the schema: "
        ),
        "{text}"
    );
    assert!(text.contains("`from`"), "{text}");
}

#[test]
fn the_builder_refuses_strict_mode_for_a_schema_strict_mode_cannot_express() {
    let refused = AgentTool::builder("tally")
        .description("Add up counts.")
        .input_schema(json!({
            "type": "object",
            "properties": {"counts": {"type": "object", "additionalProperties": {"type": "integer"}}},
            "required": ["counts"]
        }))
        .strict()
        .handler(|_ctx: ToolContext, _args: Value| async move { "" })
        .build()
        .unwrap_err();
    assert!(
        matches!(&refused, ToolDefinitionError::NotStrict { name, .. } if name == "tally"),
        "{refused:?}"
    );
    assert!(
        refused.to_string().starts_with(
            "tool `tally` asks for strict mode, which cannot express its schema: tool `tally` cannot be \
             described for OpenAI strict mode: `/counts`"
        ),
        "{refused}"
    );
}

#[test]
fn gemini_takes_a_recursive_argument_as_parameters_json_schema() {
    let tool = outline();
    let definition = tool.definition(Dialect::Gemini).unwrap();
    assert_eq!(definition.get("parameters"), None);
    let schema = &definition["parametersJsonSchema"];
    assert_eq!(
        schema["properties"]["root"],
        json!({"$ref": "#/$defs/Section"})
    );
    assert_eq!(
        schema["$defs"]["Section"]["properties"]["sections"]["items"],
        json!({"$ref": "#/$defs/Section"})
    );
    // A schema that fits the subset still goes as `parameters`.
    assert!(
        flights()
            .definition(Dialect::Gemini)
            .unwrap()
            .get("parameters")
            .is_some()
    );
}

#[tokio::test]
async fn an_agent_tool_choice_goes_in_every_request_it_makes() {
    let seen: Arc<Mutex<Vec<Option<ToolChoice>>>> = Arc::default();
    let record = Arc::clone(&seen);
    let model = ScriptedModel::from_fn(move |request| {
        record.lock().unwrap().push(request.tool_choice.clone());
        ScriptedTurn::text("done")
    });
    let choice = ToolChoice::Allowed {
        tools: vec!["find_flights".into()],
        required: true,
    };
    let agent = Agent::builder()
        .model(model)
        .tool_choice(choice.clone())
        .build();
    agent.prompt("one").await;
    agent.prompt("two").await;
    assert_eq!(*seen.lock().unwrap(), [Some(choice.clone()), Some(choice)]);

    // An agent without one leaves it to the provider configuration.
    let seen: Arc<Mutex<Vec<Option<ToolChoice>>>> = Arc::default();
    let record = Arc::clone(&seen);
    let agent = Agent::builder()
        .model(ScriptedModel::from_fn(move |request| {
            record.lock().unwrap().push(request.tool_choice.clone());
            ScriptedTurn::text("done")
        }))
        .build();
    agent.prompt("one").await;
    assert_eq!(*seen.lock().unwrap(), [None]);
}

/// A short text reply in each provider's stream shape.
fn text_reply(provider: &str) -> Reply {
    Reply::Sse(match provider {
        "openai" => vec![
            data(
                json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
                        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"},
                                     "finish_reason": "stop"}]}),
            ),
            "data: [DONE]\n\n".into(),
        ],
        "openai-responses" => {
            let response = |status: &str| {
                json!({"id": "resp_1", "object": "response", "created_at": 1, "status": status,
                       "model": "gpt-test", "output": [], "usage": null})
            };
            vec![
                named(
                    "response.created",
                    json!({"type": "response.created", "sequence_number": 0, "response": response("in_progress")}),
                ),
                named(
                    "response.completed",
                    json!({"type": "response.completed", "sequence_number": 1, "response": response("completed")}),
                ),
            ]
        }
        "anthropic" => vec![
            named(
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                       "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null,
                       "stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 1}}}),
            ),
            named(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                       "usage": {"output_tokens": 1}}),
            ),
            named("message_stop", json!({"type": "message_stop"})),
        ],
        _ => vec![data(json!({
            "candidates": [{"content": {"parts": [{"text": "ok"}], "role": "model"},
                            "finishReason": "STOP", "index": 0}],
            "modelVersion": "gemini-test"
        }))],
    })
}

#[tokio::test]
async fn every_provider_sends_its_options_and_the_request_choice_over_the_wire() {
    let choice = ToolChoice::Allowed {
        tools: vec!["find_flights".into()],
        required: true,
    };
    for (index, provider) in PROVIDERS.into_iter().enumerate() {
        let server = Server::start(vec![text_reply(provider)]).await;
        let models = models(&server.root(), &ToolChoice::Auto);
        let model = &models[index];
        let request = request(Some(choice.clone()));
        let expected = model.body(&request);
        all_events(model.as_ref(), request).await;
        let sent = server.requests();
        assert_eq!(sent.len(), 1, "{provider}");
        assert_eq!(sent[0].body["tools"], expected["tools"], "{provider}");
        assert_eq!(
            choice_of(provider, &sent[0].body),
            choice_of(provider, &expected),
            "{provider}"
        );
        assert_ne!(
            choice_of(provider, &sent[0].body),
            Value::Null,
            "{provider}"
        );
        match provider {
            "openai" => assert_sdk_accepts(Request::Chat, &server),
            "openai-responses" => assert_sdk_accepts(Request::Responses, &server),
            "anthropic" => assert_sdk_accepts(Request::Anthropic, &server),
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Free-text tools: a grammar tool in every provider's shape (`golden/grammar_tools.json`)
// ---------------------------------------------------------------------------------------------------

const DATE_GRAMMAR: &str = r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])";

/// A tool whose input is a date in a regex grammar.
fn save_date() -> AgentTool {
    AgentTool::builder("save_date")
        .description("Save a date.")
        .grammar(GrammarSyntax::Regex, DATE_GRAMMAR)
        .handler(|_ctx: ToolContext, args: Value| async move {
            format!("saved {}", args["input"].as_str().unwrap_or_default())
        })
        .build()
        .unwrap()
}

/// A tool whose input is any text.
fn note() -> AgentTool {
    AgentTool::builder("note")
        .description("Keep a note.")
        .free_text()
        .handler(|_ctx: ToolContext, _args: Value| async move { "kept" })
        .build()
        .unwrap()
}

fn grammar_request() -> ModelRequest {
    ModelRequest::new(
        "Use the tools.",
        vec![UserMessage::text("Save Christmas Eve.").into()],
    )
    .tools(vec![save_date(), note()].into())
}

#[test]
fn every_provider_sends_a_grammar_tool_in_its_own_shape() {
    let mut golden = Map::new();
    for (provider, body) in bodies(&grammar_request(), &ToolChoice::Auto) {
        golden.insert(provider.into(), body["tools"].clone());
    }
    golden.insert(
        "mcp".into(),
        grammar_request().tools.definitions(Dialect::Mcp).unwrap(),
    );
    common::golden("grammar_tools.json", &Value::Object(golden));
}

#[test]
fn a_provider_without_grammar_tools_gets_one_string_parameter_and_the_grammar_in_the_description() {
    let stated = format!(
        "Save a date.\n\nThe `input` parameter is text in the language of this regex grammar (the whole \
         text must match it):\n{DATE_GRAMMAR}"
    );
    let all = bodies(&grammar_request(), &ToolChoice::Auto);
    let chat = &all[0].1["tools"][0]["function"];
    let anthropic = &all[2].1["tools"][0];
    let gemini = &all[3].1["tools"][0]["functionDeclarations"][0];
    for (provider, definition, schema) in [
        ("openai", chat, &chat["parameters"]),
        ("anthropic", anthropic, &anthropic["input_schema"]),
        ("gemini", gemini, &gemini["parameters"]),
    ] {
        assert_eq!(definition["description"], json!(stated), "{provider}");
        let names: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["input"], "{provider}");
        assert_eq!(
            schema["properties"]["input"]["type"],
            json!("string"),
            "{provider}"
        );
        assert_eq!(schema["required"], json!(["input"]), "{provider}");
    }
    // Only the Responses API has custom tools.
    assert_eq!(all[1].1["tools"][0]["type"], json!("custom"));
    assert_eq!(
        all[1].1["tools"][1],
        json!({"type": "custom", "name": "note",
        "description": "Keep a note.", "format": {"type": "text"}})
    );
}

#[test]
fn a_long_grammar_is_cut_in_the_description_and_said_to_be() {
    let long = format!("start: {}", "\"a\" | ".repeat(2000));
    let tool = AgentTool::builder("long")
        .description("Long.")
        .grammar(GrammarSyntax::Lark, long.clone())
        .handler(|_ctx: ToolContext, _args: Value| async move { "" })
        .build()
        .unwrap();
    let description = tool.definition(Dialect::Anthropic).unwrap()["description"]
        .as_str()
        .unwrap()
        .to_owned();
    let head = "Long.\n\nThe `input` parameter is text in the language of this lark grammar:\n";
    assert!(description.starts_with(head), "{description}");
    assert!(description.ends_with(&format!(
        "\n[the grammar is cut here: it is {} characters long]",
        long.len()
    )));
    assert!(description.len() < yiem_core::tool::MAX_GRAMMAR_IN_DESCRIPTION + 200);
    assert!(long.starts_with(
        &description[head.len()..head.len() + yiem_core::tool::MAX_GRAMMAR_IN_DESCRIPTION]
    ));
}

#[test]
fn the_sdks_accept_grammar_tools() {
    let all = bodies(&grammar_request(), &ToolChoice::Auto);
    assert_sdk_accepts_bodies(Request::Chat, &[all[0].1.clone()]);
    assert_sdk_accepts_bodies(Request::Responses, &[all[1].1.clone()]);
    assert_sdk_accepts_bodies(Request::Anthropic, &[all[2].1.clone()]);
}

#[test]
fn the_builder_refuses_a_schema_beside_free_text_and_a_regex_that_does_not_compile() {
    let both = AgentTool::builder("save_date")
        .description("Save a date.")
        .input_schema(json!({"type": "object", "properties": {"date": {"type": "string"}}}))
        .free_text()
        .handler(|_ctx: ToolContext, _args: Value| async move { "" })
        .build()
        .unwrap_err();
    assert_eq!(
        both.to_string(),
        "the input schema of tool `save_date` is not usable: a free-text tool's arguments are \
         `{\"input\": \"<text>\"}`, and its schema is set for you: leave out `.input_schema(...)`, or \
         `.free_text()` and `.grammar(...)`"
    );
    let broken = AgentTool::builder("save_date")
        .description("Save a date.")
        .grammar(GrammarSyntax::Regex, r"\d{4}-(")
        .handler(|_ctx: ToolContext, _args: Value| async move { "" })
        .build();
    if cfg!(feature = "schema-validation") {
        let error = broken.unwrap_err().to_string();
        assert!(
            error.starts_with(
                "the grammar of tool `save_date` is not usable: the regex does not compile: regex parse error"
            ),
            "{error}"
        );
    } else {
        // Without the regex engine yiem cannot judge it: the provider that enforces it will.
        assert!(broken.is_ok());
    }
}

/// A Chat Completions stream whose reply calls `save_date` with `text`.
fn chat_call(text: &str) -> Reply {
    let arguments = json!({"input": text}).to_string();
    Reply::Sse(vec![
        data(
            json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
                    "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
                        {"index": 0, "id": "call_1", "type": "function",
                         "function": {"name": "save_date", "arguments": arguments}}]},
                        "finish_reason": "tool_calls"}]}),
        ),
        "data: [DONE]\n\n".into(),
    ])
}

#[tokio::test]
async fn a_grammar_tool_on_chat_completions_is_called_as_a_function_and_its_text_checked_by_yiem() {
    let server = Server::start(vec![
        chat_call("2026-12-24"),
        text_reply("openai"),
        chat_call("Christmas Eve"),
        text_reply("openai"),
    ])
    .await;
    let models = models(&server.root(), &ToolChoice::Auto);
    let store = yiem_core::store::ToolStore::new("dates");
    store.register(save_date()).unwrap();
    let agent = Agent::builder()
        .model(ArcModel(Arc::from(models.into_iter().next().unwrap())))
        .tools(store)
        .build();
    agent.prompt("Save Christmas Eve.").await;
    agent.prompt("Again, in words.").await;

    let sent = server.requests();
    assert_eq!(sent.len(), 4);
    let tool_message = |index: usize| {
        let messages = sent[index].body["messages"].as_array().unwrap();
        messages.iter().rfind(|m| m["role"] == "tool").unwrap()["content"].clone()
    };
    assert_eq!(tool_message(1), json!("saved 2026-12-24"));
    if cfg!(feature = "schema-validation") {
        assert_eq!(
            tool_message(3),
            json!(format!(
                "invalid arguments for tool `save_date`: at `/input`: the text does not match the \
                 tool's regex grammar; send text the whole grammar matches: {DATE_GRAMMAR}"
            ))
        );
    } else {
        assert_eq!(tool_message(3), json!("saved Christmas Eve"));
    }
    assert_sdk_accepts(Request::Chat, &server);
}

/// A boxed model as a `Model` an agent can own.
struct ArcModel(Arc<dyn ModelBody>);

impl Model for ArcModel {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn stream(
        &self,
        request: ModelRequest,
        cancel: yiem_core::exec::CancellationToken,
    ) -> yiem_core::llm::ModelStream {
        self.0.stream(request, cancel)
    }
}

/// A provider that runs no program of the model's (none of them, without programmatic calling) is not
/// sent a code-only tool: the model could only call it directly, which is refused.
#[test]
fn no_provider_without_programmatic_calling_is_sent_a_code_only_tool() {
    let code_only = AgentTool::builder("tally")
        .description("Count one more.")
        .code_only()
        .handler(|_ctx: yiem_core::tool::ToolContext, _args: Value| async move { "1" })
        .build()
        .unwrap();
    let mut request = request(None);
    request.tools = vec![flights(), code_only].into();
    for (provider, body) in bodies(&request, &ToolChoice::Auto) {
        let text = body["tools"].to_string();
        assert!(text.contains("find_flights"), "{provider}: {text}");
        assert!(!text.contains("tally"), "{provider}: {text}");
    }
}
