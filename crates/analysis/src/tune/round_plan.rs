//! Which configs the next round of a tune measures, and in what order: the questions due
//! in the time they share, each one's configs in turn (a pair each first: the pick and its
//! likeliest challenger), and what of them fits in the budget left, no question's config
//! alone.

use loaderbench_engine::plan::Config;
use loaderbench_measure::stats;

use super::{CONFIG_OVERHEAD_S, Standing, UNKNOWN_COST_S};
use crate::recommend::same_question;
use crate::time_share::{Question, TimeShares};

/// The next round's configs: those of the questions due ([`TimeShares::due`]) among the
/// `open` ones, each question's round costing what its candidates' measurements are
/// expected to take and the round's `overhead_s`, taken in turn from the questions (see
/// [`in_turn`]).
pub(super) fn next_round(
    open: &[Question],
    standings: &[Standing],
    shares: &TimeShares,
    overhead_s: f64,
) -> Vec<usize> {
    let cost = |q: &Question| {
        let configs: f64 = q.configs.iter().map(|&i| cost_s(standings, i)).sum();
        configs + overhead_s
    };
    in_turn(&shares.due(open, cost))
}

/// The configs of `questions` taken from each in turn: every question's first two (its
/// pick and likeliest challenger: one alone compares with nothing), then every one's
/// third, and so on; so a round the budget cuts short measures each question's likeliest
/// configs, in pairs.
pub(super) fn in_turn(questions: &[Question]) -> Vec<usize> {
    let longest = questions.iter().map(|q| q.configs.len()).max().unwrap_or(0);
    let pairs = questions.iter().flat_map(|q| q.configs.iter().take(2));
    let rest = (2..longest).flat_map(|position| {
        questions
            .iter()
            .filter_map(move |q| q.configs.get(position))
    });
    pairs.chain(rest).copied().collect()
}

/// What measuring config `index` is expected to take: its last measurement, else the
/// model's epochs and a loader's set-up, else the typical config's.
fn cost_s(standings: &[Standing], index: usize) -> f64 {
    let known: Vec<f64> = standings.iter().filter_map(|s| s.last_cost_s).collect();
    let typical = stats::median(&known).unwrap_or(UNKNOWN_COST_S);
    standings[index]
        .last_cost_s
        .or(standings[index]
            .predicted_cost_s
            .map(|s| s + CONFIG_OVERHEAD_S))
        .unwrap_or(typical)
}

/// The configs of `queue` that fit in `remaining_s`, taken in order, then turned by the
/// round number so that no config always runs first; the anchors' round is always tried
/// as it is (nothing is known of their cost yet). A question (of `configs`) that would
/// get one of its several queued configs gives it back, and the rest are taken again
/// without it: a config measured alone in a round compares with nothing, as the
/// question's round drift takes all of it. Taken one by one, a 90 s tune of `ddp-light`
/// spent its last 25 s on the three PyTorch questions' picks alone.
pub(super) fn fitting(
    queue: &[usize],
    configs: &[Config],
    standings: &[Standing],
    remaining_s: f64,
    round: usize,
) -> Vec<usize> {
    if round == 0 {
        return queue.to_vec();
    }
    let alike = |a: usize, b: usize| same_question(&configs[a], &configs[b]);
    let mut queue = queue.to_vec();
    let mut chosen = loop {
        // Taken as they come: a round that runs over is stopped at the deadline, so the
        // budget is used to its end rather than left over by a cautious estimate.
        let mut left = remaining_s;
        let mut chosen = Vec::new();
        for &index in &queue {
            let cost = cost_s(standings, index);
            if cost > left {
                break;
            }
            left -= cost;
            chosen.push(index);
        }
        let count = |among: &[usize], of: usize| among.iter().filter(|&&c| alike(c, of)).count();
        match (chosen.iter().copied()).find(|&c| count(&chosen, c) == 1 && count(&queue, c) > 1) {
            Some(lone) => queue.retain(|&c| !alike(c, lone)),
            None => break chosen,
        }
    };
    if !chosen.is_empty() {
        let turn = round % chosen.len();
        chosen.rotate_left(turn);
    }
    chosen
}
