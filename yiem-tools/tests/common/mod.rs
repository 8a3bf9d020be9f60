//! Helpers shared by the tests that follow processes: whether a pid still runs, and finding a process by
//! its `argv[0]` in the host's `/proc` (a sandbox's own pids are not the host's).

#![allow(dead_code)]

use std::time::Duration;

/// Whether `pid` is gone (or a zombie nobody has reaped yet: it runs no more).
pub fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            state.starts_with('Z') || state.starts_with('X')
        }
    }
}

/// Waits (up to a generous bound) for `pid` to die.
pub async fn died(pid: u32) -> bool {
    for _ in 0..400 {
        if is_dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

/// The host pid of the live process whose `argv[0]` is `name`, if one runs now.
pub fn find_host_pid(name: &str) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let argv0 = cmdline.split(|&b| b == 0).next()?;
            (argv0 == name.as_bytes() && !is_dead(pid)).then_some(pid)
        })
}

/// The host pid of the live process whose `argv[0]` is `name`, once it runs.
pub async fn host_pid(name: &str) -> u32 {
    for _ in 0..800 {
        if let Some(pid) = find_host_pid(name) {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no process `{name}` ever ran");
}
