//! The loader: PyTorch DataLoader semantics over a [`Dataset`] and a [`Pipeline`].
//! [`Loader::epoch`] is `iter(loader)`: it starts the workers unless they persist, hands
//! out `prefetch_factor × num_workers` batch tasks round-robin and one more for each
//! batch taken, yields batches in order (or as they come, without `in_order`), pins and
//! copies them to the device, and stops non-persistent workers once the epoch is done.
//! Each [`Batch`] carries the time spent in every stage. The workers are threads, or
//! processes (spawned or forked, see [`process`]); the epoch drives either through the
//! same [`WorkerPool`](pool::WorkerPool) trait.

mod collate;
mod pool;
#[cfg(unix)]
pub mod process;
mod sampler;
mod threads;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use serde::{Deserialize, Serialize};
use tch::{Device, Tensor};

use self::collate::{BuiltBatch, build_batch};
use self::pool::{Task, WorkerPool};
use self::threads::ThreadPool;
use crate::cancel::CancelToken;
use crate::dataset::Dataset;
use crate::device;
use crate::error::{Error, Result};
use crate::preset::IntraOpThreads;
use crate::transform::Pipeline;

pub use pool::{WorkerMemory, WorkerMessage};
pub use sampler::{Shard, batches_per_epoch};

/// How often a waiting loader checks for cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// The DataLoader arguments.
#[derive(Debug, Clone)]
pub struct LoaderSettings {
    pub batch_size: usize,
    pub shuffle: bool,
    pub seed: u64,
    pub drop_last: bool,
    pub num_workers: usize,
    pub persistent_workers: bool,
    pub prefetch_factor: usize,
    pub in_order: bool,
    pub pin_memory: bool,
    pub device: Device,
    /// A worker that sends nothing for this long while a batch is awaited is hung.
    pub worker_timeout: Duration,
    /// The part of every epoch this loader's rank loads.
    pub shard: Shard,
}

/// Seconds spent in each stage of one batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StageTimes {
    /// Copying samples out of the dataset (decoding, for image folders).
    pub read_s: f64,
    /// Allocating the batch the samples are read into.
    pub collate_s: f64,
    /// Running the pipeline.
    pub transform_s: f64,
    /// Taking a finished batch from a worker.
    pub transfer_s: f64,
    /// Pinning host memory (zero unless pin_memory is in effect).
    pub pin_s: f64,
    /// Copying to the device and synchronizing.
    pub to_device_s: f64,
    /// Time the consumer waited for this batch (the stall).
    pub wait_s: f64,
}

impl StageTimes {
    pub fn add(&mut self, other: &StageTimes) {
        self.read_s += other.read_s;
        self.collate_s += other.collate_s;
        self.transform_s += other.transform_s;
        self.transfer_s += other.transfer_s;
        self.pin_s += other.pin_s;
        self.to_device_s += other.to_device_s;
        self.wait_s += other.wait_s;
    }
}

/// A batch on its device.
pub struct Batch {
    pub index: usize,
    pub images: Tensor,
    pub labels: Tensor,
    pub stages: StageTimes,
}

/// A worker's start-up: from asking for it until it was ready to take work.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorkerStartup {
    pub worker: usize,
    pub seconds: f64,
}

/// A data loader over one dataset and pipeline.
pub struct Loader {
    /// Whether batches are pinned: decided once, since it asks libtorch about CUDA.
    pin_memory_effective: bool,
    dataset: Arc<dyn Dataset>,
    pipeline: Arc<Pipeline>,
    settings: LoaderSettings,
    cancel: CancelToken,
    pool: Option<Box<dyn WorkerPool>>,
    epochs_started: u64,
    /// Worker processes instead of threads.
    #[cfg(unix)]
    processes: Option<process::ProcessWorkers>,
    /// Worker process memory, read at the end of the last epoch.
    worker_memory: Vec<WorkerMemory>,
    /// The dataset image spawned workers share, made once for every pool.
    #[cfg(unix)]
    images: process::ImageCache,
}

impl Loader {
    pub fn new(
        dataset: Arc<dyn Dataset>,
        pipeline: Arc<Pipeline>,
        settings: LoaderSettings,
        cancel: CancelToken,
    ) -> Result<Loader> {
        if settings.batch_size == 0 {
            return Err(Error::value("batch_size must be at least 1"));
        }
        if settings.num_workers > 0 && settings.prefetch_factor == 0 {
            return Err(Error::value("prefetch_factor must be at least 1"));
        }
        Ok(Loader {
            pin_memory_effective: settings.pin_memory && device::cuda_device_count() > 0,
            dataset,
            pipeline,
            settings,
            cancel,
            pool: None,
            epochs_started: 0,
            #[cfg(unix)]
            processes: None,
            worker_memory: Vec::new(),
            #[cfg(unix)]
            images: process::ImageCache::default(),
        })
    }

    /// Runs the workers as processes (spawned or forked) instead of threads.
    #[cfg(unix)]
    pub fn with_processes(mut self, processes: process::ProcessWorkers) -> Loader {
        self.processes = Some(processes);
        self
    }

    /// Each worker process's memory at the end of the last epoch (empty for threads).
    pub fn worker_memory(&self) -> &[WorkerMemory] {
        &self.worker_memory
    }

    fn start_pool(&self) -> Result<Box<dyn WorkerPool>> {
        let count = self.settings.num_workers;
        #[cfg(unix)]
        if let Some(processes) = &self.processes {
            let start = process::PoolStart {
                count,
                dataset: &self.dataset,
                pipeline: &self.pipeline,
                prefetch_factor: self.settings.prefetch_factor,
                images: &self.images,
            };
            return Ok(Box::new(process::ProcessPool::start(processes, &start)?));
        }
        Ok(Box::new(ThreadPool::start(
            count,
            &self.dataset,
            &self.pipeline,
        )?))
    }

    /// Whether pinning happens: it needs CUDA, and is a recorded no-op without it.
    pub fn pin_memory_effective(&self) -> bool {
        self.pin_memory_effective
    }

    pub fn batches_per_epoch(&self) -> usize {
        batches_per_epoch(
            self.settings
                .shard
                .len(self.dataset.len(), self.settings.drop_last),
            self.settings.batch_size,
            self.settings.drop_last,
        )
    }

    /// Starts an epoch: `iter(loader)`.
    pub fn epoch(&mut self) -> Result<Epoch<'_>> {
        self.cancel.check()?;
        let epoch = self.epochs_started;
        self.epochs_started += 1;
        let settings = &self.settings;
        let batches = sampler::epoch_batches(
            self.dataset.len(),
            settings.batch_size,
            settings.shuffle,
            settings.drop_last,
            settings.seed,
            epoch,
            settings.shard,
        );
        let mut started_workers = Vec::new();
        if settings.num_workers > 0 && (self.pool.is_none() || !settings.persistent_workers) {
            self.pool = None;
            self.pool = Some(self.start_pool()?);
            started_workers = (0..settings.num_workers).collect();
        }
        let mut epoch = Epoch {
            loader: self,
            epoch,
            batches: batches.into_iter().map(Some).collect(),
            next_to_send: 0,
            next_to_yield: 0,
            yielded: 0,
            next_worker: 0,
            owner: Vec::new(),
            arrived: BTreeMap::new(),
            awaiting_ready: started_workers,
            startups: VecDeque::new(),
        };
        epoch.owner = vec![0; epoch.batches.len()];
        epoch.prefetch()?;
        Ok(epoch)
    }
}

/// libtorch's default intra-op thread count in this process, read before anything
/// changes it.
pub(crate) fn default_intra_op_threads() -> i32 {
    static DEFAULT: OnceLock<i32> = OnceLock::new();
    *DEFAULT.get_or_init(tch::get_num_threads)
}

/// Sets the calling thread's libtorch intra-op threads (`torch.set_num_threads`) and
/// returns the count in effect. libtorch keeps the count per thread, but a thread's
/// first parallel op re-reads the last count set by any thread; reading it first makes
/// that happen now, so worker threads setting their own count later cannot change ours.
pub fn set_intra_op_threads(threads: IntraOpThreads) -> i32 {
    let _ = tch::get_num_threads();
    let count = match threads {
        IntraOpThreads::Auto => default_intra_op_threads(),
        IntraOpThreads::Count(count) => i32::try_from(count).unwrap_or(i32::MAX),
    };
    tch::set_num_threads(count);
    tch::get_num_threads()
}

/// One pass over the dataset.
pub struct Epoch<'a> {
    loader: &'a mut Loader,
    epoch: u64,
    /// Each batch's indices until its task is sent.
    batches: Vec<Option<Vec<usize>>>,
    next_to_send: usize,
    next_to_yield: usize,
    yielded: usize,
    next_worker: usize,
    /// The worker each sent batch went to.
    owner: Vec<usize>,
    /// Batches that arrived ahead of their turn (in-order delivery).
    arrived: BTreeMap<usize, Box<BuiltBatch>>,
    awaiting_ready: Vec<usize>,
    startups: VecDeque<WorkerStartup>,
}

impl Epoch<'_> {
    /// Worker start-ups reported since the last call.
    pub fn take_worker_startups(&mut self) -> Vec<WorkerStartup> {
        self.startups.drain(..).collect()
    }

    /// The process id of each worker process (empty for thread workers).
    pub fn worker_pids(&self) -> Vec<u32> {
        self.loader
            .pool
            .as_ref()
            .map_or_else(Vec::new, |p| p.pids())
    }

    fn prefetch(&mut self) -> Result<()> {
        let settings = &self.loader.settings;
        let outstanding = settings.prefetch_factor * settings.num_workers;
        for _ in 0..outstanding {
            self.send_next_task()?;
        }
        Ok(())
    }

    fn send_next_task(&mut self) -> Result<()> {
        let Some(pool) = &self.loader.pool else {
            return Ok(());
        };
        let Some(indices) = self
            .batches
            .get_mut(self.next_to_send)
            .and_then(Option::take)
        else {
            return Ok(());
        };
        let worker = self.next_worker;
        self.next_worker = (worker + 1) % pool.len();
        let batch = self.next_to_send;
        self.owner[batch] = worker;
        self.next_to_send += 1;
        let seed = sampler::batch_seed(self.loader.settings.seed, self.epoch, batch);
        pool.send(
            worker,
            Task {
                epoch: self.epoch,
                batch,
                indices,
                seed,
            },
        )
    }

    fn next_batch(&mut self) -> Result<Batch> {
        let wait_started = Instant::now();
        let (index, built, transfer) = if self.loader.pool.is_some() {
            self.receive()?
        } else {
            self.build_inline()?
        };
        let wait = wait_started.elapsed();
        self.yielded += 1;
        self.send_next_task()?;
        let (images, labels, pin, to_device) = self.move_to_device(&built)?;
        let stages = StageTimes {
            read_s: built.read.as_secs_f64(),
            collate_s: built.collate.as_secs_f64(),
            transform_s: built.transform.as_secs_f64(),
            transfer_s: transfer.as_secs_f64(),
            pin_s: pin.as_secs_f64(),
            to_device_s: to_device.as_secs_f64(),
            wait_s: wait.as_secs_f64(),
        };
        Ok(Batch {
            index,
            images,
            labels,
            stages,
        })
    }

    fn build_inline(&mut self) -> Result<(usize, Box<BuiltBatch>, Duration)> {
        self.loader.cancel.check()?;
        let index = self.next_to_yield;
        self.next_to_yield += 1;
        let indices = self.batches[index]
            .take()
            .ok_or_else(|| Error::run(format!("batch {index} was already built")))?;
        let seed = sampler::batch_seed(self.loader.settings.seed, self.epoch, index);
        let built = build_batch(&*self.loader.dataset, &self.loader.pipeline, &indices, seed)?;
        Ok((index, Box::new(built), Duration::ZERO))
    }

    /// Waits for the next batch from the workers, in order or as they come.
    fn receive(&mut self) -> Result<(usize, Box<BuiltBatch>, Duration)> {
        let in_order = self.loader.settings.in_order;
        let mut last_heard = Instant::now();
        loop {
            if let Some((index, built)) = self.take_arrived(in_order) {
                let transfer = built.transfer;
                return Ok((index, built, transfer));
            }
            self.loader.cancel.check()?;
            let pool = self
                .loader
                .pool
                .as_ref()
                .ok_or_else(|| Error::run("no workers"))?;
            let message = match pool.results().recv_timeout(CANCEL_POLL) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => {
                    if last_heard.elapsed() > self.loader.settings.worker_timeout {
                        let error = self.hung_worker_error();
                        if let Some(pool) = self.loader.pool.as_mut() {
                            pool.abandon_on_drop();
                        }
                        return Err(error);
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::run("every loader worker has stopped"));
                }
            };
            last_heard = Instant::now();
            let received = Instant::now();
            match message {
                WorkerMessage::Ready { worker, startup } => {
                    self.awaiting_ready.retain(|w| *w != worker);
                    self.startups.push_back(WorkerStartup {
                        worker,
                        seconds: startup.as_secs_f64(),
                    });
                }
                WorkerMessage::Batch {
                    epoch,
                    batch,
                    built,
                    ..
                } if epoch == self.epoch => {
                    if !in_order || batch == self.next_to_yield {
                        self.advance_yield_cursor(batch);
                        let transfer = built.transfer + received.elapsed();
                        return Ok((batch, built, transfer));
                    }
                    self.arrived.insert(batch, built);
                }
                WorkerMessage::Batch { .. } => {}
                WorkerMessage::Failed {
                    worker,
                    epoch,
                    batch,
                    error,
                } if epoch == self.epoch => {
                    return Err(match error {
                        Error::Run(problem) => {
                            Error::run(format!("loader-worker-{worker}, batch {batch}: {problem}"))
                        }
                        other => other,
                    });
                }
                WorkerMessage::Failed { .. } => {}
                WorkerMessage::Died { error } => return Err(error),
            }
        }
    }

    fn take_arrived(&mut self, in_order: bool) -> Option<(usize, Box<BuiltBatch>)> {
        let index = if in_order {
            self.next_to_yield
        } else {
            *self.arrived.keys().next()?
        };
        let built = self.arrived.remove(&index)?;
        self.advance_yield_cursor(index);
        Some((index, built))
    }

    fn advance_yield_cursor(&mut self, yielded: usize) {
        if yielded == self.next_to_yield {
            self.next_to_yield += 1;
        }
    }

    fn hung_worker_error(&self) -> Error {
        let timeout = self.loader.settings.worker_timeout.as_secs_f64();
        let worker = match self.awaiting_ready.first() {
            Some(worker) => *worker,
            None => self.owner.get(self.next_to_yield).copied().unwrap_or(0),
        };
        Error::run(format!(
            "loader-worker-{worker} sent nothing for {timeout:.1} s (worker_timeout_s); it looks hung"
        ))
    }

    fn move_to_device(&self, built: &BuiltBatch) -> Result<(Tensor, Tensor, Duration, Duration)> {
        let target = self.loader.settings.device;
        let started = Instant::now();
        let (images, labels) = if self.loader.pin_memory_effective() {
            (
                device::pin(&built.images, target)?,
                device::pin(&built.labels, target)?,
            )
        } else {
            (built.images.shallow_clone(), built.labels.shallow_clone())
        };
        let pin = started.elapsed();
        let started = Instant::now();
        let images = device::to_device(&images, target)?;
        let labels = device::to_device(&labels, target)?;
        device::synchronize(target);
        Ok((images, labels, pin, started.elapsed()))
    }

    fn finish(&mut self) {
        if let Some(pool) = &self.loader.pool {
            self.loader.worker_memory = pool.memory();
        }
        if !self.loader.settings.persistent_workers {
            self.loader.pool = None;
        }
    }
}

impl Iterator for Epoch<'_> {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Result<Batch>> {
        if self.yielded == self.batches.len() {
            // As in PyTorch, an exhausted epoch stops its non-persistent workers before
            // it reports the end, so that shutdown counts in the epoch's time.
            self.finish();
            return None;
        }
        let batch = self.next_batch();
        if batch.is_err() {
            // A failed pool is not reused: a later epoch starts fresh workers.
            self.loader.pool = None;
        }
        Some(batch)
    }
}

impl Drop for Epoch<'_> {
    fn drop(&mut self) {
        if self.yielded < self.batches.len() {
            // An abandoned epoch leaves tasks in flight; fresh workers are simpler than
            // draining them.
            self.loader.pool = None;
        }
    }
}
