//! A free-text tool: `free_text` and `grammar(...)` on a fn whose one `String` is the text, beside the
//! context, state and `validate`.
use yiem_core::{tool, tool::{GrammarSyntax, State, TextFormat, ToolContext}, store::ToolStore};

struct Prefix(&'static str);

fn short(text: &String) -> Result<(), String> {
    if text.len() <= 20 { Ok(()) } else { Err("at most 20 characters".into()) }
}

/// Echo the text.
#[tool(free_text, validate = short)]
async fn echo(text: String) -> String {
    text
}

/// Run a query.
#[tool(grammar(lark = "start: \"SELECT \" /[a-z]+/"))]
async fn run_sql(_ctx: ToolContext, State(prefix): State<Prefix>, query: std::string::String) -> String {
    format!("{}{query}", prefix.0)
}

/// Save a year.
#[tool(grammar(regex = "[0-9]{4}"))]
fn save_year(year: String) -> String {
    year
}

fn main() {
    assert_eq!(echo_tool().provider_options().free_text, Some(TextFormat::Text));
    let grammar = run_sql_tool().provider_options().free_text.clone().unwrap();
    assert_eq!(grammar.grammar().unwrap().syntax(), GrammarSyntax::Lark);
    assert_eq!(save_year_tool().input_schema()["required"], serde_json::json!(["input"]));
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let store = ToolStore::new("s").with_state(Prefix("ran "));
        let ran = run_sql_tool()
            .try_execute(store.context("c1"), serde_json::json!({"input": "SELECT x"}))
            .await
            .unwrap();
        assert_eq!(ran.text_content(), "ran SELECT x");
        let long = echo_tool().execute("c2", serde_json::json!({"input": "x".repeat(30)})).await;
        assert!(long.is_error);
        let year = save_year_tool().execute("c3", serde_json::json!({"input": "2026"})).await;
        assert_eq!(year.text_content(), "2026");
        let word = save_year_tool().execute("c4", serde_json::json!({"input": "soon"})).await;
        assert!(word.is_error, "{}", word.text_content());
    });
}
