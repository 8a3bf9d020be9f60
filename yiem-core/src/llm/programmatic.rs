//! Provider-native programmatic calling: [`ProgrammaticCalling`], which tools a program in the model
//! provider's own sandbox may call (Anthropic's code-execution tool, OpenAI's
//! `programmatic_tool_calling`). The providers' clients add their sandbox tool and mark those tools'
//! definitions with `allowed_callers`; the calls such a program makes come back as
//! [`ToolCall`](crate::ToolCall)s with a [`ToolCaller`](crate::ToolCaller) and run through the pipeline
//! like any other (hooks, approvals, events).

use serde_json::Value;

use super::ModelRequest;
use crate::tool::AgentTool;

/// Which tools a program in the provider's sandbox may call, as
/// `AnthropicConfig::with_programmatic_calling` and `OpenAiResponsesConfig::with_programmatic_calling`
/// take it. By default every tool but the `destructive` ones, as in code mode's (`CodeMode`) default;
/// the model can still call each tool itself.
///
/// ```
/// use yiem_core::llm::ProgrammaticCalling;
///
/// let calling = ProgrammaticCalling::new().callable_tools(["get_weather", "lookup"]);
/// assert!(format!("{calling:?}").contains("lookup"));
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

    /// Sets `allowed_callers` to `callers` on each of `definitions` (a request's tool definitions, by
    /// their `name`) whose tool is callable.
    pub(crate) fn mark<'a>(
        &self,
        definitions: impl IntoIterator<Item = &'a mut Value>,
        request: &ModelRequest,
        callers: &Value,
    ) {
        for definition in definitions {
            let Some(name) = definition.get("name").and_then(Value::as_str) else {
                continue;
            };
            let callable = request
                .tools
                .iter()
                .chain(request.deferred.iter())
                .find(|tool| tool.name() == name)
                .is_some_and(|tool| self.is_callable(tool));
            if let (true, Value::Object(fields)) = (callable, definition) {
                fields.insert("allowed_callers".into(), callers.clone());
            }
        }
    }
}
