//! Child processes that die with this process. Every worker, rank, measuring child and
//! PyTorch runtime's Python process is started by one launcher thread that lives as long as the
//! process: Linux's parent-death signal (`PR_SET_PDEATHSIG`) fires when the *thread* that
//! created a child ends, so a child started from a short-lived thread (a pool started on
//! a runner thread and kept by another) would be killed while its pool still runs.
//! Started from the launcher, a child gets SIGKILL exactly when the whole process ends,
//! however it ends. Elsewhere on Unix there is no such signal; children notice instead
//! that their pipes reached end-of-file. Children also leave Ctrl-C and termination to
//! this process ([`leave_interrupts_to_parent`]), which stops them itself. What a child
//! writes is read as bytes ([`lossy_lines`]), so its pipes are drained to the end
//! whatever it writes; what it is first given goes through [`hand_over`]. A group killed
//! with [`kill_group`] or [`end_group`] has ended when they return: none of its processes
//! still frees its memory.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command};
use std::sync::Arc;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};
#[cfg(unix)]
use std::time::{Duration, Instant};

type Job = Box<dyn FnOnce() + Send>;

static LAUNCHER: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();

/// Runs `job` on the launcher thread and returns its result. A fork made inside `job`
/// has the launcher as its parent thread. Falls back to the calling thread if the
/// launcher thread cannot be started (the system is out of threads), which only loses
/// the guarantee above.
pub fn on_launcher<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> T {
    let (reply, result) = channel();
    let job: Job = Box::new(move || {
        let _ = reply.send(job());
    });
    match launcher() {
        Some(launcher) => {
            let sent = launcher
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .send(job);
            if let Err(returned) = sent {
                (returned.0)();
            }
        }
        None => job(),
    }
    // The job sends once, on the launcher or right here, unless it panicked.
    result
        .recv()
        .unwrap_or_else(|_| panic!("a job on the launcher thread panicked"))
}

fn launcher() -> Option<&'static Mutex<Sender<Job>>> {
    if let Some(launcher) = LAUNCHER.get() {
        return Some(launcher);
    }
    let (sender, jobs) = channel::<Job>();
    let started = std::thread::Builder::new()
        .name("loaderbench-launcher".to_owned())
        .spawn(move || {
            for job in jobs {
                // A panicking job drops its reply, which the caller reports; the
                // launcher itself must outlive it.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        });
    if started.is_err() {
        return None;
    }
    // Two threads racing here each start a launcher; the loser's channel closes and its
    // thread ends at once, having created no children.
    Some(LAUNCHER.get_or_init(|| Mutex::new(sender)))
}

/// Starts `command` from the launcher thread so that the child dies with this process
/// (Linux) and exits at once if this process is already gone. Hooks the caller added
/// with `pre_exec` run first.
pub fn spawn_tied(mut command: Command) -> std::io::Result<Child> {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let parent = rustix::process::getpid();
        // SAFETY: the hook runs in the child between fork and exec and only makes
        // async-signal-safe system calls (prctl, getppid, exit) without allocating.
        unsafe {
            command.pre_exec(move || {
                die_with_parent(parent);
                Ok(())
            });
        }
    }
    on_launcher(move || command.spawn())
}

/// How long [`end_group`] waits for a killed group's processes to be gone: a process
/// with gigabytes resident takes tens of milliseconds to free them after SIGKILL.
#[cfg(unix)]
const GROUP_END_LIMIT: Duration = Duration::from_secs(2);

/// SIGKILL to a child's process group, for a child started as a group's leader (not yet
/// reaped, so the group id cannot have been reused), waiting until the group has ended
/// ([`end_group`]); elsewhere, the child alone.
pub fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    end_group(rustix::process::Pid::from_child(child));
    let _ = child.kill();
}

/// SIGKILL to process group `group`, then a wait (at most two seconds) until none of its
/// processes runs any more, each gone or a zombie: what the group held (its memory, its
/// cores) is free when this returns, and no process of it outlives a loaderbench that
/// exits next.
#[cfg(unix)]
pub fn end_group(group: rustix::process::Pid) {
    // A group that is already gone is ESRCH, which changes nothing.
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    let deadline = Instant::now() + GROUP_END_LIMIT;
    while group_runs(group.as_raw_nonzero().get()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// True while a process of group `group` runs (it is neither gone nor a zombie); read
/// from /proc on Linux, elsewhere never.
#[cfg(unix)]
fn group_runs(group: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.parse::<u32>().is_ok())
        })
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .any(|stat| {
            state_and_group(&stat)
                .is_some_and(|(state, of)| of == group && !matches!(state, "Z" | "X" | "x"))
        })
}

/// A process's state and process group, from its /proc `stat` line: the first and third
/// fields after the command's closing parenthesis.
#[cfg(unix)]
fn state_and_group(stat: &str) -> Option<(&str, i32)> {
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?;
    Some((state, fields.nth(1)?.parse().ok()?))
}

/// [`spawn_tied`], the child also [leaving interrupts to this
/// process](leave_interrupts_to_parent) from before its first instruction: no Ctrl-C or
/// termination sent to the process group reaches it between its start and its own code.
pub fn spawn_tied_leaving_interrupts(mut command: Command) -> std::io::Result<Child> {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: the hook only sets signal dispositions to SIG_IGN, which is
        // async-signal-safe, as code between fork and exec must be.
        unsafe {
            command.pre_exec(|| {
                leave_interrupts_to_parent();
                Ok(())
            });
        }
    }
    spawn_tied(command)
}

/// Makes the calling process die with its parent (Linux; elsewhere it only checks that
/// the parent is still there). Call it in a child right after fork: it is
/// async-signal-safe.
#[cfg(unix)]
pub fn die_with_parent(parent: rustix::process::Pid) {
    #[cfg(target_os = "linux")]
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    // The parent may have died before the signal was armed.
    if rustix::process::getppid() != Some(parent) {
        // SAFETY: `_exit` ends the child at once without running the parent's
        // destructors or atexit handlers, which belong to the parent.
        unsafe { libc::_exit(1) };
    }
}

/// Gives a child started with piped stdin its first message, `message` as one JSON line;
/// a child that cannot be given it is killed and reaped, not left waiting for it. `what`
/// names the message in the error (`the plan`, `rank 2's job`).
pub fn hand_over(
    child: &mut Child,
    stdin: &mut ChildStdin,
    message: &impl serde::Serialize,
    what: &str,
) -> crate::Result<()> {
    let handed = serde_json::to_string(message)
        .map_err(|err| crate::Error::run(format!("cannot encode {what}: {err}")))
        .and_then(|line| {
            writeln!(stdin, "{line}")
                .map_err(|err| crate::Error::run(format!("cannot hand {what} over: {err}")))
        });
    if handed.is_err() {
        let _ = child.kill();
        let _ = child.wait();
    }
    handed
}

/// The lines a child writes to `pipe`, until it closes it (or a read fails), each
/// decoded lossily: a byte that is not UTF-8 (a user's library writing in another
/// encoding) becomes U+FFFD rather than ending the reading, which would leave the pipe
/// full or closed under the child.
pub fn lossy_lines(pipe: impl Read) -> impl Iterator<Item = String> {
    BufReader::new(pipe)
        .split(b'\n')
        .map_while(std::io::Result::ok)
        .map(|mut line| {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            String::from_utf8(line)
                .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned())
        })
}

/// The last lines a child wrote to stderr, read on a thread of their own.
pub fn collect_tail(stderr: impl std::io::Read + Send + 'static) -> Arc<Mutex<VecDeque<String>>> {
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let kept = tail.clone();
    let read = move || {
        for line in lossy_lines(stderr) {
            if let Ok(mut tail) = kept.lock() {
                if tail.len() == 20 {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        }
    };
    // Without the thread the child's error text is lost, never the run.
    let _ = std::thread::Builder::new()
        .name("loaderbench-child-stderr".to_owned())
        .spawn(read);
    tail
}

/// Leaves Ctrl-C and termination to the parent: a terminal sends SIGINT to the whole
/// process group, and a worker that died of it would fail the run the parent is
/// cancelling and saving. The parent stops its workers and ranks itself. Async-signal-safe, and
/// kept across `exec`.
#[cfg(unix)]
pub fn leave_interrupts_to_parent() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: setting a signal's disposition to SIG_IGN involves no handler code.
        unsafe {
            libc::signal(signal, libc::SIG_IGN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_on_one_thread_that_outlives_its_callers() {
        let name = || std::thread::current().name().map(str::to_owned);
        let first = std::thread::spawn(move || on_launcher(name))
            .join()
            .unwrap();
        let second = on_launcher(name);
        assert_eq!(first.as_deref(), Some("loaderbench-launcher"));
        assert_eq!(first, second);
        let id = || std::thread::current().id();
        assert_eq!(on_launcher(id), on_launcher(id));
    }

    #[test]
    fn a_panicking_job_leaves_the_launcher_running() {
        let panicked = std::thread::spawn(|| on_launcher(|| panic!("job fails"))).join();
        assert!(panicked.is_err(), "the caller sees the failure");
        assert_eq!(on_launcher(|| 2 + 2), 4);
    }

    /// The resident memory of group `group`'s processes, in KiB.
    #[cfg(target_os = "linux")]
    fn group_rss_kib(group: i32) -> u64 {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| {
                let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
                (state_and_group(&stat)?.1 == group).then_some(())?;
                let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
                let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .sum()
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_killed_group_has_ended_when_its_leader_is_reaped() {
        use std::os::unix::process::CommandExt;
        // The leader dies at once; dd, with a gigabyte resident, takes tens of
        // milliseconds to free it after SIGKILL, as a DataLoader worker does.
        let mut command = Command::new("sh");
        command
            .args([
                "-c",
                "dd if=/dev/zero of=/dev/null bs=1G count=1000000 2>/dev/null & wait",
            ])
            .process_group(0);
        let mut child = command.spawn().unwrap();
        let group = i32::try_from(child.id()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while group_rss_kib(group) < 900 * 1024 {
            assert!(Instant::now() < deadline, "dd never filled its buffer");
            std::thread::sleep(Duration::from_millis(10));
        }
        kill_group(&mut child);
        child.wait().unwrap();
        assert!(!group_runs(group), "a process of the group still runs");
    }

    #[test]
    fn lines_that_are_not_utf8_are_read_lossily_to_the_end() {
        let written: &[u8] = b"one\r\n\xff\xfe warning\nlast";
        let lines: Vec<String> = lossy_lines(written).collect();
        assert_eq!(lines, ["one", "\u{fffd}\u{fffd} warning", "last"]);
    }
}
