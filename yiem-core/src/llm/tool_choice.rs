//! [`ToolChoice`]: which tools a model may or must call, a setting of every provider's configuration and
//! of an agent ([`AgentSettings::tool_choice`](crate::agent::AgentSettings::tool_choice), or a request's own
//! [`ModelRequest::tool_choice`](crate::llm::ModelRequest::tool_choice)), rendered in the form each provider
//! takes.

#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
use serde_json::{Value, json};

/// Which tools the model may or must call in a request that carries tools. Set on an agent
/// ([`AgentSettings::tool_choice`](crate::agent::AgentSettings::tool_choice)), which puts it in every
/// [`ModelRequest`](crate::llm::ModelRequest) it makes, or on a provider's configuration (`.tool_choice(..)`,
/// every provider), the default of requests that carry none; an `extra_body` entry of the provider's own
/// field (`tool_choice`, `toolConfig`) still overrides both.
///
/// | choice | Chat Completions, Responses `tool_choice` | Anthropic `tool_choice` | Gemini `toolConfig.functionCallingConfig` |
/// |---|---|---|---|
/// | `Auto` (default) | not sent | not sent | not sent |
/// | `Required` | `"required"` | `{"type": "any"}` | `{"mode": "ANY"}` |
/// | `None` | `"none"` | `{"type": "none"}` | `{"mode": "NONE"}` |
/// | `Tool(name)` | the function by name | `{"type": "tool", "name"}` | `ANY` with `allowedFunctionNames: [name]` |
/// | `Allowed { tools, required }` | `{"type": "allowed_tools", "mode": "auto"/"required", "tools": [...]}` | only those tools are sent, with `{"type": "any"}` when required | `VALIDATED` (or `ANY` when required) with `allowedFunctionNames` |
///
/// Anthropic has no allowed-tools setting: the request then carries only the allowed tools (a `tracing`
/// debug note says so), so the other tools' definitions are not cached with the prompt.
///
/// ```
/// # #[cfg(feature = "openai")] {
/// use yiem_core::llm::ToolChoice;
/// use yiem_core::{llm::{OpenAiConfig, OpenAiModel, ModelRequest}, message::UserMessage};
/// # fn weather() -> yiem_core::tool::AgentTool {
/// #     yiem_core::tool::AgentTool::builder("get_weather").description("Weather.")
/// #         .input_schema(serde_json::json!({"type": "object", "properties": {}}))
/// #         .handler(|_ctx: yiem_core::tool::ToolContext, _args: serde_json::Value| async move { "sunny" })
/// #         .build().unwrap()
/// # }
///
/// let config = OpenAiConfig::new("http://localhost:11434/v1", "llama3.2")
///     .tool_choice(ToolChoice::Tool("get_weather".into()));
/// let model = OpenAiModel::new(config).unwrap();
/// let body = model.request_body(&ModelRequest::new(String::new(), vec![UserMessage::text("Weather in Oslo?").into()]).tools(vec![weather()].into())).unwrap();
/// assert_eq!(body["tool_choice"], serde_json::json!({"type": "function", "function": {"name": "get_weather"}}));
/// # }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides whether to call tools (every provider's default).
    #[default]
    Auto,
    /// The model must call at least one tool.
    Required,
    /// The model must not call tools (their definitions still go, so it knows of them).
    None,
    /// The model must call this tool.
    Tool(String),
    /// The model may call only these tools; `required`: it must call one of them. Except with
    /// Anthropic, every tool still goes in the request, so a prompt cache of the tool list holds.
    Allowed {
        /// The tools' names.
        tools: Vec<String>,
        /// Whether it must call one.
        required: bool,
    },
}

impl ToolChoice {
    /// Chat Completions' `tool_choice`; `None` for `Auto`.
    #[cfg(feature = "openai")]
    pub(crate) fn openai_chat(&self) -> Option<Value> {
        let function = |name: &str| json!({"type": "function", "function": {"name": name}});
        Some(match self {
            ToolChoice::Auto => return None,
            ToolChoice::Required => json!("required"),
            ToolChoice::None => json!("none"),
            ToolChoice::Tool(name) => function(name),
            ToolChoice::Allowed { tools, required } => json!({
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": if *required { "required" } else { "auto" },
                    "tools": tools.iter().map(|name| function(name)).collect::<Vec<_>>(),
                },
            }),
        })
    }

    /// The Responses API's `tool_choice`; `None` for `Auto`. A tool the request sends as a custom tool
    /// (`custom_tool`) is named as one (`{"type": "custom", "name"}`).
    #[cfg(feature = "openai-responses")]
    pub(crate) fn openai_responses(&self, custom_tool: &dyn Fn(&str) -> bool) -> Option<Value> {
        let function = |name: &str| {
            let kind = if custom_tool(name) {
                "custom"
            } else {
                "function"
            };
            json!({"type": kind, "name": name})
        };
        Some(match self {
            ToolChoice::Auto => return None,
            ToolChoice::Required => json!("required"),
            ToolChoice::None => json!("none"),
            ToolChoice::Tool(name) => function(name),
            ToolChoice::Allowed { tools, required } => json!({
                "type": "allowed_tools",
                "mode": if *required { "required" } else { "auto" },
                "tools": tools.iter().map(|name| function(name)).collect::<Vec<_>>(),
            }),
        })
    }

    /// Anthropic's `tool_choice` (`None` for `Auto` and a set that need not be used), and the names the
    /// request's tool list is cut down to (an allowed set).
    #[cfg(feature = "anthropic")]
    pub(crate) fn anthropic(&self) -> (Option<Value>, Option<&[String]>) {
        match self {
            ToolChoice::Auto => (None, None),
            ToolChoice::Required => (Some(json!({"type": "any"})), None),
            ToolChoice::None => (Some(json!({"type": "none"})), None),
            ToolChoice::Tool(name) => (Some(json!({"type": "tool", "name": name})), None),
            ToolChoice::Allowed { tools, required } => {
                tracing::debug!(
                    ?tools,
                    "Anthropic has no allowed-tools setting: the request carries only the allowed tools"
                );
                (required.then(|| json!({"type": "any"})), Some(tools))
            }
        }
    }

    /// Gemini's `toolConfig`; `None` for `Auto`.
    #[cfg(feature = "gemini")]
    pub(crate) fn gemini(&self) -> Option<Value> {
        let config = |mode: &str, names: Option<&[String]>| {
            let mut calling = json!({"mode": mode});
            if let Some(names) = names {
                calling["allowedFunctionNames"] = json!(names);
            }
            json!({"functionCallingConfig": calling})
        };
        Some(match self {
            ToolChoice::Auto => return None,
            ToolChoice::Required => config("ANY", None),
            ToolChoice::None => config("NONE", None),
            ToolChoice::Tool(name) => config("ANY", Some(std::slice::from_ref(name))),
            ToolChoice::Allowed { tools, required } => {
                config(if *required { "ANY" } else { "VALIDATED" }, Some(tools))
            }
        })
    }
}
