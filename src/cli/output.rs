//! What the CLI prints and writes about a run, live or saved: one table per pipeline with
//! the machine, the A/A check and the analysis; the `--json/--csv/--md` exports, to a
//! file or, given `-`, to standard output; and `--png`, the app's view drawn without a
//! window.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use loaderbench_analysis::Analysis;
use loaderbench_engine::Error;
use loaderbench_engine::Result;
use loaderbench_engine::atomic_file;
use loaderbench_measure::results::RunResult;
use loaderbench_present::analysis_text;
use loaderbench_present::export::{self, Exporter, Format};
use loaderbench_present::views::PngArea;

/// Where to write the results; `-` is standard output.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// Also write the results as JSON (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write the results as CSV, one row per config, repeat and epoch (`-`: standard
    /// output).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Also write the results tables and each recommendation with its snippet as Markdown
    /// (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    md: Option<PathBuf>,
    /// Also write a PNG of the app's view of the results, drawn without a window (`-`:
    /// standard output).
    #[arg(long, value_name = "FILE")]
    png: Option<PathBuf>,
    /// Also print where the time goes: milliseconds per batch in each loader stage.
    #[arg(long)]
    pub stages: bool,
    /// Which view the PNG shows: an area of the app's window (plots; results: plots,
    /// timeline and table; analysis) or one chart alone, as its Export menu offers them.
    #[arg(long, default_value = "plots", requires = "png", value_parser = view_parser())]
    view: PngArea,
}

/// The names of [`PngArea::all`], read back into views.
fn view_parser() -> impl clap::builder::TypedValueParser<Value = PngArea> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(PngArea::all().map(PngArea::name)).map(|name| {
        // The parser accepts only the names `PngArea::all` gave it.
        PngArea::from_name(&name).expect("a name of PngArea::all")
    })
}

impl ExportArgs {
    fn requests(&self) -> [(Option<&Path>, &dyn Exporter); 3] {
        [
            (self.json.as_deref(), Format::Json.exporter()),
            (self.csv.as_deref(), Format::Csv.exporter()),
            (self.md.as_deref(), Format::Markdown.exporter()),
        ]
    }

    /// Where the PNG goes, if one was asked for.
    pub fn png(&self) -> Option<&Path> {
        self.png.as_deref()
    }

    /// True when an export (the PNG included) goes to standard output, which then holds
    /// nothing else.
    pub fn to_stdout(&self) -> bool {
        self.requests()
            .iter()
            .filter_map(|(path, _)| *path)
            .chain(self.png())
            .any(is_stdout)
    }

    /// Writes every requested export, each whatever became of the others (a PNG on a
    /// full disk leaves the JSON beside it written); returns the first failure. `runs`
    /// are the runs `result` shows, each with the file it came from (for the PNG, which
    /// names them as the app does).
    pub fn write(&self, result: &RunResult, runs: Vec<(PathBuf, RunResult)>) -> Result<()> {
        let text = self.write_text(result);
        let png = match &self.png {
            Some(path) => write_png(path, self.view, runs),
            None => Ok(()),
        };
        text.and(png)
    }

    /// Writes the JSON, CSV and Markdown exports (not the PNG, which takes the longest),
    /// each whatever became of the others; returns the first failure.
    pub fn write_text(&self, result: &RunResult) -> Result<()> {
        let mut written = Ok(());
        for (path, exporter) in self.requests() {
            if let Some(path) = path {
                let this = exporter
                    .export(result)
                    .and_then(|bytes| write_to(path, &bytes));
                written = written.and(this);
            }
        }
        written
    }

    /// Checks, before anything is measured, that every export can be written: its
    /// folder exists and takes a new file. A run of hours must not find out at its end.
    /// Two outputs to one place (two exports, or an export and the run's `journal`)
    /// are refused: the second would replace the first, or mix into it on standard
    /// output.
    pub fn check_writable(&self, journal: Option<&Path>) -> Result<()> {
        let flags = [
            ("--json", self.json.as_deref()),
            ("--csv", self.csv.as_deref()),
            ("--md", self.md.as_deref()),
            ("--png", self.png.as_deref()),
            ("--journal", journal),
        ];
        let given: Vec<(&str, &Path)> = flags
            .into_iter()
            .filter_map(|(flag, path)| Some((flag, path?)))
            .collect();
        for (at, &(flag, path)) in given.iter().enumerate() {
            if let Some((earlier, _)) = given[..at]
                .iter()
                .find(|(_, other)| same_place(path, other))
            {
                let place = match is_stdout(path) {
                    true => "standard output".to_owned(),
                    false => path.display().to_string(),
                };
                return Err(Error::value(format!(
                    "{earlier} and {flag} both write to {place}: give each its own file"
                )));
            }
            if flag != "--journal" && !is_stdout(path) {
                check_folder_takes_files(path)?;
            }
        }
        Ok(())
    }

    /// The `loaderbench report` command that writes these exports from `journal`.
    pub fn report_command(&self, journal: &Path) -> String {
        let mut words = vec![
            "loaderbench".to_owned(),
            "report".to_owned(),
            shell_word(journal),
        ];
        let flags = [
            ("--json", &self.json),
            ("--csv", &self.csv),
            ("--md", &self.md),
        ];
        for (flag, path) in flags.into_iter().chain([("--png", &self.png)]) {
            if let Some(path) = path {
                words.extend([flag.to_owned(), shell_word(path)]);
            }
        }
        if self.png.is_some() {
            words.extend(["--view".to_owned(), self.view.name().to_owned()]);
        }
        words.join(" ")
    }
}

/// Checks that `path`'s folder exists and takes a new file, by creating (and removing) a
/// hidden one there; the error names `path` and the problem.
pub fn check_folder_takes_files(path: &Path) -> Result<()> {
    let folder = folder_of(path);
    if !folder.is_dir() {
        return Err(Error::file(
            path,
            format!(
                "cannot be written: the folder {} does not exist",
                folder.display()
            ),
        ));
    }
    tempfile::Builder::new()
        .prefix(".loaderbench-check-")
        .tempfile_in(folder)
        .map(drop)
        .map_err(|err| {
            Error::file(
                path,
                format!(
                    "cannot be written: the folder {} takes no new file ({err})",
                    folder.display()
                ),
            )
        })
}

/// The folder a file goes in (`.` for a bare file name).
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|folder| !folder.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// `path` as one word for a POSIX shell: quoted when it holds anything but plain
/// characters.
fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Mesa's Vulkan device-selection layer asks Wayland or X11 which GPU drives the display,
/// and on a server without a session prints errors for it; a window-less render has no
/// display to match, so the layer is turned off (unless the user set it). Called from
/// `main` before any other thread exists, the only time changing the environment is
/// sound.
pub fn quiet_headless_vulkan() {
    const LAYER_SWITCH: &str = "NODEVICE_SELECT";
    if std::env::var_os(LAYER_SWITCH).is_none() {
        // SAFETY: no other thread exists yet, so none can read the environment meanwhile.
        unsafe { std::env::set_var(LAYER_SWITCH, "1") };
    }
}

#[cfg(feature = "gui")]
fn write_png(path: &Path, view: PngArea, runs: Vec<(PathBuf, RunResult)>) -> Result<()> {
    let bytes = loaderbench_gui::render_png(runs, view, 1.0)?;
    write_to(path, &bytes)
}

#[cfg(not(feature = "gui"))]
fn write_png(_path: &Path, _view: PngArea, _runs: Vec<(PathBuf, RunResult)>) -> Result<()> {
    Err(Error::value(
        "--png draws with the app's code, and this loaderbench was built without the gui feature",
    ))
}

/// Writes `bytes` to the file at `path` whole ([`atomic_file`]), or to standard output
/// for `-`.
pub fn write_to(path: &Path, bytes: &[u8]) -> Result<()> {
    if is_stdout(path) {
        return std::io::stdout()
            .write_all(bytes)
            .map_err(|err| Error::run(format!("writing to standard output: {err}")));
    }
    atomic_file::write(path, bytes)
}

fn is_stdout(path: &Path) -> bool {
    path == Path::new("-")
}

/// Whether `a` and `b` name the same file (as written, from the current directory:
/// `out.json` and `./out.json` are one), or both standard output.
fn same_place(a: &Path, b: &Path) -> bool {
    if is_stdout(a) || is_stdout(b) {
        return is_stdout(a) && is_stdout(b);
    }
    let absolute =
        |path: &Path| std::path::absolute(path).map(|path| path.components().collect::<PathBuf>());
    match (absolute(a), absolute(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// A tune's trail where there is one, one table per pipeline (with where the time goes
/// when `stages`), then the machine.
pub fn print_tables(result: &RunResult, stages: bool) {
    if let Some(trail) = loaderbench_present::tables::tune::table(result) {
        outln!("\n{trail}");
    }
    if result.results.is_empty() {
        return;
    }
    for pipeline in result.pipelines() {
        outln!("\n{pipeline} — {}", result.dataset);
        out!("{}", export::markdown::table(result, &pipeline));
        let stages = stages
            .then(|| loaderbench_present::tables::stages::table(result, &pipeline))
            .filter(|table| !table.is_empty());
        if let Some(table) = stages {
            outln!("\nWhere the time goes (milliseconds per batch):");
            out!("{table}");
        }
    }
    outln!("\n{}", result.machine.summary());
    if let Some(python) = result.python() {
        outln!("PyTorch runtime: {}", python.summary());
    }
}

/// The A/A check where the run has one; the whole analysis when `recommend`, else the
/// training step's verdicts, if any.
pub fn print_analysis(result: &RunResult, recommend: bool) {
    if result.results.is_empty() {
        return;
    }
    for floor in loaderbench_analysis::aa::noise_floors(result) {
        outln!("\n{}", floor.describe());
    }
    let analysis = Analysis::of(result);
    if recommend {
        outln!("\n{}", analysis_text::text(&analysis).trim_end());
    } else if !analysis.input_bound.is_empty() || !analysis.contention.is_empty() {
        outln!("\nTraining step: {}", result.step.describe());
        for line in analysis_text::step_lines(&analysis) {
            outln!("{line}");
        }
    }
}
