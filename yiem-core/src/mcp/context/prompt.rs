//! A prompt an MCP server serves: its name, description and arguments, and the function that makes its
//! messages from the arguments the client gives.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{JsonObject, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::Value;

use super::complete::{Completer, enum_values};
use crate::ask::elicit::{Asker, ElicitError};
use crate::ask::{Answers, Questions};

/// Why a prompt could not be got.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// The arguments do not fit the prompt's argument struct: what is wrong, for the client
    /// (`-32602`).
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The prompt's function failed (`Err`): its message (`-32603`).
    #[error("{0}")]
    Failed(String),
}

type GetFn = dyn Fn(JsonObject, PromptContext) -> BoxFuture<'static, Result<Vec<PromptMessage>, PromptError>>
    + Send
    + Sync;

/// What a prompt's function reaches besides its arguments while it makes its messages: the client,
/// to ask it questions ([`ask`](Self::ask)) — over MCP's 2026-07-28 revision by answering
/// `prompts/get` `input_required`, after which the function runs again from the start with the answers.
#[derive(Clone, Default)]
pub struct PromptContext {
    asker: Option<Arc<dyn Asker>>,
    server: String,
}

impl fmt::Debug for PromptContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptContext")
            .field("server", &self.server)
            .field("can_ask", &self.asker.is_some())
            .finish()
    }
}

impl PromptContext {
    /// A context where nobody can be asked (a prompt got outside a server, in a test).
    pub fn new() -> Self {
        PromptContext::default()
    }

    /// The context of a request of `server`'s client, asked through `asker`.
    pub(crate) fn asking(server: impl Into<String>, asker: Arc<dyn Asker>) -> Self {
        PromptContext {
            asker: Some(asker),
            server: server.into(),
        }
    }

    /// Asks the client several questions at once, each under a key of the prompt's choosing, as
    /// [`ToolContext::ask`](crate::tool::ToolContext::ask) does for a tool.
    pub async fn ask(&self, questions: Questions) -> Result<Answers, ElicitError> {
        crate::ask::elicit::batch::ask_through(self.asker.as_deref(), &self.server, questions).await
    }
}

/// A prompt an [`McpServer`](crate::mcp::McpServer) serves from a [`ContextStore`](super::ContextStore):
/// `#[prompt]` builds one, or build one at run time.
///
/// ```
/// use yiem_core::mcp::{McpPrompt, PromptError};
/// use rmcp::model::{PromptArgument, PromptMessage, Role};
///
/// let review = McpPrompt::new("review")
///     .description("Review a piece of code.")
///     .arguments(vec![PromptArgument::new("code").with_required(true)])
///     .get(|arguments| async move {
///         let code = arguments.get("code").and_then(|code| code.as_str()).unwrap_or_default();
///         Ok::<_, PromptError>(vec![PromptMessage::new_text(Role::User, format!("Review:\n{code}"))])
///     });
/// assert_eq!(review.name(), "review");
/// ```
#[derive(Clone)]
pub struct McpPrompt {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) arguments: Vec<PromptArgument>,
    pub(crate) getter: Arc<GetFn>,
    pub(crate) completers: BTreeMap<String, Completer>,
}

impl fmt::Debug for McpPrompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpPrompt")
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .finish_non_exhaustive()
    }
}

impl McpPrompt {
    /// A prompt named `name`, without arguments, whose messages are none until [`get`](Self::get) says
    /// how to make them.
    pub fn new(name: impl Into<String>) -> Self {
        McpPrompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: Vec::new(),
            getter: Arc::new(
                |_, _| -> BoxFuture<'static, Result<Vec<PromptMessage>, PromptError>> {
                    Box::pin(async { Ok(Vec::new()) })
                },
            ),
            completers: BTreeMap::new(),
        }
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What the prompt is for.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The arguments the client fills in.
    pub fn arguments(mut self, arguments: Vec<PromptArgument>) -> Self {
        self.arguments = arguments;
        self
    }

    /// The arguments of an object JSON Schema (an argument struct's): one per property, described by
    /// the property's description, required as the schema says; a property that names its values (an
    /// enum) completes to them.
    pub fn schema(mut self, schema: &Value) -> Self {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return self;
        };
        self.arguments = properties
            .iter()
            .map(|(name, property)| {
                let mut argument =
                    PromptArgument::new(name).with_required(required.contains(&name.as_str()));
                if let Some(description) = property.get("description").and_then(Value::as_str) {
                    argument = argument.with_description(description);
                }
                if let Some(values) = enum_values(schema, property) {
                    self.completers
                        .entry(name.clone())
                        .or_insert_with(|| Completer::Values(values.into()));
                }
                argument
            })
            .collect();
        self
    }

    /// How the messages are made from the arguments the client gave (strings, by name).
    pub fn get<F, Fut>(mut self, get: F) -> Self
    where
        F: Fn(JsonObject) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<PromptMessage>, PromptError>> + Send + 'static,
    {
        self.getter = Arc::new(
            move |arguments, _| -> BoxFuture<'static, Result<Vec<PromptMessage>, PromptError>> {
                Box::pin(get(arguments))
            },
        );
        self
    }

    /// Like [`get`](Self::get), for a prompt that asks the client before it answers: `get` also gets
    /// the request's [`PromptContext`].
    ///
    /// ```
    /// use yiem_core::ask::{ElicitationAnswer, Questions};
    /// use yiem_core::mcp::{McpPrompt, PromptContext, PromptError, PromptMessage, Role};
    ///
    /// let framed = McpPrompt::new("framed").asking(|_arguments, ctx: PromptContext| async move {
    ///     let form = serde_json::json!({"type": "object", "properties": {"context": {"type": "string"}}});
    ///     let answers = ctx
    ///         .ask(Questions::new().form_with_schema("user_context", "What context?", form))
    ///         .await
    ///         .map_err(|error| PromptError::Failed(error.to_string()))?;
    ///     let context = match answers.form::<serde_json::Value>("user_context") {
    ///         Ok(ElicitationAnswer::Accept(form)) => form["context"].as_str().unwrap_or("").to_owned(),
    ///         _ => "none".into(),
    ///     };
    ///     Ok(vec![PromptMessage::new_text(Role::User, format!("Context: {context}"))])
    /// });
    /// assert_eq!(framed.name(), "framed");
    /// ```
    pub fn asking<F, Fut>(mut self, get: F) -> Self
    where
        F: Fn(JsonObject, PromptContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<PromptMessage>, PromptError>> + Send + 'static,
    {
        self.getter = Arc::new(
            move |arguments, ctx| -> BoxFuture<'static, Result<Vec<PromptMessage>, PromptError>> {
                Box::pin(get(arguments, ctx))
            },
        );
        self
    }

    /// Completions of the argument `argument` (`completion/complete`): `complete` gets what the client
    /// typed so far and returns candidates; the server keeps those that start with it. Over an enum's
    /// variants, which complete without it.
    pub fn complete(
        mut self,
        argument: impl Into<String>,
        complete: impl Fn(&str) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.completers
            .insert(argument.into(), Completer::function(complete));
        self
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn listed(&self) -> Prompt {
        let arguments = (!self.arguments.is_empty()).then(|| self.arguments.clone());
        let mut prompt = Prompt::new(&self.name, self.description.clone(), arguments);
        prompt.title.clone_from(&self.title);
        prompt
    }

    /// The messages for `arguments`: an argument the prompt does not have is refused by name, before
    /// the function runs.
    pub(crate) async fn messages(
        &self,
        arguments: JsonObject,
        ctx: PromptContext,
    ) -> Result<Vec<PromptMessage>, PromptError> {
        if let Some(unknown) = arguments.keys().find(|name| {
            !self
                .arguments
                .iter()
                .any(|argument| &argument.name == *name)
        }) {
            let known: Vec<&str> = self.arguments.iter().map(|a| a.name.as_str()).collect();
            return Err(PromptError::InvalidArguments(format!(
                "the prompt `{}` has no argument `{unknown}`; its arguments: {}",
                self.name,
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )));
        }
        if let Some(missing) = self.arguments.iter().find(|argument| {
            argument.required == Some(true) && !arguments.contains_key(&argument.name)
        }) {
            return Err(PromptError::InvalidArguments(format!(
                "the prompt `{}` needs the argument `{}`",
                self.name, missing.name
            )));
        }
        (self.getter)(arguments, ctx).await
    }
}

/// What a `#[prompt]` function may return: `String` or `&'static str` (one user message of text),
/// `PromptMessage`, `Vec<PromptMessage>`, or `Result<T, E>` of one of them with `E: Display`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not something a #[prompt] function can return",
    note = "return `String` (one user message), `PromptMessage`, `Vec<PromptMessage>`, or a `Result` of one of them whose error is `Display`"
)]
pub trait IntoPromptMessages {
    /// The messages, or the error message.
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, PromptError>;
}

impl IntoPromptMessages for Vec<PromptMessage> {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, PromptError> {
        Ok(self)
    }
}

impl IntoPromptMessages for PromptMessage {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, PromptError> {
        Ok(vec![self])
    }
}

impl IntoPromptMessages for String {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, PromptError> {
        Ok(vec![PromptMessage::new_text(Role::User, self)])
    }
}

impl IntoPromptMessages for &'static str {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, PromptError> {
        Ok(vec![PromptMessage::new_text(Role::User, self)])
    }
}

impl<T: IntoPromptMessages, E: fmt::Display> IntoPromptMessages for Result<T, E> {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, PromptError> {
        self.map_err(|error| PromptError::Failed(error.to_string()))
            .and_then(IntoPromptMessages::into_prompt_messages)
    }
}
