//! The plan's checks: each preset value and each expanded config against what it may
//! hold (naming the field; worker kinds on each runtime in [`super::worker_kinds`]), a
//! user's python dataset against the runtimes that can load it, and the warnings a plan
//! carries (more workers or processes than cores).

use crate::dataset::python_dataset;
use crate::error::{FieldError, Result};
use crate::preset::{Cache, OWN_TRANSFORMS, Preset, Runtime, UnusedFields, WorkerKind};
use crate::transform::PipelineSpec;

use super::{Config, knobs};

/// A problem with `field`; the caller adds the file.
pub(super) fn field(field: &str, problem: impl std::fmt::Display) -> FieldError {
    FieldError::new(None, field, problem.to_string())
}

pub(super) fn check_preset(preset: &Preset) -> std::result::Result<(), FieldError> {
    let positive = |name: &'static str, value: usize| {
        if value == 0 {
            Err(field(name, "must be at least 1"))
        } else {
            Ok(())
        }
    };
    positive("epochs", preset.epochs)?;
    positive("repeats", preset.repeats)?;
    positive("planned_epochs", preset.planned_epochs)?;
    if let Some(problem) = super::step_problem(&preset.step) {
        return Err(field("step", problem));
    }
    if preset.samples == Some(0) {
        return Err(field("samples", "must be at least 1"));
    }
    if preset.worker_timeout_s.is_nan() || preset.worker_timeout_s <= 0.0 {
        return Err(field(
            "worker_timeout_s",
            "must be a positive number of seconds",
        ));
    }
    if !(0.0..1.0).contains(&preset.tie_margin) {
        return Err(field(
            "tie_margin",
            "must be a share from 0 to below 1 (0.05 for 5%)",
        ));
    }
    if !(preset.window_s.is_finite() && preset.window_s > 0.0) {
        return Err(field("window_s", "must be a positive number of seconds"));
    }
    if !(preset.resolve_for_s.is_finite() && preset.resolve_for_s >= 0.0) {
        return Err(field(
            "resolve_for_s",
            "must be a number of seconds, 0 or more",
        ));
    }
    for (name, values) in knobs::lists(preset) {
        if values.is_empty() {
            return Err(field(name, "the list is empty; give at least one value"));
        }
    }
    let normalize = &preset.normalize;
    if normalize.mean.is_empty() || normalize.mean.len() != normalize.std.len() {
        return Err(field(
            "normalize",
            "mean and std must be non-empty lists of the same length",
        ));
    }
    if normalize.std.iter().any(|s| s.is_nan() || *s <= 0.0) {
        return Err(field("normalize", "every std must be positive"));
    }
    for spec in &preset.pipeline {
        crate::transform::check_ops(&spec.ops()).map_err(|err| field("pipeline", err))?;
    }
    super::ranges::check_preset_numbers(preset)
}

/// Checks a config: its values ([`check_values`]), then what its runtime and kinds can
/// run together.
pub(super) fn check_config(config: &Config) -> std::result::Result<(), FieldError> {
    check_values(config)?;
    let engine_processes = matches!(config.worker_kind, WorkerKind::Fork | WorkerKind::Spawn);
    if config.runtime == Runtime::Loaderbench && engine_processes && !cfg!(unix) {
        return Err(field(
            "worker_kind",
            format!(
                "{} workers need a Unix system (Linux or macOS); use thread",
                config.worker_kind.name()
            ),
        ));
    }
    if config.cache == Cache::Cold && !crate::page_cache::SUPPORTED {
        return Err(field(
            "cache",
            "cold is supported on Linux only (posix_fadvise and mincore); use warm",
        ));
    }
    super::spdl_knobs::check(config)?;
    super::worker_kinds::check(config)?;
    if config.runtime.runs_python() {
        crate::transform::check_torchvision(&config.pipeline)
            .map_err(|err| field("pipeline", err))?;
    }
    Ok(())
}

/// Checks each of a config's values on its own: counts of at least 1, and every number
/// within its range.
pub(super) fn check_values(config: &Config) -> std::result::Result<(), FieldError> {
    if config.batch_size == 0 {
        return Err(field("batch_size", "must be at least 1"));
    }
    if config.ranks == 0 {
        return Err(field("ranks", "must be at least 1"));
    }
    if config.prefetch_factor == 0 {
        return Err(field("prefetch_factor", "must be at least 1"));
    }
    super::ranges::check_config_numbers(config)
}

/// Checks a python dataset's configs: its fields, the runtimes that run the python
/// script (the only ones that load user code) and no pipeline of ours (its own code transforms the samples).
/// The configs' pipeline becomes the factory's name, which tables and groups show.
pub(super) fn user_dataset_configs(
    preset: &Preset,
    configs: &mut [Config],
) -> Result<(), FieldError> {
    python_dataset::check(&preset.dataset)?;
    if configs.iter().any(|c| !c.runtime.runs_python()) {
        return Err(field("runtime", python_dataset::ENGINE_REFUSAL));
    }
    if preset.pipeline != [PipelineSpec::Light] {
        return Err(field(
            "pipeline",
            format!("{OWN_TRANSFORMS}; leave pipeline out"),
        ));
    }
    let own = PipelineSpec::Custom {
        name: preset.dataset.factory.clone().unwrap_or_default(),
        ops: Vec::new(),
    };
    for config in configs {
        config.pipeline = own.clone();
    }
    Ok(())
}

/// What the plan of `preset` should know before it runs: more workers than cores, and
/// values given to fields that its configs leave unused ([`UnusedFields`]).
pub(super) fn warnings(preset: &Preset, configs: &[Config]) -> Vec<String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let most_workers = configs.iter().map(|c| c.num_workers).max().unwrap_or(0);
    let mut warnings = Vec::new();
    if most_workers > cores {
        warnings.push(format!(
            "num_workers goes up to {most_workers} but this machine has {cores} logical cores; \
             workers beyond that compete for the same cores"
        ));
    }
    if let Some(config) = configs
        .iter()
        .filter(|c| c.ranks > 1 && c.ranks * c.num_workers > cores)
        .max_by_key(|c| c.ranks * c.num_workers)
    {
        warnings.push(format!(
            "ranks × num_workers goes up to {} × {} = {} but this machine has {cores} logical \
             cores; the ranks' workers compete for the same cores",
            config.ranks,
            config.num_workers,
            config.ranks * config.num_workers
        ));
    }
    warnings.extend(UnusedFields::of(preset).warnings(preset));
    warnings
}
