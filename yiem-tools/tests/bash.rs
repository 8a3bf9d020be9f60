//! `bash` with real subprocesses: output, exit codes, streaming, truncation, and the process group killed
//! on timeout, abort and drop, children included.

mod common;

use common::{died, host_pid};

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use yiem_core::{
    exec::{CancellationToken, ToolCall, ToolExecutor},
    store::ToolStore,
    tool::ToolContext,
};
use yiem_tools::bash::{BashArgs, bash_in_with};
use yiem_tools::{ShellPolicy, ToolRoot};

/// `bash` in `root` under the process's shell policy.
async fn bash_in(
    root: &ToolRoot,
    ctx: &ToolContext,
    args: BashArgs,
) -> yiem_core::tool::AgentToolResult {
    bash_in_with(root, &ShellPolicy::default(), ctx, args).await
}

fn args(command: &str, timeout: Option<u64>) -> BashArgs {
    BashArgs {
        command: command.into(),
        timeout,
    }
}

fn sandbox() -> (tempfile::TempDir, ToolRoot) {
    let dir = tempfile::tempdir().unwrap();
    let root = ToolRoot::new(dir.path()).unwrap();
    (dir, root)
}

/// A name for a process (its `argv[0]`) unique to this test: the sandbox's pids are not the host's, so
/// the tests find processes by name in the host's `/proc`.
fn marker(test: &str) -> String {
    format!("yiem-bash-{test}-{}", std::process::id())
}

#[tokio::test]
async fn stdout_and_stderr_come_back_together_from_the_root_directory() {
    let (_dir, root) = sandbox();
    let result = bash_in(
        &root,
        &ToolContext::new("c"),
        args("pwd; echo err >&2", None),
    )
    .await;
    assert!(!result.is_error);
    assert_eq!(
        result.text_content(),
        format!("{}\nerr\n", root.path().display())
    );
    assert_eq!(
        result.details(),
        &json!({"exit_code": 0, "timed_out": false, "aborted": false, "truncated": false, "output_bytes": root.path().display().to_string().len() + 5, "sandbox": "bubblewrap"})
    );
}

#[tokio::test]
async fn a_non_zero_exit_is_an_error_that_shows_output_and_code() {
    let (_dir, root) = sandbox();
    let result = bash_in(
        &root,
        &ToolContext::new("c"),
        args("echo failing; exit 3", None),
    )
    .await;
    assert!(result.is_error);
    assert_eq!(result.text_content(), "failing\n\n[exit code 3]");
    assert_eq!(result.details()["exit_code"], 3);
}

#[tokio::test]
async fn standard_input_is_empty_and_silence_is_reported() {
    let (_dir, root) = sandbox();
    let result = bash_in(&root, &ToolContext::new("c"), args("cat", Some(5))).await;
    assert!(!result.is_error);
    assert_eq!(result.text_content(), "[no output]");
}

#[tokio::test]
async fn timeout_kills_the_command_and_its_children() {
    let (_dir, root) = sandbox();
    let name = marker("timeout");
    let command = format!("echo before; (exec -a {name} sleep 30) & sleep 30");
    let call = tokio::spawn({
        let root = root.clone();
        async move { bash_in(&root, &ToolContext::new("c"), args(&command, Some(1))).await }
    });
    let child = host_pid(&name).await;
    let result = call.await.unwrap();
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "before\n\n[timed out after 1 s: the command and its child processes were killed]"
    );
    assert_eq!(result.details()["timed_out"], true);
    assert!(
        died(child).await,
        "the background child {child} outlived the timeout"
    );
}

#[tokio::test]
async fn cancelling_the_context_kills_the_process_group() {
    let (_dir, root) = sandbox();
    let token = CancellationToken::new();
    let ctx = ToolContext::new("c").with_cancellation(token.clone());
    let name = marker("cancel");
    let command = format!("(exec -a {name} sleep 30) & wait");
    let run = tokio::spawn({
        let root = root.clone();
        async move { bash_in(&root, &ctx, args(&command, None)).await }
    });
    let child = host_pid(&name).await;
    token.cancel();
    let result = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .unwrap()
        .unwrap();
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "[aborted: the command and its child processes were killed]"
    );
    assert_eq!(result.details()["aborted"], true);
    assert!(died(child).await);
}

#[tokio::test]
async fn dropping_the_call_kills_the_process_group() {
    let (_dir, root) = sandbox();
    let ctx = ToolContext::new("c");
    let name = marker("drop");
    let command = format!("(exec -a {name} sleep 30) & wait");
    let call = bash_in(&root, &ctx, args(&command, None));
    // The call is dropped (as an outer timeout drops it) once the child runs.
    let child = tokio::select! {
        _ = call => panic!("the command ended by itself"),
        pid = host_pid(&name) => pid,
    };
    assert!(
        died(child).await,
        "the child {child} outlived the dropped call"
    );
}

#[tokio::test]
async fn the_executors_time_limit_also_kills_the_group() {
    let (dir, _root) = sandbox();
    let store = ToolStore::new("bash").with_state(ToolRoot::new(dir.path()).unwrap());
    for tool in yiem_tools::file_tools() {
        store.register(tool).unwrap();
    }
    let name = marker("executor");
    let call = ToolCall::new(
        "c",
        "bash",
        json!({"command": format!("(exec -a {name} sleep 30) & wait")}),
    );
    let finder = tokio::spawn({
        let name = name.clone();
        async move { host_pid(&name).await }
    });
    let batch = ToolExecutor::new()
        .with_default_timeout(Duration::from_millis(2000))
        .execute(&store, vec![call], &CancellationToken::new())
        .await;
    assert_eq!(
        batch.messages[0].text_content(),
        "tool `bash` timed out after 2000 ms"
    );
    let child = finder.await.unwrap();
    assert!(died(child).await);
}

#[tokio::test]
async fn output_streams_through_updates_while_the_command_runs() {
    let (dir, root) = sandbox();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    // The command waits for `go`, which the first update creates: "two" can only come after "one" was
    // streamed on its own, however loaded the machine is.
    // It then waits for `done`, which the second update creates, so it cannot exit before "two" is out.
    let (go, done) = (dir.path().join("go"), dir.path().join("done"));
    let ctx = ToolContext::new("c").with_updates(move |partial| {
        let mut seen = sink.lock().unwrap();
        seen.push(partial.text_content());
        match seen.len() {
            1 => std::fs::write(&go, "").unwrap(),
            2 => std::fs::write(&done, "").unwrap(),
            _ => {}
        }
    });
    let command = "echo one; while [ ! -e go ]; do sleep 0.01; done; echo two; \
                   while [ ! -e done ]; do sleep 0.01; done";
    let result = bash_in(&root, &ctx, args(command, None)).await;
    assert_eq!(result.text_content(), "one\ntwo\n");
    let updates = seen.lock().unwrap().clone();
    assert_eq!(updates, ["one\n", "one\ntwo\n"]);
}

#[tokio::test]
async fn huge_output_keeps_head_and_tail_with_a_note() {
    let (_dir, root) = sandbox();
    let result = bash_in(&root, &ToolContext::new("c"), args("seq 1 100000", None)).await;
    assert!(!result.is_error);
    let total: usize = (1..=100_000).map(|i: u32| i.to_string().len() + 1).sum();
    assert_eq!(result.details()["output_bytes"], total);
    assert_eq!(result.details()["truncated"], true);

    let text = result.text_content();
    let lines: Vec<&str> = text.lines().collect();
    let note = lines
        .iter()
        .position(|l| l.starts_with("[… "))
        .expect("a note");
    let head = &lines[..note];
    let tail = &lines[note + 1..];
    // Whole lines on both sides, in order, from the start and up to the end.
    let expected_head: Vec<String> = (1..=head.len()).map(|i| i.to_string()).collect();
    assert_eq!(head, expected_head);
    let first_tail = 100_000 - tail.len() + 1;
    let expected_tail: Vec<String> = (first_tail..=100_000).map(|i| i.to_string()).collect();
    assert_eq!(tail, expected_tail);
    // The note accounts for exactly what is missing.
    let left_out: Vec<usize> = (head.len() + 1..first_tail).collect();
    let left_out_bytes: usize = left_out.iter().map(|i| i.to_string().len() + 1).sum();
    assert_eq!(
        lines[note],
        format!(
            "[… {left_out_bytes} bytes ({} lines) of output left out; {total} bytes in all, showing the first and last parts. Narrow the command (e.g. pipe through grep, head or tail) to see the rest …]",
            left_out.len()
        )
    );
    assert!(text.len() < 31 * 1024 + 300, "{} bytes shown", text.len());
    assert!(head.join("\n").len() <= 10 * 1024 && tail.join("\n").len() <= 20 * 1024);
}

#[tokio::test]
async fn background_processes_die_when_the_command_ends() {
    let (dir, root) = sandbox();
    let (holding, detached) = (marker("holding"), marker("detached"));
    // The command ends only after the test has seen both background processes run (the `go` file).
    let command = format!(
        "(exec -a {holding} sleep 30) & (nohup bash -c 'exec -a {detached} sleep 30' >/dev/null 2>&1 &); \
         while [ ! -e go ]; do sleep 0.01; done; echo started"
    );
    let call = tokio::spawn({
        let root = root.clone();
        async move { bash_in(&root, &ToolContext::new("c"), args(&command, None)).await }
    });
    let pids = [host_pid(&holding).await, host_pid(&detached).await];
    std::fs::write(dir.path().join("go"), "").unwrap();
    let result = call.await.unwrap();
    assert!(!result.is_error, "{}", result.text_content());
    assert_eq!(result.text_content(), "started\n");
    for pid in pids {
        assert!(
            died(pid).await,
            "background process {pid} outlived the call"
        );
    }
}

#[tokio::test]
async fn bad_timeouts_and_empty_commands_are_refused() {
    let (_dir, root) = sandbox();
    let ctx = ToolContext::new("c");
    let zero = bash_in(&root, &ctx, args("true", Some(0))).await;
    assert_eq!(
        zero.text_content(),
        "tool `bash`: `timeout` is 0 s; give a number of seconds from 1 to 3600"
    );
    let empty = bash_in(&root, &ctx, args("  ", None)).await;
    assert_eq!(
        empty.text_content(),
        "tool `bash`: `command` is empty; give a command line to run"
    );
}

#[tokio::test]
async fn stdout_and_stderr_keep_their_order() {
    let (_dir, root) = sandbox();
    let command = "for i in $(seq 1 200); do echo out$i; echo err$i >&2; done";
    let result = bash_in(&root, &ToolContext::new("c"), args(command, None)).await;
    let expected: String = (1..=200).map(|i| format!("out{i}\nerr{i}\n")).collect();
    assert_eq!(result.text_content(), expected);
}
