//! Our engine's epoch, measured: the loader a config measures with (thread or process
//! workers, the dataset shard of a rank) and one epoch through it: batches to the
//! device, the training step on each, and what each stage took.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::results::{BatchRecord, EpochResult};
use crate::window::WindowRule;
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::Dataset;
use loaderbench_engine::error::{FieldError, Result};
use loaderbench_engine::loader::{
    EpochSize, Loader, LoaderSettings, Shard, WorkerStartup, epoch_size, indexed_epoch_size,
};
use loaderbench_engine::plan::{Config, Plan};
use loaderbench_engine::preset::{Cache, Measure};
use loaderbench_engine::step::Step;
use loaderbench_engine::transform::Pipeline;

/// The settings config `config` of `plan` loads `shard` of every epoch with (also what
/// the `preset` fuzz target checks every planned config against).
pub fn loader_settings(plan: &Plan, config: &Config, shard: Shard) -> LoaderSettings {
    LoaderSettings {
        batch_size: config.batch_size,
        num_workers: config.num_workers,
        persistent_workers: config.persistent_workers,
        prefetch_factor: config.prefetch_factor,
        in_order: config.in_order,
        pin_memory: config.pin_memory,
        device: config.device.clone(),
        shuffle: plan.preset.shuffle,
        seed: plan.preset.seed,
        drop_last: plan.preset.drop_last,
        worker_timeout: Duration::from_secs_f64(plan.preset.worker_timeout_s),
        shard,
        shuffle_buffer: plan.preset.dataset.shuffle_buffer,
    }
}

/// Refuses `plan` where the opened `dataset` does not fit it, before anything is
/// measured: `normalize` holds neither one value nor one per channel of its images, or
/// one of its configs would load no batch of it (with `drop_last`, a batch larger than
/// the samples each rank gets), so that its epochs would measure nothing and the
/// analysis would pick among empty epochs.
pub fn check_dataset_fits(plan: &Plan, dataset: &dyn Dataset) -> Result<()> {
    plan.preset
        .normalize
        .fits_channels(dataset.shape().channels)
        .map_err(|(list, problem)| {
            let field = format!("normalize.{list}");
            FieldError::new(plan.source.as_deref(), field, problem)
        })?;
    check_batches(plan, dataset.len(), |settings| {
        epoch_size(dataset, settings)
    })
}

/// [`check_dataset_fits`]' batches for a dataset read by index that is known only by
/// its `len` (a user's Python Dataset, which only the PyTorch runtime opens).
pub fn check_every_config_has_a_batch_of(plan: &Plan, len: usize) -> Result<()> {
    check_batches(plan, len, |settings| indexed_epoch_size(len, settings))
}

/// Refuses `plan` at its first config whose epoch, as `size_of` gives it from the
/// config's loader settings, holds no batch of the `len` samples.
fn check_batches(
    plan: &Plan,
    len: usize,
    size_of: impl Fn(&LoaderSettings) -> EpochSize,
) -> Result<()> {
    for config in &plan.configs {
        let shard = Shard {
            rank: 0,
            world: config.ranks.max(1),
        };
        let settings = loader_settings(plan, config, shard);
        if size_of(&settings).batches > 0 {
            continue;
        }
        let samples = settings.shard.len(len, settings.drop_last);
        let per_rank = if shard.world > 1 {
            format!(" each of its {} ranks gets", shard.world)
        } else {
            String::new()
        };
        return Err(FieldError::new(
            plan.source.as_deref(),
            "batch_size",
            format!(
                "{} with drop_last leaves no batch of the {samples} samples{per_rank}: \
                 lower batch_size, raise samples, or set drop_last: false",
                config.batch_size
            ),
        )
        .into());
    }
    Ok(())
}

/// The window config `config` of `plan` measures its epochs in: `None` where the plan
/// measures whole epochs, or the config reads a cold page cache (what storage gives
/// changes through an epoch, so its start does not stand for the rest).
pub fn window_rule(plan: &Plan, config: &Config) -> Option<WindowRule> {
    if plan.preset.measure == Measure::Epochs || config.cache == Cache::Cold {
        return None;
    }
    let queue = config.num_workers * config.prefetch_factor;
    Some(WindowRule::new(plan.preset.window_s, queue))
}

/// The window an epoch of config `config` of `plan` over `shard` of `dataset` is cut
/// by, with the batches and samples a whole epoch of that shard has; `None` where it is measured
/// whole (see [`window_rule`]).
pub(crate) fn epoch_window(
    plan: &Plan,
    config: &Config,
    dataset: &dyn Dataset,
    shard: Shard,
) -> Option<(WindowRule, EpochSize)> {
    let rule = window_rule(plan, config)?;
    let settings = loader_settings(plan, config, shard);
    Some((rule, epoch_size(dataset, &settings)))
}

/// The loader config `index` of `plan` measures with, loading `shard` of every epoch.
pub(crate) fn build_loader(
    plan: &Plan,
    index: usize,
    dataset: &Arc<dyn Dataset>,
    shard: Shard,
    cancel: &CancelToken,
) -> Result<Loader> {
    let config = &plan.configs[index];
    let pipeline = Arc::new(
        Pipeline::new(
            &config.pipeline,
            &plan.preset.normalize,
            dataset.shape().channels,
        )?
        .at(config.transform_at),
    );
    let settings = loader_settings(plan, config, shard);
    let loader = Loader::new(dataset.clone(), pipeline, settings, cancel.clone())?;
    Ok(with_worker_processes(plan, loader, config))
}

/// Sets the loader up for worker processes when the config asks for them (the plan
/// has already refused them where the platform has none).
fn with_worker_processes(plan: &Plan, loader: Loader, config: &Config) -> Loader {
    #[cfg(unix)]
    {
        use loaderbench_engine::loader::process::{ProcessKind, ProcessWorkers};
        use loaderbench_engine::preset::WorkerKind;
        let kind = match config.worker_kind {
            // A plan settles `auto` into thread on our engine; a config built by hand
            // may still say it.
            WorkerKind::Auto | WorkerKind::Thread => return loader,
            WorkerKind::Spawn => ProcessKind::Spawn,
            WorkerKind::Fork => ProcessKind::Fork,
        };
        loader.with_processes(ProcessWorkers {
            kind,
            dataset: Some(plan.preset.dataset.clone()),
            samples: plan.preset.samples,
            pipeline: config.pipeline.clone(),
            transform_at: config.transform_at,
            normalize: plan.preset.normalize.clone(),
            dataset_transfer: config.dataset_transfer,
            batch_transfer: config.batch_transfer,
            executable: None,
        })
    }
    #[cfg(not(unix))]
    {
        let _ = (plan, config);
        loader
    }
}

/// Runs one epoch, timed as ARCHITECTURE.md's measurement rules define it, with the
/// training step on every batch; `on_batch` hears of each batch once its step is done
/// (its time in `step_s`), and of the workers that became ready. Under `window` (its
/// rule, and the size of a whole epoch) the epoch is cut once the rule's window is
/// done, and projected. `before_workers_end` runs after the last batch, while workers
/// that end with the epoch are still there (its time is left out of the epoch's).
pub(crate) fn run_epoch(
    loader: &mut Loader,
    step: &mut Step,
    epoch: usize,
    window: Option<(WindowRule, EpochSize)>,
    mut before_workers_end: impl FnMut(),
    mut on_batch: impl FnMut(BatchRecord, Vec<WorkerStartup>),
) -> Result<EpochResult> {
    let started = Instant::now();
    let mut batches = loader.epoch()?;
    let mut timeline = Vec::new();
    let mut at_s = Vec::new();
    let mut startups = Vec::new();
    // Time spent taking the cut epoch's batches in flight, which a whole epoch never
    // has: left out of its seconds.
    let mut drained = Duration::ZERO;
    // Likewise the sweep before the workers end, which runs once: after the last batch.
    let mut swept = Duration::ZERO;
    let mut sweep = || {
        let sweeping = Instant::now();
        before_workers_end();
        swept = sweeping.elapsed();
    };
    while let Some(batch) = batches.next() {
        let batch = batch?;
        let on_device = started.elapsed();
        step.run(&batch.images, &batch.labels)?;
        let mut record = BatchRecord {
            index: batch.index,
            at_s: on_device.as_secs_f64(),
            samples: usize::try_from(batch.labels.size()[0]).unwrap_or(0),
            stages: batch.stages,
        };
        record.stages.step_s = (started.elapsed() - on_device).as_secs_f64();
        let ready = batches.take_worker_startups();
        startups.extend(ready.iter().copied());
        timeline.push(record);
        at_s.push(record.at_s);
        on_batch(record, ready);
        if window.is_some_and(|(rule, _)| rule.done(&at_s)) {
            let draining = Instant::now();
            batches.drain_in_flight()?;
            drained = draining.elapsed();
            sweep();
            break;
        }
        if batches.all_delivered() {
            // The next call ends the epoch, and workers that do not persist with it.
            sweep();
        }
    }
    // Cut or not, the epoch ends once its iterator is gone (non-persistent workers end).
    drop(batches);
    let seconds = (started.elapsed() - drained - swept).as_secs_f64();
    Ok(EpochResult::from_window(
        epoch, seconds, timeline, startups, window,
    ))
}
