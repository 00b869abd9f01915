//! The warnings a finished run's measurements call for: a noisy config (epoch times
//! spread widely), a first epoch much slower than the rest, and workers × intra-op
//! threads oversubscribing the CPU. They are shown, never acted on. More workers than
//! cores is known before the run and warned about by the plan, so it is not repeated
//! here.

use crate::results::RunResult;
use crate::stats;

use super::{ConfigRuns, measured_configs};

/// Epoch times whose range exceeds this share of their median make a config noisy.
pub const NOISY_SPREAD: f64 = 0.2;

/// A first epoch this many times the median of the later ones is "much slower".
pub const SLOW_FIRST_EPOCH: f64 = 1.5;

/// Differences smaller than this are within timer and scheduler noise, and invisible in
/// tables of seconds with two decimals: they are not warned about, whatever the ratio.
pub const NEGLIGIBLE_S: f64 = 0.02;

/// Every warning for `result`, one sentence each.
pub fn warnings(result: &RunResult) -> Vec<String> {
    let configs = measured_configs(result);
    let mut warnings: Vec<String> = configs.iter().filter_map(noisy).collect();
    warnings.extend(configs.iter().filter_map(slow_first_epoch));
    warnings.extend(oversubscribed(&configs, result.machine.logical_cores));
    warnings
}

fn noisy(runs: &ConfigRuns<'_>) -> Option<String> {
    let estimate = runs.estimate()?.epoch_s;
    let range = estimate.max - estimate.min;
    (estimate.n >= 2 && estimate.spread > NOISY_SPREAD && range >= NEGLIGIBLE_S).then(|| {
        format!(
            "noisy: {} epoch times range from {:.2} to {:.2} s, {:.0}% of their median \
             {:.2} s, over {} measurements; close other programs or add repeats before \
             trusting small differences",
            runs.label,
            estimate.min,
            estimate.max,
            estimate.spread * 100.0,
            estimate.median,
            estimate.n
        )
    })
}

fn slow_first_epoch(runs: &ConfigRuns<'_>) -> Option<String> {
    if !runs.has_later_epochs() {
        return None;
    }
    let first: Vec<f64> = runs.first_epochs().map(|e| e.seconds).collect();
    let later: Vec<f64> = runs.typical_epochs().map(|e| e.seconds).collect();
    let (first, later) = (stats::median(&first)?, stats::median(&later)?);
    (first > SLOW_FIRST_EPOCH * later && first - later >= NEGLIGIBLE_S).then(|| {
        let cause = if runs.config.persistent_workers && runs.config.num_workers > 0 {
            "persistent workers start only in the first epoch"
        } else {
            "caches and allocators warm up in the first epoch"
        };
        format!(
            "first epoch slower: {} took {first:.2} s in epoch 1 but {later:.2} s (median) \
             in later epochs, {:.1}× ({cause}); set `warmup: true` to leave it out",
            runs.label,
            first / later
        )
    })
}

fn oversubscribed(configs: &[ConfigRuns<'_>], cores: usize) -> Option<String> {
    let over: Vec<String> = configs
        .iter()
        .filter_map(|runs| {
            let workers = runs.config.num_workers;
            let threads = runs.runs.iter().map(|r| r.intra_op_threads).max()?;
            let total = workers * usize::try_from(threads).ok()?;
            // More workers than cores on their own is the plan's warning.
            (workers > 0 && workers <= cores && total > cores)
                .then(|| format!("{} ({workers} × {threads} = {total})", runs.label))
        })
        .collect();
    (!over.is_empty()).then(|| {
        format!(
            "oversubscribed: workers × intra-op threads exceed the {cores} logical cores for {}; \
             the threads compete for cores and the figures understate what fewer threads per \
             worker would do",
            over.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{config, epoch, result, run};
    use super::*;

    #[test]
    fn a_steady_run_has_no_warnings() {
        let r = result(
            vec![config(0, false), config(2, false)],
            vec![
                run(
                    0,
                    config(0, false),
                    vec![epoch(1, 0.1, 0.1, 10), epoch(2, 0.1, 0.1, 10)],
                ),
                run(
                    1,
                    config(2, false),
                    vec![epoch(1, 0.1, 0.05, 10), epoch(2, 0.1, 0.05, 10)],
                ),
            ],
        );
        assert_eq!(warnings(&r), Vec::<String>::new());
    }

    #[test]
    fn wide_spread_across_repeats_is_noisy() {
        let noisy_repeats = [0.1, 0.15, 0.1].map(|batch_s| {
            run(
                0,
                config(0, false),
                vec![epoch(1, 0.1, batch_s, 10), epoch(2, 0.1, batch_s, 10)],
            )
        });
        let r = result(vec![config(0, false)], noisy_repeats.to_vec());
        let found = warnings(&r);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("noisy: nw=0"), "{}", found[0]);
        assert!(found[0].contains("over 3 measurements"), "{}", found[0]);
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

    #[test]
    fn workers_times_threads_beyond_the_cores_oversubscribe() {
        let mut heavy = run(0, config(4, false), vec![epoch(1, 0.1, 0.1, 10)]);
        heavy.intra_op_threads = 4;
        let mut too_many = run(1, config(16, false), vec![epoch(1, 0.1, 0.1, 10)]);
        too_many.intra_op_threads = 4;
        let r = result(
            vec![config(4, false), config(16, false)],
            vec![heavy, too_many],
        );
        let found = warnings(&r);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("nw=4 (4 × 4 = 16)"), "{}", found[0]);
        assert!(
            !found[0].contains("nw=16"),
            "the plan already warns: {}",
            found[0]
        );
    }
}
