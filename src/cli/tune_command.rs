//! `loaderbench tune`: the best settings for a preset within a time budget (the search is
//! `loaderbench_analysis::tune`), with what `run` gives: progress as it goes (each round,
//! each measurement, each config that drops out), then the trail, the tables, the
//! recommendation with its snippet, and the exports, which hold the trail too. Outputs
//! are checked before anything is measured, and a stop keeps everything measured.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use loaderbench_analysis::tune::{TuneEvent, TuneOptions, space};
use loaderbench_analysis::warnings;
use loaderbench_engine::Result;
use loaderbench_engine::machine::Machine;
use loaderbench_engine::plan::Plan;

use super::output::{self, ExportArgs};
use super::run_command::{prepare_journal, save_from_journal, unwritten};
use super::{PresetArgs, interrupt, load_preset, plan_of};

/// A preset to tune within a budget.
#[derive(Debug, Args)]
pub struct TuneArgs {
    #[command(flatten)]
    preset: PresetArgs,
    /// The time the search may take, as people write it: `90s`, `2m`, `1h 30m`, or
    /// seconds (`90`).
    #[arg(long, value_parser = super::limits::budget)]
    budget: Duration,
    /// The configs to search: the preset's lists, or ranges wide for this machine
    /// (num_workers 0 to twice the cores, persistent on and off, prefetch 1 to 8, every
    /// worker kind and start method).
    #[arg(long, value_enum, default_value_t = Space::Preset)]
    space: Space,
    #[command(flatten)]
    exports: ExportArgs,
    /// Where to append results as each config finishes (default: the user data directory).
    #[arg(long, value_name = "FILE")]
    journal: Option<PathBuf>,
    /// Add this run to the --journal FILE that exists already (it is refused otherwise).
    #[arg(long, requires = "journal")]
    append: bool,
    /// No progress.
    #[arg(long, short)]
    quiet: bool,
    /// Progress as JSON lines on standard output, and no tables (the app's tune).
    #[arg(long, hide = true)]
    events: bool,
}

/// Which configs a tune searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Space {
    /// The preset's sweep.
    Preset,
    /// Wide ranges for this machine.
    Wide,
}

impl TuneArgs {
    pub fn exports(&self) -> &ExportArgs {
        &self.exports
    }
}

pub fn tune(args: TuneArgs) -> Result<()> {
    let (mut preset, origin) = load_preset(&args.preset)?;
    if args.space == Space::Wide {
        let machine = Machine::current();
        space::widen(&mut preset, machine.logical_cores, machine.cuda_devices > 0)?;
    }
    let plan = plan_of(&preset, &origin, &args.preset)?;
    args.exports.check_writable(args.journal.as_deref())?;
    let journal = prepare_journal(args.journal.clone(), args.append, &plan)?;
    interrupt::install()?;
    let (exports, saved) = (args.exports.clone(), journal.clone());
    interrupt::on_quit(move || save_from_journal(&exports, &saved));
    if !args.quiet {
        errln!("journal: {}", journal.display());
        errln!(
            "tuning {} configs within {}",
            plan.configs.len(),
            humantime::format_duration(args.budget)
        );
    }
    let options = TuneOptions {
        budget: args.budget,
        journal: journal.clone(),
        gate: args.events.then(super::run_command::parent_gate),
    };
    let events = args.events;
    let mut report = |event: TuneEvent| {
        if events {
            if let Ok(line) = serde_json::to_string(&event) {
                outln!("{line}");
            }
        } else {
            progress(&plan, &event, args.quiet);
        }
    };
    let (mut result, error) =
        loaderbench_analysis::tune::tune(&plan, &options, &interrupt::requested, &mut report)?;
    for message in warnings::attach(&mut result) {
        errln!("warning: {message}");
    }
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

/// One line on standard error per step of the search.
fn progress(plan: &Plan, event: &TuneEvent, quiet: bool) {
    if quiet {
        return;
    }
    let labels = |configs: &[usize]| -> String {
        let names: Vec<String> = configs.iter().map(|&i| plan.label(i)).collect();
        names.join(", ")
    };
    match event {
        TuneEvent::Anchors { configs } => errln!("anchors: {}", labels(configs)),
        TuneEvent::Predicted { .. } => {}
        TuneEvent::Round { round, configs } => {
            errln!("round {round}: {} config(s)", configs.len());
        }
        TuneEvent::Measured {
            config, seconds, ..
        } => errln!(
            "  {}: {} s projected over {} epochs",
            plan.label(*config),
            loaderbench_engine::seconds(*seconds),
            plan.preset.planned_epochs
        ),
        TuneEvent::Eliminated { config, reason } => {
            errln!("  out: {} ({reason})", plan.label(*config));
        }
        TuneEvent::SetAside { config } => {
            errln!(
                "  set aside: {} (in the slower half; back in if the answer comes to hinge on it)",
                plan.label(*config)
            );
        }
        TuneEvent::Reinstated { config } => {
            errln!("  back in: {} (still in the best set)", plan.label(*config));
        }
        TuneEvent::Warning { message } => errln!("warning: {message}"),
    }
}
