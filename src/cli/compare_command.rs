//! `loaderbench compare`: runs every config of a preset on both runtimes (adding the
//! one the preset lacks) and prints, per config, ours against PyTorch's first batch and
//! epochs with the ratio PyTorch / ours.

use loaderbench_engine::Error;
use loaderbench_engine::Result;
use loaderbench_engine::preset::Runtime;
use loaderbench_present::compare;

use super::output::print_tables;
use super::run_command::{execute, prepare_journal};
use super::{CompareArgs, load_preset, plan_of};

pub fn compare(args: CompareArgs) -> Result<()> {
    let (mut preset, origin) = load_preset(&args.preset)?;
    let plan = plan_of(&preset, &origin, &args.preset)?;
    let runtimes = |runtime| plan.configs.iter().any(|c| c.runtime == runtime);
    if !(runtimes(Runtime::Loaderbench) && runtimes(Runtime::Pytorch)) {
        preset.set("runtime", "loaderbench,pytorch")?;
    }
    let plan = plan_of(&preset, &origin, &args.preset)?;
    let journal = prepare_journal(args.journal, args.append, &plan)?;
    let (result, error) = execute(&plan, journal, args.quiet, None)?;
    print_tables(&result, false);
    if compare::rows(&result).is_empty() {
        return Err(error.unwrap_or_else(|| Error::run("no config was measured on both runtimes")));
    }
    outln!(
        "\nPyTorch's DataLoader against loaderbench (seconds; pytorch/ours above 1: ours is faster)"
    );
    out!("{}", compare::table(&result));
    error.map_or(Ok(()), Err)
}
