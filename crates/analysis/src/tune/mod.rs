//! Tune: the best settings within a time budget, and the same answer every time. Three
//! stages. The model first ([`model`]): a few anchor configs are measured, every other
//! config predicted from them, and those predicted far behind the best
//! ([`MODEL_KEEP`]) left out. Then successive halving: every remaining candidate gets a
//! round; after each round, the candidates that another beats beyond the noise drop
//! out, and of the rest the slower half, while the better keep getting rounds, each
//! round running them one after another in turn. The search stops as soon as the answer
//! is settled (every candidate left is in the best set, with [`SETTLE_ROUNDS`] rounds
//! behind it), when the next round does not fit in what is left of the budget, or when
//! the user stops it. Every measurement goes through the runner (the interference meter
//! included): a disturbed measurement is dropped, and its config measured again in the
//! next round. The result is a run like any other, its configs' repeats numbered by
//! round, with the [`TuneTrail`] saying what was predicted, measured and eliminated;
//! the recommendation's best set and tie rule name the config to use.

mod model;
mod rounds;
pub mod space;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use loaderbench_engine::Error;
use loaderbench_engine::error::Result;
use loaderbench_engine::machine::Machine;
use loaderbench_engine::plan::Plan;
use loaderbench_measure::Journal;
use loaderbench_measure::results::{RunResult, RunStatus};
use loaderbench_measure::stats;
use loaderbench_measure::tune_trail::{Fate, TuneStop, TuneTrail, TunedConfig};

use serde::{Deserialize, Serialize};

use crate::Analysis;
pub use model::Model;
use rounds::RoundEnd;

/// Configs the model predicts beyond this multiple of the best prediction are not
/// measured.
pub const MODEL_KEEP: f64 = 1.5;

/// Rounds every config of the best set needs before the answer counts as settled.
pub const SETTLE_ROUNDS: usize = 3;

/// What a round costs beyond its configs: the runner's warm-up and its dataset.
const ROUND_OVERHEAD_S: f64 = 0.5;

/// What a config's measurement costs beyond the model's epochs: its loader's set-up.
const CONFIG_OVERHEAD_S: f64 = 0.3;

/// Disturbed measurements of a config in a row before the last is kept (marked, so the
/// analysis says so) rather than measured again: on a machine that stays busy, the
/// search still ends.
const DISTURBED_LIMIT: usize = 2;

/// How a tune runs.
pub struct TuneOptions {
    pub budget: Duration,
    /// Where the trail and every measured config are journaled.
    pub journal: PathBuf,
}

/// What a tune reports as it goes (as JSON lines too, for the app's tune process).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum TuneEvent {
    /// The anchors are measured first.
    Anchors {
        configs: Vec<usize>,
    },
    /// The model's projected time for a config.
    Predicted {
        config: usize,
        seconds: f64,
    },
    /// A round starts with these configs.
    Round {
        round: usize,
        configs: Vec<usize>,
    },
    /// A config was measured in a round (its projected time).
    Measured {
        config: usize,
        round: usize,
        seconds: f64,
    },
    /// A config left the search.
    Eliminated {
        config: usize,
        reason: String,
    },
    Warning {
        message: String,
    },
}

/// Where one config of the space stands.
#[derive(Debug, Clone)]
struct Standing {
    /// The model's projected time for the planned epochs.
    predicted_s: Option<f64>,
    /// The model's time for the epochs one measurement runs.
    predicted_cost_s: Option<f64>,
    /// What its last measurement took, for the budget.
    last_cost_s: Option<f64>,
    rounds: usize,
    /// Disturbed measurements since its last kept one.
    disturbed_in_a_row: usize,
    /// `None` while it is a candidate.
    fate: Option<Fate>,
}

/// Runs the tune of `plan`'s configs; returns what was measured (with the trail) and, if
/// the search did not end on its own, why.
pub fn tune(
    plan: &Plan,
    options: &TuneOptions,
    stop_requested: &dyn Fn() -> bool,
    on_event: &mut dyn FnMut(TuneEvent),
) -> Result<(RunResult, Option<Error>)> {
    let started = Instant::now();
    let deadline = started + options.budget;
    let budget_s = options.budget.as_secs_f64();
    let scratch =
        tempfile::tempdir().map_err(|err| Error::run(format!("no scratch folder: {err}")))?;
    let mut result = header(plan);
    let mut journal = Journal::create(&options.journal, &result)?;
    // Every measurement, the disturbed ones set aside included: what the model fits.
    let mut seen = result.clone();
    let mut standings = vec![
        Standing {
            predicted_s: None,
            predicted_cost_s: None,
            last_cost_s: None,
            rounds: 0,
            disturbed_in_a_row: 0,
            fate: None,
        };
        plan.configs.len()
    ];
    let anchors = anchors(plan, result.machine.logical_cores);
    on_event(TuneEvent::Anchors {
        configs: anchors.clone(),
    });
    let mut round = 0;
    let mut queue = anchors.clone();
    let (stop, error) = loop {
        let remaining_s = budget_s - started.elapsed().as_secs_f64();
        let configs = fitting(&queue, &standings, remaining_s, round);
        if configs.is_empty() {
            break (TuneStop::Budget, None);
        }
        on_event(TuneEvent::Round {
            round,
            configs: configs.clone(),
        });
        let scratch_journal = scratch.path().join(format!("round-{round}.jsonl"));
        let measured = rounds::measure(
            plan,
            &configs,
            round,
            &scratch_journal,
            deadline,
            stop_requested,
        );
        for message in measured.warnings {
            if !result.warnings.contains(&message) {
                on_event(TuneEvent::Warning {
                    message: message.clone(),
                });
                result.warnings.push(message);
            }
        }
        if let Some(dataset) = measured.dataset.filter(|_| result.dataset.is_empty()) {
            result.dataset = dataset;
        }
        for (index, seconds) in measured.seconds {
            standings[index].last_cost_s = Some(seconds);
        }
        for config in measured.results {
            seen.results.push(config.clone());
            let standing = &mut standings[config.config_index];
            // A disturbed measurement says little of the config: it is measured again,
            // up to the limit.
            if config.disturbed && standing.disturbed_in_a_row + 1 < DISTURBED_LIMIT {
                standing.disturbed_in_a_row += 1;
                continue;
            }
            standing.disturbed_in_a_row = 0;
            standing.rounds += 1;
            journal.config(&config)?;
            result.results.push(config);
        }
        for &index in &configs {
            if let Some(seconds) = projected_s(&result, index) {
                on_event(TuneEvent::Measured {
                    config: index,
                    round,
                    seconds,
                });
            }
        }
        match measured.end {
            RoundEnd::Done => {}
            RoundEnd::Deadline => break (TuneStop::Budget, None),
            RoundEnd::Stopped => break (TuneStop::Cancelled, Some(Error::Cancelled)),
            RoundEnd::Failed(error) => break (TuneStop::Failed, Some(error)),
        }
        if round == 0 {
            predict(plan, &seen, &mut standings, on_event);
        } else {
            eliminate(&result, &mut standings, round, on_event);
        }
        let candidates: Vec<usize> = (0..standings.len())
            .filter(|&i| standings[i].fate.is_none())
            .collect();
        let settled = round > 0
            && (candidates.len() == 1
                || candidates
                    .iter()
                    .all(|&i| standings[i].rounds >= SETTLE_ROUNDS));
        if settled || candidates.is_empty() {
            break (TuneStop::Settled, None);
        }
        round += 1;
        queue = order(&candidates, &standings, &result, round);
    };
    result.status = match (&stop, &error) {
        (TuneStop::Cancelled, _) => RunStatus::Cancelled,
        (TuneStop::Failed, Some(error)) => RunStatus::Failed {
            error: error.to_string(),
        },
        _ => RunStatus::Finished,
    };
    result.tune = Some(trail(
        &result, &standings, &anchors, stop, budget_s, started, round,
    ));
    if let Some(trail) = &result.tune {
        journal.tune(trail)?;
    }
    journal.end(&result.status)?;
    Ok((result, error))
}

/// The run as a tune starts it: the whole space, nothing measured.
fn header(plan: &Plan) -> RunResult {
    RunResult {
        preset: plan.name.clone(),
        dataset: String::new(),
        epochs: plan.epochs,
        repeats: 1,
        started_unix_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        machine: Machine::current(),
        configs: plan.configs.clone(),
        labels: (0..plan.configs.len()).map(|i| plan.label(i)).collect(),
        warnings: plan.warnings.clone(),
        results: Vec::new(),
        status: RunStatus::Running,
        step: plan.step,
        planned_epochs: plan.planned_epochs,
        shuffle: plan.shuffle,
        drop_last: plan.drop_last,
        setup: Some(plan.preset.clone()),
        tune: None,
    }
}

/// The anchors: the config with the fewest workers, the one nearest the core count and
/// the one with the most, each the first in the grid with its count.
fn anchors(plan: &Plan, cores: usize) -> Vec<usize> {
    let workers = |i: usize| plan.configs[i].num_workers;
    let all = 0..plan.configs.len();
    let fewest = all.clone().min_by_key(|&i| (workers(i), i));
    let most = all.clone().min_by_key(|&i| (usize::MAX - workers(i), i));
    let near_cores = all.min_by_key(|&i| (workers(i).abs_diff(cores), i));
    let chosen: BTreeSet<usize> = [fewest, near_cores, most].into_iter().flatten().collect();
    chosen.into_iter().collect()
}

/// Fits the model to the anchors and predicts every other config; leaves out those
/// predicted beyond [`MODEL_KEEP`] times the best.
fn predict(
    plan: &Plan,
    result: &RunResult,
    standings: &mut [Standing],
    on_event: &mut dyn FnMut(TuneEvent),
) {
    let Some(model) = Model::fit(result) else {
        return;
    };
    for (index, config) in plan.configs.iter().enumerate() {
        let seconds = model.predict_s(config, result.planned_epochs);
        standings[index].predicted_s = Some(seconds);
        standings[index].predicted_cost_s = Some(model.predict_s(config, plan.epochs));
        on_event(TuneEvent::Predicted {
            config: index,
            seconds,
        });
    }
    let best = (0..standings.len())
        .filter_map(|i| projected_s(result, i).or(standings[i].predicted_s))
        .fold(f64::INFINITY, f64::min);
    for (index, standing) in standings.iter_mut().enumerate() {
        // An anchor was measured (perhaps set aside as disturbed): the model came from it.
        let measured = result.results.iter().any(|r| r.config_index == index);
        let Some(predicted) = standing.predicted_s.filter(|_| !measured) else {
            continue;
        };
        if predicted > best * MODEL_KEEP {
            let reason = format!(
                "predicted {predicted:.2} s, {:.1}× the best",
                predicted / best
            );
            on_event(TuneEvent::Eliminated {
                config: index,
                reason: reason.clone(),
            });
            standing.fate = Some(Fate::NotMeasured { reason });
        }
    }
}

/// After round `round`, once every candidate has a measurement: the candidates another
/// beats beyond the noise drop out (once each has two, so that there is noise to be
/// beyond), then the slower half of the rest.
fn eliminate(
    result: &RunResult,
    standings: &mut [Standing],
    round: usize,
    on_event: &mut dyn FnMut(TuneEvent),
) {
    let candidates: Vec<usize> = (0..standings.len())
        .filter(|&i| standings[i].fate.is_none())
        .collect();
    // Every candidate gets a measurement before any is judged: one set aside as
    // disturbed is measured again first.
    if candidates.iter().any(|&i| standings[i].rounds == 0) {
        return;
    }
    let Some((best, pick)) = best_set(&undisturbed(result), &candidates) else {
        return;
    };
    // One measurement has no noise to be beyond: until each has two, halving alone.
    let judged = candidates.iter().all(|&i| standings[i].rounds >= 2);
    let best = if judged { best } else { candidates.clone() };
    let mut out: Vec<(usize, String)> = candidates
        .iter()
        .filter(|i| !best.contains(i))
        .map(|&i| {
            (
                i,
                format!("slower than {} beyond the noise", label(result, pick)),
            )
        })
        .collect();
    let mut unbeaten: Vec<(usize, f64)> = best
        .iter()
        .filter_map(|&i| Some((i, projected_s(result, i)?)))
        .collect();
    if unbeaten.len() > 2 {
        unbeaten.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let keep = unbeaten.len().div_ceil(2);
        out.extend(
            unbeaten[keep..]
                .iter()
                .map(|&(i, _)| (i, "in the slower half".to_owned())),
        );
    }
    for (index, reason) in out {
        on_event(TuneEvent::Eliminated {
            config: index,
            reason: reason.clone(),
        });
        standings[index].fate = Some(Fate::Eliminated { round, reason });
    }
}

/// `result` with no measurement marked disturbed: the search ranks by it, since it must go
/// on however busy the machine; the final analysis still says which were disturbed.
fn undisturbed(result: &RunResult) -> RunResult {
    let mut ranked = result.clone();
    for config in &mut ranked.results {
        config.disturbed = false;
    }
    ranked
}

/// The best set of `configs` by the recommendation's own rule, and the config its tie
/// rule picks (the first of the set when it names none); `None` for no configs.
fn best_set(result: &RunResult, configs: &[usize]) -> Option<(Vec<usize>, usize)> {
    let mut view = result.clone();
    view.results.retain(|r| configs.contains(&r.config_index));
    let index_of = |label: &str| result.labels.iter().position(|l| l == label);
    let mut best = Vec::new();
    let mut pick = None;
    for recommendation in Analysis::of(&view).recommendations {
        pick = pick.or(recommendation.config);
        best.extend(recommendation.config);
        best.extend(
            recommendation
                .equally_fast
                .iter()
                .filter_map(|l| index_of(l)),
        );
    }
    // Without a recommendation (nothing finished, or undecided), every config stays.
    if best.is_empty() {
        best = configs.to_vec();
    }
    best.sort_unstable();
    best.dedup();
    let pick = pick.or(best.first().copied())?;
    Some((best, pick))
}

/// The next round's order: by what each config is expected to take, fastest first, turned
/// by the round number so that no config always runs first.
fn order(
    candidates: &[usize],
    standings: &[Standing],
    result: &RunResult,
    round: usize,
) -> Vec<usize> {
    let mut ordered = candidates.to_vec();
    let expected = |i: usize| {
        projected_s(result, i)
            .or(standings[i].predicted_s)
            .unwrap_or(f64::INFINITY)
    };
    ordered.sort_by(|&a, &b| expected(a).total_cmp(&expected(b)).then(a.cmp(&b)));
    if !ordered.is_empty() {
        let turn = round % ordered.len();
        ordered.rotate_left(turn);
    }
    ordered
}

/// The configs of `queue` that fit in `remaining_s`, in order; the anchors' round is
/// always tried (nothing is known of their cost yet).
fn fitting(queue: &[usize], standings: &[Standing], remaining_s: f64, round: usize) -> Vec<usize> {
    if round == 0 {
        return queue.to_vec();
    }
    let known: Vec<f64> = standings.iter().filter_map(|s| s.last_cost_s).collect();
    let typical = stats::median(&known).unwrap_or(ROUND_OVERHEAD_S);
    let mut left = remaining_s - ROUND_OVERHEAD_S;
    let mut chosen = Vec::new();
    for &index in queue {
        let cost = standings[index]
            .last_cost_s
            .or(standings[index]
                .predicted_cost_s
                .map(|s| s + CONFIG_OVERHEAD_S))
            .unwrap_or(typical);
        if cost > left {
            break;
        }
        left -= cost;
        chosen.push(index);
    }
    chosen
}

/// A config's median projected time over its repeats, as the recommendation projects it.
fn projected_s(result: &RunResult, index: usize) -> Option<f64> {
    let times: Vec<f64> = result
        .results
        .iter()
        .filter(|r| r.config_index == index)
        .filter_map(|r| {
            let first = r.epochs.first()?.seconds;
            let later: Vec<f64> = r.epochs.iter().skip(1).map(|e| e.seconds).collect();
            let typical = stats::median(&later).unwrap_or(first);
            Some(first + result.planned_epochs.saturating_sub(1) as f64 * typical)
        })
        .collect();
    stats::median(&times)
}

fn label(result: &RunResult, index: usize) -> &str {
    result.labels.get(index).map_or("?", String::as_str)
}

/// The trail as the search ends: every measured config in the final best set is `Best`,
/// whatever round it left in.
fn trail(
    result: &RunResult,
    standings: &[Standing],
    anchors: &[usize],
    stop: TuneStop,
    budget_s: f64,
    started: Instant,
    round: usize,
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
        rounds: round + 1,
        configs,
    }
}

/// The fate of a config still a candidate when the search stopped, outside the best set.
fn unfinished(standing: &Standing) -> Fate {
    if standing.rounds == 0 {
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
