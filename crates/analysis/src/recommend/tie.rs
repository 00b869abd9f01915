//! The best set and the tie rule. A config is in the best set when no other config of
//! its question beats it beyond the noise: round by round where they share enough
//! repeats (the whole interval of the per-round ratio lies beyond [`NEAR_SHARE`]), else
//! by their own intervals and a wider band, [`FEW_ROUNDS_SHARE`], since a round or two
//! cannot show their noise. Every member is a right answer, so
//! which one is recommended must not depend on noise: the tie rule takes the fewest
//! workers, then the least memory (within [`MEMORY_TIE_SHARE`] of the least counts as
//! least), then not persistent, then the first in the grid. Because the set holds every
//! config equal within the noise, not just those near this run's fastest, a run that
//! reorders equal configs recommends the same one.

use std::collections::BTreeMap;

use loaderbench_measure::results::ConfigResult;
use loaderbench_measure::stats::{self, Estimate};

use super::{Candidate, NEAR_SHARE, projected_s};

/// Memory within this share of the least among the tied counts as the least: peaks
/// differ by a few percent from run to run.
pub const MEMORY_TIE_SHARE: f64 = 0.10;

/// Repeats two configs must share to be compared round by round. The bootstrap interval
/// of a median of fewer than five is the values' range, which holds the true median far
/// less often than 95% of the time (75% for three, 87.5% for four, 93.75% for five), so
/// a decision on three rounds is a coin toss wherever the difference is near the band.
pub const MIN_ROUNDS: usize = 5;

/// With fewer shared rounds than [`MIN_ROUNDS`], how much slower a config must be to
/// count as beaten. One round tells nothing about its own noise, and on the 2-core VMs
/// this project measures on, single rounds scatter widely: in five runs of seed-heavy in
/// a row (0.1–0.2 s epochs), the same config's epoch took 0.10–0.17 s from run to run,
/// and configs equal over many rounds lay up to 1.55× apart within one run
/// (docs/performance.md). A narrower band lets noise pick the answer, which then changes
/// from run to run; a real difference wider than this shows in one round anyway.
pub const FEW_ROUNDS_SHARE: f64 = 0.60;

/// The configs that no other config beats beyond the noise, in grid order. Never empty
/// when `candidates` is not: should noise make every config beaten by another (a cycle),
/// the set is the fastest by the median and those it does not beat.
pub(super) fn best_set<'c, 'a>(
    candidates: &'c [Candidate<'a>],
    planned_epochs: usize,
) -> Vec<&'c Candidate<'a>> {
    let unbeaten: Vec<&Candidate<'a>> = candidates
        .iter()
        .filter(|c| !candidates.iter().any(|d| beats(d, c, planned_epochs)))
        .collect();
    if !unbeaten.is_empty() {
        return unbeaten;
    }
    let Some(fastest) = candidates
        .iter()
        .min_by(|a, b| a.projected_s.median.total_cmp(&b.projected_s.median))
    else {
        return Vec::new();
    };
    candidates
        .iter()
        .filter(|c| c.index == fastest.index || !beats(fastest, c, planned_epochs))
        .collect()
}

/// The one config of the best set to recommend, by the tie rule.
pub(super) fn tie_break<'c, 'a>(best: &[&'c Candidate<'a>]) -> Option<&'c Candidate<'a>> {
    let fewest = best.iter().map(|c| c.config.num_workers).min()?;
    let mut tied: Vec<&Candidate<'a>> = best
        .iter()
        .copied()
        .filter(|c| c.config.num_workers == fewest)
        .collect();
    let memory: Vec<Option<f64>> = tied.iter().map(|c| memory_bytes(c)).collect();
    if let Some(least) = memory
        .iter()
        .copied()
        .collect::<Option<Vec<f64>>>()
        .and_then(|all| all.into_iter().min_by(f64::total_cmp))
    {
        let limit = least * (1.0 + MEMORY_TIE_SHARE);
        tied = tied
            .into_iter()
            .zip(memory)
            .filter(|(_, bytes)| bytes.is_some_and(|b| b <= limit))
            .map(|(c, _)| c)
            .collect();
    }
    if tied.iter().any(|c| !c.config.persistent_workers) {
        tied.retain(|c| !c.config.persistent_workers);
    }
    tied.into_iter().min_by_key(|c| c.index)
}

/// What a config costs in memory: the main process's peak, plus each worker process's
/// own share where workers are processes (`None` where the peak was not measured).
fn memory_bytes(c: &Candidate<'_>) -> Option<f64> {
    let peak = c.peak_rss_bytes()? as f64;
    let per_worker: Vec<f64> = c
        .runs
        .iter()
        .filter_map(|r| r.extra_bytes_per_worker())
        .map(|b| b as f64)
        .collect();
    let workers = stats::median(&per_worker).unwrap_or(0.0) * c.config.num_workers as f64;
    Some(peak + workers)
}

/// True when `faster` beats `slower` beyond the noise. Where the two share at least
/// [`MIN_ROUNDS`] repeats they are compared round by round: repeat `r` of every config
/// ran in round `r` (one after another with the interleaved order), so drift that slows
/// a whole round, or a whole process of a merged run, cancels in the ratio of the two;
/// `faster` wins when the whole interval of `slower`'s time over its own lies beyond
/// [`NEAR_SHARE`]: a median past it with an interval that reaches below is a gain the
/// rounds cannot tell from the band, and deciding on it flips the answer from run to run
/// (and from round to round of a tune, which asks after every round). Otherwise by their
/// own intervals: they do not meet, and `slower` is beyond [`FEW_ROUNDS_SHARE`] of
/// `faster`.
pub(super) fn beats(faster: &Candidate<'_>, slower: &Candidate<'_>, planned_epochs: usize) -> bool {
    if faster.index == slower.index {
        return false;
    }
    match round_ratio(
        slower.runs.iter().copied(),
        faster.runs.iter().copied(),
        planned_epochs,
    ) {
        Some(ratio) => ratio.low > 1.0 + NEAR_SHARE,
        None => {
            let (slower, faster) = (&slower.projected_s, &faster.projected_s);
            slower.differs_from(faster) && slower.median > faster.median * (1.0 + FEW_ROUNDS_SHARE)
        }
    }
}

/// The projected time of `a`'s runs over `b`'s in each repeat both have, as an estimate
/// over those rounds; `None` below [`MIN_ROUNDS`]. The tie rule compares candidates by
/// it, and tune asks it whether a config could still beat the pick.
pub(crate) fn round_ratio<'r>(
    a: impl IntoIterator<Item = &'r ConfigResult>,
    b: impl IntoIterator<Item = &'r ConfigResult>,
    planned_epochs: usize,
) -> Option<Estimate> {
    let (a, b) = (by_round(a, planned_epochs), by_round(b, planned_epochs));
    let ratios: Vec<f64> = a
        .iter()
        .filter_map(|(round, a)| Some(a / b.get(round)?))
        .collect();
    (ratios.len() >= MIN_ROUNDS)
        .then(|| Estimate::of(&ratios))
        .flatten()
}

/// The projected time of each repeat, by repeat number (the median where a folded no-op
/// twin measured the same repeat too).
fn by_round<'r>(
    runs: impl IntoIterator<Item = &'r ConfigResult>,
    planned_epochs: usize,
) -> BTreeMap<usize, f64> {
    let mut rounds: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for run in runs {
        if let Some(seconds) = projected_s(run, planned_epochs) {
            rounds.entry(run.repeat).or_default().push(seconds);
        }
    }
    rounds
        .into_iter()
        .filter_map(|(round, values)| Some((round, stats::median(&values)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::super::Analysis;
    use super::super::Recommendation;
    use loaderbench_engine::plan::Config;
    use loaderbench_measure::fixtures::{config, epoch, result, run};
    use loaderbench_measure::results::{ConfigResult, RunResult};

    /// Config `index`'s repeats, repeat `r` taking `drift[r] * factors[r]` seconds an
    /// epoch, with `rss_mib` of peak memory.
    fn rounds(
        index: usize,
        config: &Config,
        drift: &[f64],
        factors: &[f64],
        rss_mib: u64,
    ) -> Vec<ConfigResult> {
        drift
            .iter()
            .zip(factors)
            .enumerate()
            .map(|(round, (d, f))| {
                let s = d * f;
                let mut r = run(
                    index,
                    config.clone(),
                    vec![epoch(1, s, s, 1), epoch(2, s, s, 1)],
                );
                r.repeat = round;
                r.peak_rss_bytes = Some(rss_mib << 20);
                r
            })
            .collect()
    }

    fn recommendation(result: &RunResult) -> Recommendation {
        let mut all = Analysis::of(result).recommendations;
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    /// Medians of the projected time per config, to check which config is the fastest.
    fn fastest_by_median(result: &RunResult) -> usize {
        let medians: Vec<f64> = (0..result.configs.len())
            .map(|index| {
                let mut seconds: Vec<f64> = result
                    .results
                    .iter()
                    .filter(|r| r.config_index == index)
                    .map(|r| r.epochs.iter().map(|e| e.seconds).sum())
                    .collect();
                seconds.sort_by(f64::total_cmp);
                seconds[seconds.len() / 2]
            })
            .collect();
        (0..medians.len())
            .min_by(|&a, &b| medians[a].total_cmp(&medians[b]))
            .unwrap()
    }

    /// Recorded rounds of three configs where nw=0 ties with nw=2, nw=2 ties with
    /// nw=4, but nw=4 beats nw=0 in every round; `nw2` are nw=2's factors against nw=4.
    fn chained_tie(nw2: &[f64]) -> RunResult {
        let configs = vec![config(0, false), config(2, false), config(4, false)];
        let drift = [1.0, 1.1, 0.95, 1.05, 1.0];
        let mut results = rounds(0, &configs[0], &drift, &[1.12, 1.13, 1.11, 1.14, 1.12], 300);
        results.extend(rounds(1, &configs[1], &drift, nw2, 300));
        results.extend(rounds(2, &configs[2], &drift, &[1.0; 5], 300));
        result(configs, results)
    }

    #[test]
    fn the_tie_rule_does_not_flip_when_noise_reorders_equal_configs() {
        // Run A: nw=4 is the fastest by the median; run B, the same machine with other
        // noise: nw=2 is. A rule that keeps only the configs equal to the fastest would
        // take nw=2 in A and nw=0 (tied with nw=2) in B.
        let a = chained_tie(&[0.97, 1.20, 1.08, 1.15, 0.99]);
        let b = chained_tie(&[0.98, 1.20, 0.97, 1.15, 0.97]);
        assert_eq!(fastest_by_median(&a), 2);
        assert_eq!(fastest_by_median(&b), 1);
        for run in [&a, &b] {
            let r = recommendation(run);
            assert_eq!(r.label.as_deref(), Some("nw=2"), "{}", r.text);
            assert_eq!(r.equally_fast, vec!["nw=4".to_owned()], "{}", r.text);
        }
    }

    #[test]
    fn the_tie_rule_takes_fewest_workers_then_least_memory_then_not_persistent_then_grid_order() {
        let drift = [1.0, 1.05, 0.97, 1.02, 1.0];
        let noise = [1.0, 1.01, 0.99, 1.0, 1.0];
        let tied = |configs: Vec<Config>, rss: &[u64]| {
            let results = configs
                .iter()
                .enumerate()
                .flat_map(|(i, c)| rounds(i, c, &drift, &noise, rss[i]))
                .collect();
            recommendation(&result(configs, results))
        };
        // Fewest workers first, however much memory.
        let r = tied(vec![config(4, false), config(2, false)], &[300, 900]);
        assert_eq!(r.label.as_deref(), Some("nw=2"), "{}", r.text);
        // Then the least memory, beyond 10%.
        let r = tied(vec![config(2, true), config(2, false)], &[300, 400]);
        assert_eq!(r.label.as_deref(), Some("nw=2 persistent"), "{}", r.text);
        // Memory within 10% is a tie: then not persistent.
        let r = tied(vec![config(2, true), config(2, false)], &[300, 320]);
        assert_eq!(r.label.as_deref(), Some("nw=2"), "{}", r.text);
        // All else equal, the first in the grid.
        let mut pinned = config(2, false);
        pinned.prefetch_factor = 4;
        let r = tied(vec![pinned, config(2, false)], &[300, 300]);
        assert_eq!(r.config, Some(0), "{}", r.text);
        assert!(
            r.text.contains("picked by the tie rule (fewest workers"),
            "{}",
            r.text
        );
    }

    #[test]
    fn the_recorded_single_rounds_of_seed_heavy_recommend_the_same_config_every_run() {
        // Five runs of `loaderbench run seed-heavy --recommend` in a row on the project's
        // 2-core VM (one round each), as printed: epoch 1 and epoch 2 seconds of nw=0, 2,
        // 4, 8 and 8 persistent. The same config's epoch scatters 0.10–0.18 s from run to
        // run, and within run 3 nw=4 took 0.11 s where nw=0 took 0.17. With a 30% band that
        // run recommended nw=2 and the other four nw=0.
        let runs: [[(f64, f64); 5]; 5] = [
            [
                (0.15, 0.14),
                (0.13, 0.11),
                (0.19, 0.13),
                (0.12, 0.13),
                (0.12, 0.12),
            ],
            [
                (0.18, 0.14),
                (0.17, 0.18),
                (0.16, 0.15),
                (0.19, 0.14),
                (0.15, 0.14),
            ],
            [
                (0.16, 0.17),
                (0.16, 0.14),
                (0.14, 0.11),
                (0.19, 0.16),
                (0.14, 0.14),
            ],
            [
                (0.11, 0.10),
                (0.11, 0.12),
                (0.13, 0.15),
                (0.12, 0.11),
                (0.11, 0.12),
            ],
            [
                (0.14, 0.14),
                (0.18, 0.11),
                (0.11, 0.14),
                (0.13, 0.14),
                (0.16, 0.17),
            ],
        ];
        let configs = vec![
            config(0, false),
            config(2, false),
            config(4, false),
            config(8, false),
            config(8, true),
        ];
        let mut fastest = std::collections::BTreeSet::new();
        for seconds in runs {
            let results = configs
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let (first, second) = seconds[i];
                    let mut r = run(
                        i,
                        c.clone(),
                        vec![epoch(1, first, first, 1), epoch(2, second, second, 1)],
                    );
                    r.peak_rss_bytes = Some((130 + 10 * i as u64) << 20);
                    r
                })
                .collect();
            let run = result(configs.clone(), results);
            fastest.insert(fastest_by_median(&run));
            let r = recommendation(&run);
            assert_eq!(r.label.as_deref(), Some("nw=0"), "{}", r.text);
            assert_eq!(r.equally_fast.len(), 4, "{}", r.text);
        }
        assert!(fastest.len() >= 3, "the medians alone pick {fastest:?}");
    }
}
