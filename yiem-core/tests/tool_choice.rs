//! `ToolChoice` in each provider's shape: the request fields every choice becomes, pinned in
//! `golden/tool_choice.json` (rewrite it after a deliberate change with `YIEM_BLESS=1 cargo test -p
//! yiem-core --all-features --test tool_choice`), and the OpenAI and Anthropic bodies checked against the
//! official SDKs' request types (`CompletionCreateParamsStreaming`, `ResponseCreateParamsStreaming`,
//! `MessageCreateParamsStreaming`).

mod common;

use common::sdk::{Request, assert_sdk_accepts_bodies};
use common::weather_tool;
use serde_json::{Map, Value, json};
use yiem_core::llm::ToolChoice;
use yiem_core::{
    llm::{
        AnthropicConfig, AnthropicModel, GeminiConfig, GeminiModel, ModelRequest, OpenAiConfig,
        OpenAiModel, OpenAiResponsesConfig, OpenAiResponsesModel,
    },
    message::UserMessage,
    tool::{AgentTool, ToolContext},
};

fn choices() -> Vec<(&'static str, ToolChoice)> {
    vec![
        ("auto", ToolChoice::Auto),
        ("required", ToolChoice::Required),
        ("none", ToolChoice::None),
        ("tool", ToolChoice::Tool("get_time".into())),
        (
            "allowed",
            ToolChoice::Allowed {
                tools: vec!["get_weather".into()],
                required: false,
            },
        ),
        (
            "allowed_required",
            ToolChoice::Allowed {
                tools: vec!["get_weather".into()],
                required: true,
            },
        ),
    ]
}

fn request() -> ModelRequest {
    let time = AgentTool::builder("get_time")
        .description("The time in a zone.")
        .input_schema(json!({"type": "object", "properties": {"zone": {"type": "string"}}}))
        .handler(|_ctx: ToolContext, _args: Value| async move { "noon" })
        .build()
        .unwrap();
    ModelRequest::new(
        "Use the tools.",
        vec![UserMessage::text("Weather and time in Oslo?").into()],
    )
    .tools(vec![weather_tool(), time].into())
}

/// The request bodies of every provider for `choice`.
fn bodies(choice: &ToolChoice) -> [(&'static str, Value); 4] {
    let request = request();
    let base = "http://127.0.0.1:9/v1";
    let chat =
        OpenAiModel::new(OpenAiConfig::new(base, "gpt-test").tool_choice(choice.clone())).unwrap();
    let responses = OpenAiResponsesModel::new(
        OpenAiResponsesConfig::new("gpt-test").tool_choice(choice.clone()),
    )
    .unwrap();
    let anthropic = AnthropicModel::new(
        AnthropicConfig::new("sk-ant-test", "claude-test").tool_choice(choice.clone()),
    )
    .unwrap();
    let gemini =
        GeminiModel::new(GeminiConfig::new("AIza-test", "gemini-test").tool_choice(choice.clone()))
            .unwrap();
    [
        ("openai", chat.request_body(&request).unwrap()),
        (
            "openai-responses",
            responses.request_body(&request).unwrap(),
        ),
        ("anthropic", anthropic.request_body(&request).unwrap()),
        ("gemini", gemini.request_body(&request).unwrap()),
    ]
}

/// What of a body the choice decides.
fn decided(provider: &str, body: &Value) -> Value {
    let field = |key: &str| body.get(key).cloned().unwrap_or(Value::Null);
    match provider {
        "anthropic" => json!({
            "tool_choice": field("tool_choice"),
            "tools": body["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect::<Vec<_>>(),
        }),
        "gemini" => field("toolConfig"),
        _ => field("tool_choice"),
    }
}

#[test]
fn every_tool_choice_matches_its_golden_shape_in_every_provider() {
    let mut golden = Map::new();
    for (name, choice) in choices() {
        let mut by_provider = Map::new();
        for (provider, body) in bodies(&choice) {
            by_provider.insert(provider.into(), decided(provider, &body));
        }
        golden.insert(name.into(), Value::Object(by_provider));
    }
    common::golden("tool_choice.json", &Value::Object(golden));
}

#[test]
fn the_sdks_accept_every_tool_choice() {
    let (mut chat, mut responses, mut anthropic) = (Vec::new(), Vec::new(), Vec::new());
    for (_, choice) in choices() {
        let [(_, c), (_, r), (_, a), _] = bodies(&choice);
        chat.push(c);
        responses.push(r);
        anthropic.push(a);
    }
    assert_sdk_accepts_bodies(Request::Chat, &chat);
    assert_sdk_accepts_bodies(Request::Responses, &responses);
    assert_sdk_accepts_bodies(Request::Anthropic, &anthropic);
}

#[test]
fn without_tools_no_choice_is_sent() {
    let mut request = request();
    request.tools = Default::default();
    let chat = OpenAiModel::new(
        OpenAiConfig::new("http://127.0.0.1:9/v1", "gpt-test").tool_choice(ToolChoice::Required),
    )
    .unwrap();
    assert_eq!(
        chat.request_body(&request).unwrap().get("tool_choice"),
        None
    );
}
