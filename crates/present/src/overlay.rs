//! Several saved runs shown as one, to compare machines or setups side by side: every
//! config keeps the name of the run it comes from (in [`Config::run`] and as a prefix of
//! its label), so the table gains a run column, the plots colour each run alike and the
//! recommendations answer each run's questions separately. Runs from different machines,
//! or with different training steps, get a warning that names each run's; a tune's trail
//! stays with its own run. `loaderbench merge`, `loaderbench report` with several files
//! and the app's overlay all use this one function.

use std::path::Path;

use loaderbench_measure::results::{RunResult, RunStatus};

/// The name each run is shown under: its file's stem, numbered when two are alike.
pub fn run_names(paths: &[&Path]) -> Vec<String> {
    let stems: Vec<String> = paths
        .iter()
        .map(|path| {
            path.file_stem()
                .map_or_else(|| "run".to_owned(), |s| s.to_string_lossy().into_owned())
        })
        .collect();
    stems
        .iter()
        .enumerate()
        .map(|(index, stem)| {
            if stems.iter().filter(|s| *s == stem).count() > 1 {
                format!("{stem} ({})", index + 1)
            } else {
                stem.clone()
            }
        })
        .collect()
}

/// The runs as one; a single run is returned as it is, and no run gives `None`.
pub fn overlay(runs: Vec<(String, RunResult)>) -> Option<RunResult> {
    let mut runs = runs.into_iter();
    let (first_name, first) = runs.next()?;
    let rest: Vec<(String, RunResult)> = runs.collect();
    if rest.is_empty() {
        return Some(first);
    }
    let all: Vec<(String, RunResult)> = std::iter::once((first_name, first)).chain(rest).collect();
    let distinct = |field: fn(&RunResult) -> &str| {
        let mut values: Vec<&str> = Vec::new();
        for (_, run) in &all {
            if !values.contains(&field(run)) {
                values.push(field(run));
            }
        }
        values.join(" + ")
    };
    let mut merged = all[0].1.clone();
    merged.preset = distinct(|r| r.preset.as_str());
    merged.dataset = distinct(|r| r.dataset.as_str());
    merged.epochs = all.iter().map(|(_, r)| r.epochs).max().unwrap_or(0);
    merged.repeats = all.iter().map(|(_, r)| r.repeats).max().unwrap_or(0);
    merged.planned_epochs = all.iter().map(|(_, r)| r.planned_epochs).max().unwrap_or(0);
    merged.started_unix_s = all.iter().map(|(_, r)| r.started_unix_s).min().unwrap_or(0);
    merged.configs.clear();
    merged.labels.clear();
    merged.results.clear();
    merged.warnings = machines_differ(&all).into_iter().collect();
    merged.warnings.extend(steps_differ(&all));
    merged.status = RunStatus::Finished;
    // Several presets ran; none of them sets the overlay up again. A tune's trail is its
    // own run's (what it predicted and eliminated there), no account of the overlay.
    merged.setup = None;
    merged.tune = None;
    for (name, run) in &all {
        let offset = merged.configs.len();
        merged.configs.extend(run.configs.iter().map(|config| {
            let mut config = config.clone();
            config.run = Some(name.clone());
            config
        }));
        merged
            .labels
            .extend(run.labels.iter().map(|label| format!("{name} · {label}")));
        merged.results.extend(run.results.iter().map(|result| {
            let mut result = result.clone();
            result.config_index += offset;
            result.label = format!("{name} · {}", result.label);
            result.config.run = Some(name.clone());
            result
        }));
        merged
            .warnings
            .extend(run.warnings.iter().map(|w| format!("{name}: {w}")));
        if merged.status == RunStatus::Finished {
            merged.status = match &run.status {
                RunStatus::Failed { error } => RunStatus::Failed {
                    error: format!("{name}: {error}"),
                },
                other => other.clone(),
            };
        }
    }
    Some(merged)
}

/// A warning naming each run's training step when they differ: the overlay has one step,
/// the first run's, which the analysis's input-bound and contention verdicts read for
/// every run.
fn steps_differ(runs: &[(String, RunResult)]) -> Option<String> {
    let steps = differing(runs, |r| format!("ran {}", r.step.describe()))?;
    Some(format!(
        "training steps differ: {steps}; the input-bound and contention verdicts read every \
         run as if it ran {}'s (report each run alone for its own)",
        runs[0].0
    ))
}

/// A warning naming each run's machine when they are not all the same machine.
fn machines_differ(runs: &[(String, RunResult)]) -> Option<String> {
    let machines = differing(runs, |r| format!("on {}", r.machine.summary()))?;
    Some(format!(
        "machines differ: {machines}; a difference between runs may be the machine's, not \
         the config's"
    ))
}

/// Each run's name and what `said` of it (`laptop on …; server on …`), where the runs
/// are not all said alike; `None` where they are.
fn differing(runs: &[(String, RunResult)], said: impl Fn(&RunResult) -> String) -> Option<String> {
    let first = said(&runs[0].1);
    if runs.iter().all(|(_, r)| said(r) == first) {
        return None;
    }
    let each: Vec<String> = runs
        .iter()
        .map(|(name, r)| format!("{name} {}", said(r)))
        .collect();
    Some(each.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_analysis::Analysis;
    use loaderbench_measure::fixtures::{config, epoch, result, run};

    fn measured(nw0_s: f64, nw2_s: f64) -> RunResult {
        result(
            vec![config(0, false), config(2, false)],
            vec![
                run(0, config(0, false), vec![epoch(1, 0.1, nw0_s, 4)]),
                run(1, config(2, false), vec![epoch(1, 0.1, nw2_s, 4)]),
            ],
        )
    }

    #[test]
    fn names_are_file_stems_numbered_when_alike() {
        let names = run_names(&[
            Path::new("/a/laptop.json"),
            Path::new("/b/run.json"),
            Path::new("/c/run.jsonl"),
        ]);
        assert_eq!(names, ["laptop", "run (2)", "run (3)"]);
    }

    #[test]
    fn one_run_stays_as_it_is() {
        let alone = measured(0.1, 0.05);
        assert_eq!(overlay(vec![("a".into(), alone.clone())]), Some(alone));
        assert_eq!(overlay(Vec::new()), None);
    }

    #[test]
    fn configs_keep_their_run_and_each_run_gets_its_own_recommendation() {
        let laptop = measured(0.4, 0.1);
        let mut server = measured(0.1, 0.3);
        server.machine.cpu_model = "Xeon".to_owned();
        server.machine.logical_cores = 64;
        let merged = overlay(vec![("laptop".into(), laptop), ("server".into(), server)]).unwrap();
        assert_eq!(
            merged.labels,
            [
                "laptop · nw=0",
                "laptop · nw=2",
                "server · nw=0",
                "server · nw=2"
            ]
        );
        let indices: Vec<usize> = merged.results.iter().map(|r| r.config_index).collect();
        assert_eq!(indices, [0, 1, 2, 3]);
        assert_eq!(merged.configs[3].run.as_deref(), Some("server"));
        let warning = &merged.warnings[0];
        assert!(
            warning.starts_with("machines differ:") && warning.contains("server on Xeon · 64"),
            "{warning}"
        );
        let groups: Vec<(String, Option<usize>)> = Analysis::of(&merged)
            .recommendations
            .into_iter()
            .map(|r| (r.group, r.config))
            .collect();
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert!(groups[0].0.starts_with("laptop: "), "{groups:?}");
        assert!(groups[1].0.starts_with("server: "), "{groups:?}");
    }

    /// The overlay of a tune and a sweep showed the tune's trail as the overlay's ("tune:
    /// 7 configs" over 13), its fates naming configs without their run; and a run with a
    /// training step beside one without was read as the first's step, unsaid.
    #[test]
    fn an_overlay_has_no_tune_trail_and_says_where_the_steps_differ() {
        let mut tuned = measured(0.1, 0.05);
        tuned.tune = Some(loaderbench_measure::tune_trail::TuneTrail {
            budget_s: 60.0,
            used_s: 10.0,
            stop: loaderbench_measure::tune_trail::TuneStop::Settled,
            anchors: vec![0],
            rounds: 2,
            configs: Vec::new(),
        });
        let mut stepped = measured(0.1, 0.05);
        stepped.step = loaderbench_engine::step::StepSpec::Mlp { hidden: 64 };
        let merged = overlay(vec![("tuned".into(), tuned), ("stepped".into(), stepped)]).unwrap();
        assert_eq!(merged.tune, None);
        assert_eq!(
            merged.warnings,
            [
                "training steps differ: tuned ran none; stepped ran mlp 64; the input-bound and \
              contention verdicts read every run as if it ran tuned's (report each run alone \
              for its own)"
            ]
        );
    }

    #[test]
    fn the_same_machine_gives_no_warning_and_a_failed_run_fails_the_overlay() {
        let mut failed = measured(0.1, 0.1);
        failed.status = RunStatus::Failed {
            error: "worker died".to_owned(),
        };
        let merged = overlay(vec![("a".into(), measured(0.1, 0.1)), ("b".into(), failed)]).unwrap();
        assert!(merged.warnings.is_empty(), "{:?}", merged.warnings);
        assert_eq!(
            merged.status,
            RunStatus::Failed {
                error: "b: worker died".to_owned()
            }
        );
    }
}
