//! The runtimes a config is measured with, behind one trait so that the runner's sweep
//! is written once: our loader in this process ([`OurLoader`]), several rank processes
//! of it behind a barrier ([`Ranked`]), and PyTorch's DataLoader or an SPDL pipeline in
//! a Python child process ([`Pytorch`], prepared when the first config of either comes
//! and then shared).
//! [`Runtimes::for_config`] picks the one a config names.

use std::sync::Arc;

use loaderbench_engine::dataset::{self, Dataset};
use loaderbench_engine::error::{Error, Result};
use loaderbench_engine::loader::{Shard, set_intra_op_threads};
use loaderbench_engine::memory;
use loaderbench_engine::plan::Config;
use loaderbench_engine::preset::Runtime;
use loaderbench_engine::step::Step;

use super::Run;
use super::cache::EpochCache;
use crate::engine_epoch::{build_loader, epoch_window};
use crate::events::Event;
use crate::memory_watch::MemoryWatch;
use crate::process_memory::ProcessKind;
use crate::pytorch::{PytorchEvent, PytorchScript, SharedPreloadedPython};
use crate::rank_merge::RanksSummary;
use crate::ranks::{RankProgress, Ranks};
use crate::results::ConfigResult;

/// Something that measures one repeat of one config, epoch by epoch, through the run's
/// gate and meter, reporting as it goes.
pub(super) trait ConfigRuntime {
    fn measure(&mut self, run: &Run, index: usize, repeat: usize) -> Result<ConfigResult>;
}

/// Every runtime of one run; each is set up once and reused by the configs that name it.
pub(super) struct Runtimes {
    ours: Option<OurLoader>,
    ranked: Ranked,
    pytorch: Pytorch,
}

impl Runtimes {
    /// `dataset` is the one our engine opened, `None` for a user's Python dataset.
    pub(super) fn new(
        dataset: Option<&Arc<dyn Dataset>>,
        preloaded: Option<Arc<SharedPreloadedPython>>,
    ) -> Runtimes {
        Runtimes {
            ours: dataset.map(|dataset| OurLoader {
                dataset: dataset.clone(),
            }),
            ranked: Ranked {
                dataset: dataset.cloned(),
            },
            pytorch: Pytorch {
                dataset: dataset.cloned(),
                preloaded,
                script: None,
            },
        }
    }

    /// The runtime that measures `config`.
    pub(super) fn for_config(&mut self, config: &Config) -> Result<&mut dyn ConfigRuntime> {
        Ok(match config.runtime {
            Runtime::Loaderbench if config.ranks > 1 => &mut self.ranked,
            // The plan gives our engine's configs only datasets it can open.
            Runtime::Loaderbench => self
                .ours
                .as_mut()
                .ok_or_else(|| Error::value(dataset::python_dataset::ENGINE_REFUSAL))?,
            // One script runs both: the request names the runtime.
            Runtime::Pytorch | Runtime::Spdl => &mut self.pytorch,
        })
    }
}

/// Our loader in this process.
struct OurLoader {
    dataset: Arc<dyn Dataset>,
}

impl ConfigRuntime for OurLoader {
    fn measure(&mut self, run: &Run, index: usize, repeat: usize) -> Result<ConfigResult> {
        let config = &run.plan.configs[index];
        let mut loader = build_loader(&run.plan, index, &self.dataset, Shard::WHOLE, &run.cancel)?;
        let mut step = Step::new(&run.plan.preset.step, config.device.resolve()?)?;
        run.warn_if_pin_memory_idle(index, config.pin_memory && !loader.pin_memory_effective());
        set_intra_op_threads(config.intra_op_threads);
        memory::reset_peak_rss();
        let rss_before_bytes = memory::rss_bytes();
        let mut cache = EpochCache::new(config, Some(&self.dataset));
        let watch = MemoryWatch::start(vec![(std::process::id(), ProcessKind::Main)]);
        let window = epoch_window(&run.plan, config, &*self.dataset, Shard::WHOLE);
        let (warmup, measured) = run.warmup_and_measured(|epoch| {
            run.measure_epoch(
                &mut loader,
                &mut step,
                index,
                repeat,
                &mut cache,
                &watch,
                epoch,
                window,
            )
        })?;
        let mut result = run.config_result(
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
            },
        );
        cache.mark(&mut result);
        result.dataset_samples = Some(self.dataset.whole_len());
        result.processes = watch.take_processes();
        Ok(result)
    }
}

/// Several processes of our loader, one per rank, behind a barrier before every epoch;
/// each epoch counts as long as its slowest rank. Each rank releases its own mapped pages
/// after each epoch of a cold config; this process evicts before the next.
struct Ranked {
    /// This process's view of the dataset, whose files a cold config evicts and a warm
    /// one loads.
    dataset: Option<Arc<dyn Dataset>>,
}

impl ConfigRuntime for Ranked {
    fn measure(&mut self, run: &Run, index: usize, repeat: usize) -> Result<ConfigResult> {
        let mut ranks = Ranks::start(&run.plan, index, &run.cancel)?;
        let mut cache = EpochCache::new(&run.plan.configs[index], self.dataset.as_ref());
        let roots = ranks.pids().into_iter().map(|pid| (pid, ProcessKind::Rank));
        let watch = MemoryWatch::start(roots.collect());
        let (warmup, measured) = run.warmup_and_measured(|epoch| {
            run.timed_epoch(index, repeat, epoch, &mut cache, &watch, || {
                ranks.epoch(epoch, &|| watch.sweep(), |progress| {
                    run.emit.send(match progress {
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
        })?;
        let summary = ranks.finish()?;
        run.warn_if_pin_memory_idle(
            index,
            run.plan.configs[index].pin_memory && !summary.pin_memory_effective,
        );
        let mut result = run.config_result(index, repeat, warmup, measured, summary);
        cache.mark(&mut result);
        result.dataset_samples = self.dataset.as_ref().map(|d| d.whole_len());
        result.processes = watch.take_processes();
        Ok(result)
    }
}

/// PyTorch's DataLoader in the PyTorch runtime, its progress relayed as events.
struct Pytorch {
    dataset: Option<Arc<dyn Dataset>>,
    preloaded: Option<Arc<SharedPreloadedPython>>,
    script: Option<PytorchScript>,
}

impl ConfigRuntime for Pytorch {
    fn measure(&mut self, run: &Run, index: usize, repeat: usize) -> Result<ConfigResult> {
        let script = match &mut self.script {
            Some(script) => script,
            None => {
                let mut script = PytorchScript::prepare(&run.plan, self.dataset.as_ref())?;
                script.offer(self.preloaded.clone());
                self.script.insert(script)
            }
        };
        // The script reads the meter around each of its epochs itself, and waits before
        // each epoch until the page cache is made cold or warm.
        run.settle_before_epoch(index, None)?;
        let mut cache = EpochCache::new(&run.plan.configs[index], self.dataset.as_ref());
        let mut prepare_page_cache = || run.prepare_page_cache(index, &mut cache);
        let mut relay = |progress| {
            let event = match progress {
                PytorchEvent::WorkerReady(startup) => Event::WorkerReady {
                    config: index,
                    startup,
                },
                PytorchEvent::Batch { epoch, batch } => Event::Batch {
                    config: index,
                    repeat,
                    epoch,
                    batch,
                },
                PytorchEvent::Epoch(result) => Event::EpochFinished {
                    config: index,
                    repeat,
                    result,
                },
                PytorchEvent::Note(message) => {
                    // The script notes the same thing for every config: said once.
                    run.warn(Some(index), message);
                    return;
                }
            };
            run.emit.send(event);
        };
        let mut result = script.measure(
            &run.plan,
            index,
            repeat,
            &run.cancel,
            &mut relay,
            &mut prepare_page_cache,
        )?;
        cache.mark(&mut result);
        run.warn_if_pin_memory_idle(
            index,
            result.config.pin_memory && !result.pin_memory_effective,
        );
        Ok(result)
    }
}
