//! `loaderbench resolve`: a saved run whose recommendation is not resolved, measured
//! further (`loaderbench_analysis::resolve`) for at most `--resolve-for`, then printed
//! as `run --recommend` prints it, with the same exports. A journal gets the new rounds
//! appended; a results file's run is first copied to a new journal, so nothing measured
//! is ever lost. Only a run measured on this machine (as its summary gives it: CPU,
//! cores, OS, libtorch, loaderbench) is measured further: rounds from here beside another
//! machine's would be compared as if they were one machine's. With `--events`, progress
//! goes to standard output as JSON lines and nothing else does (the app's resolve).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use loaderbench_engine::Error;
use loaderbench_engine::Result;
use loaderbench_engine::machine::Machine;
use loaderbench_engine::plan::Plan;
use loaderbench_measure::results::RunStatus;
use loaderbench_measure::results_file;
use loaderbench_measure::{BEING_WRITTEN, Journal};

use super::interrupt;
use super::output::{self, ExportArgs};
use super::run_command::{Progress, prepare_journal, resolve, save_from_journal, unwritten};

/// A saved run to measure further.
#[derive(Debug, Args)]
pub struct ResolveArgs {
    /// The run: its journal (.jsonl), which the new rounds are appended to, or its
    /// results (.json), whose run is copied to a new journal first.
    #[arg(value_name = "RUN")]
    run: PathBuf,
    /// How long to go on measuring while the recommendation is not resolved (`90s`,
    /// `5m`, or seconds: `90`); default the run's preset's `resolve_for_s` (a minute).
    #[arg(long, value_parser = super::limits::time_limit)]
    resolve_for: Option<Duration>,
    #[command(flatten)]
    exports: ExportArgs,
    /// Where a results file's run is journaled (default: the user data directory).
    #[arg(long, value_name = "FILE")]
    journal: Option<PathBuf>,
    /// No progress.
    #[arg(long, short)]
    quiet: bool,
    /// Progress as JSON lines on standard output, and no tables (the app's resolve).
    #[arg(long, hide = true)]
    events: bool,
}

impl ResolveArgs {
    pub fn exports(&self) -> &ExportArgs {
        &self.exports
    }
}

pub fn resolve_saved(args: ResolveArgs) -> Result<()> {
    let mut result = results_file::read(&args.run)?;
    // Only a journal another loaderbench is writing reads as still running.
    if result.status == RunStatus::Running {
        return Err(Error::file(&args.run, BEING_WRITTEN));
    }
    let here = Machine::current().summary();
    if result.machine.summary() != here {
        return Err(Error::file(
            &args.run,
            format!(
                "was measured on {}, and this is {here}: rounds measured here would be \
                 compared with its as one machine's, so it cannot be measured further here",
                result.machine.summary()
            ),
        ));
    }
    let setup = result.setup.clone().ok_or_else(|| {
        Error::file(
            &args.run,
            "holds no preset (it was saved before runs kept theirs), so it cannot be \
             measured further",
        )
    })?;
    let mut plan = Plan::from_preset(&setup, Some(&args.run))?;
    if !plan.settles(&result.configs) {
        return Err(Error::file(
            &args.run,
            "its preset gives other configs than the run measured, so it cannot be \
             measured further",
        ));
    }
    // Measured further as it was measured (an earlier loaderbench's copies of the config
    // without workers included), so each result keeps its config.
    plan.configs = result.configs.clone();
    // The journal measured further: the run's own, else the one its results go to.
    let is_journal = args.run.extension().is_some_and(|e| e == "jsonl");
    let measured_into = if is_journal {
        Some(args.run.as_path())
    } else {
        args.journal.as_deref()
    };
    args.exports.check_writable(measured_into)?;
    // What the run was saved with (a journal's cut line, a run appended to another),
    // before it is measured further, as `report` says it.
    if !args.events {
        for warning in &result.warnings {
            errln!("warning: {warning}");
        }
    }
    let journal = if is_journal {
        args.run.clone()
    } else {
        let path = prepare_journal(args.journal.clone(), false, &plan)?;
        let mut copy = Journal::create(&path, &result)?;
        copy.end(&result.status, None)?;
        path
    };
    interrupt::install()?;
    let (exports, saved) = (args.exports.clone(), journal.clone());
    interrupt::on_quit(move || save_from_journal(&exports, &saved));
    let progress = if args.events {
        Progress::Events
    } else if args.quiet {
        Progress::Quiet
    } else {
        Progress::Lines
    };
    let limit = args
        .resolve_for
        .unwrap_or_else(|| Duration::from_secs_f64(setup.resolve_for_s));
    let error = resolve(&plan, &mut result, limit, &journal, None, progress);
    if !args.exports.to_stdout() && !args.events {
        output::print_tables(&result, args.exports.stages);
        output::print_analysis(&result, true);
    }
    let name = PathBuf::from(format!("{}.json", result.preset));
    args.exports
        .write(&result, vec![(name, result.clone())])
        .map_err(|err| unwritten(&err, &args.exports, &journal))?;
    error.map_or(Ok(()), Err)
}
