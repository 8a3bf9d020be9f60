//! The durable-agent scenario the Restate tests share with the `restate-agent` binary: tools whose side
//! effect is a line appended to a file (so a test counts them across processes), and a model that is a
//! pure function of the conversation (so a replay in a new process asks it the same things).
//!
//! Prompts: `three turns` asks for `get_weather` and `add_note` in each of three turns, then answers;
//! `publish` asks for `publish` (needs approval) and `add_note`; `slow` asks for `wait_for_release`,
//! which blocks until a release file exists; `flaky` fails on the first two model calls of the process and
//! then answers `steady now`; `broken` always fails. Model calls for `flaky` and `broken` are recorded
//! in the effects file too (`model <prompt>`). `equivalence` asks for two `lookup`s at once (parallel),
//! then `publish` (needs approval), then `final_answer` (the run stops at it); `barrier` asks for two
//! `meet`s at once, which wait for each other in a process started with `YIEM_RESTATE_FIRST` (and the
//! second then never finishes there). `ship` asks for `ship` (which asks the user `Ship it?` and records
//! its effect only once answered) and `add_note`. `program` has code mode's `run_code` run [`PROGRAM`]:
//! `add_note`, `get_weather`, then `publish` (needs approval), which it catches if denied; `program
//! barrier` has it start two `meet`s at once (`Promise.all`). Any other last user message is answered
//! `you said: ...`.
//!
//! [`config`] is the agent both drivers run: the durable service and, in the tests, the in-process
//! agent.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};
use yiem_core::code::CodeMode;
use yiem_core::{
    agent::{AgentConfig, AgentSettings},
    ask::ElicitationAnswer,
    event::AgentEvent,
    llm::{ModelRequest, ScriptedModel, ScriptedTurn},
    message::AgentMessage,
    store::ToolStore,
    tool::{AgentTool, ToolContext},
};

/// Where the tools append their effects (`<conversation-free call id> <tool> <arguments>` per line).
pub const EFFECTS_ENV: &str = "YIEM_RESTATE_EFFECTS";
/// A marker file `wait_for_release` creates when it starts.
pub const STARTED_ENV: &str = "YIEM_RESTATE_STARTED";
/// The file `wait_for_release` waits for.
pub const RELEASE_ENV: &str = "YIEM_RESTATE_RELEASE";
/// Where the service writes each event it emits, one [`describe`]d line each.
pub const EVENTS_ENV: &str = "YIEM_RESTATE_EVENTS";
/// Set in the first process of the barrier test: `meet` waits for its peer, and `meet b` never finishes.
pub const FIRST_ENV: &str = "YIEM_RESTATE_FIRST";

const CITIES: [&str; 3] = ["Oslo", "Bergen", "Paris"];

fn env_path(name: &str) -> PathBuf {
    PathBuf::from(std::env::var_os(name).unwrap_or_else(|| panic!("{name} is set")))
}

fn record(ctx: &ToolContext, tool: &str, args: &Value) {
    append(&format!("{} {tool} {args}", ctx.call_id()));
}

/// Appends `line` to the effects file, when there is one (the in-process agent of a test has none).
fn append(line: &str) {
    if let Some(path) = std::env::var_os(EFFECTS_ENV) {
        append_to(&PathBuf::from(path), line);
    }
}

/// Appends `line` to `path`.
pub fn append_to(path: &std::path::Path, line: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("the file opens");
    writeln!(file, "{line}").expect("the line is written");
}

/// The program of the `program` prompt: three calls one after another, the third needing approval; a
/// denial is an exception it catches.
pub const PROGRAM: &str = r#"
const first = await tools.add_note({ text: "from code" });
const second = await tools.get_weather({ city: "Oslo" });
let third;
try {
    third = await tools.publish({ text: "from code" });
} catch (error) {
    third = "caught: " + error.message;
}
print(first + " / " + second + " / " + third);
"#;

/// The agent both drivers run: the system prompt, the tools, code mode, and the run's stop at
/// `final_answer`.
pub fn config() -> AgentConfig {
    AgentConfig::new()
        .system_prompt("You check the weather and keep notes.")
        .tools(tools())
        .code_mode(CodeMode::new())
        .stop_at_tools(["final_answer"])
}

/// One line for `event`, the same whichever driver emitted it: its kind, and what it is about.
pub fn describe(event: &AgentEvent) -> String {
    fn about(message: &AgentMessage) -> String {
        match message {
            AgentMessage::User(user) => format!("user {}", user.text_content()),
            AgentMessage::Assistant(reply) => format!(
                "assistant {:?} {}",
                reply.stop_reason,
                reply
                    .tool_calls()
                    .map(|call| call.id.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            AgentMessage::ToolResult(result) => format!("tool_result {}", result.tool_call_id),
            _ => "other".to_owned(),
        }
    }
    match event {
        AgentEvent::AgentStart => "agent_start".to_owned(),
        AgentEvent::TurnStart => "turn_start".to_owned(),
        AgentEvent::MessageStart { message } => format!("message_start {}", about(message)),
        AgentEvent::MessageUpdate { message, .. } => format!("message_update {}", about(message)),
        AgentEvent::MessageEnd { message } => format!("message_end {}", about(message)),
        AgentEvent::ToolExecutionStart { call } => format!("tool_start {}", call.id),
        AgentEvent::ToolExecutionUpdate { call, .. } => format!("tool_update {}", call.id),
        AgentEvent::ToolExecutionEnd { call, is_error, .. } => {
            format!("tool_end {} error={is_error}", call.id)
        }
        AgentEvent::TurnEnd {
            message,
            tool_results,
        } => format!(
            "turn_end {} results={}",
            about(&AgentMessage::Assistant((**message).clone())),
            tool_results.len()
        ),
        AgentEvent::AgentEnd { messages } => format!("agent_end messages={}", messages.len()),
        _ => "other".to_owned(),
    }
}

/// Both `meet` calls of a batch wait here for each other.
fn meeting() -> &'static tokio::sync::Barrier {
    static MEETING: std::sync::OnceLock<tokio::sync::Barrier> = std::sync::OnceLock::new();
    MEETING.get_or_init(|| tokio::sync::Barrier::new(2))
}

/// Model calls for `flaky` made in this process.
static FLAKY_CALLS: AtomicU32 = AtomicU32::new(0);

fn tool(
    name: &'static str,
    property: &'static str,
    approval: bool,
    answer: fn(&Value) -> String,
) -> AgentTool {
    let builder = AgentTool::builder(name)
        .description(format!("The `{name}` tool of the durable scenario."))
        .input_schema(json!({
            "type": "object",
            "properties": {property: {"type": "string"}},
            "required": [property]
        }));
    let builder = if approval {
        builder.needs_approval()
    } else {
        builder
    };
    builder
        .handler(move |ctx: ToolContext, args: Value| async move {
            record(&ctx, name, &args);
            answer(&args)
        })
        .build()
        .expect("a valid definition")
}

/// The scenario's tools.
pub fn tools() -> ToolStore {
    let store = ToolStore::new("durable");
    store
        .register(tool("get_weather", "city", false, |args| {
            format!("sunny in {}", args["city"].as_str().unwrap_or_default())
        }))
        .unwrap();
    store
        .register(tool("add_note", "text", false, |args| {
            format!("noted: {}", args["text"].as_str().unwrap_or_default())
        }))
        .unwrap();
    store
        .register(tool("publish", "text", true, |args| {
            format!("published: {}", args["text"].as_str().unwrap_or_default())
        }))
        .unwrap();
    let wait = AgentTool::builder("wait_for_release")
        .description("Waits until the test releases it.")
        .input_schema(json!({"type": "object", "properties": {}}))
        .handler(|ctx: ToolContext, args: Value| async move {
            record(&ctx, "wait_for_release", &args);
            std::fs::write(env_path(STARTED_ENV), b"started").expect("the marker is written");
            let release = env_path(RELEASE_ENV);
            while !release.exists() {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            "released".to_owned()
        })
        .build()
        .expect("a valid definition");
    store.register(wait).unwrap();
    for (name, property) in [("lookup", "key"), ("final_answer", "text")] {
        let tool = AgentTool::builder(name)
            .description(format!("The `{name}` tool of the durable scenario."))
            .input_schema(json!({
                "type": "object",
                "properties": {property: {"type": "string"}},
                "required": [property]
            }))
            .parallel()
            .handler(move |ctx: ToolContext, args: Value| async move {
                record(&ctx, name, &args);
                format!("{name}: {}", args[property].as_str().unwrap_or_default())
            })
            .build()
            .expect("a valid definition");
        store.register(tool).unwrap();
    }
    let meet = AgentTool::builder("meet")
        .description("Meets the other call of its batch.")
        .input_schema(json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"]
        }))
        .parallel()
        .handler(|ctx: ToolContext, args: Value| async move {
            let name = args["name"].as_str().unwrap_or_default().to_owned();
            if std::env::var_os(FIRST_ENV).is_some() {
                // Both calls of the batch at once, or neither gets past (one after another would
                // wait here for ever).
                meeting().wait().await;
                if name == "b" {
                    // Never journaled in the first process: it is killed with `b` still running.
                    std::future::pending::<()>().await;
                }
            }
            record(&ctx, "meet", &args);
            format!("met {name}")
        })
        .build()
        .expect("a valid definition");
    store.register(meet).unwrap();
    let ship = AgentTool::builder("ship")
        .description("Ships, once the user says so.")
        .input_schema(json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        }))
        .handler(|ctx: ToolContext, _args: Value| async move {
            let form = json!({
                "type": "object",
                "properties": {"really": {"type": "boolean"}},
                "required": ["really"]
            });
            match ctx.elicit_with_schema("Ship it?", form).await {
                Ok(ElicitationAnswer::Accept(content)) => {
                    record(&ctx, "ship", &Value::Object(content.clone()));
                    format!("shipped: {}", Value::Object(content))
                }
                Ok(_) => "not shipped".to_owned(),
                Err(error) => error.to_string(),
            }
        })
        .build()
        .expect("a valid definition");
    store.register(ship).unwrap();
    store
}

/// The scenario's model: a function of the conversation since its last user message.
pub fn model() -> ScriptedModel {
    ScriptedModel::from_fn(|request: &ModelRequest| {
        let last_user = request
            .messages
            .iter()
            .rposition(|message| matches!(message, AgentMessage::User(_)));
        let Some(last_user) = last_user else {
            return ScriptedTurn::text("?");
        };
        let AgentMessage::User(user) = &request.messages[last_user] else {
            unreachable!()
        };
        let replies = request.messages[last_user..]
            .iter()
            .filter(|message| matches!(message, AgentMessage::Assistant(_)))
            .count();
        match (user.text_content().as_str(), replies) {
            ("three turns", turn @ 0..=2) => ScriptedTurn::tool_calls([
                ("get_weather", json!({"city": CITIES[turn]})),
                ("add_note", json!({"text": format!("note {}", turn + 1)})),
            ]),
            ("publish", 0) => ScriptedTurn::tool_calls([
                ("publish", json!({"text": "the long version"})),
                ("add_note", json!({"text": "published"})),
            ]),
            ("program", 0) => ScriptedTurn::tool_call("run_code", json!({ "code": PROGRAM })),
            ("program barrier", 0) => ScriptedTurn::tool_call(
                "run_code",
                json!({ "code": "const met = await Promise.all([tools.meet({ name: \"a\" }), \
                                  tools.meet({ name: \"b\" })]);\nprint(met.join(\", \"));" }),
            ),
            ("slow", 0) => ScriptedTurn::tool_call("wait_for_release", json!({})),
            ("ship", 0) => ScriptedTurn::tool_calls([
                ("ship", json!({"text": "v1"})),
                ("add_note", json!({"text": "shipping"})),
            ]),
            ("equivalence", 0) => ScriptedTurn::tool_calls([
                ("lookup", json!({"key": "a"})),
                ("lookup", json!({"key": "b"})),
            ]),
            ("equivalence", 1) => {
                ScriptedTurn::tool_call("publish", json!({"text": "the summary"}))
            }
            ("equivalence", _) => {
                ScriptedTurn::tool_call("final_answer", json!({"text": "all done"}))
            }
            ("barrier", 0) => ScriptedTurn::tool_calls([
                ("meet", json!({"name": "a"})),
                ("meet", json!({"name": "b"})),
            ]),
            ("flaky", 0) => {
                append("model flaky");
                if FLAKY_CALLS.fetch_add(1, Ordering::SeqCst) < 2 {
                    ScriptedTurn::error("503 the model is overloaded")
                } else {
                    ScriptedTurn::text("steady now")
                }
            }
            ("broken", 0) => {
                append("model broken");
                ScriptedTurn::error("401 the key is wrong")
            }
            (_, _) if replies > 0 => {
                let results: Vec<String> = request
                    .messages
                    .iter()
                    .filter_map(|message| match message {
                        AgentMessage::ToolResult(result) => Some(result.text_content()),
                        _ => None,
                    })
                    .collect();
                ScriptedTurn::text(format!("done: {}", results.join(" | ")))
            }
            (text, _) => ScriptedTurn::text(format!("you said: {text}")),
        }
    })
}
