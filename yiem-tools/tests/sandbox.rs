//! Attempts to escape `bash`'s sandbox, under bubblewrap and under the Landlock + seccomp fallback (forced
//! through the policy): reading and writing outside the root, the network, processes that outlive the
//! call, the host's `/proc`, `.git`; and the refusal when no sandbox can run.
//!
//! These run wherever the tests run (`.ci/run` installs bubblewrap): a missing sandbox fails them, it never
//! skips them.

mod common;

use common::{died, host_pid};

use std::net::TcpListener;
use std::path::Path;

use yiem_core::{
    exec::CancellationToken,
    tool::{AgentToolResult, ToolContext},
};
use yiem_tools::bash::{BashArgs, bash_in_with};
use yiem_tools::{HostFiles, SandboxKind, ShellPolicy, ToolRoot};

fn bwrap() -> ShellPolicy {
    ShellPolicy {
        sandbox: SandboxKind::Bubblewrap,
        ..ShellPolicy::default()
    }
}

fn landlock() -> ShellPolicy {
    ShellPolicy {
        sandbox: SandboxKind::Landlock,
        ..ShellPolicy::default()
    }
}

/// A root directory and, beside it, a directory outside it with a secret — both on the host's disk under
/// `/var/tmp`, never under `/tmp`: bubblewrap gives each command a private `/tmp`, so a host file there is
/// not "outside the root, read-only" but absent. Not in the target directory either, which may itself be
/// under `/tmp` (a checkout cloned there).
struct Place {
    _base: tempfile::TempDir,
    root: ToolRoot,
    outside: std::path::PathBuf,
}

fn place() -> Place {
    let base = tempfile::tempdir_in("/var/tmp").unwrap();
    let outside = base.path().join("outside");
    std::fs::create_dir_all(base.path().join("root")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    let root = ToolRoot::new(base.path().join("root")).unwrap();
    Place {
        _base: base,
        root,
        outside,
    }
}

async fn run(policy: &ShellPolicy, root: &ToolRoot, command: &str) -> AgentToolResult {
    let args = BashArgs {
        command: command.into(),
        timeout: Some(60),
    };
    bash_in_with(root, policy, &ToolContext::new("c"), args).await
}

async fn ok(policy: &ShellPolicy, root: &ToolRoot, command: &str) -> String {
    let result = run(policy, root, command).await;
    assert!(!result.is_error, "`{command}`: {}", result.text_content());
    result.text_content()
}

async fn refused(policy: &ShellPolicy, root: &ToolRoot, command: &str) -> String {
    let result = run(policy, root, command).await;
    assert!(
        result.is_error,
        "`{command}` was allowed: {}",
        result.text_content()
    );
    result.text_content()
}

// ---- files -------------------------------------------------------------------------------------

async fn writes_land_only_in_the_root(policy: ShellPolicy) {
    let place = place();
    let (root, outside) = (&place.root, &place.outside);
    assert_eq!(
        ok(&policy, root, "echo hi > inside.txt && cat inside.txt").await,
        "hi\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("inside.txt")).unwrap(),
        "hi\n"
    );
    ok(&policy, root, "mkdir -p a/b && echo x > a/b/c && ls a/b").await;
    let target = outside.join("written.txt");
    refused(&policy, root, &format!("echo x > {}", target.display())).await;
    refused(&policy, root, "echo x > ../outside/relative.txt").await;
    refused(&policy, root, "cd / && touch /yiem-escape-test").await;
    refused(&policy, root, "rm ../outside/secret.txt").await;
    assert!(!target.exists() && !outside.join("relative.txt").exists());
    assert!(!Path::new("/yiem-escape-test").exists());
    assert!(outside.join("secret.txt").exists());
}

#[tokio::test]
async fn bubblewrap_lets_commands_write_only_in_the_root() {
    writes_land_only_in_the_root(bwrap()).await;
}

#[tokio::test]
async fn landlock_lets_commands_write_only_in_the_root() {
    writes_land_only_in_the_root(landlock()).await;
}

#[tokio::test]
async fn bubblewrap_gives_a_private_tmp() {
    let place = place();
    let host_file = tempfile::NamedTempFile::new().unwrap();
    let scratch = format!("/tmp/yiem-scratch-{}", std::process::id());
    let listing = ok(
        &bwrap(),
        &place.root,
        &format!(
            "echo scratch > {scratch} && cat {scratch}; test -e {} && echo visible || echo hidden",
            host_file.path().display()
        ),
    )
    .await;
    assert_eq!(listing, "scratch\nhidden\n");
    assert!(!Path::new(&scratch).exists());
}

#[tokio::test]
async fn landlock_gives_a_temporary_directory_of_the_call_and_no_other() {
    let place = place();
    let out = ok(
        &landlock(),
        &place.root,
        "echo scratch > \"$TMPDIR/scratch\" && cat \"$TMPDIR/scratch\"",
    )
    .await;
    assert_eq!(out, "scratch\n");
    refused(&landlock(), &place.root, "touch /tmp/yiem-landlock-escape").await;
    assert!(!Path::new("/tmp/yiem-landlock-escape").exists());
}

#[tokio::test]
async fn hidden_host_files_cannot_be_read() {
    let place = place();
    let hidden = ShellPolicy {
        host_files: HostFiles::Hidden,
        ..bwrap()
    };
    refused(&hidden, &place.root, "cat ../outside/secret.txt").await;
    refused(
        &hidden,
        &place.root,
        &format!("cat {}", place.outside.join("secret.txt").display()),
    )
    .await;
    refused(&hidden, &place.root, "cat /etc/hostname").await;
    // The system's programs still run, and the root is there.
    assert_eq!(
        ok(&hidden, &place.root, "echo in > f && cat f | tr a-z A-Z").await,
        "IN\n"
    );
}

#[tokio::test]
async fn read_only_host_files_are_readable_but_not_writable() {
    // The default: the host's files read-only. Said plainly in the tool's description.
    let place = place();
    let secret = place.outside.join("secret.txt");
    for policy in [bwrap(), landlock()] {
        assert_eq!(
            ok(&policy, &place.root, &format!("cat {}", secret.display())).await,
            "secret\n"
        );
        refused(
            &policy,
            &place.root,
            &format!("echo owned > {}", secret.display()),
        )
        .await;
    }
    assert_eq!(std::fs::read_to_string(secret).unwrap(), "secret\n");
}

#[tokio::test]
async fn metadata_outside_the_root_is_protected_by_bubblewrap_and_the_gap_is_said_under_landlock() {
    let place = place();
    let secret = place.outside.join("secret.txt");
    let before = std::fs::metadata(&secret).unwrap();
    for change in ["chmod 777", "touch -d 2001-01-01"] {
        refused(
            &bwrap(),
            &place.root,
            &format!("{change} {}", secret.display()),
        )
        .await;
    }
    let after = std::fs::metadata(&secret).unwrap();
    assert_eq!(
        (before.permissions(), before.modified().unwrap()),
        (after.permissions(), after.modified().unwrap())
    );
    // Landlock cannot forbid it: every result under it says so, and bubblewrap's say nothing.
    let landlocked = run(&landlock(), &place.root, "true").await;
    assert_eq!(landlocked.details()["sandbox"], "landlock");
    let gap = landlocked.details()["unprotected"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(gap.starts_with("file metadata outside the root"), "{gap}");
    let wrapped = run(&bwrap(), &place.root, "true").await;
    assert_eq!(wrapped.details().get("unprotected"), None);
}

#[tokio::test]
async fn git_inside_the_root_is_read_only_under_bubblewrap_unless_allowed() {
    let place = place();
    std::fs::create_dir(place.root.path().join(".git")).unwrap();
    std::fs::write(place.root.path().join(".git/HEAD"), "ref\n").unwrap();
    refused(&bwrap(), &place.root, "echo x > .git/HEAD").await;
    refused(&bwrap(), &place.root, "touch .git/hooks-pre-commit").await;
    assert_eq!(
        ok(&bwrap(), &place.root, "cat .git/HEAD; touch work.txt").await,
        "ref\n"
    );
    let writable = ShellPolicy {
        writable_git: true,
        ..bwrap()
    };
    ok(&writable, &place.root, "echo new > .git/HEAD").await;
    assert_eq!(
        std::fs::read_to_string(place.root.path().join(".git/HEAD")).unwrap(),
        "new\n"
    );
}

// ---- network -----------------------------------------------------------------------------------

async fn connect_to_loopback(policy: ShellPolicy, allowed: bool) {
    let place = place();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let command = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let result = run(&policy, &place.root, &command).await;
    // A connection that was made waits in the listener's queue: `accept` tells, no timing involved.
    let accepted = listener.accept();
    if allowed {
        assert_eq!(result.text_content(), "connected\n");
        assert!(accepted.is_ok(), "{accepted:?}");
    } else {
        assert!(result.is_error, "{}", result.text_content());
        assert!(!result.text_content().contains("connected\n"));
        assert_eq!(
            accepted.unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock,
            "the sandbox reached the host's loopback"
        );
    }
}

#[tokio::test]
async fn bubblewrap_has_no_network() {
    connect_to_loopback(bwrap(), false).await;
}

#[tokio::test]
async fn landlock_has_no_network() {
    connect_to_loopback(landlock(), false).await;
}

#[tokio::test]
async fn the_network_can_be_allowed() {
    let with_network = |policy: ShellPolicy| ShellPolicy {
        network: true,
        ..policy
    };
    connect_to_loopback(with_network(bwrap()), true).await;
    connect_to_loopback(with_network(landlock()), true).await;
}

// ---- processes that try to outlive the call ----------------------------------------------------

/// How a call ends.
#[derive(Clone, Copy, Debug)]
enum End {
    Exit,
    Timeout,
    Abort,
    Drop,
}

/// Starts a `setsid`'d process (bubblewrap; under Landlock `setsid` is refused, which the command
/// checks) and a double-forked one, waits until the test has seen them on the host, ends the call as
/// `end` says, and checks every one of them is gone.
async fn survivors_die(policy: ShellPolicy, end: End, label: &str) {
    let place = place();
    let id = format!("{}-{label}-{end:?}", std::process::id());
    let (setsid_name, forked_name) = (format!("yiem-setsid-{id}"), format!("yiem-forked-{id}"));
    let landlock = policy.sandbox == SandboxKind::Landlock;
    let setsid = if landlock {
        // The seccomp filter denies setsid(2): the process would leave the group that dies with the call.
        "setsid true 2>/dev/null && echo setsid-allowed || echo setsid-refused; ".to_owned()
    } else {
        format!("setsid bash -c 'exec -a {setsid_name} sleep 300' & ")
    };
    let after = match end {
        End::Exit => "echo done",
        _ => "sleep 300",
    };
    let command = format!(
        "{setsid}bash -c '(exec -a {forked_name} sleep 300) &' ; \
         while [ ! -e go ]; do sleep 0.01; done; {after}"
    );
    let token = CancellationToken::new();
    let ctx = ToolContext::new("c").with_cancellation(token.clone());
    let timeout = match end {
        End::Timeout => 2,
        _ => 120,
    };
    let args = BashArgs {
        command,
        timeout: Some(timeout),
    };
    let root = place.root.clone();
    let call = tokio::spawn(async move { bash_in_with(&root, &policy, &ctx, args).await });
    let mut pids = vec![host_pid(&forked_name).await];
    if !landlock {
        pids.push(host_pid(&setsid_name).await);
    }
    match end {
        End::Exit | End::Timeout => {
            std::fs::write(place.root.path().join("go"), "").unwrap();
        }
        End::Abort => token.cancel(),
        End::Drop => call.abort(),
    }
    let result = call.await;
    match (end, &result) {
        (End::Drop, _) => {}
        (End::Exit, Ok(result)) => {
            let expected = if landlock {
                "setsid-refused\ndone\n"
            } else {
                "done\n"
            };
            assert_eq!(result.text_content(), expected);
        }
        (End::Timeout, Ok(result)) => assert_eq!(result.details()["timed_out"], true),
        (End::Abort, Ok(result)) => assert_eq!(result.details()["aborted"], true),
        (_, Err(error)) => panic!("the call failed: {error}"),
    }
    for pid in pids {
        assert!(
            died(pid).await,
            "process {pid} outlived the call ({end:?}, {label})"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bubblewrap_kills_setsid_and_double_forked_processes_however_the_call_ends() {
    for end in [End::Exit, End::Timeout, End::Abort, End::Drop] {
        survivors_die(bwrap(), end, "bwrap").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_refuses_setsid_and_kills_double_forked_processes_however_the_call_ends() {
    for end in [End::Exit, End::Timeout, End::Abort, End::Drop] {
        survivors_die(landlock(), end, "landlock").await;
    }
}

// ---- the host's /proc --------------------------------------------------------------------------

#[tokio::test]
async fn bubblewrap_shows_no_host_process_in_proc() {
    use std::os::unix::process::CommandExt as _;
    let place = place();
    let name = format!("yiem-host-marker-{}", std::process::id());
    let mut host = std::process::Command::new("sleep")
        .arg0(&name)
        .arg("300")
        .spawn()
        .unwrap();
    // The marker runs on the host before the sandbox looks for it.
    host_pid(&name).await;
    let out = ok(
        &bwrap(),
        &place.root,
        "cat /proc/[0-9]*/cmdline | tr '\\0' '\\n' | grep -c '^yiem-host-marker' || true",
    )
    .await;
    host.kill().unwrap();
    host.wait().unwrap();
    assert_eq!(out, "0\n");
    // Only the sandbox's own few processes.
    let pids = ok(&bwrap(), &place.root, "ls /proc | grep -c '^[0-9]'").await;
    assert!(pids.trim().parse::<u32>().unwrap() < 10, "{pids}");
}

// ---- no sandbox --------------------------------------------------------------------------------

#[tokio::test]
async fn without_a_sandbox_bash_refuses_unless_the_user_opted_in() {
    let place = place();
    let missing = ShellPolicy {
        bwrap: "/nonexistent/bwrap".into(),
        ..bwrap()
    };
    assert_eq!(
        refused(&missing, &place.root, "echo hi").await,
        "tool `bash`: refused: commands run only in a sandbox, and bubblewrap (`/nonexistent/bwrap`) cannot run here; install bubblewrap (Debian: `apt-get install bubblewrap`), or let the user opt into an unconfined shell (`yiem --unsafe-shell`, or `ShellPolicy::allow_unconfined`)"
    );
    let opted_in = ShellPolicy {
        allow_unconfined: true,
        ..missing
    };
    let result = run(&opted_in, &place.root, "echo hi").await;
    assert_eq!(result.text_content(), "hi\n");
    assert_eq!(result.details()["sandbox"], "none");
}

#[tokio::test]
async fn the_sandbox_in_use_is_in_the_details() {
    let place = place();
    assert_eq!(
        run(&bwrap(), &place.root, "true").await.details()["sandbox"],
        "bubblewrap"
    );
    assert_eq!(
        run(&landlock(), &place.root, "true").await.details()["sandbox"],
        "landlock"
    );
}

/// The shell's policy is state of the store that holds `bash`, not of the process: two stores in one
/// process run their commands in the sandboxes their own policies ask for, and a store without a policy
/// uses the default.
#[tokio::test]
async fn each_store_runs_bash_under_its_own_policy() {
    let place = place();
    let store = |name: &str, policy: Option<ShellPolicy>| {
        let store = yiem_core::store::ToolStore::new(name).with_state(place.root.clone());
        let store = match policy {
            Some(policy) => store.with_state(policy),
            None => store,
        };
        store.register(yiem_tools::bash::bash_tool()).unwrap();
        store
    };
    let landlocked = store("landlocked", Some(landlock()));
    let wrapped = store("wrapped", Some(bwrap()));
    let plain = store("plain", None);
    let args = serde_json::json!({"command": "true"});
    let sandbox = |result: AgentToolResult| result.details()["sandbox"].clone();
    assert_eq!(
        sandbox(landlocked.execute("c1", "bash", args.clone()).await),
        "landlock"
    );
    assert_eq!(
        sandbox(wrapped.execute("c2", "bash", args.clone()).await),
        "bubblewrap"
    );
    // The default picks the best sandbox there is: bubblewrap, which the tests need.
    assert_eq!(
        sandbox(plain.execute("c3", "bash", args).await),
        "bubblewrap"
    );
}
