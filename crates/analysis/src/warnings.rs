//! The warnings a finished run's measurements call for: a noisy config (epoch times
//! spread widely), a first epoch much slower than the rest, ranks far apart, an epoch
//! measured whole because its window never steadied, and configs measured while other
//! load disturbed them (or no meter to tell). They are shown, never acted on. More
//! workers than cores is known before the run and warned about by the plan, so it is not
//! repeated here.

use loaderbench_engine::seconds;
use loaderbench_measure::results::{EpochResult, RunResult};

use loaderbench_measure::disturbance::DISTURBED_LOAD_CORES;
use loaderbench_measure::stats;

use super::{ConfigRuns, measured_configs};

/// Epoch times whose range exceeds this share of their median make a config noisy.
pub const NOISY_SPREAD: f64 = 0.2;

/// A first epoch this many times the median of the later ones is "much slower".
pub const SLOW_FIRST_EPOCH: f64 = 1.5;

/// Differences smaller than this are within timer and scheduler noise, and invisible in
/// tables of seconds with two decimals: they are not warned about, whatever the ratio.
pub const NEGLIGIBLE_S: f64 = 0.02;

/// Ranks whose epochs differ by more than this share of the epoch are uneven.
pub const UNEVEN_RANKS: f64 = 0.25;

/// Adds to a run's result the warnings its measurements call for, and returns them for
/// the front end to show (those not already there): the runner measures, its consumer
/// (the CLI, the app) judges. A warning of this module's that the measurements no longer
/// call for goes: one attached after the sweep, over 4 measurements of a config, gives
/// way to the one over all 22 once resolving has measured more (both stood in the
/// saved run, with their different figures), or to none where the config steadied.
pub fn attach(result: &mut RunResult) -> Vec<String> {
    let judged = warnings(result);
    result
        .warnings
        .retain(|w| !is_judgement(w) || judged.contains(w));
    let found: Vec<String> = judged
        .into_iter()
        .filter(|w| !result.warnings.contains(w))
        .collect();
    result.warnings.extend(found.iter().cloned());
    found
}

/// Whether `warning` is one [`warnings`] makes: a judgement of the measurements, not
/// something the runner or the plan found.
fn is_judgement(warning: &str) -> bool {
    const STARTS: [&str; 5] = [
        "noisy: ",
        "first epoch slower",
        "uneven ranks: ",
        "disturbed: ",
        "outside load was not measured: ",
    ];
    STARTS.iter().any(|start| warning.starts_with(start)) || warning.contains(": measured whole: ")
}

/// Every warning for `result`, one sentence each.
pub fn warnings(result: &RunResult) -> Vec<String> {
    let configs = measured_configs(result);
    let mut warnings: Vec<String> = configs.iter().filter_map(noisy).collect();
    warnings.extend(slow_first_epochs(&configs));
    warnings.extend(configs.iter().filter_map(uneven_ranks));
    warnings.extend(configs.iter().filter_map(measured_whole));
    warnings.extend(disturbed(result));
    warnings
}

/// A config whose epochs were to be cut after their window but were measured whole,
/// with why (its window slowed down).
fn measured_whole(runs: &ConfigRuns<'_>) -> Option<String> {
    let why = runs.epochs().find_map(|e| e.whole_because.as_deref())?;
    Some(format!("{}: {why}", runs.label))
}

fn noisy(runs: &ConfigRuns<'_>) -> Option<String> {
    let estimate = runs.estimate()?.epoch_s;
    let range = estimate.max - estimate.min;
    (estimate.n >= 2 && estimate.spread > NOISY_SPREAD && range >= NEGLIGIBLE_S).then(|| {
        format!(
            "noisy: {} epoch times range from {} to {} s, {:.0}% of their median {} s, \
             over {} measurements; close other programs or add repeats before trusting \
             small differences",
            runs.label,
            seconds(estimate.min),
            seconds(estimate.max),
            estimate.spread * 100.0,
            seconds(estimate.median),
            estimate.n
        )
    })
}

/// The configs whose first epoch took much longer than their later ones, one warning
/// per cause (workers that persist start in it; otherwise caches and allocators warm
/// up): a wide tune's dozen persistent configs made a dozen lines of one sentence.
fn slow_first_epochs(configs: &[ConfigRuns<'_>]) -> Vec<String> {
    let mut by_cause: Vec<(&str, Vec<String>)> = Vec::new();
    for runs in configs {
        let Some((first, later)) = slow_first_epoch(runs) else {
            continue;
        };
        let cause = if runs.config.persistent_workers && runs.config.num_workers > 0 {
            "persistent workers start only in the first epoch"
        } else {
            "caches and allocators warm up in the first epoch"
        };
        let slow = format!(
            "{} took {} s in epoch 1 but {} s (median) in later epochs, {:.1}×",
            runs.label,
            seconds(first),
            seconds(later),
            first / later
        );
        match by_cause.iter_mut().find(|(c, _)| *c == cause) {
            Some((_, slows)) => slows.push(slow),
            None => by_cause.push((cause, vec![slow])),
        }
    }
    by_cause
        .into_iter()
        .map(|(cause, slows)| match slows.as_slice() {
            [one] => {
                format!("first epoch slower: {one} ({cause}); set `warmup: true` to leave it out")
            }
            many => format!(
                "first epoch slower in {} configs ({cause}): {}; set `warmup: true` to \
                 leave it out",
                many.len(),
                many.join("; ")
            ),
        })
        .collect()
}

/// A config's first epoch and its later ones (medians), where the first took much
/// longer.
fn slow_first_epoch(runs: &ConfigRuns<'_>) -> Option<(f64, f64)> {
    if !runs.has_later_epochs() {
        return None;
    }
    let first: Vec<f64> = runs.first_epochs().map(|e| e.seconds).collect();
    let later: Vec<f64> = runs.typical_epochs().map(|e| e.seconds).collect();
    let (first, later) = (stats::median(&first)?, stats::median(&later)?);
    (first > SLOW_FIRST_EPOCH * later && first - later >= NEGLIGIBLE_S).then_some((first, later))
}

/// A config whose ranks finish far apart: the faster ones wait at every barrier.
fn uneven_ranks(runs: &ConfigRuns<'_>) -> Option<String> {
    let epochs: Vec<&EpochResult> = runs
        .typical_epochs()
        .filter(|e| !e.ranks.is_empty())
        .collect();
    let spread = stats::median(&epochs.iter().map(|e| e.rank_spread_s()).collect::<Vec<_>>())?;
    let epoch = stats::median(&epochs.iter().map(|e| e.seconds).collect::<Vec<_>>())?;
    (spread > UNEVEN_RANKS * epoch && spread >= NEGLIGIBLE_S).then(|| {
        format!(
            "uneven ranks: in {} the fastest rank finished {} s before the slowest ({:.0}% \
             of the {} s epoch, median) and waited at the barrier; the ranks compete for \
             the same cores",
            runs.label,
            seconds(spread),
            spread / epoch * 100.0,
            seconds(epoch)
        )
    })
}

/// One warning naming every config measured while other load disturbed it (with how
/// many of its repeats and how much load), or saying that the platform gave the meter
/// no counters.
fn disturbed(result: &RunResult) -> Option<String> {
    if result.results.is_empty() {
        return None;
    }
    if result.results.iter().all(|r| r.other_load_cores.is_none()) {
        return Some(
            "outside load was not measured: this platform gives the interference meter no \
             CPU counters, so a busy machine cannot be told from a slow config"
                .to_owned(),
        );
    }
    // Per config, in the grid's order: how many of its repeats were disturbed, and by
    // how much load (a long resolve can disturb dozens; one line each would bury the rest).
    let mut disturbed: Vec<String> = Vec::new();
    for config in 0..result.configs.len() {
        let runs: Vec<_> = result
            .results
            .iter()
            .filter(|r| r.config_index == config)
            .collect();
        let loads: Vec<f64> = runs
            .iter()
            .filter(|r| r.disturbed)
            .map(|r| r.other_load_cores.unwrap_or(0.0))
            .collect();
        let (Some(first), Some(label)) = (loads.first(), runs.first().map(|r| &r.label)) else {
            continue;
        };
        let low = loads.iter().copied().fold(f64::INFINITY, f64::min);
        let high = loads.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        disturbed.push(match (runs.len(), loads.len()) {
            (1, _) => format!("{label} ({first:.2} cores)"),
            (of, 1) => {
                let repeat = runs.iter().position(|r| r.disturbed).unwrap_or(0) + 1;
                format!("{label} (repeat {repeat} of {of}, {first:.2} cores)")
            }
            (of, n) => format!("{label} ({n} of {of} repeats, {low:.2}–{high:.2} cores)"),
        });
    }
    (!disturbed.is_empty()).then(|| {
        format!(
            "disturbed: {} measured while other programs kept more than {} cores busy; \
             their times are slower than this machine can do, so re-run on a quiet machine",
            disturbed.join(", "),
            DISTURBED_LOAD_CORES
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_measure::fixtures::{config, each_once, epoch, result, run, two_epochs};

    #[test]
    fn a_steady_run_has_no_warnings() {
        let r = result(
            vec![config(0, false), config(2, false)],
            vec![
                run(0, config(0, false), two_epochs(0.1, 0.1, 10)),
                run(1, config(2, false), two_epochs(0.1, 0.05, 10)),
            ],
        );
        assert_eq!(warnings(&r), Vec::<String>::new());
    }

    #[test]
    fn wide_spread_across_repeats_is_noisy() {
        let noisy_repeats =
            [0.1, 0.15, 0.1].map(|batch_s| run(0, config(0, false), two_epochs(0.1, batch_s, 10)));
        let r = result(vec![config(0, false)], noisy_repeats.to_vec());
        let found = warnings(&r);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("noisy: nw=0"), "{}", found[0]);
        assert!(found[0].contains("over 3 measurements"), "{}", found[0]);
    }

    #[test]
    fn attaching_after_more_measurements_replaces_what_fewer_called_for() {
        let repeats = |batches: &[f64]| {
            batches
                .iter()
                .map(|&batch_s| run(0, config(0, false), two_epochs(0.1, batch_s, 10)))
                .collect::<Vec<_>>()
        };
        let mut r = result(vec![config(0, false)], repeats(&[0.1, 0.15]));
        r.warnings
            .push("num_workers goes up to 4 but this machine has 2 logical cores".into());
        let swept = attach(&mut r);
        assert!(swept[0].contains("over 2 measurements"), "{swept:?}");
        // Resolving measured it twelve times more, and the spread stands.
        r.results.extend(repeats(&[0.1; 12]));
        r.results
            .push(run(0, config(0, false), two_epochs(0.1, 0.15, 10)));
        let resolved = attach(&mut r);
        assert!(resolved[0].contains("over 15 measurements"), "{resolved:?}");
        assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
        assert!(r.warnings[0].starts_with("num_workers goes up to 4"));
        assert_eq!(r.warnings[1], resolved[0]);
        // Measured steady since: the noisy warning goes, the plan's stays.
        r.results = repeats(&[0.1; 20]);
        assert_eq!(attach(&mut r), Vec::<String>::new());
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    }

    #[test]
    fn every_warning_made_here_is_known_as_a_judgement() {
        let mut slow = two_epochs(0.5, 0.1, 10);
        slow[0].whole_because = Some("measured whole: it slowed through its window".into());
        let mut disturbed = run(1, config(2, false), slow.clone());
        disturbed.disturbed = true;
        disturbed.other_load_cores = Some(1.5);
        let mut r = result(
            vec![config(0, false), config(2, false)],
            vec![
                run(0, config(0, false), two_epochs(0.1, 0.1, 10)),
                run(0, config(0, false), two_epochs(0.1, 0.2, 10)),
                disturbed,
            ],
        );
        r.results[0].other_load_cores = Some(0.0);
        let found = warnings(&r);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found.iter().all(|w| is_judgement(w)), "{found:?}");
        for result in &mut r.results {
            result.other_load_cores = None;
        }
        let unmetered = warnings(&r);
        assert!(unmetered.iter().all(|w| is_judgement(w)), "{unmetered:?}");
    }

    #[test]
    fn negligible_differences_are_not_warned_about() {
        let tiny = [0.001, 0.002, 0.001].map(|batch_s| {
            run(
                0,
                config(0, false),
                vec![epoch(1, 0.01, batch_s, 5), epoch(2, 0.001, batch_s, 5)],
            )
        });
        let r = result(vec![config(0, false)], tiny.to_vec());
        assert_eq!(warnings(&r), Vec::<String>::new());
    }

    #[test]
    fn ranks_far_apart_are_uneven() {
        let ranked = |seconds: [f64; 2]| {
            let mut epoch = epoch(1, 0.1, 0.1, 10);
            epoch.ranks = seconds
                .iter()
                .enumerate()
                .map(|(rank, &seconds)| loaderbench_measure::results::RankEpoch {
                    rank,
                    seconds,
                    first_batch_s: 0.1,
                    stall_s: 0.0,
                    samples: 320,
                    started_unix_s: 0.0,
                    finished_unix_s: seconds,
                })
                .collect();
            let mut config = config(0, false);
            config.ranks = 2;
            warnings(&result(
                vec![config.clone()],
                vec![run(0, config, vec![epoch])],
            ))
        };
        let found = ranked([0.4, 1.0]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("uneven ranks: in nw=0 the fastest rank finished 0.60 s"));
        assert!(ranked([0.95, 1.0]).is_empty());
    }

    #[test]
    fn a_slow_first_epoch_is_named_with_the_ratio() {
        let r = result(
            vec![config(4, true)],
            vec![run(
                0,
                config(4, true),
                vec![
                    epoch(1, 2.0, 0.1, 10),
                    epoch(2, 0.1, 0.1, 10),
                    epoch(3, 0.1, 0.1, 10),
                ],
            )],
        );
        let found = warnings(&r);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("first epoch slower: nw=4 persistent took 2.90 s"));
        assert!(found[0].contains("2.9×") && found[0].contains("persistent workers start"));
    }

    /// Several configs slow for one cause are one warning, naming each; another cause
    /// is a warning of its own.
    #[test]
    fn slow_first_epochs_of_one_cause_are_one_warning() {
        let slow = || {
            vec![
                epoch(1, 2.0, 0.1, 10),
                epoch(2, 0.1, 0.1, 10),
                epoch(3, 0.1, 0.1, 10),
            ]
        };
        let configs = vec![config(2, true), config(4, true), config(0, false)];
        let found = warnings(&each_once(configs, slow));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].starts_with(
                "first epoch slower in 2 configs (persistent workers start only in the first \
                 epoch): nw=2 persistent took 2.90 s in epoch 1 but 1.00 s (median) in later \
                 epochs, 2.9×; nw=4 persistent took"
            ),
            "{}",
            found[0]
        );
        assert!(
            found[1].starts_with("first epoch slower: nw=0 took 2.90 s"),
            "{}",
            found[1]
        );
        assert!(found[1].contains("(caches and allocators warm up in the first epoch)"));
    }

    #[test]
    fn configs_measured_under_other_load_are_named_with_their_load() {
        let mut busy = run(0, config(0, false), vec![epoch(1, 0.1, 0.1, 10)]);
        busy.label = "nw=0".to_owned();
        busy.other_load_cores = Some(0.93);
        busy.disturbed = true;
        let quiet = run(1, config(2, false), vec![epoch(1, 0.1, 0.1, 10)]);
        let r = result(vec![config(0, false), config(2, false)], vec![busy, quiet]);
        let found = warnings(&r);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("disturbed: nw=0 (0.93 cores) measured"),
            "{}",
            found[0]
        );
    }

    #[test]
    fn a_config_disturbed_in_many_repeats_is_named_once_with_its_count_and_range() {
        let repeat = |index: usize, load: Option<f64>| {
            let mut r = run(0, config(0, false), vec![epoch(1, 0.1, 0.1, 10)]);
            r.label = "nw=0".to_owned();
            r.repeat = index;
            r.other_load_cores = Some(load.unwrap_or(0.05));
            r.disturbed = load.is_some();
            r
        };
        let mut once = run(1, config(2, false), vec![epoch(1, 0.1, 0.1, 10)]);
        once.label = "nw=2".to_owned();
        once.other_load_cores = Some(0.7);
        once.disturbed = true;
        let mut quiet = once.clone();
        quiet.repeat = 1;
        quiet.other_load_cores = Some(0.0);
        quiet.disturbed = false;
        let mut r = result(
            vec![config(0, false), config(2, false)],
            vec![
                repeat(0, Some(0.61)),
                once,
                repeat(1, None),
                quiet,
                repeat(2, Some(1.03)),
                repeat(3, Some(0.8)),
            ],
        );
        r.repeats = 4;
        let found = warnings(&r);
        assert!(
            found[0].starts_with(
                "disturbed: nw=0 (3 of 4 repeats, 0.61–1.03 cores), \
                 nw=2 (repeat 1 of 2, 0.70 cores) measured"
            ),
            "{}",
            found[0]
        );
    }

    #[test]
    fn a_platform_without_counters_is_said_once() {
        let mut unmeasured = run(0, config(0, false), vec![epoch(1, 0.1, 0.1, 10)]);
        unmeasured.other_load_cores = None;
        let found = warnings(&result(vec![config(0, false)], vec![unmeasured]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("outside load was not measured"));
    }
}
