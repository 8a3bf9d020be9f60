//! `bash`: run a shell command in the root directory, in an OS sandbox (see [`crate::sandbox`]), with a
//! time limit, streamed output, and the whole process tree killed when the call ends (timeout, abort,
//! drop or normal exit).

use std::process::Stdio;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::os::fd::OwnedFd;
use tokio::io::AsyncReadExt;

use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use yiem_core::{
    tool,
    tool::{AgentToolResult, State, ToolContext},
};

use crate::root::ToolRoot;
use crate::sandbox::{self, Confinement, ShellPolicy};
use crate::truncate::{BASH_HEAD_BYTES, BASH_TAIL_BYTES, HeadTail};

/// Seconds a command may run when no `timeout` is given.
pub const BASH_DEFAULT_TIMEOUT_SECS: u64 = 120;
/// The longest `timeout` accepted, in seconds.
pub const BASH_MAX_TIMEOUT_SECS: u64 = 3600;
/// How long output is still read after the command exits and its processes were killed (only a process
/// that escaped them, possible only unconfined, could hold the pipe longer).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// The least time between two streamed updates.
const UPDATE_INTERVAL: Duration = Duration::from_millis(50);

/// Arguments of `bash`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct BashArgs {
    /// The command line, run with `bash -c` in the root directory.
    pub command: String,
    /// Seconds before the command and every process it started are killed. Default: 120, at most 3600.
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// Run a shell command (`bash -c`) in the root directory and return its combined stdout and stderr. Output
/// streams while the command runs; past 30 KB only the first 10 KB and the last 20 KB are kept. A non-zero
/// exit is an error result that shows the output and the exit code. The command runs in a sandbox: the root
/// directory is the only writable place besides a private `/tmp`, the rest of the file system is
/// read-only, `.git` is read-only, there is no network, and `/proc` shows only the command's own
/// processes. When the command ends (by itself, by timeout or by abort) every process it started is
/// killed, background jobs included. Standard input is empty: interactive commands cannot be answered.
#[tool(
    label = "Run Shell Command",
    destructive,
    open_world = true,
    needs_approval
)]
pub async fn bash(
    ctx: ToolContext,
    State(root): State<ToolRoot>,
    args: BashArgs,
) -> AgentToolResult {
    bash_in_with(&root, &ShellPolicy::of(&ctx), &ctx, args).await
}

/// `bash` in `root` under `policy` instead of its store's ([`ShellPolicy::of`]). While the command
/// runs, each update through `ctx` carries the output so far (at most one every 50 ms, head and tail kept
/// as in the result).
///
/// ```
/// use yiem_core::tool::ToolContext;
/// use yiem_tools::{ShellPolicy, ToolRoot, bash::{BashArgs, bash_in_with}};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let root = ToolRoot::new(dir.path()).unwrap();
/// let args = BashArgs { command: "echo hi; echo oops >&2".into(), timeout: None };
/// let result = bash_in_with(&root, &ShellPolicy::default(), &ToolContext::new("c1"), args).await;
/// # if result.is_error { return; } // no sandbox on this machine
/// assert_eq!(result.text_content(), "hi\noops\n");
/// assert_eq!(result.details()["exit_code"], 0);
/// # });
/// ```
pub async fn bash_in_with(
    root: &ToolRoot,
    policy: &ShellPolicy,
    ctx: &ToolContext,
    args: BashArgs,
) -> AgentToolResult {
    let secs = args.timeout.unwrap_or(BASH_DEFAULT_TIMEOUT_SECS);
    if secs == 0 || secs > BASH_MAX_TIMEOUT_SECS {
        return AgentToolResult::error(format!(
            "tool `bash`: `timeout` is {secs} s; give a number of seconds from 1 to {BASH_MAX_TIMEOUT_SECS}"
        ));
    }
    if args.command.trim().is_empty() {
        return AgentToolResult::error(
            "tool `bash`: `command` is empty; give a command line to run",
        );
    }
    let confinement = match sandbox::choose(policy) {
        Ok(confinement) => confinement,
        Err(why) => {
            return AgentToolResult::error(format!(
                "tool `bash`: refused: commands run only in a sandbox, and {why}"
            ));
        }
    };
    run(
        root,
        policy,
        &confinement,
        ctx,
        &args.command,
        Duration::from_secs(secs),
    )
    .await
}

/// Why a command stopped before it exited by itself.
enum Stop {
    TimedOut,
    Aborted,
}

async fn run(
    root: &ToolRoot,
    policy: &ShellPolicy,
    confinement: &Confinement,
    ctx: &ToolContext,
    command: &str,
    limit: Duration,
) -> AgentToolResult {
    match start(root, policy, confinement, command) {
        Ok(started) => {
            let group = GroupGuard {
                pgid: started.child.id(),
                output: Some(started.output),
                killed: Vec::new(),
            };
            let mut result = supervise(ctx, started.child, group, started.chunks, limit).await;
            drop(started.temp);
            drop(started.lifeline);
            if let Some(object) = result.details_mut().as_object_mut() {
                object.insert("sandbox".into(), json!(confinement.name()));
                if let Some(gaps) = confinement.unprotected() {
                    object.insert("unprotected".into(), json!(gaps));
                }
            }
            result
        }
        Err(error) => AgentToolResult::error(format!(
            "tool `bash`: cannot start `bash` (sandbox: {}): {error}",
            confinement.name()
        )),
    }
}

/// A running command: the child (bash, or the bwrap holding it), its output, and its temporary directory
/// (Landlock only).
struct Started {
    child: Child,
    chunks: mpsc::Receiver<Vec<u8>>,
    /// A second read end of the output pipe, which reports when no process holds its write end.
    output: OwnedFd,
    temp: Option<tempfile::TempDir>,
    /// yiem's end of the command's lifeline: held until the call is over.
    lifeline: Option<sandbox::Lifeline>,
}

/// Starts `bash -c command` in its own process group and in the sandbox, stdout and stderr on one pipe
/// (so their order is kept).
fn start(
    root: &ToolRoot,
    policy: &ShellPolicy,
    confinement: &Confinement,
    command: &str,
) -> Result<Started, String> {
    let io = |error: std::io::Error| error.to_string();
    let (reader, writer) = std::io::pipe().map_err(io)?;
    let confined = sandbox::confine(confinement, policy, "bash".as_ref(), root.path(), &[], &[])?;
    let mut cmd = Command::from(confined.command);
    // The new session (see `sandbox::confine`) makes the command lead its own process group, whose id
    // is its pid: the group killed when the call ends.
    cmd.arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(writer.try_clone().map_err(io)?)
        .stderr(writer)
        .kill_on_drop(true);
    let child = cmd.spawn().map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => {
            format!("{error}; is bash (and for bubblewrap, bwrap) installed and on PATH?")
        }
        _ => error.to_string(),
    })?;
    // The command holds our copies of the write end: drop it, or the pipe never reports its end.
    drop(cmd);
    let output = OwnedFd::from(reader.try_clone().map_err(io)?);
    let reader = pipe::Receiver::from_owned_fd(OwnedFd::from(reader)).map_err(io)?;
    let (sender, chunks) = mpsc::channel::<Vec<u8>>(64);
    tokio::spawn(pump(reader, sender));
    Ok(Started {
        child,
        chunks,
        output,
        temp: confined.temp,
        lifeline: confined.lifeline,
    })
}

async fn supervise(
    ctx: &ToolContext,
    mut child: Child,
    mut group: GroupGuard,
    mut chunks: mpsc::Receiver<Vec<u8>>,
    limit: Duration,
) -> AgentToolResult {
    // `group` kills the group if this future is dropped (the caller's own timeout or abort, the MCP
    // server ending with its connection) before the end.

    let mut output = HeadTail::new(BASH_HEAD_BYTES, BASH_TAIL_BYTES);
    let deadline = tokio::time::sleep(limit);
    tokio::pin!(deadline);
    // Updates are at least UPDATE_INTERVAL apart; output that comes sooner is sent when the interval
    // has passed, never dropped.
    let next_update = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(next_update);
    let mut unsent = false;
    let mut open = true;
    let mut stop = None;
    let status = loop {
        tokio::select! {
            chunk = chunks.recv(), if open => match chunk {
                Some(bytes) => {
                    output.push(&bytes);
                    unsent = true;
                }
                None => open = false,
            },
            () = &mut next_update, if unsent => {
                ctx.update(output.render());
                unsent = false;
                next_update.as_mut().reset(tokio::time::Instant::now() + UPDATE_INTERVAL);
            }
            status = child.wait() => break status,
            () = &mut deadline => {
                stop = Some(Stop::TimedOut);
                group.kill();
                break child.wait().await;
            }
            () = ctx.cancelled() => {
                stop = Some(Stop::Aborted);
                group.kill();
                break child.wait().await;
            }
        }
    };

    // The shell has exited: its background jobs die with the call. Then read what is left, but not
    // forever: only a process that escaped the group could still hold the pipe.
    group.kill();
    if open {
        let drain_until = tokio::time::sleep(DRAIN_AFTER_EXIT);
        tokio::pin!(drain_until);
        loop {
            tokio::select! {
                chunk = chunks.recv() => match chunk {
                    Some(bytes) => output.push(&bytes),
                    None => break,
                },
                () = &mut drain_until => break,
            }
        }
    }
    // A command stopped (timed out, aborted) ends before its result: its processes are gone.
    if stop.is_some() {
        group.dead().await;
    }
    group.disarm();

    let mut text = output.render();
    let exit_code = status.as_ref().ok().and_then(|s| s.code());
    let details = json!({
        "exit_code": exit_code,
        "timed_out": matches!(stop, Some(Stop::TimedOut)),
        "aborted": matches!(stop, Some(Stop::Aborted)),
        "truncated": output.truncated(),
        "output_bytes": output.total(),
    });
    let mut note = |line: String| {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&line);
    };
    let is_error = match (&stop, &status) {
        (Some(Stop::TimedOut), _) => {
            note(format!(
                "[timed out after {} s: the command and its child processes were killed]",
                limit.as_secs()
            ));
            true
        }
        (Some(Stop::Aborted), _) => {
            note("[aborted: the command and its child processes were killed]".into());
            true
        }
        (None, Err(error)) => {
            note(format!("[could not wait for the command: {error}]"));
            true
        }
        (None, Ok(status)) if status.success() => false,
        (None, Ok(status)) => {
            match status.code() {
                Some(code) => note(format!("[exit code {code}]")),
                None => note(format!("[killed by a signal: {status}]")),
            }
            true
        }
    };
    if text.is_empty() {
        text.push_str("[no output]");
    }
    let result = if is_error {
        AgentToolResult::error(text)
    } else {
        AgentToolResult::text(text)
    };
    result.with_details(details)
}

async fn pump(mut from: impl tokio::io::AsyncRead + Unpin, to: mpsc::Sender<Vec<u8>>) {
    let mut buffer = vec![0u8; 8192];
    loop {
        match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.send(buffer[..n].to_vec()).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The process group of a running command (its id is the shell's pid), and a read end of its output
/// pipe; killed on drop unless disarmed.
struct GroupGuard {
    pgid: Option<u32>,
    output: Option<OwnedFd>,
    /// The processes of the command when it was first killed (Linux): the shell and what descends
    /// from it, which under bubblewrap are in groups of their own.
    killed: Vec<u32>,
}

impl GroupGuard {
    /// Kills the group (the first time, noting the command's processes for [`Self::dead`]).
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid {
            #[cfg(target_os = "linux")]
            if self.killed.is_empty() {
                self.killed = processes::tree(pgid);
            }
            kill_group(pgid);
        }
    }

    /// Waits, at most [`GONE_WITHIN`], until the processes killed are dead, not only out of the pipe:
    /// a process closes its files while it exits, before it is done.
    async fn dead(&self) {
        #[cfg(target_os = "linux")]
        if let Some(pgid) = self.pgid {
            let started = std::time::Instant::now();
            while processes::run(pgid, &self.killed) && started.elapsed() < GONE_WITHIN {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    }

    fn disarm(&mut self) {
        self.pgid = None;
        self.output = None;
    }
}

impl Drop for GroupGuard {
    /// Dropped while the command runs (the call's future dropped, say while yiem exits): kills the
    /// group and waits until it is gone, as [`wait_until_gone`] says. A call that ends by itself, or
    /// on its token, waits for the same end asynchronously (the shell reaped, the output read to its
    /// end) and disarms the guard first.
    fn drop(&mut self) {
        self.kill();
        if let Some(pgid) = self.pgid {
            wait_until_gone(self.output.as_ref());
            #[cfg(target_os = "linux")]
            {
                let started = std::time::Instant::now();
                while processes::run(pgid, &self.killed) && started.elapsed() < GONE_WITHIN {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }
}

fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    // SAFETY: killpg only sends a signal; it reads no memory of ours. The group id is the one our child
    // was made to lead (its own session, `sandbox::detach`), and the guard is disarmed before the group can be reused.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// Waits, at most [`GONE_WITHIN`], until no process holds the command's output pipe: `output` reports
/// a hang-up once the shell, its jobs and, under bubblewrap, the sandbox's PID namespace have closed
/// it. A SIGKILL is only sent: a killed process ends when the kernel next schedules it, and a sandbox's
/// namespace after its first process. Without this wait (and [`processes::wait_until_dead`]'s, for
/// the processes themselves), a call dropped as yiem exits (its MCP client hung up) sends the signal,
/// yiem exits at once, and the client finds the call's processes still running. It blocks the thread,
/// but only for a command dropped while it runs, and only for the moment the kernel takes.
fn wait_until_gone(output: Option<&OwnedFd>) {
    use std::os::fd::AsRawFd;
    let Some(output) = output else {
        return;
    };
    let started = std::time::Instant::now();
    let mut poll = libc::pollfd {
        fd: output.as_raw_fd(),
        // No events asked: poll returns on the hang-up (or an error) alone, never on data.
        events: 0,
        revents: 0,
    };
    while started.elapsed() < GONE_WITHIN {
        let left = GONE_WITHIN.saturating_sub(started.elapsed());
        let millis = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd of ours, for the duration of the call.
        let ready = unsafe { libc::poll(&mut poll, 1, millis) };
        // A hang-up, the time up, or an error: done. A signal: poll again for the time left.
        let interrupted =
            ready < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted;
        if !interrupted {
            break;
        }
    }
}

/// How long [`wait_until_gone`] waits for a killed command at most.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// The processes of a command as `/proc` shows them, to wait for a killed one to be gone (Linux).
#[cfg(target_os = "linux")]
mod processes {
    /// One process: its pid, its parent's, its group, and whether it still runs (a zombie does not).
    struct Process {
        pid: u32,
        parent: u32,
        group: u32,
        runs: bool,
    }

    fn all() -> Vec<Process> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
                let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
                // After the command's name: the state, the parent's pid, the group.
                let mut fields = stat.rsplit(')').next()?.split_whitespace();
                let runs = !fields.next()?.starts_with(['Z', 'X']);
                let parent = fields.next()?.parse().ok()?;
                let group = fields.next()?.parse().ok()?;
                Some(Process {
                    pid,
                    parent,
                    group,
                    runs,
                })
            })
            .collect()
    }

    /// `root` and every process descended from it now (under bubblewrap, the sandbox's PID namespace,
    /// whose processes are in groups of their own).
    pub(super) fn tree(root: u32) -> Vec<u32> {
        let all = all();
        let mut tree = vec![root];
        let mut at = 0;
        while at < tree.len() {
            let parent = tree[at];
            tree.extend(all.iter().filter(|p| p.parent == parent).map(|p| p.pid));
            at += 1;
        }
        tree
    }

    /// Whether a process of the group `pgid`, or one of `tree`, still runs.
    pub(super) fn run(pgid: u32, tree: &[u32]) -> bool {
        all()
            .iter()
            .any(|p| p.runs && (p.group == pgid || tree.contains(&p.pid)))
    }
}
