//! Resolve: a finished run whose recommendation is not resolved is measured further,
//! round after round, until it is or a time limit passes. Each round measures the
//! configs the verdicts hinge on (the pick and every config that could still beat it or
//! tie with it: [`Verdict::hinges_on`](crate::recommend::Verdict)), once each, one after
//! another, as `run` measures them ([`rounds`](crate::rounds)), their order turned each
//! round so that none always runs first; the new repeats are numbered after the run's,
//! appended to its journal and to the result. A round starts only when what it is
//! expected to take (each config's last measurement) fits in the time left; a round
//! the limit cuts short keeps every config it finished. `run --recommend`,
//! `loaderbench resolve` and the app's analysis all resolve through here.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use loaderbench_engine::Error;
use loaderbench_engine::error::Result;
use loaderbench_engine::plan::Plan;
use loaderbench_measure::Journal;
use loaderbench_measure::results::{EpochResult, RunResult, RunStatus};

use crate::Analysis;
use crate::rounds::{self, RoundEnd};

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
    /// A config was measured in a round (its projected time).
    Measured {
        config: usize,
        seconds: f64,
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
/// journal at `journal`. Returns why it ended and, for a stop or a failure, the error;
/// `result` holds everything measured either way.
pub fn resolve(
    plan: &Plan,
    result: &mut RunResult,
    limit: Duration,
    journal: &Path,
    stop_requested: &dyn Fn() -> bool,
    on_event: &mut dyn FnMut(ResolveEvent),
) -> Result<(ResolveEnd, Option<Error>)> {
    let started = Instant::now();
    let deadline = started + limit;
    let scratch =
        tempfile::tempdir().map_err(|err| Error::run(format!("no scratch folder: {err}")))?;
    let mut journal = Journal::reopen(journal)?;
    let mut turn = 0;
    // What a round takes beyond its configs' epochs (opening the dataset, the process's
    // warm-up, each config's loader), as the last round measured it.
    let mut round_overhead_s = 0.0;
    let (end, error) = loop {
        let mut hinges = hinges(result);
        if hinges.is_empty() {
            break (ResolveEnd::Resolved, None);
        }
        let left_s = limit.as_secs_f64() - started.elapsed().as_secs_f64();
        let epochs_s: f64 = hinges.iter().map(|&i| last_cost_s(result, i)).sum();
        if epochs_s + round_overhead_s > left_s {
            break (ResolveEnd::TimeLimit, None);
        }
        let first = turn % hinges.len();
        hinges.rotate_left(first);
        turn += 1;
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
        let scratch_journal = scratch.path().join(format!("round-{round}.jsonl"));
        let measured = rounds::measure(
            plan,
            &hinges,
            round,
            &scratch_journal,
            deadline,
            stop_requested,
        );
        for message in measured.warnings {
            if !result.warnings.contains(&message) {
                on_event(ResolveEvent::Warning {
                    message: message.clone(),
                });
                result.warnings.push(message);
            }
        }
        let measured_s: f64 = measured
            .results
            .iter()
            .flat_map(|r| r.warmup.iter().chain(&r.epochs))
            .map(EpochResult::measured_s)
            .sum();
        round_overhead_s = (round_started.elapsed().as_secs_f64() - measured_s).max(0.0);
        for config in measured.results {
            journal.config(&config)?;
            if let Some(seconds) = crate::recommend::projected_s(&config, result.planned_epochs) {
                on_event(ResolveEvent::Measured {
                    config: config.config_index,
                    seconds,
                });
            }
            result.results.push(config);
        }
        match measured.end {
            RoundEnd::Done => {}
            RoundEnd::Deadline => break (ResolveEnd::TimeLimit, None),
            RoundEnd::Stopped => break (ResolveEnd::Cancelled, Some(Error::Cancelled)),
            RoundEnd::Failed(error) => break (ResolveEnd::Failed, Some(error)),
        }
    };
    if let Some(error) = &error {
        result.status = match error {
            Error::Cancelled => RunStatus::Cancelled,
            error => RunStatus::Failed {
                error: error.to_string(),
            },
        };
    }
    journal.end(&result.status)?;
    Ok((end, error))
}

/// The configs some verdict of `result` hinges on, in plan order.
pub fn hinges(result: &RunResult) -> Vec<usize> {
    let mut hinges: Vec<usize> = Analysis::of(result)
        .recommendations
        .into_iter()
        .flat_map(|r| r.verdict.hinges_on)
        .collect();
    hinges.sort_unstable();
    hinges.dedup();
    hinges
}

/// What measuring config `index` once took last time: its warm-up and epochs (a
/// projected epoch's window).
fn last_cost_s(result: &RunResult, index: usize) -> f64 {
    result
        .results
        .iter()
        .rev()
        .find(|r| r.config_index == index)
        .map_or(0.0, |r| {
            r.warmup
                .iter()
                .chain(&r.epochs)
                .map(EpochResult::measured_s)
                .sum()
        })
}
