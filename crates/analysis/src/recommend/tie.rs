//! The best set and the tie rule. A config is in the best set when no other config of
//! its question beats it: is faster beyond the noise that this run measured
//! ([`noise`](super::noise)), by more than the tie margin as measured. Every member is a
//! right answer, so which one is recommended must not depend on noise; a config that
//! lost every round by far stays out even while its interval still reaches inside the
//! margin (the verdict then hinges on it, and more rounds settle it). The tie rule takes
//! the fewest workers, then the least memory (within [`MEMORY_TIE_SHARE`] of the least
//! counts as least), then not persistent, then the first in the grid. Because the set
//! holds every config that nothing beats, not just those near this run's fastest, a run
//! that reorders equal configs recommends the same one, and so does a run whose
//! measurements cannot yet tell two configs apart.

use super::Candidate;
use super::noise::{Difference, NoiseModel, Relation, Settling};

/// Memory within this share of the least among the tied counts as the least: peaks
/// differ by a few percent from run to run.
pub const MEMORY_TIE_SHARE: f64 = 0.10;

/// The tie rule in the words the recommendation uses.
pub const TIE_RULE: &str =
    "fewest workers, then least memory, then not persistent, then first in the grid";

/// One question's candidates with the noise model fitted to them.
pub(super) struct Question<'c, 'a> {
    pub candidates: &'c [Candidate<'a>],
    pub noise: NoiseModel,
    /// The question's configs left out of `candidates` for not fitting the memory limit.
    pub too_big: usize,
}

impl<'c, 'a> Question<'c, 'a> {
    fn position(&self, c: &Candidate<'_>) -> Option<usize> {
        self.candidates.iter().position(|x| x.index == c.index)
    }

    /// How `a` compares with `b` (`None` for the same config, or one without rounds).
    pub fn compare(&self, a: &Candidate<'_>, b: &Candidate<'_>) -> Option<Difference> {
        if a.index == b.index {
            return None;
        }
        self.noise.compare(self.position(a)?, self.position(b)?)
    }

    /// About how many rounds in all would settle the comparison of `a` with `b`, as it
    /// stands ([`NoiseModel::settling`]).
    pub fn settling(&self, a: &Candidate<'_>, b: &Candidate<'_>) -> Option<Settling> {
        self.noise.settling(self.position(a)?, self.position(b)?)
    }

    /// True when `faster` is faster than `slower` beyond the noise, by more than the tie
    /// margin as measured ([`Difference::ahead`]).
    pub fn beats(&self, faster: &Candidate<'_>, slower: &Candidate<'_>) -> bool {
        self.compare(faster, slower).is_some_and(|d| d.ahead)
    }

    /// True when another config is faster than `c` by more than the tie margin beyond
    /// the noise: no further round brings it back.
    pub fn settled_out(&self, c: &Candidate<'_>) -> bool {
        self.candidates.iter().any(|d| {
            self.compare(d, c)
                .is_some_and(|d| d.relation == Relation::Faster)
        })
    }

    /// The configs that no other beats, in grid order. Never empty when there are
    /// candidates: should the measurements make every config beaten by another (a cycle),
    /// the set is the fastest by its level and those it does not beat.
    pub fn best_set(&self) -> Vec<&'c Candidate<'a>> {
        let unbeaten: Vec<&Candidate<'a>> = self
            .candidates
            .iter()
            .filter(|c| !self.candidates.iter().any(|d| self.beats(d, c)))
            .collect();
        if !unbeaten.is_empty() {
            return unbeaten;
        }
        let level = |c: &Candidate<'_>| {
            self.position(c)
                .and_then(|p| self.noise.level_s(p))
                .unwrap_or(f64::INFINITY)
        };
        let Some(fastest) = self
            .candidates
            .iter()
            .min_by(|a, b| level(a).total_cmp(&level(b)))
        else {
            return Vec::new();
        };
        self.candidates
            .iter()
            .filter(|c| c.index == fastest.index || !self.beats(fastest, c))
            .collect()
    }
}

/// The one config of the best set to recommend, by the tie rule.
pub(super) fn tie_break<'c, 'a>(best: &[&'c Candidate<'a>]) -> Option<&'c Candidate<'a>> {
    let fewest = best.iter().map(|c| c.config.num_workers).min()?;
    let mut tied: Vec<&Candidate<'a>> = best
        .iter()
        .copied()
        .filter(|c| c.config.num_workers == fewest)
        .collect();
    let memory: Vec<Option<f64>> = tied
        .iter()
        .map(|c| c.memory_bytes().map(|b| b as f64))
        .collect();
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

#[cfg(test)]
mod tests {
    use super::super::super::Analysis;
    use super::super::Recommendation;
    use loaderbench_engine::plan::Config;
    use loaderbench_measure::fixtures::{config, epoch, result, run, two_epochs};
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
                let mut r = run(index, config.clone(), two_epochs(s, s, 1));
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
            // One round shows nothing of the noise: said, and every config stays open.
            assert!(
                r.verdict
                    .text
                    .contains("one round shows nothing of this machine's noise"),
                "{}",
                r.verdict.text
            );
            let mut hinges = r.verdict.hinges_on.clone();
            assert_eq!(hinges[0], 0, "the pick first");
            hinges.sort_unstable();
            assert_eq!(hinges, [0, 1, 2, 3, 4]);
        }
        assert!(fastest.len() >= 3, "the medians alone pick {fastest:?}");
    }
}
