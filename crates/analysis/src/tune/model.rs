//! Stage one of a tune, Plumber's idea on our own measurements: from a few anchor
//! configs, predict every config's projected time for the planned epochs. Each anchor's
//! epochs split into the work (the time after the first batch, plus one batch at the
//! steady rate) and the start-up (the first batch beyond that rate: workers starting,
//! the pipeline filling). The anchors' work against their worker counts gives an Amdahl
//! fit ([`amdahl_fit`], no workers counting as one, workers past the cores adding
//! nothing); their start-ups a cost per worker for each way of starting them
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
    /// Work per epoch against workers; `None` when the anchors gave one worker count
    /// (then every config does the work of the nearest anchor).
    fit: Option<AmdahlFit>,
    /// (workers, work per epoch) of each anchor, for configs the fit does not cover.
    anchors: Vec<(usize, f64)>,
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
        let anchors: Vec<(usize, f64)> = measured
            .iter()
            .filter_map(|runs| Some((runs.config.num_workers, median_work_s(runs)?)))
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
        let cores = result.machine.logical_cores.max(1);
        let effective: Vec<(usize, f64)> = anchors
            .iter()
            .map(|&(workers, work)| (workers.min(cores), work))
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
        let work = match &self.fit {
            Some(fit) => fit.time_s(workers.clamp(1, self.cores) as f64),
            None => self.nearest_anchor_work_s(workers),
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

    fn nearest_anchor_work_s(&self, workers: usize) -> f64 {
        self.anchors
            .iter()
            .min_by_key(|(anchor, _)| anchor.abs_diff(workers))
            .map_or(0.0, |(_, work)| *work)
    }
}

/// The median over a config's epochs of the work they did (see [`work_s`]).
fn median_work_s(runs: &ConfigRuns<'_>) -> Option<f64> {
    let work: Vec<f64> = runs.epochs().filter_map(work_s).collect();
    stats::median(&work)
}

/// An epoch's time less its start-up: the time after the first batch, plus one batch at
/// the steady rate.
fn work_s(epoch: &EpochResult) -> Option<f64> {
    let steady = crate::steady_batch_s(epoch)?;
    Some(epoch.seconds - epoch.first_batch_s + steady)
}

/// What an epoch's first batch took beyond the steady rate: the workers starting.
fn startup_s(epoch: &EpochResult) -> Option<f64> {
    let steady = crate::steady_batch_s(epoch)?;
    Some((epoch.first_batch_s - steady).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_measure::fixtures::{config, epoch, result, run};

    /// Anchors of a pipeline whose 10 batches take 0.4 s of work alone, 0.2 s with two
    /// workers (8 cores: the fixtures' machine), each worker costing 0.3 s to start.
    fn anchors() -> RunResult {
        let configs = vec![config(0, false), config(2, false)];
        let results = vec![
            run(0, configs[0].clone(), vec![epoch(1, 0.04, 0.04, 10)]),
            run(1, configs[1].clone(), vec![epoch(1, 0.62, 0.02, 10)]),
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
            run(0, configs[0].clone(), vec![epoch(1, 0.04, 0.04, 10)]),
            run(1, configs[1].clone(), vec![epoch(1, 0.62, 0.02, 10)]),
            run(2, configs[2].clone(), vec![epoch(1, 6.02, 0.02, 10)]),
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
}
