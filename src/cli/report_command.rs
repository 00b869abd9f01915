//! `loaderbench report` and `loaderbench merge`: saved runs (results JSON or journals,
//! from this machine or any other) without measuring anything. `report` prints what
//! `run` prints and writes the same exports, the app's PNG views included; `merge` writes several runs as one results
//! file. Several runs are overlaid: each config keeps its run's name, and runs from
//! different machines are warned about.

use std::path::{Path, PathBuf};

use clap::Args;

use loaderbench_engine::Error;
use loaderbench_engine::Result;
use loaderbench_measure::results::{RunResult, RunStatus};
use loaderbench_measure::results_file;
use loaderbench_present::{documents, overlay};

use super::output::{self, ExportArgs};

/// Saved runs to print and export.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Results (.json) or journal (.jsonl) files; several are shown together.
    #[arg(required = true, value_name = "RESULTS")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    exports: ExportArgs,
    /// Print the analysis: start-up ledger, scaling, input-bound verdicts and the config
    /// to use.
    #[arg(long)]
    recommend: bool,
    /// Analyse as if the run had this memory limit (`16GiB`): which configs would fit a
    /// machine with less memory, or more.
    #[arg(long, value_name = "SIZE")]
    memory_limit: Option<String>,
}

/// Saved runs to write as one.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Results (.json) or journal (.jsonl) files, two or more.
    #[arg(required = true, num_args = 2.., value_name = "RESULTS")]
    files: Vec<PathBuf>,
    /// Where to write the merged results JSON (`-`: standard output).
    #[arg(long, short, value_name = "FILE")]
    output: PathBuf,
}

impl ReportArgs {
    pub fn exports(&self) -> &ExportArgs {
        &self.exports
    }
}

pub fn report(args: ReportArgs) -> Result<()> {
    args.exports.check_writable(None)?;
    let memory_limit = args
        .memory_limit
        .as_deref()
        .map(super::limits::memory_limit)
        .transpose()?;
    let runs = read_all(&args.files)?;
    let mut result = overlaid(&args.files, runs.clone())?;
    if let Some(limit) = memory_limit {
        let setup = result.setup.as_mut().ok_or_else(|| {
            Error::value("--memory-limit: these results do not hold the preset they ran")
        })?;
        setup.memory_limit = Some(limit);
    }
    if !args.exports.to_stdout() {
        for warning in &result.warnings {
            errln!("warning: {warning}");
        }
        // A run that did not finish says so first (one killed before its first config
        // has no table to show at all).
        for (path, run) in args.files.iter().zip(&runs) {
            if run.status != RunStatus::Finished {
                outln!("{}: {}", path.display(), documents::describe(run));
                if let RunStatus::Failed { error } = &run.status {
                    outln!("  {error}");
                }
            }
        }
        output::print_tables(&result, args.exports.stages);
        output::print_analysis(&result, args.recommend);
    }
    args.exports
        .write(&result, args.files.iter().cloned().zip(runs).collect())
}

pub fn merge(args: MergeArgs) -> Result<()> {
    let result = overlaid(&args.files, read_all(&args.files)?)?;
    for warning in result
        .warnings
        .iter()
        .filter(|w| w.starts_with("machines differ"))
    {
        errln!("warning: {warning}");
    }
    let bytes =
        loaderbench_present::export::Exporter::export(&loaderbench_present::export::Json, &result)?;
    output::write_to(&args.output, &bytes)
}

/// The runs saved in `files`.
fn read_all(files: &[PathBuf]) -> Result<Vec<RunResult>> {
    files.iter().map(|path| results_file::read(path)).collect()
}

/// `runs`, read from `files`, as one (overlaid when there are several).
fn overlaid(files: &[PathBuf], runs: Vec<RunResult>) -> Result<RunResult> {
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let named = overlay::run_names(&paths).into_iter().zip(runs).collect();
    overlay::overlay(named).ok_or_else(|| Error::value("no results file given"))
}
