//! `loaderbench run`: runs a plan on the background runner, shows progress from its
//! events, then prints one table per pipeline and writes the requested exports. The
//! exports are written for failed and cancelled runs too, with what was measured.

use std::path::{Path, PathBuf};

use loaderbench::bench::{self, Event, RunOptions};
use loaderbench::export::{self, Exporter};
use loaderbench::plan::Plan;
use loaderbench::results::RunResult;
use loaderbench::{Error, Result};

use super::progress::Progress;
use super::{RunArgs, load_plan};

pub fn run(args: RunArgs) -> Result<()> {
    let plan = load_plan(&args.preset)?;
    let (result, error) = execute(&plan, args.journal.clone(), args.quiet)?;
    print_tables(&result);
    write_exports(&args, &result)?;
    error.map_or(Ok(()), Err)
}

/// Runs `plan` with a progress bar; returns what was measured and, if the run did not
/// finish, why.
pub fn execute(
    plan: &Plan,
    journal: Option<PathBuf>,
    quiet: bool,
) -> Result<(RunResult, Option<Error>)> {
    let epochs = plan.epochs + usize::from(plan.warmup);
    let runs_per_config = plan.repeats * epochs;
    let progress = Progress::new(quiet);
    let options = RunOptions { journal };
    let handle = bench::spawn(plan.clone(), options, || {});
    progress.println(format!("journal: {}", handle.journal_path().display()));
    let mut outcome = None;
    for event in handle.events() {
        match event {
            Event::Started {
                batches_per_epoch, ..
            } => {
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
                        plan.repeats,
                        epoch,
                        plan.epochs,
                    );
                }
                progress.batch();
            }
            Event::Warning { message, .. } => progress.println(format!("warning: {message}")),
            Event::Finished { result } => outcome = Some((*result, None)),
            Event::Cancelled { result } => outcome = Some((*result, Some(Error::Cancelled))),
            Event::Failed {
                error,
                bad_input,
                result,
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
    outcome.ok_or_else(|| Error::run("the runner stopped without reporting an outcome"))
}

pub fn print_tables(result: &RunResult) {
    if result.results.is_empty() {
        return;
    }
    for pipeline in result.pipelines() {
        println!("\n{pipeline} — {}", result.dataset);
        print!("{}", export::markdown::table(result, &pipeline));
    }
    println!("\n{}", result.machine.summary());
}

fn write_exports(args: &RunArgs, result: &RunResult) -> Result<()> {
    let requests: [(&Option<std::path::PathBuf>, &dyn Exporter); 3] = [
        (&args.json, &export::Json),
        (&args.csv, &export::Csv),
        (&args.md, &export::Markdown),
    ];
    for (path, exporter) in requests {
        if let Some(path) = path {
            write_export(path, exporter, result)?;
        }
    }
    Ok(())
}

fn write_export(path: &Path, exporter: &dyn Exporter, result: &RunResult) -> Result<()> {
    let bytes = exporter.export(result)?;
    std::fs::write(path, bytes).map_err(|err| Error::file(path, err.to_string()))
}
