//! The OS sandbox `bash` runs its commands in, and the policy that chooses it ([`ShellPolicy`]).
//!
//! - **bubblewrap** (`bwrap`, the default on Linux): new user, PID, IPC, UTS, cgroup and network
//!   namespaces; the host's file system read-only (or hidden but for the system directories), the root
//!   directory the only writable place besides a private `/tmp`, `.git` inside the root read-only, a
//!   `/proc` that shows only the sandbox's processes, and no network unless allowed. The command's whole
//!   process tree lives in the PID namespace, so it dies with the call — on timeout, abort, drop and
//!   normal exit, `setsid` or not.
//! - **Landlock + seccomp** (the fallback where `bwrap` cannot run): Landlock makes the file system
//!   read-only but for the root directory and a per-call temporary directory (`TMPDIR`); a seccomp filter
//!   denies sockets other than Unix ones (unless the network is allowed) and `setsid`/`setpgid`, so no
//!   process can leave the command's process group, which is killed with the call. Landlock cannot hide
//!   files, make `.git` read-only inside a writable root, or give a private `/tmp` or `/proc`, and it does
//!   not cover a file's metadata: under Landlock a command can still change the mode, owner, timestamps
//!   and extended attributes of a file outside the root that it may read (`chmod`, `touch -d`,
//!   `setfattr`), though never its content. Each result under Landlock says so in its `unprotected` detail.
//! - **unconfined**: only when the user opted in ([`ShellPolicy::allow_unconfined`], `yiem
//!   --unsafe-shell`) and no sandbox is available (macOS has none of the above: there `bash` refuses
//!   unless opted in).
//!
//! Under every one of them the command starts from an empty environment plus an allow-list
//! ([`SHELL_ENV`], and the names in [`ShellPolicy::env`]), so no API key or token of the host's reaches it;
//! with no descriptor open but its standard input, output and error (whatever yiem inherited is closed at
//! `exec`); and in a session of its own, with no controlling terminal, so it cannot push input into the
//! user's terminal (`TIOCSTI`, which the seccomp filter also denies under Landlock).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use yiem_core::tool::ToolContext;

/// Which sandbox `bash` uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SandboxKind {
    /// bubblewrap where it runs, else Landlock + seccomp, else refuse (or run unconfined if opted in).
    #[default]
    Auto,
    /// bubblewrap only.
    Bubblewrap,
    /// Landlock + seccomp only.
    Landlock,
}

/// What the host's file system looks like from inside the bubblewrap sandbox.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostFiles {
    /// All of it, read-only (compilers and caches work), except a private `/tmp`, `/dev` and `/proc`.
    #[default]
    ReadOnly,
    /// Only the system directories (`/usr`, `/bin`, `/sbin`, `/lib*`, a few files of `/etc`) and the root.
    Hidden,
}

/// How `bash` confines its commands. The default: the best sandbox available, no network, the host's
/// files read-only, `.git` read-only, and a refusal when no sandbox is available.
///
/// A policy is state of the store that holds `bash` (and `write_tool`, whose compile check runs in the
/// same sandbox): give it with [`ToolStore::with_state`](yiem_core::store::ToolStore::with_state); a store
/// without one uses the default. Two stores in one process can so have two policies.
///
/// ```
/// use yiem_core::store::ToolStore;
/// use yiem_tools::ShellPolicy;
///
/// let policy = ShellPolicy::default();
/// assert!(!policy.network && !policy.allow_unconfined && !policy.writable_git);
/// let with_network = ToolStore::new("online").with_state(ShellPolicy { network: true, ..ShellPolicy::default() });
/// assert!(with_network.state::<ShellPolicy>().unwrap().network);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellPolicy {
    /// Which sandbox.
    pub sandbox: SandboxKind,
    /// Whether commands may use the network.
    pub network: bool,
    /// The host's files seen from inside (bubblewrap only; Landlock always shows them read-only).
    pub host_files: HostFiles,
    /// Whether `.git` inside the root is writable (bubblewrap only; Landlock leaves it writable).
    pub writable_git: bool,
    /// Run unconfined when the chosen sandbox is not available, instead of refusing. The user's opt-in
    /// (`yiem --unsafe-shell`); never set it for a model.
    pub allow_unconfined: bool,
    /// The bubblewrap program (default `bwrap` on `PATH`).
    pub bwrap: PathBuf,
    /// Environment variables passed to commands besides [`SHELL_ENV`] (`yiem --shell-env NAME`), with the
    /// values yiem has. Every other variable of yiem's environment (API keys, tokens) is withheld.
    pub env: Vec<String>,
}

/// The environment variables a command gets from yiem's environment, whatever the policy: everything
/// else is withheld unless named in [`ShellPolicy::env`]. `TMPDIR` is set to the sandbox's own.
pub const SHELL_ENV: &[&str] = &["PATH", "HOME", "LANG", "TERM"];

impl ShellPolicy {
    /// The environment a command starts from: [`SHELL_ENV`] and [`ShellPolicy::env`], with the values
    /// of this process's environment (a name it does not have is left out).
    ///
    /// ```
    /// let policy = yiem_tools::ShellPolicy { env: vec!["RUST_LOG".into()], ..Default::default() };
    /// // SAFETY: a doctest is its own single-threaded process.
    /// unsafe {
    ///     std::env::set_var("RUST_LOG", "debug");
    ///     std::env::set_var("OPENAI_API_KEY", "sk-secret");
    /// }
    /// let env = policy.environment();
    /// assert!(env.iter().any(|(name, value)| name == "RUST_LOG" && value == "debug"));
    /// assert!(env.iter().all(|(name, _)| name != "OPENAI_API_KEY"));
    /// ```
    pub fn environment(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        let names = SHELL_ENV
            .iter()
            .copied()
            .chain(self.env.iter().map(String::as_str));
        let mut seen = std::collections::BTreeSet::new();
        names
            .filter(|name| seen.insert(*name))
            .filter_map(|name| Some((name.into(), std::env::var_os(name)?)))
            .collect()
    }
}

impl Default for ShellPolicy {
    fn default() -> Self {
        ShellPolicy {
            sandbox: SandboxKind::Auto,
            network: false,
            host_files: HostFiles::ReadOnly,
            writable_git: false,
            allow_unconfined: false,
            bwrap: PathBuf::from("bwrap"),
            env: Vec::new(),
        }
    }
}

impl ShellPolicy {
    /// The policy of the store a call runs in (its [state](yiem_core::store::ToolStore::with_state)), else the
    /// default: each store that holds `bash` decides for its own calls.
    pub fn of(ctx: &ToolContext) -> ShellPolicy {
        ctx.state::<ShellPolicy>()
            .map(|policy| (*policy).clone())
            .unwrap_or_default()
    }
}

/// The sandbox a command will run in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Confinement {
    Bubblewrap,
    Landlock,
    Unconfined,
}

impl Confinement {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Confinement::Bubblewrap => "bubblewrap",
            Confinement::Landlock => "landlock",
            Confinement::Unconfined => "none",
        }
    }

    /// What this sandbox does not protect, said in each result (`unprotected`), or `None` when it
    /// protects what the tool's description promises.
    pub(crate) fn unprotected(&self) -> Option<&'static str> {
        match self {
            Confinement::Bubblewrap => None,
            Confinement::Landlock => Some(
                "file metadata outside the root: Landlock does not stop changes of mode, owner, timestamps or extended attributes (chmod, touch -d, setfattr) of a file the command can read; contents stay read-only",
            ),
            Confinement::Unconfined => Some(
                "everything: the command runs with yiem's own rights, outside any sandbox (the user opted in)",
            ),
        }
    }
}

static BWRAP_WORKS: Mutex<Option<HashMap<PathBuf, bool>>> = Mutex::new(None);

/// Whether `program` can set up the sandbox here (checked once per program: a few milliseconds, the
/// first time only).
fn bwrap_works(program: &Path) -> bool {
    if let Some(known) = BWRAP_WORKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .as_ref()
        .and_then(|map| map.get(program))
    {
        return *known;
    }
    let works = std::process::Command::new(program)
        .args(["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/"])
        .args(["--proc", "/proc", "--dev", "/dev", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    BWRAP_WORKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(program.to_path_buf(), works);
    works
}

/// Whether the kernel enforces Landlock.
fn landlock_works() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: landlock_create_ruleset with a null attribute and the VERSION flag only returns the ABI
        // version (or an error); it reads no memory.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                1u32,
            )
        };
        abi >= 1
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// The sandbox `policy` gives here, or why there is none and what to do (to follow "commands run only
/// in a sandbox, and ").
pub(crate) fn choose(policy: &ShellPolicy) -> Result<Confinement, String> {
    let bwrap = || cfg!(target_os = "linux") && bwrap_works(&policy.bwrap);
    let found = match policy.sandbox {
        SandboxKind::Auto if bwrap() => Some(Confinement::Bubblewrap),
        SandboxKind::Auto if landlock_works() => Some(Confinement::Landlock),
        SandboxKind::Bubblewrap if bwrap() => Some(Confinement::Bubblewrap),
        SandboxKind::Landlock if landlock_works() => Some(Confinement::Landlock),
        _ => None,
    };
    match found {
        Some(confinement) => Ok(confinement),
        None if policy.allow_unconfined => Ok(Confinement::Unconfined),
        None => {
            let wanted = match policy.sandbox {
                SandboxKind::Auto => format!(
                    "neither bubblewrap (`{}`) nor Landlock can run here",
                    policy.bwrap.display()
                ),
                SandboxKind::Bubblewrap => {
                    format!("bubblewrap (`{}`) cannot run here", policy.bwrap.display())
                }
                SandboxKind::Landlock => "Landlock is not enforced by this kernel".to_owned(),
            };
            Err(format!(
                "{wanted}; install bubblewrap (Debian: `apt-get install bubblewrap`), or let the user opt into an unconfined shell (`yiem --unsafe-shell`, or `ShellPolicy::allow_unconfined`)"
            ))
        }
    }
}

/// A command that runs `program` confined by `confinement` under `policy`, in `root`: writable there,
/// in `also_writable` and in a private temporary directory (`TMPDIR`), with `also_readable` visible even
/// where the sandbox would hide it (bubblewrap's private `/tmp` hides a checkout under `/tmp`), started
/// from the policy's environment ([`ShellPolicy::environment`]) in a session of its own with no
/// inherited descriptor ([`detach`]), and killed with its process group if yiem dies ([`watch_yiem`]).
///
/// The one place that confines a process: `bash` and `write_tool`'s compile check both start theirs here.
pub(crate) fn confine(
    confinement: &Confinement,
    policy: &ShellPolicy,
    program: &std::ffi::OsStr,
    root: &Path,
    also_writable: &[&Path],
    also_readable: &[&Path],
) -> Result<Confined, String> {
    let mut temp = None;
    let parent = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
    let lifeline = match confinement {
        Confinement::Bubblewrap => None,
        _ => Some(Lifeline::new().map_err(|error| error.to_string())?),
    };
    let lifeline_read = lifeline.as_ref().map(|line| {
        use std::os::fd::AsRawFd;
        line.read.as_raw_fd()
    });
    #[cfg(target_os = "linux")]
    let mut jail = None;
    let mut cmd = match confinement {
        Confinement::Bubblewrap => {
            let mut cmd = std::process::Command::new(&policy.bwrap);
            cmd.args(bwrap_args(root, also_writable, also_readable, policy))
                .arg("--")
                .arg(program);
            cmd
        }
        Confinement::Landlock => {
            #[cfg(target_os = "linux")]
            {
                let dir = tempfile::Builder::new()
                    .prefix("yiem-sandbox-")
                    .tempdir()
                    .map_err(|error| error.to_string())?;
                let writable: Vec<&Path> = [root, dir.path()]
                    .into_iter()
                    .chain(also_writable.iter().copied())
                    .collect();
                jail = Some(LandlockJail::new(&writable, policy.network)?);
                temp = Some(dir);
                std::process::Command::new(program)
            }
            #[cfg(not(target_os = "linux"))]
            {
                return Err("Landlock exists on Linux only".into());
            }
        }
        Confinement::Unconfined => std::process::Command::new(program),
    };
    // SAFETY: the closure runs in the child between fork and exec; it only makes the setsid, prctl,
    // close_range (or fcntl), fork and, under Landlock, landlock_restrict_self and seccomp system calls on
    // data prepared in the parent.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            detach(parent)?;
            if let Some(read) = lifeline_read {
                watch_yiem(read)?;
            }
            #[cfg(target_os = "linux")]
            if let Some(jail) = jail.as_mut() {
                jail.enter()?;
            }
            Ok(())
        });
    }
    // No secret of the host's reaches the command: an empty environment plus the allow-list, and the
    // sandbox's own TMPDIR (bubblewrap sets it inside).
    let tmpdir = temp.as_ref().map(|dir| ("TMPDIR", dir.path().as_os_str()));
    cmd.env_clear()
        .envs(policy.environment())
        .envs(tmpdir)
        .current_dir(root);
    Ok(Confined {
        command: cmd,
        temp,
        lifeline,
    })
}

/// A confined command ready to spawn, and what must live as long as it runs: its temporary directory
/// (Landlock) and yiem's end of its [`Lifeline`] (Landlock and unconfined).
pub(crate) struct Confined {
    pub(crate) command: std::process::Command,
    pub(crate) temp: Option<tempfile::TempDir>,
    pub(crate) lifeline: Option<Lifeline>,
}

/// The `bwrap` arguments (before `--`) that confine a command to `root` (and `also_writable`) under
/// `policy`, with `also_readable` shown read-only (mounted before the writable places, so a writable
/// place inside one stays writable).
fn bwrap_args(
    root: &Path,
    also_writable: &[&Path],
    also_readable: &[&Path],
    policy: &ShellPolicy,
) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = Vec::new();
    let mut push = |items: &[&std::ffi::OsStr]| args.extend(items.iter().map(|s| s.to_os_string()));
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    push(&[
        os("--die-with-parent"),
        os("--unshare-all"),
        os("--new-session"),
    ]);
    if policy.network {
        push(&[os("--share-net")]);
    }
    match policy.host_files {
        HostFiles::ReadOnly => push(&[os("--ro-bind"), os("/"), os("/")]),
        HostFiles::Hidden => {
            for dir in [
                "/usr",
                "/bin",
                "/sbin",
                "/lib",
                "/lib32",
                "/lib64",
                "/libx32",
                "/etc/alternatives",
                "/etc/ld.so.cache",
                "/etc/ld.so.conf",
                "/etc/ld.so.conf.d",
                "/etc/passwd",
                "/etc/group",
                "/etc/nsswitch.conf",
                "/etc/localtime",
                "/etc/ssl",
                "/etc/ca-certificates",
            ] {
                push(&[os("--ro-bind-try"), os(dir), os(dir)]);
            }
        }
    }
    push(&[
        os("--dev"),
        os("/dev"),
        os("--proc"),
        os("/proc"),
        os("--tmpfs"),
        os("/tmp"),
    ]);
    for dir in also_readable {
        push(&[os("--ro-bind-try"), dir.as_os_str(), dir.as_os_str()]);
    }
    push(&[os("--bind"), root.as_os_str(), root.as_os_str()]);
    for dir in also_writable {
        push(&[os("--bind"), dir.as_os_str(), dir.as_os_str()]);
    }
    let git = root.join(".git");
    if !policy.writable_git && std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_dir()) {
        push(&[os("--ro-bind"), git.as_os_str(), git.as_os_str()]);
    }
    push(&[
        os("--setenv"),
        os("TMPDIR"),
        os("/tmp"),
        os("--chdir"),
        root.as_os_str(),
    ]);
    args
}

/// Prepares a command's process between fork and exec, under every sandbox: a new session (so it has no
/// controlling terminal to push input into, and its process group, whose id is its pid, is the one
/// killed with the call), every descriptor above 2 marked close-on-exec, so none that yiem inherited
/// or opened reaches the command, and (Linux) killed when yiem dies, however it dies (`parent` is
/// yiem's pid, read before the fork).
///
/// Runs in the child between fork and exec: system calls only, no allocation.
fn detach(parent: libc::pid_t) -> std::io::Result<()> {
    // SAFETY: setsid takes no arguments; it fails only if the process already leads a group, which a
    // freshly forked child does not (no `process_group` is set on the command).
    if unsafe { libc::setsid() } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number; getppid takes nothing.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // yiem died between the fork and the prctl: the signal was never sent.
            if libc::getppid() != parent {
                return Err(std::io::Error::other(
                    "yiem exited while the command started",
                ));
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = parent;
    close_inherited_descriptors()
}

/// A pipe whose write end only yiem holds, for [`watch_yiem`]: when yiem dies, however it dies, the
/// pipe reports its end to the watcher. Dropped (closing yiem's end) when the command's call is over.
pub(crate) struct Lifeline {
    read: std::os::fd::OwnedFd,
    /// Never read: held, so that it closes when the lifeline is dropped (or yiem dies).
    _write: std::os::fd::OwnedFd,
}

impl Lifeline {
    fn new() -> std::io::Result<Self> {
        let (read, write) = std::io::pipe()?;
        Ok(Lifeline {
            read: read.into(),
            _write: write.into(),
        })
    }
}

/// Forks a watcher beside the command (between fork and exec, before the jail): it waits until yiem's
/// end of the lifeline closes and then kills the command's whole process group, itself included, so no
/// process of a call outlives a yiem that was killed. Bubblewrap's PID namespace does this by itself;
/// under Landlock or unconfined the command's children share only its process group. When the call
/// ends, the watcher dies with the group.
///
/// Runs in the child between fork and exec: system calls only, no allocation.
fn watch_yiem(read: std::os::fd::RawFd) -> std::io::Result<()> {
    // SAFETY: fork in the single-threaded child; the forked watcher makes only the async-signal-safe
    // close, read, kill and _exit calls on descriptors it owns, and never returns.
    unsafe {
        match libc::fork() {
            -1 => Err(std::io::Error::last_os_error()),
            0 => {
                // Only the lifeline stays open: not yiem's end of it, not the call's output pipe, and
                // not another call's lifeline inherited by this fork.
                close_all_but(read);
                let mut byte = 0u8;
                loop {
                    let got = libc::read(read, (&raw mut byte).cast(), 1);
                    if got == 0 || (got < 0 && *libc::__errno_location() != libc::EINTR) {
                        break;
                    }
                }
                // The command's group: this watcher's own (the command leads it).
                libc::kill(0, libc::SIGKILL);
                libc::_exit(0)
            }
            _ => Ok(()),
        }
    }
}

/// Marks every descriptor above 2 close-on-exec (not closed: the one std uses to report a failed exec
/// must stay open until then). Async-signal-safe.
fn close_inherited_descriptors() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on descriptors.
        let marked = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if marked == 0 {
            return Ok(());
        }
    }
    // Kernels before 5.11, and other systems: each descriptor below the limit.
    for fd in 3..open_limit() {
        // SAFETY: F_SETFD on a descriptor that is not open fails with EBADF and changes nothing.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    Ok(())
}

/// Closes every descriptor but `keep`. Async-signal-safe.
fn close_all_but(keep: std::os::fd::RawFd) {
    let Ok(keep) = u32::try_from(keep) else {
        return;
    };
    #[cfg(target_os = "linux")]
    // SAFETY: close_range only closes descriptors of this process.
    let closed = unsafe {
        (keep == 0 || libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32) == 0)
            && libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32) == 0
    };
    #[cfg(not(target_os = "linux"))]
    let closed = false;
    if !closed {
        for fd in (0..open_limit()).filter(|&fd| u32::try_from(fd) != Ok(keep)) {
            // SAFETY: closing a descriptor that is not open fails with EBADF and changes nothing.
            unsafe {
                libc::close(fd);
            }
        }
    }
}

/// One past the highest descriptor number this process may have (capped, for a fallback loop).
fn open_limit() -> libc::c_int {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if got != 0 {
        return 1024;
    }
    libc::c_int::try_from(limit.rlim_cur.min(1 << 20)).unwrap_or(1024)
}

/// What the child process applies to itself before it runs `bash` under Landlock: prepared in the
/// parent, so the child only makes system calls.
#[cfg(target_os = "linux")]
struct LandlockJail {
    ruleset: Option<landlock::RulesetCreated>,
    filter: seccompiler::BpfProgram,
}

#[cfg(target_os = "linux")]
impl LandlockJail {
    /// Read-only everywhere, writable beneath each of `writable` (and `/dev/null`-like devices); sockets
    /// other than Unix ones denied unless `network`; `setsid`, `setpgid` and pushing terminal input denied.
    fn new(writable: &[&Path], network: bool) -> Result<Self, String> {
        use landlock::{
            ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr,
            path_beneath_rules,
        };
        let abi = ABI::V5;
        let failed = |error: landlock::RulesetError| format!("cannot set up Landlock: {error}");
        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .map_err(failed)?;
        if !network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(abi))
                .map_err(failed)?;
        }
        let ruleset = ruleset
            .create()
            .map_err(failed)?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
            .map_err(failed)?
            .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
            .map_err(failed)?
            .add_rules(path_beneath_rules(
                ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"],
                AccessFs::from_all(abi),
            ))
            .map_err(failed)?;
        Ok(LandlockJail {
            ruleset: Some(ruleset),
            filter: seccomp_filter(network)?,
        })
    }

    /// Applies the jail to the calling process. Runs in the child between fork and exec.
    fn enter(&mut self) -> std::io::Result<()> {
        let Some(ruleset) = self.ruleset.take() else {
            return Err(std::io::Error::other("the Landlock jail was entered twice"));
        };
        let status = ruleset.restrict_self().map_err(std::io::Error::other)?;
        if status.ruleset == landlock::RulesetStatus::NotEnforced {
            return Err(std::io::Error::other("Landlock is not enforced"));
        }
        seccompiler::apply_filter(&self.filter).map_err(std::io::Error::other)
    }
}

#[cfg(target_os = "linux")]
fn seccomp_filter(network: bool) -> Result<seccompiler::BpfProgram, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    use std::collections::BTreeMap;
    let failed =
        |error: seccompiler::BackendError| format!("cannot build the seccomp filter: {error}");
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    // Leaving the process group would let a process outlive the call.
    rules.insert(libc::SYS_setsid, Vec::new());
    rules.insert(libc::SYS_setpgid, Vec::new());
    // Pushing input into a terminal (the command has none of its own, but could open one by path).
    let ioctl = |request: u64| -> Result<SeccompRule, String> {
        let condition =
            SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
                .map_err(failed)?;
        SeccompRule::new(vec![condition]).map_err(failed)
    };
    // The request constants are `c_ulong` on glibc and `c_int` on musl.
    #[allow(clippy::unnecessary_cast)]
    rules.insert(
        libc::SYS_ioctl,
        vec![ioctl(libc::TIOCSTI as u64)?, ioctl(libc::TIOCLINUX as u64)?],
    );
    if !network {
        let not_unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .map_err(failed)?;
        rules.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(vec![not_unix]).map_err(failed)?],
        );
        // io_uring can open sockets without socket(2).
        rules.insert(libc::SYS_io_uring_setup, Vec::new());
    }
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|error: seccompiler::BackendError| format!("seccomp: {error}"))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(failed)?;
    filter
        .try_into()
        .map_err(|error: seccompiler::BackendError| format!("seccomp: {error}"))
}
