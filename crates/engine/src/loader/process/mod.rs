//! Process workers: `spawn` (a fresh process of this program, started with the hidden
//! `__worker` command, that opens the dataset's files itself, maps the loader's shared
//! image of a dataset without files, or is sent a copy) and `fork` (a
//! forked child that serves batches from the dataset it inherited). Each worker talks to
//! the loader only over two inherited pipes and a ring of shared-memory segments that
//! only this user can open. In the loader, a writer thread per worker feeds its task pipe
//! and a reader thread turns its frames into [`WorkerMessage`]s, copying each batch out
//! of its segment (or the pipe) into a fresh tensor and freeing the segment at once: a
//! tensor handed to the consumer never points into memory a worker may rewrite.
//!
//! A worker dies with the loader's process, whichever thread started its pool
//! (`PR_SET_PDEATHSIG` from the launcher thread of [`crate::child_processes`] on Linux, and
//! end-of-file on its task pipe everywhere), and dropping the pool closes the pipes, waits briefly for the
//! workers to finish the batch in hand, then kills and reaps any that remain.
//!
//! Forking a multi-threaded process is delicate: the child has only the forking thread,
//! and any lock another thread held at that moment stays locked in it. PyTorch forks its
//! workers the same way; as there, the child runs only our own code and libtorch, with
//! libtorch set to one thread before anything else (a child hangs otherwise), it runs no
//! panic hook (a panic is caught and reported), and it ends with `_exit`, never returning
//! into the caller's code or running its destructors.

mod copy;
mod fds;
mod launch;
mod reader;
mod shared;
mod worker;
mod worker_messages;

use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, unbounded};

use self::fds::ChildProcess;
use self::launch::{SpawnDataset, fork, spawn};
use self::reader::{Reader, write_tasks};
use self::worker_messages::ToWorker;
use super::pool::{Task, WorkerMessage, WorkerPool};
use crate::dataset::{Dataset, DatasetSpec};
use crate::error::{Error, Result};
use crate::preset::{BatchTransfer, DatasetTransfer, TransformAt};
use crate::transform::{Normalize, Pipeline, PipelineSpec};

pub use fds::SharedFd;
pub use shared::ImageCache;
pub use worker::worker_main;

/// The environment variable that names the executable spawned workers run (tests set it:
/// there, the current executable is the test binary).
pub const WORKER_EXE_VAR: &str = "LOADERBENCH_WORKER_EXE";

/// How long dropping a pool waits for workers to finish the batch in hand before it
/// kills them; short, so that cancelling stops every worker within a second.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(300);

/// How long dropping a pool waits for a reader thread once its worker has ended.
const READER_PATIENCE: Duration = Duration::from_millis(500);

/// How long a worker that closed its pipe gets to exit before it is reported anyway.
const EXIT_PATIENCE: Duration = Duration::from_secs(1);

/// The error for a worker process that has ended (`when` qualifies it, as " before it
/// was ready"): its pid and how it ended, or that it closed its pipe where it has not
/// ended within [`EXIT_PATIENCE`].
fn ended(worker: usize, child: &ChildProcess, when: &str) -> Error {
    let how = child
        .wait(EXIT_PATIENCE)
        .unwrap_or_else(|| "closed its pipe".to_owned());
    Error::run(format!(
        "loader-worker-{worker} (pid {}) {how}{when}",
        child.pid()
    ))
}

/// Spawned or forked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessKind {
    Spawn,
    Fork,
}

/// What worker processes need beyond the loader's settings.
#[derive(Debug, Clone)]
pub struct ProcessWorkers {
    pub kind: ProcessKind,
    /// Where a spawned worker reopens the dataset; `None` when only `copy` is possible
    /// (a dataset made in code).
    pub dataset: Option<DatasetSpec>,
    pub samples: Option<usize>,
    pub pipeline: PipelineSpec,
    /// Where the pipeline runs: on whole batches or per sample.
    pub transform_at: TransformAt,
    pub normalize: Normalize,
    pub dataset_transfer: DatasetTransfer,
    pub batch_transfer: BatchTransfer,
    /// The program spawned workers run; `None`: [`WORKER_EXE_VAR`], else this executable.
    pub executable: Option<PathBuf>,
}

/// What a pool is started with.
pub struct PoolStart<'a> {
    pub count: usize,
    pub dataset: &'a Arc<dyn Dataset>,
    pub pipeline: &'a Arc<Pipeline>,
    pub prefetch_factor: usize,
    /// The loader's shared dataset image, kept across the pools it starts.
    pub images: &'a ImageCache,
}

enum Outgoing {
    /// The worker's config, with the dataset's bytes when it gets a copy.
    Start(
        ToWorker,
        Option<Arc<(worker_messages::CopyLayout, Vec<u8>)>>,
    ),
    Message(ToWorker),
    /// Close the task pipe: the worker finishes what it has and exits. (The queue itself
    /// stays open as long as the reader may free segments.)
    Close,
}

struct ProcessWorker {
    tasks: Sender<Outgoing>,
    child: Arc<ChildProcess>,
    writer: Option<JoinHandle<()>>,
    /// Disconnects when the reader thread ends (and with it the loader's segments).
    reader_done: Receiver<()>,
}

/// A set of running worker processes.
pub struct ProcessPool {
    workers: Vec<ProcessWorker>,
    results: Receiver<WorkerMessage>,
    shutdown_grace: Duration,
}

impl ProcessPool {
    /// Starts `start.count` workers of `spec`'s kind.
    pub fn start(spec: &ProcessWorkers, start: &PoolStart<'_>) -> Result<ProcessPool> {
        let (results_tx, results) = unbounded();
        let copy = match (spec.kind, spec.dataset_transfer) {
            (ProcessKind::Spawn, DatasetTransfer::Copy) => {
                Some(Arc::new(copy::dataset_bytes(&**start.dataset)?))
            }
            _ => None,
        };
        let image = match (spec.kind, spec.dataset_transfer, &spec.dataset) {
            (ProcessKind::Spawn, DatasetTransfer::Reopen, Some(dataset))
                if shared::serves_image(dataset) =>
            {
                Some(start.images.get_or_pack(&**start.dataset)?)
            }
            _ => None,
        };
        let mut pool = ProcessPool {
            workers: Vec::with_capacity(start.count),
            results,
            shutdown_grace: SHUTDOWN_GRACE,
        };
        for id in 0..start.count {
            let segments = match spec.batch_transfer {
                BatchTransfer::SharedMemory => (0..start.prefetch_factor + 1)
                    .map(|_| fds::segment())
                    .collect::<Result<Vec<_>>>()?,
                BatchTransfer::Pipe => Vec::new(),
            };
            let ends = Ends::new(segments)?;
            let asked_at = Instant::now();
            let (ends, worker, first) = match spec.kind {
                ProcessKind::Spawn => {
                    let dataset = match (&copy, image) {
                        (Some(copy), _) => SpawnDataset::Copy(copy),
                        (None, Some(image)) => SpawnDataset::Image(image),
                        (None, None) => SpawnDataset::Reopen(start.dataset.reopen_index()),
                    };
                    let (child, config) = spawn(id, spec, &ends, dataset)?;
                    (ends, child, Some(config))
                }
                ProcessKind::Fork => {
                    let (ends, child) = fork(id, spec, start, ends)?;
                    (ends, child, None)
                }
            };
            pool.workers
                .push(ends.connect(id, worker, asked_at, first, results_tx.clone())?);
        }
        Ok(pool)
    }
}

/// Both ends of one worker's pipes, and its segments.
struct Ends {
    tasks_read: SharedFd,
    tasks_write: SharedFd,
    results_read: SharedFd,
    results_write: SharedFd,
    segments: Vec<SharedFd>,
}

impl Ends {
    fn new(segments: Vec<SharedFd>) -> Result<Ends> {
        let (tasks_read, tasks_write) = fds::pipe()?;
        let (results_read, results_write) = fds::pipe()?;
        Ok(Ends {
            tasks_read,
            tasks_write,
            results_read,
            results_write,
            segments,
        })
    }

    /// The descriptors the worker keeps.
    fn workers_fds(&self) -> Vec<i32> {
        let mut fds = vec![self.tasks_read.raw(), self.results_write.raw()];
        fds.extend(self.segments.iter().map(SharedFd::raw));
        fds
    }

    /// Closes the worker's ends here and starts the threads that talk to it; `first`
    /// (a spawned worker's config) goes out before any task. Only once this side holds
    /// no read end of the task pipe does a worker's death make writing to it fail
    /// rather than block.
    fn connect(
        self,
        id: usize,
        child: Arc<ChildProcess>,
        asked_at: Instant,
        first: Option<Outgoing>,
        results: Sender<WorkerMessage>,
    ) -> Result<ProcessWorker> {
        let Ends {
            tasks_read,
            tasks_write,
            results_read,
            results_write,
            segments,
        } = self;
        drop((tasks_read, results_write));
        let (tasks, queue) = unbounded();
        if let Some(first) = first {
            // The queue's receiver is alive in this scope, so sending cannot fail.
            let _ = tasks.send(first);
        }
        let writer = std::thread::Builder::new()
            .name(format!("loader-worker-{id}-tasks"))
            .spawn(move || write_tasks(&tasks_write, &queue))
            .map_err(|err| Error::run_caused(format!("could not start a thread: {err}"), err))?;
        let reader = Reader {
            worker: id,
            child: child.clone(),
            asked_at,
            segments: segments.into_iter().map(|fd| (fd, None)).collect(),
            free: tasks.clone(),
            results,
        };
        let (done, reader_done) = crossbeam_channel::bounded::<()>(0);
        std::thread::Builder::new()
            .name(format!("loader-worker-{id}-results"))
            .spawn(move || {
                let _done = done;
                reader.run(&results_read);
            })
            .map_err(|err| Error::run_caused(format!("could not start a thread: {err}"), err))?;
        Ok(ProcessWorker {
            tasks,
            child,
            writer: Some(writer),
            reader_done,
        })
    }
}

impl WorkerPool for ProcessPool {
    fn len(&self) -> usize {
        self.workers.len()
    }

    fn send(&self, worker: usize, task: Task) -> Result<()> {
        let message = ToWorker::Task {
            epoch: task.epoch,
            batch: task.batch,
            indices: task.indices,
            seed: task.seed,
        };
        self.workers[worker]
            .tasks
            .send(Outgoing::Message(message))
            // The writer stopped on a broken pipe: the process ended, maybe before its
            // reader has said so; say how, as the reader would.
            .map_err(|_| ended(worker, &self.workers[worker].child, ""))
    }

    fn results(&self) -> &Receiver<WorkerMessage> {
        &self.results
    }

    fn abandon_on_drop(&mut self) {
        self.shutdown_grace = Duration::ZERO;
    }

    fn pids(&self) -> Vec<u32> {
        self.workers.iter().map(|w| w.child.pid()).collect()
    }
}

impl Drop for ProcessPool {
    fn drop(&mut self) {
        let deadline = Instant::now() + self.shutdown_grace;
        let workers: Vec<ProcessWorker> = self.workers.drain(..).collect();
        // Closing every task queue first (its writer then closes the pipe: end-of-file
        // for the worker) lets all workers wind down at once.
        for worker in &workers {
            // A writer that is gone has closed the pipe already.
            let _ = worker.tasks.send(Outgoing::Close);
        }
        for mut worker in workers {
            let patience = deadline.saturating_duration_since(Instant::now());
            if worker.child.wait(patience).is_none() {
                worker.child.kill();
            }
            if let Some(writer) = worker.writer.take() {
                // The worker has ended, so a write the writer was blocked in has failed
                // and it has nothing left to wait for.
                let _ = writer.join();
            }
            // The worker's end of the results pipe is closed now that it has ended, so
            // its reader sees end-of-file at once and releases the segments; the bound
            // only guards against a stray process holding a copy of that end.
            let _ = worker.reader_done.recv_timeout(READER_PATIENCE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::launch::worker_executable;
    use super::*;

    #[test]
    fn worker_executable_prefers_the_explicit_path() {
        let spec = ProcessWorkers {
            kind: ProcessKind::Spawn,
            dataset: None,
            samples: None,
            pipeline: PipelineSpec::Light,
            transform_at: Default::default(),
            normalize: Normalize::default(),
            dataset_transfer: DatasetTransfer::Copy,
            batch_transfer: BatchTransfer::Pipe,
            executable: Some(PathBuf::from("/bin/true")),
        };
        assert_eq!(
            worker_executable(&spec).unwrap(),
            PathBuf::from("/bin/true")
        );
    }
}
