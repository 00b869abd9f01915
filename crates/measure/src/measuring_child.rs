//! A run measured in a child process of this program (`loaderbench __measure`), as the
//! app measures: the child runs exactly what `loaderbench run` runs, in a fresh process
//! like the CLI's, and streams the same [`Event`]s as JSON lines on its stdout, so the
//! window's drawing threads are never part of the measured process and the interference
//! meter counts them as other load. Before each epoch the child writes `gate` and waits
//! (at most [`GATE_LIMIT`]) for the parent's `go`, which the app sends once it has drawn
//! what it was told and gone quiet. Batch events are passed on at most every
//! [`super::BATCH_EVENT_INTERVAL`] (the app shows per-batch detail from each finished epoch).
//! `cancel` on the child's stdin, or stdin closing, cancels the run; the child still
//! ends with `Cancelled` and every result measured. The parent side is [`ChildRun`];
//! the child side is [`serve`].

use std::collections::VecDeque;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded, unbounded};

use crate::events::Event;
use crate::journal::default_journal;
use crate::pytorch::SharedPreloadedPython;
use crate::results::{RunResult, RunStatus};
use crate::run_header::unix_now_s;
use crate::runner::{RunOptions, spawn};
use loaderbench_engine::child_processes::{collect_tail, lossy_lines};
use loaderbench_engine::error::{Error, Result};
use loaderbench_engine::plan::Plan;

/// The hidden sub-command that measures a plan read from stdin.
pub const CHILD_COMMAND: &str = "__measure";

/// The longest the child waits at a gate for the parent's `go`: a window that stopped
/// drawing must not stop the run.
pub const GATE_LIMIT: Duration = Duration::from_secs(2);

/// How often the child's main thread takes the runner's events, as the CLI does: waking
/// for each batch would take CPU from the measurement.
const EVENT_POLL: Duration = Duration::from_millis(50);

/// How long a cancelled or dropped child gets to end before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// The line a measuring process writes when it waits before an epoch.
pub const AT_GATE: &str = "gate";
/// The line that lets it go on.
pub const GO: &str = "go";
const CANCEL: &str = "cancel";

/// A run in a child process, seen from the parent: the same events as an in-process
/// [`RunHandle`](super::RunHandle).
pub struct ChildRun {
    events: Receiver<Event>,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    child: Arc<Mutex<Child>>,
    reader: Option<JoinHandle<()>>,
    journal: PathBuf,
}

impl ChildRun {
    /// Starts measuring `plan` in `executable` (this program when `None`), journaled to
    /// `journal` (a new one in [`runs_dir`](crate::runs_dir) when `None`), offered
    /// `preloaded` to fork its scripts from. `settle` is
    /// called on a background thread, with the queue of events not yet taken, whenever
    /// the child waits before an epoch; `go` is sent when it returns. `wake` is called
    /// after each event is queued.
    pub fn start(
        plan: &Plan,
        journal: Option<PathBuf>,
        executable: Option<&Path>,
        preloaded: Option<&SharedPreloadedPython>,
        settle: impl FnMut(&Receiver<Event>) + Send + 'static,
        wake: impl Fn(&Event) + Send + 'static,
    ) -> Result<ChildRun> {
        let journal = match journal {
            Some(path) => path,
            None => default_journal(&plan.preset.name)?,
        };
        let program = match executable {
            Some(path) => path.to_path_buf(),
            None => std::env::current_exe()
                .map_err(|err| Error::run(format!("cannot find this program to run it: {err}")))?,
        };
        let mut command = Command::new(&program);
        command
            .arg(CHILD_COMMAND)
            .arg("--journal")
            .arg(&journal)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(preloaded) = preloaded {
            preloaded.share_with(&mut command);
        }
        // A terminal's Ctrl-C (or `timeout`'s signal) goes to the whole process group:
        // the child ignores it, and this process stops it through `cancel`, which keeps
        // the round it is measuring (killed by the signal, that round was lost and the
        // run said failed).
        let mut child = loaderbench_engine::child_processes::spawn_tied_leaving_interrupts(command)
            .map_err(|err| Error::run(format!("cannot start {}: {err}", program.display())))?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            return Err(Error::run("the measuring process has no pipes"));
        };
        loaderbench_engine::child_processes::hand_over(&mut child, &mut stdin, plan, "the plan")?;
        let stdin = Arc::new(Mutex::new(Some(stdin)));
        let child = Arc::new(Mutex::new(child));
        let stderr_tail = collect_tail(stderr);
        let (sender, events) = unbounded();
        let follower = Follower {
            stdin: stdin.clone(),
            child: child.clone(),
            sender,
            queued: events.clone(),
            settle: Box::new(settle),
            wake: Box::new(wake),
            stderr_tail,
            partial: Some(RunResult::starting(plan, unix_now_s())),
        };
        let reader = match std::thread::Builder::new()
            .name("loaderbench-child-events".to_owned())
            .spawn(move || follower.follow(stdout))
        {
            Ok(reader) => reader,
            Err(err) => {
                if let Ok(mut child) = child.lock() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                return Err(Error::run(format!(
                    "cannot follow the measuring process: {err}"
                )));
            }
        };
        Ok(ChildRun {
            events,
            stdin,
            child,
            reader: Some(reader),
            journal,
        })
    }

    /// The run's events; the last one is `Finished`, `Failed` or `Cancelled`.
    pub fn events(&self) -> &Receiver<Event> {
        &self.events
    }

    /// Asks the run to stop; it ends with `Cancelled` and what was measured.
    pub fn cancel(&self) {
        send_line(&self.stdin, CANCEL);
    }

    /// The child's process id.
    pub fn id(&self) -> Option<u32> {
        self.child.lock().ok().map(|child| child.id())
    }

    /// Where the journal is written.
    pub fn journal_path(&self) -> &Path {
        &self.journal
    }

    /// True once the child has ended and every event is queued.
    pub fn is_finished(&self) -> bool {
        self.reader.as_ref().is_none_or(JoinHandle::is_finished)
    }
}

impl Drop for ChildRun {
    fn drop(&mut self) {
        self.cancel();
        let deadline = Instant::now() + STOP_GRACE;
        while !self.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Ok(mut child) = self.child.lock() {
            // Ending a child that already exited is harmless.
            let _ = child.kill();
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

fn send_line(stdin: &Mutex<Option<ChildStdin>>, line: &str) {
    if let Ok(mut stdin) = stdin.lock()
        && let Some(pipe) = stdin.as_mut()
    {
        // A child that has gone cannot be told anything; its end is reported by the
        // event reader.
        let _ = writeln!(pipe, "{line}").and_then(|()| pipe.flush());
    }
}

/// Waits, at an epoch gate, until the front end has settled; given the queued events.
type Settle = Box<dyn FnMut(&Receiver<Event>) + Send>;

/// The parent's reader of the child's stdout.
struct Follower {
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    child: Arc<Mutex<Child>>,
    sender: Sender<Event>,
    /// The events sent and not yet taken.
    queued: Receiver<Event>,
    settle: Settle,
    wake: Box<dyn Fn(&Event) + Send>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// What was measured so far (the plan's empty result until the child's `Started`),
    /// to report if the child dies without a final event; `None` once one came.
    partial: Option<RunResult>,
}

impl Follower {
    fn follow(mut self, stdout: impl Read) {
        for line in lossy_lines(stdout) {
            if line == AT_GATE {
                (self.settle)(&self.queued);
                send_line(&self.stdin, GO);
                continue;
            }
            let Ok(event) = serde_json::from_str::<Event>(&line) else {
                continue;
            };
            self.keep(&event);
            let ended = event.final_result().is_some();
            // The receiver gone means nobody watches; the child still runs to its end.
            let _ = self.sender.send(event.clone());
            (self.wake)(&event);
            if ended {
                self.partial = None;
            }
        }
        // Closing stdin lets a child still reading it end.
        if let Ok(mut stdin) = self.stdin.lock() {
            stdin.take();
        }
        let status = self
            .child
            .lock()
            .ok()
            .and_then(|mut child| child.wait().ok());
        if let Some(mut result) = self.partial.take() {
            let detail = self
                .stderr_tail
                .lock()
                .ok()
                .and_then(|tail| tail.back().cloned())
                .unwrap_or_else(|| "no error output".to_owned());
            let error = format!(
                "the measuring process ended without finishing ({}): {detail}",
                status.map_or_else(|| "status unknown".to_owned(), |s| s.to_string())
            );
            result.status = RunStatus::Failed {
                error: error.clone(),
            };
            let event = Event::Failed {
                error,
                bad_input: false,
                field: None,
                result: Box::new(result),
            };
            let _ = self.sender.send(event.clone());
            (self.wake)(&event);
        }
    }

    /// Keeps what the events measured, so a crash loses nothing already reported.
    fn keep(&mut self, event: &Event) {
        match event {
            Event::Started { result, .. } => self.partial = Some((**result).clone()),
            Event::ConfigFinished { result } => {
                if let Some(partial) = &mut self.partial {
                    partial.results.push((**result).clone());
                }
            }
            _ => {}
        }
    }
}

/// The child's side: reads the plan from stdin, runs it, writes its events to stdout
/// and waits at each gate for `go`. Returns the exit code `loaderbench run` would.
pub fn serve(journal: Option<PathBuf>) -> u8 {
    let stdin = std::io::stdin();
    let mut first = String::new();
    if let Err(err) = stdin.lock().read_line(&mut first) {
        eprintln!("error: cannot read the plan: {err}");
        return 2;
    }
    let plan: Plan = match serde_json::from_str(&first) {
        Ok(plan) => plan,
        Err(err) => {
            eprintln!("error: the plan is not valid JSON: {err}");
            return 2;
        }
    };
    let (go_tx, go_rx) = bounded::<()>(1);
    let (gate_tx, gate_rx) = bounded::<()>(1);
    let before_epoch = move || {
        if gate_tx.send(()).is_ok() {
            // No answer in time, or the parent gone: measure anyway.
            let _ = go_rx.recv_timeout(GATE_LIMIT);
        }
    };
    let handle = spawn(
        plan,
        RunOptions {
            journal,
            before_epoch: Some(Box::new(before_epoch)),
            ..RunOptions::default()
        },
        || {},
    );
    let cancel = handle.canceller();
    let listen = move || {
        listen_to_parent(&go_tx);
        // Told to stop, or the parent is gone.
        cancel.cancel();
    };
    if std::thread::Builder::new()
        .name("loaderbench-child-stdin".to_owned())
        .spawn(listen)
        .is_err()
    {
        eprintln!("error: cannot listen to the parent");
        return 1;
    }
    forward(handle.events(), &gate_rx)
}

/// Reads the parent's lines on stdin, each `go` letting a gate that waits pass (through
/// `go`), until the parent says `cancel` or stdin ends.
pub(crate) fn listen_to_parent(go: &Sender<()>) {
    for line in std::io::stdin().lock().lines() {
        match line.as_deref().map(str::trim) {
            Ok(GO) => {
                let _ = go.try_send(());
            }
            Ok(CANCEL) | Err(_) => break,
            Ok(_) => {}
        }
    }
}

/// Writes the runner's events to stdout until the run ends; returns the exit code.
fn forward(events: &Receiver<Event>, gate: &Receiver<()>) -> u8 {
    let mut stdout = std::io::stdout().lock();
    let mut last_batch: Option<Instant> = None;
    loop {
        let (at_gate, runner_gone) = match gate.recv_timeout(EVENT_POLL) {
            Ok(()) => (true, false),
            Err(RecvTimeoutError::Timeout) => (false, false),
            // The runner ended; its last events are still queued.
            Err(RecvTimeoutError::Disconnected) => (false, true),
        };
        while let Ok(event) = events.try_recv() {
            if matches!(event, Event::Batch { .. }) {
                if last_batch.is_some_and(|at| at.elapsed() < super::BATCH_EVENT_INTERVAL) {
                    continue;
                }
                last_batch = Some(Instant::now());
            }
            let code = match &event {
                Event::Finished { .. } => Some(0),
                Event::Cancelled { .. } => Some(130),
                Event::Failed { bad_input, .. } => Some(if *bad_input { 2 } else { 1 }),
                _ => None,
            };
            if write_line(&mut stdout, &event).is_err() {
                return 1;
            }
            if let Some(code) = code {
                return code;
            }
        }
        if runner_gone {
            // Gone without a final event: the runner thread itself failed.
            eprintln!("error: the runner stopped without reporting an outcome");
            return 1;
        }
        if at_gate
            && writeln!(stdout, "{AT_GATE}")
                .and_then(|()| stdout.flush())
                .is_err()
        {
            return 1;
        }
    }
}

fn write_line(out: &mut impl Write, event: &Event) -> std::io::Result<()> {
    let line = serde_json::to_string(event).map_err(std::io::Error::other)?;
    writeln!(out, "{line}")?;
    out.flush()
}
