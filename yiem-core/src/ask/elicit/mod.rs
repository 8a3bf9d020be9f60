//! Asking the person behind a call a question while it runs (elicitation), and logging to them: the
//! question ([`Elicitation`]), its answer ([`ElicitationAnswer`]), who answers ([`ElicitationHandler`]),
//! why nobody could ([`ElicitError`]) and the levels of a log message ([`LogLevel`]).
//!
//! A tool asks through its [`ToolContext`](crate::tool::ToolContext) ([`elicit`](crate::tool::ToolContext::elicit),
//! [`elicit_with_schema`](crate::tool::ToolContext::elicit_with_schema)) and logs with
//! [`log`](crate::tool::ToolContext::log). Who is asked depends on where the call runs:
//!
//! - **over MCP** (`mcp::McpServer`): the client, when it declared the `elicitation` capability (form
//!   mode) — with `elicitation/create` before the 2026-07-28 revision (stdio, or HTTP with sessions),
//!   by answering the call `input_required` from 2026-07-28 on; log messages become
//!   `notifications/message` at or above the level the client asked for.
//! - **in an agent or an executor**: the [`ElicitationHandler`] given to
//!   [`ToolExecutor::with_elicitation`](crate::exec::ToolExecutor::with_elicitation), if any.
//! - **in an [`Agent`](crate::agent::Agent) (or the durable runner) without a handler**: the run pauses on
//!   the question as on an approval ([`RunStop::AwaitingAnswer`](crate::agent::RunStop::AwaitingAnswer)); the
//!   call that asked is stopped at the question and runs again from the start once it is answered
//!   ([`Agent::answer`](crate::agent::Agent::answer)).
//! - otherwise (an executor without a handler, a call in hand, a client without the capability, one of
//!   a revision before 2026-07-28 over HTTP without sessions): nobody — [`ElicitError::CannotAsk`], with
//!   why.
//!
//! Log messages always go to `tracing` too (target `yiem::tool`).
//!
//! An `mcp::McpClient` answers a server's questions with the same
//! [`ElicitationHandler`], given to `McpClientBuilder::elicitation`.

/// Several questions at once, under the asker's keys (the vocabulary of [`Asker::ask`]).
pub(crate) mod batch;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ask::elicit::batch::{Answer, Answers, Question, Root};
use crate::ask::sample::{Sampling, SamplingAnswer, SamplingHandler};

/// A question for the person behind a call: the message and the form's schema (a flat JSON object schema
/// of strings, numbers, integers, booleans and enums, per the MCP specification).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Elicitation {
    /// Who asks: the MCP server's name as the client gives it, or, for a tool in an agent, the name of
    /// the store the tool runs in (empty when it runs in none).
    pub server: String,
    /// What is asked, written by the server or the tool: escape it before showing it in a terminal.
    pub message: String,
    /// The requested schema (`{"type":"object","properties":{…},"required":[…]}`).
    pub schema: Value,
}

impl Elicitation {
    /// The question `message` from `server`, with the form `schema`.
    pub fn new(server: impl Into<String>, message: impl Into<String>, schema: Value) -> Self {
        Elicitation {
            server: server.into(),
            message: message.into(),
            schema,
        }
    }
}

/// The answer to an [`Elicitation`]: the form's content (`T`: the fields as JSON, or the type a tool
/// asked for with [`ToolContext::elicit`](crate::tool::ToolContext::elicit)), or no answer. As JSON, MCP's
/// elicitation result: `{"action": "accept", "content": {…}}`, `{"action": "decline"}`,
/// `{"action": "cancel"}`.
///
/// ```
/// use serde_json::json;
/// use yiem_core::ask::ElicitationAnswer;
///
/// let answer: ElicitationAnswer = serde_json::from_value(json!({"action": "accept", "content": {"n": 2}})).unwrap();
/// assert_eq!(answer, ElicitationAnswer::Accept(json!({"n": 2}).as_object().unwrap().clone()));
/// assert_eq!(serde_json::to_value(ElicitationAnswer::<()>::Decline).unwrap(), json!({"action": "decline"}));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", content = "content", rename_all = "lowercase")]
#[non_exhaustive]
pub enum ElicitationAnswer<T = Map<String, Value>> {
    /// The person answered; to a server, fields left out that have a `default` in the schema get it.
    Accept(T),
    /// The person declined to answer.
    Decline,
    /// The person dismissed the question without choosing.
    Cancel,
}

/// Answers an [`Elicitation`]: a tool's, for an executor
/// ([`ToolExecutor::with_elicitation`](crate::exec::ToolExecutor::with_elicitation)), or a server's, for an
/// `mcp::McpClient`. A closure `Fn(Elicitation) -> impl Future<Output =
/// ElicitationAnswer>` is one.
pub trait ElicitationHandler: Send + Sync + 'static {
    /// Asks the person and returns the answer.
    fn elicit(
        &self,
        question: Elicitation,
    ) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + 'static>>;
}

impl<F, Fut> ElicitationHandler for F
where
    F: Fn(Elicitation) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ElicitationAnswer> + Send + 'static,
{
    fn elicit(
        &self,
        question: Elicitation,
    ) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + 'static>> {
        Box::pin(self(question))
    }
}

/// Why a question got no answer: a tool returns it as its error (`?`), and the model reads the text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElicitError {
    /// Nobody can be asked where the call runs; the text says why.
    #[error("the user cannot be asked: {0}")]
    CannotAsk(String),
    /// No model can be asked for a completion where the call runs
    /// ([`ToolContext::sample`](crate::tool::ToolContext::sample)); the text says why.
    #[error("no model can be asked for a completion: {0}")]
    CannotSample(String),
    /// The client's roots cannot be listed where the call runs
    /// ([`Questions::roots`](crate::ask::Questions::roots)); the text says why.
    #[error("the client's roots cannot be listed: {0}")]
    CannotListRoots(String),
    /// The question could not be asked or answered (the connection failed, the client refused it).
    #[error("asking the user failed: {0}")]
    Failed(String),
    /// The question's type has no form schema MCP can show (it must be an object of plain fields).
    #[error("the question cannot be shown as a form: {0}")]
    InvalidQuestion(String),
    /// The person's answer does not fit the type asked for.
    #[error("the user's answer does not fit the question: {0}")]
    InvalidAnswer(String),
}

/// The level of a log message, as MCP's `logging` (syslog's severities, lowest first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detailed information for debugging.
    Debug,
    /// Progress and the like.
    Info,
    /// Normal but significant.
    Notice,
    /// Something to look at.
    Warning,
    /// Something failed.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// The level's name in MCP (`"warning"`).
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who a running call can reach besides its result: asked by [`ToolContext`](crate::tool::ToolContext)'s
/// `elicit`, `sample` and `log`, and by the MCP server's approval of a call (the same path).
pub(crate) trait Asker: Send + Sync {
    /// Asks `question`; the answer's content is the form's fields.
    fn elicit(
        &self,
        question: Elicitation,
    ) -> BoxFuture<'static, Result<ElicitationAnswer, ElicitError>>;

    /// Asks for a completion.
    fn sample(&self, request: Sampling) -> BoxFuture<'static, Result<SamplingAnswer, ElicitError>>;

    /// Sends a log message from `logger` (the tool's name), if the receiver wants this level.
    fn log(&self, level: LogLevel, logger: &str, data: &Value);

    /// Whether the receiver wants the call's updates ([`progress`](Self::progress)); most do not.
    fn takes_progress(&self) -> bool {
        false
    }

    /// Sends an update of the call ([`ToolContext::update`](crate::tool::ToolContext::update)), as the
    /// receiver shows progress (an MCP client's `notifications/progress`).
    fn progress(&self, _partial: &Arc<crate::result::AgentToolResult>) {}

    /// The asker of one call of a batch, when this one keeps something per call (an agent's paused
    /// questions do); `None`: the call asks this one.
    fn for_call(&self, _call: &crate::call::ToolCall) -> Option<Arc<dyn Asker>> {
        None
    }

    /// Cancelled when the call must stop where it is, because it asked a question that has no answer
    /// yet (it runs again once answered); `None` when this asker never stops a call.
    fn stopped(&self) -> Option<tokio_util::sync::CancellationToken> {
        None
    }

    /// Asks several questions, each under its key (see [`Questions`](crate::ask::Questions)). By
    /// default one after the other, in their order, through [`elicit`](Self::elicit) and
    /// [`sample`](Self::sample); roots cannot be listed. An asker that can send them together (an MCP
    /// client's `input_required` round) does.
    fn ask<'a>(
        &'a self,
        server: &'a str,
        questions: Vec<(String, Question)>,
    ) -> BoxFuture<'a, Answers> {
        Box::pin(ask_in_turn(self, server, questions, |_| {
            Box::pin(std::future::ready(Err(ElicitError::CannotListRoots(
                "this call runs where there are none (roots are an MCP client's)".into(),
            ))))
        }))
    }
}

/// Asks `questions` one after the other, in their order, through `asker`'s [`elicit`](Asker::elicit)
/// and [`sample`](Asker::sample), and `roots` for a roots question (given its key).
pub(crate) async fn ask_in_turn<'a, A: Asker + ?Sized>(
    asker: &'a A,
    server: &'a str,
    questions: Vec<(String, Question)>,
    roots: impl Fn(String) -> BoxFuture<'a, Result<Vec<Root>, ElicitError>>,
) -> Answers {
    let mut answers = Answers::new();
    for (key, question) in questions {
        let answer = match question {
            Question::Form { message, schema } => asker
                .elicit(Elicitation::new(server, message, schema))
                .await
                .map(Answer::Form),
            Question::Sample(request) => asker.sample(request).await.map(Answer::Sample),
            Question::Roots => roots(key.clone()).await.map(Answer::Roots),
        };
        answers = answers.with(key, answer);
    }
    answers
}

/// An executor's handlers, as the [`Asker`] of its calls (log messages go to `tracing` only).
#[derive(Clone, Default)]
pub(crate) struct HandlerAsker {
    pub(crate) elicitation: Option<Arc<dyn ElicitationHandler>>,
    pub(crate) sampling: Option<Arc<dyn SamplingHandler>>,
}

impl fmt::Debug for HandlerAsker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerAsker")
            .field("elicitation", &self.elicitation.is_some())
            .field("sampling", &self.sampling.is_some())
            .finish()
    }
}

impl Asker for HandlerAsker {
    fn elicit(
        &self,
        question: Elicitation,
    ) -> BoxFuture<'static, Result<ElicitationAnswer, ElicitError>> {
        let Some(handler) = &self.elicitation else {
            return Box::pin(std::future::ready(Err(ElicitError::CannotAsk(
                "no elicitation handler was given to the agent or executor this call runs in, so no \
                 person can be asked; go on without the answer, or tell the user what you need"
                    .into(),
            ))));
        };
        let answer = handler.elicit(question);
        Box::pin(async move { Ok(answer.await) })
    }

    fn sample(&self, request: Sampling) -> BoxFuture<'static, Result<SamplingAnswer, ElicitError>> {
        let Some(handler) = &self.sampling else {
            return Box::pin(std::future::ready(Err(ElicitError::CannotSample(
                "no sampling handler was given to the agent or executor this call runs in".into(),
            ))));
        };
        let answer = handler.sample(request);
        Box::pin(async move { Ok(answer.await) })
    }

    fn log(&self, _level: LogLevel, _logger: &str, _data: &Value) {}
}

impl fmt::Debug for dyn Asker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Asker")
    }
}

/// Checks an accepted answer against its question's form: every field is one of the form's, of its
/// type (and among its choices); fields left out get the form's default; a required field without
/// one is missing. Gives the content the tool gets, or the field and what is wrong with it.
pub(crate) fn fit(
    schema: &Value,
    mut content: Map<String, Value>,
) -> Result<Map<String, Value>, (String, String)> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (name, value) in &content {
        let Some(property) = properties.get(name) else {
            let fields: Vec<&str> = properties.keys().map(String::as_str).collect();
            return Err((
                name.clone(),
                format!(
                    "it is not a field of the form (its fields: {})",
                    if fields.is_empty() {
                        "none".to_owned()
                    } else {
                        fields.join(", ")
                    }
                ),
            ));
        };
        if let Err(why) = fits(property, value) {
            return Err((name.clone(), why));
        }
    }
    for (name, property) in properties {
        if !content.contains_key(name)
            && let Some(default) = property.get("default")
        {
            content.insert(name.clone(), default.clone());
        }
    }
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if let Some(name) = required
        .iter()
        .filter_map(Value::as_str)
        .find(|name| !content.contains_key(*name))
    {
        return Err((name.to_owned(), "it is required and was not given".into()));
    }
    Ok(content)
}

/// Whether `value` fits one field of a form.
fn fits(property: &Value, value: &Value) -> Result<(), String> {
    let kind = property.get("type").and_then(Value::as_str).unwrap_or("");
    let ok = match kind {
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "array" => value.is_array(),
        _ => true,
    };
    if !ok {
        return Err(format!("expected {}, got {}", a(kind), shown(value)));
    }
    let in_range = |bound: &str, ok: fn(f64, f64) -> bool| match (
        property.get(bound).and_then(Value::as_f64),
        value.as_f64(),
    ) {
        (Some(bound_value), Some(number)) if !ok(number, bound_value) => Err(format!(
            "{number} is not within the form's {bound} {bound_value}"
        )),
        _ => Ok(()),
    };
    in_range("minimum", |n, b| n >= b)?;
    in_range("maximum", |n, b| n <= b)?;
    let offered = choices(property);
    if let (Some(choices), Some(text)) = (&offered, value.as_str())
        && !choices.iter().any(|choice| choice == text)
    {
        return Err(format!(
            "`{text}` is not one of its choices ({})",
            choices.join(", ")
        ));
    }
    if let Some(items) = value.as_array() {
        let item_choices = property.get("items").and_then(choices);
        for item in items {
            match (item.as_str(), &item_choices) {
                (Some(text), Some(choices)) if !choices.iter().any(|c| c == text) => {
                    return Err(format!(
                        "`{text}` is not one of its choices ({})",
                        choices.join(", ")
                    ));
                }
                (None, _) => {
                    return Err(format!("expected a list of strings, got {}", shown(item)));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// The choices of an enum field: `enum`, or the `const`s of `oneOf`/`anyOf` (titled choices).
fn choices(property: &Value) -> Option<Vec<String>> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        return Some(
            values
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        );
    }
    let titled = property
        .get("oneOf")
        .or_else(|| property.get("anyOf"))
        .and_then(Value::as_array)?;
    Some(
        titled
            .iter()
            .filter_map(|choice| choice.get("const").and_then(Value::as_str))
            .map(str::to_owned)
            .collect(),
    )
}

fn a(kind: &str) -> String {
    match kind {
        "integer" => "an integer".into(),
        "array" => "a list".into(),
        other => format!("a {other}"),
    }
}

fn shown(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(_) => format!("the number {value}"),
        Value::String(_) => format!("the string {value}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde_json::json;

    use crate::ask::elicit::ElicitError;
    use crate::dialect::elicitation_schema;

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Size {
        Small,
        Large,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Order {
        /// How many.
        count: u32,
        size: Size,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Nested {
        order: Order,
    }

    #[test]
    fn a_struct_of_plain_fields_is_a_flat_form_with_its_enums_inlined() {
        let schema = elicitation_schema(&schemars::schema_for!(Order).to_value()).unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["count", "size"]));
        assert_eq!(
            schema["properties"]["size"]["enum"],
            json!(["small", "large"])
        );
        assert_eq!(schema["properties"]["count"]["type"], "integer");
        assert_eq!(schema.get("$defs"), None);
        assert_eq!(schema.get("$schema"), None);
    }

    #[test]
    fn a_field_that_is_an_object_is_refused_naming_the_field() {
        let refused = elicitation_schema(&schemars::schema_for!(Nested).to_value()).unwrap_err();
        assert_eq!(
            ElicitError::InvalidQuestion(refused),
            ElicitError::InvalidQuestion(
                "the field `order` is an object; a form holds only strings, numbers, integers, \
                 booleans and enums of strings"
                    .into()
            )
        );
    }
}
