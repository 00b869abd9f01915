//! Baselines: a run's results saved under a name (`NAME.json` in the user data
//! directory's `loaderbench/baselines`, or under `$LOADERBENCH_DATA_DIR` when that is
//! set), and the comparison of a later run against one — per config, matched by equal
//! knobs or else by label (the line then names the knobs that differ), the change of
//! the typical epoch time and its verdict, judged as the recommendation judges (faster
//! or slower beyond the tie margin and the noise, as fast within the margin, or not
//! resolved) from the scatter the two runs' own epochs show: the 95% Welch interval of
//! the difference of their mean log epoch times. A side with a single typical epoch
//! shows no scatter, and its change is not judged: two runs of one config differ by 20%
//! on a noisy machine with nothing changed, so no constant stands in. Nor is a config
//! whose epochs held another number of samples than the baseline's: other work.

use loaderbench_engine::seconds;
use std::fs;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::ConfigEstimate;
use crate::ConfigRuns;
use crate::measured_configs;
use crate::recommend::noise::Relation;
use loaderbench_engine::error::{Error, Result};
use loaderbench_engine::plan::KNOBS_IN_CONFIG_ORDER;
use loaderbench_measure::data_dir;
use loaderbench_measure::results::RunResult;
use loaderbench_measure::results_file;
use loaderbench_measure::stats;

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

/// Where a baseline was saved, and whether it took the place of one of that name.
#[derive(Debug, Clone, PartialEq)]
pub struct Saved {
    pub path: PathBuf,
    pub replaced: bool,
}

impl Saved {
    /// What to say after the name where it took another's place.
    pub fn replacing(&self) -> &'static str {
        if self.replaced {
            " (in place of the one saved before)"
        } else {
            ""
        }
    }
}

/// Saves `result` as baseline `name`, replacing any baseline of that name.
pub fn save(name: &str, result: &RunResult) -> Result<Saved> {
    let path = path(name)?;
    let replaced = path.exists();
    let dir = path
        .parent()
        .ok_or_else(|| Error::file(&path, "no parent directory"))?;
    fs::create_dir_all(dir).map_err(|err| Error::io(dir, err))?;
    let mut bytes =
        serde_json::to_vec_pretty(result).map_err(|err| Error::run_caused(err.to_string(), err))?;
    bytes.push(b'\n');
    loaderbench_engine::atomic_file::write(&path, &bytes)?;
    Ok(Saved { path, replaced })
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
    pub verdict: ChangeVerdict,
    /// Where the configs were matched by label only, each knob whose value differs:
    /// `batch_size 256, then 512`.
    pub knobs_differ: Vec<String>,
}

/// What a change is, against the scatter of the two runs' typical epochs and the run's
/// tie margin, as the recommendation's [`Relation`] says it. Each interval is the
/// half-width of the change's 95% interval, as a share (0.03 for ±3%).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ChangeVerdict {
    /// The whole interval lies beyond the tie margin: faster or slower.
    Beyond { interval: f64 },
    /// The whole interval lies within ±`margin`: as fast.
    Same { interval: f64, margin: f64 },
    /// Neither: more epochs or repeats would settle it.
    NotResolved { interval: f64 },
    /// A side has one typical epoch: no scatter to judge by.
    NotJudged,
    /// The sides' epochs held different numbers of samples (`samples`, or another
    /// dataset): their times measure different work.
    OtherWork { before: usize, after: usize },
}

impl Change {
    /// `nw=4: 1.23 s, then 1.10 s (-10.6%): faster, beyond the noise (±3.1%)`.
    pub fn line(&self) -> String {
        let percent = |share: f64| share * 100.0;
        let verdict = match self.verdict {
            ChangeVerdict::Beyond { interval } => format!(
                "{}, beyond the noise (±{:.1}%)",
                if self.change < 0.0 {
                    "faster"
                } else {
                    "slower"
                },
                percent(interval)
            ),
            ChangeVerdict::Same { interval, margin } => format!(
                "as fast, within ±{}% (measured to ±{:.1}%)",
                percent(margin),
                percent(interval)
            ),
            ChangeVerdict::NotResolved { interval } => format!(
                "not resolved (±{:.1}%): measure more epochs or repeats",
                percent(interval)
            ),
            ChangeVerdict::NotJudged => "not judged: one typical epoch on a side shows no \
                scatter; measure three epochs or more (`--set epochs=4`)"
                .to_owned(),
            ChangeVerdict::OtherWork { before, after } => format!(
                "not judged: an epoch held {before} samples in the baseline and {after} now, \
                 so their times measure different work; measure with the baseline's \
                 `samples`"
            ),
        };
        let differ = if self.knobs_differ.is_empty() {
            String::new()
        } else {
            format!("; not the same config: {}", self.knobs_differ.join(", "))
        };
        format!(
            "{}: {} s, then {} s ({:+.1}%): {verdict}{differ}",
            self.label,
            seconds(self.before.epoch_s.median),
            seconds(self.after.epoch_s.median),
            percent(self.change)
        )
    }
}

/// Each config of `current` that `baseline` also measured, in `current`'s order, judged
/// against `current`'s tie margin.
pub fn compare(baseline: &RunResult, current: &RunResult) -> Vec<Change> {
    let margin = crate::recommend::tie_margin(current);
    let before = measured_configs(baseline);
    measured_configs(current)
        .iter()
        .filter_map(|now| change(matching(&before, now)?, now, margin))
        .collect()
}

/// What [`compare`] cannot pair, one line each side: the configs of `current` that
/// `baseline` did not measure (`not in the baseline: nw=8`) and those of `baseline` no
/// config of `current` matches (`in the baseline only: nw=1`); none when all pair up.
pub fn unmatched(baseline: &RunResult, current: &RunResult) -> Vec<String> {
    let (before, now) = (measured_configs(baseline), measured_configs(current));
    fn alone(side: &[ConfigRuns<'_>], other: &[ConfigRuns<'_>]) -> String {
        let side = side.iter().filter(|runs| matching(other, runs).is_none());
        side.map(|runs| runs.label).collect::<Vec<_>>().join(", ")
    }
    [
        ("not in the baseline", alone(&now, &before)),
        ("in the baseline only", alone(&before, &now)),
    ]
    .into_iter()
    .filter(|(_, labels)| !labels.is_empty())
    .map(|(what, labels)| format!("{what}: {labels}"))
    .collect()
}

/// The config of `other` that `runs` is compared with: the one with equal knobs, else
/// the one with the same label.
fn matching<'a, 'r>(
    other: &'a [ConfigRuns<'r>],
    runs: &ConfigRuns<'_>,
) -> Option<&'a ConfigRuns<'r>> {
    other
        .iter()
        .find(|o| o.config == runs.config)
        .or_else(|| other.iter().find(|o| o.label == runs.label))
}

fn change(then: &ConfigRuns<'_>, now: &ConfigRuns<'_>, margin: f64) -> Option<Change> {
    let (before, after) = (then.estimate()?, now.estimate()?);
    let logs = |runs: &ConfigRuns<'_>| -> Vec<f64> {
        runs.typical_epochs()
            .map(|e| e.seconds.ln())
            .filter(|l| l.is_finite())
            .collect()
    };
    let samples = |runs: &ConfigRuns<'_>| runs.typical_epochs().map(|e| e.samples).max();
    let verdict = match (samples(then), samples(now)) {
        (Some(before), Some(after)) if before != after => {
            ChangeVerdict::OtherWork { before, after }
        }
        _ => judge(&logs(then), &logs(now), margin),
    };
    let knobs_differ = KNOBS_IN_CONFIG_ORDER
        .iter()
        .filter_map(|knob| {
            let (was, is) = ((knob.value)(then.config), (knob.value)(now.config));
            (was != is).then(|| format!("{} {was}, then {is}", knob.field))
        })
        .collect();
    Some(Change {
        config: now.index,
        label: now.label.to_owned(),
        change: after.epoch_s.median / before.epoch_s.median - 1.0,
        before,
        after,
        verdict,
        knobs_differ,
    })
}

/// The verdict on the change from log epoch times `before` to `after`: Welch's 95%
/// interval of the difference of their means, against ±`margin`.
fn judge(before: &[f64], after: &[f64], margin: f64) -> ChangeVerdict {
    let (Some((mean_b, var_b)), Some((mean_a, var_a))) = (moments(before), moments(after)) else {
        return ChangeVerdict::NotJudged;
    };
    let (share_b, share_a) = (var_b / before.len() as f64, var_a / after.len() as f64);
    let se = (share_b + share_a).sqrt();
    // Welch–Satterthwaite; identical values on both sides leave no scatter at all.
    let df = if se > 0.0 {
        let parts = share_b.powi(2) / (before.len() - 1) as f64
            + share_a.powi(2) / (after.len() - 1) as f64;
        (se.powi(4) / parts).floor() as usize
    } else {
        before.len() + after.len() - 2
    };
    let half = stats::t_975(df.max(1)).unwrap_or(f64::INFINITY) * se;
    let interval = half.exp() - 1.0;
    match Relation::of(mean_b - mean_a, Some(half), margin.max(0.0).ln_1p()) {
        Relation::Faster | Relation::Slower => ChangeVerdict::Beyond { interval },
        Relation::Tie => ChangeVerdict::Same { interval, margin },
        Relation::Open => ChangeVerdict::NotResolved { interval },
    }
}

/// The mean and the sample variance of `values`; `None` for fewer than two.
fn moments(values: &[f64]) -> Option<(f64, f64)> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, variance))
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_measure::fixtures::{config, each_once, result, run, two_epochs};

    fn measured(batch_s: &[f64]) -> RunResult {
        let runs = batch_s
            .iter()
            .map(|b| run(0, config(2, false), two_epochs(0.1, *b, 11)))
            .collect();
        result(vec![config(2, false)], runs)
    }

    #[test]
    fn a_clear_speed_up_is_faster_beyond_the_noise() {
        let before = measured(&[0.10, 0.101, 0.099]);
        let after = measured(&[0.05, 0.051, 0.049]);
        let changes = compare(&before, &after);
        assert_eq!(changes.len(), 1);
        assert!(
            matches!(changes[0].verdict, ChangeVerdict::Beyond { .. }),
            "{:?}",
            changes[0].verdict
        );
        assert!(changes[0].change < -0.4, "{}", changes[0].change);
        let line = changes[0].line();
        assert!(
            line.starts_with("nw=2: 1.10 s, then 0.60 s (-45."),
            "{line}"
        );
        assert!(line.contains("): faster, beyond the noise (±"), "{line}");
    }

    /// Millisecond epochs read as milliseconds: `0.0044 s`, not `0.00 s` (which every
    /// line of seed-light's baseline said).
    #[test]
    fn millisecond_epochs_keep_their_digits() {
        let measured = |batch_s: f64| {
            let runs = vec![run(0, config(2, false), two_epochs(0.0004, batch_s, 11))];
            result(vec![config(2, false)], runs)
        };
        let line = compare(&measured(0.0004), &measured(0.0002))[0].line();
        assert!(
            line.starts_with("nw=2: 0.0044 s, then 0.0024 s (-45."),
            "{line}"
        );
    }

    /// Log times of `seconds`, each scaled by `factor`.
    fn logs(seconds: &[f64], factor: f64) -> Vec<f64> {
        seconds.iter().map(|s| (s * factor).ln()).collect()
    }

    const TIGHT: [f64; 5] = [1.00, 1.01, 0.99, 1.00, 1.005];
    const LOOSE: [f64; 3] = [1.0, 1.3, 0.8];

    #[test]
    fn a_12_percent_gain_measured_tightly_is_a_gain() {
        let verdict = judge(&logs(&TIGHT, 1.0), &logs(&TIGHT, 0.88), 0.05);
        let ChangeVerdict::Beyond { interval } = verdict else {
            panic!("{verdict:?}");
        };
        assert!(interval < 0.02, "{interval}");
    }

    #[test]
    fn a_12_percent_gain_measured_loosely_is_not_resolved() {
        let verdict = judge(&logs(&LOOSE, 1.0), &logs(&LOOSE, 0.88), 0.05);
        let ChangeVerdict::NotResolved { interval } = verdict else {
            panic!("{verdict:?}");
        };
        assert!(interval > 0.12, "{interval}");
    }

    #[test]
    fn a_2_percent_change_measured_tightly_is_as_fast_within_the_margin() {
        let tight = [1.000, 1.002, 0.998, 1.001, 0.999];
        let verdict = judge(&logs(&tight, 1.0), &logs(&tight, 1.02), 0.05);
        assert!(
            matches!(verdict, ChangeVerdict::Same { margin, .. } if margin == 0.05),
            "{verdict:?}"
        );
        let verdict = judge(&logs(&tight, 1.0), &logs(&tight, 1.02), 0.01);
        assert!(
            matches!(verdict, ChangeVerdict::Beyond { .. }),
            "past a 1% margin: {verdict:?}"
        );
    }

    #[test]
    fn one_typical_epoch_on_a_side_is_not_judged() {
        let before = measured(&[0.1]);
        let after = measured(&[0.2]);
        let change = &compare(&before, &after)[0];
        assert_eq!(change.verdict, ChangeVerdict::NotJudged);
        assert!(
            change.line().ends_with("(+90.9%): not judged: one typical epoch on a side shows no scatter; measure three epochs or more (`--set epochs=4`)"),
            "{}",
            change.line()
        );
        assert_eq!(
            judge(&logs(&TIGHT, 1.0), &logs(&[1.0], 1.0), 0.05),
            ChangeVerdict::NotJudged
        );
    }

    /// Epochs of different sizes are not compared: a baseline of whole epochs against a
    /// run with `samples` set was "-94.5%".
    #[test]
    fn epochs_of_other_sizes_are_not_judged() {
        let before = measured(&[0.1, 0.1, 0.1]);
        let mut after = measured(&[0.05, 0.05, 0.05]);
        for epoch in after.results.iter_mut().flat_map(|r| &mut r.epochs) {
            epoch.samples /= 2;
        }
        let change = &compare(&before, &after)[0];
        let (before, after) = (
            before.results[0].epochs[1].samples,
            after.results[0].epochs[1].samples,
        );
        assert_eq!(change.verdict, ChangeVerdict::OtherWork { before, after });
        assert!(
            change.line().ends_with(&format!(
                "(-45.5%): not judged: an epoch held {before} samples in the baseline and \
                 {after} now, so their times measure different work; measure with the \
                 baseline's `samples`"
            )),
            "{}",
            change.line()
        );
    }

    #[test]
    fn configs_match_by_knobs_then_label() {
        let before = measured(&[0.1]);
        let mut after = measured(&[0.104]);
        after.configs[0].prefetch_factor = 4;
        after.results[0].config.prefetch_factor = 4;
        let changes = compare(&before, &after);
        assert_eq!(changes.len(), 1, "matched by the label nw=2");
        assert_eq!(changes[0].knobs_differ, ["prefetch_factor 2, then 4"]);
        assert!(
            changes[0]
                .line()
                .ends_with("; not the same config: prefetch_factor 2, then 4"),
            "{}",
            changes[0].line()
        );
        assert!(compare(&before, &before)[0].knobs_differ.is_empty());
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

    /// Configs on one side alone are named, each side in its line; a run that pairs up
    /// whole has none.
    #[test]
    fn configs_on_one_side_alone_are_named() {
        let side = |workers: &[usize]| {
            let configs = workers.iter().map(|&w| config(w, false)).collect();
            each_once(configs, || two_epochs(0.1, 0.1, 11))
        };
        assert_eq!(
            unmatched(&side(&[0, 1, 2]), &side(&[0, 2, 4, 8])),
            [
                "not in the baseline: nw=4, nw=8",
                "in the baseline only: nw=1"
            ]
        );
        assert!(unmatched(&side(&[0, 2]), &side(&[2, 0])).is_empty());
    }
}
