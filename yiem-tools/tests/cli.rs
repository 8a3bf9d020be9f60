//! The `yiem` program, spawned: `tools list`, `tools schema`, `tools call`, and bad input.

use std::process::{Command, Output};

use serde_json::{Value, json};

mod model_server;

use model_server::{ModelServer, Part, sse};
use yiem_core::agent::AgentSettings;

/// `yiem ARGS…`, with a data directory of its own (MCP pins and tokens never reach the user's).
fn yiem(args: &[&str]) -> Output {
    let data = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_yiem"))
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env("XDG_DATA_HOME", data.path())
        .output()
        .expect("yiem runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// Asserts `output` is a bad-input failure: exit code 2, nothing on stdout, exactly `line` on stderr.
fn assert_bad_input(output: &Output, line: &str) {
    assert_eq!(output.status.code(), Some(2), "{}", stderr(output));
    assert_eq!(stdout(output), "");
    assert_eq!(stderr(output), format!("{line}\n"));
}

#[test]
fn tools_list_prints_a_table() {
    let output = yiem(&["tools", "list"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 10);
    assert_eq!(
        lines[0],
        "NAME        LABEL              MODE        DESCRIPTION"
    );
    assert_eq!(
        lines[1],
        "bash        Run Shell Command  sequential  Run a shell command (`bash -c`) in the root directory and return its combined stdout and stderr."
    );
    assert_eq!(
        lines[7],
        "read        Read File          parallel    Read a file under the root directory."
    );
    let names: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "bash",
            "edit",
            "get_time",
            "grep",
            "list_tools",
            "ls",
            "read",
            "write",
            "write_tool"
        ]
    );
}

#[test]
fn tools_list_json_has_every_definition() {
    let output = yiem(&["tools", "list", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let listing: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(listing.len(), 9);
    let read = listing.iter().find(|t| t["name"] == "read").unwrap();
    assert_eq!(read["label"], "Read File");
    assert_eq!(read["mode"], "parallel");
    assert_eq!(
        read["annotations"],
        json!({"read_only": true, "destructive": null, "idempotent": true, "open_world": false})
    );
    assert_eq!(read["input_schema"]["required"], json!(["path"]));
    assert_eq!(
        read["description"],
        yiem_tools::read::read_tool().description()
    );
}

#[test]
fn tools_schema_prints_the_input_schema() {
    let output = yiem(&["tools", "schema", "edit"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let schema: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(&schema, yiem_tools::edit::edit_tool().input_schema());
    assert_eq!(
        schema["required"],
        json!(["path", "old_string", "new_string"])
    );
    assert_eq!(schema["properties"]["replace_all"]["type"], "boolean");
}

#[test]
fn tools_call_prints_the_result_content() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello\nworld\n").unwrap();
    let root = dir.path().to_str().unwrap();
    let read = yiem(&[
        "tools",
        "call",
        "read",
        "--args",
        r#"{"path": "hello.txt"}"#,
        "--root",
        root,
    ]);
    assert!(read.status.success(), "{}", stderr(&read));
    assert_eq!(stdout(&read), "     1\thello\n     2\tworld\n");
    assert_eq!(stderr(&read), "");

    let write = yiem(&[
        "tools",
        "call",
        "write",
        "--allow",
        "--root",
        root,
        "--args",
        r#"{"path": "out/x.txt", "content": "x"}"#,
    ]);
    assert_eq!(stdout(&write), "Created `out/x.txt` (1 byte).\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/x.txt")).unwrap(),
        "x"
    );

    let time = yiem(&[
        "tools",
        "call",
        "get_time",
        "--args",
        r#"{"timezone": "Asia/Tokyo"}"#,
    ]);
    assert!(time.status.success());
    assert!(
        stdout(&time).contains(" JST (UTC+09:00), "),
        "{}",
        stdout(&time)
    );
    assert!(
        stdout(&time).ends_with(", in Asia/Tokyo\n"),
        "{}",
        stdout(&time)
    );
}

#[test]
fn an_error_result_exits_1_with_the_error_text() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let missing = yiem(&[
        "tools",
        "call",
        "read",
        "--root",
        root,
        "--args",
        r#"{"path": "missing.txt"}"#,
    ]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(stdout(&missing), "");
    assert_eq!(
        stderr(&missing),
        "tool `read`: file `missing.txt` does not exist; use `ls` or `grep` to find the right path\n"
    );
    let failing = yiem(&[
        "tools",
        "call",
        "bash",
        "--allow",
        "--root",
        root,
        "--args",
        r#"{"command": "echo a; exit 4"}"#,
    ]);
    assert_eq!(failing.status.code(), Some(1));
    assert_eq!(stderr(&failing), "a\n\n[exit code 4]\n");
}

#[test]
fn an_unknown_tool_is_bad_input() {
    assert_bad_input(
        &yiem(&["tools", "call", "nope"]),
        "yiem: error: unknown tool `nope`; the tools are: bash, edit, get_time, grep, list_tools, ls, read, write, write_tool",
    );
    assert_bad_input(
        &yiem(&["tools", "schema", "nope"]),
        "yiem: error: unknown tool `nope`; the tools are: bash, edit, get_time, grep, list_tools, ls, read, write, write_tool",
    );
}

#[test]
fn invalid_json_is_bad_input() {
    assert_bad_input(
        &yiem(&["tools", "call", "read", "--args", r#"{"path": "#]),
        r#"yiem: error: --args is not valid JSON (EOF while parsing a value at line 1 column 9); give a JSON object such as '{"path": "README.md"}'"#,
    );
    assert_bad_input(
        &yiem(&["tools", "call", "read", "--args", "[1]"]),
        "yiem: error: arguments for tool `read` must be a JSON object, got an array",
    );
}

#[test]
fn wrong_types_are_bad_input() {
    assert_bad_input(
        &yiem(&["tools", "call", "read", "--args", r#"{"path": 3}"#]),
        "yiem: error: invalid arguments for tool `read`: at `/path`: expected a string, got the number 3; valid properties: `path`, `offset`, `limit`",
    );
    assert_bad_input(
        &yiem(&[
            "tools",
            "call",
            "write",
            "--allow",
            "--args",
            r#"{"path": "a"}"#,
        ]),
        "yiem: error: invalid arguments for tool `write`: missing required property `content` (expected a string); valid properties: `path`, `content`",
    );
}

#[test]
fn bad_flags_and_roots_are_bad_input() {
    assert_bad_input(
        &yiem(&["tools", "frobnicate"]),
        "yiem: error: unrecognized subcommand 'frobnicate' (see `yiem --help`)",
    );
    assert_bad_input(
        &yiem(&["tools", "list", "--yaml"]),
        "yiem: error: unexpected argument '--yaml' found (see `yiem --help`)",
    );
    let output = yiem(&["tools", "call", "ls", "--root", "/definitely/not/here"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).starts_with("yiem: error: --root: root directory `/definitely/not/here`: "),
        "{}",
        stderr(&output)
    );
    assert_eq!(stderr(&output).lines().count(), 1);
}

#[test]
fn help_goes_to_stdout_with_success() {
    let output = yiem(&["tools", "--help"]);
    assert!(output.status.success());
    assert!(stdout(&output).contains("list"));
    assert!(stdout(&output).contains("schema"));
    assert!(stdout(&output).contains("call"));
}

#[test]
fn tools_call_write_tool_writes_into_the_given_tools_dir() {
    let dir = tempfile::tempdir().unwrap();
    let args = json!({
        "name": "roll_die",
        "label": "Roll Die",
        "description": "Roll a six-sided die.",
        "body": "Ok(\"4\".to_string())"
    })
    .to_string();
    let tools_dir = dir.path().to_str().unwrap();
    let output = yiem(&[
        "tools",
        "call",
        "write_tool",
        "--allow",
        "--tools-dir",
        tools_dir,
        "--args",
        &args,
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let path = dir.path().join("roll_die.rs");
    assert_eq!(
        stdout(&output),
        format!(
            "Wrote tool `roll_die` to `{}`. The next `cargo build` compiles it in (every file in the tools directory is included); restart the program to call `roll_die`.\n",
            path.display()
        )
    );
    assert!(
        std::fs::read_to_string(path)
            .unwrap()
            .contains("pub async fn roll_die(_args: RollDieArgs)")
    );

    assert_bad_input(
        &yiem(&[
            "tools",
            "call",
            "write_tool",
            "--allow",
            "--tools-dir",
            "/not/a/dir",
            "--args",
            &args,
        ]),
        "yiem: error: --tools-dir: `/not/a/dir` is not a directory; give an existing directory",
    );
}

#[test]
fn tools_schema_with_a_dialect_prints_the_providers_definition() {
    let output = yiem(&["tools", "schema", "edit", "--dialect", "openai-strict"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let definition: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let expected = yiem_tools::edit::edit_tool()
        .definition(yiem_core::store::Dialect::OpenAiStrict)
        .unwrap()
        .clone();
    assert_eq!(definition, expected);
    assert_eq!(definition["function"]["strict"], json!(true));
    assert_eq!(
        definition["function"]["parameters"]["additionalProperties"],
        json!(false)
    );
}

#[test]
fn tools_list_json_with_a_dialect_prints_the_request_ready_list() {
    let output = yiem(&["tools", "list", "--json", "--dialect", "anthropic"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let list: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"read") && names.contains(&"list_tools"));
    assert!(list[0]["input_schema"]["type"] == json!("object"));
}

#[test]
fn a_tool_a_dialect_cannot_express_is_bad_input_naming_the_tool() {
    let output = yiem(&["tools", "list", "--json", "--dialect", "openai-strict"]);
    assert_bad_input(
        &output,
        "yiem: error: tool `write_tool` cannot be described for OpenAI strict mode: `/input_schema` in type `WriteToolArgs` accepts any JSON value, which the target cannot express",
    );
}

#[test]
fn an_unknown_dialect_is_bad_input() {
    let output = yiem(&["tools", "schema", "read", "--dialect", "bogus"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "yiem: error: invalid value 'bogus' for '--dialect <DIALECT>': unknown dialect `bogus`: use one of `mcp`, `openai`, `openai-strict`, `anthropic`, `gemini` (see `yiem --help`)\n"
    );
}

#[test]
fn chat_without_a_model_says_it_is_offline_and_its_demo_calls_a_tool_that_asks_first() {
    let root = tempfile::tempdir().unwrap();
    let root_arg = root.path().to_str().unwrap();
    // A key alone does not take the chat online. The demo's call of `write` asks; `n` refuses it.
    let refused = chat_with(
        &["--root", root_arg],
        &[("ANTHROPIC_API_KEY", "sk-ant-unused"), ("YIEM_HISTORY", "")],
        b"hello\nn\n",
    );
    assert!(refused.status.success(), "{}", stderr(&refused));
    assert!(
        stderr(&refused).starts_with(
            "[offline: a scripted demo model, which answers any prompt by calling `write` to create \
             yiem-demo.txt (it asks you first); set YIEM_PROVIDER and its key to chat with a real model]\n"
        ),
        "{}",
        stderr(&refused)
    );
    assert_eq!(
        stdout(&refused),
        "(offline demo) I will write a file with the `write` tool, which runs only when you approve it.\n\
         → write {\"path\":\"yiem-demo.txt\",\"content\":\"Written by the offline demo of yiem chat.\"}\n\
         allow write(path: yiem-demo.txt, content: Written by the offline demo of yiem chat.)? [y]es / [n]o / [a]lways / [e]dit: \n\
         [write denied]\n\
         ✗ write\n\
         (offline demo) `write` answered: the user denied this call: the user said no. This is a scripted demo \
         model: set YIEM_PROVIDER (openai, openai-responses, anthropic, gemini) with its key (OPENAI_API_KEY and \
         YIEM_BASE_URL, ANTHROPIC_API_KEY, GEMINI_API_KEY) to chat with a real one. \
         My tools: bash, edit, get_time, grep, list_tools, ls, read, write, write_tool.\n"
    );
    assert!(!root.path().join("yiem-demo.txt").exists());
    // `y` runs it.
    let approved = chat_with(
        &["--root", root_arg],
        &[("YIEM_HISTORY", "")],
        b"hello\ny\n",
    );
    assert!(approved.status.success(), "{}", stderr(&approved));
    assert!(
        stdout(&approved).contains("✓ write\n(offline demo) `write` answered: "),
        "{}",
        stdout(&approved)
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("yiem-demo.txt")).unwrap(),
        "Written by the offline demo of yiem chat."
    );
}

/// A scripted model on loopback answering with these SSE bodies, one per request; its URL and the server.
fn sse_server(bodies: Vec<String>) -> (String, ModelServer) {
    let server = ModelServer::start(
        bodies
            .into_iter()
            .map(|body| vec![Part::Bytes(body)])
            .collect(),
    );
    (server.url.clone(), server)
}

#[test]
fn chat_runs_the_agent_loop_against_an_openai_compatible_server() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "x").unwrap();
    let first = sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "ls", "arguments": ""}}
        ]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    let second = sse(&[
        json!({"choices": [{"index": 0, "delta": {"content": "There is "}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "one file."}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]);
    let (url, server) = sse_server(vec![first, second]);
    let output = Command::new(env!("CARGO_BIN_EXE_yiem"))
        .args(["chat", "--root"])
        .arg(root.path())
        .env("YIEM_BASE_URL", &url)
        .env("OPENAI_API_KEY", "sk-test")
        .env("YIEM_MODEL", "test-model")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"what files are there?\n")?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "→ ls {}\n✓ ls\nThere is one file.\n");
    let requests = server.requests();
    let second = &requests[1];
    assert_eq!(second["model"], "test-model");
    let tool_result = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(tool_result["role"], "tool");
    assert_eq!(tool_result["tool_call_id"], "call_1");
    assert!(
        tool_result["content"].as_str().unwrap().contains("a.txt"),
        "{tool_result}"
    );
}

/// Runs `yiem chat` with `env`, writing `input` to its stdin.
/// A pipe whose reader is gone: every write to it fails (EPIPE).
fn closed_pipe() -> std::process::Stdio {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    writer.into()
}

#[test]
fn a_chat_whose_stderr_or_stdout_is_a_closed_pipe_ends_quietly_instead_of_panicking() {
    // The offline banner goes to stderr and the demo's question and answer to stdout: with their
    // readers gone before yiem starts, every one of those writes fails. `eprintln!` and `println!`
    // panicked on that (exit 101).
    let root = tempfile::tempdir().unwrap();
    for (stdout_closed, stderr_closed) in [(false, true), (true, false), (true, true)] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_yiem"));
        command
            .args(["chat", "--root", root.path().to_str().unwrap()])
            .env_remove("YIEM_BASE_URL")
            .env_remove("YIEM_PROVIDER")
            .env_remove("RUST_BACKTRACE")
            .env("YIEM_HISTORY", "")
            .stdin(std::process::Stdio::piped())
            .stdout(if stdout_closed {
                closed_pipe()
            } else {
                std::process::Stdio::piped()
            })
            .stderr(if stderr_closed {
                closed_pipe()
            } else {
                std::process::Stdio::piped()
            });
        let mut child = command.spawn().expect("yiem runs");
        {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"hello\nn\n")
                .unwrap();
        }
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "stdout closed: {stdout_closed}, stderr closed: {stderr_closed}: {} {}",
            output.status,
            stderr(&output)
        );
        if !stdout_closed {
            assert!(
                stdout(&output).contains("(offline demo)"),
                "{}",
                stdout(&output)
            );
        }
    }
}

fn chat(env: &[(&str, &str)], input: &[u8]) -> std::process::Output {
    chat_in(&std::env::temp_dir(), env, input)
}

/// Runs `yiem chat --root root` with `env`, writing `input` to its stdin.
fn chat_in(root: &std::path::Path, env: &[(&str, &str)], input: &[u8]) -> std::process::Output {
    let root = root.to_str().expect("a UTF-8 temp path");
    chat_with(&["--root", root], env, input)
}

/// Runs `yiem chat ARGS` offline (no provider variables) with `env` added, feeding it `input`.
fn chat_with(args: &[&str], env: &[(&str, &str)], input: &[u8]) -> std::process::Output {
    // A data directory of its own unless `env` names one: MCP pins and tokens never reach the user's.
    let data = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_yiem"));
    command
        .arg("chat")
        .args(args)
        .env("XDG_DATA_HOME", data.path())
        .env_remove("YIEM_BASE_URL")
        .env_remove("YIEM_PROVIDER")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    command
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input)?;
            child.wait_with_output()
        })
        .unwrap()
}

fn named_sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn chat_talks_to_anthropic_when_yiem_provider_says_so() {
    let root = tempfile::tempdir().unwrap();
    let first = named_sse(&[
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ]);
    let second = named_sse(&[
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 9, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Empty."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        json!({"type": "message_stop"}),
    ]);
    let (url, server) = sse_server(vec![first, second]);
    let output = chat_in(
        root.path(),
        &[
            ("YIEM_PROVIDER", "anthropic"),
            ("ANTHROPIC_API_KEY", "sk-ant-test"),
            ("ANTHROPIC_BASE_URL", url.as_str()),
            ("YIEM_MODEL", "claude-test"),
        ],
        b"list the files\n",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "→ ls {}\n✓ ls\nEmpty.\n");
    assert!(
        stderr(&output).contains(&format!("[claude-test at {url}/messages]")),
        "{}",
        stderr(&output)
    );
    let requests = server.requests();
    let second = &requests[1];
    assert_eq!(second["model"], "claude-test");
    let results = &second["messages"].as_array().unwrap().last().unwrap()["content"][0];
    assert_eq!(results["type"], "tool_result");
    assert_eq!(results["tool_use_id"], "toolu_1");
}

#[test]
fn chat_shows_a_gemini_error_and_exits_1() {
    let refused = format!(
        "data: {}\n\n",
        json!({"candidates": [{"content": {"parts": [], "role": "model"}, "finishReason": "SAFETY"}]})
    );
    let (url, server) = sse_server(vec![refused]);
    let base = url.replace("/v1", "/v1beta");
    let output = chat(
        &[
            ("YIEM_PROVIDER", "gemini"),
            ("GEMINI_API_KEY", "AIza-test"),
            ("GEMINI_BASE_URL", base.as_str()),
            ("YIEM_MODEL", "gemini-test"),
        ],
        b"hello\n",
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stdout(&output).contains(
            "[error: POST http://127.0.0.1:"
        ) && stdout(&output).contains(
            "/v1beta/models/gemini-test:streamGenerateContent?alt=sse failed: the server stopped the reply with finishReason \"SAFETY\"]"
        ),
        "{}",
        stdout(&output)
    );
    assert!(
        stderr(&output).contains("yiem: error: the last run ended in a model error"),
        "{}",
        stderr(&output)
    );
    // The built-in tool whose argument accepts any JSON value goes as Gemini's `parametersJsonSchema`.
    assert!(!stderr(&output).contains("left out"), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let declarations = &requests[0]["tools"][0]["functionDeclarations"];
    let write_tool = declarations
        .as_array()
        .unwrap()
        .iter()
        .find(|declaration| declaration["name"] == "write_tool")
        .expect("write_tool is declared");
    assert_eq!(
        write_tool["parametersJsonSchema"]["properties"]["input_schema"]["description"]
            .as_str()
            .map(|text| text.starts_with("The arguments as a JSON Schema object")),
        Some(true),
        "{write_tool}"
    );
}

#[test]
fn chat_with_a_named_provider_and_no_key_says_what_to_set() {
    let output = chat(&[("YIEM_PROVIDER", "anthropic")], b"hi\n");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "yiem: error: the model is misconfigured: `ANTHROPIC_API_KEY` is not set: set it to your API key\n"
    );
    let output = chat(&[("YIEM_PROVIDER", "cohere")], b"hi\n");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "yiem: error: the model is misconfigured: `YIEM_PROVIDER` is `cohere`, which this build does not \
         know: use one of openai, openai-responses, anthropic, gemini, or offline\n"
    );
}

#[test]
fn chat_adds_the_tools_of_an_mcp_server_it_starts() {
    // yiem itself is the MCP server here: `yiem mcp` over stdio, its tools prefixed.
    let dir = tempfile::tempdir().unwrap();
    let server = format!(
        "{} mcp --root {}",
        env!("CARGO_BIN_EXE_yiem"),
        dir.path().display()
    );
    let output = chat_with(
        &["--mcp", &server, "--mcp-prefix", "remote_"],
        &[],
        b"hello\n",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let said = stdout(&output);
    for tool in [
        "remote_bash",
        "remote_read",
        "remote_write",
        "read",
        "write",
    ] {
        assert!(said.contains(tool), "{tool} in {said}");
    }
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("[MCP server `"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn chat_refuses_mcp_tools_that_clash_with_its_own_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let server = format!(
        "{} mcp --root {}",
        env!("CARGO_BIN_EXE_yiem"),
        dir.path().display()
    );
    let output = chat_with(&["--mcp", &server], &[], b"hello\n");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "the store already has a tool named `bash`; give the server a prefix (see --mcp-prefix)"
        ),
        "{stderr}"
    );
}

#[test]
fn chat_with_an_mcp_server_that_does_not_start_exits_2_naming_it() {
    let output = chat_with(&["--mcp", "/nonexistent/server --flag"], &[], b"hello\n");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("MCP server `/nonexistent/server` could not be connected: cannot start"),
        "{stderr}"
    );
}

#[test]
fn chat_refuses_an_mcp_command_line_it_cannot_split() {
    for (line, error) in [
        (
            "",
            "yiem: error: --mcp: give a command line, e.g. --mcp 'npx -y some-server'",
        ),
        (
            "node 'server.js\u{1b}[2J",
            "yiem: error: --mcp node 'server.js\u{241b}[2J: a quote is not closed; quote a path with \
             spaces as a shell would, e.g. --mcp \"'/my tools/server' --flag\"",
        ),
    ] {
        let output = chat_with(&["--mcp", line], &[], b"hello\n");
        assert_bad_input(&output, error);
    }
}

/// Runs `yiem chat ARGS` against the scripted OpenAI-compatible `model`, feeding it `input`.
fn chat_against(model: &ModelServer, args: &[&str], input: &[u8]) -> std::process::Output {
    chat_with(
        args,
        &[
            ("YIEM_BASE_URL", model.url.as_str()),
            ("OPENAI_API_KEY", "sk-test"),
            ("YIEM_MODEL", "test-model"),
            ("YIEM_HISTORY", ""),
        ],
        input,
    )
}

#[test]
fn chat_from_a_pipe_reads_an_approval_from_the_next_line() {
    let root = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        model_server::calls("call_1", "write", json!({"path": "a.txt", "content": "x"})),
        model_server::says("Not written."),
    ]);
    let root_arg = root.path().to_str().unwrap();
    let output = chat_against(&model, &["--root", root_arg], b"write a.txt\nn\n");
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "→ write {\"path\":\"a.txt\",\"content\":\"x\"}\n\
         allow write(path: a.txt, content: x)? [y]es / [n]o / [a]lways / [e]dit: \n\
         [write denied]\n\
         ✗ write\n\
         Not written.\n"
    );
    assert!(!root.path().join("a.txt").exists());
}

#[test]
fn chat_from_a_pipe_edits_the_arguments_of_a_call_before_it_runs() {
    let root = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        model_server::calls("call_1", "write", json!({"path": "a.txt", "content": "x"})),
        model_server::says("Done."),
    ]);
    let root_arg = root.path().to_str().unwrap();
    let input = b"write a.txt\ne\n[1]\nnot json\n{\"path\": \"b.txt\", \"content\": \"edited\"}\n";
    let output = chat_against(&model, &["--root", root_arg], input);
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stdout(&output);
    assert!(
        said.contains("the arguments must be a JSON object, e.g. {\"command\": \"ls\"}\n"),
        "{said}"
    );
    assert!(
        said.contains("not valid JSON (expected ident at line 1 column 2); edit them again\n"),
        "{said}"
    );
    assert!(said.contains("✓ write\nDone.\n"), "{said}");
    assert!(!root.path().join("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(root.path().join("b.txt")).unwrap(),
        "edited"
    );
}

#[test]
fn chat_with_allow_runs_the_call_unasked_and_the_input_ending_denies_a_waiting_one() {
    let root = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        model_server::calls("call_1", "write", json!({"path": "a.txt", "content": "x"})),
        model_server::says("Written."),
        model_server::calls(
            "call_2",
            "edit",
            json!({"path": "a.txt", "old": "x", "new": "y"}),
        ),
        model_server::says("Not edited."),
    ]);
    let root_arg = root.path().to_str().unwrap();
    let allowed = chat_against(
        &model,
        &["--root", root_arg, "--allow", "write"],
        b"write a.txt\n",
    );
    assert!(allowed.status.success(), "{}", stderr(&allowed));
    assert_eq!(
        stdout(&allowed),
        "→ write {\"path\":\"a.txt\",\"content\":\"x\"}\n✓ write\nWritten.\n"
    );
    // No line answers the question: the call is denied, and the chat ends normally.
    let unanswered = chat_against(&model, &["--root", root_arg], b"edit a.txt\n");
    assert!(unanswered.status.success(), "{}", stderr(&unanswered));
    assert!(
        stdout(&unanswered).contains("✗ edit\nNot edited.\n"),
        "{}",
        stdout(&unanswered)
    );
    let denied = &model.requests()[3]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        denied["content"]
            .as_str()
            .unwrap()
            .contains("the input ended before an answer"),
        "{denied}"
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("a.txt")).unwrap(),
        "x"
    );
}

#[test]
fn chat_commands_work_from_a_pipe_and_save_a_run_that_loads() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("run.json");
    let input = format!(
        // `n`: the offline demo's call of `write` asks, and is refused.
        "hello\nn\n/model\n/tools\n/save {}\n/frobnicate\n/save\n/reset\n/save {}\n/exit\nnever sent\n",
        saved.display(),
        dir.path().join("empty.json").display()
    );
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let output = chat_with(
        &[],
        &[("YIEM_HISTORY", ""), ("XDG_DATA_HOME", data)],
        input.as_bytes(),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stdout(&output);
    assert!(
        said.contains(
            "[model: offline: a scripted demo model (set YIEM_PROVIDER to chat with a real one)]\n"
        ),
        "{said}"
    );
    assert!(said.contains("NAME        LABEL"), "{said}");
    assert!(
        said.contains(&format!("[saved 4 messages to {}]\n", saved.display())),
        "{said}"
    );
    assert!(said.contains("unknown command `/frobnicate`: use /tools, /model, /reset, /save FILE, /load FILE, /help or /exit\n"), "{said}");
    assert!(said.contains("/save needs a file: /save FILE\n"), "{said}");
    assert!(said.contains("[a new conversation]\n"), "{said}");
    assert!(said.contains("[saved 0 messages to"), "{said}");
    // Signed with the user's key, made on the first save and readable by the user only.
    let key_file = dir.path().join("data/yiem/run-key");
    let key =
        yiem_core::agent::RunKey::from_hex(&std::fs::read_to_string(&key_file).unwrap()).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let (run, signature) = yiem_core::agent::AgentRun::from_json_verified(
        &std::fs::read_to_string(&saved).unwrap(),
        &key,
    )
    .unwrap();
    assert_eq!(signature, yiem_core::agent::Signature::Valid);
    assert_eq!(run.messages().len(), 4);
    // Loading it goes on from there.
    let output = chat_with(
        &["--resume", saved.to_str().unwrap()],
        &[("YIEM_HISTORY", ""), ("XDG_DATA_HOME", data)],
        b"",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with(&format!(
            "[loaded 4 messages from {}]\n[last reply: (offline demo) `write` answered",
            saved.display()
        )),
        "{}",
        stdout(&output)
    );
}

#[test]
fn chat_resume_of_a_file_that_is_no_saved_chat_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "just notes").unwrap();
    let output = chat_with(&["--resume", file.to_str().unwrap()], &[], b"hello\n");
    assert_eq!(output.status.code(), Some(2));
    // After the offline banner, the error in one line.
    let error = |output: &Output| stderr(output).lines().nth(1).unwrap_or_default().to_owned();
    assert!(
        error(&output).starts_with(&format!(
            "yiem: error: {} is not a saved chat: ",
            file.display()
        )),
        "{}",
        stderr(&output)
    );
    let missing = dir.path().join("missing.json");
    let output = chat_with(&["--resume", missing.to_str().unwrap()], &[], b"hello\n");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        error(&output).starts_with(&format!("yiem: error: cannot read {}: ", missing.display())),
        "{}",
        stderr(&output)
    );
}

#[test]
fn chat_exit_status_follows_the_last_run() {
    // A stream that ends before its reply is complete is a model error.
    let cut_short = || vec![Part::Bytes(model_server::event(model_server::text("half")))];
    let model = ModelServer::start(vec![cut_short(), model_server::says("Fine now.")]);
    let recovered = chat_against(&model, &[], b"one\ntwo\n");
    assert!(recovered.status.success(), "{}", stderr(&recovered));
    assert!(
        stdout(&recovered).contains("[error: "),
        "{}",
        stdout(&recovered)
    );
    assert!(
        stdout(&recovered).ends_with("Fine now.\n"),
        "{}",
        stdout(&recovered)
    );
    let model = ModelServer::start(vec![model_server::says("Fine."), cut_short()]);
    let failed = chat_against(&model, &[], b"one\ntwo\n");
    assert_eq!(failed.status.code(), Some(1), "{}", stderr(&failed));
    assert!(
        stderr(&failed).ends_with("yiem: error: the last run ended in a model error\n"),
        "{}",
        stderr(&failed)
    );
}

#[test]
fn chat_resume_of_a_run_waiting_for_approval_asks_and_goes_on() {
    use yiem_core::{
        agent::{Agent, RunStop},
        llm::{ScriptedModel, ScriptedTurn},
        store::ToolStore,
    };
    let root = tempfile::tempdir().unwrap();
    // Another program's agent stopped at a call of `write` that waits for approval, and saved the run.
    let store = ToolStore::new("saved").with_state(yiem_tools::ToolRoot::new(root.path()).unwrap());
    store.register(yiem_tools::write::write_tool()).unwrap();
    let agent = Agent::builder()
        .tools(store)
        .require_approval(["write"])
        .model(ScriptedModel::new([ScriptedTurn::tool_call(
            "write",
            json!({"path": "saved.txt", "content": "approved later"}),
        )]))
        .build();
    let outcome = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(agent.prompt("write saved.txt"));
    assert!(
        matches!(outcome.stop, RunStop::AwaitingApproval { .. }),
        "{:?}",
        outcome.stop
    );
    let saved = root.path().join("run.json");
    std::fs::write(&saved, agent.run_state().to_json()).unwrap();
    let root_arg = root.path().to_str().unwrap();
    let data = root.path().join("data");
    let output = chat_with(
        &["--root", root_arg, "--resume", saved.to_str().unwrap()],
        &[
            ("YIEM_HISTORY", ""),
            ("XDG_DATA_HOME", data.to_str().unwrap()),
        ],
        b"y\n",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stdout(&output);
    assert!(
        said.starts_with(&format!(
            "[loaded 2 messages from {0}]\n[{0} carries no signature of yours: nothing in it approves a call; its calls are asked again]\nallow write(path: saved.txt, content: approved later)? [y]es / [n]o / [a]lways / [e]dit: \n→ write",
            saved.display()
        )),
        "{said}"
    );
    assert!(
        said.contains("✓ write\n(offline demo) `write` answered: "),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("saved.txt")).unwrap(),
        "approved later"
    );
}

#[test]
fn chat_resume_of_a_run_edited_to_approve_a_call_asks_again() {
    use yiem_core::{
        agent::{Agent, Decision, RunKey},
        llm::{ScriptedModel, ScriptedTurn},
        store::ToolStore,
    };
    let root = tempfile::tempdir().unwrap();
    // The user's key, and a run of theirs that waits for `write`, decided and signed.
    let key = RunKey::new([9; 32]);
    let data = root.path().join("data");
    std::fs::create_dir_all(data.join("yiem")).unwrap();
    std::fs::write(data.join("yiem/run-key"), key.to_hex()).unwrap();
    let store = ToolStore::new("saved").with_state(yiem_tools::ToolRoot::new(root.path()).unwrap());
    store.register(yiem_tools::write::write_tool()).unwrap();
    let agent = Agent::builder()
        .tools(store)
        .require_approval(["write"])
        .model(ScriptedModel::new([ScriptedTurn::tool_call(
            "write",
            json!({"path": "evil.txt", "content": "unasked"}),
        )]))
        .build();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(agent.prompt("write"));
    let mut run = agent.run_state();
    let id = run.pending_approvals()[0].call_id.clone();
    run.decide([(id, Decision::Approve)]).unwrap();
    // Signed, the approval stands: the call runs without a question.
    let saved = root.path().join("run.json");
    std::fs::write(&saved, run.to_json_signed(&key)).unwrap();
    let resume = || {
        chat_with(
            &[
                "--root",
                root.path().to_str().unwrap(),
                "--resume",
                saved.to_str().unwrap(),
            ],
            &[
                ("YIEM_HISTORY", ""),
                ("XDG_DATA_HOME", data.to_str().unwrap()),
            ],
            b"n\n",
        )
    };
    // Edited by hand (here: `write` approved for the rest of the run), it asks again: `n` denies it.
    let mut edited: serde_json::Value = serde_json::from_str(&run.to_json_signed(&key)).unwrap();
    edited["always_approved"] = json!(["write"]);
    std::fs::write(&saved, edited.to_string()).unwrap();
    let output = resume();
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stdout(&output);
    assert!(
        said.contains("was changed since you saved it (or saved by someone else): nothing in it approves a call; its calls are asked again]\nallow write(path: evil.txt, content: unasked)?"),
        "{said}"
    );
    assert!(!root.path().join("evil.txt").exists(), "{said}");
    // As signed, it runs: the approval was the user's.
    std::fs::write(&saved, run.to_json_signed(&key)).unwrap();
    let output = resume();
    assert!(output.status.success(), "{}", stderr(&output));
    // (The `n` after it is a prompt, whose offline demo asks about a call of its own.)
    assert!(
        !stdout(&output).contains("allow write(path: evil.txt"),
        "{}",
        stdout(&output)
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("evil.txt")).unwrap(),
        "unasked"
    );
}

#[test]
fn chat_from_a_pipe_aborts_a_run_on_sigint_and_exits_130_on_one_while_idle() {
    use std::io::{BufRead, BufReader, Write};
    let root = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        model_server::calls("call_1", "bash", json!({"command": "sleep 600"})),
        model_server::says("Still here."),
    ]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_yiem"))
        .args(["chat", "--allow", "bash", "--root"])
        .arg(root.path())
        .env_remove("YIEM_PROVIDER")
        .env("YIEM_BASE_URL", &model.url)
        .env("OPENAI_API_KEY", "sk-test")
        .env("YIEM_HISTORY", "")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut read_until = |wanted: &str| {
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            assert_ne!(
                stdout.read_line(&mut line).unwrap(),
                0,
                "no `{wanted}` in {seen}"
            );
            seen.push_str(&line);
            if line.contains(wanted) {
                return seen;
            }
        }
    };
    let pid = child.id().to_string();
    let interrupt = || {
        let kill = Command::new("kill").args(["-INT", &pid]).status().unwrap();
        assert!(kill.success());
    };
    writeln!(stdin, "sleep a while").unwrap();
    read_until("→ bash");
    interrupt();
    // (Whether the signal came as the model's stream ended or while `sleep` ran, the run stops.)
    read_until("[run aborted: every call has its result; the next prompt goes on]");
    writeln!(stdin, "again\n/model").unwrap();
    read_until("Still here.");
    // `/model` answered: the chat waits for the next line, with no run under way.
    read_until("[model: ");
    interrupt();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
}

#[test]
fn chat_model_command_switches_the_model_and_keeps_the_conversation() {
    let model = ModelServer::start(vec![
        model_server::says("First."),
        model_server::says("Second."),
    ]);
    let output = chat_against(&model, &[], b"one\n/model\n/model other-model\ntwo\n");
    assert!(output.status.success(), "{}", stderr(&output));
    let endpoint = format!("{}/chat/completions", model.url);
    assert_eq!(
        stdout(&output),
        format!(
            "First.\n[model: test-model at {endpoint}]\n[model: other-model at {endpoint}]\nSecond.\n"
        )
    );
    let requests = model.requests();
    assert_eq!(requests[0]["model"], "test-model");
    assert_eq!(requests[1]["model"], "other-model");
    let contents: Vec<&Value> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| &message["content"])
        .collect();
    assert!(
        contents.contains(&&json!("one")) && contents.contains(&&json!("First.")),
        "{contents:?}"
    );
    // Offline there is no provider to switch within.
    let offline = chat_with(&[], &[("YIEM_HISTORY", "")], b"/model gpt-x\n");
    assert!(
        stdout(&offline).contains(
            "/model NAME needs a provider: set YIEM_PROVIDER (or YIEM_BASE_URL) and its key\n"
        ),
        "{}",
        stdout(&offline)
    );
}

#[test]
fn chat_approve_or_allow_of_a_tool_that_does_not_exist_is_bad_input() {
    for flag in ["--approve", "--allow"] {
        let output = chat_with(&[flag, "bsh"], &[], b"hello\n");
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert_eq!(
            stderr(&output),
            format!(
                "yiem: error: {flag} bsh: there is no tool `bsh`; the tools are: bash, edit, get_time, grep, \
                 list_tools, ls, read, write, write_tool\n"
            )
        );
    }
}

#[test]
fn chat_shows_escape_sequences_from_the_model_and_tools_escaped_never_obeyed() {
    let root = tempfile::tempdir().unwrap();
    // The person must see the whole command: a carriage return and "clear line" once hid `rm -rf`.
    let spoof = "rm -rf ~/precious # \r\u{1b}[2K ls -la";
    let model = ModelServer::start(vec![
        model_server::calls("call_1", "bash", json!({ "command": spoof })),
        model_server::says(
            "Title\u{1b}]0;owned\u{7} clipboard\u{1b}]52;c;ZWNobw==\u{7} \u{9b}2J done.",
        ),
    ]);
    let root_arg = root.path().to_str().unwrap();
    let output = chat_against(&model, &["--root", root_arg], b"tidy up\nn\n");
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stdout(&output);
    assert!(
        !said.contains(['\u{1b}', '\r', '\u{7}', '\u{9b}']),
        "a control character reached the terminal: {said:?}"
    );
    assert_eq!(
        said,
        "→ bash {\"command\":\"rm -rf ~/precious # \\r\\u001b[2K ls -la\"}\n\
         allow bash(rm -rf ~/precious # ␍␛[2K ls -la)? [y]es / [n]o / [a]lways / [e]dit: \n\
         [bash denied]\n\
         ✗ bash\n\
         Title␛]0;owned␇ clipboard␛]52;c;ZWNobw==␇ ⟨U+009B⟩2J done.\n"
    );
}

#[test]
fn an_approval_question_shows_every_line_of_the_arguments() {
    let root = tempfile::tempdir().unwrap();
    // Past the short form's 80 characters and on a second line: both once hidden from the person.
    let command = format!("ls{}\nrm -rf ~/precious", " ".repeat(100));
    let model = ModelServer::start(vec![
        model_server::calls("call_1", "bash", json!({ "command": command })),
        model_server::says("ok"),
    ]);
    let root_arg = root.path().to_str().unwrap();
    let output = chat_against(&model, &["--root", root_arg], b"list\nn\n");
    let said = stdout(&output);
    let question = said
        .lines()
        .find(|line| line.starts_with("allow "))
        .unwrap();
    assert_eq!(
        question,
        format!(
            "allow bash(ls{}␊rm -rf ~/precious)? [y]es / [n]o / [a]lways / [e]dit: ",
            " ".repeat(100)
        )
    );
}

/// `yiem ARGS` with `input` on its stdin (a pipe, not a terminal).
fn yiem_fed(args: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_yiem"))
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("yiem runs");
    // Written before yiem reads, or never read: either way it must not count as an answer.
    let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    child.wait_with_output().unwrap()
}

#[test]
fn a_tool_that_needs_approval_does_not_run_from_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let args = r#"{"path": "made.txt", "content": "x"}"#;
    // A `y` on the pipe is not a person's answer.
    let refused = yiem_fed(
        &["tools", "call", "write", "--root", root, "--args", args],
        "y\n",
    );
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(stdout(&refused), "");
    assert_eq!(
        stderr(&refused),
        "yiem: error: `write` needs approval before it runs, and stdin is not a terminal to ask on; it did not run. Pass --allow to run it without asking\n"
    );
    assert!(!dir.path().join("made.txt").exists(), "`write` ran");
}

#[test]
fn with_allow_a_tool_that_needs_approval_runs_from_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let args = r#"{"path": "made.txt", "content": "x"}"#;
    let ran = yiem_fed(
        &[
            "tools", "call", "write", "--allow", "--root", root, "--args", args,
        ],
        "",
    );
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("made.txt")).unwrap(),
        "x"
    );
}

#[test]
fn tools_search_ranks_the_linked_tools_for_a_query() {
    let output = yiem(&["tools", "search", "what time is it now", "-k", "2"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "what time is it now");
    assert!(lines[1].ends_with("  get_time"), "{text}");
    assert!(lines.len() <= 3, "{text}");
}

#[test]
fn tools_search_reads_a_catalog_and_queries_from_stdin_as_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.json");
    std::fs::write(
        &catalog,
        json!({"tools": [
            {"name": "send_invoice", "description": "Send an invoice by e-mail.",
             "inputSchema": {"type": "object", "properties": {"customer": {"type": "string"}}}},
            {"name": "getWeatherForecast", "title": "Weather", "description": "The forecast for a city.",
             "inputSchema": {"type": "object", "properties": {"city": {"type": "string", "description": "City name."}}}},
        ]})
        .to_string(),
    )
    .unwrap();
    let output = yiem_fed(
        &[
            "tools",
            "search",
            "--catalog",
            catalog.to_str().unwrap(),
            "--json",
            "-k",
            "1",
        ],
        "forecast for Paris\n\ninvoices\nzzz\n",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "the blank line is no query");
    assert_eq!(lines[0]["query"], "forecast for Paris");
    assert_eq!(lines[0]["results"][0]["name"], "getWeatherForecast");
    // "invoices" finds "invoice" (stemmed); the plain ranking would not.
    assert_eq!(lines[1]["results"][0]["name"], "send_invoice");
    assert_eq!(lines[2]["results"], json!([]));
}

#[test]
fn tools_search_refuses_a_bad_catalog_and_a_k_of_zero() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.json");
    std::fs::write(
        &catalog,
        r#"{"tools": [{"name": "bad name!", "description": "x"}]}"#,
    )
    .unwrap();
    let output = yiem(&[
        "tools",
        "search",
        "x",
        "--catalog",
        catalog.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("tool 0 of the catalog (\"bad name!\")"),
        "{}",
        stderr(&output)
    );
    std::fs::write(&catalog, r#"{"items": []}"#).unwrap();
    let output = yiem(&[
        "tools",
        "search",
        "x",
        "--catalog",
        catalog.to_str().unwrap(),
    ]);
    assert!(
        stderr(&output).contains("has no `tools` array"),
        "{}",
        stderr(&output)
    );
    assert_bad_input(
        &yiem(&["tools", "search", "x", "-k", "0"]),
        "yiem: error: -k must be at least 1",
    );
}

/// Three tools; no word of [`MONEY`] is in any of them.
fn money_catalog(dir: &std::path::Path) -> String {
    let catalog = dir.join("catalog.json");
    std::fs::write(
        &catalog,
        json!({"tools": [
            {"name": "send_invoice", "description": "Send an invoice to a customer by e-mail."},
            {"name": "currency_exchange_convert",
             "description": "Convert an amount between currencies at today's rate."},
            {"name": "get_weather", "description": "The weather forecast for a city."},
        ]})
        .to_string(),
    )
    .unwrap();
    catalog.to_str().unwrap().to_owned()
}

const MONEY: &str = "How much is 500 US dollars in Canadian money?";

/// The command line of the test embedder (tests/fixtures/embedder/concepts.py) in `mode`.
fn embedder(mode: &str) -> String {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/embedder/concepts.py"
    );
    format!("python3 '{}' {mode}", script.replace('\'', r"'\''"))
}

/// `yiem tools search --catalog CATALOG --json -k 3 ARGS...` with `queries` on stdin, one a line.
fn search_catalog(catalog: &str, args: &[&str], queries: &[&str]) -> Output {
    let mut all = vec!["tools", "search", "--catalog", catalog, "--json", "-k", "3"];
    all.extend_from_slice(args);
    let input: String = queries.iter().map(|query| format!("{query}\n")).collect();
    yiem_fed(&all, &input)
}

/// The names found for each query of a `--json` output.
fn found(output: &Output) -> Vec<Vec<String>> {
    stdout(output)
        .lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line).unwrap();
            line["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|hit| hit["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn tools_search_with_an_embedder_finds_by_meaning_a_tool_the_words_miss() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = money_catalog(dir.path());
    let words = search_catalog(&catalog, &[], &[MONEY]);
    assert_eq!(found(&words), [Vec::<String>::new()]);
    let command = embedder("ok");
    let hybrid = search_catalog(
        &catalog,
        &["--embed-command", &command],
        &[MONEY, "send an invoice"],
    );
    assert!(hybrid.status.success(), "{}", stderr(&hybrid));
    assert_eq!(stderr(&hybrid), "");
    let found = found(&hybrid);
    assert_eq!(found[0][0], "currency_exchange_convert");
    assert_eq!(found[1][0], "send_invoice");
}

#[test]
fn tools_search_falls_back_to_the_words_when_the_embedder_crashes_hangs_or_prints_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = money_catalog(dir.path());
    // Only the hang waits out its limit; the others get one no busy machine reaches, so that each fails
    // the way it is written to (a crash slower than a short limit would read as a hang).
    let cases = [
        ("crash", "600", "it closed its output"),
        ("hang", "0.5", "no answer within 0.5 s (--embed-timeout)"),
        (
            "garbage",
            "600",
            r#"its answer is not {"vectors": [[numbers], ...]} or {"error": "..."}: "Loading model weights... done""#,
        ),
    ];
    for (mode, limit, why) in cases {
        let command = embedder(mode);
        // The words rank every query; the warning comes once, with what went wrong.
        let stderr = ranked_by_words(
            &catalog,
            mode,
            &["--embed-command", &command, "--embed-timeout", limit],
        );
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|line| line.starts_with("yiem: warning: "))
            .collect();
        assert_eq!(warnings.len(), 1, "{mode}: {stderr}");
        assert!(
            warnings[0].starts_with(&format!(
                "yiem: warning: embedding the tools failed (the embedder failed: `{command}`: {why}"
            )),
            "{mode}: {stderr}"
        );
        assert!(
            warnings[0].ends_with("): every query is ranked by words alone"),
            "{mode}: {stderr}"
        );
    }
}

/// Searches `catalog` for the money query and `invoice` with `args`, checks that the words alone found
/// what they find (nothing, then `send_invoice`), and gives the search's standard error.
fn ranked_by_words(catalog: &str, mode: &str, args: &[&str]) -> String {
    let output = search_catalog(catalog, args, &[MONEY, "invoice"]);
    assert!(output.status.success(), "{mode}: {}", stderr(&output));
    assert_eq!(
        found(&output),
        [vec![], vec!["send_invoice".to_owned()]],
        "{mode}"
    );
    stderr(&output)
}

#[test]
fn tools_search_ranks_a_query_by_words_when_its_vector_is_wrong_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = money_catalog(dir.path());
    let cases = [
        (
            "short-queries",
            "the embedder returned a vector of 2 numbers where 3 were expected",
        ),
        ("error-queries", "answered: cannot embed a query today"),
    ];
    for (mode, why) in cases {
        let command = embedder(mode);
        // One warning per query.
        let stderr = ranked_by_words(&catalog, mode, &["--embed-command", &command]);
        let warnings: Vec<&str> = stderr.lines().collect();
        assert_eq!(warnings.len(), 2, "{mode}: {stderr}");
        for warning in warnings {
            assert!(
                warning.starts_with("yiem: warning: embedding the query failed (")
                    && warning.contains(why)
                    && warning.ends_with("): it is ranked by words alone"),
                "{mode}: {stderr}"
            );
        }
    }
}

#[test]
fn tools_search_with_an_embedder_takes_an_empty_and_a_100_kb_query() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = money_catalog(dir.path());
    let command = embedder("ok");
    let empty = yiem(&[
        "tools",
        "search",
        "",
        "--catalog",
        &catalog,
        "--json",
        "--embed-command",
        &command,
    ]);
    assert!(empty.status.success(), "{}", stderr(&empty));
    assert_eq!(stdout(&empty), "{\"query\":\"\",\"results\":[]}\n");
    assert_eq!(stderr(&empty), "");
    // Found by meaning alone ("rain"), so the whole query reached the embedder.
    let huge = format!("{} will it rain", "x".repeat(100_000));
    let output = search_catalog(&catalog, &["--embed-command", &command], &[&huge]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    assert_eq!(found(&output)[0][0], "get_weather");
}

#[test]
fn tools_search_refuses_an_embed_command_it_cannot_run() {
    assert_bad_input(
        &yiem(&["tools", "search", "x", "--embed-command", ""]),
        "yiem: error: --embed-command: give a command line, e.g. --embed-command 'node embed.js'",
    );
    assert_bad_input(
        &yiem(&["tools", "search", "x", "--embed-command", "node 'embed.js"]),
        "yiem: error: --embed-command node 'embed.js: a quote is not closed; quote a path with spaces \
         as a shell would, e.g. --embed-command \"node '/my dir/embed.js'\"",
    );
    // The line is echoed safe for the terminal: an escape sequence in it is shown, not run.
    assert_bad_input(
        &yiem(&["tools", "search", "x", "--embed-command", "node '\u{1b}[2J"]),
        "yiem: error: --embed-command node '\u{241b}[2J: a quote is not closed; quote a path with spaces \
         as a shell would, e.g. --embed-command \"node '/my dir/embed.js'\"",
    );
    let missing = yiem(&[
        "tools",
        "search",
        "x",
        "--embed-command",
        "./no-such-embedder --fast",
    ]);
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
    assert!(
        stderr(&missing)
            .starts_with("yiem: error: --embed-command: cannot start `./no-such-embedder`: "),
        "{}",
        stderr(&missing)
    );
    assert_bad_input(
        &yiem(&[
            "tools",
            "search",
            "x",
            "--embed-command",
            "python3",
            "--embed-timeout",
            "0",
        ]),
        "yiem: error: --embed-timeout must be more than 0 seconds",
    );
    assert_bad_input(
        &yiem(&["tools", "search", "x", "--embed-timeout", "5"]),
        "yiem: error: --embed-timeout is the embedder's: give --embed-command too",
    );
}

#[test]
fn tools_list_schema_search_and_call_take_the_tools_of_an_mcp_server() {
    // yiem itself is the MCP server here: `yiem mcp` over stdio, its tools prefixed.
    let served = tempfile::tempdir().unwrap();
    std::fs::write(served.path().join("note.txt"), "served over MCP").unwrap();
    let server = format!(
        "{} mcp --root {}",
        env!("CARGO_BIN_EXE_yiem"),
        served.path().display()
    );
    let mcp = ["--mcp", server.as_str(), "--mcp-prefix", "remote_"];
    let listed = yiem(&[&["tools", "list"][..], &mcp].concat());
    assert!(listed.status.success(), "{}", stderr(&listed));
    let table = stdout(&listed);
    assert!(table.contains("\nremote_read "), "{table}");
    assert!(table.contains("\nread "), "{table}");
    let schema = yiem(&[&["tools", "schema", "remote_read"][..], &mcp].concat());
    assert!(schema.status.success(), "{}", stderr(&schema));
    assert!(stdout(&schema).contains("\"path\""), "{}", stdout(&schema));
    let searched = yiem(&[&["tools", "search", "read a file", "-k", "30"][..], &mcp].concat());
    assert!(searched.status.success(), "{}", stderr(&searched));
    assert!(
        stdout(&searched).contains("remote_read"),
        "{}",
        stdout(&searched)
    );
    let called = yiem(
        &[
            &[
                "tools",
                "call",
                "remote_read",
                "--args",
                r#"{"path": "note.txt"}"#,
            ][..],
            &mcp,
        ]
        .concat(),
    );
    assert!(called.status.success(), "{}", stderr(&called));
    assert!(
        stdout(&called).contains("served over MCP"),
        "{}",
        stdout(&called)
    );
    // Without the flag the server's tools are not there.
    assert_eq!(
        yiem(&["tools", "schema", "remote_read"]).status.code(),
        Some(2)
    );
}
