//! All the script processes of one measurement: one without ranks, else one per rank
//! of a torch.distributed job. [`Job::follow`] reads every script's reports as they
//! come and merges each epoch once every rank has finished it, as loaderbench's own
//! ranks are merged (the slowest rank's time, every rank's figures kept), with the
//! bytes the run read from storage over it. Scripts wait before each epoch until every
//! rank is waiting and the caller has made the page cache cold or warm; then each gets
//! `go`. A rank that
//! fails, dies or goes silent ends the job with an error naming it; every script's
//! process group is killed when the job is dropped, whichever way it ended.

use std::path::Path;
use std::time::{Duration, Instant};

use crossbeam_channel::Select;

use super::PytorchEvent;
use super::python_process::Line;
use super::script_messages::{GO, Message};
use super::session::Session;
use crate::memory_watch::MemoryWatch;
use crate::process_memory::{ProcessKind, ProcessMemory};
use crate::rank_merge::merge as merge_rank_epochs;
use crate::results::EpochResult;
use crate::storage_reads::ReadCounters;
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::error::{Error, Result};

/// How often a waiting measurement checks for cancellation.
const POLL: Duration = Duration::from_millis(50);

/// Importing torch and building the dataset come before the first report; they get
/// this much on top of the worker timeout.
const STARTUP_ALLOWANCE: Duration = Duration::from_secs(60);

/// How long a script may take to import torch and build its dataset.
pub fn startup_limit(worker_timeout: Duration) -> Duration {
    worker_timeout + STARTUP_ALLOWANCE
}

/// Beyond the worker timeout, which PyTorch itself enforces and reports better.
const SILENCE_ALLOWANCE: Duration = Duration::from_secs(10);

/// How long a script whose output closed gets to exit before it is described.
const EXIT_GRACE: Duration = Duration::from_secs(1);

/// The scripts of one measurement, in rank order.
pub struct Job<'a> {
    pub sessions: Vec<Session>,
    python: &'a Path,
    /// Every epoch all ranks finished, merged; the warm-up first when there is one.
    pub epochs: Vec<EpochResult>,
    /// The run's storage counters when the current epoch was let go (or, for a warm
    /// script, reported its start).
    reads: Option<ReadCounters>,
    /// The scripts' processes and their workers, sampled from the first rank's start of
    /// each epoch until the epoch is merged.
    memory: MemoryWatch,
}

impl<'a> Job<'a> {
    pub fn new(sessions: Vec<Session>, python: &'a Path) -> Job<'a> {
        let kind = if sessions.len() > 1 {
            ProcessKind::Rank
        } else {
            ProcessKind::Main
        };
        let roots = sessions.iter().map(|s| (s.process.pid(), kind)).collect();
        Job {
            sessions,
            python,
            epochs: Vec::new(),
            reads: None,
            memory: MemoryWatch::start(roots),
        }
    }

    /// Every process of the job with its memory through the epochs.
    pub fn processes(&self) -> Vec<ProcessMemory> {
        self.memory.take_processes()
    }

    /// Reads reports until every script is done. Rank 0's worker start-ups and
    /// batches, and every merged epoch, go to `report`; `before_epoch` runs when every
    /// script waits for its next epoch.
    pub fn follow(
        &mut self,
        cancel: &CancelToken,
        worker_timeout: Duration,
        report: &mut dyn FnMut(PytorchEvent),
        before_epoch: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        let mut silence_limit = startup_limit(worker_timeout);
        let mut heard = Instant::now();
        loop {
            cancel.check()?;
            let running: Vec<usize> = (0..self.sessions.len())
                .filter(|&rank| self.sessions[rank].running())
                .collect();
            if running.is_empty() {
                return Ok(());
            }
            let Some((rank, line)) = self.next_line(&running) else {
                if heard.elapsed() > silence_limit {
                    return Err(self.silent(silence_limit));
                }
                continue;
            };
            heard = Instant::now();
            let Line::Text(line) = line else {
                return Err(self.ended_early(rank));
            };
            let Some(message) = Message::parse(&line) else {
                continue;
            };
            let message = message.map_err(Error::run)?;
            if let Message::EpochStart { epoch, .. } = message {
                if self.reads.is_none() {
                    self.reads = ReadCounters::now();
                }
                if !self.memory.is_open() {
                    self.memory.begin_epoch(epoch);
                }
            }
            let mut rank_report = |event| {
                if rank == 0 {
                    report(event);
                }
            };
            self.sessions[rank].take(message, self.python, &mut rank_report)?;
            if std::mem::take(&mut self.sessions[rank].sweep_asked) {
                self.memory.sweep();
                self.sessions[rank].process.send(GO)?;
            }
            self.merge_finished_epochs(report);
            if running.iter().all(|&rank| self.sessions[rank].waiting) {
                self.let_go(before_epoch)?;
            }
            if self.sessions.iter().all(|s| s.ready.is_some()) {
                silence_limit = worker_timeout + SILENCE_ALLOWANCE;
            }
        }
    }

    /// Runs `before_epoch`, then lets every waiting script start its epoch.
    fn let_go(&mut self, before_epoch: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        before_epoch()?;
        self.reads = ReadCounters::now();
        for session in &mut self.sessions {
            if std::mem::take(&mut session.waiting) {
                session.process.send(GO)?;
            }
        }
        Ok(())
    }

    /// The next line of any of the `running` ranks, or `None` after [`POLL`].
    fn next_line(&self, running: &[usize]) -> Option<(usize, Line)> {
        let mut select = Select::new();
        for &rank in running {
            select.recv(self.sessions[rank].process.lines());
        }
        let operation = select.select_timeout(POLL).ok()?;
        let rank = running[operation.index()];
        let line = operation
            .recv(self.sessions[rank].process.lines())
            .unwrap_or(Line::Closed);
        Some((rank, line))
    }

    /// Merges and reports every epoch that all ranks have finished since the last call.
    fn merge_finished_epochs(&mut self, report: &mut dyn FnMut(PytorchEvent)) {
        let ranked = self.sessions.len() > 1;
        loop {
            let next = self.epochs.len();
            let finished = self.sessions.iter().all(|session| {
                session.epochs.len() > next && (!ranked || session.bounds.len() > next)
            });
            if !finished {
                return;
            }
            let mut merged = if ranked {
                let epoch = self.sessions[0].epochs[next].epoch;
                let ranks = self.sessions.iter().map(|session| {
                    let (started, finished) = session.bounds[next];
                    (session.epochs[next].clone(), started, finished)
                });
                merge_rank_epochs(epoch, ranks.collect())
            } else {
                self.sessions[0].epochs[next].clone()
            };
            let reads = self.reads.take().zip(ReadCounters::now());
            merged.record_reads(reads.map(|(before, after)| before.read_since(&after)));
            merged.memory = self.memory.end_epoch();
            report(PytorchEvent::Epoch(Box::new(merged.clone())));
            self.epochs.push(merged);
        }
    }

    /// The error for a job that said nothing for `limit`: the ranks behind the others
    /// are the hung ones (the rest wait for them at the barrier).
    fn silent(&self, limit: Duration) -> Error {
        let seconds = limit.as_secs_f64();
        let loader = self.sessions[0].loader();
        if self.sessions.len() == 1 {
            return Error::run(format!(
                "the {loader} reported nothing for {seconds:.0} s; stopped it"
            ));
        }
        let least = self.sessions.iter().map(|s| s.epochs.len()).min();
        let behind: Vec<String> = self
            .sessions
            .iter()
            .filter(|s| s.running() && Some(s.epochs.len()) == least)
            .map(|s| s.rank.to_string())
            .collect();
        Error::run(format!(
            "rank {} of the {loader} reported nothing for {seconds:.0} s; it is hung, and \
             the job was stopped",
            behind.join(", ")
        ))
    }

    /// The error for a script that stopped without saying why: how it ended and its
    /// last stderr line.
    fn ended_early(&mut self, rank: usize) -> Error {
        let world = self.sessions.len();
        let process = &mut self.sessions[rank].process;
        let status = process.exit_status(EXIT_GRACE);
        process.kill();
        process.settle_stderr(Duration::from_secs(1));
        let detail = process
            .last_stderr_line()
            .map_or_else(|| "no error output".to_owned(), |l| l.trim().to_owned());
        let status = status.map_or_else(|| "its output closed".to_owned(), |s| s.to_string());
        if world == 1 {
            return Error::run(format!(
                "the PyTorch runtime ({}) exited before finishing ({status}): {detail}",
                self.python.display()
            ));
        }
        Error::run(format!(
            "rank {rank} died ({status}); the PyTorch runtime ({}) said: {detail}",
            self.python.display()
        ))
    }
}
