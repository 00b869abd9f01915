//! The runner's epochs: the process's untimed warm-up pass, and one timed epoch between
//! the gate and the interference meter, for our loader in this process or for any
//! runtime that runs its epoch elsewhere (the ranks).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::events::Event;
use crate::memory_watch::MemoryWatch;
use crate::meter::Interference;
use crate::results::EpochResult;
use crate::storage_reads::ReadCounters;
use crate::timeline_budget::TimelineBudget;
use crate::window::WindowRule;
use loaderbench_engine::dataset::{Dataset, Subset};
use loaderbench_engine::error::Result;
use loaderbench_engine::loader::{EpochSize, Loader, Shard, set_intra_op_threads};
use loaderbench_engine::preset::Runtime;
use loaderbench_engine::step::Step;

use super::Run;
use super::cache::EpochCache;

/// An epoch's result and what the interference meter saw around it.
pub(super) type MeasuredEpoch = (EpochResult, Option<Interference>);
use crate::engine_epoch::{build_loader, run_epoch};

/// The longest the untimed warm-up pass of a process runs.
const PROCESS_WARMUP_LIMIT: Duration = Duration::from_millis(500);

/// What the warm-up pass reads: a sharded dataset's first shard, else all of it. A
/// shard is read as one stream however few of its samples are taken (over HTTP, one
/// GET of the whole shard), and the measured epochs read every shard again, so one
/// shard is all the pass needs (a shard holds batches; a tiny one still makes one).
fn warm_up_samples(dataset: &Arc<dyn Dataset>) -> Arc<dyn Dataset> {
    match dataset.shards().and_then(|shards| shards.first().cloned()) {
        Some(first) if first.end < dataset.len() => {
            Arc::new(Subset::new(dataset.clone(), first.end))
        }
        _ => dataset.clone(),
    }
}

impl Run {
    /// An untimed pass before the first config, once per process: libtorch's first
    /// ops, its thread pool and the allocator warm up here rather than in whichever
    /// config happens to run first (measured: that config's first epoch ran 1.3-2.6×
    /// its second on seed-light). It runs the first config of our engine without
    /// workers, for one epoch or [`PROCESS_WARMUP_LIMIT`], whichever ends first; over a
    /// sharded dataset, on its first shard only (see [`warm_up_samples`]). What it held
    /// to read is let go, so the measured epochs read from storage.
    pub(super) fn warm_up_process(&self, dataset: &Arc<dyn Dataset>) -> Result<()> {
        let Some(index) = self
            .plan
            .configs
            .iter()
            .position(|c| c.runtime == Runtime::Loaderbench && c.ranks <= 1)
        else {
            return Ok(());
        };
        let mut plan = self.plan.clone();
        plan.configs[index].num_workers = 0;
        let samples = warm_up_samples(dataset);
        let mut loader = build_loader(&plan, index, &samples, Shard::WHOLE, &self.cancel)?;
        set_intra_op_threads(plan.configs[index].intra_op_threads);
        let deadline = Instant::now() + PROCESS_WARMUP_LIMIT;
        let pass = (|| -> Result<()> {
            for batch in loader.epoch()? {
                batch?;
                if Instant::now() >= deadline {
                    break;
                }
            }
            Ok(())
        })();
        samples.release_thread_reader();
        pass
    }

    /// A config's epochs in order: its warm-up epoch (number 0, when the plan asks for
    /// one) and then its measured epochs, each measured by `epoch`, their timelines
    /// kept within the config's [`TimelineBudget`].
    pub(super) fn warmup_and_measured(
        &self,
        mut epoch: impl FnMut(usize) -> Result<MeasuredEpoch>,
    ) -> Result<(Option<EpochResult>, Vec<MeasuredEpoch>)> {
        let mut budget = TimelineBudget::default();
        let mut measure = |number| {
            epoch(number).map(|(mut result, seen)| {
                budget.apply(&mut result);
                (result, seen)
            })
        };
        let warmup = if self.plan.preset.warmup {
            Some(measure(0)?.0)
        } else {
            None
        };
        let measured = (1..=self.plan.preset.epochs)
            .map(measure)
            .collect::<Result<Vec<_>>>()?;
        Ok((warmup, measured))
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn measure_epoch(
        &self,
        loader: &mut Loader,
        step: &mut Step,
        config: usize,
        repeat: usize,
        cache: &mut EpochCache,
        watch: &MemoryWatch,
        epoch: usize,
        window: Option<(WindowRule, EpochSize)>,
    ) -> Result<MeasuredEpoch> {
        self.timed_epoch(config, repeat, epoch, cache, watch, || {
            let mut last_sent: Option<Instant> = None;
            // Workers that end with the epoch are swept once more first: in an epoch
            // shorter than the watch's interval no periodic sweep may see them.
            let sweep = || watch.sweep();
            run_epoch(loader, step, epoch, window, sweep, |batch, startups| {
                for startup in startups {
                    self.emit.send(Event::WorkerReady { config, startup });
                }
                // Every epoch's first batch, then at most one per interval: the CLI and
                // the app's measuring child pay the same, small, price for progress.
                let due =
                    last_sent.is_none_or(|at| at.elapsed() >= crate::events::BATCH_EVENT_INTERVAL);
                if batch.index == 0 || due {
                    last_sent = Some(Instant::now());
                    self.emit.send(Event::Batch {
                        config,
                        repeat,
                        epoch,
                        batch,
                    });
                }
            })
        })
    }

    /// Runs epoch `number` of config `config` between the gate (and the page cache made
    /// cold or warm) and the interference meter, with `watch` sampling its processes'
    /// memory, records what the meter saw, what the run read from storage and the
    /// config's memory, and reports the finished epoch.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn timed_epoch(
        &self,
        config: usize,
        repeat: usize,
        number: usize,
        cache: &mut EpochCache,
        watch: &MemoryWatch,
        epoch: impl FnOnce() -> Result<EpochResult>,
    ) -> Result<MeasuredEpoch> {
        let reading = self.settle_before_epoch(config, Some(cache))?;
        let reads = ReadCounters::now();
        watch.begin_epoch(number);
        let measured = epoch();
        let memory = watch.end_epoch();
        let mut result = measured?;
        result.memory = memory;
        let seen = reading.interference_since();
        let read_bytes = reads
            .zip(ReadCounters::now())
            .map(|(a, b)| a.read_since(&b));
        result.record(seen);
        result.record_reads(read_bytes);
        self.emit.send(Event::EpochFinished {
            config,
            repeat,
            result: Box::new(result.clone()),
        });
        Ok((result, seen))
    }
}
