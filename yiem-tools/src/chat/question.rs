//! A tool's question, answered inline ([`ask`]): the run waits on it (`RunStop::AwaitingAnswer`) — a
//! question of the chat's own tools, or one an MCP server asks through the call that waits for it (an
//! approval of its own, say) — and the person fills in the form a field at a time.
//!
//! Each field shows its title or description, its type, its choices and its default (prefilled: Enter
//! keeps it); an optional field left empty is left out. First the person chooses to answer or to
//! decline; Ctrl-C cancels the question, and the end of input too.

use serde_json::{Map, Number, Value};
use yiem_core::{agent::PendingQuestion, ask::ElicitationAnswer};

use super::input::{Input, Line};
use super::render::Renderer;
use super::safe;

/// The person's answer to `question`.
pub fn ask(input: &mut Input, out: &mut Renderer, question: &PendingQuestion) -> ElicitationAnswer {
    out.note(&format!(
        "[{} asks: {}]",
        safe::line(&question.tool_name),
        safe::line(&question.message)
    ));
    loop {
        match input.ask("[a]nswer / [d]ecline: ", "") {
            Line::Text(choice) => match choice.trim().to_ascii_lowercase().as_str() {
                "a" | "answer" | "" => break,
                "d" | "decline" => return ElicitationAnswer::Decline,
                _ => out.error("answer a (fill in the form) or d (decline to answer)"),
            },
            Line::Interrupted | Line::End => return ElicitationAnswer::Cancel,
        }
    }
    let properties = question.schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = question.schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields = Map::new();
    for (name, field) in &properties {
        match ask_field(input, out, name, field, required.contains(&name.as_str())) {
            Ok(Some(value)) => {
                fields.insert(name.clone(), value);
            }
            Ok(None) => {}
            Err(()) => return ElicitationAnswer::Cancel,
        }
    }
    ElicitationAnswer::Accept(fields)
}

/// One field's value (`None`: left out), or `Err` when the person cancelled.
fn ask_field(
    input: &mut Input,
    out: &mut Renderer,
    name: &str,
    field: &Value,
    required: bool,
) -> Result<Option<Value>, ()> {
    let kind = field["type"].as_str().unwrap_or("string");
    let choices: Vec<&str> = field["enum"]
        .as_array()
        .map(|values| values.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let label = field["title"]
        .as_str()
        .or_else(|| field["description"].as_str())
        .unwrap_or(name);
    let mut prompt = format!("{} ({}", safe::line(label), safe::line(name));
    match (kind, choices.is_empty()) {
        (_, false) => prompt.push_str(&format!(": {}", safe::line(&choices.join(" / ")))),
        ("boolean", _) => prompt.push_str(": y / n"),
        _ => prompt.push_str(&format!(", {kind}")),
    }
    if !required {
        prompt.push_str(", optional");
    }
    prompt.push_str("): ");
    let initial = match &field["default"] {
        Value::Null => String::new(),
        Value::Bool(true) => "y".into(),
        Value::Bool(false) => "n".into(),
        Value::String(text) => safe::line(text),
        other => other.to_string(),
    };
    loop {
        let text = match input.ask(&prompt, &initial) {
            Line::Text(text) => text.trim().to_owned(),
            Line::Interrupted | Line::End => return Err(()),
        };
        if text.is_empty() && !required {
            return Ok(None);
        }
        match parse(kind, &choices, &text) {
            Ok(value) => return Ok(Some(value)),
            Err(problem) => out.error(&problem),
        }
    }
}

/// `text` as a value of the field's type, or what is wrong with it.
fn parse(kind: &str, choices: &[&str], text: &str) -> Result<Value, String> {
    if !choices.is_empty() {
        return match choices.contains(&text) {
            true => Ok(Value::String(text.to_owned())),
            false => Err(format!("choose one of: {}", choices.join(", "))),
        };
    }
    match kind {
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("answer y or n".into()),
        },
        "integer" => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "a whole number, such as 3".into()),
        "number" => text
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| "a number, such as 2.5".into()),
        _ => Ok(Value::String(text.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::parse;

    #[test]
    fn each_kind_of_field_reads_its_own_words_and_says_what_it_wants_otherwise() {
        assert_eq!(parse("boolean", &[], "Y"), Ok(json!(true)));
        assert_eq!(parse("boolean", &[], "no"), Ok(json!(false)));
        assert_eq!(parse("boolean", &[], "maybe"), Err("answer y or n".into()));
        assert_eq!(parse("integer", &[], "42"), Ok(json!(42)));
        assert_eq!(
            parse("integer", &[], "4.2"),
            Err("a whole number, such as 3".into())
        );
        assert_eq!(parse("number", &[], "2.5"), Ok(json!(2.5)));
        assert_eq!(parse("string", &["red", "blue"], "blue"), Ok(json!("blue")));
        assert_eq!(
            parse("string", &["red", "blue"], "green"),
            Err("choose one of: red, blue".into())
        );
        assert_eq!(parse("string", &[], "anything"), Ok(json!("anything")));
    }
}
