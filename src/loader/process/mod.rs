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
//! A worker dies with the loader (`PR_SET_PDEATHSIG` on Linux, and end-of-file on its
//! task pipe everywhere), and dropping the pool closes the pipes, waits briefly for the
//! workers to finish the batch in hand, then kills and reaps any that remain.
//!
//! Forking a multi-threaded process is delicate: the child has only the forking thread,
//! and any lock another thread held at that moment stays locked in it. PyTorch forks its
//! workers the same way; as there, the child runs only our own code and libtorch, with
//! libtorch set to one thread before anything else (a child hangs otherwise), and it ends
//! with `_exit`, never returning into the caller's code or running its destructors.

mod copy;
mod fds;
pub use fds::die_with_parent;
mod protocol;
mod shared;
mod worker;

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, unbounded};
use memmap2::Mmap;
use tch::{Device, Kind, Tensor};

use self::fds::{ChildProcess, SharedFd};
use self::protocol::{
    BatchHeader, SharedImageConfig, ToParent, ToWorker, WorkerConfig, read_data, read_header,
    write_frame,
};
use super::collate::BuiltBatch;
use super::pool::{Task, WorkerMemory, WorkerMessage, WorkerPool};
use crate::dataset::{Dataset, DatasetSpec};
use crate::error::{Error, Result};
use crate::memory;
use crate::preset::{BatchTransfer, DatasetTransfer};
use crate::transform::{Normalize, Pipeline, PipelineSpec};

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
    Start(ToWorker, Option<Arc<(protocol::CopyLayout, Vec<u8>)>>),
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
            let (worker, first) = match spec.kind {
                ProcessKind::Spawn => {
                    let dataset = match (&copy, image) {
                        (Some(copy), _) => SpawnDataset::Copy(copy),
                        (None, Some(image)) => SpawnDataset::Image(image),
                        (None, None) => SpawnDataset::Reopen,
                    };
                    let (child, config) = spawn(id, spec, &ends, dataset)?;
                    (child, Some(config))
                }
                ProcessKind::Fork => (fork(id, spec, start, &ends)?, None),
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
            .map_err(|err| Error::run(format!("could not start a thread: {err}")))?;
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
            .map_err(|err| Error::run(format!("could not start a thread: {err}")))?;
        Ok(ProcessWorker {
            tasks,
            child,
            writer: Some(writer),
            reader_done,
        })
    }
}

fn worker_executable(spec: &ProcessWorkers) -> Result<PathBuf> {
    if let Some(path) = &spec.executable {
        return Ok(path.clone());
    }
    if let Some(path) = std::env::var_os(WORKER_EXE_VAR) {
        return Ok(PathBuf::from(path));
    }
    std::env::current_exe().map_err(|err| {
        Error::run(format!(
            "could not find this program to spawn workers: {err}"
        ))
    })
}

/// How a spawned worker gets its dataset.
enum SpawnDataset<'a> {
    /// Sent a private copy with its config.
    Copy(&'a Arc<(protocol::CopyLayout, Vec<u8>)>),
    /// Inherits the shared image and maps it.
    Image(&'a shared::SharedImage),
    /// Opens the dataset's files itself.
    Reopen,
}

/// Starts a spawned worker; returns it and the config frame its writer sends first.
fn spawn(
    id: usize,
    spec: &ProcessWorkers,
    ends: &Ends,
    dataset: SpawnDataset<'_>,
) -> Result<(Arc<ChildProcess>, Outgoing)> {
    use std::os::unix::process::CommandExt;
    let executable = worker_executable(spec)?;
    let mut keep = ends.workers_fds();
    if let SpawnDataset::Image(image) = &dataset {
        keep.push(image.fd.raw());
    }
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let mut command = std::process::Command::new(&executable);
    command
        .arg("__worker")
        .arg("--tasks-fd")
        .arg(ends.tasks_read.raw().to_string())
        .arg("--results-fd")
        .arg(ends.results_write.raw().to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    let child_keep = keep.clone();
    // SAFETY: the closure runs in the child between fork and exec and only makes
    // async-signal-safe calls (fcntl, prctl, getppid, _exit) without allocating.
    unsafe {
        command.pre_exec(move || {
            for &fd in &child_keep {
                libc::fcntl(fd, libc::F_SETFD, 0);
            }
            fds::die_with_parent(parent);
            Ok(())
        });
    }
    let child = command.spawn().map_err(|err| {
        Error::run(format!(
            "could not spawn loader-worker-{id} ({}): {err}",
            executable.display()
        ))
    })?;
    let child = Arc::new(ChildProcess::new(child.id() as libc::pid_t));
    let (copy, shared) = match dataset {
        SpawnDataset::Copy(copy) => (Some(copy), None),
        SpawnDataset::Image(image) => (
            None,
            Some(SharedImageConfig {
                fd: image.fd.raw(),
                layout: image.layout,
            }),
        ),
        SpawnDataset::Reopen => (None, None),
    };
    let config = WorkerConfig {
        worker: id,
        dataset: match (copy, shared) {
            (None, None) => Some(spec.dataset.clone().ok_or_else(|| {
                Error::value("dataset_transfer reopen needs a dataset a worker can open; use copy")
            })?),
            _ => None,
        },
        samples: spec.samples,
        copy: copy.map(|copy| copy.0),
        pipeline: spec.pipeline.clone(),
        normalize: spec.normalize.clone(),
        segments: ends.segments.iter().map(SharedFd::raw).collect(),
        shared,
    };
    let start = ToWorker::Start(Box::new(config));
    Ok((child, Outgoing::Start(start, copy.cloned())))
}

fn fork(
    id: usize,
    spec: &ProcessWorkers,
    start: &PoolStart<'_>,
    ends: &Ends,
) -> Result<Arc<ChildProcess>> {
    let keep = ends.workers_fds();
    let copy = spec.dataset_transfer == DatasetTransfer::Copy;
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let open = fds::registry();
    // SAFETY: fork duplicates this process; the child below runs only our worker code
    // and libtorch (one thread), then `_exit`s without unwinding into the caller.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        fds::die_with_parent(parent);
        tch::set_num_threads(1);
        for &fd in open.iter().filter(|fd| !keep.contains(fd)) {
            // SAFETY: closing the child's copies of other workers' descriptors.
            unsafe { libc::close(fd) };
        }
        let code = catch_exit(|| {
            let segments: Vec<&File> = ends.segments.iter().map(SharedFd::file).collect();
            worker::forked_worker(
                id,
                start.dataset,
                start.pipeline,
                copy,
                ends.tasks_read.file(),
                ends.results_write.file(),
                &segments,
            )
        });
        // SAFETY: ends the child without running the parent's destructors or atexit
        // handlers.
        unsafe { libc::_exit(code) };
    }
    drop(open);
    if pid < 0 {
        return Err(Error::run(format!(
            "could not fork loader-worker-{id}: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(Arc::new(ChildProcess::new(pid)))
}

fn catch_exit(work: impl FnOnce() -> i32) -> i32 {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or(101)
}

fn write_tasks(pipe: &SharedFd, queue: &Receiver<Outgoing>) {
    let mut out = pipe.file();
    for outgoing in queue {
        let sent = match &outgoing {
            Outgoing::Start(message, copy) => {
                let data = copy.as_ref().map_or(&[][..], |copy| copy.1.as_slice());
                write_frame(&mut out, message, data)
            }
            Outgoing::Message(message) => write_frame(&mut out, message, &[]),
            Outgoing::Close => return,
        };
        if sent.is_err() {
            // The worker is gone; its reader reports how it ended.
            return;
        }
    }
}

/// The loader's side of one worker's results pipe.
struct Reader {
    worker: usize,
    child: Arc<ChildProcess>,
    asked_at: Instant,
    /// Each segment and the loader's mapping of it.
    segments: Vec<(SharedFd, Option<Mmap>)>,
    free: Sender<Outgoing>,
    results: Sender<WorkerMessage>,
}

impl Reader {
    fn run(mut self, pipe: &SharedFd) {
        let mut input = BufReader::new(pipe.file());
        let mut ready = false;
        loop {
            let message = match read_header::<ToParent>(&mut input) {
                Ok(Some((message, data_len))) => self.receive(message, data_len, &mut input),
                Ok(None) | Err(_) => Err(self.died(ready)),
            };
            let message = message.unwrap_or_else(|error| WorkerMessage::Died { error });
            let ended = matches!(message, WorkerMessage::Died { .. });
            ready |= matches!(message, WorkerMessage::Ready { .. });
            if self.results.send(message).is_err() || ended {
                return;
            }
        }
    }

    fn receive(
        &mut self,
        message: ToParent,
        data_len: u64,
        input: &mut BufReader<&File>,
    ) -> Result<WorkerMessage> {
        let worker = self.worker;
        Ok(match message {
            ToParent::Ready => WorkerMessage::Ready {
                worker,
                startup: self.asked_at.elapsed(),
            },
            ToParent::StartFailed { error, bad_input } => {
                return Err(rebuild_error(
                    format!("loader-worker-{worker} could not start: {error}"),
                    bad_input,
                ));
            }
            ToParent::Failed {
                epoch,
                batch,
                error,
                bad_input,
            } => WorkerMessage::Failed {
                worker,
                epoch,
                batch,
                error: rebuild_error(error, bad_input),
            },
            ToParent::Batch(header) => {
                let built = self.take_batch(&header, data_len, input)?;
                WorkerMessage::Batch {
                    epoch: header.epoch,
                    batch: header.batch,
                    built: Box::new(built),
                }
            }
        })
    }

    /// Copies a batch out of its segment (freeing it) or the pipe into fresh tensors.
    fn take_batch(
        &mut self,
        header: &BatchHeader,
        data_len: u64,
        input: &mut BufReader<&File>,
    ) -> Result<BuiltBatch> {
        let started = Instant::now();
        let worker = self.worker;
        let broken = |err: std::io::Error| {
            Error::run(format!("loader-worker-{worker}: reading a batch: {err}"))
        };
        let images = Tensor::f_empty(header.shape.as_slice(), (Kind::Float, Device::Cpu))?;
        if images.numel() * 4 != header.bytes {
            return Err(Error::run(format!(
                "loader-worker-{worker} sent a batch of the wrong size"
            )));
        }
        // SAFETY: `images` was just allocated as a contiguous CPU tensor of exactly
        // `header.bytes` bytes (checked above) and nothing else refers to it yet.
        let target =
            unsafe { std::slice::from_raw_parts_mut(images.data_ptr() as *mut u8, header.bytes) };
        match header.segment {
            Some(segment) => {
                let map = self.mapping(segment, header.bytes).map_err(broken)?;
                target.copy_from_slice(&map[..header.bytes]);
                // Nobody listening means the pool is going away.
                let _ = self
                    .free
                    .send(Outgoing::Message(ToWorker::SegmentFree { segment }));
                read_data(input, data_len).map_err(broken)?;
            }
            None => {
                if data_len != header.bytes as u64 {
                    return Err(Error::run(format!(
                        "loader-worker-{worker} sent a batch of the wrong size"
                    )));
                }
                std::io::Read::read_exact(input, target).map_err(broken)?;
            }
        }
        let labels = Tensor::f_from_slice(&header.labels)?;
        let seconds = Duration::from_secs_f64;
        Ok(BuiltBatch {
            images,
            labels,
            collate: seconds(header.collate_s),
            read: seconds(header.read_s),
            transform: seconds(header.transform_s),
            transfer: seconds(header.put_s) + started.elapsed(),
        })
    }

    /// The loader's mapping of `segment`, remapped when the worker has grown it.
    fn mapping(&mut self, segment: usize, bytes: usize) -> std::io::Result<&Mmap> {
        let (fd, map) = self
            .segments
            .get_mut(segment)
            .ok_or_else(|| std::io::Error::other(format!("no segment {segment}")))?;
        if map.as_ref().is_none_or(|m| m.len() < bytes) {
            // SAFETY: the worker wrote this region before announcing the batch and will
            // not touch it again until the loader frees the segment.
            *map = Some(unsafe { Mmap::map(fd.file())? });
        }
        match map {
            Some(map) if map.len() >= bytes => Ok(map),
            _ => Err(std::io::Error::other(
                "the segment is smaller than the batch",
            )),
        }
    }

    /// The error for a worker whose pipe ended: how its process ended.
    fn died(&self, ready: bool) -> Error {
        let pid = self.child.pid();
        let when = if ready { "" } else { " before it was ready" };
        let how = self
            .child
            .wait(EXIT_PATIENCE)
            .unwrap_or_else(|| "closed its pipe".to_owned());
        Error::run(format!(
            "loader-worker-{} (pid {pid}) {how}{when}",
            self.worker
        ))
    }
}

fn rebuild_error(message: String, bad_input: bool) -> Error {
    if bad_input {
        Error::value(message)
    } else {
        Error::run(message)
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
            .map_err(|_| Error::run(format!("loader-worker-{worker} has stopped")))
    }

    fn results(&self) -> &Receiver<WorkerMessage> {
        &self.results
    }

    fn abandon_on_drop(&mut self) {
        self.shutdown_grace = Duration::ZERO;
    }

    fn memory(&self) -> Vec<WorkerMemory> {
        self.workers
            .iter()
            .enumerate()
            .filter_map(|(worker, w)| {
                let pid = w.child.pid();
                let usage = memory::process_memory(pid)?;
                Some(WorkerMemory {
                    worker,
                    pid,
                    rss_bytes: usage.rss_bytes,
                    pss_bytes: usage.pss_bytes,
                    peak_rss_bytes: usage.peak_rss_bytes,
                })
            })
            .collect()
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
    use super::*;

    #[test]
    fn worker_executable_prefers_the_explicit_path() {
        let spec = ProcessWorkers {
            kind: ProcessKind::Spawn,
            dataset: None,
            samples: None,
            pipeline: PipelineSpec::Light,
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
