//! Plans: a preset checked and resolved. [`Plan::from_preset`] validates every value
//! (naming the field and the file), expands the sweep into concrete [`Config`]s (the
//! grid of every list, then `extra_configs`, duplicates dropped) and collects warnings
//! such as more workers than cores. The runner only ever sees a plan.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::dataset::DatasetSpec;
use crate::device::DeviceSpec;
use crate::error::{Error, Result};
use crate::preset::{
    BatchTransfer, ConfigPoint, DatasetTransfer, IntraOpThreads, Preset, RunOrder, Runtime,
    StartMethod, WorkerKind,
};
use crate::step::StepCost;
use crate::transform::{Normalize, PipelineSpec};

/// One point of the sweep: every loader knob with a single value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub pipeline: PipelineSpec,
    pub batch_size: usize,
    pub num_workers: usize,
    pub worker_kind: WorkerKind,
    pub persistent_workers: bool,
    pub prefetch_factor: usize,
    pub pin_memory: bool,
    pub in_order: bool,
    pub device: DeviceSpec,
    #[serde(default)]
    pub dataset_transfer: DatasetTransfer,
    #[serde(default)]
    pub batch_transfer: BatchTransfer,
    /// Results from before the runtime knob existed were measured by loaderbench.
    #[serde(default)]
    pub runtime: Runtime,
    /// Only the `pytorch` runtime with workers uses it; elsewhere it is the platform's
    /// default, so configs that differ only there collapse into one.
    #[serde(default)]
    pub start_method: StartMethod,
    /// The consumer's libtorch intra-op threads.
    #[serde(default)]
    pub intra_op_threads: IntraOpThreads,
    /// Training processes, each loading its shard with its own workers.
    #[serde(default = "one_rank")]
    pub ranks: usize,
}

fn one_rank() -> usize {
    1
}

impl Config {
    /// A short label for plots, such as `nw=4 persistent pin`. Knobs that are the same
    /// in every config of the plan (`common`) are left out.
    pub fn label(&self, common: &Config) -> String {
        let mut parts = vec![format!("nw={}", self.num_workers)];
        if self.persistent_workers {
            parts.push("persistent".to_owned());
        }
        if self.pin_memory {
            parts.push("pin".to_owned());
        }
        if self.pipeline != common.pipeline {
            parts.push(self.pipeline.name().to_owned());
        }
        if self.batch_size != common.batch_size {
            parts.push(format!("bs={}", self.batch_size));
        }
        if self.worker_kind != common.worker_kind {
            parts.push(self.worker_kind.name().to_owned());
        }
        if self.prefetch_factor != common.prefetch_factor {
            parts.push(format!("prefetch={}", self.prefetch_factor));
        }
        if !self.in_order {
            parts.push("unordered".to_owned());
        }
        if self.device != common.device {
            parts.push(self.device.to_string());
        }
        if self.dataset_transfer != common.dataset_transfer {
            parts.push(format!("dataset={}", self.dataset_transfer.name()));
        }
        if self.batch_transfer != common.batch_transfer {
            parts.push(format!("batches={}", self.batch_transfer.name()));
        }
        if self.runtime != common.runtime && self.runtime == Runtime::Pytorch {
            parts.push("pytorch".to_owned());
        }
        if self.start_method != common.start_method && self.uses_start_method() {
            parts.push(self.start_method.name().to_owned());
        }
        if self.intra_op_threads != common.intra_op_threads {
            parts.push(format!("threads={}", self.intra_op_threads.name()));
        }
        if self.ranks != common.ranks {
            parts.push(format!("ranks={}", self.ranks));
        }
        parts.join(" ")
    }

    /// Processes that load data: every rank and every worker process of each rank
    /// (thread workers count too, as they compete for the same cores).
    pub fn total_processes(&self) -> usize {
        self.ranks * (1 + self.num_workers)
    }

    /// True when the start method matters: PyTorch's DataLoader with worker processes.
    pub fn uses_start_method(&self) -> bool {
        self.runtime == Runtime::Pytorch && self.num_workers > 0
    }

    /// The same config with the start method reset where it does not matter.
    fn settled(mut self) -> Config {
        if !self.uses_start_method() {
            self.start_method = StartMethod::platform_default();
        }
        self
    }
}

/// Everything a run needs, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub name: String,
    /// The preset file, when the plan came from one.
    pub source: Option<PathBuf>,
    pub dataset: DatasetSpec,
    pub samples: Option<usize>,
    pub epochs: usize,
    pub repeats: usize,
    pub warmup: bool,
    #[serde(default)]
    pub order: RunOrder,
    pub shuffle: bool,
    pub seed: u64,
    pub drop_last: bool,
    pub normalize: Normalize,
    pub worker_timeout_s: f64,
    pub configs: Vec<Config>,
    /// Things worth knowing before the run, such as more workers than cores.
    pub warnings: Vec<String>,
    /// The training step run on each batch.
    pub step: StepCost,
    /// The epochs a training run would take (for the break-even and recommendation).
    pub planned_epochs: usize,
}

impl Plan {
    /// Checks a preset and expands its sweep. `origin` names the preset in errors.
    pub fn from_preset(preset: &Preset, origin: Option<&Path>) -> Result<Plan> {
        let bad = |field: &str, problem: String| match origin {
            Some(path) => Error::file(path, format!("field `{field}`: {problem}")),
            None => Error::value(format!("field `{field}`: {problem}")),
        };
        check_preset(preset).map_err(|(field, problem)| bad(field, problem))?;
        let devices = preset
            .device
            .iter()
            .map(|d| {
                d.parse::<DeviceSpec>()
                    .map_err(|problem| bad("device", problem))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut configs = grid(preset, &devices);
        for (i, point) in preset.extra_configs.iter().enumerate() {
            let field = format!("extra_configs[{i}]");
            configs.push(extra_config(preset, &devices, point).map_err(|p| bad(&field, p))?);
        }
        let mut unique: Vec<Config> = Vec::with_capacity(configs.len());
        for config in configs.into_iter().map(Config::settled) {
            if !unique.contains(&config) {
                unique.push(config);
            }
        }
        let configs = unique;
        for config in &configs {
            check_config(config).map_err(|(field, problem)| bad(field, problem))?;
        }
        if preset.step != StepCost::None && configs.iter().any(|c| c.runtime == Runtime::Pytorch) {
            return Err(bad(
                "step",
                "the pytorch runtime runs no training step, so its figures would not compare; \
                 use step: none, or runtime: [loaderbench]"
                    .to_owned(),
            ));
        }
        let warnings = warnings(&configs);
        Ok(Plan {
            name: preset.name.clone(),
            source: origin.map(Path::to_path_buf),
            dataset: preset.dataset.clone(),
            samples: preset.samples,
            epochs: preset.epochs,
            repeats: preset.repeats,
            warmup: preset.warmup,
            order: preset.order,
            shuffle: preset.shuffle,
            seed: preset.seed,
            drop_last: preset.drop_last,
            normalize: preset.normalize.clone(),
            worker_timeout_s: preset.worker_timeout_s,
            configs,
            warnings,
            step: preset.step,
            planned_epochs: preset.planned_epochs,
        })
    }

    /// The config that holds, for each knob, the value most configs share: labels leave
    /// those values out.
    pub fn common_config(&self) -> Config {
        fn most_common<T: PartialEq + Clone>(values: impl Iterator<Item = T>) -> T {
            let values: Vec<T> = values.collect();
            let count = |v: &T| values.iter().filter(|w| *w == v).count();
            values
                .iter()
                .max_by_key(|v| count(v))
                .cloned()
                .expect("a plan has at least one config")
        }
        let configs = &self.configs;
        Config {
            pipeline: most_common(configs.iter().map(|c| c.pipeline.clone())),
            batch_size: most_common(configs.iter().map(|c| c.batch_size)),
            num_workers: most_common(configs.iter().map(|c| c.num_workers)),
            worker_kind: most_common(configs.iter().map(|c| c.worker_kind)),
            persistent_workers: most_common(configs.iter().map(|c| c.persistent_workers)),
            prefetch_factor: most_common(configs.iter().map(|c| c.prefetch_factor)),
            pin_memory: most_common(configs.iter().map(|c| c.pin_memory)),
            in_order: most_common(configs.iter().map(|c| c.in_order)),
            device: most_common(configs.iter().map(|c| c.device.clone())),
            dataset_transfer: most_common(configs.iter().map(|c| c.dataset_transfer)),
            batch_transfer: most_common(configs.iter().map(|c| c.batch_transfer)),
            // `pytorch` is named wherever our loader is in the plan too, even when it
            // measures fewer configs.
            runtime: if configs.iter().any(|c| c.runtime == Runtime::Loaderbench) {
                Runtime::Loaderbench
            } else {
                Runtime::Pytorch
            },
            start_method: most_common(configs.iter().map(|c| c.start_method)),
            intra_op_threads: most_common(configs.iter().map(|c| c.intra_op_threads)),
            ranks: most_common(configs.iter().map(|c| c.ranks)),
        }
    }

    /// The order the runner measures `(config, repeat)` pairs in, as `order` says.
    pub fn schedule(&self) -> Vec<(usize, usize)> {
        let configs = self.configs.len();
        match self.order {
            RunOrder::Sequential => (0..configs)
                .flat_map(|config| (0..self.repeats).map(move |repeat| (config, repeat)))
                .collect(),
            RunOrder::Interleaved => (0..self.repeats)
                .flat_map(|repeat| (0..configs).map(move |config| (config, repeat)))
                .collect(),
            RunOrder::Shuffled => (0..self.repeats)
                .flat_map(|repeat| {
                    use rand::SeedableRng;
                    use rand::seq::SliceRandom;
                    let mut round: Vec<usize> = (0..configs).collect();
                    let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed ^ repeat as u64);
                    round.shuffle(&mut rng);
                    round.into_iter().map(move |config| (config, repeat))
                })
                .collect(),
        }
    }

    /// The label of config `index` within this plan.
    pub fn label(&self, index: usize) -> String {
        self.configs[index].label(&self.common_config())
    }
}

type FieldProblem = (&'static str, String);

fn check_preset(preset: &Preset) -> std::result::Result<(), FieldProblem> {
    let positive = |field: &'static str, value: usize| {
        if value == 0 {
            Err((field, "must be at least 1".to_owned()))
        } else {
            Ok(())
        }
    };
    positive("epochs", preset.epochs)?;
    positive("repeats", preset.repeats)?;
    positive("planned_epochs", preset.planned_epochs)?;
    if let Some(problem) = preset.step.problem() {
        return Err(("step", problem));
    }
    if preset.samples == Some(0) {
        return Err(("samples", "must be at least 1".to_owned()));
    }
    if preset.worker_timeout_s.is_nan() || preset.worker_timeout_s <= 0.0 {
        return Err((
            "worker_timeout_s",
            "must be a positive number of seconds".to_owned(),
        ));
    }
    let lists: [(&'static str, usize); 15] = [
        ("pipeline", preset.pipeline.len()),
        ("batch_size", preset.batch_size.len()),
        ("num_workers", preset.num_workers.len()),
        ("worker_kind", preset.worker_kind.len()),
        ("persistent_workers", preset.persistent_workers.len()),
        ("prefetch_factor", preset.prefetch_factor.len()),
        ("pin_memory", preset.pin_memory.len()),
        ("in_order", preset.in_order.len()),
        ("device", preset.device.len()),
        ("dataset_transfer", preset.dataset_transfer.len()),
        ("batch_transfer", preset.batch_transfer.len()),
        ("runtime", preset.runtime.len()),
        ("start_method", preset.start_method.len()),
        ("intra_op_threads", preset.intra_op_threads.len()),
        ("ranks", preset.ranks.len()),
    ];
    for (field, len) in lists {
        if len == 0 {
            return Err((
                field,
                "the list is empty; give at least one value".to_owned(),
            ));
        }
    }
    let normalize = &preset.normalize;
    if normalize.mean.is_empty() || normalize.mean.len() != normalize.std.len() {
        return Err((
            "normalize",
            "mean and std must be non-empty lists of the same length".to_owned(),
        ));
    }
    if normalize.std.iter().any(|s| s.is_nan() || *s <= 0.0) {
        return Err(("normalize", "every std must be positive".to_owned()));
    }
    for spec in &preset.pipeline {
        crate::transform::check_ops(&spec.ops()).map_err(|p| ("pipeline", p))?;
    }
    Ok(())
}

fn check_config(config: &Config) -> std::result::Result<(), FieldProblem> {
    if config.batch_size == 0 {
        return Err(("batch_size", "must be at least 1".to_owned()));
    }
    if config.ranks == 0 {
        return Err(("ranks", "must be at least 1".to_owned()));
    }
    if config.prefetch_factor == 0 {
        return Err(("prefetch_factor", "must be at least 1".to_owned()));
    }
    if config.worker_kind != WorkerKind::Thread && !cfg!(unix) {
        return Err((
            "worker_kind",
            format!(
                "{} workers need a Unix system (Linux or macOS); use thread",
                config.worker_kind.name()
            ),
        ));
    }
    if config.runtime == Runtime::Pytorch && config.ranks > 1 {
        return Err((
            "ranks",
            "the pytorch runtime measures one rank only; use ranks: [1] with it, or \
             runtime: [loaderbench]"
                .to_owned(),
        ));
    }
    if config.runtime == Runtime::Pytorch {
        crate::reference::check_pipeline(&config.pipeline).map_err(|p| ("pipeline", p))?;
    }
    Ok(())
}

/// The Cartesian product of every knob's list, in the preset's order: the first knob
/// varies slowest and `num_workers` fastest, so its list reads top to bottom in tables.
fn grid(preset: &Preset, devices: &[DeviceSpec]) -> Vec<Config> {
    let first = extra_config(preset, devices, &ConfigPoint::default())
        .expect("the first value of every list is a valid config");
    let mut configs = vec![first];
    configs = expand(configs, &preset.runtime, |c, v| c.runtime = v);
    configs = expand(configs, &preset.start_method, |c, v| c.start_method = v);
    configs = expand(configs, &preset.pipeline, |c, v| c.pipeline = v);
    configs = expand(configs, &preset.batch_size, |c, v| c.batch_size = v);
    configs = expand(configs, devices, |c, v| c.device = v);
    configs = expand(configs, &preset.worker_kind, |c, v| c.worker_kind = v);
    configs = expand(configs, &preset.dataset_transfer, |c, v| {
        c.dataset_transfer = v
    });
    configs = expand(configs, &preset.batch_transfer, |c, v| c.batch_transfer = v);
    configs = expand(configs, &preset.persistent_workers, |c, v| {
        c.persistent_workers = v
    });
    configs = expand(configs, &preset.pin_memory, |c, v| c.pin_memory = v);
    configs = expand(configs, &preset.prefetch_factor, |c, v| {
        c.prefetch_factor = v
    });
    configs = expand(configs, &preset.in_order, |c, v| c.in_order = v);
    configs = expand(configs, &preset.intra_op_threads, |c, v| {
        c.intra_op_threads = v
    });
    configs = expand(configs, &preset.ranks, |c, v| c.ranks = v);
    expand(configs, &preset.num_workers, |c, v| c.num_workers = v)
}

/// Every config once for each of `values`, with `set` applying the value.
fn expand<T: Clone>(
    configs: Vec<Config>,
    values: &[T],
    set: impl Fn(&mut Config, T),
) -> Vec<Config> {
    configs
        .into_iter()
        .flat_map(|config| {
            values
                .iter()
                .map(|value| {
                    let mut config = config.clone();
                    set(&mut config, value.clone());
                    config
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn extra_config(
    preset: &Preset,
    devices: &[DeviceSpec],
    point: &ConfigPoint,
) -> std::result::Result<Config, String> {
    let device = match &point.device {
        Some(text) => text.parse::<DeviceSpec>()?,
        None => devices[0].clone(),
    };
    Ok(Config {
        pipeline: point
            .pipeline
            .clone()
            .unwrap_or_else(|| preset.pipeline[0].clone()),
        batch_size: point.batch_size.unwrap_or(preset.batch_size[0]),
        num_workers: point.num_workers.unwrap_or(preset.num_workers[0]),
        worker_kind: point.worker_kind.unwrap_or(preset.worker_kind[0]),
        persistent_workers: point
            .persistent_workers
            .unwrap_or(preset.persistent_workers[0]),
        prefetch_factor: point.prefetch_factor.unwrap_or(preset.prefetch_factor[0]),
        pin_memory: point.pin_memory.unwrap_or(preset.pin_memory[0]),
        in_order: point.in_order.unwrap_or(preset.in_order[0]),
        device,
        dataset_transfer: point.dataset_transfer.unwrap_or(preset.dataset_transfer[0]),
        batch_transfer: point.batch_transfer.unwrap_or(preset.batch_transfer[0]),
        runtime: point.runtime.unwrap_or(preset.runtime[0]),
        start_method: point.start_method.unwrap_or(preset.start_method[0]),
        intra_op_threads: point.intra_op_threads.unwrap_or(preset.intra_op_threads[0]),
        ranks: point.ranks.unwrap_or(preset.ranks[0]),
    })
}

fn warnings(configs: &[Config]) -> Vec<String> {
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
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_order_measures_every_config_and_repeat_once() {
        let mut preset = Preset {
            num_workers: vec![0, 1, 2],
            repeats: 2,
            ..Preset::default()
        };
        let mut schedule = |order| {
            preset.order = order;
            Plan::from_preset(&preset, None).unwrap().schedule()
        };
        assert_eq!(
            schedule(RunOrder::Interleaved),
            [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]
        );
        assert_eq!(
            schedule(RunOrder::Sequential),
            [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
        );
        let mut shuffled = schedule(RunOrder::Shuffled);
        assert!(shuffled[..3].iter().all(|&(_, repeat)| repeat == 0));
        shuffled.sort();
        assert_eq!(shuffled, schedule(RunOrder::Sequential));
    }

    fn preset() -> Preset {
        Preset {
            num_workers: vec![0, 2, 4, 8],
            extra_configs: vec![
                ConfigPoint {
                    num_workers: Some(4),
                    persistent_workers: Some(true),
                    ..ConfigPoint::default()
                },
                ConfigPoint {
                    num_workers: Some(0),
                    pin_memory: Some(true),
                    ..ConfigPoint::default()
                },
            ],
            ..Preset::default()
        }
    }

    #[test]
    fn grid_then_extra_configs_in_order() {
        let plan = Plan::from_preset(&preset(), None).unwrap();
        let workers: Vec<_> = plan.configs.iter().map(|c| c.num_workers).collect();
        assert_eq!(workers, vec![0, 2, 4, 8, 4, 0]);
        assert!(plan.configs[4].persistent_workers);
        assert!(plan.configs[5].pin_memory);
        assert_eq!(plan.label(4), "nw=4 persistent");
        assert_eq!(plan.label(5), "nw=0 pin");
    }

    #[test]
    fn duplicates_collapse() {
        let mut preset = preset();
        preset.set("num_workers", "0").unwrap();
        preset.set("persistent_workers", "false").unwrap();
        preset.set("pin_memory", "false").unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        assert_eq!(plan.configs.len(), 1);
    }

    #[test]
    fn zero_batch_size_is_named() {
        let mut preset = preset();
        preset.batch_size = vec![0];
        let err = Plan::from_preset(&preset, Some(Path::new("p.ron"))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "p.ron: field `batch_size`: must be at least 1"
        );
    }

    #[test]
    fn bad_device_is_named() {
        let mut preset = preset();
        preset.device = vec!["tpu".to_owned()];
        let err = Plan::from_preset(&preset, None).unwrap_err().to_string();
        assert!(err.contains("device") && err.contains("tpu"), "{err}");
    }

    #[test]
    fn worker_kinds_and_transfers_sweep_and_label() {
        let mut preset = preset();
        preset.num_workers = vec![2];
        preset.extra_configs.clear();
        preset.set("worker_kind", "thread,spawn").unwrap();
        preset.set("batch_transfer", "shared_memory,pipe").unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        assert_eq!(plan.configs.len(), 4);
        let labels: Vec<String> = (0..4).map(|i| plan.label(i)).collect();
        // Each label names the knobs where it differs from the most common value.
        assert!(labels.iter().any(|l| l.contains("thread")), "{labels:?}");
        assert!(labels.iter().any(|l| l.contains("batches=")), "{labels:?}");
        let mut unique = labels.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 4, "{labels:?}");
    }

    #[test]
    fn runtimes_and_start_methods_expand_only_where_they_matter() {
        let mut preset = preset();
        preset.set("num_workers", "0,2").unwrap();
        preset.set("runtime", "loaderbench,pytorch").unwrap();
        preset.set("start_method", "fork,spawn").unwrap();
        preset.extra_configs.clear();
        let plan = Plan::from_preset(&preset, None).unwrap();
        let labels: Vec<String> = (0..plan.configs.len()).map(|i| plan.label(i)).collect();
        assert_eq!(
            labels,
            [
                "nw=0",
                "nw=2",
                "nw=0 pytorch",
                "nw=2 pytorch",
                "nw=2 pytorch spawn"
            ]
        );
    }

    #[test]
    fn a_training_step_is_refused_for_the_pytorch_runtime() {
        let mut preset = preset();
        preset.step = StepCost::Fixed(1.0);
        assert!(Plan::from_preset(&preset, None).is_ok());
        preset.set("runtime", "loaderbench,pytorch").unwrap();
        let err = Plan::from_preset(&preset, None).unwrap_err();
        assert!(err.is_bad_input());
        assert!(err.to_string().contains("field `step`"), "{err}");
    }

    #[test]
    fn ops_without_a_torchvision_equivalent_are_refused_for_pytorch() {
        let mut preset = preset();
        preset.pipeline = vec![PipelineSpec::Custom {
            name: "busy".to_owned(),
            ops: vec![crate::transform::Op::Cost {
                micros_per_sample: 10,
            }],
        }];
        assert!(Plan::from_preset(&preset, None).is_ok());
        preset.set("runtime", "pytorch").unwrap();
        let err = Plan::from_preset(&preset, None).unwrap_err();
        assert!(err.is_bad_input());
        assert!(err.to_string().contains("torchvision"), "{err}");
    }

    #[test]
    fn ranks_sweep_label_and_count_processes() {
        let mut preset = preset();
        preset.extra_configs.clear();
        preset.set("num_workers", "2").unwrap();
        preset.set("ranks", "1,4").unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        assert_eq!(plan.configs.len(), 2);
        assert_eq!(plan.configs[1].total_processes(), 12);
        let labels: Vec<String> = (0..2).map(|i| plan.label(i)).collect();
        assert!(labels.iter().any(|l| l.contains("ranks=4")), "{labels:?}");
        preset.set("ranks", "0").unwrap();
        let err = Plan::from_preset(&preset, None).unwrap_err().to_string();
        assert!(err.contains("field `ranks`"), "{err}");
        preset.set("ranks", "2").unwrap();
        preset.set("runtime", "pytorch").unwrap();
        let err = Plan::from_preset(&preset, None).unwrap_err().to_string();
        assert!(err.contains("field `ranks`"), "{err}");
    }

    #[test]
    fn ranks_times_workers_beyond_the_cores_warns() {
        let mut preset = preset();
        preset.num_workers = vec![512];
        preset.ranks = vec![2];
        let plan = Plan::from_preset(&preset, None).unwrap();
        assert!(
            plan.warnings.iter().any(|w| w.contains("2 × 512 = 1024")),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn too_many_workers_warns_with_core_count() {
        let mut preset = preset();
        preset.num_workers = vec![1024];
        let plan = Plan::from_preset(&preset, None).unwrap();
        assert!(plan.warnings[0].contains("1024"), "{:?}", plan.warnings);
        assert!(plan.warnings[0].contains("logical cores"));
    }
}
