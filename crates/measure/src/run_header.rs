//! A run's header: what a [`RunResult`] says before anything is measured (made once
//! for runs and tunes, by [`RunResult::starting`], with the secrets of the preset's URLs
//! hidden), and the check of what a results file, a journal or a baseline that was read
//! claims ([`RunResult::check_claims`]): its counts, before anything is sized from them,
//! and each measurement's config, times and counts, before a table or a chart uses them.

use std::path::Path;

use loaderbench_engine::error::{Error, Result};
use loaderbench_engine::machine::Machine;

use crate::results::{RunResult, RunStatus};

/// The longest time a measurement in a results file may hold: 116 days, past any epoch;
/// a larger one is no measurement, and the charts would size their scales by it.
pub const LONGEST_MEASURED_S: f64 = 1e7;

/// The most batches or samples one measured epoch may hold: the range of a preset's
/// `samples`.
const MOST_MEASURED_COUNT: usize = 10_000_000_000;

/// The most measured epochs a results file may claim across its configs and repeats:
/// the app and the tables size their grids by the claimed counts, so a file claiming 10⁹
/// epochs would make them allocate per epoch.
pub const MOST_CLAIMED_EPOCHS: u64 = 10_000_000;

/// Seconds since the Unix epoch by the system clock, as a run's start is written (0 for
/// a clock set before 1970).
pub fn unix_now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl RunResult {
    /// Checks what each measured config of a run read from `path` holds: the config it
    /// names is one of the run's, and its times (what measuring it took, its epochs') and
    /// counts are ones a run gives (times finite, from 0 to [`LONGEST_MEASURED_S`]).
    fn check_measurements(&self, path: &Path) -> Result<()> {
        for (index, result) in self.results.iter().enumerate() {
            let bad = |problem: String| Error::file(path, format!("results[{index}]: {problem}"));
            if result.config_index >= self.configs.len() {
                return Err(bad(format!(
                    "names config {} of a run of {} configs",
                    result.config_index,
                    self.configs.len()
                )));
            }
            // 1e307 as that, not as 308 digits.
            let shown = |value: f64| match value.abs() < 1e9 {
                true => value.to_string(),
                false => format!("{value:e}"),
            };
            let a_time = |value: f64| (0.0..=LONGEST_MEASURED_S).contains(&value);
            if let Some(took) = result.took_s.filter(|&took| !a_time(took)) {
                return Err(bad(format!(
                    "took_s is {}, not a time a run measures (0 to {LONGEST_MEASURED_S:e} s)",
                    shown(took)
                )));
            }
            for epoch in result.warmup.iter().chain(&result.epochs) {
                let times = [
                    ("seconds", epoch.seconds),
                    ("first_batch_s", epoch.first_batch_s),
                ];
                let timeline = epoch
                    .timeline
                    .iter()
                    .map(|batch| ("timeline at_s", batch.at_s));
                let projected = epoch.projected.iter().flat_map(|p| {
                    [
                        ("projected measured_s", p.measured_s),
                        ("projected steady_batch_s", p.steady_batch_s),
                        ("projected plus_minus_s", p.plus_minus_s),
                        ("projected end_s", p.end_s),
                    ]
                });
                for (what, value) in times.into_iter().chain(timeline).chain(projected) {
                    if !a_time(value) {
                        return Err(bad(format!(
                            "epoch {}: {what} is {}, not a time a run measures (0 to \
                             {LONGEST_MEASURED_S:e} s)",
                            epoch.epoch,
                            shown(value)
                        )));
                    }
                }
                for (what, rate) in [
                    ("throughput", epoch.throughput),
                    ("steady_throughput", epoch.steady_throughput),
                ] {
                    if rate.is_nan() || rate < 0.0 {
                        return Err(bad(format!(
                            "epoch {}: {what} is {rate}, not a rate a run measures",
                            epoch.epoch
                        )));
                    }
                }
                for (what, count) in [("batches", epoch.batches), ("samples", epoch.samples)] {
                    if count > MOST_MEASURED_COUNT {
                        return Err(bad(format!(
                            "epoch {}: {what} is {count}, over the {MOST_MEASURED_COUNT} a \
                             run measures",
                            epoch.epoch
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// The run of `plan` as it starts at `started_unix_s`: every config, nothing
    /// measured; what it keeps of the preset has its URLs' secrets hidden.
    pub fn starting(plan: &loaderbench_engine::plan::Plan, started_unix_s: u64) -> RunResult {
        let redact = |text: &str| loaderbench_engine::secrets::redact(text).into_owned();
        RunResult {
            preset: plan.preset.name.clone(),
            dataset: String::new(),
            epochs: plan.preset.epochs,
            repeats: plan.preset.repeats,
            started_unix_s,
            machine: Machine::current(),
            configs: plan.configs.clone(),
            labels: plan.labels(),
            warnings: plan.warnings.iter().map(|w| redact(w)).collect(),
            results: Vec::new(),
            status: RunStatus::Running,
            step: plan.preset.step.clone(),
            planned_epochs: plan.preset.planned_epochs,
            shuffle: plan.preset.shuffle,
            drop_last: plan.preset.drop_last,
            setup: Some(plan.preset.redacted()),
            tune: None,
        }
    }

    /// Checks the counts the run read from `path` claims (epochs, repeats, configs)
    /// before anything is sized from them: each within its preset range, their product
    /// within [`MOST_CLAIMED_EPOCHS`], and one label per config.
    pub fn check_claims(&self, path: &Path) -> Result<()> {
        let count = |field: &str, what: &str, value: usize| {
            loaderbench_engine::plan::check_number(field, what, value as f64)
                .map_err(|err| Error::file(path, format!("claims {err}")))
        };
        count("epochs", "epochs", self.epochs)?;
        count("repeats", "repeats", self.repeats)?;
        count("planned_epochs", "epochs", self.planned_epochs)?;
        if self.labels.len() != self.configs.len() {
            return Err(Error::file(
                path,
                format!(
                    "claims {} labels for {} configs",
                    self.labels.len(),
                    self.configs.len()
                ),
            ));
        }
        self.check_measurements(path)?;
        let claimed = (self.configs.len() as u64)
            .saturating_mul(self.epochs as u64 + 1)
            .saturating_mul(self.repeats as u64);
        if claimed > MOST_CLAIMED_EPOCHS {
            return Err(Error::file(
                path,
                format!(
                    "claims {claimed} epochs ({} configs × {} epochs × {} repeats), over the \
                     {MOST_CLAIMED_EPOCHS} a results file may hold",
                    self.configs.len(),
                    self.epochs,
                    self.repeats
                ),
            ));
        }
        Ok(())
    }
}
