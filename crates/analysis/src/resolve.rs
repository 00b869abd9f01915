//! Resolve: a finished run whose recommendation is not resolved is measured further,
//! round after round, until it is or a time limit passes. Each round measures the
//! configs the verdicts hinge on (the pick and every config that could still beat it or
//! tie with it: [`Verdict::hinges_on`](crate::recommend::Verdict)), once each, one
//! after another, as `run` measures them ([`rounds`](crate::rounds)), their order
//! turned each round so that none always runs first; the new repeats are numbered after
//! the run's, appended to its journal and to the result. The open questions share the
//! time ([`time_share`](crate::time_share)): a question whose configs take a tenth of a
//! second (our engine's, beside the PyTorch runtime's of seconds) is measured round
//! after round first, not once per slow round, each question's round costed at what of
//! it fits in the time left; a question with configs the run ended before goes first. A
//! round holds what fits in the time left (each config's last measurement, its
//! question's slowest for one never measured): every question's pick and its likeliest
//! challengers first; a round the limit cuts short keeps every config it finished, and
//! a stopped one (Ctrl-C, the app's Cancel) keeps them and the run's status: its sweep
//! finished. `run --recommend`, `loaderbench resolve` and the app's analysis all
//! resolve through here.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use loaderbench_engine::Error;
use loaderbench_engine::plan::Plan;
use loaderbench_measure::Journal;
use loaderbench_measure::results::{RunResult, RunStatus};

use crate::Analysis;
use crate::recommend::measuring_cost;
use crate::rounds::{RoundEnd, RoundStops, Rounds, RoundsOptions};
use crate::time_share::{Question, TimeShares};

/// What resolving reports as it goes (as JSON lines too, for the app).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum ResolveEvent {
    /// A round starts with these configs, with this many seconds of the limit left.
    Round {
        round: usize,
        configs: Vec<usize>,
        left_s: f64,
    },
    /// A config was measured in a round (its projected time for the planned epochs).
    Measured {
        config: usize,
        seconds: f64,
    },
    /// The next round does not fit: each open question's pick and likeliest challenger
    /// would take about `needed_s` together, and `left_s` are left.
    NoRoom {
        needed_s: f64,
        left_s: f64,
    },
    /// The limit passed during a round, before these configs of it were measured.
    OutOfTime {
        unmeasured: Vec<usize>,
    },
    Warning {
        message: String,
    },
}

/// Why resolving ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResolveEnd {
    /// Every verdict is resolved (or nothing more measured could change one).
    Resolved,
    /// The next round did not fit in what was left of the limit.
    TimeLimit,
    Cancelled,
    Failed,
}

/// Measures `result`'s undecided configs further, for at most `limit`, appending to the
/// journal at `journal`, its rounds as `options` gives them (the preloaded Python they
/// fork their scripts from, the gate before each epoch). Returns why it ended and, for a
/// stop or a failure, the error; `result` holds everything measured either way, so a
/// failure here (no scratch folder, a journal that cannot be written) never costs the
/// caller the finished sweep's tables and exports, nor the rounds measured before it.
pub fn resolve(
    plan: &Plan,
    result: &mut RunResult,
    limit: Duration,
    journal: &Path,
    options: RoundsOptions,
    stop_requested: &dyn Fn() -> bool,
    on_event: &mut dyn FnMut(ResolveEvent),
) -> (ResolveEnd, Option<Error>) {
    let started = Instant::now();
    let deadline = started + limit;
    let opened = Rounds::open(options)
        .map_err(|err| Error::run(format!("cannot measure further: {err}")))
        .and_then(|rounds| Ok((rounds, Journal::reopen(journal)?)));
    // Not started: the run stays as its sweep ended (and as its journal says).
    let (rounds, mut journal) = match opened {
        Ok(opened) => opened,
        Err(error) => return (ResolveEnd::Failed, Some(error)),
    };
    let mut turn = 0;
    // What a round takes beyond its configs (starting its process, opening the dataset,
    // the process's warm-up), as the last round measured it.
    let mut round_overhead_s = 0.0;
    let mut shares = TimeShares::default();
    let (end, error) = loop {
        let questions = open_questions(result);
        if questions.is_empty() {
            break (ResolveEnd::Resolved, None);
        }
        let left_s = limit.as_secs_f64() - started.elapsed().as_secs_f64();
        let room_s = left_s - round_overhead_s;
        let due = due(result, &questions, &shares, (round_overhead_s, room_s));
        let mut configs = fitting(result, &due, room_s);
        if configs.is_empty() {
            // The questions due do not fit; the others may.
            configs = fitting(result, &questions, room_s);
        }
        if configs.is_empty() {
            let needed_s = questions
                .iter()
                .map(|q| {
                    q.configs
                        .iter()
                        .take(2)
                        .map(|&c| measuring_cost::of(result, c))
                        .sum::<f64>()
                })
                .sum::<f64>();
            on_event(ResolveEvent::NoRoom {
                needed_s: needed_s + round_overhead_s,
                left_s,
            });
            break (ResolveEnd::TimeLimit, None);
        }
        let first = turn % configs.len();
        configs.rotate_left(first);
        turn += 1;
        let hinges = configs;
        let round = result
            .results
            .iter()
            .map(|r| r.repeat + 1)
            .max()
            .unwrap_or(0);
        on_event(ResolveEvent::Round {
            round,
            configs: hinges.clone(),
            left_s,
        });
        let round_started = Instant::now();
        // A config is journaled as it finishes; a journal that cannot be written ends
        // resolving as a failure, keeping what was measured.
        let mut unjournaled = None;
        // What each config took.
        let mut measured_s: Vec<(usize, f64)> = Vec::new();
        let stops = RoundStops {
            deadline,
            stop_requested,
            end_before: &|_, _| false,
        };
        let mut measured = rounds.measure(plan, &hinges, round, &stops, &mut |config| {
            measured_s.push((config.config_index, config.cost_s()));
            if unjournaled.is_none()
                && let Err(error) = journal.config(&config)
            {
                unjournaled = Some(error);
            }
            if let Some(seconds) = crate::recommend::projected_s(&config, result.planned_epochs) {
                on_event(ResolveEvent::Measured {
                    config: config.config_index,
                    seconds,
                });
            }
            result.results.push(config);
        });
        for message in measured.new_warnings(result) {
            on_event(ResolveEvent::Warning { message });
        }
        let configs_s: f64 = measured_s.iter().map(|(_, s)| s).sum();
        round_overhead_s = (round_started.elapsed().as_secs_f64() - configs_s).max(0.0);
        shares.charge(&questions, &measured_s, round_overhead_s);
        if let Some(error) = unjournaled {
            break (ResolveEnd::Failed, Some(error));
        }
        match measured.end {
            RoundEnd::Done | RoundEnd::Cut => {}
            RoundEnd::Deadline => {
                let done = |c: &usize| measured_s.iter().any(|(m, _)| m == c);
                let unmeasured = hinges.iter().copied().filter(|c| !done(c)).collect();
                on_event(ResolveEvent::OutOfTime { unmeasured });
                break (ResolveEnd::TimeLimit, None);
            }
            RoundEnd::Stopped => break (ResolveEnd::Cancelled, Some(Error::Cancelled)),
            RoundEnd::Failed(error) => break (ResolveEnd::Failed, Some(error)),
        }
    };
    // A stop keeps the run's status: its sweep finished, and so did the rounds kept; the
    // caller learns of the stop from the end and the error.
    if let Some(error) = error.as_ref().filter(|e| !matches!(e, Error::Cancelled)) {
        result.status = RunStatus::Failed {
            error: error.to_string(),
        };
    }
    match journal.end(&result.status, None) {
        Err(unended) if error.is_none() => {
            result.status = RunStatus::Failed {
                error: unended.to_string(),
            };
            (ResolveEnd::Failed, Some(unended))
        }
        _ => (end, error),
    }
}

/// The questions whose turn it is: those with configs never measured (the run ended
/// before them), whose verdicts are open whatever their other configs show; else as
/// the time shares say, each round costing `overhead_s` and the configs of it that fit
/// in `room_s`, as the round would measure them ([`fitting`]): all of them where there
/// is time, else the pick and its likeliest challengers. Costed whole, a PyTorch
/// question's nine configs (2.3 minutes) were never due in `run --recommend`'s minute,
/// which went to our engine's question, and its pick stayed one round's tie-rule guess
/// beside a config that looked 54% faster.
fn due(
    result: &RunResult,
    questions: &[Question],
    shares: &TimeShares,
    (overhead_s, room_s): (f64, f64),
) -> Vec<Question> {
    let never: Vec<Question> = questions
        .iter()
        .filter(|q| {
            q.configs
                .iter()
                .any(|&c| measuring_cost::last(result, c).is_none())
        })
        .cloned()
        .collect();
    if !never.is_empty() {
        return never;
    }
    shares.due(questions, |q| {
        let fits = fitting(result, std::slice::from_ref(q), room_s);
        let round = if fits.is_empty() { &q.configs } else { &fits };
        round
            .iter()
            .map(|&c| measuring_cost::of(result, c))
            .sum::<f64>()
            + overhead_s
    })
}

/// The questions whose verdict is open, each measuring the configs its verdict hinges
/// on: the pick first, then those most likely to change the decision.
fn open_questions(result: &RunResult) -> Vec<Question> {
    Analysis::of(result)
        .recommendations
        .into_iter()
        .filter_map(|r| {
            let first = *r.verdict.hinges_on.first()?;
            let may_never_settle = r.verdict.may_never_settle;
            Some(
                Question::of(&result.configs, first, r.verdict.hinges_on).waiting(may_never_settle),
            )
        })
        .collect()
}

/// The configs of the next round that fit in `left_s`: taken from the questions in turn,
/// each question's pick, then each one's most likely challenger, and so on, skipping
/// those whose last measurement would not fit; a question that gets only its pick of
/// several gives it back, since a pick alone compares with nothing (a question that
/// hinges on one config, measured while disturbed, keeps it).
fn fitting(result: &RunResult, questions: &[Question], left_s: f64) -> Vec<usize> {
    let mut left = left_s;
    let mut chosen: Vec<usize> = Vec::new();
    let longest = questions.iter().map(|q| q.configs.len()).max().unwrap_or(0);
    for position in 0..longest {
        for question in questions {
            let Some(&config) = question.configs.get(position) else {
                continue;
            };
            let cost = measuring_cost::of(result, config);
            if !chosen.contains(&config) && cost <= left {
                chosen.push(config);
                left -= cost;
            }
        }
    }
    for question in questions {
        let hinges = &question.configs;
        let measured = hinges.iter().filter(|c| chosen.contains(c)).count();
        if measured == 1 && hinges.len() > 1 {
            chosen.retain(|c| !hinges.contains(c));
        }
    }
    chosen
}

/// The configs some verdict of `result` hinges on, in plan order.
pub fn hinges(result: &RunResult) -> Vec<usize> {
    let mut hinges: Vec<usize> = open_questions(result)
        .into_iter()
        .flat_map(|q| q.configs)
        .collect();
    hinges.sort_unstable();
    hinges.dedup();
    hinges
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_measure::fixtures::{config, epoch, result, run};

    /// Configs 0–4 whose last measurement took `seconds[i]` (one epoch each).
    fn measured(seconds: &[f64]) -> RunResult {
        let configs: Vec<_> = (0..seconds.len()).map(|i| config(i, false)).collect();
        let results = seconds
            .iter()
            .enumerate()
            .map(|(i, &s)| run(i, configs[i].clone(), vec![epoch(1, s, s, 1)]))
            .collect();
        result(configs, results)
    }

    fn question(first: usize, hinges: &[usize]) -> Question {
        Question {
            first,
            configs: hinges.to_vec(),
            waits: false,
        }
    }

    #[test]
    fn a_slow_question_does_not_starve_a_quick_one() {
        // A slow question (configs 0–2, 30 s each) and a quick one (3 and 4, 1 s each).
        let run = measured(&[30.0, 30.0, 30.0, 1.0, 1.0]);
        let questions = [question(0, &[0, 1, 2]), question(3, &[3, 4])];
        // All of it fits in 100 s.
        assert_eq!(fitting(&run, &questions, 100.0), [0, 3, 1, 4, 2]);
        // In 40 s the quick question's pair fits, and the slow one's pick alone is given
        // back: a pick alone compares with nothing.
        assert_eq!(fitting(&run, &questions, 40.0), [3, 4]);
        // In 62 s the slow one's pick and its likeliest challenger fit too.
        assert_eq!(fitting(&run, &questions, 62.0), [0, 3, 1, 4]);
        // A question that hinges on one config alone (measured while disturbed) keeps it.
        let lone = [question(0, &[0]), question(3, &[3, 4])];
        assert_eq!(fitting(&run, &lone, 40.0), [0, 3, 4]);
    }

    /// A config the run ended before costs what its question's slowest measured config
    /// took, not nothing: a pick whose challenger was never measured does not fit in
    /// 40 s beside 30-second configs, and the quick question's pair takes the round.
    #[test]
    fn a_config_never_measured_costs_its_question_s_slowest() {
        let mut run = measured(&[30.0, 20.0, 30.0, 1.0, 1.0]);
        run.results.retain(|r| r.config_index != 2);
        assert_eq!(measuring_cost::of(&run, 2), 30.0);
        let questions = [question(0, &[0, 2]), question(3, &[3, 4])];
        assert_eq!(fitting(&run, &questions, 40.0), [3, 4]);
        assert_eq!(fitting(&run, &questions, 62.0), [0, 3, 2, 4]);
    }

    /// A slow question whose whole round does not fit in the time left is costed at
    /// what of it fits (its pick and likeliest challenger), so that it is due once the
    /// quick question has been charged about that much, not a whole round of it: in
    /// `run --recommend`'s minute, a PyTorch question of nine configs (2.3 minutes) was
    /// never due.
    #[test]
    fn a_slow_question_whose_round_does_not_fit_is_due_for_what_of_it_fits() {
        // Configs 0–4 take 30 s each (150 s a round), 5 and 6 a second.
        let run = measured(&[30.0, 30.0, 30.0, 30.0, 30.0, 1.0, 1.0]);
        let questions = [question(0, &[0, 1, 2, 3, 4]), question(5, &[5, 6])];
        let mut shares = TimeShares::default();
        shares.charge(&questions, &[(5, 35.0), (6, 35.0)], 0.0);
        // With time for the whole round, it would end after the quick one's next.
        assert_eq!(
            due(&run, &questions, &shares, (0.0, 1000.0)),
            questions[1..]
        );
        // With 65 s left, its round is its pick and challenger (60 s): due beside it.
        assert_eq!(due(&run, &questions, &shares, (0.0, 65.0)), questions);
        assert_eq!(fitting(&run, &questions, 65.0), [0, 5, 1, 6]);
    }

    /// A question with a config the run ended before goes first, though the quick
    /// question's rounds would end sooner; once every config was measured, the quick
    /// one's turn comes first again.
    #[test]
    fn a_question_with_a_config_never_measured_goes_first() {
        let mut run = measured(&[30.0, 30.0, 30.0, 1.0, 1.0]);
        run.results.retain(|r| r.config_index != 2);
        let questions = [question(0, &[0, 2]), question(3, &[3, 4])];
        let shares = TimeShares::default();
        assert_eq!(
            due(&run, &questions, &shares, (0.0, f64::INFINITY)),
            questions[..1]
        );
        let run = measured(&[30.0, 30.0, 30.0, 1.0, 1.0]);
        assert_eq!(
            due(&run, &questions, &shares, (0.0, f64::INFINITY)),
            questions[1..]
        );
    }
}
