//! The large-catalog scenario the tool-search tests share with the `catalog-resume` binary: a store of
//! 2,000 deferred tools (and `note`, which is not deferred) with the local `search_tools` tool, and a model
//! that is a pure function of the conversation, so a run paused in one process goes on in another.
//!
//! The model first searches ("send an invoice and refund a card payment", `k` 2), then calls the two
//! tools found, `send_invoice` and `refund_payment`, in one reply, then answers with their results.

use serde_json::{Value, json};
use yiem_core::catalog::{SEARCH_TOOLS, ToolSearch};
use yiem_core::{
    agent::{Agent, AgentRun, AgentSettings},
    llm::{ModelRequest, ScriptedModel, ScriptedTurn},
    message::AgentMessage,
    store::ToolStore,
    tool::{AgentTool, ToolContext},
};

/// How many generated tools the store holds beside the scenario's own.
pub const GENERATED: usize = 1998;

const DOMAINS: [&str; 20] = [
    "calendar", "crm", "storage", "tickets", "wiki", "chat", "repo", "build", "deploy", "metrics",
    "alerts", "dns", "vault", "queue", "search", "maps", "photos", "music", "notes", "contacts",
];
const VERBS: [&str; 10] = [
    "list", "get", "create", "update", "delete", "archive", "export", "import", "share", "watch",
];
const NOUNS: [&str; 10] = [
    "item", "record", "entry", "folder", "label", "comment", "member", "setting", "report", "link",
];

/// A tool that answers with its name and arguments.
fn echo(name: &str, description: &str, properties: Value) -> AgentTool {
    let answer = name.to_owned();
    AgentTool::builder(name)
        .description(description)
        .input_schema(
            json!({"type": "object", "properties": properties, "additionalProperties": false}),
        )
        .parallel()
        .handler(move |_ctx: ToolContext, args: Value| {
            let text = format!("{answer} done with {args}");
            async move { text }
        })
        .build()
        .expect("a valid definition")
}

/// The store: `note` (not deferred), `search_tools`, then 1,998 generated tools and `send_invoice` and
/// `refund_payment` among them (at positions 700 and 1,400), all deferred.
pub fn store() -> ToolStore {
    let store = ToolStore::new("catalog");
    store
        .register(echo(
            "note",
            "Write a note for the user.",
            json!({"text": {"type": "string"}}),
        ))
        .unwrap();
    store
        .register(ToolSearch::bm25().results(3).tool(&store))
        .unwrap();
    let mut generated = (0..GENERATED).map(|i| {
        let (domain, verb, noun) = (DOMAINS[i % 20], VERBS[(i / 20) % 10], NOUNS[(i / 200) % 10]);
        echo(
            &format!("{domain}_{verb}_{noun}_{i}"),
            &format!("{verb} a {noun} in the {domain} service (variant {i})."),
            json!({"id": {"type": "string", "description": format!("The {noun}'s id.")}}),
        )
    });
    let mut tools: Vec<AgentTool> = Vec::new();
    for at in 0..GENERATED + 2 {
        match at {
            700 => tools.push(echo(
                "send_invoice",
                "Send an invoice to a customer by e-mail.",
                json!({"customer": {"type": "string", "description": "Who pays."}}),
            )),
            1400 => tools.push(echo(
                "refund_payment",
                "Refund a card payment to the customer.",
                json!({"amount": {"type": "integer", "description": "In euros."}}),
            )),
            _ => tools.extend(generated.next()),
        }
    }
    let names: Vec<String> = tools.iter().map(|tool| tool.name().to_owned()).collect();
    for tool in tools {
        store.register(tool).unwrap();
    }
    assert_eq!(store.defer_loading(&names), GENERATED + 2);
    store
}

/// The model: search, then call what was found, then answer.
pub fn model() -> ScriptedModel {
    ScriptedModel::from_fn(|request: &ModelRequest| match request.messages.last() {
        Some(AgentMessage::ToolResult(result)) if result.tool_name == SEARCH_TOOLS => {
            ScriptedTurn::tool_calls([
                ("send_invoice", json!({"customer": "ada"})),
                ("refund_payment", json!({"amount": 5})),
            ])
        }
        Some(AgentMessage::ToolResult(_)) => {
            let results: Vec<String> = request
                .messages
                .iter()
                .filter_map(|message| match message {
                    AgentMessage::ToolResult(result) if result.tool_name != SEARCH_TOOLS => {
                        Some(result.result.text_content())
                    }
                    _ => None,
                })
                .collect();
            ScriptedTurn::text(results.join("; "))
        }
        _ => ScriptedTurn::tool_call(
            SEARCH_TOOLS,
            json!({"query": "send an invoice and refund a card payment", "k": 2}),
        ),
    })
}

/// An agent over [`store`] asking `model`, from `run` if given.
pub fn agent(model: std::sync::Arc<ScriptedModel>, run: Option<AgentRun>) -> Agent {
    let builder = Agent::builder().shared_model(model).tools(store());
    match run {
        Some(run) => builder.run(run).build(),
        None => builder.build(),
    }
}

/// The names of the tools each request offered, in order.
pub fn offered(model: &ScriptedModel) -> Vec<Vec<String>> {
    model
        .requests()
        .iter()
        .map(|request| {
            request
                .tools
                .iter()
                .map(|tool| tool.name().to_owned())
                .collect()
        })
        .collect()
}
