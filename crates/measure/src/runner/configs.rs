//! How the runner measures one config (one repeat) on each runtime: the process's
//! untimed warm-up pass, a config on our engine (epoch by epoch, each between the gate
//! and the interference meter), a config with several ranks, and a config of PyTorch's
//! DataLoader relayed from the reference runtime.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bench::Event;
use crate::bench::meter::Interference;
use crate::bench::ranks::{RankProgress, Ranks, RanksSummary};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::loader::{Loader, Shard, set_intra_op_threads};
use crate::memory;
use crate::preset::Runtime;
use crate::reference::{Reference, ReferenceEvent};
use crate::results::{ConfigResult, EpochResult};
use crate::step::Step;

use super::Run;
use super::loading::{build_loader, run_epoch};

/// The longest the untimed warm-up pass of a process runs.
const PROCESS_WARMUP_LIMIT: Duration = Duration::from_millis(500);

impl Run {
    /// An untimed pass before the first config, once per process: libtorch's first
    /// ops, its thread pool and the allocator warm up here rather than in whichever
    /// config happens to run first (measured: that config's first epoch ran 1.3-2.6×
    /// its second on seed-light). It runs the first config of our engine without
    /// workers, for one epoch or [`PROCESS_WARMUP_LIMIT`], whichever ends first.
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
        let mut loader = build_loader(&plan, index, dataset, Shard::WHOLE, &self.cancel)?;
        set_intra_op_threads(plan.configs[index].intra_op_threads);
        let deadline = Instant::now() + PROCESS_WARMUP_LIMIT;
        for batch in loader.epoch()? {
            batch?;
            if Instant::now() >= deadline {
                break;
            }
        }
        Ok(())
    }

    pub(super) fn measure_config(
        &self,
        dataset: &Arc<dyn Dataset>,
        index: usize,
        repeat: usize,
    ) -> Result<ConfigResult> {
        let config = &self.plan.configs[index];
        let mut loader = build_loader(&self.plan, index, dataset, Shard::WHOLE, &self.cancel)?;
        let mut step = Step::new(self.plan.step);
        self.warn_if_pin_memory_idle(index, config.pin_memory && !loader.pin_memory_effective());
        set_intra_op_threads(config.intra_op_threads);
        memory::reset_peak_rss();
        let rss_before_bytes = memory::rss_bytes();
        let warmup = if self.plan.warmup {
            Some(
                self.measure_epoch(&mut loader, &mut step, index, repeat, 0)?
                    .0,
            )
        } else {
            None
        };
        let measured = (1..=self.plan.epochs)
            .map(|epoch| self.measure_epoch(&mut loader, &mut step, index, repeat, epoch))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.config_result(
            index,
            repeat,
            warmup,
            measured,
            RanksSummary {
                pin_memory_effective: loader.pin_memory_effective(),
                // Read after the epochs: what the consumer's step really ran with.
                intra_op_threads: tch::get_num_threads(),
                rss_before_bytes,
                peak_rss_bytes: memory::peak_rss_bytes(),
                workers: loader.worker_memory().to_vec(),
            },
        ))
    }

    /// Measures a config with several ranks, each a process of its own, behind a
    /// barrier before every epoch; each epoch counts as long as its slowest rank.
    pub(super) fn measure_ranked_config(
        &self,
        index: usize,
        repeat: usize,
    ) -> Result<ConfigResult> {
        let mut ranks = Ranks::start(&self.plan, index, &self.cancel)?;
        let mut measure = |epoch| {
            self.timed_epoch(index, repeat, || {
                ranks.epoch(epoch, |progress| {
                    self.emit.send(match progress {
                        RankProgress::WorkerReady(startup) => Event::WorkerReady {
                            config: index,
                            startup,
                        },
                        RankProgress::Batch(batch) => Event::Batch {
                            config: index,
                            repeat,
                            epoch,
                            batch,
                        },
                    });
                })
            })
        };
        let warmup = if self.plan.warmup {
            Some(measure(0)?.0)
        } else {
            None
        };
        let measured = (1..=self.plan.epochs)
            .map(&mut measure)
            .collect::<Result<Vec<_>>>()?;
        let summary = ranks.finish()?;
        self.warn_if_pin_memory_idle(
            index,
            self.plan.configs[index].pin_memory && !summary.pin_memory_effective,
        );
        Ok(self.config_result(index, repeat, warmup, measured, summary))
    }

    /// Measures a config with PyTorch's DataLoader, relaying its progress as events.
    pub(super) fn measure_reference(
        &self,
        reference: &Reference,
        index: usize,
        repeat: usize,
    ) -> Result<ConfigResult> {
        let mut relay = |progress| {
            let event = match progress {
                ReferenceEvent::WorkerReady(startup) => Event::WorkerReady {
                    config: index,
                    startup,
                },
                ReferenceEvent::Batch { epoch, batch } => Event::Batch {
                    config: index,
                    repeat,
                    epoch,
                    batch,
                },
                ReferenceEvent::Epoch(result) => Event::EpochFinished {
                    config: index,
                    repeat,
                    result: Box::new(result),
                },
                ReferenceEvent::Note(message) => {
                    // The script notes the same thing for every config: said once.
                    self.warn(Some(index), message);
                    return;
                }
            };
            self.emit.send(event);
        };
        let result = reference.measure(&self.plan, index, repeat, &self.cancel, &mut relay)?;
        self.warn_if_pin_memory_idle(
            index,
            result.config.pin_memory && !result.pin_memory_effective,
        );
        Ok(result)
    }

    fn measure_epoch(
        &self,
        loader: &mut Loader,
        step: &mut Step,
        config: usize,
        repeat: usize,
        epoch: usize,
    ) -> Result<(EpochResult, Option<Interference>)> {
        self.timed_epoch(config, repeat, || {
            let mut last_sent: Option<Instant> = None;
            run_epoch(loader, step, epoch, |batch, startups| {
                for startup in startups {
                    self.emit.send(Event::WorkerReady { config, startup });
                }
                // Every epoch's first batch, then at most one per interval: the CLI and
                // the app's measuring child pay the same, small, price for progress.
                let due =
                    last_sent.is_none_or(|at| at.elapsed() >= crate::bench::BATCH_EVENT_INTERVAL);
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

    /// Runs one epoch of config `config` between the gate and the interference meter,
    /// records what the meter saw and reports the finished epoch.
    fn timed_epoch(
        &self,
        config: usize,
        repeat: usize,
        epoch: impl FnOnce() -> Result<EpochResult>,
    ) -> Result<(EpochResult, Option<Interference>)> {
        let reading = self.settle_before_epoch();
        let mut result = epoch()?;
        let seen = reading.interference_since();
        result.record(seen);
        self.emit.send(Event::EpochFinished {
            config,
            repeat,
            result: Box::new(result.clone()),
        });
        Ok((result, seen))
    }
}
