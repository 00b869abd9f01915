//! `loaderbench baseline`: save a run's results under a name (from a JSON export or a
//! journal), list the saved ones, and compare a results file against one. Baselines
//! live under the user data directory (`$LOADERBENCH_DATA_DIR` overrides it).

use std::path::PathBuf;

use clap::Subcommand;

use loaderbench_analysis::baseline;
use loaderbench_engine::Error;
use loaderbench_engine::Result;
use loaderbench_measure::read_journal;
use loaderbench_measure::results::RunResult;
use loaderbench_measure::results_file;

#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Save results as baseline NAME: a JSON export, or a journal with --from-journal.
    Save {
        name: String,
        /// A JSON export (`loaderbench run --json FILE`).
        #[arg(
            required_unless_present = "from_journal",
            conflicts_with = "from_journal"
        )]
        result: Option<PathBuf>,
        /// A run's journal (JSON lines), e.g. of a run that was cancelled.
        #[arg(long, value_name = "FILE")]
        from_journal: Option<PathBuf>,
    },
    /// Compare a JSON export with baseline NAME.
    Compare { name: String, result: PathBuf },
    /// List the saved baselines.
    List,
}

pub fn run(command: BaselineCommand) -> Result<()> {
    match command {
        BaselineCommand::Save {
            name,
            result,
            from_journal,
        } => {
            let result = match (result, from_journal) {
                (_, Some(journal)) => {
                    let kept = read_journal(&journal)?;
                    // What the journal says of itself (a cut last line), as `report` says it.
                    for warning in &kept.warnings {
                        errln!("warning: {warning}");
                    }
                    kept
                }
                (Some(path), None) => results_file::read(&path)?,
                (None, None) => return Err(Error::value("give a result file or --from-journal")),
            };
            save(&name, &result)
        }
        BaselineCommand::Compare { name, result } => {
            let before = baseline::load(&name)?;
            let after = results_file::read(&result)?;
            print_comparison(&name, &before, &after);
            Ok(())
        }
        BaselineCommand::List => {
            for name in baseline::names() {
                outln!("{name}");
            }
            Ok(())
        }
    }
}

/// Saves `result` as baseline `name` and says where.
pub fn save(name: &str, result: &RunResult) -> Result<()> {
    if result.results.is_empty() {
        return Err(Error::value(format!(
            "baseline `{name}`: the result has no measured config"
        )));
    }
    let saved = baseline::save(name, result)?;
    outln!(
        "saved baseline `{name}`{}: {}",
        saved.replacing(),
        saved.path.display()
    );
    Ok(())
}

/// Prints the change of every config both runs measured, then the configs one run
/// measured alone.
pub fn print_comparison(name: &str, before: &RunResult, after: &RunResult) {
    let changes = baseline::compare(before, after);
    outln!("\nAgainst baseline `{name}` (typical epoch time, medians)");
    if changes.is_empty() {
        outln!("no config of this run was measured in the baseline");
    }
    for change in changes {
        outln!("{}", change.line());
    }
    for line in baseline::unmatched(before, after) {
        outln!("{line}");
    }
}
