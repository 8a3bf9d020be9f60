//! Free-text tools (`#[tool(free_text)]`, `#[tool(grammar(...))]`) outside a provider with custom tools:
//! with the scripted model they are tools of one string parameter `input`, yiem checks a regex grammar
//! itself (this crate builds `schema-validation`), and `check_tools` finds a grammar that cannot be used
//! or an example outside it.

use serde_json::json;
use yiem_core::{
    agent::{Agent, AgentSettings},
    llm::{ScriptedModel, ScriptedTurn},
    message::AgentMessage,
    store::{Dialect, ToolProblem, ToolStore, check_tools},
    tool,
};

/// Save a date.
#[tool(grammar(regex = r"\d{4}-\d{2}-\d{2}"))]
async fn save_date(date: String) -> String {
    format!("saved {date}")
}

/// Keep a note.
#[tool(free_text)]
async fn note(text: String) -> String {
    format!("noted {} characters", text.chars().count())
}

/// Broken on purpose: the regex does not compile.
#[tool(grammar(regex = r"\d{4}-("))]
async fn broken(text: String) -> String {
    text
}

/// An example outside the grammar.
#[tool(grammar(regex = "[0-9]{4}"), example = r#"{"input": "soon"}"#)]
async fn save_year(year: String) -> String {
    year
}

/// The tool results of an agent's conversation, in order: (is_error, text).
fn results(messages: &[AgentMessage]) -> Vec<(bool, String)> {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some((result.is_error(), result.text_content())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_scripted_model_calls_a_grammar_tool_as_a_function_and_yiem_checks_its_text() {
    let store = ToolStore::new("dates");
    store.register(save_date_tool()).unwrap();
    store.register(note_tool()).unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::tool_calls([
                ("save_date", json!({"input": "2026-12-24"})),
                ("save_date", json!({"input": "Christmas Eve"})),
                ("save_date", json!({"date": "2026-12-24"})),
                ("note", json!({"input": "any text at all \"quoted\"\n"})),
            ]),
            ScriptedTurn::text("Done."),
        ]))
        .tools(store)
        .build();
    agent.prompt("Save Christmas Eve.").await;
    assert_eq!(
        results(&agent.messages()),
        [
            (false, "saved 2026-12-24".to_owned()),
            (
                true,
                "invalid arguments for tool `save_date`: at `/input`: the text does not match the \
                 tool's regex grammar; send text the whole grammar matches: \\d{4}-\\d{2}-\\d{2}"
                    .to_owned()
            ),
            (
                true,
                "invalid arguments for tool `save_date` (2 problems):\n- at `/date`: unknown \
                 property `date`\n- missing required property `input` (expected a string)\nvalid \
                 properties: `input`"
                    .to_owned()
            ),
            (false, "noted 25 characters".to_owned()),
        ]
    );
}

#[test]
fn a_grammar_tool_is_one_string_parameter_in_every_dialect() {
    for dialect in Dialect::ALL {
        let definition = save_date_tool().definition(dialect).unwrap().to_string();
        assert!(definition.contains("\"input\""), "{dialect}: {definition}");
        assert!(
            definition.contains("text in the language of this regex grammar"),
            "{dialect}: {definition}"
        );
    }
}

#[test]
fn check_tools_finds_a_regex_that_does_not_compile_and_an_example_outside_the_grammar() {
    let report = check_tools(&[save_date_tool(), broken_tool(), save_year_tool()]).unwrap_err();
    match &report.problems[..] {
        [
            ToolProblem::InvalidGrammar { tool, detail, .. },
            ToolProblem::InvalidExample {
                tool: example_tool,
                index: 0,
                detail: example_detail,
                ..
            },
        ] => {
            assert_eq!(tool, "broken");
            assert!(detail.starts_with("regex parse error"), "{detail}");
            assert_eq!(example_tool, "save_year");
            assert!(
                example_detail.contains("the text does not match the tool's regex grammar"),
                "{example_detail}"
            );
        }
        other => panic!("{other:?}"),
    }
    // A call of the broken tool says what is wrong, for the model and the author.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let refused = runtime.block_on(broken_tool().execute("c1", json!({"input": "2026-"})));
    assert!(refused.is_error);
    assert!(
        refused
            .text_content()
            .contains("the tool's regex grammar does not compile"),
        "{}",
        refused.text_content()
    );
}
