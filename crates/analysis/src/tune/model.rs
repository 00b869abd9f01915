//! Stage one of a tune, Plumber's idea on our own measurements: from a few anchor
//! configs, predict every config's projected time for the planned epochs. Each anchor's
//! epochs split into the work (every batch at the steady rate of the epoch's second half)
//! and the start-up (the rest: workers starting and the pipeline filling, which slow the
//! batches after the first too), and the work into the main process's own time (all it
//! did but wait for batches: the training step, the copy to the device) and the loading.
//! Without workers the main process loads, so an epoch is the loading and its own time
//! one after the other; with workers the two overlap, so an epoch is the longer of them:
//! the loading of the workers' anchors is their whole work, and the main process's time
//! (the step, slowed as workers take its cores) is the nearest workers' anchor's. The
//! loading against the worker counts gives an Amdahl fit ([`amdahl_fit`]: no workers'
//! loading counting as one worker's, at the CPU time it took on the main process's
//! intra-op threads where the run measured it, workers past the cores adding nothing), so
//! a step that outlasts one worker's loading makes one worker as fast as two. Their
//! start-ups give a cost per worker for each way of starting them
//! ([`Config::worker_start`]: a spawned worker imports torch, a forked one does not), the
//! anchors' median for a way none of them took. A persistent config pays start-up once,
//! any other in every epoch. The model knows nothing of prefetch depth or transfers, so
//! it ranks the configs that differ only in those alike: the measurements decide. Each
//! runtime (each question: runtime, pipeline, ranks, cache) has its own anchors and its
//! own fit, since our engine's anchors say nothing of PyTorch's DataLoader.

use loaderbench_engine::plan::Config;
use loaderbench_measure::results::{EpochResult, RunResult};
use loaderbench_measure::stats;

use crate::recommend::same_question;
use crate::scaling::{AmdahlFit, amdahl_fit};
use crate::{ConfigRuns, measured_configs};

/// The fitted model.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// Loading per epoch against workers; `None` when the anchors gave one worker count
    /// (then every config loads as the nearest anchor).
    fit: Option<AmdahlFit>,
    /// Each anchor's worker count, loading per epoch (with workers, its whole work) and
    /// the main process's own time per epoch.
    anchors: Vec<Anchor>,
    /// Start-up seconds per worker, per epoch that starts workers, for each way of
    /// starting them the anchors took ([`Config::worker_start`]).
    startup_per_worker_s: Vec<(&'static str, f64)>,
    /// The median of those, for a way no anchor took.
    startup_per_worker_any_s: f64,
    cores: usize,
}

impl Model {
    /// Fits the model to the configs `result` measured (the anchors) of `config`'s
    /// question (its runtime, pipeline, ranks and cache: another runtime's anchors say
    /// nothing of this one's); `None` when none of them finished an epoch.
    pub fn fit(result: &RunResult, config: &Config) -> Option<Model> {
        let mut measured = measured_configs(result);
        measured.retain(|runs| same_question(runs.config, config));
        let cores = result.machine.logical_cores.max(1);
        let anchors: Vec<Anchor> = measured
            .iter()
            .filter_map(|runs| Anchor::of(runs, cores))
            .collect();
        if anchors.is_empty() {
            return None;
        }
        let per_worker: Vec<(&'static str, f64)> = measured
            .iter()
            .filter(|runs| runs.config.num_workers > 0)
            .filter_map(|runs| {
                let startups: Vec<f64> = runs.first_epochs().filter_map(startup_s).collect();
                let per_worker = stats::median(&startups)? / runs.config.num_workers as f64;
                Some((runs.config.worker_start(), per_worker))
            })
            .collect();
        let mut starts: Vec<&'static str> = per_worker.iter().map(|(start, _)| *start).collect();
        starts.sort_unstable();
        starts.dedup();
        let median_of = |start: &str| {
            let alike: Vec<f64> = per_worker
                .iter()
                .filter(|(s, _)| *s == start)
                .map(|(_, seconds)| *seconds)
                .collect();
            stats::median(&alike).unwrap_or(0.0)
        };
        let all: Vec<f64> = per_worker.iter().map(|(_, seconds)| *seconds).collect();
        let effective: Vec<(usize, f64)> = anchors
            .iter()
            .map(|anchor| (anchor.workers.min(cores), anchor.one_thread_loading_s))
            .collect();
        Some(Model {
            fit: amdahl_fit(&effective),
            anchors,
            startup_per_worker_s: starts.iter().map(|&s| (s, median_of(s))).collect(),
            startup_per_worker_any_s: stats::median(&all).unwrap_or(0.0),
            cores,
        })
    }

    /// `config`'s predicted time for `epochs` epochs.
    pub fn predict_s(&self, config: &Config, epochs: usize) -> f64 {
        let workers = config.num_workers;
        let without_workers = self.anchors.iter().find(|a| a.workers == 0);
        let loading = match (&self.fit, without_workers) {
            // The main process loads on all its intra-op threads, as its anchor did.
            (_, Some(anchor)) if workers == 0 => anchor.loading_s,
            (Some(fit), _) => fit.time_s(workers.clamp(1, self.cores) as f64),
            (None, _) => self.nearest(workers.max(1), |a| a.workers.max(1)).loading_s,
        };
        let work = if workers == 0 {
            loading + self.nearest(0, |a| a.workers).main_s
        } else {
            // The nearest anchor with workers: its main process shared the cores with them.
            let with_workers = |a: &Anchor| {
                if a.workers == 0 {
                    usize::MAX
                } else {
                    a.workers
                }
            };
            loading.max(self.nearest(workers, with_workers).main_s)
        };
        let startups = if workers == 0 {
            0
        } else if config.persistent_workers {
            1
        } else {
            epochs
        };
        let per_worker = self
            .startup_per_worker_s
            .iter()
            .find(|(start, _)| *start == config.worker_start())
            .map_or(self.startup_per_worker_any_s, |(_, seconds)| *seconds);
        epochs as f64 * work + startups as f64 * per_worker * workers as f64
    }

    /// The anchor whose `count` is nearest `workers` (the first of equals).
    fn nearest(&self, workers: usize, count: impl Fn(&Anchor) -> usize) -> &Anchor {
        self.anchors
            .iter()
            .min_by_key(|anchor| count(anchor).abs_diff(workers))
            .expect("Model::fit makes no model without anchors")
    }
}

/// What an anchor's epochs did, as medians over them.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Anchor {
    workers: usize,
    /// Loading per epoch: without workers, the work less the main process's own time;
    /// with them, the whole work (the loading as far as the epoch shows it).
    loading_s: f64,
    /// The loading as the fit counts it: with workers, `loading_s`; without, what one
    /// worker would take (see [`Anchor::of`]).
    one_thread_loading_s: f64,
    /// The main process's own time per epoch: the work less its waits for batches.
    main_s: f64,
}

impl Anchor {
    /// The anchor of `runs` on a machine of `cores` cores. A worker loads on one thread
    /// (loaders set their workers' intra-op threads to one, as DataLoader does), while
    /// the main process without workers loads on all of its own: a fused heavy pipeline
    /// took 0.13 s an epoch on two threads there, and one worker 0.25 s, which the fit
    /// had predicted at 0.13 s. So the loading without workers counts, for the fit, as
    /// the CPU time it took: the epoch's CPU time less the main process's own time on
    /// all its threads (the most the rest of the job could have used, so that the count
    /// errs towards the loading's wall time, as before), between the loading's wall time
    /// and that times the threads. Without CPU times it counts as its wall time.
    fn of(runs: &ConfigRuns<'_>, cores: usize) -> Option<Anchor> {
        let median = |values: Vec<f64>| stats::median(&values);
        let work = median(runs.epochs().filter_map(work_s).collect())?;
        let main = median(runs.epochs().filter_map(main_s).collect())?;
        let workers = runs.config.num_workers;
        let loading_s = if workers == 0 { work - main } else { work };
        let threads = runs
            .runs
            .first()
            .map_or(1, |run| run.intra_op_threads.max(1));
        let threads = (threads as usize).min(cores) as f64;
        let cpu = median(runs.epochs().filter_map(|e| e.own_cpu_s).collect());
        let one_thread_loading_s = match cpu {
            Some(cpu) if workers == 0 && loading_s > 0.0 => {
                (cpu - main * threads).clamp(loading_s, loading_s * threads)
            }
            _ => loading_s,
        };
        Some(Anchor {
            workers,
            loading_s,
            one_thread_loading_s,
            main_s: main,
        })
    }
}

/// An epoch's time less its start-up: every batch at the steady rate ([`steady_s`]).
fn work_s(epoch: &EpochResult) -> Option<f64> {
    Some(epoch.batches as f64 * steady_s(epoch)?)
}

/// The main process's own time in an epoch: all it did but wait for batches (the
/// start-up is a wait), at most the epoch's work.
fn main_s(epoch: &EpochResult) -> Option<f64> {
    let work = work_s(epoch)?;
    Some((epoch.seconds - epoch.stages.wait_s).clamp(0.0, work))
}

/// What an epoch took beyond its batches at the steady rate: the workers starting.
fn startup_s(epoch: &EpochResult) -> Option<f64> {
    Some((epoch.seconds - work_s(epoch)?).max(0.0))
}

/// Seconds per batch once the epoch runs steadily: over its second half, where its
/// timeline holds every batch of one rank's whole epoch (workers that are still starting
/// slow the batches after the first, not the first alone: four thread workers' epoch
/// took 22 ms where persistent ones took 14, and the first batch showed a tenth of
/// that), else the mean after the first batch.
fn steady_s(epoch: &EpochResult) -> Option<f64> {
    let timeline = &epoch.timeline;
    let whole = epoch.projected.is_none() && epoch.ranks.is_empty();
    if whole && epoch.batches >= 4 && timeline.len() == epoch.batches {
        let half = epoch.batches / 2;
        let late = (timeline[epoch.batches - 1].at_s - timeline[half - 1].at_s)
            / (epoch.batches - half) as f64;
        if late > 0.0 {
            return Some(late);
        }
    }
    crate::steady_batch_s(epoch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_measure::fixtures::{config, epoch, epoch_with_wait, result, run};

    /// An epoch of 10 batches that the main process spent waiting for: its first batch
    /// after `first_batch_s`, the others `batch_s` apart.
    fn loading(first_batch_s: f64, batch_s: f64) -> EpochResult {
        epoch_with_wait(1, first_batch_s, batch_s, 10, batch_s)
    }

    /// Anchors of a pipeline whose 10 batches take 0.4 s of work alone, 0.2 s with two
    /// workers (8 cores: the fixtures' machine), each worker costing 0.3 s to start.
    fn anchors() -> RunResult {
        let configs = vec![config(0, false), config(2, false)];
        let results = vec![
            run(0, configs[0].clone(), vec![loading(0.04, 0.04)]),
            run(1, configs[1].clone(), vec![loading(0.62, 0.02)]),
        ];
        result(configs, results)
    }

    #[test]
    fn the_model_gives_back_its_anchors() {
        let model = Model::fit(&anchors(), &config(0, false)).unwrap();
        assert!((model.predict_s(&config(0, false), 1) - 0.40).abs() < 1e-9);
        assert!((model.predict_s(&config(2, false), 1) - (0.20 + 0.6)).abs() < 1e-9);
    }

    /// A spawned anchor's workers cost 3 s each to start, a forked one's 0.3 s: each
    /// config's start-up is its own way's, and a way no anchor took gets their median.
    #[test]
    fn each_way_of_starting_workers_costs_its_own_start_up() {
        use loaderbench_engine::preset::{Runtime, StartMethod, WorkerKind};
        let pytorch = |workers, method| {
            let mut config = config(workers, false);
            config.runtime = Runtime::Pytorch;
            config.worker_kind = WorkerKind::Auto;
            config.start_method = method;
            config
        };
        let configs = vec![
            pytorch(0, StartMethod::Fork),
            pytorch(2, StartMethod::Fork),
            pytorch(2, StartMethod::Spawn),
        ];
        let results = vec![
            run(0, configs[0].clone(), vec![loading(0.04, 0.04)]),
            run(1, configs[1].clone(), vec![loading(0.62, 0.02)]),
            run(2, configs[2].clone(), vec![loading(6.02, 0.02)]),
        ];
        let model = Model::fit(&result(configs.clone(), results), &configs[0]).unwrap();
        let predict = |workers, method| model.predict_s(&pytorch(workers, method), 1);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(predict(4, StartMethod::Fork), 0.1 + 4.0 * 0.3));
        assert!(close(predict(4, StartMethod::Spawn), 0.1 + 4.0 * 3.0));
        let forkserver = predict(2, StartMethod::Forkserver);
        assert!(close(forkserver, 0.2 + 2.0 * 1.65), "{forkserver}");
    }

    #[test]
    fn workers_spread_the_work_and_only_persistent_ones_start_once() {
        let model = Model::fit(&anchors(), &config(0, false)).unwrap();
        // Amdahl through 0.4 s at one and 0.2 s at two: no serial part, 0.1 s at four.
        let four = model.predict_s(&config(4, false), 10);
        assert!((four - (10.0 * 0.1 + 10.0 * 1.2)).abs() < 1e-9, "{four}");
        let persistent = model.predict_s(&config(4, true), 10);
        assert!(
            (persistent - (10.0 * 0.1 + 1.2)).abs() < 1e-9,
            "{persistent}"
        );
    }

    /// A training step of 27 ms a batch and 23 ms of loading: without workers an epoch is
    /// both (0.5 s), with two workers the step (slowed to 0.315 s an epoch as they share
    /// its cores), and one worker, whose loading hides behind the step as theirs does, is
    /// predicted at the step's time, not at no workers' (it was, so a tune left out the
    /// config a sweep picked).
    #[test]
    fn a_step_that_outlasts_the_loading_makes_one_worker_as_fast_as_two() {
        let configs = vec![config(0, false), config(2, false)];
        let results = vec![
            run(
                0,
                configs[0].clone(),
                vec![epoch_with_wait(1, 0.05, 0.05, 10, 0.02)],
            ),
            // The step's time between batches, none of it waiting: their first batch came
            // 0.265 s late as the two workers started.
            run(1, configs[1].clone(), vec![epoch(1, 0.3, 0.035, 10)]),
        ];
        let model = Model::fit(&result(configs, results), &config(0, false)).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        let no_workers = model.predict_s(&config(0, false), 1);
        assert!(close(no_workers, 0.5), "{no_workers}");
        let start_one = (0.3 - 0.035) / 2.0;
        let one = model.predict_s(&config(1, false), 1);
        assert!(close(one, 0.315 + start_one), "{one}");
        let two = model.predict_s(&config(2, false), 1);
        assert!(close(two, 0.35 + 2.0 * start_one), "{two}");
    }

    /// Four workers whose first batch comes at 0.1 s, the next four 50 ms apart as they
    /// start, then 20 ms apart: the work is 12 batches at 20 ms, and the start-up all the
    /// rest (0.2 s), which a persistent config pays once. Read from the first batch alone,
    /// the start-up was 69 ms and the work 0.34 s an epoch.
    #[test]
    fn workers_still_starting_after_the_first_batch_count_as_start_up() {
        use loaderbench_engine::loader::StageTimes;
        use loaderbench_measure::results::BatchRecord;
        let mut at = vec![0.1];
        at.extend((1..5).map(|i| 0.1 + 0.05 * i as f64));
        at.extend((1..8).map(|i| 0.3 + 0.02 * i as f64));
        let timeline: Vec<BatchRecord> = at
            .iter()
            .enumerate()
            .map(|(index, &at_s)| BatchRecord {
                index,
                at_s,
                samples: 64,
                stages: StageTimes {
                    wait_s: at_s - if index == 0 { 0.0 } else { at[index - 1] },
                    ..StageTimes::default()
                },
            })
            .collect();
        let starting = EpochResult::from_batches(1, at[11], timeline, Vec::new());
        let configs = vec![config(0, false), config(4, false)];
        let results = vec![
            run(0, configs[0].clone(), vec![loading(0.04, 0.04)]),
            run(1, configs[1].clone(), vec![starting]),
        ];
        let model = Model::fit(&result(configs, results), &config(0, false)).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        let each_epoch = model.predict_s(&config(4, false), 10);
        assert!(close(each_epoch, 10.0 * 0.44), "{each_epoch}");
        let persistent = model.predict_s(&config(4, true), 10);
        assert!(close(persistent, 10.0 * 0.24 + 0.2), "{persistent}");
    }

    /// Seed-heavy's fused pipeline on two cores, measured: without workers the main
    /// process loaded an epoch in 0.13 s on its two intra-op threads, using 0.25 s of
    /// CPU; two workers took 0.13 s, and one worker 0.25 s. The fit counts the loading
    /// without workers as its CPU time, so one worker is predicted at 0.25 s, not at no
    /// workers' 0.13 s (every one-worker config was measured first, and dropped); no
    /// workers is still predicted at what its anchor took. Without CPU times, as before.
    #[test]
    fn loading_on_several_threads_without_workers_counts_as_its_cpu_time() {
        let configs = vec![config(0, false), config(2, false)];
        let fitted = |cpu: Option<f64>| {
            let mut alone = loading(0.013, 0.013);
            alone.own_cpu_s = cpu;
            let mut without = run(0, configs[0].clone(), vec![alone]);
            without.intra_op_threads = 2;
            let with = run(1, configs[1].clone(), vec![loading(0.013, 0.013)]);
            let mut result = result(configs.clone(), vec![without, with]);
            result.machine.logical_cores = 2;
            Model::fit(&result, &configs[0]).unwrap()
        };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        let model = fitted(Some(0.26));
        assert!(close(model.predict_s(&config(0, false), 1), 0.13));
        let one = model.predict_s(&config(1, false), 1);
        assert!(close(one, 0.26), "{one}");
        assert!(close(model.predict_s(&config(2, false), 1), 0.13));
        let one = fitted(None).predict_s(&config(1, false), 1);
        assert!(close(one, 0.13), "{one}");
    }
}
