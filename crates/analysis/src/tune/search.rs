//! The search's rules, between rounds: what the model leaves out, which candidates drop
//! out after a round (of the questions it measured: projected past the memory limit;
//! beaten beyond the noise by the recommendation's own best set, once each has two
//! measurements; then each question's slower half of those the open answer does not
//! hinge on), which questions are still open (who is reinstated until their verdict is
//! resolved); which of them the next round measures is [`round_plan`](super::round_plan)'s.

use loaderbench_engine::plan::{Config, Plan};
use loaderbench_engine::seconds;
use loaderbench_measure::results::{RunResult, RunStatus};
use loaderbench_measure::stats;
use loaderbench_measure::tune_trail::Fate;

use super::{MODEL_KEEP, Model, Standing, TuneEvent};
use crate::memory::MemoryReport;
use crate::recommend::{Verdict, as_compared, same_question};
use crate::time_share::Question;
use crate::{Analysis, measured_configs, mib};

/// Fits the model of config `question`'s question to its anchors and predicts each of its
/// configs from it; leaves out those predicted beyond [`MODEL_KEEP`] times the best of
/// the question.
pub(super) fn predict(
    plan: &Plan,
    result: &RunResult,
    standings: &mut [Standing],
    question: usize,
    on_event: &mut dyn FnMut(TuneEvent),
) {
    let Some(model) = Model::fit(result, &plan.configs[question]) else {
        return;
    };
    let members: Vec<usize> = (0..plan.configs.len())
        .filter(|&i| same_question(&plan.configs[i], &plan.configs[question]))
        .collect();
    for &index in &members {
        let config = &plan.configs[index];
        let seconds = model.predict_s(config, result.planned_epochs);
        standings[index].predicted_s = Some(seconds);
        standings[index].predicted_cost_s = Some(model.predict_s(config, plan.preset.epochs));
        on_event(TuneEvent::Predicted {
            config: index,
            seconds,
        });
    }
    let expected = |i: usize| projected_s(result, i).or(standings[i].predicted_s);
    let best = (members.iter())
        .filter_map(|&j| expected(j))
        .fold(f64::INFINITY, f64::min);
    for &index in &members {
        // An anchor was measured (perhaps set aside as disturbed): the model came from it.
        let measured = result.results.iter().any(|r| r.config_index == index);
        let Some(predicted) = standings[index].predicted_s.filter(|_| !measured) else {
            continue;
        };
        if predicted > best * MODEL_KEEP {
            let reason = format!(
                "predicted {} s, {:.1}× the best",
                seconds(predicted),
                predicted / best
            );
            on_event(TuneEvent::Eliminated {
                config: index,
                reason: reason.clone(),
            });
            standings[index].fate = Some(Fate::NotMeasured { reason });
        }
    }
}

/// After round `round`, which measured `measured`, among the candidates of the questions
/// it measured (a question left out of a round has nothing new to be judged by), once
/// every one of them has a measurement: those projected past the memory limit drop out,
/// then those another beats beyond the noise (once each has two, so that there is noise
/// to be beyond), then each question's slower half of the rest.
pub(super) fn eliminate(
    result: &RunResult,
    standings: &mut [Standing],
    measured: &[usize],
    round: usize,
    on_event: &mut dyn FnMut(TuneEvent),
) {
    let configs = &result.configs;
    let candidates: Vec<usize> = (0..standings.len())
        .filter(|&i| standings[i].fate.is_none())
        .filter(|&i| {
            measured
                .iter()
                .any(|&m| same_question(&configs[m], &configs[i]))
        })
        .collect();
    // Every candidate gets a measurement before any is judged: one set aside as
    // disturbed is measured again first.
    if candidates.iter().any(|&i| standings[i].rounds == 0) {
        return;
    }
    // A config that would not fit is out whatever its time: the answer never names it.
    let memory = MemoryReport::of(result, &measured_configs(result));
    let (candidates, too_big): (Vec<usize>, Vec<usize>) =
        candidates.into_iter().partition(|&i| memory.fits(i));
    for index in too_big {
        let config = memory.configs.iter().find(|c| c.config == index);
        let limit = memory.limit.map(|l| l.describe()).unwrap_or_default();
        let reason = format!(
            "does not fit the memory limit of {limit}: {} at the end of an epoch of the whole \
             dataset",
            config.map_or_else(String::new, |c| mib(c.projected_bytes))
        );
        on_event(TuneEvent::Eliminated {
            config: index,
            reason: reason.clone(),
        });
        standings[index].fate = Some(Fate::Eliminated { round, reason });
    }
    if candidates.is_empty() {
        return;
    }
    let Some((best, picks)) = best_set(&undisturbed(result), &candidates) else {
        return;
    };
    // One measurement has no noise to be beyond: until each has two, halving alone.
    let judged = candidates.iter().all(|&i| standings[i].rounds >= 2);
    let best = if judged { best } else { candidates.clone() };
    // One the answer hinges on is neither eliminated nor halved, though out of the best set
    // (beaten, its interval reaching inside the margin): `open_questions` would reinstate
    // it at once. A reinstated config is only eliminated when beaten: halving set it aside.
    let hinges = hinges(result, standings);
    let out: Vec<(usize, String)> = candidates
        .iter()
        .filter(|i| !best.contains(i) && !hinges.contains(i))
        .map(|&i| {
            // Beaten by its own question's pick: another runtime's says nothing of it.
            let by = pick_of(result, &picks, i).map_or("the best set", |p| label(result, p));
            (i, format!("slower than {by} beyond the noise"))
        })
        .collect();
    let unbeaten: Vec<(usize, f64)> = best
        .iter()
        .filter(|&&i| !standings[i].reinstated && !hinges.contains(&i))
        .filter_map(|&i| Some((i, projected_s(result, i)?)))
        .collect();
    // Halved question by question: the PyTorch runtime's configs are not the slower
    // half of a tune for taking longer than our engine's.
    let mut questions: Vec<Vec<(usize, f64)>> = Vec::new();
    for (index, seconds) in unbeaten {
        let config = &result.configs[index];
        match questions
            .iter_mut()
            .find(|q| same_question(&result.configs[q[0].0], config))
        {
            Some(question) => question.push((index, seconds)),
            None => questions.push(vec![(index, seconds)]),
        }
    }
    for (index, reason) in out {
        on_event(TuneEvent::Eliminated {
            config: index,
            reason: reason.clone(),
        });
        standings[index].fate = Some(Fate::Eliminated { round, reason });
    }
    for mut question in questions.into_iter().filter(|q| q.len() > 2) {
        question.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let keep = question.len().div_ceil(2);
        for &(index, _) in &question[keep..] {
            on_event(TuneEvent::SetAside { config: index });
            let reason = SLOWER_HALF.to_owned();
            standings[index].fate = Some(Fate::Eliminated { round, reason });
        }
    }
}

/// Why a config set aside by halving is out of the rounds, as its trail's fate says.
const SLOWER_HALF: &str = "in the slower half";

/// `result` as the search ranks it: no measurement marked disturbed, since it must go
/// on however busy the machine (the final analysis still says which were disturbed), and
/// finished, since the configs it has not measured are the search's choice, not a run
/// that ended before them (which no verdict would call resolved).
pub(super) fn undisturbed(result: &RunResult) -> RunResult {
    let mut ranked = result.clone();
    for config in &mut ranked.results {
        config.disturbed = false;
    }
    ranked.status = RunStatus::Finished;
    ranked
}

/// The best set of `configs` by the recommendation's own rule, and the config each
/// question's tie rule picks; `None` for no configs. A question with no pick (nothing
/// finished, or undecided) keeps every config of it. A config the recommendation counts
/// as one with a member (an A/A copy of it, or it but for a knob measured as a no-op) is
/// a member too: the recommendation names only one of them.
pub(super) fn best_set(result: &RunResult, configs: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
    if configs.is_empty() {
        return None;
    }
    let mut view = result.clone();
    view.results.retain(|r| configs.contains(&r.config_index));
    let index_of = |label: &str| result.labels.iter().position(|l| l == label);
    let mut best = Vec::new();
    let mut picks = Vec::new();
    for recommendation in Analysis::of(&view).recommendations {
        picks.extend(recommendation.config);
        best.extend(recommendation.config);
        let equally_fast = recommendation.equally_fast.iter();
        best.extend(equally_fast.filter_map(|l| index_of(l)));
    }
    let unpicked = |i: &&usize| pick_of(result, &picks, **i).is_none();
    best.extend(configs.iter().filter(unpicked));
    let compared = |index: usize| {
        let runs: Vec<_> = result
            .results
            .iter()
            .filter(|r| r.config_index == index)
            .collect();
        as_compared(&result.configs[index], &runs)
    };
    let members: Vec<Config> = best.iter().map(|&i| compared(i)).collect();
    best.extend(configs.iter().filter(|&&i| members.contains(&compared(i))));
    best.sort_unstable();
    best.dedup();
    Some((best, picks))
}

/// The pick among `picks` (one per question) of config `index`'s question.
fn pick_of(result: &RunResult, picks: &[usize], index: usize) -> Option<usize> {
    let question = &result.configs[index];
    (picks.iter().copied()).find(|&p| same_question(&result.configs[p], question))
}

/// `candidates` by what each is expected to take over the planned epochs, fastest first.
fn order(candidates: &[usize], standings: &[Standing], result: &RunResult) -> Vec<usize> {
    let mut ordered = candidates.to_vec();
    let expected = |i: usize| {
        projected_s(result, i)
            .or(standings[i].predicted_s)
            .unwrap_or(f64::INFINITY)
    };
    ordered.sort_by(|&a, &b| expected(a).total_cmp(&expected(b)).then(a.cmp(&b)));
    ordered
}

/// The questions still open, each with its candidates, the likeliest to matter first:
/// those the verdict hinges on (the pick, then the likeliest to change the decision),
/// then the rest by what each is expected to take ([`order`]). None once the answer is
/// settled. A question is open while a candidate of it has no measurement yet, or while
/// its verdict over everything measured (those set aside in the slower half included) is
/// not resolved, so that a config could still beat the pick or tie with it. A config the
/// decision still hinges on is a candidate again if it was set aside: halving on a round
/// or two decides only who goes first, never the answer. Unlike the ranking, this judges
/// the disturbed measurements as the final verdict does: a config measured only while
/// other load disturbed it is one the answer hinges on, measured again while the budget
/// lasts. A settled question leaves the rounds.
pub(super) fn open_questions(
    result: &RunResult,
    standings: &mut [Standing],
    on_event: &mut dyn FnMut(TuneEvent),
) -> Vec<Question> {
    let verdicts = open_verdicts(result, standings);
    let hinges: Vec<usize> = verdicts.iter().flat_map(|v| v.hinges_on.clone()).collect();
    for &index in &hinges {
        let standing = &mut standings[index];
        if matches!(standing.fate, Some(Fate::Eliminated { .. })) {
            standing.fate = None;
            standing.reinstated = true;
            on_event(TuneEvent::Reinstated { config: index });
        }
    }
    let others: Vec<usize> = (0..standings.len())
        .filter(|&i| standings[i].fate.is_none() && !hinges.contains(&i))
        .collect();
    let mut candidates = hinges.clone();
    candidates.extend(order(&others, standings, result));
    // A question whose verdict may never settle waits, unless a candidate of it is still
    // to be measured: that one could change the answer.
    let waiting: Vec<usize> = verdicts
        .iter()
        .filter(|v| v.may_never_settle)
        .flat_map(|v| v.hinges_on.clone())
        .collect();
    Question::all(&result.configs, &candidates)
        .into_iter()
        .filter(|q| {
            q.configs
                .iter()
                .any(|i| standings[*i].rounds == 0 || hinges.contains(i))
        })
        .map(|q| {
            let unmeasured = q.configs.iter().any(|i| standings[*i].rounds == 0);
            let waits = !unmeasured && q.configs.iter().any(|i| waiting.contains(i));
            q.waiting(waits)
        })
        .collect()
}

/// The configs the verdicts over everything measured hinge on (see [`open_questions`]).
fn hinges(result: &RunResult, standings: &[Standing]) -> Vec<usize> {
    open_verdicts(result, standings)
        .into_iter()
        .flat_map(|v| v.hinges_on)
        .collect()
}

/// The verdicts over everything measured that are open (see [`open_questions`]).
fn open_verdicts(result: &RunResult, standings: &[Standing]) -> Vec<Verdict> {
    let mut view = result.clone();
    view.status = RunStatus::Finished;
    view.results
        .retain(|r| standings[r.config_index].rounds > 0);
    Analysis::of(&view)
        .recommendations
        .into_iter()
        .map(|r| r.verdict)
        .filter(|v| !v.hinges_on.is_empty())
        .collect()
}

/// A config's median projected time over its repeats, as the recommendation projects it.
pub(super) fn projected_s(result: &RunResult, index: usize) -> Option<f64> {
    let times: Vec<f64> = result
        .results
        .iter()
        .filter(|r| r.config_index == index)
        .filter_map(|r| crate::recommend::projected_s(r, result.planned_epochs))
        .collect();
    stats::median(&times)
}

fn label(result: &RunResult, index: usize) -> &str {
    result.labels.get(index).map_or("?", String::as_str)
}

#[cfg(test)]
mod tests {
    use loaderbench_measure::fixtures::{config, epoch, result, run};
    use loaderbench_measure::results::ConfigResult;

    use super::super::round_plan::{fitting, in_turn, next_round};
    use super::*;
    use crate::time_share::TimeShares;

    /// Config `index` measured in rounds `0..seconds.len()`, `seconds[r]` an epoch.
    fn rounds(index: usize, workers: usize, seconds: &[f64]) -> Vec<ConfigResult> {
        seconds
            .iter()
            .enumerate()
            .map(|(round, &s)| {
                let mut r = run(index, config(workers, false), vec![epoch(1, s, s, 1)]);
                r.repeat = round;
                r
            })
            .collect()
    }

    fn standing(rounds: usize, fate: Option<Fate>) -> Standing {
        Standing {
            rounds,
            fate,
            ..Standing::default()
        }
    }

    /// Runs the elimination after `round` and asserts that it put no config out.
    fn assert_none_eliminated(measured: &RunResult, standings: &mut [Standing], round: usize) {
        let mut events = Vec::new();
        eliminate(measured, standings, &[0], round, &mut |e| events.push(e));
        assert!(events.is_empty(), "{events:?}");
        assert!(standings.iter().all(|s| s.fate.is_none()));
    }

    /// Two questions, each a resolved tie of three configs: our engine's at a second,
    /// the PyTorch runtime's at a hundred. Each question's slower half is set aside; the
    /// PyTorch runtime's configs are not all "the slower half" of the tune.
    #[test]
    fn each_question_is_halved_on_its_own() {
        let measured = two_resolved_ties();
        let mut standings: Vec<Standing> = (0..6).map(|_| standing(5, None)).collect();
        assert!(
            hinges(&measured, &standings).is_empty(),
            "both are resolved"
        );
        let mut events = Vec::new();
        eliminate(&measured, &mut standings, &[0, 3], 5, &mut |e| {
            events.push(e)
        });
        let out: Vec<usize> = (0..6).filter(|&i| standings[i].fate.is_some()).collect();
        assert_eq!(out, [2, 5], "the slowest of each question: {events:?}");
        // Set aside, not beaten: the trail says so, apart from a config that left.
        assert!(
            matches!(
                events[..],
                [
                    TuneEvent::SetAside { config: 2 },
                    TuneEvent::SetAside { config: 5 }
                ]
            ),
            "{events:?}"
        );
    }

    #[test]
    fn a_config_past_the_memory_limit_drops_out_however_fast() {
        let configs = vec![config(0, false), config(2, false)];
        let mut results = rounds(0, 0, &[1.0, 1.0]);
        results.extend(rounds(1, 2, &[0.5, 0.5]));
        for r in &mut results {
            // 200 MiB without workers, 900 MiB with.
            let bytes = if r.config_index == 0 {
                200u64 << 20
            } else {
                900 << 20
            };
            r.epochs[0].memory = Some(loaderbench_measure::process_memory::EpochMemory {
                peak_pss_bytes: bytes,
                main_pss_bytes: bytes,
                worker_pss_bytes: 0,
                rank_pss_bytes: 0,
                helper_pss_bytes: 0,
                sweeps: 2,
                sampling_s: 0.0,
            });
        }
        let mut result = result(configs, results);
        result.setup = Some(loaderbench_engine::preset::Preset {
            memory_limit: Some(bytesize::ByteSize::mib(512)),
            ..Default::default()
        });
        let mut standings = vec![standing(2, None), standing(2, None)];
        let mut events = Vec::new();
        eliminate(&result, &mut standings, &[0, 1], 2, &mut |e| events.push(e));
        assert_eq!(standings[0].fate, None, "nw=0 fits and stays");
        let Some(Fate::Eliminated { reason, .. }) = &standings[1].fate else {
            panic!(
                "nw=2 twice as fast but over the limit: {:?}",
                standings[1].fate
            );
        };
        assert_eq!(
            reason,
            "does not fit the memory limit of 512.0 MiB (memory_limit): 900.0 MiB at the end \
             of an epoch of the whole dataset"
        );
    }

    /// Halving a config the open answer hinges on only set it aside for `open_questions` to
    /// bring back at once: the trail said "out: nw=2 (in the slower half)" and "back in:
    /// nw=2" after the same round.
    #[test]
    fn the_configs_an_open_answer_hinges_on_are_not_halved() {
        let configs = vec![
            config(0, false),
            config(1, false),
            config(2, false),
            config(4, false),
        ];
        let mut results = rounds(0, 0, &[1.0, 1.1]);
        results.extend(rounds(1, 1, &[1.02, 1.05]));
        results.extend(rounds(2, 2, &[1.05, 1.0]));
        results.extend(rounds(3, 4, &[1.08, 1.03]));
        let measured = result(configs, results);
        let mut standings: Vec<Standing> = (0..4).map(|_| standing(2, None)).collect();
        assert_eq!(
            hinges(&measured, &standings).len(),
            4,
            "nothing is resolved"
        );
        assert_none_eliminated(&measured, &mut standings, 2);
    }

    /// nw=2 is 12% faster than nw=0 in five rounds, ±10%: nw=0 is out of the best set
    /// while the interval still reaches inside the margin, so the answer hinges on it;
    /// eliminated, `open_questions` would bring it back after the same round.
    #[test]
    fn a_config_beaten_short_of_the_margin_stays_while_the_answer_hinges_on_it() {
        let configs = vec![config(0, false), config(2, false)];
        let sd = 0.10 * 5f64.sqrt() / 2.776;
        let nw2: Vec<f64> = [sd, -sd, sd, -sd, 0.0]
            .iter()
            .map(|s| 1.0 / (1.12f64.ln() + s).exp())
            .collect();
        let mut results = rounds(0, 0, &[1.0; 5]);
        results.extend(rounds(1, 2, &nw2));
        let measured = result(configs, results);
        let mut standings = vec![standing(5, None), standing(5, None)];
        assert_eq!(best_set(&measured, &[0, 1]), Some((vec![1], vec![1])));
        assert_eq!(hinges(&measured, &standings), [1, 0]);
        assert_none_eliminated(&measured, &mut standings, 5);
    }

    #[test]
    fn a_config_set_aside_but_still_in_the_best_set_comes_back_until_it_has_its_rounds() {
        let configs = vec![config(0, false), config(2, false), config(4, false)];
        let halved = Fate::Eliminated {
            round: 1,
            reason: "in the slower half".to_owned(),
        };
        // nw=0 was set aside after one round 15% behind: within what one round scatters
        // here (nw=2 and nw=4 swap places by 8% from round to round).
        let mut results = rounds(0, 0, &[1.15]);
        results.extend(rounds(1, 2, &[1.0, 1.08, 0.95]));
        results.extend(rounds(2, 4, &[1.04, 1.0, 0.99]));
        let measured = result(configs.clone(), results);
        let mut standings = vec![
            standing(1, Some(halved)),
            standing(3, None),
            standing(3, None),
        ];
        let mut events = Vec::new();
        assert!(!open_questions(&measured, &mut standings, &mut |e| events.push(e)).is_empty());
        assert!(standings[0].fate.is_none() && standings[0].reinstated);
        assert!(matches!(events[..], [TuneEvent::Reinstated { config: 0 }]));

        // Five rounds later nw=0 is behind in every round: beaten, and the answer settles.
        let mut results = rounds(0, 0, &[1.15, 1.2, 1.18, 1.16, 1.19]);
        results.extend(rounds(1, 2, &[1.0, 1.02, 0.98, 1.0, 1.01]));
        results.extend(rounds(2, 4, &[1.01, 1.0, 0.99, 1.0, 1.0]));
        let measured = result(configs, results);
        for standing in &mut standings {
            standing.rounds = 5;
        }
        assert!(open_questions(&measured, &mut standings, &mut |_| {}).is_empty());
        let best = best_set(&measured, &[0, 1, 2]).unwrap().0;
        assert_eq!(best, [1, 2]);
    }

    #[test]
    fn a_tune_under_way_settles_with_configs_it_predicted_out_and_never_measured() {
        // nw=2 beats nw=0 in every one of five rounds; nw=8 was predicted slow and never
        // measured. The run is still running (the tune under way), and a config the
        // search chose not to measure is no run that ended early: it settles, and nw=8
        // stays out.
        let configs = vec![config(0, false), config(2, false), config(8, false)];
        let mut results = rounds(0, 0, &[1.15, 1.2, 1.18, 1.16, 1.19]);
        results.extend(rounds(1, 2, &[1.0, 1.02, 0.98, 1.0, 1.01]));
        let mut measured = result(configs, results);
        measured.status = RunStatus::Running;
        let predicted_out = Fate::Eliminated {
            round: 0,
            reason: "predicted slower".to_owned(),
        };
        let mut standings = vec![
            standing(5, None),
            standing(5, None),
            standing(0, Some(predicted_out.clone())),
        ];
        assert!(open_questions(&measured, &mut standings, &mut |_| {}).is_empty());
        assert_eq!(standings[2].fate, Some(predicted_out));
    }

    #[test]
    fn the_answer_is_open_while_a_config_was_measured_only_while_disturbed() {
        // nw=2 beats nw=0 in every one of five rounds, but every measurement of nw=2 was
        // disturbed by other load: the final verdict names no config over it, so the
        // search is not settled, and nw=2, halved out, is measured again.
        let configs = vec![config(0, false), config(2, false)];
        let mut results = rounds(0, 0, &[1.15, 1.2, 1.18, 1.16, 1.19]);
        let mut busy = rounds(1, 2, &[1.0, 1.02, 0.98, 1.0, 1.01]);
        for run in &mut busy {
            run.disturbed = true;
        }
        results.extend(busy);
        let mut measured = result(configs, results);
        measured.status = RunStatus::Running;
        let halved = Fate::Eliminated {
            round: 3,
            reason: "in the slower half".to_owned(),
        };
        let mut standings = vec![standing(5, None), standing(5, Some(halved))];
        let mut events = Vec::new();
        assert!(!open_questions(&measured, &mut standings, &mut |e| events.push(e)).is_empty());
        assert!(standings[1].fate.is_none() && standings[1].reinstated);
        assert!(matches!(events[..], [TuneEvent::Reinstated { config: 1 }]));

        // The same rounds of nw=2, measured quiet: the answer settles.
        for run in &mut measured.results {
            run.disturbed = false;
        }
        assert!(open_questions(&measured, &mut standings, &mut |_| {}).is_empty());
    }

    #[test]
    fn the_answer_is_open_while_a_tied_config_could_still_beat_the_pick_beyond_the_band() {
        let configs = vec![config(0, false), config(2, false)];
        let halved = Fate::Eliminated {
            round: 2,
            reason: "in the slower half".to_owned(),
        };
        // Five rounds: nw=0 (the pick, fewest workers) is 15–20% behind nw=2 in two of them,
        // so neither beats the other, but nw=2 may yet prove faster beyond the band.
        let mut results = rounds(0, 0, &[1.0, 1.2, 0.97, 1.0, 1.15]);
        results.extend(rounds(1, 2, &[1.0; 5]));
        let measured = result(configs.clone(), results);
        assert_eq!(best_set(&measured, &[0, 1]).unwrap(), (vec![0, 1], vec![0]));
        let mut standings = vec![standing(5, Some(halved)), standing(5, None)];
        let mut events = Vec::new();
        assert!(!open_questions(&measured, &mut standings, &mut |e| events.push(e)).is_empty());
        assert!(standings[0].fate.is_none() && standings[0].reinstated);
        assert!(matches!(events[..], [TuneEvent::Reinstated { config: 0 }]));

        // Six rounds within 2% of each other: nw=2 cannot beat the pick beyond the band.
        let mut results = rounds(0, 0, &[1.0, 1.02, 0.99, 1.01, 1.0, 0.98]);
        results.extend(rounds(1, 2, &[1.0; 6]));
        let measured = result(configs, results);
        standings[0].rounds = 6;
        standings[1].rounds = 6;
        assert!(open_questions(&measured, &mut standings, &mut |_| {}).is_empty());
    }

    /// Our engine's configs (0–2, `ours`) and the PyTorch runtime's (3–5, `pytorch`),
    /// config `i` measured in rounds of `seconds(i)`.
    fn two_questions(seconds: impl Fn(usize) -> Vec<f64>) -> RunResult {
        let mut configs: Vec<Config> = [0, 2, 4].iter().map(|&w| config(w, false)).collect();
        for workers in [0, 2, 4] {
            let mut slow = config(workers, false);
            slow.runtime = loaderbench_engine::preset::Runtime::Pytorch;
            configs.push(slow);
        }
        let mut results = Vec::new();
        for (index, config) in configs.iter().enumerate() {
            let measured = rounds(index, config.num_workers, &seconds(index));
            results.extend(measured.into_iter().map(|mut r| {
                r.config = config.clone();
                r
            }));
        }
        let mut measured = result(configs, results);
        for label in &mut measured.labels[3..] {
            label.push_str(" pytorch");
        }
        measured
    }

    /// Five rounds of our engine's config `i` of [`two_questions`], a resolved question:
    /// nw=2 and nw=4 ahead of nw=0 in every round.
    fn ours_resolved(i: usize) -> Vec<f64> {
        match i {
            0 => vec![1.15, 1.2, 1.18, 1.16, 1.19],
            1 => vec![1.0, 1.02, 0.98, 1.0, 1.01],
            _ => vec![1.01, 1.0, 0.99, 1.0, 1.0],
        }
    }

    /// Two questions, each a tie of three configs resolved in five rounds: our engine's
    /// at a second, the PyTorch runtime's at a hundred.
    fn two_resolved_ties() -> RunResult {
        two_questions(|i| {
            let scale = if i < 3 { 1.0 } else { 100.0 };
            let level = scale * (1.0 + 0.002 * i as f64);
            [1.0, 1.001, 0.999, 1.0, 1.0005]
                .iter()
                .map(|s| s * level)
                .collect()
        })
    }

    /// Our engine's question at the tie margin after five rounds (nw=2 4.8% faster than
    /// nw=0 to ±2.4%, nw=4 twice as slow), the PyTorch runtime's open (nw=2 12% faster
    /// to about ±15%): ours waits while PyTorch's may settle, unless a candidate of ours
    /// is still to be measured.
    #[test]
    fn a_question_at_the_tie_margin_waits_unless_a_candidate_of_it_is_unmeasured() {
        let drift = [1.0, 1.3, 0.9, 1.1, 1.0];
        let apart = |gain: f64, sd: f64| -> Vec<f64> {
            (0..5)
                .map(|r| drift[r] / (gain.ln() + [sd, -sd, sd, -sd, 0.0][r]).exp())
                .collect()
        };
        let half_width = |plus_minus: f64| plus_minus * 5f64.sqrt() / 2.776;
        let measured = two_questions(|i| match i {
            0 => drift.to_vec(),
            1 => apart(1.048, half_width(0.024)),
            2 => drift.iter().map(|d| 2.0 * d).collect(),
            3 => drift.iter().map(|d| 10.0 * d).collect(),
            4 => apart(1.12, half_width(0.15))
                .iter()
                .map(|s| 10.0 * s)
                .collect(),
            _ => drift.iter().map(|d| 20.0 * d).collect(),
        });
        let waits = |standings: &mut [Standing]| -> Vec<(usize, bool)> {
            open_questions(&measured, standings, &mut |_| {})
                .into_iter()
                .map(|q| (q.first, q.waits))
                .collect()
        };
        let mut standings: Vec<Standing> = (0..6).map(|_| standing(5, None)).collect();
        assert_eq!(waits(&mut standings), [(0, true), (3, false)]);
        standings[2].rounds = 0;
        assert_eq!(waits(&mut standings), [(0, false), (3, false)]);
    }

    /// Our engine's configs take 0.1 s, the PyTorch runtime's 10 s: the next rounds
    /// measure ours alone until they have been charged about one round of PyTorch's,
    /// then both.
    #[test]
    fn the_quick_question_has_its_rounds_before_one_of_the_slow_one() {
        let measured = two_questions(|i| vec![if i < 3 { 0.1 } else { 10.0 }]);
        let mut standings: Vec<Standing> = (0..6).map(|_| standing(1, None)).collect();
        for (index, standing) in standings.iter_mut().enumerate() {
            standing.last_cost_s = Some(if index < 3 { 0.1 } else { 10.0 });
        }
        let open = Question::all(&measured.configs, &[0, 1, 2, 3, 4, 5]);
        let mut shares = TimeShares::default();
        let mut next = next_round(&open, &measured.configs, &standings, &shares, 0.5);
        next.sort_unstable();
        assert_eq!(next, [0, 1, 2]);
        // Ours charged 29 s (their rounds and start-ups): a round of PyTorch's would end
        // within one of ours, and both are measured.
        shares.charge(&open, &[(0, 9.0), (1, 10.0), (2, 10.0)], 0.0);
        let mut next = next_round(&open, &measured.configs, &standings, &shares, 0.5);
        next.sort_unstable();
        assert_eq!(next, [0, 1, 2, 3, 4, 5]);
    }

    /// Each question's beaten configs are said to be slower than that question's pick:
    /// the PyTorch runtime's nw=0 was "slower than nw=2 persistent", our engine's pick.
    #[test]
    fn a_beaten_config_names_the_pick_of_its_own_question() {
        let measured = two_questions(|i| {
            let scale = if i < 3 { 1.0 } else { 10.0 };
            ours_resolved(i % 3).iter().map(|s| scale * s).collect()
        });
        let mut standings: Vec<Standing> = (0..6).map(|_| standing(5, None)).collect();
        let mut events = Vec::new();
        eliminate(&measured, &mut standings, &[0, 3], 5, &mut |e| {
            events.push(e)
        });
        let reasons: Vec<(usize, &str)> = events
            .iter()
            .filter_map(|e| match e {
                TuneEvent::Eliminated { config, reason } => Some((*config, reason.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(
            reasons,
            [
                (0, "slower than nw=2 beyond the noise"),
                (3, "slower than nw=2 pytorch beyond the noise")
            ]
        );
    }

    /// A round that measured only our engine's configs halves only their question: the
    /// PyTorch runtime's have nothing new to be judged by.
    #[test]
    fn a_question_the_round_did_not_measure_is_not_halved() {
        let measured = two_resolved_ties();
        let mut standings: Vec<Standing> = (0..6).map(|_| standing(5, None)).collect();
        let mut events = Vec::new();
        eliminate(&measured, &mut standings, &[1, 0, 2], 5, &mut |e| {
            events.push(e)
        });
        let out: Vec<usize> = (0..6).filter(|&i| standings[i].fate.is_some()).collect();
        assert_eq!(out, [2], "{events:?}");
    }

    /// Our engine's question is resolved (nw=2 ahead in every round), the PyTorch
    /// runtime's is not (nw=0 behind in two rounds of five): only the PyTorch runtime's
    /// configs are measured further.
    #[test]
    fn a_settled_question_leaves_the_rounds() {
        let measured = two_questions(|i| match i {
            0..=2 => ours_resolved(i),
            3 => vec![1.0, 1.2, 0.97, 1.0, 1.15],
            _ => vec![1.0; 5],
        });
        let mut standings: Vec<Standing> = (0..6).map(|_| standing(5, None)).collect();
        let open = open_questions(&measured, &mut standings, &mut |_| {});
        assert_eq!(open.len(), 1, "{open:?}");
        let mut configs = open[0].configs.clone();
        // The pick goes first: nw=0, the fewest workers of a tie.
        assert_eq!(configs[0], 3, "{configs:?}");
        configs.sort_unstable();
        assert_eq!(configs, [3, 4, 5]);
    }

    /// The PyTorch runtime's nw=2 is the pick of one round (the fewest workers measured),
    /// nw=4 its challenger, and nw=0, not yet measured, is expected to be the fastest: a
    /// round with room for two measures the pick and its challenger. Taking the fastest
    /// expected first, a round measured new configs and left the pick on one round, which
    /// the tie rule then named at 68% over the fastest.
    #[test]
    fn the_configs_the_answer_hinges_on_are_measured_first() {
        let measured = two_questions(|i| match i {
            0..=2 => ours_resolved(i),
            3 => Vec::new(),
            4 => vec![6.6],
            _ => vec![4.1],
        });
        let mut standings: Vec<Standing> = (0..6).map(|_| standing(5, None)).collect();
        standings[3].rounds = 0;
        standings[3].predicted_s = Some(3.0);
        standings[4].rounds = 1;
        standings[5].rounds = 1;
        let open = open_questions(&measured, &mut standings, &mut |_| {});
        assert_eq!(in_turn(&open), [4, 5, 3]);
        for standing in &mut standings[3..] {
            standing.last_cost_s = Some(5.0);
        }
        let mut round = fitting(&in_turn(&open), &measured.configs, &standings, 11.0, 3);
        round.sort_unstable();
        assert_eq!(round, [4, 5]);
    }

    /// Two questions of two configs each, 5 s a measurement, and 16 s left: the round
    /// measures the first question's pair and gives the second's pick back rather than
    /// measure it alone (one by one, it took 0, 1 and 3). A question with a single config
    /// queued (measured again after a disturbance) keeps it.
    #[test]
    fn a_round_measures_no_question_s_config_alone() {
        let measured = two_questions(|_| Vec::new());
        let mut standings: Vec<Standing> = (0..6).map(|_| standing(1, None)).collect();
        for standing in &mut standings {
            standing.last_cost_s = Some(5.0);
        }
        let queue = in_turn(&Question::all(&measured.configs, &[0, 3, 1, 4]));
        assert_eq!(queue, [0, 1, 3, 4]);
        let sorted = |mut round: Vec<usize>| {
            round.sort_unstable();
            round
        };
        let round = fitting(&queue, &measured.configs, &standings, 16.0, 1);
        assert_eq!(sorted(round), [0, 1]);
        let round = fitting(&[0, 1, 3], &measured.configs, &standings, 16.0, 1);
        assert_eq!(sorted(round), [0, 1, 3]);
    }

    /// Four configs of 5 s a measurement, projected to take 1 to 4 s, and 11 s left: the
    /// round measures the two fastest, whatever its number (turned, so that neither
    /// always runs first). Turned before it was cut, round 3 measured the slowest first
    /// and the fastest, and the PyTorch runtime's best configs sat out a round that the
    /// budget cut short.
    #[test]
    fn a_round_the_budget_cuts_short_measures_the_likeliest_configs() {
        let configs: Vec<Config> = (0..4).map(|w| config(w, false)).collect();
        let measured = result(configs, Vec::new());
        let mut standings: Vec<Standing> = (0..4).map(|_| standing(1, None)).collect();
        for (index, standing) in standings.iter_mut().enumerate() {
            standing.predicted_s = Some(4.0 - index as f64);
            standing.last_cost_s = Some(5.0);
        }
        let queue = order(&[0, 1, 2, 3], &standings, &measured);
        assert_eq!(queue, [3, 2, 1, 0]);
        for round in 1..5 {
            let mut chosen = fitting(&queue, &measured.configs, &standings, 11.0, round);
            chosen.sort_unstable();
            assert_eq!(chosen, [2, 3], "round {round}");
        }
        assert_eq!(
            fitting(&queue, &measured.configs, &standings, 11.0, 1),
            [2, 3]
        );
        assert_eq!(
            fitting(&queue, &measured.configs, &standings, 11.0, 2),
            [3, 2]
        );
    }
}
