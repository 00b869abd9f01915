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
                    .unwrap_or_else(|| unfinished(standing))
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

/// The fate of a config still a candidate when the search stopped, outside the best set.
fn unfinished(standing: &Standing) -> Fate {
    if standing.rounds == 0 && standing.disturbed_in_a_row > 0 {
        Fate::NotMeasured {
            reason: "measured only while other load disturbed it; the search stopped \
                     before a quiet round"
                .to_owned(),
        }
    } else if standing.rounds == 0 {
        Fate::NotMeasured {
            reason: "the search stopped first".to_owned(),
        }
    } else {
        Fate::Eliminated {
            round: standing.rounds,
            reason: "slower than the best set beyond the noise".to_owned(),
        }
    }
}
