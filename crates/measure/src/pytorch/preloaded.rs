//! The preloaded Python (`python/pytorch_preload.py`): the script started once per run
//! with `--preload`, which imports torch, torchvision and the rest and then forks one
//! script process per measurement, so that a run pays `import torch` (about 4 s of CPU
//! on these machines) once rather than once per config and repeat. Each fork request
//! carries the new process's stdin, stdout and stderr (pipes of ours, passed over a
//! Unix socket), so the forked script talks to loaderbench exactly as one it started
//! would, in a process group of its own. The preloaded Python keeps each exited script
//! a zombie until [`PreloadedPython::release`] (its pid, and so its group id, cannot
//! come round to another process before loaderbench has killed the group), and it
//! reports each exit's wait status on the socket. A run offered a shared one
//! (`shared_preloaded`) connects to it instead of starting its own. Linux only, and `LOADERBENCH_PRELOAD=0` turns
//! it off: then every script is started afresh.

use std::collections::{HashMap, HashSet};
use std::io::{IoSlice, PipeReader, PipeWriter};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use serde::Deserialize;

use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::child_processes::{end_group, kill_group, lossy_lines};
use loaderbench_engine::error::{Error, Result};

/// The environment variable that, set to `0`, has every script started afresh.
pub const PRELOAD_VAR: &str = "LOADERBENCH_PRELOAD";

/// Whether this run may preload: on Linux, unless [`PRELOAD_VAR`] says not to.
pub fn wanted() -> bool {
    cfg!(target_os = "linux") && std::env::var_os(PRELOAD_VAR).is_none_or(|value| value != "0")
}

/// How long a fork or a release may take before the preloaded Python is taken for hung.
const REPLY_LIMIT: Duration = Duration::from_secs(10);

/// How often a wait for the preloaded Python checks for cancellation.
const POLL: Duration = Duration::from_millis(50);

/// A line the preloaded Python reports.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Report {
    Preloaded,
    Forked { pid: u32 },
    Exited { pid: u32, status: i32 },
    Released { pid: u32 },
}

/// What the preloaded Python has reported so far.
#[derive(Default)]
struct State {
    preloaded: bool,
    /// Its stdout closed: it ended.
    closed: bool,
    /// The pid of the last fork, taken by the request that waits for it.
    forked: Option<u32>,
    exits: HashMap<u32, ExitStatus>,
    released: HashSet<u32>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means the reader thread panicked; what it saw stands.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until `done` gives a value, the preloaded Python ends (`None`), or `limit`.
    fn wait<T>(&self, limit: Duration, mut done: impl FnMut(&mut State) -> Option<T>) -> Option<T> {
        let deadline = Instant::now() + limit;
        let mut state = self.lock();
        loop {
            if let Some(value) = done(&mut state) {
                return Some(value);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if state.closed || left.is_zero() {
                return None;
            }
            state = match self.changed.wait_timeout(state, left) {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }
}

/// A forked script's pipes, our ends: its stdin, stdout and stderr.
pub struct ForkedPipes {
    pub stdin: PipeWriter,
    pub stdout: PipeReader,
    pub stderr: PipeReader,
}

/// The preloaded Python of one run: one it started, or its connection to a shared one.
/// Dropping it ends every script it forked, and the process where it started it.
pub struct PreloadedPython {
    /// The fork and release requests; one at a time, each waiting for its reply.
    requests: Mutex<UnixStream>,
    shared: Arc<Shared>,
    /// The process, where this run started it.
    process: Option<Child>,
    /// Its process belongs to none of the configs whose scripts it forks.
    _standing_by: Option<crate::meter::StandingBy>,
}

impl PreloadedPython {
    /// Starts `python script --preload` and waits until it has imported everything and
    /// serves, at most `limit`. `None` when it ended first: a Python without torch, say,
    /// which the script started directly then names.
    pub fn start(
        python: &Path,
        script: &Path,
        temp: &Path,
        cancel: &CancelToken,
        limit: Duration,
    ) -> Result<Option<PreloadedPython>> {
        let socket_error = |err: std::io::Error| {
            Error::run(format!(
                "cannot make a socket for the preloaded Python: {err}"
            ))
        };
        let (ours, theirs) = UnixStream::pair().map_err(socket_error)?;
        let mut command = Command::new(python);
        command
            .arg(script)
            .arg("--preload")
            .env("TMPDIR", temp)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let Ok(process) = loaderbench_engine::child_processes::spawn_tied(command) else {
            // The direct start names a Python that cannot run.
            return Ok(None);
        };
        PreloadedPython::serving(ours, Some(process), python, cancel, limit)
    }

    /// Connects to the shared preloaded Python listening on `socket`, which runs
    /// `python`, and waits until it serves, at most `limit`. `None` where it is gone.
    pub fn connect(
        socket: &Path,
        python: &Path,
        cancel: &CancelToken,
        limit: Duration,
    ) -> Result<Option<PreloadedPython>> {
        let Ok(stream) = UnixStream::connect(socket) else {
            return Ok(None);
        };
        PreloadedPython::serving(stream, None, python, cancel, limit)
    }

    /// Follows the reports on `stream` and waits until the preloaded Python serves.
    fn serving(
        stream: UnixStream,
        process: Option<Child>,
        python: &Path,
        cancel: &CancelToken,
        limit: Duration,
    ) -> Result<Option<PreloadedPython>> {
        let shared = Arc::new(Shared {
            state: Mutex::default(),
            changed: Condvar::new(),
        });
        let reports = stream.try_clone();
        let preloaded = PreloadedPython {
            requests: Mutex::new(stream),
            shared: shared.clone(),
            _standing_by: process
                .as_ref()
                .map(|p| crate::meter::StandingBy::new(p.id())),
            process,
        };
        let reports = reports.map_err(|err| {
            Error::run(format!("cannot read the preloaded Python's socket: {err}"))
        })?;
        let read = move || {
            for line in lossy_lines(reports) {
                let mut state = shared.lock();
                match serde_json::from_str(&line) {
                    Ok(Report::Preloaded) => state.preloaded = true,
                    Ok(Report::Forked { pid }) => state.forked = Some(pid),
                    Ok(Report::Exited { pid, status }) => {
                        state.exits.insert(pid, ExitStatus::from_raw(status));
                    }
                    Ok(Report::Released { pid }) => {
                        state.released.insert(pid);
                    }
                    Err(_) => {}
                }
                shared.changed.notify_all();
            }
            shared.lock().closed = true;
            shared.changed.notify_all();
        };
        std::thread::Builder::new()
            .name("preloaded-python".to_owned())
            .spawn(read)
            .map_err(|err| Error::run(format!("cannot start a reader thread: {err}")))?;
        let deadline = Instant::now() + limit;
        loop {
            cancel.check()?;
            let serving = preloaded
                .shared
                .wait(POLL, |state| state.preloaded.then_some(()));
            if serving.is_some() {
                return Ok(Some(preloaded));
            }
            if preloaded.shared.lock().closed {
                return Ok(None);
            }
            if Instant::now() > deadline {
                return Err(Error::run(format!(
                    "the PyTorch runtime ({}) did not finish importing torch in {:.0} s",
                    python.display(),
                    limit.as_secs_f64()
                )));
            }
        }
    }

    /// Forks a script process, in this process's working directory with `temp` as its
    /// temporary directory, and returns its pid with our ends of its pipes; `None` when
    /// the preloaded Python has ended (scripts are then started directly).
    pub fn fork(&self, temp: &Path) -> Result<Option<(u32, ForkedPipes)>> {
        let pipe_error =
            |err: std::io::Error| Error::run(format!("cannot make a pipe for the script: {err}"));
        let (stdin_theirs, stdin) = std::io::pipe().map_err(pipe_error)?;
        let (stdout, stdout_theirs) = std::io::pipe().map_err(pipe_error)?;
        let (stderr, stderr_theirs) = std::io::pipe().map_err(pipe_error)?;
        let cwd = std::env::current_dir()
            .map_err(|err| Error::run(format!("cannot read the working directory: {err}")))?;
        let place = serde_json::json!({ "cwd": cwd, "tmpdir": temp });
        let line = format!("fork {place}\n");
        let requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        self.shared.lock().forked = None;
        let fds = [
            stdin_theirs.as_fd(),
            stdout_theirs.as_fd(),
            stderr_theirs.as_fd(),
        ];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        control.push(SendAncillaryMessage::ScmRights(&fds));
        let sent = rustix::net::sendmsg(
            &*requests,
            &[IoSlice::new(line.as_bytes())],
            &mut control,
            SendFlags::NOSIGNAL,
        );
        // The forked script holds its own copies; ours would keep its stdin open and
        // its stdout and stderr from ever closing.
        drop((stdin_theirs, stdout_theirs, stderr_theirs));
        if sent.is_err() {
            return Ok(None);
        }
        let pid = self.shared.wait(REPLY_LIMIT, |state| state.forked.take());
        Ok(pid.map(|pid| {
            (
                pid,
                ForkedPipes {
                    stdin,
                    stdout,
                    stderr,
                },
            )
        }))
    }

    /// How script `pid` ended, if it does within `grace`.
    pub fn exit_status(&self, pid: u32, grace: Duration) -> Option<ExitStatus> {
        self.shared
            .wait(grace, |state| state.exits.get(&pid).copied())
    }

    /// Kills script `pid`'s process group and has it reaped. Where the preloaded Python
    /// has ended, the group is killed from here.
    pub fn release(&self, pid: u32) {
        let requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        let line = format!("release {pid}\n");
        let sent = rustix::net::send(&*requests, line.as_bytes(), SendFlags::NOSIGNAL);
        let released = sent.is_ok()
            && self
                .shared
                .wait(REPLY_LIMIT, |state| {
                    state.released.remove(&pid).then_some(())
                })
                .is_some();
        let group = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw);
        if let (false, Some(group)) = (released, group) {
            end_group(group);
        }
        self.shared.lock().exits.remove(&pid);
    }
}

impl Drop for PreloadedPython {
    /// Closes the socket (the preloaded Python then kills what it has not released,
    /// and one this run started exits), and kills the group of one this run started
    /// and reaps it.
    fn drop(&mut self) {
        let _ = self
            .requests
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .shutdown(std::net::Shutdown::Both);
        let Some(process) = &mut self.process else {
            return;
        };
        let exited = self
            .shared
            .wait(Duration::from_secs(1), |state| state.closed.then_some(()));
        if exited.is_none() {
            kill_group(process);
        }
        let _ = process.wait();
    }
}
