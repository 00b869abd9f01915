//! A run's summary: [`RunResult::summary`] folds each config's repeats into one row
//! (medians, with their bootstrap intervals; which epochs were projected), the shape of
//! the classic `num_workers | persistent | pin | first batch | epoch 1 …` table.

use loaderbench_engine::plan::Config;

use crate::results::{ConfigResult, EpochResult, RunResult};
use crate::stats;

/// One config's figures, repeats folded into medians.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    pub config_index: usize,
    pub label: String,
    pub config: Config,
    pub repeats: usize,
    /// First-batch latency of epoch 1.
    pub first_batch_s: Option<f64>,
    /// Time of each epoch (index 0 is epoch 1).
    pub epoch_s: Vec<Option<f64>>,
    pub pin_memory_effective: bool,
    /// The 95% bootstrap interval of each median above, with two repeats or more.
    pub first_batch_interval_s: Option<(f64, f64)>,
    pub epoch_interval_s: Vec<Option<(f64, f64)>>,
    /// Per epoch, whether some repeat's was projected from a window of its batches.
    pub epoch_projected: Vec<bool>,
    /// Some repeat was measured while other load disturbed it.
    pub disturbed: bool,
    /// Bytes read from storage in a typical epoch, and at what rate (medians over
    /// repeats, see [`ConfigResult::typical_epochs`]); `None` where nothing was counted.
    pub read_bytes: Option<f64>,
    pub read_mb_s: Option<f64>,
    /// Why a `cache: cold` config stayed warm, in some repeat.
    pub stayed_warm: Option<String>,
    /// Why a `cache: warm` config's files were not all in the page cache, in some repeat.
    pub partly_cold: Option<String>,
}

impl RunResult {
    /// One row per config that has at least one result, in plan order.
    pub fn summary(&self) -> Vec<SummaryRow> {
        (0..self.configs.len())
            .filter_map(|index| self.summary_row(index))
            .collect()
    }

    fn summary_row(&self, index: usize) -> Option<SummaryRow> {
        let runs: Vec<&ConfigResult> = self
            .results
            .iter()
            .filter(|r| r.config_index == index)
            .collect();
        let first = runs.first()?;
        let epoch_values = |epoch: usize, value: fn(&EpochResult) -> f64| -> Vec<f64> {
            runs.iter()
                .filter_map(|r| r.epochs.get(epoch).map(value))
                .collect()
        };
        let typical = |value: &dyn Fn(&EpochResult) -> Option<f64>| {
            let values: Vec<f64> = runs
                .iter()
                .flat_map(|r| r.typical_epochs().filter_map(value))
                .collect();
            stats::median(&values)
        };
        let interval = |values: Vec<f64>| {
            (runs.len() > 1)
                .then(|| stats::bootstrap_median_interval(&values, 0.95))
                .flatten()
        };
        Some(SummaryRow {
            config_index: index,
            label: first.label.clone(),
            config: first.config.clone(),
            repeats: runs.len(),
            first_batch_s: stats::median(&epoch_values(0, |e| e.first_batch_s)),
            epoch_s: (0..self.epochs)
                .map(|epoch| stats::median(&epoch_values(epoch, |e| e.seconds)))
                .collect(),
            pin_memory_effective: first.pin_memory_effective,
            first_batch_interval_s: interval(epoch_values(0, |e| e.first_batch_s)),
            epoch_interval_s: (0..self.epochs)
                .map(|epoch| interval(epoch_values(epoch, |e| e.seconds)))
                .collect(),
            epoch_projected: (0..self.epochs)
                .map(|epoch| {
                    runs.iter()
                        .any(|r| r.epochs.get(epoch).is_some_and(|e| e.projected.is_some()))
                })
                .collect(),
            disturbed: runs.iter().any(|r| r.disturbed),
            read_bytes: typical(&|e| e.read_bytes.map(|b| b as f64)),
            read_mb_s: typical(&|e| e.read_mb_s),
            stayed_warm: runs.iter().find_map(|r| r.stayed_warm.clone()),
            partly_cold: runs.iter().find_map(|r| r.partly_cold.clone()),
        })
    }
}
