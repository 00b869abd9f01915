//! The candidates of one question: each config as the recommendation sees it (a config
//! that differs only in a no-op knob, or a copy of an A/A check, folded into another;
//! measurements disturbed by other load set aside where it has others), with its
//! per-round projected time for the planned epochs, and what the noise model is fitted
//! to.

use std::collections::{BTreeMap, BTreeSet};

use loaderbench_engine::plan::Config;
use loaderbench_engine::preset::Cache;
use loaderbench_measure::results::{ConfigResult, EpochResult};
use loaderbench_measure::stats::{self, Estimate};

use super::super::ConfigRuns;
use super::noise::NoiseInput;

/// One config as the recommendation sees it: configs that differ only in a no-op knob
/// are folded into one, their repeats pooled.
#[derive(Clone)]
pub(crate) struct Candidate<'a> {
    pub index: usize,
    pub label: &'a str,
    /// With pin_memory as measured: off where it had no effect.
    pub config: Config,
    /// Labels of the configs folded into this one for a no-op knob.
    pub folded: Vec<&'a str>,
    /// Its measurements, less those disturbed by other load where it has undisturbed ones.
    pub runs: Vec<&'a ConfigResult>,
    /// The disturbed measurements set aside.
    pub set_aside: usize,
    pub projected_s: Estimate,
}

impl Candidate<'_> {
    /// Every measurement of it was disturbed by other load.
    pub(crate) fn disturbed(&self) -> bool {
        self.runs.iter().all(|r| r.disturbed)
    }

    /// Why the config's page cache was not the `cache` it asked for in some repeat: a
    /// cold config's files that stayed in it, or a warm config's that could not all be
    /// held there.
    pub(super) fn cache_missed(&self, cache: Cache) -> Option<&str> {
        self.runs.iter().find_map(|r| match cache {
            Cache::Cold => r.stayed_warm.as_deref(),
            Cache::Warm => r.partly_cold.as_deref(),
        })
    }

    pub(super) fn other_load_cores(&self) -> Option<f64> {
        self.runs
            .iter()
            .filter(|r| r.disturbed)
            .filter_map(|r| r.other_load_cores)
            .max_by(f64::total_cmp)
    }

    fn median_of(&self, value: impl Fn(&ConfigResult) -> Option<f64>) -> Option<f64> {
        let values: Vec<f64> = self.runs.iter().filter_map(|r| value(r)).collect();
        stats::median(&values)
    }

    /// The median window its projected epochs were measured in, where any was projected.
    pub(super) fn window_batches(&self) -> Option<usize> {
        let windows: Vec<f64> = self
            .runs
            .iter()
            .flat_map(|r| &r.epochs)
            .filter_map(|e| e.projected.map(|p| p.window_batches as f64))
            .collect();
        stats::median(&windows).map(|w| w.round() as usize)
    }

    pub(super) fn first_epoch_s(&self) -> Option<f64> {
        self.median_of(|r| r.epochs.first().map(|e| e.seconds))
    }

    pub(crate) fn epoch_s(&self) -> Option<f64> {
        self.median_of(typical_epoch_s)
    }

    /// What it costs in memory, the median over its runs (see
    /// [`ConfigResult::memory_bytes`]).
    pub(crate) fn memory_bytes(&self) -> Option<u64> {
        self.median_of(|r| r.memory_bytes().map(|b| b as f64))
            .map(|b| b as u64)
    }
}

/// The median of a repeat's epochs after the first, or the first alone.
fn typical_epoch_s(run: &ConfigResult) -> Option<f64> {
    let later: Vec<f64> = run.epochs.iter().skip(1).map(|e| e.seconds).collect();
    stats::median(&later).or_else(|| run.epochs.first().map(|e| e.seconds))
}

/// One repeat's time for the planned epochs.
pub(crate) fn projected_s(run: &ConfigResult, planned_epochs: usize) -> Option<f64> {
    let first = run.epochs.first()?.seconds;
    Some(first + planned_epochs.saturating_sub(1) as f64 * typical_epoch_s(run)?)
}

/// The projected time of each repeat, by repeat number (the median where a folded no-op
/// twin or a copy measured the same repeat too).
fn by_round<'r>(
    runs: impl IntoIterator<Item = &'r ConfigResult>,
    planned_epochs: usize,
) -> BTreeMap<usize, f64> {
    NoiseInput::by_round(runs, |run| projected_s(run, planned_epochs))
}

/// What the noise model of a question is fitted to: each candidate's rounds, each
/// repeat's later epochs, and an A/A check's copies against their originals.
pub(crate) fn noise_input(
    members: &[&ConfigRuns<'_>],
    candidates: &[Candidate<'_>],
    planned_epochs: usize,
) -> NoiseInput {
    let rounds = candidates
        .iter()
        .map(|c| by_round(c.runs.iter().copied(), planned_epochs))
        .collect();
    let later_epochs = candidates
        .iter()
        .flat_map(|c| &c.runs)
        .map(|r| r.epochs.iter().skip(1).map(|e| e.seconds).collect())
        .collect();
    let mut aa_ratios = Vec::new();
    for copy in members.iter().filter(|m| m.config.copy > 0) {
        let original = members.iter().find(|m| {
            m.config.copy == 0
                && Config {
                    copy: copy.config.copy,
                    ..m.config.clone()
                } == *copy.config
        });
        if let Some(original) = original {
            let originals = by_round(original.runs.iter().copied(), planned_epochs);
            let copies = by_round(copy.runs.iter().copied(), planned_epochs);
            aa_ratios.extend(
                copies
                    .iter()
                    .filter_map(|(round, s)| Some(s / originals.get(round)?)),
            );
        }
    }
    NoiseInput {
        rounds,
        later_epochs,
        aa_ratios,
        others: Vec::new(),
    }
}

/// What measuring the question took: seconds of epochs (a projected one's window),
/// warm-ups included, and rounds (the most repeats any of its configs had). Said as
/// "67 rounds (3.5 s measured)": short epochs spend most of a round's wall time starting
/// processes, so the seconds alone would undersell the rounds behind them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Effort {
    pub seconds: f64,
    pub rounds: usize,
}

impl Effort {
    pub(super) fn of(candidates: &[Candidate<'_>]) -> Self {
        let seconds = candidates
            .iter()
            .flat_map(|c| &c.runs)
            .flat_map(|r| r.warmup.iter().chain(&r.epochs))
            .map(EpochResult::measured_s)
            .sum();
        // Rounds, not measurements: a folded no-op twin or a copy measured the same
        // round as the config it is folded into.
        let rounds = candidates
            .iter()
            .map(|c| {
                c.runs
                    .iter()
                    .map(|r| r.repeat)
                    .collect::<BTreeSet<_>>()
                    .len()
            })
            .max()
            .unwrap_or(0);
        Self { seconds, rounds }
    }
}

impl std::fmt::Display for Effort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural = if self.rounds == 1 { "" } else { "s" };
        let seconds = crate::duration(self.seconds);
        write!(f, "{} round{plural} ({seconds} measured)", self.rounds)
    }
}

/// `config` as the recommendation compares it, `runs` being its measurements: a copy
/// (an A/A check) is the same config measured again, and pin_memory is off where it had
/// no effect. Configs alike in this are one candidate, their repeats pooled.
pub(crate) fn as_compared(config: &Config, runs: &[&ConfigResult]) -> Config {
    let pin_effective = runs.iter().all(|r| r.pin_memory_effective);
    Config {
        pin_memory: config.pin_memory && pin_effective,
        copy: 0,
        ..config.clone()
    }
}

pub(crate) fn candidates<'a>(
    members: &[&ConfigRuns<'a>],
    planned_epochs: usize,
) -> Vec<Candidate<'a>> {
    let estimate = |runs: &[&ConfigResult]| {
        let samples: Vec<f64> = runs
            .iter()
            .filter_map(|r| projected_s(r, planned_epochs))
            .collect();
        Estimate::of(&samples)
    };
    let mut candidates: Vec<Candidate<'a>> = Vec::new();
    for runs in members {
        // Measurements disturbed by other load are set aside where the config has others.
        let kept: Vec<&ConfigResult> = if runs.runs.iter().any(|r| !r.disturbed) {
            runs.runs.iter().copied().filter(|r| !r.disturbed).collect()
        } else {
            runs.runs.clone()
        };
        let set_aside = runs.runs.len() - kept.len();
        let config = as_compared(runs.config, &runs.runs);
        match candidates.iter_mut().find(|c| c.config == config) {
            Some(c) => {
                // A copy is no knob: it only adds repeats.
                let knob_differs = runs.config.copy == 0;
                if knob_differs && runs.config.pin_memory {
                    c.folded.push(runs.label);
                } else if knob_differs {
                    // The config that really lacks the no-op knob names the pair.
                    c.folded.push(c.label);
                    c.index = runs.index;
                    c.label = runs.label;
                }
                c.runs.extend(&kept);
                c.set_aside += set_aside;
                c.projected_s = estimate(&c.runs).unwrap_or(c.projected_s);
            }
            None => {
                if let Some(projected_s) = estimate(&kept) {
                    candidates.push(Candidate {
                        index: runs.index,
                        label: runs.label,
                        config,
                        folded: Vec::new(),
                        runs: kept,
                        set_aside,
                        projected_s,
                    });
                }
            }
        }
    }
    candidates
}
