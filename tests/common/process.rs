//! Processes as /proc shows them, for the tests that check that nothing a run started
//! is left behind: whether a process still runs (and whether it is still the process
//! that was seen, since pids come round again: at 32768 on these machines, within
//! seconds of a busy test run), a process's children, and the
//! processes a run started, found by the environment mark they inherit; and the turns
//! that tests running the PyTorch runtime in this process take; the Python a test runs
//! itself, with a temporary directory the test removes; and a child's address space
//! limited, for the tests of hostile input.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// One test at a time runs the PyTorch runtime in this process.
static PYTHON: Mutex<()> = Mutex::new(());

/// Waits for this test's turn to run the PyTorch runtime in this process: such tests
/// find the script's processes by parentage, so two at once would see each other's.
pub fn python_turn() -> MutexGuard<'static, ()> {
    PYTHON.lock().unwrap_or_else(|p| p.into_inner())
}

/// The Python the PyTorch runtime runs, as a command whose temporary directory
/// (`TMPDIR`) is `temp`, a folder of the test's own: what Python leaves in it (torch's
/// `torchinductor_*` cache, the `pymp-*` folders of multiprocessing helpers that end
/// killed) goes with the folder, not into the machine's /tmp.
pub fn python_in(temp: &Path) -> Command {
    let mut command = Command::new(loaderbench_measure::pytorch::python_path());
    command.env("TMPDIR", temp);
    command
}

/// Limits the address space of the process `command` starts to `bytes`, so that a test
/// sees an allocation sized by hostile input fail instead of the machine swapping.
pub fn limit_address_space(command: &mut Command, bytes: u64) {
    // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Whether `pid` is a live process. One that has exited is not, whether it is already
/// reaped (no /proc entry) or still a zombie waiting for its parent (state `Z`, or `X`
/// while it is being removed).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| state(&stat))
        .is_some_and(|state| !matches!(state, 'Z' | 'X' | 'x'))
}

/// A process as it was seen: its pid and when it started, so that another process given
/// the same pid later is not taken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub pid: u32,
    started: u64,
}

impl Seen {
    /// Process `pid` now; `None` when it is gone.
    pub fn now(pid: u32) -> Option<Seen> {
        Some(Seen {
            pid,
            started: start_ticks(pid)?,
        })
    }

    /// Whether the process seen still runs: the same pid, started at the same time.
    pub fn running(&self) -> bool {
        running(self.pid) && start_ticks(self.pid) == Some(self.started)
    }

    /// What /proc says of it, for a failure message: its command line and its stat line
    /// (state, parent, process group).
    pub fn describe(&self) -> String {
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", self.pid)).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map_or("", |(_, rest)| rest)
            .split_whitespace()
            .take(4)
            .collect();
        format!(
            "{} `{}` (state, parent, group, session: {})",
            self.pid,
            String::from_utf8_lossy(&cmdline).replace('\0', " ").trim(),
            fields.join(" ")
        )
    }
}

/// When process `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat).
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields from the state (field 3) on, after the parenthesised command name.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(22 - 3)?
        .parse()
        .ok()
}

/// The state letter of a /proc/PID/stat line: the first field after the command name,
/// which is parenthesised and may itself hold spaces and parentheses.
fn state(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The children of process `pid`, from every one of its threads' children lists (empty
/// when it is gone).
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .flat_map(|task| {
            let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            text.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Has the run `command` starts start its own preloaded Python, under it, not fork its
/// scripts from the test binary's shared one: for a test that finds a run's processes
/// below it.
pub fn own_processes(command: &mut Command) -> &mut Command {
    command.env_remove(loaderbench_measure::pytorch::SHARED_VAR)
}

/// The PyTorch runtime's script processes that `pid` (loaderbench, or a test running it
/// in process) runs: the children of its preloaded Python (`pytorch_loader.py
/// --preload`), or its children running the script where it started them directly;
/// not those of the test binary's shared preloaded Python, which other tests' commands
/// fork theirs from.
pub fn pytorch_scripts_of(pid: u32) -> Vec<u32> {
    let shared = super::shared_preloaded_python().map(|python| python.pid());
    let arguments = |pid: u32| -> Vec<Vec<u8>> {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        cmdline.split(|&b| b == 0).map(<[u8]>::to_vec).collect()
    };
    let runs_script = |args: &[Vec<u8>]| args.iter().any(|a| a.ends_with(b"pytorch_loader.py"));
    children_of(pid)
        .into_iter()
        .filter(|&child| Some(child) != shared)
        .flat_map(|child| {
            let args = arguments(child);
            if !runs_script(&args) {
                Vec::new()
            } else if args.iter().any(|a| a == b"--preload") {
                children_of(child)
            } else {
                vec![child]
            }
        })
        .collect()
}

/// The pids of `pid`'s children that run `loaderbench COMMAND` (`__measure`, `__worker`).
pub fn children_running(pid: u32, command: &str) -> Vec<u32> {
    children_of(pid)
        .into_iter()
        .filter(|child| {
            std::fs::read(format!("/proc/{child}/cmdline")).is_ok_and(|cmdline| {
                cmdline
                    .split(|&b| b == 0)
                    .any(|arg| arg == command.as_bytes())
            })
        })
        .collect()
}

/// The live processes whose environment holds `var=value`: a mark a test sets on the
/// command it runs, which every process that command starts inherits.
pub fn marked(var: &str, value: &str) -> Vec<u32> {
    let needle = format!("{var}={value}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|&b| b == 0)
                    .any(|entry| entry == needle.as_bytes())
            })
        })
        .filter(|&pid| running(pid))
        .collect()
}

/// Runs `command` to its end within `limit` in `dir`, a folder of the test's own, then
/// checks that no process it started (however started: Python, its workers, ranks, the
/// scripts a shared preloaded Python forked for it in its working directory) is still
/// there: each works in `dir`, as none of them changes directory.
pub fn run_leaving_nothing(command: &mut Command, dir: &Path, limit: Duration) -> Output {
    let output = super::run_with_deadline(command.current_dir(dir), limit);
    let left = working_in(dir);
    assert!(
        left.is_empty(),
        "processes {left:?} of the run are still there"
    );
    output
}

/// The live processes whose working directory is `dir`.
pub fn working_in(dir: &Path) -> Vec<u32> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == dir))
        .filter(|&pid| running(pid))
        .collect()
}
