//! The loader: PyTorch DataLoader semantics over a [`Dataset`] and a [`Pipeline`].
//! [`Loader::epoch`] is `iter(loader)`: it starts the workers unless they persist, hands
//! out `prefetch_factor × num_workers` batch tasks round-robin and one more for each
//! batch taken, yields batches in order (or as they come, without `in_order`), pins and
//! copies them to the device, and stops non-persistent workers once the epoch is done.
//! Each [`Batch`] carries the time spent in every stage. The workers are threads, or
//! processes (spawned or forked, see [`process`]); the epoch drives either through the
//! same [`WorkerPool`](pool::WorkerPool) trait.

mod collate;
mod epoch;
mod pool;
#[cfg(unix)]
pub mod process;
mod sampler;
mod stream_order;
mod threads;

use std::ops::Range;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tch::{Device, Tensor};

use self::pool::WorkerPool;
use self::threads::ThreadPool;
use crate::cancel::CancelToken;
use crate::dataset::Dataset;
use crate::device;
use crate::device::DeviceSpec;
use crate::error::{Error, FieldError, Result};
use crate::preset::IntraOpThreads;
use crate::transform::Pipeline;

pub use epoch::Epoch;
pub use pool::WorkerMessage;
pub use sampler::{Shard, batches_per_epoch};
use stream_order::{StreamSettings, stream_epoch, stream_epoch_size};

/// How often a waiting loader checks for cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// What a loader is built with, in its own terms (as burn's `DataLoaderBuilder`): the
/// `DataLoader` knobs it honours, how it draws samples and how long it waits for a
/// worker. It knows nothing of plans or of the experiment around it; the measurement
/// layer builds one from a config. The default is `DataLoader`'s.
#[derive(Debug, Clone)]
pub struct LoaderSettings {
    /// Samples per batch.
    pub batch_size: usize,
    /// Worker threads or processes; 0 loads in the consumer itself.
    pub num_workers: usize,
    /// Workers live from one epoch to the next instead of restarting.
    pub persistent_workers: bool,
    /// Batches each worker works on ahead.
    pub prefetch_factor: usize,
    /// Batches come in sampler order, rather than as workers finish them.
    pub in_order: bool,
    /// Batches are copied to page-locked memory (a no-op without CUDA).
    pub pin_memory: bool,
    /// Where batches go.
    pub device: DeviceSpec,
    pub shuffle: bool,
    pub seed: u64,
    pub drop_last: bool,
    /// A worker that sends nothing for this long while a batch is awaited is hung.
    pub worker_timeout: Duration,
    /// The part of every epoch this loader's rank loads.
    pub shard: Shard,
    /// A sharded dataset's per-worker shuffle buffer, in samples.
    pub shuffle_buffer: usize,
}

impl Default for LoaderSettings {
    fn default() -> LoaderSettings {
        LoaderSettings {
            batch_size: 1,
            num_workers: 0,
            persistent_workers: false,
            prefetch_factor: 2,
            in_order: true,
            pin_memory: false,
            device: DeviceSpec::Cpu,
            shuffle: false,
            seed: 0,
            drop_last: false,
            worker_timeout: Duration::from_secs(60),
            shard: Shard::WHOLE,
            shuffle_buffer: 0,
        }
    }
}

impl LoaderSettings {
    /// Checks each value against what it may hold.
    pub fn check(&self) -> std::result::Result<(), FieldError> {
        if self.batch_size == 0 {
            return Err(FieldError::new(None, "batch_size", "must be at least 1"));
        }
        if self.prefetch_factor == 0 {
            return Err(FieldError::new(
                None,
                "prefetch_factor",
                "must be at least 1",
            ));
        }
        Ok(())
    }

    /// How a sharded dataset's epochs are ordered under these settings.
    fn stream(&self) -> StreamSettings {
        StreamSettings {
            shuffle: self.shuffle,
            shuffle_buffer: self.shuffle_buffer,
            seed: self.seed,
            batch_size: self.batch_size,
            drop_last: self.drop_last,
            num_workers: self.num_workers,
            shard: self.shard,
        }
    }
}

/// The batches and samples of one epoch: what a window's projection scales up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochSize {
    pub batches: usize,
    pub samples: usize,
}

/// An epoch of `dataset` under `settings` (the first epoch's, for a sharded dataset,
/// whose uneven shards can make epochs differ by a batch).
pub fn epoch_size(dataset: &dyn Dataset, settings: &LoaderSettings) -> EpochSize {
    match dataset.shards() {
        Some(shards) => stream_epoch_size(&shards, &settings.stream()),
        None => indexed_epoch_size(dataset.len(), settings),
    }
}

/// An epoch under `settings` of a dataset of `len` samples read by index.
pub fn indexed_epoch_size(len: usize, settings: &LoaderSettings) -> EpochSize {
    let samples = settings.shard.len(len, settings.drop_last);
    let batches = batches_per_epoch(samples, settings.batch_size, settings.drop_last);
    let samples = if settings.drop_last {
        batches * settings.batch_size
    } else {
        samples
    };
    EpochSize { batches, samples }
}

/// Seconds spent in each stage of one batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StageTimes {
    /// Decoding samples into the batch (the rest of reading them, apart from
    /// `fetch_s`): the "decode" stage. Named `read_s` in saved results and exports,
    /// which had no fetch stage before.
    pub read_s: f64,
    /// Getting samples' bytes from storage: reading image files or a shard's stream,
    /// copying out of a memory-mapped file (the "fetch" stage). Results saved before it
    /// existed read as zero.
    #[serde(default)]
    pub fetch_s: f64,
    /// The part of `fetch_s` spent decompressing (compressed tar shards; zero for
    /// anything else, and not saved then).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub decompress_s: f64,
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
    /// The training step on this batch (zero without a step); runs after the batch is
    /// on the device, so it is no part of `wait_s`.
    #[serde(default)]
    pub step_s: f64,
}

impl StageTimes {
    pub fn add(&mut self, other: &StageTimes) {
        self.read_s += other.read_s;
        self.fetch_s += other.fetch_s;
        self.decompress_s += other.decompress_s;
        self.collate_s += other.collate_s;
        self.transform_s += other.transform_s;
        self.transfer_s += other.transfer_s;
        self.pin_s += other.pin_s;
        self.to_device_s += other.to_device_s;
        self.wait_s += other.wait_s;
        self.step_s += other.step_s;
    }

    /// Every stage's sum times `factor`: a projected epoch's stages from a window's.
    pub fn scale(&mut self, factor: f64) {
        for stage in [
            &mut self.read_s,
            &mut self.fetch_s,
            &mut self.decompress_s,
            &mut self.collate_s,
            &mut self.transform_s,
            &mut self.transfer_s,
            &mut self.pin_s,
            &mut self.to_device_s,
            &mut self.wait_s,
            &mut self.step_s,
        ] {
            *stage *= factor;
        }
    }
}

/// Whether a stage that most datasets never have took no time (then it is not saved).
fn is_zero(seconds: &f64) -> bool {
    *seconds == 0.0
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
    /// Where batches go.
    device: Device,
    dataset: Arc<dyn Dataset>,
    /// A sharded dataset's shards, read once.
    shards: Option<Vec<Range<usize>>>,
    pipeline: Arc<Pipeline>,
    settings: LoaderSettings,
    cancel: CancelToken,
    pool: Option<Box<dyn WorkerPool>>,
    epochs_started: u64,
    /// Worker processes instead of threads.
    #[cfg(unix)]
    processes: Option<process::ProcessWorkers>,
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
        settings.check()?;
        let shards = dataset.shards();
        if let Some(shards) = &shards
            && shards.len() < settings.shard.world
        {
            return Err(Error::value(format!(
                "{}: {} shards for {} ranks; every rank needs at least one shard",
                dataset.describe(),
                shards.len(),
                settings.shard.world
            )));
        }
        Ok(Loader {
            shards,
            pin_memory_effective: settings.pin_memory && device::cuda_device_count() > 0,
            device: settings.device.resolve()?,
            dataset,
            pipeline,
            settings,
            cancel,
            pool: None,
            epochs_started: 0,
            #[cfg(unix)]
            processes: None,
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
        epoch_size(&*self.dataset, &self.settings).batches
    }

    /// Starts an epoch: `iter(loader)`.
    pub fn epoch(&mut self) -> Result<Epoch<'_>> {
        self.cancel.check()?;
        let epoch = self.epochs_started;
        self.epochs_started += 1;
        let settings = &self.settings;
        let (batches, owners) = match &self.shards {
            Some(shards) => {
                let order = stream_epoch(shards, &settings.stream(), epoch);
                (order.batches, Some(order.workers))
            }
            None => (
                sampler::epoch_batches(
                    self.dataset.len(),
                    settings.batch_size,
                    settings.shuffle,
                    settings.drop_last,
                    settings.seed,
                    epoch,
                    settings.shard,
                ),
                None,
            ),
        };
        let mut started_workers = Vec::new();
        if settings.num_workers > 0 && (self.pool.is_none() || !settings.persistent_workers) {
            let count = settings.num_workers;
            self.pool = None;
            self.pool = Some(self.start_pool()?);
            started_workers = (0..count).collect();
        }
        Epoch::start(self, epoch, batches, owners, started_workers)
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

#[cfg(test)]
mod tests {
    use super::StageTimes;

    #[test]
    fn stage_times_saved_before_the_fetch_stage_read_it_as_zero() {
        let saved = r#"{"read_s": 0.5, "collate_s": 0.0, "transform_s": 0.0,
            "transfer_s": 0.0, "pin_s": 0.0, "to_device_s": 0.0, "wait_s": 0.0}"#;
        let stages: StageTimes = serde_json::from_str(saved).unwrap();
        assert_eq!((stages.fetch_s, stages.read_s), (0.0, 0.5));
    }
}
