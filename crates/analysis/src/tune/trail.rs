//! The trail a tune leaves as it ends: for every config of the space, what the model
//! predicted, what was measured over how many rounds, and its fate (in the final best
//! set, out after a round and why, or not measured and why), with the budget, the time
//! used, why the search stopped and the anchors it started from.

use std::time::Instant;

use loaderbench_measure::results::RunResult;
use loaderbench_measure::tune_trail::{Fate, TuneStop, TuneTrail, TunedConfig};

use super::Standing;
use super::search::{best_set, projected_s, undisturbed};

/// The trail as the search ends: every measured config in the final best set is `Best`,
/// whatever round it left in.
pub(super) fn trail(
    result: &RunResult,
    standings: &[Standing],
    anchors: &[usize],
    stop: TuneStop,
    budget_s: f64,
    started: Instant,
    rounds: usize,
) -> TuneTrail {
    let measured: Vec<usize> = (0..standings.len())
        .filter(|&i| standings[i].rounds > 0)
        .collect();
    let best = best_set(&undisturbed(result), &measured).map_or(Vec::new(), |(best, _)| best);
    let configs = standings
        .iter()
        .enumerate()
        .map(|(index, standing)| TunedConfig {
            config: index,
            predicted_s: standing.predicted_s.filter(|_| !anchors.contains(&index)),
            measured_s: projected_s(result, index),
            rounds: standing.rounds,
            fate: if standing.rounds > 0 && best.contains(&index) {
                Fate::Best
            } else {
                standing
                    .fate
                    .clone()
                    .unwrap_or_else(|| unfinished(standing, rounds.saturating_sub(1)))
            },
        })
        .collect();
    TuneTrail {
        budget_s,
        used_s: started.elapsed().as_secs_f64(),
        stop,
        anchors: anchors.to_vec(),
        rounds,
        configs,
    }
}

/// The fate of a config still a candidate when the search stopped after round
/// `last_round`, outside the best set.
fn unfinished(standing: &Standing, last_round: usize) -> Fate {
    if standing.rounds == 0 && standing.disturbed_in_a_row > 0 {
        Fate::NotMeasured {
            reason: "measured only while other load disturbed it; the search stopped \
                     before a quiet round"
                .to_owned(),
        }
    } else if standing.rounds == 0 {
        Fate::stopped_first()
    } else {
        Fate::Eliminated {
            round: last_round,
            reason: "slower than the best set beyond the noise".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use loaderbench_engine::plan::Config;
    use loaderbench_measure::fixtures::{config, epoch, result, run};

    use super::*;

    fn standing(rounds: usize) -> Standing {
        Standing {
            rounds,
            ..Standing::default()
        }
    }

    /// `tune aa-check` said of the copy "out after round 1: slower than the best set
    /// beyond the noise", though a copy is its original measured again (an A/A check),
    /// and copies measured faster than the pick were said the same. The recommendation
    /// counts a copy as its original, and a twin that differs only in pin_memory measured
    /// as a no-op as the config without it: each is in the best set with it.
    #[test]
    fn a_copy_or_a_no_op_twin_of_a_config_in_the_best_set_is_in_it_too() {
        let copy = Config {
            copy: 1,
            ..config(0, false)
        };
        let pinned = Config {
            pin_memory: true,
            ..config(0, false)
        };
        let configs = vec![config(0, false), copy, pinned, config(2, false)];
        let seconds = [
            [1.0, 1.01, 0.99],
            [0.97, 0.98, 0.96],
            [1.02, 1.0, 1.01],
            [2.0, 2.1, 1.9],
        ];
        let mut results = Vec::new();
        for (index, config) in configs.iter().enumerate() {
            for (round, &s) in seconds[index].iter().enumerate() {
                let mut measured = run(index, config.clone(), vec![epoch(1, s, s, 1)]);
                measured.repeat = round;
                results.push(measured);
            }
        }
        let measured = result(configs, results);
        let standings = [standing(3), standing(3), standing(3), standing(3)];
        let trail = trail(
            &measured,
            &standings,
            &[],
            TuneStop::Settled,
            60.0,
            Instant::now(),
            3,
        );
        let fates: Vec<String> = trail.configs.iter().map(|c| c.fate.describe()).collect();
        assert_eq!(
            fates,
            [
                "best set",
                "best set",
                "best set",
                "out after round 2: slower than the best set beyond the noise"
            ]
        );
    }

    /// nw=2 beat nw=0 in both of its rounds, 2 and 3 of a search that stopped after round
    /// 5 (its budget spent on another question): nw=0 is out after round 5, when the
    /// search stopped. The trail said "out after round 2", its count of rounds.
    #[test]
    fn a_candidate_outside_the_best_set_is_out_after_the_round_the_search_stopped_at() {
        let configs = vec![config(0, false), config(2, false)];
        let mut results = Vec::new();
        for (index, seconds) in [(0, 2.0), (1, 1.0)] {
            for round in [2, 3] {
                let mut measured = run(
                    index,
                    configs[index].clone(),
                    vec![epoch(1, seconds, seconds, 1)],
                );
                measured.repeat = round;
                results.push(measured);
            }
        }
        let measured = result(configs, results);
        let standings = [standing(2), standing(2)];
        let trail = trail(
            &measured,
            &standings,
            &[],
            TuneStop::Budget,
            60.0,
            Instant::now(),
            6,
        );
        let fates: Vec<String> = trail.configs.iter().map(|c| c.fate.describe()).collect();
        assert_eq!(
            fates,
            [
                "out after round 5: slower than the best set beyond the noise",
                "best set"
            ]
        );
    }
}
