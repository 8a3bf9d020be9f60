//! Tools with state: `State<T>` held per store (two stores, one tool, different state, called at the same
//! time), the errors for missing state at registration and at call, tools as methods of one instance
//! (`#[tools]`) in an agent and over MCP, and panics inside state and method tools.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::Barrier;
use yiem_core::{
    agent::{Agent, AgentSettings},
    exec::{CancellationToken, ToolCall, ToolExecutor},
    llm::{ScriptedModel, ScriptedTurn},
    message::AgentMessage,
    store::{RegistrationError, ToolStore, check_tools, register_all_tools},
    tool,
    tool::{State, ToolContext},
};
use yiem_tests::{Bullet, Notes};

/// A database stand-in: its name, and a barrier every call meets at before it answers.
struct Db {
    name: &'static str,
    meet: Arc<Barrier>,
}

#[derive(Deserialize, JsonSchema)]
struct QueryArgs {
    /// The table to read.
    table: String,
}

/// Read a table of the store's database.
#[tool(parallel)]
async fn query(State(db): State<Db>, args: QueryArgs) -> String {
    db.meet.wait().await;
    format!("{} answered for {}", db.name, args.table)
}

/// Give up on a guard of generous length instead of hanging, should a promise break.
async fn within<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), future)
        .await
        .expect("finished well within 60 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_give_the_same_tool_their_own_state_while_both_calls_run() {
    // Both calls must be inside the tool at once to pass the barrier: a call that saw the other store's
    // state, or calls run one after the other, would not both finish.
    let meet = Arc::new(Barrier::new(2));
    let store = |name: &'static str| {
        let store = ToolStore::new(name).with_state(Db {
            name,
            meet: Arc::clone(&meet),
        });
        store.register(query_tool()).unwrap();
        store
    };
    let (primary, replica) = (store("primary"), store("replica"));
    let run = |store: ToolStore, id: &'static str| {
        tokio::spawn(async move {
            let calls = vec![ToolCall::new(id, "query", json!({"table": "users"}))];
            let batch = ToolExecutor::new()
                .execute(&store, calls, &CancellationToken::new())
                .await;
            batch.messages[0].text_content()
        })
    };
    let (a, b) =
        within(async { tokio::join!(run(primary.clone(), "a"), run(replica.clone(), "b")) }).await;
    assert_eq!(a.unwrap(), "primary answered for users");
    assert_eq!(b.unwrap(), "replica answered for users");
    assert_eq!(primary.state::<Db>().unwrap().name, "primary");
    assert_eq!(replica.state::<Db>().unwrap().name, "replica");
}

#[test]
fn registering_a_tool_whose_state_the_store_lacks_is_refused_naming_the_tool_and_the_type() {
    let store = ToolStore::new("bare");
    let refused = store.register(query_tool()).unwrap_err();
    assert!(matches!(refused, RegistrationError::MissingState(_)));
    assert_eq!(
        refused.to_string(),
        "tool `query` needs state of type `state::Db`, which store `bare` does not hold: give the store \
         one before registering the tool, `ToolStore::new(\"bare\").with_state(value)`"
    );
    assert!(store.is_empty());
}

#[test]
fn state_of_another_type_does_not_stand_in_for_the_one_a_tool_takes() {
    // `with_state(Arc::new(db))` holds an `Arc<Db>`, not a `Db`: the refusal names the type wanted.
    let db = Db {
        name: "wrapped",
        meet: Arc::new(Barrier::new(1)),
    };
    let store = ToolStore::new("wrapped").with_state(Arc::new(db));
    let refused = store.register(query_tool()).unwrap_err();
    assert!(
        refused
            .to_string()
            .starts_with("tool `query` needs state of type `state::Db`, which store `wrapped`")
    );
    // `with_shared_state` is the way to hand over an `Arc` you keep.
    let shared = Arc::new(Db {
        name: "shared",
        meet: Arc::new(Barrier::new(1)),
    });
    let store = ToolStore::new("shared").with_shared_state(Arc::clone(&shared));
    store.register(query_tool()).unwrap();
    assert!(Arc::ptr_eq(&store.state::<Db>().unwrap(), &shared));
}

#[test]
fn register_all_tools_refuses_every_tool_when_one_needs_state_the_store_lacks() {
    let store = ToolStore::new("everything");
    let refused = register_all_tools(&store).unwrap_err();
    assert!(refused.to_string().starts_with("tool `"), "{refused}");
    assert!(
        refused
            .to_string()
            .contains("which store `everything` does not hold")
    );
    assert!(store.is_empty(), "all or nothing: {:?}", store.names());
}

#[tokio::test]
async fn calling_a_tool_without_its_state_is_an_error_result_naming_the_tool_and_the_type() {
    let result = query_tool().execute("c1", json!({"table": "users"})).await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "tool `query` needs state of type `state::Db`, which this call was not given: call the tool \
         through a store that holds it (`ToolStore::with_state`, then `ToolStore::execute`), or give the \
         context one with `ToolContext::with_state`"
    );
    // Missing state is a problem of setup: it is reported before the arguments are even looked at.
    let result = query_tool().execute("c2", json!({"table": 5})).await;
    assert!(
        result
            .text_content()
            .starts_with("tool `query` needs state")
    );
}

#[tokio::test]
async fn a_context_can_carry_state_for_a_call_in_hand() {
    let ctx = ToolContext::new("c1").with_state(Db {
        name: "in-hand",
        meet: Arc::new(Barrier::new(1)),
    });
    let result = query_tool().execute_with(ctx, json!({"table": "t"})).await;
    assert_eq!(result.text_content(), "in-hand answered for t");
}

/// State whose use panics.
struct Fragile;

impl Fragile {
    fn read(&self) -> String {
        panic!("the fragile state broke")
    }
}

/// Read the fragile state.
#[tool]
async fn fragile(State(state): State<Fragile>) -> String {
    state.read()
}

/// Read the fragile state from a plain fn.
#[tool]
fn fragile_blocking(State(state): State<Fragile>) -> String {
    state.read()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_while_using_state_is_that_calls_error_result() {
    let store = ToolStore::new("fragile").with_state(Fragile);
    store.register(fragile_tool()).unwrap();
    store.register(fragile_blocking_tool()).unwrap();
    store.register(query_tool()).unwrap_err();
    let calls = vec![
        ToolCall::new("1", "fragile", json!({})),
        ToolCall::new("2", "fragile_blocking", json!({})),
    ];
    let batch = within(ToolExecutor::new().execute(&store, calls, &CancellationToken::new())).await;
    let texts: Vec<String> = batch.messages.iter().map(|m| m.text_content()).collect();
    assert_eq!(
        texts,
        [
            "tool `fragile` panicked: the fragile state broke",
            "tool `fragile_blocking` panicked: the fragile state broke"
        ]
    );
}

fn notes_store() -> (ToolStore, Arc<Notes>) {
    let notes = Arc::new(Notes::default());
    let store = ToolStore::new("notes").with_state(Bullet("- "));
    let names = store.register_methods(Arc::clone(&notes)).unwrap();
    assert_eq!(
        names,
        ["add_note", "list_notes", "find-notes", "break_notes"]
    );
    (store, notes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn method_tools_run_in_an_agent_on_their_instance() {
    let (store, notes) = notes_store();
    store.check().unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("add_note", json!({"text": "buy milk"})),
        ScriptedTurn::tool_calls([
            ("list_notes", json!({})),
            ("find-notes", json!({"containing": "bread"})),
            ("break_notes", json!({})),
            ("add_note", json!({"txt": "typo"})),
        ]),
        ScriptedTurn::text("done"),
    ]);
    let agent = Agent::builder().model(model).tools(store).build();
    let messages = within(agent.prompt("take a note")).await.messages;
    let results: Vec<String> = messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result.text_content()),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            "1 notes",
            "- buy milk",
            "no note contains `bread` (call call_3)",
            "tool `break_notes` panicked: the notes are broken",
            "invalid arguments for tool `add_note` (2 problems):\n\
             - at `/txt`: unknown property `txt`; did you mean `text`?\n\
             - missing required property `text` (expected a string)\n\
             valid properties: `text`",
        ]
    );
    assert_eq!(notes.len(), 1);
}

#[test]
fn registering_methods_is_all_or_nothing() {
    let store = ToolStore::new("no-bullet");
    let refused = store
        .register_methods(Arc::new(Notes::default()))
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "tool `list_notes` needs state of type `yiem_tests::Bullet`, which store `no-bullet` does not \
         hold: give the store one before registering the tool, `ToolStore::new(\"no-bullet\").with_state(value)`"
    );
    assert!(store.is_empty());
}

#[test]
fn the_check_reports_duplicates_and_passes_method_tools() {
    let (store, _) = notes_store();
    check_tools(&store.tools()).unwrap();
    let twice = [query_tool(), query_tool()];
    let report = check_tools(&twice).unwrap_err();
    assert_eq!(report.problems.len(), 1);
    assert!(
        report
            .to_string()
            .starts_with("1 problem with the tools:\n- two tools are called `query` (defined at tests/tests/state.rs:"),
        "{report}"
    );
}

#[tokio::test]
async fn method_tools_are_served_over_mcp() {
    let (transport, _stderr) =
        TokioChildProcess::builder(Command::new(env!("CARGO_BIN_EXE_notes-mcp-server")))
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
    let client = within(().serve(transport))
        .await
        .expect("the handshake completes");
    let listed = within(client.list_tools(None)).await.unwrap();
    let names: Vec<&str> = listed.tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        ["add_note", "list_notes", "find-notes", "break_notes"]
    );
    assert_eq!(
        serde_json::to_value(&listed.tools[0]).unwrap(),
        json!({
            "name": "add_note",
            "title": "Add Note",
            "description": "Add a note; returns how many notes there are.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The text of the note."}},
                "required": ["text"]
            },
            "annotations": {"idempotentHint": false}
        })
    );
    let call = |name: &'static str, args: Value| {
        let Value::Object(args) = args else { panic!() };
        let client = &client;
        async move {
            let result =
                within(client.call_tool(CallToolRequestParams::new(name).with_arguments(args)))
                    .await
                    .expect("a result");
            let value = serde_json::to_value(result).unwrap();
            (
                value["content"][0]["text"].as_str().unwrap().to_owned(),
                value["isError"].clone(),
            )
        }
    };
    assert_eq!(
        call("add_note", json!({"text": "one"})).await,
        ("1 notes".into(), json!(false))
    );
    assert_eq!(
        call("add_note", json!({"text": "two"})).await,
        ("2 notes".into(), json!(false))
    );
    assert_eq!(
        call("list_notes", json!({})).await,
        ("* one\n* two".into(), json!(false))
    );
    assert_eq!(
        call("break_notes", json!({})).await,
        (
            "tool `break_notes` panicked: the notes are broken".into(),
            json!(true)
        )
    );
    client.cancel().await.unwrap();
}
