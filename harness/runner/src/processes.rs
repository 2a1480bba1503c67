//! Finding every process a gateway command left behind, wherever it went (issue 34, finding 5).
//!
//! A gateway command's processes can leave its process group (`setpgid`, `setsid`, a
//! double-forking daemon), so a signal to the group misses them. Two ways keep hold of them:
//!
//! - **A mark in the environment.** Every command `launched` starts carries
//!   [`LAUNCH_MARK_VAR`]` = <random id>`, which its descendants inherit however they detach;
//!   [`marked`] finds every process of this user that carries one id (Linux: `/proc/<pid>/
//!   environ`). A process that clears its environment drops the mark; the subreaper catches it.
//! - **A subreaper** ([`become_subreaper`], Linux `PR_SET_CHILD_SUBREAPER`, set by the `keyless`
//!   binary): an orphaned descendant is re-parented to `keyless` instead of to init, so its
//!   parent chain still leads here ([`descendants_of`]) and, once killed, `keyless` reaps it
//!   ([`reap`]) instead of leaving a zombie.
//!
//! On other systems (macOS) neither exists: only the process group is stopped, which the docs
//! say (`docs/testing-your-own-gateway.md`).

use std::collections::{BTreeMap, BTreeSet};

use rustix::process::Pid;
pub use rustix::process::Signal;

/// The variable that marks a gateway command's processes with their launch's id.
pub const LAUNCH_MARK_VAR: &str = replay_core::protocol::LAUNCH_ID_VAR.name;

/// Makes this process a child subreaper (Linux): orphaned descendants are re-parented to it.
/// Returns whether it is one (false where the system has no such thing).
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Becomes `program` (with `args`), first asking the kernel (Linux `PR_SET_PDEATHSIG`) to kill
/// it with SIGKILL when its parent, `parent`, dies — even by SIGKILL. The death signal survives
/// the `exec`; it is not inherited by children (those are the subreaper's and the mark's to
/// find). Returns only on failure: the parent already gone, or `program` not started.
pub fn exec_tied_to_parent(parent: i32, program: &str, args: &[String]) -> std::io::Error {
    #[cfg(target_os = "linux")]
    if let Err(err) = rustix::process::set_parent_process_death_signal(Some(Signal::KILL)) {
        return err.into();
    }
    // The parent may have died before the death signal was armed.
    let now = rustix::process::getppid().map(|pid| pid.as_raw_nonzero().get());
    if now != Some(parent) {
        return std::io::Error::other(format!(
            "the parent process {parent} is gone; not starting {program}"
        ));
    }
    std::os::unix::process::CommandExt::exec(std::process::Command::new(program).args(args))
}

/// Every process's parent, from `/proc` (empty where there is no `/proc`).
fn parents() -> BTreeMap<i32, i32> {
    let mut parents = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return parents;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // `pid (comm) state ppid …`; the command name may hold `)`, so read after the last one.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let ppid = stat
            .rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse::<i32>().ok());
        if let Some(ppid) = ppid {
            parents.insert(pid, ppid);
        }
    }
    parents
}

/// Every living process whose parent chain leads to `root` (not `root` itself).
pub fn descendants_of(root: i32) -> BTreeSet<i32> {
    let parents = parents();
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for (pid, ppid) in &parents {
        children.entry(*ppid).or_default().push(*pid);
    }
    let mut found = BTreeSet::new();
    let mut next = vec![root];
    while let Some(pid) = next.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            if found.insert(*child) {
                next.push(*child);
            }
        }
    }
    found
}

/// Every process of this user whose environment holds `LAUNCH_MARK_VAR=id`.
pub fn marked(id: &str) -> BTreeSet<i32> {
    let wanted = format!("{LAUNCH_MARK_VAR}={id}");
    let mut found = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // Another user's environment is unreadable, and none of theirs is ours to stop.
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ
            .split(|byte| *byte == 0)
            .any(|variable| variable == wanted.as_bytes())
        {
            found.insert(pid);
        }
    }
    found
}

/// Sends `signal` to each process (one already gone is no error).
pub fn signal_all(pids: &BTreeSet<i32>, signal: Signal) {
    for pid in pids {
        if let Some(pid) = Pid::from_raw(*pid) {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }
}

/// Reaps those of `pids` that are this process's children and have exited (re-parented here
/// by the subreaper), so none stays a zombie. Never waits.
pub fn reap(pids: &BTreeSet<i32>) {
    let parents = parents();
    let me = rustix::process::getpid().as_raw_nonzero().get();
    for pid in pids {
        if parents.get(pid) == Some(&me)
            && let Some(pid) = Pid::from_raw(*pid)
        {
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
        }
    }
}

/// The kernel's flag on a task that has begun to exit (`PF_EXITING`, `include/linux/sched.h`).
const PF_EXITING: u64 = 0x4;

/// Whether the process `pid` has begun to exit (Linux; false where there is no `/proc`): its
/// main thread is a zombie or carries the kernel's exiting flag. A gateway that calls `exit`
/// just before it is signalled is still tearing down when the signal comes, and ends with its
/// own status; this tells that exit from the stop (issue 45, finding 8). Only the main thread
/// counts: another thread exiting (a server's worker after its request) is no exit of the
/// process, while an `exit` from any thread takes the main thread down within microseconds.
pub fn exiting(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) state ppid pgrp session tty_nr tpgid flags …`, read after the last `)`.
    let fields: Vec<&str> = stat
        .rfind(')')
        .map(|end| stat[end + 1..].split_whitespace().take(7).collect())
        .unwrap_or_default();
    let state = fields.first().copied().unwrap_or_default();
    let flags = fields.get(6).and_then(|flags| flags.parse::<u64>().ok());
    state == "Z" || state == "X" || flags.is_some_and(|flags| flags & PF_EXITING != 0)
}

/// Whether a process is still alive (a zombie counts as gone).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_marked_process_is_found_by_its_mark_and_as_a_descendant() {
        let id = uuid::Uuid::new_v4().to_string();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env(LAUNCH_MARK_VAR, &id)
            .spawn()
            .expect("sleep");
        let pid = child.id() as i32;
        // The new process's `/proc/<pid>/environ` can read empty for a moment after the spawn
        // returns (seen once under load in CI): give it up to 2 s to show the mark.
        let found = (0..40)
            .map(|_| marked(&id))
            .find(|found| {
                let seen = !found.is_empty();
                if !seen {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                seen
            })
            .unwrap_or_default();
        assert_eq!(found, BTreeSet::from([pid]));
        let me = rustix::process::getpid().as_raw_nonzero().get();
        assert!(descendants_of(me).contains(&pid));
        assert!(marked("another-id").is_empty());
        signal_all(&BTreeSet::from([pid]), Signal::KILL);
        let _ = child.wait();
        assert!(!alive(pid));
    }

    /// A running process is not exiting; one that has exited, not yet reaped, is.
    #[test]
    fn a_process_is_exiting_once_it_has_begun_to_exit_and_not_before() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read line"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let pid = child.id() as i32;
        assert!(!exiting(pid), "a shell waiting for its input");
        drop(child.stdin.take());
        for _ in 0..100 {
            if !alive(pid) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(exiting(pid), "a shell that exited, not yet reaped");
        let _ = child.wait();
        assert!(!exiting(pid), "reaped, it is no process at all");
    }
}
