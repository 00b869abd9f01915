//! Tune: the best settings within a time budget, and the same answer every time. Three
//! stages. The model first ([`model`]): a few anchor configs of each question are measured,
//! every other config predicted from its question's once they are, and those predicted far
//! behind the best ([`MODEL_KEEP`]) left out; the anchors' round, each question's first
//! anchor before any one's others, ends before a question's next anchor once that question
//! is no longer due beside the others ([`round_plan`]), so that a question whose anchors
//! take a tenth of a second has its rounds before the rest of one whose anchors take half a
//! minute, which measures them in a round of its own. Then successive halving, question by
//! question (each runtime, pipeline, rank count and cache its own): a round measures the
//! candidates of the questions whose turn it is, one after another, the open questions
//! sharing the time ([`time_share`](crate::time_share)), so that our engine's configs of a
//! tenth of a second get their rounds beside the PyTorch runtime's of seconds; each
//! question's pick and its likeliest challengers go first, in pairs (a config alone in a
//! round compares with nothing, so a question with room for one gives it back), so that a
//! round the budget cuts short measures what decides the answer. After each round, of the
//! questions it measured, the candidates that another beats beyond the noise drop out, and
//! of the rest each question's slower half (none the open answer hinges on). A question is
//! settled, and leaves the rounds, once every candidate of it is measured and the
//! recommendation's verdict over everything measured (those set aside in the slower half
//! included) is resolved: the pick fastest or equally fast as the rest of the best set
//! beyond this run's noise ([`recommend::noise`](crate::recommend::noise)). A config the
//! decision still hinges on is reinstated if it was set aside and measured until then,
//! since halving on one or two noisy rounds decides only who goes first, never the answer.
//! The search stops once every question is settled, when the next round does not fit in
//! what is left of the budget, or when the user stops it. Every measurement goes through
//! the runner (the interference meter included): a disturbed measurement is dropped, and
//! its config measured again in the next round of its question (the second in a row is
//! kept, marked; a config with nothing but such measurements is one the decision hinges on,
//! so the search does not settle on it). The result is a run like any other, its configs'
//! repeats numbered by round, with the trail
//! ([`TuneTrail`](loaderbench_measure::tune_trail::TuneTrail)) saying what was predicted,
//! measured and eliminated; the recommendation's best set and tie rule name the config to
//! use.

mod model;
mod round_plan;
mod search;
pub mod space;
mod trail;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use loaderbench_engine::Error;
use loaderbench_engine::error::Result;
use loaderbench_engine::plan::Plan;
use loaderbench_measure::Journal;
use loaderbench_measure::results::{RunResult, RunStatus};
use loaderbench_measure::tune_trail::{Fate, TuneStop};

use serde::{Deserialize, Serialize};

use crate::rounds::{RoundEnd, RoundGate, RoundStops, Rounds, RoundsOptions};
use crate::time_share::{Question, TimeShares};
pub use model::Model;

/// Configs the model predicts beyond this multiple of the best prediction are not
/// measured.
pub const MODEL_KEEP: f64 = 1.5;

/// What a config's measurement is taken to cost while nothing of its question's is known.
const UNKNOWN_COST_S: f64 = 0.5;

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
    /// Waited on before each epoch a round measures (the app's window draws there);
    /// `None` starts epochs at once.
    pub gate: Option<RoundGate>,
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
    /// A config was measured in a round, reported as it finished: its projected time
    /// for the planned epochs, over every round that measured it.
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
    /// A config in its question's slower half after a round waits: not measured while
    /// its question is open, unless the answer comes to hinge on it (`Reinstated`); the
    /// final verdict still counts what it measured.
    SetAside {
        config: usize,
    },
    /// A config set aside in the slower half is a candidate again: over everything
    /// measured it is still in the best set, with too few rounds to be sure.
    Reinstated {
        config: usize,
    },
    Warning {
        message: String,
    },
}

/// Where one config of the space stands (by default: nothing known, a candidate).
#[derive(Debug, Clone, Default)]
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
    /// Set aside in the slower half and then reinstated: no longer halved, only
    /// eliminated when beaten beyond the noise.
    reinstated: bool,
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
    let rounds = Rounds::open(RoundsOptions {
        preloaded: None,
        gate: options.gate.clone(),
    })?;
    let mut result = header(plan);
    let mut journal = Journal::create(&options.journal, &result)?;
    // Every measurement, the disturbed ones set aside included: what the model fits.
    let mut seen = result.clone();
    let mut standings = vec![Standing::default(); plan.configs.len()];
    let anchors = anchors(plan, result.machine.logical_cores);
    on_event(TuneEvent::Anchors {
        configs: anchors.clone(),
    });
    let mut round = 0;
    // Rounds that ran: `round` is the next one's number once a round is done.
    let mut rounds_run = 0;
    let by_question = Question::all(&plan.configs, &anchors);
    let mut queue = round_plan::anchors_round(&plan.configs, &anchors);
    // The questions whose model is fitted (their anchors all measured).
    let mut modelled: Vec<usize> = Vec::new();
    // The open questions' candidates, for a round when those of the questions due do not
    // fit in the budget.
    let mut open: Vec<usize> = Vec::new();
    let mut shares = TimeShares::default();
    let (stop, error) = loop {
        let remaining_s = budget_s - started.elapsed().as_secs_f64();
        let mut configs =
            round_plan::fitting(&queue, &plan.configs, &standings, remaining_s, round);
        if configs.is_empty() {
            configs = round_plan::fitting(&open, &plan.configs, &standings, remaining_s, round);
        }
        if configs.is_empty() {
            break (TuneStop::Budget, None);
        }
        on_event(TuneEvent::Round {
            round,
            configs: configs.clone(),
        });
        // A journal that cannot be written (a full disk) ends the search as a failure,
        // keeping everything measured for the caller's tables and exports.
        let mut unjournaled = None;
        let round_started = Instant::now();
        let anchors_round = |seconds: &[(usize, f64)], next: usize| {
            round == 0 && round_plan::ends_anchors_before(&plan.configs, &anchors, seconds, next)
        };
        let stops = RoundStops {
            deadline,
            stop_requested,
            end_before: &anchors_round,
        };
        let mut measured = rounds.measure(plan, &configs, round, &stops, &mut |config| {
            seen.results.push(config.clone());
            let standing = &mut standings[config.config_index];
            // A disturbed measurement says little of the config: it is measured
            // again, up to the limit.
            if config.disturbed && standing.disturbed_in_a_row + 1 < DISTURBED_LIMIT {
                standing.disturbed_in_a_row += 1;
                return;
            }
            standing.disturbed_in_a_row = 0;
            standing.rounds += 1;
            if unjournaled.is_none()
                && let Err(error) = journal.config(&config)
            {
                unjournaled = Some(error);
            }
            let index = config.config_index;
            result.results.push(config);
            if let Some(seconds) = search::projected_s(&result, index) {
                on_event(TuneEvent::Measured {
                    config: index,
                    round,
                    seconds,
                });
            }
        });
        rounds_run += 1;
        let configs_s: f64 = measured.seconds.iter().map(|(_, s)| s).sum();
        // What the round took beyond its configs (starting its measuring process).
        let round_overhead_s = (round_started.elapsed().as_secs_f64() - configs_s).max(0.0);
        let measured_questions = Question::all(&plan.configs, &configs);
        shares.charge(&measured_questions, &measured.seconds, round_overhead_s);
        for message in measured.new_warnings(&mut result) {
            on_event(TuneEvent::Warning { message });
        }
        if let Some(dataset) = measured.dataset.filter(|_| result.dataset.is_empty()) {
            result.dataset = dataset;
        }
        for (index, seconds) in measured.seconds {
            standings[index].last_cost_s = Some(seconds);
        }
        if let Some(error) = unjournaled {
            break (TuneStop::Failed, Some(error));
        }
        match measured.end {
            RoundEnd::Done | RoundEnd::Cut => {}
            RoundEnd::Deadline => break (TuneStop::Budget, None),
            RoundEnd::Stopped => break (TuneStop::Cancelled, Some(Error::Cancelled)),
            RoundEnd::Failed(error) => break (TuneStop::Failed, Some(error)),
        }
        let seen_all = |q: &&Question| {
            let seen_one = |a: &usize| seen.results.iter().any(|r| r.config_index == *a);
            q.configs.iter().all(seen_one)
        };
        for question in by_question.iter().filter(seen_all) {
            if !modelled.contains(&question.first) {
                search::predict(plan, &seen, &mut standings, question.first, on_event);
                modelled.push(question.first);
            }
        }
        if round > 0 {
            search::eliminate(&result, &mut standings, &configs, round, on_event);
        }
        let questions: Vec<Question> = search::open_questions(&result, &mut standings, on_event)
            .into_iter()
            .map(|q| round_plan::anchors_first(q, &anchors, &seen))
            .collect();
        if questions.is_empty() {
            break (TuneStop::Settled, None);
        }
        round += 1;
        queue = round_plan::next_round(
            &questions,
            &plan.configs,
            &standings,
            &shares,
            round_overhead_s,
        );
        open = round_plan::in_turn(&questions);
    };
    result.status = match (&stop, &error) {
        (TuneStop::Cancelled, _) => RunStatus::Cancelled,
        (TuneStop::Failed, Some(error)) => RunStatus::Failed {
            error: error.to_string(),
        },
        _ => RunStatus::Finished,
    };
    result.tune = Some(trail::trail(
        &result, &standings, &anchors, stop, budget_s, started, rounds_run,
    ));
    let journaled = match &result.tune {
        Some(trail) => journal.tune(trail),
        None => Ok(()),
    }
    .and_then(|()| journal.end(&result.status, Some(&result.dataset)));
    match journaled {
        Err(unjournaled) if error.is_none() => {
            result.status = RunStatus::Failed {
                error: unjournaled.to_string(),
            };
            Ok((result, Some(unjournaled)))
        }
        _ => Ok((result, error)),
    }
}

/// The run as a tune starts it: the whole space, nothing measured.
fn header(plan: &Plan) -> RunResult {
    let started_unix_s = loaderbench_measure::run_header::unix_now_s();
    RunResult {
        repeats: 1,
        ..RunResult::starting(plan, started_unix_s)
    }
}

/// The anchors, per question (each runtime its own): the config with the fewest workers,
/// the one nearest the core count and the one with the most, each the first in the grid
/// with its count; then, for each way of starting workers (`Config::worker_start`) none
/// of those has, its config nearest the core count, so that the model learns what its
/// workers cost to start (a spawned worker's many times a forked one's).
fn anchors(plan: &Plan, cores: usize) -> Vec<usize> {
    let workers = |i: usize| plan.configs[i].num_workers;
    let mut chosen: BTreeSet<usize> = BTreeSet::new();
    for (first, config) in plan.configs.iter().enumerate() {
        let asked_before = plan.configs[..first]
            .iter()
            .any(|c| crate::recommend::same_question(c, config));
        if asked_before {
            continue;
        }
        let question: Vec<usize> = (0..plan.configs.len())
            .filter(|&i| crate::recommend::same_question(&plan.configs[i], config))
            .collect();
        let all = question.iter().copied();
        let near_cores = |i: &usize| (workers(*i).abs_diff(cores), *i);
        let fewest = all.clone().min_by_key(|&i| (workers(i), i));
        let most = all.clone().min_by_key(|&i| (usize::MAX - workers(i), i));
        let near = all.min_by_key(near_cores);
        chosen.extend([fewest, near, most].into_iter().flatten());
        for &i in &question {
            let start = plan.configs[i].worker_start();
            let known = chosen
                .iter()
                .any(|&c| question.contains(&c) && plan.configs[c].worker_start() == start);
            if !known {
                let alike = question
                    .iter()
                    .copied()
                    .filter(|&c| plan.configs[c].worker_start() == start);
                chosen.extend(alike.min_by_key(near_cores));
            }
        }
    }
    chosen.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_engine::preset::{Preset, Runtime};

    #[test]
    fn each_runtime_has_its_own_anchors() {
        let preset = Preset {
            num_workers: vec![0, 1, 2, 4],
            runtime: vec![Runtime::Loaderbench, Runtime::Pytorch, Runtime::Spdl],
            ..Preset::default()
        };
        let plan = Plan::from_preset(&preset, None).unwrap();
        let chosen: Vec<(Runtime, usize)> = anchors(&plan, 2)
            .into_iter()
            .map(|i| (plan.configs[i].runtime, plan.configs[i].num_workers))
            .collect();
        for runtime in [Runtime::Loaderbench, Runtime::Pytorch, Runtime::Spdl] {
            for workers in [0, 2, 4] {
                assert!(
                    chosen.contains(&(runtime, workers)),
                    "{runtime:?} nw={workers}: {chosen:?}"
                );
            }
        }
        assert_eq!(chosen.len(), 9, "{chosen:?}");
    }

    /// PyTorch's fork and spawn configs of one question: the fork ones give the three
    /// anchors by worker count, and spawn its own nearest the cores.
    #[test]
    fn each_way_of_starting_workers_has_an_anchor() {
        use loaderbench_engine::preset::StartMethod;
        let preset = Preset {
            num_workers: vec![0, 1, 2, 4],
            runtime: vec![Runtime::Pytorch],
            start_method: vec![StartMethod::Fork, StartMethod::Spawn],
            ..Preset::default()
        };
        let plan = Plan::from_preset(&preset, None).unwrap();
        let chosen: Vec<(&str, usize)> = anchors(&plan, 2)
            .into_iter()
            .map(|i| (plan.configs[i].worker_start(), plan.configs[i].num_workers))
            .collect();
        let mut expected = vec![("none", 0), ("fork", 2), ("fork", 4), ("spawn", 2)];
        let mut sorted = chosen.clone();
        sorted.sort();
        expected.sort();
        assert_eq!(sorted, expected, "{chosen:?}");
    }
}
