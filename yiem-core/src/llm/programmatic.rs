//! Provider-native programmatic calling: [`ProgrammaticCalling`], which tools a program in the model
//! provider's own sandbox may call (Anthropic's code-execution tool, OpenAI's
//! `programmatic_tool_calling`). The providers' clients add their sandbox tool and mark those tools'
//! definitions with `allowed_callers`; the calls such a program makes come back as
//! [`ToolCall`](crate::exec::ToolCall)s with a [`ToolCaller`](crate::exec::ToolCaller) and run through the pipeline
//! like any other (hooks, approvals, events).

use serde_json::Value;

use super::ModelRequest;
use crate::tool::definition::AgentTool;

/// Which tools a program in the provider's sandbox may call, as
/// `AnthropicConfig::programmatic_calling` and `OpenAiResponsesConfig::programmatic_calling`
/// take it. By default every tool but the `destructive` ones, as in code mode's (`CodeMode`) default;
/// the model can still call each tool itself, but for the [code-only](AgentTool::is_code_only) ones,
/// which only the sandbox may call (`allowed_callers` names the sandbox alone), named or not.
///
/// ```
/// use yiem_core::llm::ProgrammaticCalling;
///
/// let calling = ProgrammaticCalling::new().callable_tools(["get_weather", "lookup"]);
/// assert!(format!("{calling:?}").contains("lookup"));
/// ```
///
/// What a request then carries, on each provider (`lookup` is callable: it is not destructive):
///
/// ```
/// use serde_json::json;
/// use yiem_core::llm::{ModelRequest, ProgrammaticCalling};
/// use yiem_core::tool::{AgentTool, ToolContext};
///
/// let lookup = AgentTool::builder("lookup").description("Looks a record up.")
///     .input_schema(json!({"type": "object", "properties": {}}))
///     .handler(|_ctx: ToolContext, _args: serde_json::Value| async move { "found" })
///     .build().unwrap();
/// let request = ModelRequest::new(String::new(), Vec::new()).tools(vec![lookup].into());
///
/// # #[cfg(feature = "anthropic")] {
/// use yiem_core::llm::{AnthropicConfig, AnthropicModel};
/// let config = AnthropicConfig::new("sk-ant-test", "claude-sonnet-4-5")
///     .programmatic_calling(ProgrammaticCalling::new());
/// let body = AnthropicModel::new(config).unwrap().request_body(&request).unwrap();
/// assert_eq!(body["tools"][0]["allowed_callers"], json!(["direct", "code_execution_20260120"]));
/// assert_eq!(body["tools"][1], json!({"type": "code_execution_20260120", "name": "code_execution"}));
/// # }
/// # #[cfg(feature = "openai-responses")] {
/// use yiem_core::llm::{OpenAiResponsesConfig, OpenAiResponsesModel};
/// let config = OpenAiResponsesConfig::new("gpt-5.5").programmatic_calling(ProgrammaticCalling::new());
/// let body = OpenAiResponsesModel::new(config).unwrap().request_body(&request).unwrap();
/// assert_eq!(body["tools"][0]["allowed_callers"], json!(["direct", "programmatic"]));
/// assert_eq!(body["tools"][1], json!({"type": "programmatic_tool_calling"}));
/// # }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProgrammaticCalling {
    callable: Callable,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum Callable {
    #[default]
    NotDestructive,
    Only(Vec<String>),
}

impl ProgrammaticCalling {
    /// Every tool but the `destructive` ones callable from the provider's sandbox.
    pub fn new() -> Self {
        ProgrammaticCalling::default()
    }

    /// Only these tools are callable from the provider's sandbox (destructive ones too, if named).
    #[must_use]
    pub fn callable_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.callable = Callable::Only(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Whether a program in the provider's sandbox may call `tool`.
    pub fn is_callable(&self, tool: &AgentTool) -> bool {
        match &self.callable {
            Callable::NotDestructive => tool.annotations().destructive != Some(true),
            Callable::Only(names) => names.iter().any(|name| name == tool.name()),
        }
    }

    /// Sets `allowed_callers` on each of `definitions` (a request's tool definitions, by their `name`)
    /// whose tool is callable: `callers` (the model and the sandbox), or `sandbox` alone for a
    /// [code-only](AgentTool::is_code_only) tool, which is always callable from the sandbox.
    pub(crate) fn mark<'a>(
        &self,
        definitions: impl IntoIterator<Item = &'a mut Value>,
        request: &ModelRequest,
        callers: &Value,
        sandbox: &Value,
    ) {
        for definition in definitions {
            let Some(name) = definition.get("name").and_then(Value::as_str) else {
                continue;
            };
            let tool = request
                .tools
                .iter()
                .chain(request.deferred.iter())
                .find(|tool| tool.name() == name);
            let allowed = match tool {
                Some(tool) if tool.is_code_only() => sandbox,
                Some(tool) if self.is_callable(tool) => callers,
                _ => continue,
            };
            if let Value::Object(fields) = definition {
                fields.insert("allowed_callers".into(), allowed.clone());
            }
        }
    }
}
