//! The command line: `run`, `tune`, `compare`, `report`, `merge`, `validate`, `presets`,
//! `baseline`, `shards` and `gui` (the default when the `gui` feature is on), parsed with clap.
//! Exit codes: 0 success, 1 the run failed, 2 bad input (a preset, a dataset or results
//! file, a `--set` value, an output that cannot be written), 128 + the signal's number
//! when stopped from outside (130 Ctrl-C, 143 SIGTERM; after writing what was measured).

#[macro_use]
mod say;

mod baseline_command;
mod compare_command;
mod interrupt;
mod limits;
mod output;
mod progress;
mod report_command;
mod resolve_command;
mod run_command;
mod shards_command;
mod tune_command;
mod validate_command;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use loaderbench_engine::Error;
use loaderbench_engine::builtin;
use loaderbench_engine::error::FieldPath;
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Preset;

/// Measure and tune deep-learning data-loader configurations.
#[derive(Debug, Parser)]
#[command(name = "loaderbench", version, about, long_about = None)]
struct Cli {
    /// With no command, the desktop app opens (when built with the `gui` feature).
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a preset's sweep and print the results table for each pipeline.
    Run(RunArgs),
    /// Find the best settings for a preset within a time budget: predict from a few
    /// configs, measure the promising ones in rounds, drop the slower, stop when settled.
    Tune(tune_command::TuneArgs),
    /// Check a preset (and any --set values) without running it: its dataset opens, every
    /// config gets a batch, and its step and Python code load.
    Validate(PresetArgs),
    /// List the built-in presets.
    Presets,
    /// Save, list and compare against named baselines.
    #[command(subcommand)]
    Baseline(baseline_command::BaselineCommand),
    /// Run a preset on loaderbench and on PyTorch's DataLoader and compare them per config.
    Compare(CompareArgs),
    /// Print and export saved runs (results JSON or journals, from any machine); several
    /// are shown together.
    Report(report_command::ReportArgs),
    /// Measure a saved run further while its recommendation is not resolved, then print
    /// it as `run --recommend` does.
    Resolve(resolve_command::ResolveArgs),
    /// Write several saved runs as one results file, each config named by its run.
    Merge(report_command::MergeArgs),
    /// Convert an image folder into tar shards (WebDataset's layout) for a `shards` dataset.
    Shards(shards_command::ShardsArgs),
    /// Open the desktop app.
    #[cfg(feature = "gui")]
    Gui(GuiArgs),
    /// Measures a plan read from stdin for the app, streaming events on stdout.
    #[command(name = "__measure", hide = true)]
    Measure(MeasureArgs),
    /// One rank of a config measured with several ranks (started by the coordinator).
    #[command(name = "__rank", hide = true)]
    Rank,
    /// A spawned loader worker (started by the loader itself, over inherited pipes).
    #[cfg(unix)]
    #[command(name = "__worker", hide = true)]
    Worker(WorkerArgs),
}

/// The pipes a spawned worker was handed.
#[cfg(unix)]
#[derive(Debug, Args)]
struct WorkerArgs {
    #[arg(long)]
    tasks_fd: i32,
    #[arg(long)]
    results_fd: i32,
}

/// How the desktop app starts.
#[cfg(feature = "gui")]
#[derive(Debug, Default, Args)]
struct GuiArgs {
    /// A preset file (.ron) or built-in name to open (default: the last one, else
    /// seed-light), and saved runs to show (results .json or journal .jsonl files).
    #[arg(value_name = "PRESET|RESULTS")]
    files: Vec<String>,
    /// Start the run as soon as the window opens.
    #[arg(long)]
    run: bool,
    /// Where run journals go (default: the user data directory).
    #[arg(long, value_name = "DIR")]
    journal_dir: Option<PathBuf>,
    /// Write the results as JSON when the run ends.
    #[arg(long, value_name = "FILE", requires = "run")]
    json: Option<PathBuf>,
    /// Close the window when the run ends, with the exit code `run` would give.
    #[arg(long, requires = "run")]
    exit: bool,
}

/// The hidden child that measures for the app.
#[derive(Debug, Args)]
struct MeasureArgs {
    /// Where to append results as each config finishes.
    #[arg(long, value_name = "FILE")]
    journal: Option<PathBuf>,
}

/// A preset and the edits made to it on the command line.
#[derive(Debug, Args)]
pub struct PresetArgs {
    /// A preset file (.ron), or the name of a built-in preset (see `loaderbench presets`).
    preset: String,
    /// Set a preset field by its path to any value a preset file gives it, e.g. `--set
    /// num_workers=0,2,4 --set dataset.path=DIR --set 'step=mlp(hidden: 64)'`. A single
    /// value replaces a sweep list.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// The memory a config may take at the end of an epoch of the whole dataset (`16GiB`,
    /// `512MiB`): a config projected past it is never recommended. Default: the memory
    /// available when the run starts (the preset's `memory_limit` where it has one).
    #[arg(long, value_name = "SIZE")]
    memory_limit: Option<String>,
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    preset: PresetArgs,
    #[command(flatten)]
    exports: output::ExportArgs,
    /// Where to append results as each config finishes (default: the user data directory).
    #[arg(long, value_name = "FILE")]
    journal: Option<PathBuf>,
    /// Add this run to the --journal FILE that exists already (it is refused otherwise).
    #[arg(long, requires = "journal")]
    append: bool,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    /// Print the analysis: start-up ledger, scaling, input-bound verdicts and the config
    /// to use, measuring the configs an unresolved recommendation hinges on further
    /// (see `--resolve-for`).
    #[arg(long)]
    recommend: bool,
    /// With `--recommend`: how long to go on measuring while the recommendation is not
    /// resolved, as people write it (`90s`, `5m`, `90` seconds, `0` for not at all); default the
    /// preset's `resolve_for_s` (a minute).
    #[arg(long, value_parser = limits::time_limit, requires = "recommend")]
    resolve_for: Option<std::time::Duration>,
    /// Compare the results with a saved baseline.
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// Save the results as a baseline under this name.
    #[arg(long, value_name = "NAME")]
    save_baseline: Option<String>,
}

/// A preset to run on both runtimes.
#[derive(Debug, Args)]
struct CompareArgs {
    #[command(flatten)]
    preset: PresetArgs,
    /// Where to append results as each config finishes (default: the user data directory).
    #[arg(long, value_name = "FILE")]
    journal: Option<PathBuf>,
    /// Add this run to the --journal FILE that exists already (it is refused otherwise).
    #[arg(long, requires = "journal")]
    append: bool,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

/// Parses the command line and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.command.as_ref().is_some_and(draws_png) {
        output::quiet_headless_vulkan();
    }
    // No command opens the desktop app where there is one.
    if cli
        .command
        .as_ref()
        .map_or(cfg!(feature = "gui"), may_use_cuda)
    {
        loaderbench_engine::device::load_cuda();
    }
    let outcome = match cli.command {
        #[cfg(unix)]
        Some(Command::Worker(args)) => {
            let code =
                loaderbench_engine::loader::process::worker_main(args.tasks_fd, args.results_fd);
            return ExitCode::from(u8::try_from(code).unwrap_or(1));
        }
        Some(Command::Rank) => return ExitCode::from(loaderbench_measure::rank_main()),
        Some(Command::Measure(args)) => {
            return ExitCode::from(loaderbench_measure::measuring_child::serve(args.journal));
        }
        Some(Command::Run(args)) => run_command::run(args),
        Some(Command::Tune(args)) => tune_command::tune(args),
        Some(Command::Validate(args)) => validate_command::validate(&args),
        Some(Command::Compare(args)) => compare_command::compare(args),
        Some(Command::Report(args)) => report_command::report(args),
        Some(Command::Resolve(args)) => resolve_command::resolve_saved(args),
        Some(Command::Merge(args)) => report_command::merge(args),
        Some(Command::Shards(args)) => shards_command::shards(args),
        Some(Command::Presets) => {
            list_presets();
            Ok(())
        }
        Some(Command::Baseline(command)) => baseline_command::run(command),
        #[cfg(feature = "gui")]
        Some(Command::Gui(args)) => return gui(args),
        #[cfg(feature = "gui")]
        None => return gui(GuiArgs::default()),
        #[cfg(not(feature = "gui"))]
        None => {
            use clap::CommandFactory;
            let _ = Cli::command().print_help();
            return ExitCode::from(2);
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            errln!("error: {error}");
            exit_code(&error)
        }
    }
}

/// Whether `command` renders a PNG without a window.
fn draws_png(command: &Command) -> bool {
    match command {
        Command::Run(args) => args.exports.png().is_some(),
        Command::Tune(args) => args.exports().png().is_some(),
        Command::Report(args) => args.exports().png().is_some(),
        Command::Resolve(args) => args.exports().png().is_some(),
        _ => false,
    }
}

/// Whether `command` may put tensors on a CUDA device, so loading `libtorch_cuda` (a
/// dlopen that can take long where CUDA is installed) is worth its time. Spawned workers
/// build CPU batches only and must start fast.
fn may_use_cuda(command: &Command) -> bool {
    match command {
        Command::Run(_)
        | Command::Tune(_)
        | Command::Resolve(_)
        | Command::Validate(_)
        | Command::Compare(_)
        | Command::Measure(_) => true,
        // A rank puts batches on the config's device.
        Command::Rank => true,
        #[cfg(feature = "gui")]
        Command::Gui(_) => true,
        Command::Presets
        | Command::Baseline(_)
        | Command::Report(_)
        | Command::Merge(_)
        | Command::Shards(_) => false,
        #[cfg(unix)]
        Command::Worker(_) => false,
    }
}

fn exit_code(error: &Error) -> ExitCode {
    if matches!(error, Error::Cancelled) {
        ExitCode::from(interrupt::exit_code())
    } else if error.is_bad_input() {
        ExitCode::from(2)
    } else {
        ExitCode::from(1)
    }
}

/// Loads the preset, applies the `--set`s and checks it all.
fn load_plan(args: &PresetArgs) -> Result<Plan, Error> {
    let (preset, origin) = load_preset(args)?;
    plan_of(&preset, &origin, args)
}

/// Checks `preset`, loaded from `origin` with `args`' `--set`s applied, and expands its
/// sweep. A problem with a field that a `--set` gave (or one inside it, or holding it) is
/// said of that `--set`: the preset file holds something else there.
fn plan_of(preset: &Preset, origin: &Path, args: &PresetArgs) -> Result<Plan, Error> {
    Plan::from_preset(preset, Some(origin)).map_err(|error| match error {
        Error::BadField(bad) => {
            let given = |set: &&String| {
                let key =
                    FieldPath::from(set.split_once('=').map_or(set.as_str(), |(k, _)| k).trim());
                bad.field.is_within(&key) || key.is_within(&bad.field)
            };
            match args.sets.iter().rev().find(given) {
                Some(set) => Error::value(format!(
                    "--set {set}: field `{}`: {}",
                    bad.field, bad.problem
                )),
                None => Error::BadField(bad),
            }
        }
        error => error,
    })
}

/// Loads the preset and applies the `--set`s; returns it and the path errors name.
fn load_preset(args: &PresetArgs) -> Result<(Preset, PathBuf), Error> {
    let (mut preset, origin) = builtin::load(&args.preset)?;
    for set in &args.sets {
        let (key, value) = set
            .split_once('=')
            .ok_or_else(|| Error::value(format!("--set {set}: expected KEY=VALUE")))?;
        preset.set(key.trim(), value)?;
    }
    if let Some(limit) = &args.memory_limit {
        preset.memory_limit = Some(limits::memory_limit(limit)?);
    }
    Ok((preset, origin))
}

#[cfg(feature = "gui")]
fn gui(args: GuiArgs) -> ExitCode {
    let (results, presets): (Vec<String>, Vec<String>) = args.files.into_iter().partition(|file| {
        loaderbench_present::documents::is_results_file(std::path::Path::new(file))
    });
    if presets.len() > 1 {
        errln!("error: one preset at a time, got {}", presets.join(", "));
        return ExitCode::from(2);
    }
    if let Some(Err(err)) = args.json.as_deref().map(output::check_folder_takes_files) {
        errln!("error: {err}");
        return ExitCode::from(2);
    }
    let launch = loaderbench_gui::Launch {
        preset: presets.into_iter().next(),
        results: results.into_iter().map(PathBuf::from).collect(),
        run_now: args.run,
        journal_dir: args.journal_dir,
        measurer: None,
        json: args.json,
        exit: args.exit.then(Default::default),
    };
    match loaderbench_gui::run(launch) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            errln!("error: the window could not open: {err}");
            ExitCode::from(1)
        }
    }
}

fn list_presets() {
    let names = builtin::names();
    let width = names.iter().map(|name| name.len()).max().unwrap_or(0);
    for name in names {
        let description = builtin::load(name)
            .map(|(preset, _)| preset.description)
            .unwrap_or_default();
        outln!("{name:<width$}  {description}");
    }
}
