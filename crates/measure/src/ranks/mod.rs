//! Ranks: a config measured by several training processes at once, as a distributed
//! job on one machine runs them. [`Ranks`] starts one process of this program per rank
//! (the hidden `__rank` command, see [`rank`]), hands each its shard (DistributedSampler
//! semantics, see [`Shard`]) over a pipe, and holds a barrier before every epoch: `go`
//! goes to every rank only once all have finished the epoch before. An epoch takes as
//! long as its slowest rank, because training waits for it; every rank's own figures
//! are kept. A rank that dies or fails ends the config with an error naming it, one
//! that says nothing for the worker timeout is hung, and every rank process is killed
//! and reaped when the coordinator is dropped.

mod rank;
mod rank_messages;

use std::collections::VecDeque;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, unbounded};

use crate::results::{BatchRecord, EpochResult};
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::child_processes::{collect_tail, lossy_lines};
use loaderbench_engine::error::{Error, Result};
use loaderbench_engine::loader::{Shard, WorkerStartup};
use loaderbench_engine::plan::Plan;

use crate::rank_merge::{RanksSummary, merge};
pub use rank::rank_main;
use rank_messages::{FromRank, GO, RankJob};

/// The hidden sub-command a rank process runs.
pub const RANK_COMMAND: &str = "__rank";

/// How often a wait for the ranks looks at the cancel token.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// How long a rank that closed its stdout gets to exit before it is described.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Rank 0's progress during an epoch, passed on as the run's events.
pub enum RankProgress {
    WorkerReady(WorkerStartup),
    Batch(BatchRecord),
}

/// The rank processes of one config, seen from the coordinator.
pub struct Ranks {
    processes: Vec<RankProcess>,
    messages: Receiver<(usize, Option<FromRank>)>,
    timeout: Duration,
    cancel: CancelToken,
}

struct RankProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl Ranks {
    /// Starts a process per rank of config `index` and waits until every one has its
    /// loader ready.
    pub fn start(plan: &Plan, index: usize, cancel: &CancelToken) -> Result<Ranks> {
        let world = plan.configs[index].ranks;
        let program = std::env::current_exe()
            .map_err(|err| Error::run(format!("cannot find this program to run it: {err}")))?;
        let (sender, messages) = unbounded();
        let mut ranks = Ranks {
            processes: Vec::with_capacity(world),
            messages,
            timeout: Duration::from_secs_f64(plan.preset.worker_timeout_s),
            cancel: cancel.clone(),
        };
        for rank in 0..world {
            let job = RankJob {
                plan: plan.clone(),
                config: index,
                shard: Shard { rank, world },
            };
            let process = start_rank(&program, &job, sender.clone())?;
            ranks.processes.push(process);
        }
        ranks.gather(&|| {}, |_, message| {
            matches!(message, FromRank::Ready).then_some(())
        })?;
        Ok(ranks)
    }

    /// Opens the barrier for epoch `epoch` and waits for every rank to finish it; rank
    /// 0's progress goes to `progress`, and `sweep` runs each time a rank asks for one
    /// (after its last batch, before its workers end). The result is the slowest rank's
    /// epoch with samples and throughput over all ranks, and each rank's own figures.
    pub fn epoch(
        &mut self,
        epoch: usize,
        sweep: &dyn Fn(),
        mut progress: impl FnMut(RankProgress),
    ) -> Result<EpochResult> {
        for rank in 0..self.processes.len() {
            self.tell(rank, GO)?;
        }
        let finished = self.gather(sweep, |rank, message| match message {
            FromRank::Epoch {
                result,
                started_unix_s,
                finished_unix_s,
            } => Some((*result, started_unix_s, finished_unix_s)),
            FromRank::Batch { batch } if rank == 0 => {
                progress(RankProgress::Batch(batch));
                None
            }
            FromRank::WorkerReady { startup } if rank == 0 => {
                progress(RankProgress::WorkerReady(startup));
                None
            }
            _ => None,
        })?;
        Ok(merge(epoch, finished))
    }

    /// Lets the ranks end and gathers what they used.
    /// The rank processes, in rank order.
    pub fn pids(&self) -> Vec<u32> {
        self.processes.iter().map(|p| p.child.id()).collect()
    }

    pub fn finish(mut self) -> Result<RanksSummary> {
        for process in &mut self.processes {
            process.stdin = None;
        }
        let summaries = self.gather(&|| {}, |_, message| match message {
            FromRank::Done { summary } => Some(summary),
            _ => None,
        })?;
        for process in &mut self.processes {
            // Each rank sent Done and is exiting; reaping it leaves no zombie.
            let _ = process.child.wait();
        }
        RanksSummary::total(summaries).ok_or_else(|| Error::run("a config ran with no ranks"))
    }

    fn tell(&mut self, rank: usize, line: &str) -> Result<()> {
        let sent = match &mut self.processes[rank].stdin {
            Some(stdin) => writeln!(stdin, "{line}").and_then(|()| stdin.flush()),
            None => Ok(()),
        };
        sent.map_err(|_| self.died(rank))
    }

    /// Waits until every rank has sent the message `wanted` picks, and returns them in
    /// rank order. Other messages go to `wanted` too, but a rank's request for a sweep,
    /// which `sweep` answers before the rank hears `go`.
    fn gather<T>(
        &mut self,
        sweep: &dyn Fn(),
        mut wanted: impl FnMut(usize, FromRank) -> Option<T>,
    ) -> Result<Vec<T>> {
        let world = self.processes.len();
        let mut got: Vec<Option<T>> = (0..world).map(|_| None).collect();
        let mut heard = vec![Instant::now(); world];
        while got.iter().any(Option::is_none) {
            self.cancel.check()?;
            match self.messages.recv_timeout(CANCEL_POLL) {
                Ok((rank, Some(FromRank::Failed { error }))) => {
                    return Err(Error::run(format!("rank {rank} failed: {error}")));
                }
                Ok((rank, Some(FromRank::Sweep))) => {
                    sweep();
                    self.tell(rank, GO)?;
                    heard[rank] = Instant::now();
                }
                Ok((rank, Some(message))) => {
                    heard[rank] = Instant::now();
                    if let Some(value) = wanted(rank, message) {
                        got[rank] = Some(value);
                    }
                }
                Ok((rank, None)) => return Err(self.died(rank)),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::run("every rank stopped reporting"));
                }
            }
            if let Some(rank) =
                (0..world).find(|&r| got[r].is_none() && heard[r].elapsed() > self.timeout)
            {
                return Err(Error::run(format!(
                    "rank {rank} sent nothing for {:.0} s (worker_timeout_s); it is hung",
                    self.timeout.as_secs_f64()
                )));
            }
        }
        Ok(got.into_iter().flatten().collect())
    }

    /// The error for a rank whose pipes closed: how it ended and what it last wrote.
    fn died(&mut self, rank: usize) -> Error {
        let process = &mut self.processes[rank];
        let deadline = Instant::now() + EXIT_GRACE;
        let status = loop {
            match process.child.try_wait() {
                Ok(Some(status)) => break status.to_string(),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(CANCEL_POLL),
                _ => break "still running, with its output closed".to_owned(),
            }
        };
        let tail = process
            .stderr_tail
            .lock()
            .map(|lines| lines.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        let tail = if tail.is_empty() {
            String::new()
        } else {
            format!("; its last words:\n{tail}")
        };
        Error::run(format!("rank {rank} died ({status}){tail}"))
    }
}

impl Drop for Ranks {
    fn drop(&mut self) {
        for process in &mut self.processes {
            process.stdin = None;
            if matches!(process.child.try_wait(), Ok(None)) {
                // A rank still running here is abandoned mid-config; its workers die
                // with it.
                let _ = process.child.kill();
            }
            let _ = process.child.wait();
        }
    }
}

/// Starts one rank process, hands it its job and follows its stdout on a thread.
fn start_rank(
    program: &std::path::Path,
    job: &RankJob,
    messages: Sender<(usize, Option<FromRank>)>,
) -> Result<RankProcess> {
    let rank = job.shard.rank;
    let mut command = Command::new(program);
    command
        .arg(RANK_COMMAND)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The coordinator stops its ranks itself.
    let mut child = loaderbench_engine::child_processes::spawn_tied_leaving_interrupts(command)
        .map_err(|err| Error::run(format!("cannot start rank {rank}: {err}")))?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(Error::run(format!("rank {rank} has no pipes")));
    };
    let mut process = RankProcess {
        child,
        stdin: None,
        stderr_tail: collect_tail(stderr),
    };
    let what = format!("rank {rank}'s job");
    loaderbench_engine::child_processes::hand_over(&mut process.child, &mut stdin, job, &what)?;
    process.stdin = Some(stdin);
    let follow = move || {
        for line in lossy_lines(stdout) {
            let message = serde_json::from_str(&line).unwrap_or_else(|err| FromRank::Failed {
                error: format!("unreadable message {line:?}: {err}"),
            });
            if messages.send((rank, Some(message))).is_err() {
                return;
            }
        }
        let _ = messages.send((rank, None));
    };
    std::thread::Builder::new()
        .name(format!("loaderbench-rank-{rank}"))
        .spawn(follow)
        .map_err(|err| Error::run(format!("cannot follow rank {rank}: {err}")))?;
    Ok(process)
}
