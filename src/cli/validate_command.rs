//! `loaderbench validate`: a preset (and its `--set`s) checked without measuring. Every
//! config's device is on this machine; its dataset opens as a run opens it, fits
//! `normalize`'s channels and gives every config a batch; a model step loads; a user's
//! Python code (a Dataset, a collate, a training step) is loaded in Python as the PyTorch
//! runtime loads it, its factory called once, so a missing factory or one that raises
//! fails here rather than at its config in a run; a Dataset of many Python objects that
//! forked workers would copy is warned of. Prints the configs the preset makes and the
//! paths it resolved.

use loaderbench_analysis::memory::GROWTH_MIN_BYTES;
use loaderbench_analysis::mib;
use loaderbench_engine::Error;
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{self, DatasetKind};
use loaderbench_engine::plan::Plan;
use loaderbench_measure::engine_epoch;
use loaderbench_measure::pytorch::{self, LoadedDataset};

use super::PresetArgs;

pub fn validate(args: &PresetArgs) -> Result<(), Error> {
    let plan = super::load_plan(args)?;
    // Every config's device is on this machine, as a run checks before it opens anything.
    for config in &plan.configs {
        config.device.resolve()?;
    }
    // A model is loaded once, as a run loads it; a python step's module must exist.
    plan.preset.step.check_files()?;
    let python_dataset = check_dataset(&plan)?;
    outln!(
        "{}: ok, {} config(s) × {} repeat(s) × {} epoch(s)",
        args.preset,
        plan.configs.len(),
        plan.preset.repeats,
        plan.preset.epochs
    );
    if let Some(found) = python_dataset {
        describe_python_dataset(&plan, found);
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
/// config gets a batch of it; what loading a python one found.
fn check_dataset(plan: &Plan) -> Result<Option<LoadedDataset>, Error> {
    let cancel = CancelToken::new();
    if plan.preset.dataset.kind == DatasetKind::Python {
        let found = pytorch::load_python_code(plan, None, &cancel)?;
        if let Some(whole) = found.samples {
            let used = plan.preset.samples.map_or(whole, |cut| cut.min(whole));
            engine_epoch::check_every_config_has_a_batch_of(plan, used)?;
        }
        return Ok(Some(found));
    }
    let opened = dataset::open(&plan.preset.dataset, plan.preset.samples)?;
    for warning in dataset::open_warnings(plan.preset.samples, &*opened) {
        errln!("warning: {warning}");
    }
    engine_epoch::check_dataset_fits(plan, &*opened)?;
    if pytorch::has_python_code(plan) {
        pytorch::load_python_code(plan, Some(&opened), &cancel)?;
    }
    Ok(None)
}

/// A user's Dataset as loading it found it: its length and its Python objects, with a
/// warning where forked workers would copy a large part of them (copy-on-access; `run`
/// measures how much).
fn describe_python_dataset(plan: &Plan, found: LoadedDataset) {
    let samples = found.samples.map(|n| format!("{n} samples"));
    let objects = found.object_bytes.map(|bytes| {
        if bytes < 1 << 20 {
            "under 1 MiB of Python objects".to_owned()
        } else {
            format!("about {} of Python objects", mib(bytes))
        }
    });
    let parts: Vec<String> = samples.into_iter().chain(objects).collect();
    if !parts.is_empty() {
        outln!("  dataset: {}", parts.join(", "));
    }
    let Some(bytes) = found.object_bytes.filter(|&b| b >= GROWTH_MIN_BYTES) else {
        return;
    };
    let forked: Vec<String> = (0..plan.configs.len())
        .filter(|&i| plan.configs[i].forks_workers())
        .map(|i| plan.label(i))
        .collect();
    if forked.is_empty() {
        return;
    }
    errln!(
        "warning: the Dataset keeps about {} of Python objects (lists, dicts, strings): \
         forked workers ({}) copy their pages as they touch them (copy-on-access), up to a \
         whole copy each; `run` measures how much. An index in numpy arrays or a \
         torch.Tensor is not copied",
        mib(bytes),
        forked.join(", ")
    );
}
