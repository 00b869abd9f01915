//! Analysis: what a finished run means, computed from its [`RunResult`] alone (pure,
//! so it is the same in the app, the CLI and the JSON export). Per config, the epoch
//! time as an [`Estimate`] (median, range, bootstrap interval); the warnings the
//! measurements call for ([`warnings`]); the start-up ledger and the break-even of
//! persistent workers ([`ledger`]); the scaling curve against `num_workers` with its knee
//! and serial fraction ([`scaling`]); whether training is input-bound ([`input`]) and
//! how much loader workers slow the training step ([`contention`]); thread workers
//! against process workers at the same counts, with the GIL's share of a Python
//! `__getitem__` ([`worker_kinds`]); the recommendation per question ([`recommend`]).
//! Its text for the CLI is the presentation layer's (`loaderbench_present::analysis_text`).
//! Two parts measure as they analyse: [`tune`], the best settings within a budget, and
//! [`resolve`], which measures a finished run's undecided configs further; both measure
//! in rounds ([`rounds`]) that share their time between the open questions
//! ([`time_share`]), each config counted at what measuring it last took
//! ([`recommend::measuring_cost`]), as an open verdict counts how long to measure on.

pub mod aa;
pub mod baseline;
pub mod contention;
pub mod input;
pub mod ledger;
pub mod memory;
pub mod recommend;
pub mod resolve;
mod rounds;
pub mod scaling;
mod time_share;
pub mod tune;
pub mod warnings;
pub mod worker_kinds;

use serde::{Deserialize, Serialize};

use loaderbench_engine::plan::Config;
use loaderbench_measure::results::{ConfigResult, EpochResult, RunResult};
use loaderbench_measure::stats::{self, Estimate};

pub use ledger::{BreakEven, LedgerRow};
pub use recommend::{Outcome, Recommendation};
pub use rounds::{RoundGate, RoundsOptions};
pub use scaling::ScalingCurve;

/// `n` workers in words: "0 workers", "1 worker", "4 workers".
pub fn workers(n: usize) -> String {
    loaderbench_engine::counted(n, "worker")
}

/// One config's epoch times, repeats and epochs folded together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigEstimate {
    pub config: usize,
    pub label: String,
    /// A typical epoch: every epoch after the first, across repeats (the first epoch
    /// alone when only one was measured).
    pub epoch_s: Estimate,
    /// The first epoch, across repeats.
    pub first_epoch_s: Estimate,
    /// What the config costs in memory (every process's PSS summed at its peak), the
    /// median over repeats.
    pub memory_bytes: Option<u64>,
}

/// Everything the analysis says about a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// The number of epochs the break-even and the recommendation plan for.
    pub planned_epochs: usize,
    pub estimates: Vec<ConfigEstimate>,
    pub ledger: Vec<LedgerRow>,
    pub break_even: Vec<BreakEven>,
    pub scaling: Vec<ScalingCurve>,
    pub input_bound: Vec<input::InputBound>,
    /// With a step: each worker config's step time per batch against nw=0's.
    #[serde(default)]
    pub contention: Vec<contention::StepContention>,
    /// One per question the run answers (same dataset, pipeline and runtime).
    pub recommendations: Vec<Recommendation>,
    /// What each config costs in memory, at the end of an epoch of the whole dataset
    /// too, and whether it fits the limit.
    #[serde(default)]
    pub memory: memory::MemoryReport,
    /// Thread workers against process workers where the run measured both at the same
    /// counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worker_kinds: Vec<worker_kinds::WorkerKindComparison>,
}

impl Analysis {
    /// Analyses `result`.
    pub fn of(result: &RunResult) -> Analysis {
        let configs = measured_configs(result);
        let estimates: Vec<ConfigEstimate> =
            configs.iter().filter_map(ConfigRuns::estimate).collect();
        let ledger: Vec<LedgerRow> = configs.iter().map(ledger::row).collect();
        let break_even = ledger::break_even(&configs, &ledger, result.planned_epochs);
        let input_bound = configs
            .iter()
            .filter_map(|runs| input::input_bound(runs, &result.step))
            .collect::<Vec<_>>();
        let memory = memory::MemoryReport::of(result, &configs);
        let recommendations = recommend::recommend(result, &configs, &input_bound, &memory);
        let contention =
            contention::contention(&configs, &result.step, recommend::tie_margin(result));
        Analysis {
            worker_kinds: worker_kinds::compare(result, &configs),
            planned_epochs: result.planned_epochs,
            scaling: scaling::curves(&configs),
            estimates,
            ledger,
            break_even,
            input_bound,
            contention,
            recommendations,
            memory,
        }
    }
}

/// Every repeat of one config.
#[derive(Debug, Clone)]
pub struct ConfigRuns<'a> {
    pub index: usize,
    pub label: &'a str,
    pub config: &'a Config,
    pub runs: Vec<&'a ConfigResult>,
}

/// The configs with at least one result, in plan order.
pub fn measured_configs(result: &RunResult) -> Vec<ConfigRuns<'_>> {
    result
        .configs
        .iter()
        .enumerate()
        .filter_map(|(index, config)| {
            let runs: Vec<&ConfigResult> = result
                .results
                .iter()
                .filter(|r| r.config_index == index)
                .collect();
            let label = result
                .labels
                .get(index)
                .map(String::as_str)
                .unwrap_or_else(|| runs.first().map_or("", |r| r.label.as_str()));
            (!runs.is_empty()).then_some(ConfigRuns {
                index,
                label,
                config,
                runs,
            })
        })
        .collect()
}

impl ConfigRuns<'_> {
    /// The epochs that stand for a typical epoch: all but the first of each repeat, or
    /// the first when a repeat measured only one.
    pub fn typical_epochs(&self) -> impl Iterator<Item = &EpochResult> {
        self.runs.iter().flat_map(|run| run.typical_epochs())
    }

    /// Every epoch measured, repeat by repeat.
    pub fn epochs(&self) -> impl Iterator<Item = &EpochResult> {
        self.runs.iter().flat_map(|run| &run.epochs)
    }

    /// Each repeat's first epoch.
    pub fn first_epochs(&self) -> impl Iterator<Item = &EpochResult> {
        self.runs.iter().filter_map(|run| run.epochs.first())
    }

    /// True when some repeat measured more than one epoch.
    pub fn has_later_epochs(&self) -> bool {
        self.runs.iter().any(|run| run.epochs.len() > 1)
    }

    /// The epoch-time estimates, or `None` when no epoch finished.
    pub fn estimate(&self) -> Option<ConfigEstimate> {
        let typical: Vec<f64> = self.typical_epochs().map(|e| e.seconds).collect();
        let first: Vec<f64> = self.first_epochs().map(|e| e.seconds).collect();
        Some(ConfigEstimate {
            config: self.index,
            label: self.label.to_owned(),
            epoch_s: Estimate::of(&typical)?,
            first_epoch_s: Estimate::of(&first)?,
            memory_bytes: self.memory_bytes(),
        })
    }

    /// What the config costs in memory, the median over repeats (see
    /// [`ConfigResult::memory_bytes`]).
    pub fn memory_bytes(&self) -> Option<u64> {
        let peaks: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|r| r.memory_bytes())
            .map(|b| b as f64)
            .collect();
        stats::median(&peaks).map(|b| b as u64)
    }
}

/// Seconds per batch after the first, in one epoch (`None` with fewer than two batches).
pub fn steady_batch_s(epoch: &EpochResult) -> Option<f64> {
    (epoch.batches > 1).then(|| (epoch.seconds - epoch.first_batch_s) / (epoch.batches - 1) as f64)
}

/// Seconds under two minutes, else minutes, with one decimal; under a second as
/// [`loaderbench_engine::seconds`] writes them (`0.48 s`, `0.013 s`), not `0.0 s`.
pub fn duration(seconds: f64) -> String {
    if seconds.abs() < 1.0 {
        format!("{} s", loaderbench_engine::seconds(seconds))
    } else if seconds.abs() < 120.0 {
        format!("{seconds:.1} s")
    } else {
        format!("{:.1} minutes", seconds / 60.0)
    }
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// A share as a percentage: one decimal below 10%, none above.
pub fn percent(share: f64) -> String {
    let p = share * 100.0;
    if !p.is_finite() {
        "∞%".to_owned()
    } else if p.abs() < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}
