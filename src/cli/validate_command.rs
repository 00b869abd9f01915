//! `loaderbench validate`: a preset (and its `--set`s) checked without measuring. Its
//! dataset opens as a run opens it and every config gets a batch of it; a model step
//! loads; a user's Python code (a Dataset, a collate, a training step) is loaded in
//! Python as the PyTorch runtime loads it, its factory called once, so a missing factory
//! or one that raises fails here rather than at its config in a run. Prints the configs
//! the preset makes and the paths it resolved.

use loaderbench_engine::Error;
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{self, DatasetKind};
use loaderbench_engine::plan::Plan;
use loaderbench_measure::engine_epoch;
use loaderbench_measure::pytorch;

use super::PresetArgs;

pub fn validate(args: &PresetArgs) -> Result<(), Error> {
    let plan = super::load_plan(args)?;
    // A model is loaded once, as a run loads it; a python step's module must exist.
    plan.preset.step.check_files()?;
    let samples = check_dataset(&plan)?;
    outln!(
        "{}: ok, {} config(s) × {} repeat(s) × {} epoch(s)",
        args.preset,
        plan.configs.len(),
        plan.preset.repeats,
        plan.preset.epochs
    );
    if let Some(samples) = samples {
        outln!("  dataset: {samples} samples");
    }
    // Resolved: a preset file's relative paths against its folder, a `--set`'s against
    // the current directory.
    for (field, path) in plan.preset.paths() {
        outln!(
            "  {field}: {}",
            loaderbench_engine::secrets::redact(&path.display().to_string())
        );
    }
    for label in plan.labels() {
        outln!("  {label}");
    }
    for warning in &plan.warnings {
        errln!("warning: {warning}");
    }
    Ok(())
}

/// Opens `plan`'s dataset as a run would (a python one in Python) and checks that every
/// config gets a batch of it; the samples in the whole dataset, where a python one has a
/// length.
fn check_dataset(plan: &Plan) -> Result<Option<usize>, Error> {
    let cancel = CancelToken::new();
    if plan.preset.dataset.kind == DatasetKind::Python {
        let whole = pytorch::load_python_code(plan, None, &cancel)?;
        if let Some(whole) = whole {
            let used = plan.preset.samples.map_or(whole, |cut| cut.min(whole));
            engine_epoch::check_every_config_has_a_batch_of(plan, used)?;
        }
        return Ok(whole);
    }
    let opened = dataset::open(&plan.preset.dataset, plan.preset.samples)?;
    for warning in dataset::open_warnings(plan.preset.samples, &*opened) {
        errln!("warning: {warning}");
    }
    engine_epoch::check_every_config_has_a_batch(plan, &*opened)?;
    if pytorch::has_python_code(plan) {
        pytorch::load_python_code(plan, Some(&opened), &cancel)?;
    }
    Ok(None)
}
