//! Reading tool calls out of assistant messages in both OpenAI shapes.

use serde_json::json;
use yiem_core::llm::extract_tool_calls;

#[test]
fn an_openai_chat_message_with_a_tool_calls_array() {
    let message = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"text.txt\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "write", "arguments": {"path": "text.md"}}}
        ]
    });
    let calls = extract_tool_calls(&message);
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_a", "read")
    );
    assert_eq!(calls[0].arguments, json!("{\"path\":\"text.txt\"}"));
    assert_eq!(calls[1].arguments, json!({"path": "text.md"}));
}

#[test]
fn content_blocks_in_both_shapes_keep_their_order() {
    let blocks = json!([
        {"type": "tool_call", "id": "one", "name": "first", "arguments": {}},
        {"type": "text", "text": "between"},
        {"type": "tool_calls", "tool_calls": [
            {"id": "two", "function": {"name": "second", "arguments": "{}"}},
            {"id": "three", "function": {"name": "third", "arguments": "not json"}}
        ]}
    ]);
    let calls = extract_tool_calls(&blocks);
    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["one", "two", "three"]);
    assert_eq!(
        calls[2].arguments,
        json!("not json"),
        "kept as sent; it fails when the call runs"
    );
}

#[test]
fn a_missing_or_empty_id_gets_a_fresh_uuid() {
    let blocks = json!([
        {"type": "tool_call", "name": "a", "arguments": {}},
        {"type": "tool_call", "id": "", "name": "b", "arguments": {}}
    ]);
    let calls = extract_tool_calls(&blocks);
    assert_ne!(calls[0].id, calls[1].id);
    for call in &calls {
        assert!(uuid_like(&call.id), "{}", call.id);
    }
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36 && id.chars().filter(|c| *c == '-').count() == 4
}

#[test]
fn a_message_without_tool_calls_gives_none() {
    assert!(extract_tool_calls(&json!({"role": "assistant", "content": "hi"})).is_empty());
    assert!(extract_tool_calls(&json!([{"type": "text", "text": "hi"}])).is_empty());
    assert!(extract_tool_calls(&json!("hi")).is_empty());
}
