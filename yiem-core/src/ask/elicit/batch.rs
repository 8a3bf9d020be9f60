//! Several questions at once, each under a key the asker chooses ([`Questions`]), and their answers by
//! key ([`Answers`]): a form for the person, a completion from their model and the client's roots
//! ([`Root`]) in one round. A tool asks with [`ToolContext::ask`](crate::tool::ToolContext::ask), an MCP
//! prompt with [`PromptContext::ask`](crate::mcp::PromptContext::ask).

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ask::elicit::{ElicitError, ElicitationAnswer};
use crate::ask::sample::{Sampling, SamplingAnswer};

/// One question of a [`Questions`] batch.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Question {
    /// A form for the person (MCP's `elicitation/create`, form mode): the message and the form's schema.
    Form {
        /// What is asked, written by the asker.
        message: String,
        /// The form's schema (a flat object of strings, numbers, integers, booleans and enums).
        schema: Value,
    },
    /// A completion from the person's model (MCP's `sampling/createMessage`).
    Sample(Sampling),
    /// The client's roots: the directories or files it lets the server work in (MCP's `roots/list`).
    Roots,
}

/// Questions asked together, each under a key of the asker's choosing: over MCP (2026-07-28) they go to
/// the client in one `input_required` round and come back by key, in any order; to a client of an
/// earlier revision, one request each, in the order added; in an agent or an executor, to its handlers
/// in that order. A question that cannot be asked where the call runs (no client capability, no handler,
/// roots in an agent) is not sent, and its answer is the [`ElicitError`] that says why.
///
/// MCP deprecates sampling and roots in its 2026-07-28 revision (SEP-2577): they are asked of clients
/// that still declare the capability, and refused with why otherwise.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use yiem_core::ask::{Questions, Sampling};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Name {
///     /// Your name.
///     name: String,
/// }
///
/// let questions = Questions::new()
///     .form::<Name>("user_name", "What is your name?")
///     .sample("greeting", Sampling::prompt("Write a greeting", 50))
///     .roots("client_roots");
/// assert_eq!(questions.keys().collect::<Vec<_>>(), ["user_name", "greeting", "client_roots"]);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Questions {
    pub(crate) asked: Vec<(String, Question)>,
    /// Why the batch cannot be asked as built (a form that is no form, a key used twice).
    pub(crate) invalid: Option<String>,
}

impl Questions {
    /// No questions yet.
    pub fn new() -> Self {
        Questions::default()
    }

    /// Asks the person to fill in a `T` (a struct of plain fields, as for
    /// [`ToolContext::elicit`](crate::tool::ToolContext::elicit)) under `key`, showing `message`.
    pub fn form<T: schemars::JsonSchema>(
        self,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        match crate::dialect::elicitation_schema(&schemars::schema_for!(T).to_value()) {
            Ok(schema) => self.form_with_schema(key, message, schema),
            Err(why) => self.refused(why),
        }
    }

    /// Asks the person to fill in the form `schema` (an object of plain fields) under `key`.
    pub fn form_with_schema(
        self,
        key: impl Into<String>,
        message: impl Into<String>,
        schema: Value,
    ) -> Self {
        self.push(
            key.into(),
            Question::Form {
                message: message.into(),
                schema,
            },
        )
    }

    /// Asks the person's model for the completion `request` under `key`.
    pub fn sample(self, key: impl Into<String>, request: Sampling) -> Self {
        self.push(key.into(), Question::Sample(request))
    }

    /// Asks the client for its roots under `key`.
    pub fn roots(self, key: impl Into<String>) -> Self {
        self.push(key.into(), Question::Roots)
    }

    /// The keys, in the order the questions were added.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.asked.iter().map(|(key, _)| key.as_str())
    }

    /// The questions, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Question)> {
        self.asked
            .iter()
            .map(|(key, question)| (key.as_str(), question))
    }

    fn push(mut self, key: String, question: Question) -> Self {
        if self.asked.iter().any(|(asked, _)| *asked == key) {
            let why = format!("the key `{}` names two questions", key.escape_debug());
            return self.refused(why);
        }
        self.asked.push((key, question));
        self
    }

    fn refused(mut self, why: String) -> Self {
        self.invalid.get_or_insert(why);
        self
    }
}

/// A client's root: a directory or file it lets the server work in (MCP's `roots/list` result).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// Where it is (a `file://` URI).
    pub uri: String,
    /// What the client calls it, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// The root at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            name: None,
        }
    }

    /// The same root, named `name`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// The answer to one [`Question`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Answer {
    /// A form's answer; an accepted one fits the form (defaults filled in).
    Form(ElicitationAnswer),
    /// A completion, or its refusal.
    Sample(SamplingAnswer),
    /// The client's roots.
    Roots(Vec<Root>),
}

/// The answers to a [`Questions`] batch, by key: each an [`Answer`], or the [`ElicitError`] that says why
/// its question got none.
///
/// ```
/// use yiem_core::ask::{Answer, Answers, ElicitationAnswer, Root};
///
/// let answers = Answers::new()
///     .with("client_roots", Ok(Answer::Roots(vec![Root::new("file:///src").name("src")])))
///     .with("user_name", Ok(Answer::Form(ElicitationAnswer::Decline)));
/// assert_eq!(answers.roots("client_roots").unwrap()[0].uri, "file:///src");
/// assert_eq!(answers.form::<serde_json::Value>("user_name").unwrap(), ElicitationAnswer::Decline);
/// assert!(answers.sample("greeting").is_err()); // not asked
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answers {
    answers: BTreeMap<String, Result<Answer, ElicitError>>,
}

impl Answers {
    /// No answers (for tests and for askers that answer themselves).
    pub fn new() -> Self {
        Answers::default()
    }

    /// The same answers, with `answer` under `key`.
    pub fn with(mut self, key: impl Into<String>, answer: Result<Answer, ElicitError>) -> Self {
        self.answers.insert(key.into(), answer);
        self
    }

    /// The answer under `key`, as it came.
    pub fn get(&self, key: &str) -> Option<&Result<Answer, ElicitError>> {
        self.answers.get(key)
    }

    /// The keys answered, in key order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.answers.keys().map(String::as_str)
    }

    /// The form answered under `key`, read as a `T`: [`ElicitError::InvalidAnswer`] when its fields do
    /// not make a `T`, or when `key` is no form's; the question's own error when it got no answer.
    pub fn form<T: DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<ElicitationAnswer<T>, ElicitError> {
        match self.answer(key)? {
            Answer::Form(ElicitationAnswer::Accept(content)) => {
                serde_json::from_value(Value::Object(content.clone()))
                    .map(ElicitationAnswer::Accept)
                    .map_err(|error| {
                        ElicitError::InvalidAnswer(format!("the answer `{key}`: {error}"))
                    })
            }
            Answer::Form(ElicitationAnswer::Decline) => Ok(ElicitationAnswer::Decline),
            Answer::Form(ElicitationAnswer::Cancel) => Ok(ElicitationAnswer::Cancel),
            _ => Err(not_a("form", key)),
        }
    }

    /// The completion answered under `key`.
    pub fn sample(&self, key: &str) -> Result<SamplingAnswer, ElicitError> {
        match self.answer(key)? {
            Answer::Sample(answer) => Ok(answer.clone()),
            _ => Err(not_a("completion", key)),
        }
    }

    /// The roots answered under `key`.
    pub fn roots(&self, key: &str) -> Result<Vec<Root>, ElicitError> {
        match self.answer(key)? {
            Answer::Roots(roots) => Ok(roots.clone()),
            _ => Err(not_a("roots question", key)),
        }
    }

    fn answer(&self, key: &str) -> Result<&Answer, ElicitError> {
        match self.answers.get(key) {
            Some(Ok(answer)) => Ok(answer),
            Some(Err(error)) => Err(error.clone()),
            None => Err(ElicitError::InvalidAnswer(format!(
                "no question was asked under the key `{}`",
                key.escape_debug()
            ))),
        }
    }
}

fn not_a(what: &str, key: &str) -> ElicitError {
    ElicitError::InvalidAnswer(format!(
        "the question under `{}` was not a {what}",
        key.escape_debug()
    ))
}

/// Checks an accepted form answer against its form (the one [`fit`](crate::ask::elicit::fit)), naming
/// the answer's key and the field that does not fit.
pub(crate) fn fitted(
    key: &str,
    schema: &Value,
    answer: ElicitationAnswer,
) -> Result<ElicitationAnswer, ElicitError> {
    match answer {
        ElicitationAnswer::Accept(content) => crate::ask::elicit::fit(schema, content)
            .map(ElicitationAnswer::Accept)
            .map_err(|(field, reason)| {
                ElicitError::InvalidAnswer(format!(
                    "the field `{}` of the answer `{}` does not fit the form: {reason}",
                    field.escape_debug(),
                    key.escape_debug()
                ))
            }),
        other => Ok(other),
    }
}

/// Asks `questions` through `asker` (none: nobody can be asked) for a call or a request of `server`:
/// what [`ToolContext::ask`](crate::tool::ToolContext::ask) and
/// [`PromptContext::ask`](crate::mcp::PromptContext::ask) do. Every accepted form answer is checked
/// against its form here, whoever gave it.
pub(crate) async fn ask_through(
    asker: Option<&dyn crate::ask::elicit::Asker>,
    server: &str,
    questions: Questions,
) -> Result<Answers, ElicitError> {
    if let Some(why) = questions.invalid {
        return Err(ElicitError::InvalidQuestion(why));
    }
    let Some(asker) = asker else {
        return Err(ElicitError::CannotAsk(
            "this runs where nobody can be asked (no MCP client that accepts questions, no \
             elicitation handler); go on without the answers, or tell the user what you need"
                .into(),
        ));
    };
    let mut asked = questions.asked;
    for (_, question) in &mut asked {
        if let Question::Sample(request) = question
            && request.server.is_empty()
        {
            server.clone_into(&mut request.server);
        }
    }
    let forms: Vec<(String, Value)> = asked
        .iter()
        .filter_map(|(key, question)| match question {
            Question::Form { schema, .. } => Some((key.clone(), schema.clone())),
            _ => None,
        })
        .collect();
    let mut answers = asker.ask(server, asked).await;
    for (key, schema) in forms {
        if let Some(Ok(Answer::Form(answer))) = answers.answers.remove(&key) {
            let answer = fitted(&key, &schema, answer).map(Answer::Form);
            answers.answers.insert(key, answer);
        }
    }
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::ask::elicit::{Elicitation, HandlerAsker};

    fn cups() -> Value {
        json!({
            "type": "object",
            "properties": {"cups": {"type": "integer", "maximum": 10}},
            "required": ["cups"],
        })
    }

    /// An asker whose handler answers every form with `content`.
    fn answering(content: Value) -> HandlerAsker {
        HandlerAsker {
            elicitation: Some(Arc::new(move |_question: Elicitation| {
                let content = content.as_object().unwrap().clone();
                async move { ElicitationAnswer::Accept(content) }
            })),
            sampling: None,
        }
    }

    #[tokio::test]
    async fn a_handlers_answer_outside_its_form_is_refused_under_its_key_and_the_others_stand() {
        let asker = answering(json!({"cups": 11}));
        let questions = Questions::new()
            .form_with_schema("cups", "How many?", cups())
            .sample("greeting", Sampling::prompt("Hi", 5))
            .roots("client_roots");
        let answers = ask_through(Some(&asker), "s", questions).await.unwrap();
        assert_eq!(
            answers.form::<Value>("cups").unwrap_err(),
            ElicitError::InvalidAnswer(
                "the field `cups` of the answer `cups` does not fit the form: 11 is not within \
                 the form's maximum 10"
                    .into()
            )
        );
        assert!(matches!(
            answers.sample("greeting"),
            Err(ElicitError::CannotSample(_))
        ));
        assert!(matches!(
            answers.roots("client_roots"),
            Err(ElicitError::CannotListRoots(_))
        ));
        let fits = answering(json!({"cups": 2}));
        let questions = Questions::new().form_with_schema("cups", "How many?", cups());
        let answers = ask_through(Some(&fits), "s", questions).await.unwrap();
        assert_eq!(
            answers.form::<Value>("cups").unwrap(),
            ElicitationAnswer::Accept(json!({"cups": 2}))
        );
    }

    #[tokio::test]
    async fn a_key_used_twice_or_nobody_to_ask_refuses_the_whole_batch() {
        let twice = Questions::new().roots("k").roots("k");
        let asker = answering(json!({}));
        assert_eq!(
            ask_through(Some(&asker), "s", twice).await.unwrap_err(),
            ElicitError::InvalidQuestion("the key `k` names two questions".into())
        );
        let nobody = ask_through(None, "s", Questions::new().roots("k")).await;
        assert!(matches!(nobody, Err(ElicitError::CannotAsk(_))));
    }
}
