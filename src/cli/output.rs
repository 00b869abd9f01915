//! What the CLI prints and writes about a run, live or saved: one table per pipeline with
//! the machine, the A/A check and the analysis; and the `--json/--csv/--md` exports, to a
//! file or, given `-`, to standard output.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use loaderbench::analysis::{Analysis, report};
use loaderbench::export::{self, Exporter};
use loaderbench::results::RunResult;
use loaderbench::{Error, Result};

/// Where to write the results; `-` is standard output.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Also write the results as JSON (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write the results as CSV, one row per config, repeat and epoch (`-`: standard
    /// output).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Also write the results tables as Markdown (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    md: Option<PathBuf>,
}

impl ExportArgs {
    fn requests(&self) -> [(Option<&Path>, &dyn Exporter); 3] {
        [
            (self.json.as_deref(), &export::Json),
            (self.csv.as_deref(), &export::Csv),
            (self.md.as_deref(), &export::Markdown),
        ]
    }

    /// True when an export goes to standard output, which then holds nothing else.
    pub fn to_stdout(&self) -> bool {
        self.requests()
            .iter()
            .any(|(path, _)| path.is_some_and(is_stdout))
    }

    /// Writes every requested export.
    pub fn write(&self, result: &RunResult) -> Result<()> {
        for (path, exporter) in self.requests() {
            if let Some(path) = path {
                let bytes = exporter.export(result)?;
                if is_stdout(path) {
                    std::io::stdout()
                        .write_all(&bytes)
                        .map_err(|err| Error::run(format!("writing to standard output: {err}")))?;
                } else {
                    std::fs::write(path, bytes)
                        .map_err(|err| Error::file(path, err.to_string()))?;
                }
            }
        }
        Ok(())
    }
}

fn is_stdout(path: &Path) -> bool {
    path == Path::new("-")
}

/// One table per pipeline, then the machine (each run's, for runs shown together).
pub fn print_tables(result: &RunResult) {
    if result.results.is_empty() {
        return;
    }
    for pipeline in result.pipelines() {
        println!("\n{pipeline} — {}", result.dataset);
        print!("{}", export::markdown::table(result, &pipeline));
    }
    println!("\n{}", result.machine.summary());
    if let Some(python) = result.python() {
        println!("PyTorch runtime: {}", python.summary());
    }
}

/// The A/A check where the run has one; the whole analysis when `recommend`, else the
/// training step's verdicts, if any.
pub fn print_analysis(result: &RunResult, recommend: bool) {
    if result.results.is_empty() {
        return;
    }
    for floor in loaderbench::analysis::aa::noise_floors(result) {
        println!("\n{}", floor.describe());
    }
    let analysis = Analysis::of(result);
    if recommend {
        println!("\n{}", report::text(&analysis).trim_end());
    } else if !analysis.input_bound.is_empty() {
        println!("\nTraining step: {}", result.step.describe());
        for verdict in &analysis.input_bound {
            println!("{}: {}", verdict.label, verdict.verdict);
        }
    }
}
