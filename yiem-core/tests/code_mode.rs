//! Code mode: programs that call tools through the pipeline, their sandbox and limits, and approvals
//! inside a program (pause, save, resume in another agent, each effect once).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use yiem_core::code::{CodeLimits, CodeMode, LimitExceeded};
use yiem_core::{
    agent::{
        Agent, AgentRun, AgentSettings, ApprovalPolicy, Decision, ResumeError, RunKey, RunStop,
        Signature,
    },
    event::AgentEvent,
    exec::ToolExecutor,
    llm::{ScriptedModel, ScriptedTurn},
    message::AgentMessage,
    store::ToolStore,
    tool::{AgentTool, AgentToolResult, ToolAnnotations, ToolContext},
};

/// A directory of its own under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "yiem-code-mode-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The tools: `lookup` (parallel, structured result), `append` (adds a line to a file: an effect that
/// shows how often it happened), `delete_file` (needs approval) and `wipe` (destructive).
fn store(dir: &Path) -> ToolStore {
    let store = ToolStore::new("files");
    store
        .register(
            AgentTool::builder("lookup")
                .description("Look up a record by id.")
                .input_schema(json!({
                    "type": "object",
                    "properties": {"id": {"type": "integer", "description": "The record's id."}},
                    "required": ["id"]
                }))
                .output_schema(json!({
                    "type": "object",
                    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, "score": {"type": "integer"}},
                    "required": ["id", "name", "score"]
                }))
                .parallel()
                .handler(|_ctx: ToolContext, args: Value| async move {
                    let id = args["id"].as_i64().unwrap_or_default();
                    let record = json!({"id": id, "name": format!("record-{id}"), "score": id * 7 % 10});
                    AgentToolResult::text(record.to_string()).with_structured_content(record)
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let root = dir.to_path_buf();
    store
        .register(
            AgentTool::builder("append")
                .description("Append a line to a file.")
                .input_schema(json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "line": {"type": "string"}},
                    "required": ["name", "line"]
                }))
                .handler(move |_ctx: ToolContext, args: Value| {
                    let path = root.join(args["name"].as_str().unwrap_or("x"));
                    async move {
                        use std::io::Write;
                        let mut file = std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(&path)
                            .unwrap();
                        writeln!(file, "{}", args["line"].as_str().unwrap_or_default()).unwrap();
                        "appended"
                    }
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let root = dir.to_path_buf();
    store
        .register(
            AgentTool::builder("delete_file")
                .description("Delete a file.")
                .input_schema(json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                }))
                .needs_approval()
                .handler(move |_ctx: ToolContext, args: Value| {
                    let path = root.join(args["name"].as_str().unwrap_or("x"));
                    async move {
                        match std::fs::remove_file(&path) {
                            Ok(()) => "deleted".to_owned(),
                            Err(e) => format!("not deleted: {e}"),
                        }
                    }
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let destructive = ToolAnnotations::default().destructive(true);
    store
        .register(
            AgentTool::builder("wipe")
                .description("Wipe everything.")
                .annotations(destructive)
                .handler(|_ctx: ToolContext, _args: Value| async { "wiped" })
                .build()
                .unwrap(),
        )
        .unwrap();
    store
}

async fn run_with(code: &str, limits: CodeLimits) -> AgentToolResult {
    let dir = TempDir::new();
    let tools = store(&dir.0);
    let run_code =
        CodeMode::new()
            .limits(limits)
            .tool(&tools, ToolExecutor::new(), ApprovalPolicy::default());
    run_code.execute("c1", json!({ "code": code })).await
}

async fn run(code: &str) -> AgentToolResult {
    run_with(code, CodeLimits::default()).await
}

fn text(result: &AgentToolResult) -> String {
    result.text_content()
}

// ---- the API ----

#[tokio::test]
async fn a_call_resolves_to_the_structured_result_and_only_prints_come_back() {
    let result = run("const r = await tools.lookup({ id: 3 }); print(r.name, r.score);").await;
    assert!(!result.is_error, "{}", text(&result));
    assert_eq!(text(&result), "record-3 1\n");
}

#[tokio::test]
async fn the_value_of_the_last_expression_is_shown() {
    let result = run("const r = await tools.lookup({ id: 2 }); r.score * 2").await;
    assert_eq!(text(&result), "8");
}

#[tokio::test]
async fn the_description_declares_the_callable_tools_in_typescript() {
    let dir = TempDir::new();
    let tools = store(&dir.0);
    let run_code = CodeMode::new().tool(&tools, ToolExecutor::new(), ApprovalPolicy::default());
    let description = run_code.description();
    assert!(
        description.contains(
            "  /** Look up a record by id. */\n  lookup(args: {\n    /** The record's id. */\n    id: number;\n  }): Promise<{\n    id: number;\n    name: string;\n    score: number;\n  }>;"
        ),
        "{description}"
    );
    assert!(description.contains("append(args: {"), "{description}");
    assert!(
        !description.contains("wipe("),
        "destructive tools are not callable by default"
    );
}

#[tokio::test]
async fn calls_started_together_run_as_one_batch_with_program_call_ids() {
    let dir = TempDir::new();
    let tools = store(&dir.0);
    let executor = ToolExecutor::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    executor.events().on_event(move |event| {
        let entry = match event {
            AgentEvent::ToolExecutionStart { call } => format!("start {}", call.id),
            AgentEvent::ToolExecutionEnd { call, .. } => format!("end {}", call.id),
            _ => return,
        };
        sink.lock().unwrap().push(entry);
    });
    let run_code = CodeMode::new().tool(&tools, executor, ApprovalPolicy::default());
    let program = "const rs = await Promise.all([1, 2, 3].map(id => tools.lookup({ id }))); \
                   print(rs.map(r => r.name).join(','));";
    let result = run_code.execute("c9", json!({ "code": program })).await;
    assert_eq!(text(&result), "record-1,record-2,record-3\n");
    let seen = seen.lock().unwrap().clone();
    // One batch: every call starts before any ends (a parallel batch of the executor).
    assert_eq!(
        &seen[..3],
        ["start c9/code/0", "start c9/code/1", "start c9/code/2"]
    );
    assert_eq!(seen.len(), 6);
    assert_eq!(yiem_core::code::program_call_of("c9/code/2"), Some("c9"));
}

/// A journal that gives the program's first call a recorded result (as a durable driver's replay
/// would) and runs the others, noting the ids of all.
struct ReplayingFirst {
    seen: Mutex<Vec<String>>,
}

impl yiem_core::exec::CallJournal for ReplayingFirst {
    fn record<'a>(
        &'a self,
        call: &yiem_core::exec::ToolCall,
        run: futures::future::BoxFuture<'static, yiem_core::exec::CallRecord>,
    ) -> futures::future::BoxFuture<'a, yiem_core::exec::CallRecord> {
        self.seen.lock().unwrap().push(call.id.clone());
        if call.id.ends_with("/code/0") {
            let recorded = AgentToolResult::text("recorded before");
            return Box::pin(async move { yiem_core::exec::CallRecord::new(recorded, 0) });
        }
        run
    }
}

#[tokio::test]
async fn a_program_run_on_an_executor_journaling_program_calls_records_each_call_there() {
    let dir = TempDir::new();
    let tools = store(&dir.0);
    let run_code = CodeMode::new().tool(&tools, ToolExecutor::new(), ApprovalPolicy::default());
    tools.register(run_code).unwrap();
    let journal = Arc::new(ReplayingFirst {
        seen: Mutex::new(Vec::new()),
    });
    let executor = ToolExecutor::new().journaling_program_calls(journal.clone());
    let program = r#"
        const a = await tools.append({ name: "log", line: "one" });
        const b = await tools.append({ name: "log", line: "two" });
        print(a + ", " + b);
    "#;
    let call = yiem_core::exec::ToolCall::new("c1", "run_code", json!({ "code": program }));
    let batch = executor
        .execute(
            &tools,
            vec![call],
            &yiem_core::exec::CancellationToken::new(),
        )
        .await;
    assert_eq!(
        batch.messages[0].text_content(),
        "recorded before, appended\n"
    );
    assert_eq!(*journal.seen.lock().unwrap(), ["c1/code/0", "c1/code/1"]);
    // The recorded call did not run again; the other ran once.
    assert_eq!(std::fs::read_to_string(dir.0.join("log")).unwrap(), "two\n");
}

// ---- bad programs ----

#[tokio::test]
async fn a_syntax_error_points_at_its_line() {
    let result = run("let x = 1;\nlet y = ;\n").await;
    assert!(result.is_error);
    let text = text(&result);
    assert!(
        text.starts_with("the program failed: SyntaxError:"),
        "{text}"
    );
    assert!(text.contains("program.js:2"), "{text}");
}

#[tokio::test]
async fn an_unknown_tool_is_the_pipeline_s_error_as_an_exception() {
    let result =
        run("try { await tools.lokup({ id: 1 }) } catch (e) { print(e.name + ': ' + e.message) }")
            .await;
    assert!(!result.is_error, "{}", text(&result));
    assert!(
        text(&result).starts_with("ToolError: tool `lokup` not found. Did you mean `lookup`?"),
        "{}",
        text(&result)
    );
}

#[tokio::test]
async fn wrong_argument_types_reject_with_the_text_the_model_would_read() {
    let dir = TempDir::new();
    let tools = store(&dir.0);
    let direct = tools
        .execute("d1", "lookup", json!({ "id": "seven" }))
        .await;
    assert!(direct.is_error);
    let result =
        run("try { await tools.lookup({ id: 'seven' }) } catch (e) { print(e.message) }").await;
    assert_eq!(text(&result), format!("{}\n", direct.text_content()));
}

#[tokio::test]
async fn a_tool_not_callable_from_code_is_refused_with_what_to_do() {
    let result = run("await tools.wipe({})").await;
    assert!(result.is_error);
    assert!(
        text(&result).contains(
            "ToolError: the tool `wipe` cannot be called from code; call it directly as a tool"
        ),
        "{}",
        text(&result)
    );
}

/// `tally`: a code-only tool that needs approval, counting its runs.
fn tally(runs: &Arc<AtomicUsize>) -> AgentTool {
    let runs = Arc::clone(runs);
    AgentTool::builder("tally")
        .description("Count one more.")
        .code_only()
        .needs_approval()
        .parallel()
        .handler(move |_ctx: ToolContext, _args: Value| {
            let runs = Arc::clone(&runs);
            async move { (runs.fetch_add(1, Ordering::SeqCst) + 1).to_string() }
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_code_only_tool_is_declared_in_run_code_and_never_sent_as_a_tool_of_its_own() {
    let dir = TempDir::new();
    let tools = store(&dir.0);
    let runs = Arc::new(AtomicUsize::new(0));
    tools.register(tally(&runs)).unwrap();
    // Per request: the names of the tools sent, and `run_code`'s description.
    type Sent = Vec<(Vec<String>, String)>;
    let sent: Arc<Mutex<Sent>> = Arc::default();
    let seen = Arc::clone(&sent);
    let agent = Agent::builder()
        .model(ScriptedModel::from_fn(
            move |request: &yiem_core::llm::ModelRequest| {
                let names = request.tools.iter().map(|t| t.name().to_owned()).collect();
                let run_code = request
                    .tools
                    .iter()
                    .find(|t| t.name() == "run_code")
                    .map(|t| t.description().to_owned())
                    .unwrap_or_default();
                seen.lock().unwrap().push((names, run_code));
                ScriptedTurn::text("nothing to do")
            },
        ))
        .tools(tools)
        .code_mode(CodeMode::new())
        .build();
    agent.prompt("hi").await;
    let sent = sent.lock().unwrap();
    let (names, run_code) = &sent[0];
    assert!(!names.contains(&"tally".to_owned()), "{names:?}");
    assert!(names.contains(&"lookup".to_owned()), "{names:?}");
    assert!(run_code.contains("tally(args"), "{run_code}");
    assert!(run_code.contains("Count one more."), "{run_code}");
}

#[tokio::test]
async fn a_direct_call_of_a_code_only_tool_is_refused_with_what_to_do_and_a_program_call_runs() {
    let dir = TempDir::new();
    let tools = store(&dir.0);
    let runs = Arc::new(AtomicUsize::new(0));
    tools.register(tally(&runs)).unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            ScriptedTurn::tool_call("tally", json!({})),
            ScriptedTurn::tool_call(
                "run_code",
                json!({ "code": "print(await tools.tally({}))" }),
            ),
            ScriptedTurn::text("counted"),
        ]))
        .tools(tools)
        .code_mode(CodeMode::new())
        .build();
    // The direct call: refused through the pipeline, nobody asked to approve it.
    let outcome = agent.prompt("count").await;
    let AgentMessage::ToolResult(direct) = &outcome.messages[2] else {
        panic!("{:?}", outcome.messages);
    };
    assert!(direct.is_error());
    assert_eq!(
        direct.text_content(),
        "tool `tally` can only be called from code, not directly: call it from a program (in \
         `run_code`, or in your code-execution tool)"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // The program's call waits for approval like any other, then runs.
    let RunStop::AwaitingApproval { pending } = &outcome.stop else {
        panic!("{:?}", outcome.stop);
    };
    assert_eq!(pending[0].tool_name, "tally");
    let decisions = [(pending[0].call_id.clone(), Decision::Approve)];
    let outcome = agent.resume(decisions).await.unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let AgentMessage::ToolResult(program) = &outcome.messages[0] else {
        panic!("{:?}", outcome.messages);
    };
    assert_eq!(program.text_content(), "1\n");
}

#[tokio::test]
async fn a_call_of_a_code_only_tool_from_a_providers_sandbox_runs() {
    let dir = TempDir::new();
    let tools = store(&dir.0);
    let runs = Arc::new(AtomicUsize::new(0));
    tools.register(tally(&runs)).unwrap();
    let caller =
        yiem_core::exec::ToolCaller::new("anthropic", "code_execution_20260120", "srvtoolu_1");
    let from_sandbox = yiem_core::exec::ToolCall::new("toolu_1", "tally", json!({})).caller(caller);
    let batch = ToolExecutor::new()
        .execute(
            &tools,
            vec![from_sandbox],
            &yiem_core::exec::CancellationToken::new(),
        )
        .await;
    assert_eq!(batch.messages[0].text_content(), "1");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_uncaught_tool_error_fails_the_program_with_its_message() {
    let result = run("await tools.lookup({})").await;
    assert!(result.is_error);
    assert!(
        text(&result).starts_with("the program failed: ToolError: "),
        "{}",
        text(&result)
    );
}

// ---- escapes ----

#[tokio::test]
async fn reading_a_file_is_impossible() {
    for program in [
        "require('fs').readFileSync('/etc/passwd')",
        "await import('fs')",
        "std.loadFile('/etc/passwd')",
        "os.open('/etc/passwd')",
    ] {
        let result = run(program).await;
        assert!(result.is_error, "{program}: {}", text(&result));
        assert!(!text(&result).contains("root:"), "{program}");
    }
}

#[tokio::test]
async fn opening_a_socket_is_impossible() {
    for program in [
        "await fetch('http://127.0.0.1:1/')",
        "new WebSocket('ws://127.0.0.1:1/')",
        "new XMLHttpRequest()",
    ] {
        let result = run(program).await;
        assert!(result.is_error, "{program}");
        assert!(
            text(&result).contains("ReferenceError"),
            "{program}: {}",
            text(&result)
        );
    }
}

#[tokio::test]
async fn importing_a_module_that_is_not_offered_fails() {
    let result = run("import fs from 'fs';\nprint(1)").await;
    assert!(result.is_error);
    assert!(text(&result).contains("SyntaxError"), "{}", text(&result));
    let result = run("const m = await import('os'); print(m)").await;
    assert!(result.is_error);
    assert!(text(&result).contains("os"), "{}", text(&result));
}

#[tokio::test]
async fn there_is_no_clock_and_no_randomness() {
    let result =
        run("[typeof Date, typeof Math.random, typeof performance, typeof setTimeout].join(' ')")
            .await;
    assert_eq!(text(&result), "undefined undefined undefined undefined");
}

#[tokio::test]
async fn an_infinite_loop_stops_at_the_time_limit() {
    let limits = CodeLimits::default().max_time(Duration::from_millis(200));
    let result = run_with("while (true) {}", limits).await;
    assert!(result.is_error);
    let expected = LimitExceeded::Time {
        limit: Duration::from_millis(200),
    }
    .to_string();
    assert_eq!(text(&result), format!("the program stopped: {expected}"));
}

#[tokio::test]
async fn a_1_gb_allocation_stops_at_the_memory_limit() {
    let result = run("const b = new ArrayBuffer(1 << 30); print(b.byteLength)").await;
    assert!(result.is_error);
    assert_eq!(
        text(&result),
        "the program stopped: the program exceeded its memory limit (64 MiB); work on less data at once"
    );
}

#[tokio::test]
async fn growing_memory_a_little_at_a_time_stops_at_the_memory_limit() {
    let result = run("const a = []; while (true) a.push('x'.repeat(1000) + a.length);").await;
    assert!(text(&result).contains("memory limit"), "{}", text(&result));
}

#[tokio::test]
async fn deep_recursion_is_a_range_error_not_a_crash() {
    let result = run("function f(n) { return f(n + 1) + 1 } f(0)").await;
    assert!(result.is_error);
    assert!(
        text(&result).contains("RangeError: Maximum call stack size exceeded"),
        "{}",
        text(&result)
    );
}

#[tokio::test]
async fn a_million_tool_calls_stop_at_the_call_limit() {
    let result = run("for (let i = 0; i < 1e6; i++) tools.lookup({ id: i });").await;
    assert!(result.is_error);
    // The 1000 calls it started never ran: the program stopped before waiting for any.
    assert_eq!(
        text(&result),
        "the program stopped: the program exceeded its limit on tool calls (1000); make fewer calls per program\n\
         1000 tool call(s) the program started were cancelled, since it stopped before they ran: `lookup`, \
         `lookup`, `lookup`, `lookup`, `lookup`, `lookup`, `lookup`, `lookup`, `lookup`, `lookup` and 990 more"
    );
}

#[tokio::test]
async fn a_hundred_megabytes_of_output_are_cut_with_a_note_and_the_program_goes_on() {
    let result = run("const mb = 'x'.repeat(1 << 20); \
         for (let i = 0; i < 100; i++) print(mb); \
         const r = await tools.lookup({ id: 1 }); print('after', r.name);")
    .await;
    assert!(!result.is_error, "{}", &text(&result)[65536..]);
    // The call after the prints ran: the program went on past its output limit.
    assert_eq!(result.details()["code_mode"]["calls"], 1);
    // Each print wrote a megabyte and a newline; `after record-1\n` is left out as well.
    let printed = 100 * ((1 << 20) + 1) + "after record-1\n".len();
    assert_eq!(
        text(&result),
        format!(
            "{}… ({} more bytes left out: what a program prints, returns and throws is held to 65536 \
             bytes together)",
            "x".repeat(65536),
            printed - 65536
        )
    );
}

#[tokio::test]
async fn output_cut_at_its_limit_is_counted_in_the_note_of_an_error_too() {
    let limits = CodeLimits::default().max_output_bytes(10);
    let result = run_with("print('0123456789abc'); throw new Error('late')", limits).await;
    assert!(result.is_error);
    assert!(
        text(&result).starts_with(
            "0123456789… (4 more bytes left out: what a program prints, returns and throws is held to \
             10 bytes together)\nthe program failed: "
        ),
        "{}",
        text(&result)
    );
}

#[tokio::test]
async fn catching_the_limit_exception_does_not_let_a_program_carry_on() {
    for (program, limit) in [
        (
            "try { new ArrayBuffer(1 << 30) } catch (e) {} print('still here')",
            "memory limit",
        ),
        (
            "try { for (let i = 0; i < 2000; i++) tools.lookup({ id: i }) } catch (e) {} \
             const r = await tools.lookup({ id: 1 }); print('still here', r.name)",
            "limit on tool calls",
        ),
        (
            "try { while (true) {} } catch (e) {} print('still here')",
            "time limit",
        ),
    ] {
        // Only the loop that never ends meets the short time limit; the other two meet their own limit
        // long before the default one, however busy the machine.
        let limits = match limit {
            "time limit" => CodeLimits::default().max_time(Duration::from_millis(200)),
            _ => CodeLimits::default(),
        };
        let result = run_with(program, limits).await;
        assert!(result.is_error, "{program}");
        let text = text(&result);
        assert!(text.contains(limit), "{program}: {text}");
        assert!(!text.contains("still here"), "{program}: {text}");
    }
}

// ---- approvals inside a program ----

/// Appends to a.txt and b.txt, then deletes c.txt (needs approval), catching a denial.
const PROGRAM: &str = r#"
await tools.append({ name: "a.txt", line: "one" });
await tools.append({ name: "b.txt", line: "two" });
try {
  print(await tools.delete_file({ name: "c.txt" }));
} catch (e) {
  print("not deleted:", e.message);
}
"#;

fn key() -> RunKey {
    RunKey::new([9; 32])
}

fn agent(dir: &Path, turns: Vec<ScriptedTurn>, run: Option<AgentRun>) -> Agent {
    let builder = Agent::builder()
        .model(ScriptedModel::new(turns))
        .tools(store(dir))
        .code_mode(CodeMode::new());
    match run {
        Some(run) => builder.run(run).build(),
        None => builder.build(),
    }
}

/// Runs the program until it waits for the third call; gives the saved, signed run and the waiting id.
async fn pause(dir: &Path) -> (String, String) {
    std::fs::write(dir.join("c.txt"), "keep?").unwrap();
    let first = agent(
        dir,
        vec![ScriptedTurn::tool_call(
            "run_code",
            json!({ "code": PROGRAM }),
        )],
        None,
    );
    let outcome = first.prompt("tidy up").await;
    let RunStop::AwaitingApproval { pending } = &outcome.stop else {
        panic!("expected a wait, got {:?}", outcome.stop)
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_name, "delete_file");
    assert_eq!(pending[0].arguments, json!({ "name": "c.txt" }));
    assert!(
        pending[0].call_id.ends_with("/code/2"),
        "{}",
        pending[0].call_id
    );
    (
        first.run_state().to_json_signed(&key()),
        pending[0].call_id.clone(),
    )
}

fn lines(dir: &Path, name: &str) -> usize {
    std::fs::read_to_string(dir.join(name))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

fn run_code_result(messages: &[AgentMessage]) -> String {
    messages
        .iter()
        .find_map(|message| match message {
            AgentMessage::ToolResult(result) if result.tool_name == "run_code" => {
                Some(result.text_content())
            }
            _ => None,
        })
        .expect("a run_code result")
}

#[tokio::test]
async fn a_call_that_needs_approval_pauses_the_run_and_an_approval_resumes_it_in_another_agent() {
    let dir = TempDir::new();
    let (saved, waiting) = pause(&dir.0).await;
    // The first two calls ran, once; the third did not.
    assert_eq!((lines(&dir.0, "a.txt"), lines(&dir.0, "b.txt")), (1, 1));
    assert!(dir.0.join("c.txt").exists());

    let (run, signature) = AgentRun::from_json_verified(&saved, &key()).unwrap();
    assert_eq!(signature, Signature::Valid);
    let second = agent(&dir.0, vec![ScriptedTurn::text("Tidied.")], Some(run));
    let outcome = second.resume([(waiting, Decision::Approve)]).await.unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(outcome.text(), "Tidied.");
    assert_eq!(run_code_result(&outcome.messages), "deleted\n");
    assert_eq!((lines(&dir.0, "a.txt"), lines(&dir.0, "b.txt")), (1, 1));
    assert!(!dir.0.join("c.txt").exists());
}

/// Two runs that share one code mode, their programs paused at the same `run_code` call id, resume at
/// once (each `run_code` call held until both batches are readied): each program resumes with its own
/// recorded calls, not the other run's, and every effect happens once.
#[tokio::test]
async fn runs_sharing_a_code_mode_resume_their_own_programs_whatever_their_call_ids() {
    use yiem_core::exec::ToolHooks;
    let mode = CodeMode::new();
    let resuming = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let both_readied = Arc::new(tokio::sync::Barrier::new(2));
    let hooks = {
        let (resuming, both_readied) = (Arc::clone(&resuming), Arc::clone(&both_readied));
        ToolHooks::new().before_tool_call(move |ctx| {
            let hold = ctx.call.name == "run_code" && resuming.load(Ordering::SeqCst);
            let both_readied = Arc::clone(&both_readied);
            async move {
                if hold {
                    both_readied.wait().await;
                }
                None
            }
        })
    };
    let dirs = [TempDir::new(), TempDir::new()];
    let programs = [PROGRAM.to_owned(), PROGRAM.replace("\"one\"", "\"uno\"")];
    let mut agents = Vec::new();
    let mut waiting = Vec::new();
    for (dir, program) in dirs.iter().zip(&programs) {
        std::fs::write(dir.0.join("c.txt"), "keep?").unwrap();
        let agent = Agent::builder()
            .model(ScriptedModel::new([
                ScriptedTurn::tool_call("run_code", json!({ "code": program })),
                ScriptedTurn::text("Tidied."),
            ]))
            .tools(store(&dir.0))
            .code_mode(mode.clone())
            .tool_hooks(hooks.clone())
            .build();
        let outcome = agent.prompt("tidy up").await;
        let RunStop::AwaitingApproval { pending } = &outcome.stop else {
            panic!("{:?}", outcome.stop)
        };
        waiting.push(pending[0].call_id.clone());
        agents.push(agent);
    }
    assert_eq!(
        waiting[0], waiting[1],
        "the same program call id in both runs"
    );
    resuming.store(true, Ordering::SeqCst);
    let (first, second) = tokio::join!(
        agents[0].resume([(waiting[0].clone(), Decision::Approve)]),
        agents[1].resume([(waiting[1].clone(), Decision::Approve)]),
    );
    for (outcome, dir) in [first.unwrap(), second.unwrap()].iter().zip(&dirs) {
        assert_eq!(run_code_result(&outcome.messages), "deleted\n");
        assert_eq!((lines(&dir.0, "a.txt"), lines(&dir.0, "b.txt")), (1, 1));
    }
    let read = |dir: &TempDir| std::fs::read_to_string(dir.0.join("a.txt")).unwrap();
    assert_eq!(
        (read(&dirs[0]), read(&dirs[1])),
        ("one\n".into(), "uno\n".into())
    );
}

#[tokio::test]
async fn a_denied_call_is_an_exception_the_program_catches() {
    let dir = TempDir::new();
    let (saved, waiting) = pause(&dir.0).await;
    let (run, _) = AgentRun::from_json_verified(&saved, &key()).unwrap();
    let second = agent(&dir.0, vec![ScriptedTurn::text("Kept it.")], Some(run));
    let outcome = second
        .resume([(waiting, Decision::deny("keep c.txt"))])
        .await
        .unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(
        run_code_result(&outcome.messages),
        "not deleted: the user denied this call: keep c.txt\n"
    );
    assert!(dir.0.join("c.txt").exists());
    assert_eq!((lines(&dir.0, "a.txt"), lines(&dir.0, "b.txt")), (1, 1));
}

#[tokio::test]
async fn a_paused_program_is_not_read_from_an_unsigned_run() {
    let dir = TempDir::new();
    let (saved, _) = pause(&dir.0).await;
    let mut unsigned: Value = serde_json::from_str(&saved).unwrap();
    unsigned.as_object_mut().unwrap().remove("tag");
    let error = AgentRun::from_json(&unsigned.to_string()).unwrap_err();
    assert!(
        matches!(&error, ResumeError::InvalidState(message) if message.contains("paused program")),
        "{error}"
    );
}

#[tokio::test]
async fn a_hand_edited_journal_breaks_the_tag_and_is_refused() {
    let dir = TempDir::new();
    let (saved, _) = pause(&dir.0).await;
    let edited = saved.replacen("appended", "something else", 1);
    assert_ne!(edited, saved, "the journal holds the recorded results");
    let error = AgentRun::from_json_verified(&edited, &key()).unwrap_err();
    assert!(matches!(error, ResumeError::InvalidState(_)), "{error}");
}

// ---- the benchmark: 40 lookups and a summary, direct calling against code mode ----

/// A catalogue of 40 records, each naming the next one to read (so no model can read them all at once):
/// `lookup_record` gives a record of about 400 bytes.
fn catalogue() -> ToolStore {
    let store = ToolStore::new("catalogue");
    store
        .register(
            AgentTool::builder("lookup_record")
                .description("Look up one record of the catalogue by id.")
                .input_schema(json!({
                    "type": "object",
                    "properties": {"id": {"type": "integer", "description": "The record's id."}},
                    "required": ["id"]
                }))
                .output_schema(json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer"},
                        "title": {"type": "string"},
                        "score": {"type": "integer"},
                        "notes": {"type": "string"},
                        "next": {"type": ["integer", "null"], "description": "The id of the next record, if any."}
                    },
                    "required": ["id", "title", "score", "notes", "next"]
                }))
                .parallel()
                .handler(|_ctx: ToolContext, args: Value| async move {
                    let id = args["id"].as_i64().unwrap_or_default();
                    let next = (id < 40).then_some(id + 1);
                    let record = json!({
                        "id": id,
                        "title": format!("Record number {id} of the catalogue"),
                        "score": (id * 37) % 100,
                        "notes": "Archived in the main catalogue; reviewed twice, no open questions; \
                                  the owner is the records team; see the next record for the follow-up. \
                                  Kept for seven years under the retention policy of the department.",
                        "next": next,
                    });
                    AgentToolResult::text(record.to_string()).with_structured_content(record)
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    store
}

/// Bytes sent to the model per request (system prompt, messages as JSON, tool definitions in the OpenAI
/// dialect), and the number of requests.
#[derive(Default)]
struct Sent {
    bytes: usize,
    requests: usize,
}

fn measure(request: &yiem_core::llm::ModelRequest, sent: &Mutex<Sent>) {
    let messages = serde_json::to_string(&request.messages).unwrap();
    let tools = request
        .tools
        .definitions_json(yiem_core::store::Dialect::OpenAi)
        .unwrap()
        .len();
    let mut sent = sent.lock().unwrap();
    sent.bytes += request.system_prompt.len() + messages.len() + tools;
    sent.requests += 1;
}

fn last_result(request: &yiem_core::llm::ModelRequest) -> Option<Value> {
    request
        .messages
        .iter()
        .rev()
        .find_map(|message| match message {
            AgentMessage::ToolResult(result) => serde_json::from_str(&result.text_content()).ok(),
            AgentMessage::Assistant(_) => Some(Value::Null),
            _ => None,
        })
}

const SUMMARY_PROGRAM: &str = r#"
const records = [];
for (let id = 1; id !== null; ) {
  const record = await tools.lookup_record({ id });
  records.push(record);
  id = record.next;
}
const top = [...records].sort((a, b) => b.score - a.score).slice(0, 3);
print(`${records.length} records; mean score ${(records.reduce((s, r) => s + r.score, 0) / records.length).toFixed(1)}`);
print("top:", top.map(r => `${r.id} (${r.score})`).join(", "));
"#;

async fn direct_calling() -> (Sent, String) {
    let sent = Arc::new(Mutex::new(Sent::default()));
    let seen = Arc::clone(&sent);
    let model = ScriptedModel::from_fn(move |request| {
        measure(request, &seen);
        // Read the next record, until the last one says there is none; then answer.
        match last_result(request) {
            None => ScriptedTurn::tool_call("lookup_record", json!({ "id": 1 })),
            Some(record) => match record["next"].as_i64() {
                Some(next) => ScriptedTurn::tool_call("lookup_record", json!({ "id": next })),
                None => ScriptedTurn::text("40 records; mean score 51.0; top: 27, 8, 35."),
            },
        }
    });
    let agent = Agent::builder().model(model).tools(catalogue()).build();
    let outcome = agent
        .prompt("Summarise the catalogue: count, mean score, top three.")
        .await;
    assert_eq!(outcome.stop, RunStop::Finished);
    let sent = std::mem::take(&mut *sent.lock().unwrap());
    (sent, outcome.text())
}

async fn code_mode() -> (Sent, String, String) {
    let sent = Arc::new(Mutex::new(Sent::default()));
    let seen = Arc::clone(&sent);
    let model = ScriptedModel::from_fn(move |request| {
        measure(request, &seen);
        match request.messages.last() {
            Some(AgentMessage::ToolResult(_)) => {
                ScriptedTurn::text("40 records; mean score 51.0; top: 27, 8, 35.")
            }
            _ => ScriptedTurn::tool_call("run_code", json!({ "code": SUMMARY_PROGRAM })),
        }
    });
    let agent = Agent::builder()
        .model(model)
        .tools(catalogue())
        .code_mode(CodeMode::new())
        .build();
    let outcome = agent
        .prompt("Summarise the catalogue: count, mean score, top three.")
        .await;
    assert_eq!(outcome.stop, RunStop::Finished);
    let printed = run_code_result(&outcome.messages);
    let sent = std::mem::take(&mut *sent.lock().unwrap());
    (sent, outcome.text(), printed)
}

/// The figures of BENCHMARKS.md ("Code mode"): `cargo test -p yiem-core --features code-mode --test
/// code_mode -- --nocapture code_mode_sends_a_third`. Tokens are estimated as bytes / 4.
#[tokio::test]
async fn code_mode_sends_a_third_of_the_tokens_in_a_quarter_of_the_turns() {
    let (direct, _) = direct_calling().await;
    let (code, _, printed) = code_mode().await;
    assert_eq!(
        printed,
        "40 records; mean score 51.0\ntop: 27 (99), 8 (96), 35 (95)\n"
    );
    println!(
        "direct: {} turns, {} bytes (~{} tokens); code mode: {} turns, {} bytes (~{} tokens); \
         ratio {:.3} of the tokens, {:.3} of the turns",
        direct.requests,
        direct.bytes,
        direct.bytes / 4,
        code.requests,
        code.bytes,
        code.bytes / 4,
        code.bytes as f64 / direct.bytes as f64,
        code.requests as f64 / direct.requests as f64,
    );
    assert_eq!(direct.requests, 41);
    assert_eq!(code.requests, 2);
    assert!(
        code.bytes * 3 <= direct.bytes,
        "{} vs {}",
        code.bytes,
        direct.bytes
    );
    assert!(code.requests * 4 <= direct.requests);
}

/// The approval case across processes: this test pauses the program and saves the signed run, then runs
/// itself again as a new process (told where by `YIEM_CODE_MODE_RESUME`), which resumes the run with an
/// approval and writes what the program printed.
#[tokio::test]
async fn a_paused_program_resumes_in_a_new_process() {
    const CHILD: &str = "YIEM_CODE_MODE_RESUME";
    if let Ok(dir) = std::env::var(CHILD) {
        let dir = PathBuf::from(dir);
        let saved = std::fs::read_to_string(dir.join("run.json")).unwrap();
        let waiting = std::fs::read_to_string(dir.join("waiting")).unwrap();
        let (run, signature) = AgentRun::from_json_verified(&saved, &key()).unwrap();
        assert_eq!(signature, Signature::Valid);
        let agent = agent(&dir, vec![ScriptedTurn::text("Tidied.")], Some(run));
        let outcome = agent.resume([(waiting, Decision::Approve)]).await.unwrap();
        assert_eq!(outcome.stop, RunStop::Finished);
        std::fs::write(dir.join("printed"), run_code_result(&outcome.messages)).unwrap();
        return;
    }
    let dir = TempDir::new();
    let (saved, waiting) = pause(&dir.0).await;
    std::fs::write(dir.0.join("run.json"), saved).unwrap();
    std::fs::write(dir.0.join("waiting"), waiting).unwrap();
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_paused_program_resumes_in_a_new_process",
            "--test-threads=1",
        ])
        .env(CHILD, &dir.0)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "the resuming process failed: {status}");
    assert_eq!(
        std::fs::read_to_string(dir.0.join("printed")).unwrap(),
        "deleted\n"
    );
    assert_eq!((lines(&dir.0, "a.txt"), lines(&dir.0, "b.txt")), (1, 1));
    assert!(!dir.0.join("c.txt").exists());
}

#[tokio::test]
async fn cancelling_the_call_stops_a_program_that_would_run_on() {
    let dir = TempDir::new();
    let tools = store(&dir.0);
    let limits = CodeLimits::default().max_time(Duration::from_secs(3600));
    let run_code =
        CodeMode::new()
            .limits(limits)
            .tool(&tools, ToolExecutor::new(), ApprovalPolicy::default());
    let token = yiem_core::exec::CancellationToken::new();
    token.cancel();
    let ctx = ToolContext::new("c1").with_cancellation(token);
    let result = run_code
        .execute_with(ctx, json!({ "code": "while (true) {}" }))
        .await;
    assert!(result.is_error);
    assert_eq!(
        text(&result),
        "tool `run_code` was aborted before it finished"
    );
}

// ---- what `run_code` declares: deferred tools once loaded, tools registered later ----

/// `run_code`'s description in `request`.
fn run_code_description(request: &yiem_core::llm::ModelRequest) -> String {
    request
        .tools
        .iter()
        .find(|tool| tool.name() == "run_code")
        .expect("run_code is sent")
        .description()
        .to_owned()
}

fn simple_tool(name: &str, deferred: bool) -> AgentTool {
    let builder = AgentTool::builder(name)
        .description(format!("The {name} tool."))
        .input_schema(json!({"type": "object", "properties": {"id": {"type": "integer"}}}))
        .handler({
            let reply = format!("from {name}");
            move |_ctx: ToolContext, _args: Value| {
                let reply = reply.clone();
                async move { reply }
            }
        });
    let builder = if deferred {
        builder.defer_loading()
    } else {
        builder
    };
    builder.build().unwrap()
}

/// An agent over `lookup` and the deferred `archive_lookup`, with `late_lookup` registered after it was
/// built, whose model calls `archive_lookup` from code, answers, and answers a second prompt: the agent,
/// the `run_code` result and the three requests.
async fn catalog_run() -> (Agent, String, Vec<yiem_core::llm::ModelRequest>) {
    let tools = ToolStore::new("catalog");
    tools.register(simple_tool("lookup", false)).unwrap();
    tools.register(simple_tool("archive_lookup", true)).unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call(
            "run_code",
            json!({ "code": "print(await tools.archive_lookup({ id: 1 }))" }),
        ),
        ScriptedTurn::text("Found it."),
        ScriptedTurn::text("Still here."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tools(tools.clone())
        .code_mode(CodeMode::new())
        .build();
    tools.register(simple_tool("late_lookup", false)).unwrap();
    let outcome = agent.prompt("find record 1").await;
    assert_eq!(outcome.stop, RunStop::Finished);
    let result = run_code_result(&outcome.messages);
    agent.prompt("again").await;
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    (agent, result, requests)
}

#[tokio::test]
async fn a_deferred_tool_called_from_code_runs_and_counts_as_loaded() {
    let (agent, result, _) = catalog_run().await;
    assert_eq!(result, "from archive_lookup\n");
    assert!(
        agent
            .run_state()
            .loaded_tools()
            .contains(&"archive_lookup".to_owned())
    );
}

#[tokio::test]
async fn run_code_declares_a_deferred_tool_only_once_loaded() {
    let (_, _, requests) = catalog_run().await;
    let before = run_code_description(&requests[0]);
    assert!(before.contains("  lookup(args"), "{before}");
    assert!(!before.contains("archive_lookup"), "{before}");
    let after = run_code_description(&requests[1]);
    assert!(after.contains("  archive_lookup(args"), "{after}");
}

#[tokio::test]
async fn run_code_declares_tools_registered_after_the_agent_was_built() {
    let (_, _, requests) = catalog_run().await;
    let first = run_code_description(&requests[0]);
    assert!(first.contains("  late_lookup(args"), "{first}");
}

#[tokio::test]
async fn run_code_s_description_stays_the_same_while_nothing_changes() {
    let (_, _, requests) = catalog_run().await;
    assert_eq!(
        run_code_description(&requests[2]),
        run_code_description(&requests[1])
    );
}

// ---- approvals inside a program, as for direct calls ----

#[tokio::test]
async fn always_approve_inside_a_program_approves_the_tool_s_later_calls_in_and_out_of_it() {
    let dir = TempDir::new();
    for name in ["c.txt", "d.txt", "e.txt"] {
        std::fs::write(dir.0.join(name), "old").unwrap();
    }
    let program = r#"
print(await tools.delete_file({ name: "c.txt" }));
print(await tools.delete_file({ name: "d.txt" }));
"#;
    let agent = agent(
        &dir.0,
        vec![
            ScriptedTurn::tool_call("run_code", json!({ "code": program })),
            ScriptedTurn::tool_call("delete_file", json!({ "name": "e.txt" })),
            ScriptedTurn::text("Tidied."),
        ],
        None,
    );
    let outcome = agent.prompt("tidy up").await;
    let RunStop::AwaitingApproval { pending } = &outcome.stop else {
        panic!("expected a wait, got {:?}", outcome.stop)
    };
    assert_eq!(pending.len(), 1);
    let outcome = agent
        .resume([(pending[0].call_id.clone(), Decision::AlwaysApprove)])
        .await
        .unwrap();
    assert_eq!(outcome.stop, RunStop::Finished);
    assert_eq!(run_code_result(&outcome.messages), "deleted\ndeleted\n");
    for name in ["c.txt", "d.txt", "e.txt"] {
        assert!(!dir.0.join(name).exists(), "{name} is still there");
    }
}

#[tokio::test]
async fn the_approval_check_inside_a_program_sees_the_prepared_arguments() {
    let tools = ToolStore::new("files");
    tools
        .register(
            AgentTool::builder("remove")
                .description("Remove a file.")
                .input_schema(json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                }))
                // `./x` and `x` are the same file: the tool runs with the plain name.
                .prepare_arguments(|mut args| {
                    if let Some(name) = args["name"].as_str() {
                        args["name"] = json!(name.trim_start_matches("./"));
                    }
                    args
                })
                .handler(|_ctx: ToolContext, _args: Value| async { "removed" })
                .build()
                .unwrap(),
        )
        .unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([ScriptedTurn::tool_call(
            "run_code",
            json!({ "code": r#"print(await tools.remove({ name: "./protected.txt" }))"# }),
        )]))
        .tools(tools)
        .approval_policy(ApprovalPolicy::new(|call, _tool| {
            (call.arguments["name"] == "protected.txt").then(|| "the file is protected".to_owned())
        }))
        .code_mode(CodeMode::new())
        .build();
    let outcome = agent.prompt("remove it").await;
    let RunStop::AwaitingApproval { pending } = &outcome.stop else {
        panic!("expected a wait, got {:?}", outcome.stop)
    };
    assert_eq!(pending[0].tool_name, "remove");
    assert_eq!(pending[0].reason, "the file is protected");
}
