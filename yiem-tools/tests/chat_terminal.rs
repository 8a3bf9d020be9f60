//! `yiem chat` in a real terminal: each test starts the program in its own tmux server (a socket of its
//! own, killed at the end even when the test fails), types into it with `send-keys`, and asserts on the
//! screen as `capture-pane` shows it, against a scripted model on loopback. No sleeps: the tests poll the
//! screen until the expected text appears, under a generous bound.

mod model_server;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use model_server::{Gate, ModelServer, Part, calls, event, finish, says, text};
use serde_json::{Value, json};

/// How long a test waits for text to appear on the screen (generous: the machine may be loaded).
const PATIENCE: Duration = Duration::from_secs(60);

/// A tmux server running `yiem chat` in one pane; killed when dropped.
struct Terminal {
    socket: String,
}

impl Terminal {
    /// Starts `yiem chat ARGS` against `model` with `env` in a 100×40 pane, in `dir`; when the program
    /// ends, the pane shows `[exited with CODE]`.
    fn start(
        name: &str,
        model: &ModelServer,
        dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let mut command = format!(
            "env -u YIEM_PROVIDER -u NO_COLOR YIEM_BASE_URL={} OPENAI_API_KEY=sk-test YIEM_MODEL=test-model \
             YIEM_HISTORY={} XDG_DATA_HOME={} ",
            model.url,
            dir.join("history").display(),
            dir.join("data").display()
        );
        for (key, value) in env {
            command.push_str(&format!("{key}={} ", shell_quote(value)));
        }
        command.push_str(&shell_quote(env!("CARGO_BIN_EXE_yiem")));
        command.push_str(" chat --root ");
        command.push_str(&shell_quote(dir.to_str().unwrap()));
        for arg in args {
            command.push(' ');
            command.push_str(&shell_quote(arg));
        }
        Self::open(name, dir, command)
    }

    /// Starts `yiem chat` with no model configured (offline: the demo model) in a 100×40 pane, in `dir`.
    fn offline(name: &str, dir: &Path) -> Self {
        let command = format!(
            "env -u YIEM_PROVIDER -u YIEM_BASE_URL -u NO_COLOR YIEM_HISTORY={} {} chat --root {}",
            shell_quote(dir.join("history").to_str().unwrap()),
            shell_quote(env!("CARGO_BIN_EXE_yiem")),
            shell_quote(dir.to_str().unwrap())
        );
        Self::open(name, dir, command)
    }

    /// Runs `yiem ARGS` (no model) in a 100×40 pane, in `dir`; when it ends, the pane shows
    /// `[exited with CODE]`.
    fn yiem(name: &str, dir: &Path, args: &[&str]) -> Self {
        let mut command = shell_quote(env!("CARGO_BIN_EXE_yiem"));
        for arg in args {
            command.push(' ');
            command.push_str(&shell_quote(arg));
        }
        Self::open(name, dir, command)
    }

    /// Runs the shell command line `command` in a new tmux server's 100×40 pane, in `dir`.
    fn open(name: &str, dir: &Path, mut command: String) -> Self {
        let tmux = Command::new("tmux").arg("-V").output();
        assert!(
            tmux.is_ok_and(|output| output.status.success()),
            "these tests drive `yiem` in tmux: install it (`apt-get install -y tmux`; .ci/run does)"
        );
        let socket = format!("yiem-{name}-{}", std::process::id());
        command.push_str("; echo \"[exited with $?]\"; exec sleep 3600");
        // The shell outlives a Ctrl-C meant for the chat (a trap, unlike ignoring it, is not inherited).
        let command = format!("trap : INT; {command}");
        let terminal = Terminal { socket };
        let status = terminal
            .tmux()
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "chat",
                "-x",
                "100",
                "-y",
                "40",
            ])
            .args(["-c", dir.to_str().unwrap(), "sh", "-c", &command])
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session failed");
        terminal
    }

    fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.socket]);
        command
    }

    /// The screen as text, the scrollback included.
    fn screen(&self) -> String {
        let output = self
            .tmux()
            .args(["capture-pane", "-p", "-J", "-S", "-1000", "-t", "chat"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Waits until `ready` holds for the screen; panics with the screen when it never does.
    fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "waited {PATIENCE:?} for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the screen contains `text` `count` times.
    fn wait_count(&self, text: &str, count: usize) -> String {
        self.wait_for(&format!("{count}× `{text}`"), |screen| {
            screen.matches(text).count() >= count
        })
    }

    /// Waits until the screen contains `text`.
    fn wait_text(&self, text: &str) -> String {
        self.wait_count(text, 1)
    }

    /// Types `text` literally.
    fn type_text(&self, text: &str) {
        self.keys(&["-l", text]);
    }

    /// Sends keys by tmux name (`Enter`, `C-c`, `C-d`, `Up`).
    fn keys(&self, keys: &[&str]) {
        let status = self
            .tmux()
            .args(["send-keys", "-t", "chat"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success(), "tmux send-keys {keys:?} failed");
    }

    /// Types `line` and Enter.
    fn line(&self, line: &str) {
        self.type_text(line);
        self.keys(&["Enter"]);
    }

    /// Waits for the `count`th prompt: the line editor draws it once it reads keys itself (raw mode), so
    /// a control key sent after it is a key, not a signal.
    fn prompts(&self, count: usize) -> String {
        self.wait_for(&format!("{count} prompts"), |screen| {
            screen
                .lines()
                .filter(|line| line.starts_with("> ") || *line == ">")
                .count()
                >= count
        })
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}

/// Whether a live process has exactly the command line `command` (words split at spaces).
fn running(command: &str) -> bool {
    let wanted: Vec<u8> = command
        .split(' ')
        .flat_map(|word| word.bytes().chain([0]))
        .collect();
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        cmdline == wanted && !state.starts_with('Z')
    })
}

/// Waits until a process with the command line `command` runs (`present`) or none does.
fn wait_process(command: &str, present: bool) {
    let deadline = Instant::now() + PATIENCE;
    while running(command) != present {
        assert!(
            Instant::now() < deadline,
            "waited {PATIENCE:?} for `{command}` to {}",
            if present { "run" } else { "end" }
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The last message of a recorded request.
fn last_message(request: &Value) -> &Value {
    request["messages"].as_array().unwrap().last().unwrap()
}

#[test]
fn a_prompt_gets_a_streamed_reply_and_ctrl_d_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let (first_token, before) = Gate::new();
    let (gate, wait) = Gate::new();
    let model = ModelServer::start(vec![vec![
        before,
        Part::Bytes(event(text("The first half, "))),
        wait,
        Part::Bytes(event(text("and the second."))),
        Part::Bytes(event(finish("stop", 12, 7))),
        Part::Bytes("data: [DONE]\n\n".into()),
    ]]);
    let terminal = Terminal::start("stream", &model, dir.path(), &[], &[]);
    terminal.wait_text("/help for commands");
    // Two lines of one prompt: a trailing `\` continues it.
    terminal.line("hello\\");
    terminal.line("there");
    // Before the first token, the status line says the model is at work.
    terminal.wait_for("the status line", |screen| {
        screen.lines().any(|line| {
            line.contains(" thinking · ")
                && line
                    .trim_end()
                    .ends_with("· 0 tokens in, 0 out · Ctrl-C stops")
        })
    });
    first_token.open();
    // Half the reply is on screen while the stream is still open.
    let screen = terminal.wait_text("The first half, ");
    assert!(!screen.contains("and the second."), "{screen}");
    gate.open();
    terminal.wait_text("The first half, and the second.");
    terminal.prompts(2);
    assert_eq!(
        last_message(&model.requests()[0])["content"],
        "hello\nthere"
    );
    terminal.keys(&["C-d"]);
    let screen = terminal.wait_text("[exited with 0]");
    assert!(!screen.contains("[error"), "{screen}");
}

#[test]
fn a_tool_call_shows_its_arguments_and_its_result_folded() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=124).map(|n| format!("row {n}\n")).collect();
    std::fs::write(dir.path().join("big.txt"), lines).unwrap();
    let model = ModelServer::start(vec![
        calls("call_1", "read", json!({"path": "big.txt"})),
        says("The file has 124 rows."),
    ]);
    let terminal = Terminal::start("fold", &model, dir.path(), &[], &[]);
    terminal.line("what is in big.txt?");
    let screen = terminal.wait_text("The file has 124 rows.");
    assert!(screen.contains("→ read(big.txt)"), "{screen}");
    assert!(screen.contains("✓ read"), "{screen}");
    // The first lines of the result (`read` numbers them), then the count of the rest.
    for n in 1..=4 {
        assert!(
            screen.contains(&format!("  │      {n}      row {n}\n")),
            "{screen}"
        );
    }
    assert!(!screen.contains("row 5"), "{screen}");
    assert!(screen.contains("\n  … 120 more lines\n"), "{screen}");
    // The model got the whole file, not the preview.
    let result = last_message(&model.requests()[1]).clone();
    assert!(
        result["content"].as_str().unwrap().contains("row 124"),
        "{result}"
    );
}

#[test]
fn ctrl_c_aborts_a_long_tool_and_the_chat_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    // A sleep no other test runs, to find its process.
    let sleeper = format!("sleep 600.{}", std::process::id());
    let model = ModelServer::start(vec![
        calls(
            "call_1",
            "bash",
            json!({"command": format!("echo started; {sleeper}")}),
        ),
        says("Still here."),
    ]);
    let terminal = Terminal::start("abort", &model, dir.path(), &["--allow", "bash"], &[]);
    terminal.line("wait a long time");
    // The status line says what runs, with the time and the tokens, while the command sleeps.
    let screen = terminal.wait_text("bash: started");
    assert!(
        screen.contains(&format!("→ bash(echo started; {sleeper})")),
        "{screen}"
    );
    // The status line: the tool's progress, the time since the prompt, the tokens of the run so far.
    let status = screen
        .lines()
        .find(|line| line.contains("bash: started · "))
        .unwrap_or_else(|| panic!("no status line: {screen}"));
    let (_, after) = status.split_once("bash: started · ").unwrap();
    let (elapsed, tokens) = after.split_once(' ').unwrap();
    assert!(
        elapsed
            .strip_suffix('s')
            .is_some_and(|n| n.parse::<u64>().is_ok()),
        "{status}"
    );
    assert_eq!(tokens.trim_end(), "· 20 tokens in, 5 out · Ctrl-C stops");
    wait_process(&sleeper, true);
    terminal.keys(&["C-c"]);
    let screen = terminal.wait_text("[run aborted");
    // The cancelled call's process is gone.
    wait_process(&sleeper, false);
    assert!(
        screen.contains("[interrupted: stopping the run]"),
        "{screen}"
    );
    assert!(screen.contains("✗ bash"), "{screen}");
    assert!(!screen.contains("[exited"), "{screen}");
    terminal.prompts(2);
    terminal.line("are you there?");
    terminal.wait_text("Still here.");
    // The aborted call got its result before the next request: the conversation stayed valid.
    let requests = model.requests();
    let messages = requests[1]["messages"].as_array().unwrap();
    let result = messages
        .iter()
        .find(|message| message["role"] == "tool")
        .expect("the aborted call has a result");
    assert_eq!(result["tool_call_id"], "call_1");
    // At the prompt (control keys are sent once the line editor shows it), Ctrl-C twice leaves.
    terminal.prompts(3);
    terminal.keys(&["C-c"]);
    terminal.wait_text("[press Ctrl-C again or Ctrl-D to leave]");
    terminal.prompts(4);
    terminal.keys(&["C-c"]);
    terminal.wait_text("[exited with 0]");
}

#[test]
fn an_approval_answered_no_then_yes() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        calls(
            "call_1",
            "write",
            json!({"path": "note.txt", "content": "first"}),
        ),
        calls(
            "call_2",
            "write",
            json!({"path": "note.txt", "content": "second"}),
        ),
        says("Written."),
    ]);
    let terminal = Terminal::start("approve", &model, dir.path(), &[], &[]);
    terminal.line("write a note");
    terminal.wait_text(
        "allow write(path: note.txt, content: first)? [y]es / [n]o / [a]lways / [e]dit:",
    );
    terminal.line("n");
    terminal.wait_text("[write denied]");
    terminal.wait_text(
        "allow write(path: note.txt, content: second)? [y]es / [n]o / [a]lways / [e]dit:",
    );
    assert!(!dir.path().join("note.txt").exists());
    terminal.line("y");
    let screen = terminal.wait_text("Written.");
    assert!(screen.contains("✗ write"), "{screen}");
    assert!(screen.contains("✓ write"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("note.txt")).unwrap(),
        "second"
    );
    let denied = last_message(&model.requests()[1]).clone();
    assert_eq!(denied["tool_call_id"], "call_1");
    assert!(
        denied["content"]
            .as_str()
            .unwrap()
            .contains("the user denied this call: the user said no"),
        "{denied}"
    );
}

#[test]
fn save_then_resume_in_a_new_process_keeps_the_conversation_and_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![says("Noted: 42."), says("It was 42.")]);
    let saved = dir.path().join("run.json");
    let first = Terminal::start("save", &model, dir.path(), &[], &[]);
    first.line("remember the number 42");
    first.wait_text("Noted: 42.");
    first.line(&format!("/save {}", saved.display()));
    first.wait_text("[saved 2 messages to");
    first.line("/exit");
    first.wait_text("[exited with 0]");
    drop(first);

    let resume = saved.to_str().unwrap();
    let second = Terminal::start("resume", &model, dir.path(), &["--resume", resume], &[]);
    // The last of the two lines the resume prints: waiting for the first could read the screen
    // between them.
    let screen = second.wait_text("[last reply: Noted: 42.]");
    assert!(screen.contains("[loaded 2 messages from"), "{screen}");
    // The history of the first process is there: Up twice brings back the line before `/exit`.
    second.prompts(1);
    second.keys(&["Up", "Up"]);
    second.wait_text(&format!("> /save {}", saved.display()));
    second.keys(&["C-u"]);
    second.line("which number was it?");
    second.wait_text("It was 42.");
    let requests = model.requests();
    let messages = requests[1]["messages"].as_array().unwrap();
    assert!(
        messages
            .iter()
            .any(|message| message["content"] == "remember the number 42"),
        "{messages:?}"
    );
    assert_eq!(
        last_message(&requests[1])["content"],
        "which number was it?"
    );
    second.prompts(2);
    second.keys(&["C-d"]);
    second.wait_text("[exited with 0]");
}

#[test]
fn an_approval_edited_then_always() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        calls("call_1", "write", json!({"path": "a.txt", "content": "x"})),
        calls("call_2", "write", json!({"path": "c.txt", "content": "c"})),
        calls("call_3", "write", json!({"path": "d.txt", "content": "d"})),
        says("Done."),
    ]);
    let terminal = Terminal::start("edit", &model, dir.path(), &[], &[]);
    terminal.line("write some files");
    terminal.wait_text("allow write(path: a.txt, content: x)? [y]es / [n]o / [a]lways / [e]dit:");
    terminal.line("e");
    // The arguments come up for editing, as the model sent them.
    terminal.wait_text(r#"arguments (JSON): {"path":"a.txt","content":"x"}"#);
    terminal.keys(&["C-u"]);
    terminal.line(r#"{"path": "b.txt", "content": "edited"}"#);
    terminal.wait_text("allow write(path: c.txt, content: c)? [y]es / [n]o / [a]lways / [e]dit:");
    terminal.line("a");
    terminal.wait_text("[write runs unasked for the rest of this session]");
    let screen = terminal.wait_text("Done.");
    assert!(!screen.contains("allow write(path: d.txt"), "{screen}");
    assert!(!dir.path().join("a.txt").exists());
    for (file, content) in [("b.txt", "edited"), ("c.txt", "c"), ("d.txt", "d")] {
        assert_eq!(
            std::fs::read_to_string(dir.path().join(file)).unwrap(),
            content,
            "{file}"
        );
    }
    // The conversation records the arguments that ran.
    let requests = model.requests();
    let call = &requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .unwrap()["tool_calls"][0];
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"path": "b.txt", "content": "edited"}));
}

#[test]
fn a_model_error_shows_in_red_and_sets_the_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    // The stream ends before the reply is complete: a model error.
    let model = ModelServer::start(vec![vec![Part::Bytes(event(text("Half a")))]]);
    let terminal = Terminal::start("error", &model, dir.path(), &[], &[]);
    terminal.line("hello");
    terminal.wait_text("[error: ");
    let colored = terminal
        .tmux()
        .args(["capture-pane", "-p", "-e", "-t", "chat"])
        .output()
        .unwrap();
    let colored = String::from_utf8_lossy(&colored.stdout);
    assert!(colored.contains("\x1b[31m[error: "), "{colored:?}");
    terminal.prompts(2);
    terminal.keys(&["C-d"]);
    terminal.wait_text("[exited with 1]");
}

#[test]
fn tools_call_asks_on_the_terminal_shows_the_arguments_escaped_and_runs_only_on_yes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    for (answer, file, runs) in [("n", "no.txt", false), ("y", "yes.txt", true)] {
        let args = json!({"path": file, "content": "evil\u{202e}txt"}).to_string();
        let terminal = Terminal::yiem(
            &format!("call-{answer}"),
            dir.path(),
            &["tools", "call", "write", "--root", root, "--args", &args],
        );
        let screen = terminal.wait_text("Run it? [y/N]");
        assert!(
            screen.contains("`write` needs your approval to run with these arguments:"),
            "{screen}"
        );
        // The right-to-left override is shown as an escape, not obeyed.
        assert!(screen.contains(r"evil\u202etxt"), "{screen}");
        terminal.line(answer);
        let screen = terminal.wait_text("[exited with");
        assert_eq!(dir.path().join(file).exists(), runs, "{screen}");
        if runs {
            assert!(screen.contains("[exited with 0]"), "{screen}");
        } else {
            assert!(
                screen.contains("yiem: error: you did not approve `write`; it did not run"),
                "{screen}"
            );
            assert!(screen.contains("[exited with 1]"), "{screen}");
        }
    }
}

/// `yiem mcp --http 127.0.0.1:0 --root <root>`, killed when dropped, and its URL.
struct McpHttp {
    child: std::process::Child,
    url: String,
}

impl McpHttp {
    fn start(root: &Path) -> McpHttp {
        use std::io::BufRead;
        let mut child = Command::new(env!("CARGO_BIN_EXE_yiem"))
            .args(["mcp", "--http", "127.0.0.1:0", "--root"])
            .arg(root)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("yiem mcp --http starts");
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines.next().expect("yiem prints its address").unwrap();
            if let Some(url) = line.strip_prefix("listening on ") {
                break url.to_owned();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        McpHttp { child, url }
    }
}

impl Drop for McpHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_remote_servers_question_is_answered_inline_a_field_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let served = tempfile::tempdir().unwrap();
    let server = McpHttp::start(served.path());
    let model = ModelServer::start(vec![
        calls(
            "call_1",
            "remote_write",
            json!({"path": "note.txt", "content": "asked first"}),
        ),
        says("Written."),
    ]);
    let terminal = Terminal::start(
        "question",
        &model,
        dir.path(),
        &[
            "--mcp-url",
            &server.url,
            "--mcp-prefix",
            "remote_",
            "--allow",
            "remote_write",
        ],
        &[],
    );
    terminal.line("write a note over there");
    // The server asks whether its `write` may run: the chat's run pauses on it and asks inline.
    terminal.wait_text("[remote_write asks: Allow the tool `write` to run with these arguments?");
    terminal.wait_text("[a]nswer / [d]ecline:");
    assert!(!served.path().join("note.txt").exists());
    terminal.line("a");
    terminal.wait_text("(approve: y / n):");
    terminal.line("maybe");
    terminal.wait_text("answer y or n");
    terminal.line("y");
    terminal.wait_text("Written.");
    assert_eq!(
        std::fs::read_to_string(served.path().join("note.txt")).unwrap(),
        "asked first"
    );
}

#[test]
fn an_earlier_revision_servers_question_over_stdio_is_answered_inline_too() {
    let dir = tempfile::tempdir().unwrap();
    let served = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        calls(
            "call_1",
            "local_write",
            json!({"path": "note.txt", "content": "asked over stdio"}),
        ),
        says("Written."),
    ]);
    // `yiem mcp` over stdio speaks the 2025-11-25 revision with this client: its question is a request
    // of its own, which names no call, and goes to the one call waiting.
    let served_root = served.path().display().to_string();
    let command = shlex::try_join([env!("CARGO_BIN_EXE_yiem"), "mcp", "--root", &served_root])
        .expect("the command line can be quoted");
    let terminal = Terminal::start(
        "question-stdio",
        &model,
        dir.path(),
        &[
            "--mcp",
            &command,
            "--mcp-prefix",
            "local_",
            "--allow",
            "local_write",
        ],
        &[],
    );
    terminal.line("write a note through the local server");
    terminal.wait_text("[local_write asks: Allow the tool `write` to run with these arguments?");
    terminal.wait_text("[a]nswer / [d]ecline:");
    assert!(!served.path().join("note.txt").exists());
    terminal.line("a");
    terminal.wait_text("(approve: y / n):");
    terminal.line("y");
    terminal.wait_text("Written.");
    assert_eq!(
        std::fs::read_to_string(served.path().join("note.txt")).unwrap(),
        "asked over stdio"
    );
}

#[test]
fn offline_the_chat_says_so_and_its_demo_calls_a_tool_that_asks_then_runs_or_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let terminal = Terminal::offline("offline", dir.path());
    terminal
        .wait_text("[offline: a scripted demo model, which answers any prompt by calling `write`");
    terminal.prompts(1);
    terminal.line("hello");
    terminal.wait_text("allow write(path: yiem-demo.txt");
    assert!(!dir.path().join("yiem-demo.txt").exists());
    terminal.line("y");
    let screen = terminal.wait_text("(offline demo) `write` answered:");
    assert!(screen.contains("✓ write"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("yiem-demo.txt")).unwrap(),
        "Written by the offline demo of yiem chat."
    );
    std::fs::remove_file(dir.path().join("yiem-demo.txt")).unwrap();
    terminal.prompts(2);
    terminal.line("and again");
    terminal.wait_count("allow write(path: yiem-demo.txt", 2);
    terminal.line("n");
    terminal.wait_text("[write denied]");
    terminal.wait_text("answered: the user denied this call: the user said no.");
    assert!(!dir.path().join("yiem-demo.txt").exists());
}

#[test]
fn ctrl_c_at_an_approval_question_stops_the_run_as_the_banner_says() {
    let dir = tempfile::tempdir().unwrap();
    let terminal = Terminal::offline("ctrl-c-question", dir.path());
    terminal.wait_text("Ctrl-C stops a run");
    terminal.prompts(1);
    terminal.line("hello");
    terminal.wait_text("allow write(path: yiem-demo.txt");
    terminal.keys(&["C-c"]);
    let screen =
        terminal.wait_text("[run stopped: no call of this reply ran; the next prompt goes on]");
    // The run stopped: the model was not asked again, and nothing ran.
    assert!(
        !screen.contains("(offline demo) `write` answered"),
        "{screen}"
    );
    assert!(!dir.path().join("yiem-demo.txt").exists());
    // The chat goes on, and so does the conversation.
    terminal.prompts(2);
    terminal.line("try again");
    terminal.wait_count("allow write(path: yiem-demo.txt", 2);
    terminal.line("y");
    terminal.wait_text("(offline demo) `write` answered:");
    assert!(dir.path().join("yiem-demo.txt").exists());
}
