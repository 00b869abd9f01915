//! Baselines: a run's results saved under a name (`NAME.json` in the user data
//! directory's `loaderbench/baselines`, or under `$LOADERBENCH_DATA_DIR` when that is
//! set), and the comparison of a later run against one — per config, matched by equal
//! knobs or else by label, the change of the typical epoch time and whether it is
//! beyond the noise.

use std::fs;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::ConfigEstimate;
use crate::ConfigRuns;
use crate::measured_configs;
use loaderbench_engine::error::{Error, Result};
use loaderbench_measure::data_dir;
use loaderbench_measure::results::RunResult;
use loaderbench_measure::results_file;

/// Below this change, a comparison of single measurements (which carry no noise
/// estimate) counts as noise.
pub const SINGLE_MEASUREMENT_NOISE: f64 = 0.05;

/// The file of baseline `name`; names are letters, digits, `-`, `_` and `.`.
pub fn path(name: &str) -> Result<PathBuf> {
    let valid = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !valid {
        return Err(Error::value(format!(
            "baseline name `{name}`: use letters, digits, `-`, `_` and `.` (not first)"
        )));
    }
    Ok(data_dir().join("baselines").join(format!("{name}.json")))
}

/// Saves `result` as baseline `name`, replacing any baseline of that name.
pub fn save(name: &str, result: &RunResult) -> Result<PathBuf> {
    let path = path(name)?;
    let dir = path
        .parent()
        .ok_or_else(|| Error::file(&path, "no parent directory"))?;
    fs::create_dir_all(dir).map_err(|err| Error::io(dir, err))?;
    let mut bytes =
        serde_json::to_vec_pretty(result).map_err(|err| Error::run_caused(err.to_string(), err))?;
    bytes.push(b'\n');
    loaderbench_engine::atomic_file::write(&path, &bytes)?;
    Ok(path)
}

/// Loads baseline `name`.
pub fn load(name: &str) -> Result<RunResult> {
    let path = path(name)?;
    if !path.exists() {
        let known = names();
        return Err(Error::file(
            &path,
            format!(
                "no baseline named `{name}` (saved: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ),
        ));
    }
    results_file::read(&path)
}

/// The saved baselines' names, sorted.
pub fn names() -> Vec<String> {
    let Ok(entries) = fs::read_dir(data_dir().join("baselines")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".json")?;
            (!stem.starts_with('.')).then(|| stem.to_owned())
        })
        .collect();
    names.sort();
    names
}

/// One config's typical epoch time now and in the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub config: usize,
    pub label: String,
    pub before: ConfigEstimate,
    pub after: ConfigEstimate,
    /// `after / before − 1` of the medians: negative is faster.
    pub change: f64,
    /// The 95% intervals do not overlap (two or more measurements on each side), or the
    /// change exceeds the larger spread (and [`SINGLE_MEASUREMENT_NOISE`] for single
    /// measurements).
    pub beyond_noise: bool,
}

impl Change {
    /// `nw=4: 1.23 s, then 1.10 s (-10.6%), beyond the noise`.
    pub fn line(&self) -> String {
        format!(
            "{}: {:.2} s, then {:.2} s ({:+.1}%), {}",
            self.label,
            self.before.epoch_s.median,
            self.after.epoch_s.median,
            self.change * 100.0,
            if self.beyond_noise {
                "beyond the noise"
            } else {
                "within the noise"
            }
        )
    }
}

/// Each config of `current` that `baseline` also measured, in `current`'s order.
pub fn compare(baseline: &RunResult, current: &RunResult) -> Vec<Change> {
    let before = measured_configs(baseline);
    measured_configs(current)
        .iter()
        .filter_map(|now| {
            let then = before
                .iter()
                .find(|b| b.config == now.config)
                .or_else(|| before.iter().find(|b| b.label == now.label))?;
            change(then, now)
        })
        .collect()
}

fn change(then: &ConfigRuns<'_>, now: &ConfigRuns<'_>) -> Option<Change> {
    let (before, after) = (then.estimate()?, now.estimate()?);
    let (b, a) = (&before.epoch_s, &after.epoch_s);
    let change = a.median / b.median - 1.0;
    let beyond_noise = if b.n >= 2 && a.n >= 2 {
        a.differs_from(b) && change.abs() > b.spread.max(a.spread)
    } else {
        change.abs() > b.spread.max(a.spread).max(SINGLE_MEASUREMENT_NOISE)
    };
    Some(Change {
        config: now.index,
        label: now.label.to_owned(),
        before,
        after,
        change,
        beyond_noise,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_measure::fixtures::{config, result, run, two_epochs};

    fn measured(batch_s: &[f64]) -> RunResult {
        let runs = batch_s
            .iter()
            .map(|b| run(0, config(2, false), two_epochs(0.1, *b, 11)))
            .collect();
        result(vec![config(2, false)], runs)
    }

    #[test]
    fn a_clear_speed_up_is_beyond_the_noise() {
        let before = measured(&[0.10, 0.101, 0.099]);
        let after = measured(&[0.05, 0.051, 0.049]);
        let changes = compare(&before, &after);
        assert_eq!(changes.len(), 1);
        assert!(changes[0].beyond_noise);
        assert!(changes[0].change < -0.4, "{}", changes[0].change);
        assert!(
            changes[0]
                .line()
                .starts_with("nw=2: 1.10 s, then 0.60 s (-45."),
            "{}",
            changes[0].line()
        );
    }

    #[test]
    fn overlapping_repeats_are_within_the_noise() {
        let before = measured(&[0.10, 0.12, 0.09]);
        let after = measured(&[0.11, 0.095, 0.105]);
        assert!(!compare(&before, &after)[0].beyond_noise);
    }

    #[test]
    fn configs_match_by_knobs_then_label() {
        let before = measured(&[0.1]);
        let mut after = measured(&[0.104]);
        after.configs[0].prefetch_factor = 4;
        after.results[0].config.prefetch_factor = 4;
        let changes = compare(&before, &after);
        assert_eq!(changes.len(), 1, "matched by the label nw=2");
        assert!(
            !changes[0].beyond_noise,
            "a 3.6% change of one measurement is noise"
        );
        after.labels[0] = "nw=2 prefetch=4".to_owned();
        assert!(compare(&before, &after).is_empty());
    }

    #[test]
    fn names_are_checked() {
        assert!(path("nightly-2024.1").is_ok());
        for bad in ["", "../x", ".hidden", "a/b", "a b"] {
            let err = path(bad).unwrap_err();
            assert!(err.is_bad_input() && err.to_string().contains("baseline name"));
        }
    }
}
