//! A run's header: what a [`RunResult`] says before anything is measured (made once
//! for runs and tunes, by [`RunResult::starting`], with the secrets of the preset's URLs
//! hidden), and the check of what a results file, a journal or a baseline that was read
//! claims ([`RunResult::check_claims`]), made before anything is sized from its counts.

use std::path::Path;

use loaderbench_engine::error::{Error, Result};
use loaderbench_engine::machine::Machine;

use crate::results::{RunResult, RunStatus};

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
