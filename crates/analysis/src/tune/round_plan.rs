//! Which configs the next round of a tune measures, and in what order: the questions due
//! in the time they share, each one's configs in turn (a pair each first: the pick and its
//! likeliest challenger), and what of them fits in the budget left, no question's config
//! alone; a question whose anchors are not all measured measures them before any other
//! config of it. The anchors' round itself, planned while nothing is known of what any
//! config costs, ends before a question's next anchor once that question is no longer due
//! by the time shares' rule: a question whose anchors take a tenth of a second then has
//! its rounds before the rest of one whose anchors take half a minute each, rather than
//! waiting for them (a 60 s tune of `seed-heavy-pytorch` spent its budget on the PyTorch
//! runtime's anchors, our engine's question measured in one round).

use loaderbench_engine::plan::Config;
use loaderbench_measure::results::RunResult;
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
    configs: &[Config],
    standings: &[Standing],
    shares: &TimeShares,
    overhead_s: f64,
) -> Vec<usize> {
    let cost = |q: &Question| {
        let seconds: f64 = q
            .configs
            .iter()
            .map(|&i| cost_s(configs, standings, i))
            .sum();
        seconds + overhead_s
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

/// `question` as its next round measures it: its anchors (those measured too, so that they
/// share the round) while one of them has no measurement in `seen` (every measurement,
/// the disturbed ones included: what the model is fitted to), else as it is.
pub(super) fn anchors_first(question: Question, anchors: &[usize], seen: &RunResult) -> Question {
    let own: Vec<usize> = (anchors.iter().copied())
        .filter(|&a| same_question(&seen.configs[a], &seen.configs[question.first]))
        .collect();
    let measured = |a: &usize| seen.results.iter().any(|r| r.config_index == *a);
    if own.iter().all(measured) {
        return question;
    }
    Question {
        configs: own,
        ..question
    }
}

/// The anchors' round: each question's first anchor (in plan order), so that what
/// each question's configs cost is known before any question's others are measured; then
/// each question's others, question by question, so that the round can end between two
/// questions' ([`ends_anchors_before`]).
pub(super) fn anchors_round(configs: &[Config], anchors: &[usize]) -> Vec<usize> {
    let questions = Question::all(configs, anchors);
    let firsts = questions.iter().filter_map(|q| q.configs.first());
    let others = questions.iter().flat_map(|q| q.configs.iter().skip(1));
    firsts.chain(others).copied().collect()
}

/// Whether the anchors' round ends before anchor `next`, given the `seconds` each anchor
/// it measured took: once `next`'s question has had an anchor measured (what one of its
/// configs costs is then known) and is no longer due ([`TimeShares::due`]) beside the
/// other questions, each charged what its anchors took and expecting its next round to
/// take as much again where its anchors are all measured, the rest at the mean of those
/// measured where some are.
pub(super) fn ends_anchors_before(
    configs: &[Config],
    anchors: &[usize],
    seconds: &[(usize, f64)],
    next: usize,
) -> bool {
    let alike = |a: usize, b: usize| same_question(&configs[a], &configs[b]);
    let spent = |of: usize| -> Vec<f64> {
        (seconds.iter())
            .filter(|(c, _)| alike(*c, of))
            .map(|(_, s)| *s)
            .collect()
    };
    if spent(next).is_empty() {
        return false;
    }
    let questions = Question::all(configs, anchors);
    let mut shares = TimeShares::default();
    shares.charge(&questions, seconds, 0.0);
    let cost = |q: &Question| {
        let own = spent(q.first);
        let left = q.configs.len() - own.len();
        match (own.len(), left) {
            // Not begun: never so while a question's second anchor is next, as every
            // question's first goes before.
            (0, _) => left as f64 * UNKNOWN_COST_S,
            (_, 0) => own.iter().sum(),
            (measured, _) => left as f64 * own.iter().sum::<f64>() / measured as f64,
        }
    };
    let due = shares.due(&questions, cost);
    !due.iter().any(|q| alike(q.first, next))
}

/// What measuring config `index` is expected to take: its last measurement, else the
/// model's epochs and a loader's set-up, else the typical measured config's of its
/// question (the PyTorch runtime's configs take seconds where our engine's take a tenth),
/// else [`UNKNOWN_COST_S`].
fn cost_s(configs: &[Config], standings: &[Standing], index: usize) -> f64 {
    let of_question: Vec<f64> = (0..standings.len())
        .filter(|&i| same_question(&configs[i], &configs[index]))
        .filter_map(|i| standings[i].last_cost_s)
        .collect();
    let standing = &standings[index];
    (standing.last_cost_s)
        .or(standing.predicted_cost_s.map(|s| s + CONFIG_OVERHEAD_S))
        .or_else(|| stats::median(&of_question))
        .unwrap_or(UNKNOWN_COST_S)
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
            let cost = cost_s(configs, standings, index);
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

#[cfg(test)]
mod tests {
    use loaderbench_measure::fixtures::{config, pytorch_config, result, run};

    use super::*;

    /// Our engine's configs 0–2 and the PyTorch runtime's 3–5, every one an anchor.
    fn two_questions() -> Vec<Config> {
        let ours = [0, 2, 4].map(|w| config(w, false));
        let pytorch = [0, 2, 4].map(pytorch_config);
        ours.into_iter().chain(pytorch).collect()
    }

    /// Our engine's anchors took 0.4 s each; the PyTorch runtime's first took 20 s, so
    /// its other two are expected to take 40 s more: our question's next round, of 1.2 s,
    /// is due long before, and the anchors' round ends before the PyTorch runtime's
    /// second. Its first is always measured: nothing says what it costs before.
    #[test]
    fn the_anchors_round_ends_before_a_slow_question_s_second_anchor() {
        let configs = two_questions();
        let anchors = [0, 1, 2, 3, 4, 5];
        let ours = [(0, 0.4), (1, 0.4), (2, 0.4)];
        assert!(!ends_anchors_before(&configs, &anchors, &ours, 3));
        let seconds = [ours.as_slice(), &[(3, 20.0)]].concat();
        assert!(ends_anchors_before(&configs, &anchors, &seconds, 4));
        // The PyTorch runtime's anchor as quick as ours: it goes on.
        let seconds = [ours.as_slice(), &[(3, 0.5)]].concat();
        assert!(!ends_anchors_before(&configs, &anchors, &seconds, 4));
        // A question alone never waits for another.
        let alone = &configs[3..];
        assert!(!ends_anchors_before(alone, &[0, 1, 2], &[(0, 20.0)], 1));
    }

    /// The PyTorch runtime listed first: each question's first anchor (fewest workers)
    /// goes first, so that ours is begun, and its cost known, before the PyTorch
    /// runtime's second; then each question's others, question by question.
    #[test]
    fn the_anchors_round_measures_each_question_s_first_anchor_first() {
        let mut configs = two_questions();
        configs.rotate_left(3);
        let anchors = [0, 1, 2, 3, 4, 5];
        assert_eq!(anchors_round(&configs, &anchors), [0, 3, 1, 2, 4, 5]);
        let seconds = [(0, 20.0), (3, 0.4)];
        assert!(ends_anchors_before(&configs, &anchors, &seconds, 1));
    }

    /// A question whose anchors were not all measured (the anchors' round ended first)
    /// measures them all, the one measured again with the rest so that they share a
    /// round, before its other configs; a question with its anchors measured is as it was.
    #[test]
    fn a_question_measures_its_anchors_before_its_other_configs() {
        let mut configs = two_questions();
        configs.push(pytorch_config(8));
        let measured = |i: usize| run(i, configs[i].clone(), Vec::new());
        let seen = result(configs.clone(), vec![measured(0), measured(3)]);
        let open = |configs: Vec<usize>| Question::of(&seen.configs, configs[0], configs);
        let pytorch = anchors_first(open(vec![6, 3, 4, 5]), &[0, 3, 4, 5], &seen);
        assert_eq!(pytorch.configs, [3, 4, 5]);
        let ours = anchors_first(open(vec![1, 2, 0]), &[0], &seen);
        assert_eq!(ours.configs, [1, 2, 0]);
    }

    /// A config never measured costs what its question's measured configs did, not what
    /// the typical config of the run did: with 30 s left, the PyTorch runtime's second
    /// config (its first took 20 s) does not fit beside its first, and the question gives
    /// its lone config back; our engine's fit.
    #[test]
    fn a_config_never_measured_costs_what_its_question_s_measured_ones_did() {
        let configs = two_questions();
        let mut standings = vec![Standing::default(); 6];
        for (index, seconds) in [(0, 0.4), (1, 0.4), (2, 0.4), (3, 20.0)] {
            standings[index].last_cost_s = Some(seconds);
            standings[index].rounds = 1;
        }
        let mut round = fitting(&[3, 4, 0, 1], &configs, &standings, 30.0, 1);
        round.sort_unstable();
        assert_eq!(round, [0, 1]);
    }
}
