//! `loaderbench run`: runs a plan on the background runner, shows progress from its
//! events, with `--recommend` measures the configs an unresolved recommendation hinges
//! on further (`loaderbench_analysis::resolve`, for `--resolve-for`), then prints one table per pipeline (with the analysis, a baseline comparison
//! and the training step's verdict where asked for) and writes the requested exports and
//! baseline. Every output is checked before anything is measured, and the exports are
//! written for failed and cancelled runs too, with what was measured: from the journal
//! when the user quits at once, and with the `report` command that rebuilds them when
//! writing fails.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::TryRecvError;

use loaderbench_analysis::resolve::ResolveEvent;
use loaderbench_analysis::{RoundGate, RoundsOptions, baseline, warnings};
use loaderbench_engine::Error;
use loaderbench_engine::Result;
use loaderbench_engine::plan::Plan;
use loaderbench_measure::parent_gate::ParentGate;
use loaderbench_measure::pytorch::IMPORT_LIMIT;
use loaderbench_measure::pytorch::SharedPreloadedPython;
use loaderbench_measure::results::{RunResult, RunStatus};
use loaderbench_measure::time_left::UnitClock;
use loaderbench_measure::{
    Event, RunHandle, RunOptions, claim_journal, default_journal, read_journal,
};

use super::interrupt;
use super::output::{self, ExportArgs};
use super::progress::BatchBar;
use super::{RunArgs, load_plan};

pub fn run(args: RunArgs) -> Result<()> {
    // A signal from here on stops the run with its exports written, however early.
    interrupt::install()?;
    let plan = load_plan(&args.preset)?;
    let baseline = args.baseline.as_deref().map(baseline::load).transpose()?;
    if let Some(name) = &args.save_baseline {
        baseline::path(name)?;
    }
    args.exports.check_writable(args.journal.as_deref())?;
    let journal = prepare_journal(args.journal.clone(), args.append, &plan)?;
    let (exports, saved) = (args.exports.clone(), journal.clone());
    interrupt::on_quit(move || save_from_journal(&exports, &saved));
    // The sweep and the rounds that resolve it fork their scripts from one preloaded
    // Python: the rounds' processes would otherwise import torch once more.
    let preloaded = args
        .recommend
        .then(|| loaderbench_measure::pytorch::share_preloaded(&plan, IMPORT_LIMIT))
        .flatten();
    let (mut result, mut error) = execute(&plan, journal.clone(), args.quiet, preloaded.clone())?;
    if args.recommend && error.is_none() {
        let limit = args
            .resolve_for
            .unwrap_or_else(|| Duration::from_secs_f64(plan.preset.resolve_for_s));
        let progress = if args.quiet {
            Progress::Quiet
        } else {
            Progress::Lines
        };
        error = resolve(&plan, &mut result, limit, &journal, preloaded, progress);
    }
    // With an export on standard output, that is all standard output holds.
    if !args.exports.to_stdout() {
        output::print_tables(&result, args.exports.stages);
        output::print_analysis(&result, args.recommend);
        if let (Some(name), Some(before)) = (&args.baseline, &baseline) {
            super::baseline_command::print_comparison(name, before, &result);
        }
    }
    let name = PathBuf::from(format!("{}.json", result.preset));
    args.exports
        .write(&result, vec![(name, result.clone())])
        .map_err(|err| unwritten(&err, &args.exports, &journal))?;
    if let Some(name) = &args.save_baseline {
        // A baseline is what later runs are judged against: a cancelled or failed sweep
        // must not replace a whole one saved under the same name.
        match &result.status {
            RunStatus::Finished => super::baseline_command::save(name, &result)?,
            status => errln!(
                "baseline `{name}` not saved: the run {}; a baseline keeps a finished run",
                match status {
                    RunStatus::Cancelled => "was cancelled",
                    _ => "failed",
                }
            ),
        }
    }
    error.map_or(Ok(()), Err)
}

/// How resolving shows its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// A line per round and measurement on standard error.
    Lines,
    /// JSON lines on standard output (the app's resolve).
    Events,
    Quiet,
}

/// Measures the configs `result`'s unresolved recommendations hinge on further, for at
/// most `limit`, appending to `journal`, the rounds forking their scripts from
/// `preloaded` where given; returns the error of a stop or a failure (the
/// run's tables and exports are still the caller's to write).
pub fn resolve(
    plan: &Plan,
    result: &mut RunResult,
    limit: Duration,
    journal: &Path,
    preloaded: Option<Arc<SharedPreloadedPython>>,
    progress: Progress,
) -> Option<Error> {
    if limit.is_zero() || loaderbench_analysis::resolve::hinges(result).is_empty() {
        return None;
    }
    if progress == Progress::Lines {
        errln!(
            "not resolved yet: measuring the configs it hinges on for up to {}",
            humantime::format_duration(limit)
        );
    }
    let mut report = |event: ResolveEvent| match progress {
        Progress::Quiet => {}
        Progress::Events => {
            if let Ok(line) = serde_json::to_string(&event) {
                outln!("{line}");
            }
        }
        Progress::Lines => match event {
            ResolveEvent::Round {
                round,
                configs,
                left_s,
            } => {
                let labels: Vec<String> = configs.iter().map(|&i| plan.label(i)).collect();
                errln!("round {round}: {} ({left_s:.0} s left)", labels.join(", "));
            }
            ResolveEvent::Measured { config, seconds } => {
                errln!(
                    "  {}: {} s projected over {} epochs",
                    plan.label(config),
                    loaderbench_engine::seconds(seconds),
                    plan.preset.planned_epochs
                );
            }
            ResolveEvent::NoRoom { needed_s, left_s } => errln!(
                "not measured further: the next round of each open question would take \
                 about {} s, and {} s are left (`--resolve-for` gives more)",
                loaderbench_engine::seconds(needed_s),
                loaderbench_engine::seconds(left_s)
            ),
            ResolveEvent::OutOfTime { unmeasured } => {
                let labels: Vec<String> = unmeasured.iter().map(|&i| plan.label(i)).collect();
                errln!(
                    "not measured further: the time ran out before {} (`--resolve-for` gives \
                     more)",
                    labels.join(", ")
                );
            }
            ResolveEvent::Warning { message } => errln!("warning: {message}"),
        },
    };
    let options = RoundsOptions {
        preloaded,
        gate: (progress == Progress::Events).then(parent_gate),
    };
    let (_, error) = loaderbench_analysis::resolve::resolve(
        plan,
        result,
        limit,
        journal,
        options,
        &interrupt::requested,
        &mut report,
    );
    for message in warnings::attach(result) {
        if progress != Progress::Events {
            errln!("warning: {message}");
        }
    }
    error
}

/// The gate of a process that reports its events to the app: its rounds wait before
/// each epoch until the app's window has drawn and gone quiet.
pub fn parent_gate() -> RoundGate {
    let gate = ParentGate::listen();
    Arc::new(move || gate.wait())
}

/// The run's journal, made before anything is measured: `journal` (refused if it exists,
/// unless `append`), else a new one in the user data directory.
pub fn prepare_journal(journal: Option<PathBuf>, append: bool, plan: &Plan) -> Result<PathBuf> {
    let Some(path) = journal else {
        return default_journal(&plan.preset.name);
    };
    claim_journal(&path, append)?;
    Ok(path)
}

/// Writes the text exports from the journal, for a user quitting at once.
pub fn save_from_journal(exports: &ExportArgs, journal: &Path) {
    let saved = read_journal(journal).and_then(|mut result| {
        result.status = RunStatus::Cancelled;
        warnings::attach(&mut result);
        exports.write_text(&result)
    });
    if let Err(err) = saved {
        errln!("error: {err}");
    }
}

/// An export that could not be written at the end of the run: says which, and how to
/// write it from the journal, which holds everything measured.
pub fn unwritten(error: &Error, exports: &ExportArgs, journal: &Path) -> Error {
    Error::run(format!(
        "{error}; the journal {} keeps what was measured, and `{}` writes the exports from it",
        journal.display(),
        exports.report_command(journal)
    ))
}

/// How long the CLI sleeps when no event is waiting. Waking for each of the thousands of
/// batch events a second takes CPU from the workers being measured (on 2 cores typical
/// thread-worker epochs went from 0.05–0.08 s to 0.02–0.04 s without it); the app drains
/// at its frame rate for the same reason.
const EVENT_POLL: Duration = Duration::from_millis(50);

/// The run's events, taken in bursts at most every [`EVENT_POLL`]; cancels the run once
/// the user presses Ctrl-C, and goes on to its last event (which holds what was measured).
fn paced(handle: &RunHandle) -> impl Iterator<Item = Event> + '_ {
    let mut cancelled = false;
    std::iter::from_fn(move || {
        loop {
            if !cancelled && interrupt::requested() {
                handle.cancel();
                cancelled = true;
            }
            match handle.events().try_recv() {
                Ok(event) => return Some(event),
                Err(TryRecvError::Empty) => std::thread::sleep(EVENT_POLL),
                Err(TryRecvError::Disconnected) => return None,
            }
        }
    })
}

/// Runs `plan` with a progress bar, forking its PyTorch scripts from `preloaded` where
/// given; returns what was measured and, if the run did not finish, why.
pub fn execute(
    plan: &Plan,
    journal: PathBuf,
    quiet: bool,
    preloaded: Option<Arc<SharedPreloadedPython>>,
) -> Result<(RunResult, Option<Error>)> {
    let epochs = plan.preset.epochs + usize::from(plan.preset.warmup);
    let runs_per_config = plan.preset.repeats * epochs;
    let mut progress = BatchBar::new(quiet);
    let mut clock = UnitClock::new(&plan.configs, plan.preset.repeats, epochs);
    let options = RunOptions {
        journal: Some(journal),
        preloaded,
        ..RunOptions::default()
    };
    interrupt::install()?;
    let handle = loaderbench_measure::spawn(plan.clone(), options, || {});
    let mut outcome = None;
    let mut batches_done = 0;
    let started = Instant::now();
    for event in paced(&handle) {
        clock.observe(&event, started.elapsed().as_secs_f64());
        match event {
            Event::DatasetOpening { checked, total } => progress.checking(checked, total),
            Event::Started {
                batches_per_epoch, ..
            } => {
                // Once the dataset has opened and the plan fits it: the journal is made
                // next, and a run refused before has none to name.
                progress.println(format!("journal: {}", handle.journal_path().display()));
                progress
                    .set_total((batches_per_epoch * runs_per_config * plan.configs.len()) as u64);
            }
            Event::Batch {
                config,
                repeat,
                epoch,
                batch,
            } => {
                if batch.index == 0 {
                    progress.at(
                        &plan.label(config),
                        repeat,
                        plan.preset.repeats,
                        epoch,
                        plan.preset.epochs,
                    );
                }
                // Batch events come a few a second; the position says how far it is.
                let left = clock.seconds_left(started.elapsed().as_secs_f64());
                progress.set_position(batches_done + batch.index as u64 + 1, left);
            }
            Event::EpochFinished { result, .. } => batches_done += result.batches as u64,
            Event::Warning { message, .. } => progress.println(format!("warning: {message}")),
            Event::Finished { result } => outcome = Some((*result, None)),
            Event::Cancelled { result } => outcome = Some((*result, Some(Error::Cancelled))),
            Event::Failed {
                error,
                bad_input,
                result,
                ..
            } => {
                let error = if bad_input {
                    Error::value(error)
                } else {
                    Error::run(error)
                };
                outcome = Some((*result, Some(error)));
            }
            _ => {}
        }
    }
    progress.finish();
    handle.join();
    let (mut result, error) =
        outcome.ok_or_else(|| Error::run("the runner stopped without reporting an outcome"))?;
    for message in warnings::attach(&mut result) {
        errln!("warning: {message}");
    }
    Ok((result, error))
}
