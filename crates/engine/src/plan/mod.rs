//! Plans: a preset checked and resolved. [`Plan::from_preset`] validates every value
//! (naming the field and the file), expands the sweep into concrete [`Config`]s (the
//! grid of every list, then `extra_configs`, duplicates dropped) and collects warnings
//! such as more workers than cores. The runner only ever sees a plan.

mod checks;
mod config;
pub mod knob_table;
mod knobs;
mod ranges;
mod spdl_knobs;
mod worker_kinds;

pub use config::Config;
pub use knob_table::{Column, KNOBS, KNOBS_IN_CONFIG_ORDER, Knob, Python, knob, rank_threads};
pub use ranges::{MOST_CONFIGS, NumberRange, RANGES, check_number, step_problem};

use checks::{check_config, check_preset, check_values, user_dataset_configs, warnings};

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::dataset::DatasetKind;
use crate::device::DeviceSpec;
use crate::error::{Error, FieldError, Result};
use crate::preset::{Preset, RunOrder, Runtime};
use crate::step::StepSpec;

/// Everything a run needs, checked: the preset, whose fields (epochs, repeats, the
/// dataset, the step…) the runner reads where they are, and what checking and resolving
/// it made (the grid of configs and the warnings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The preset the plan was made from, `--set`s applied: saved with the results, so
    /// a run can be set up again from its results file.
    pub preset: Preset,
    /// The preset file, when the plan came from one.
    pub source: Option<PathBuf>,
    pub configs: Vec<Config>,
    /// Things worth knowing before the run, such as more workers than cores.
    pub warnings: Vec<String>,
}

impl Plan {
    /// Checks a preset and expands its sweep. `origin` names the preset in errors.
    pub fn from_preset(preset: &Preset, origin: Option<&Path>) -> Result<Plan> {
        let bad = |name: &str, problem: &dyn std::fmt::Display| {
            Error::from(FieldError::new(origin, name, problem.to_string()))
        };
        let in_file = |mut err: FieldError| {
            err.path = origin.map(Path::to_path_buf);
            Error::from(err)
        };
        check_preset(preset).map_err(in_file)?;
        spdl_knobs::check_start_methods(preset).map_err(in_file)?;
        for device in &preset.device {
            device
                .parse::<DeviceSpec>()
                .map_err(|err| bad("device", &err))?;
        }
        // Every value now deserializes; a knob whose preset value makes no config
        // would be a mismatch between its three fields.
        let mismatch = |err: serde_json::Error| {
            Error::value(format!(
                "a sweep knob's value does not make a config: {err}"
            ))
        };
        // Each config with the extra config it came from, if not from the sweep's grid.
        let mut configs: Vec<(Config, Option<usize>)> = knobs::grid(preset)
            .map_err(mismatch)?
            .into_iter()
            .map(|config| (config, None))
            .collect();
        for (i, point) in preset.extra_configs.iter().enumerate() {
            let config = knobs::extra_config(preset, point)
                .map_err(|err| bad(&format!("extra_configs[{i}]"), &err))?;
            configs.push((config, Some(i)));
        }
        let first = knobs::first_values(preset).map_err(mismatch)?;
        let mut unique: Vec<(Config, Option<usize>)> = Vec::with_capacity(configs.len());
        for (config, extra) in configs {
            // Its values as given: settling sets aside what workers alone use.
            check_values(&config).map_err(|err| in_file(within_extra(err, extra)))?;
            let config = config.settled(preset, &first);
            if !unique.iter().any(|(seen, _)| *seen == config) {
                unique.push((config, extra));
            }
        }
        for (config, extra) in &unique {
            check_config(config).map_err(|err| in_file(within_extra(err, *extra)))?;
        }
        let mut configs: Vec<Config> = unique.into_iter().map(|(config, _)| config).collect();
        spdl_knobs::check_dataset(preset.dataset.kind, &configs).map_err(in_file)?;
        worker_kinds::check_dataset(preset.dataset.kind, &configs).map_err(in_file)?;
        if preset.dataset.kind == DatasetKind::Python {
            user_dataset_configs(preset, &mut configs).map_err(in_file)?;
        }
        if matches!(preset.step, StepSpec::Python { .. })
            && configs.iter().any(|c| !c.runtime.runs_python())
        {
            return Err(bad("runtime", &crate::step::user_step::ENGINE_REFUSAL));
        }
        let warnings = warnings(preset, &configs);
        Ok(Plan {
            preset: preset.clone(),
            source: origin.map(Path::to_path_buf),
            configs,
            warnings,
        })
    }

    /// The config that holds, for each knob, the value most configs share: labels leave
    /// those values out (see [`common_config`]).
    pub fn common_config(&self) -> Config {
        common_config(&self.configs)
    }

    /// The order the runner measures `(config, repeat)` pairs in, as `order` says.
    pub fn schedule(&self) -> Vec<(usize, usize)> {
        let configs = self.configs.len();
        match self.preset.order {
            RunOrder::Sequential => (0..configs)
                .flat_map(|config| (0..self.preset.repeats).map(move |repeat| (config, repeat)))
                .collect(),
            RunOrder::Interleaved => (0..self.preset.repeats)
                .flat_map(|repeat| (0..configs).map(move |config| (config, repeat)))
                .collect(),
            RunOrder::Shuffled => (0..self.preset.repeats)
                .flat_map(|repeat| {
                    use rand::SeedableRng;
                    use rand::seq::SliceRandom;
                    let mut round: Vec<usize> = (0..configs).collect();
                    let mut rng =
                        rand::rngs::StdRng::seed_from_u64(self.preset.seed ^ repeat as u64);
                    round.shuffle(&mut rng);
                    round.into_iter().map(move |config| (config, repeat))
                })
                .collect(),
        }
    }

    /// Whether `configs`, saved by a run of this plan's preset, are this plan's configs
    /// as an earlier loaderbench made them: each is one of this plan's once settled, and
    /// each of this plan's is one of them. A run saved before a config without workers
    /// was measured once (rather than once per value of `persistent_workers`,
    /// `prefetch_factor`, `in_order` or `worker_kind`) holds such copies.
    pub fn settles(&self, configs: &[Config]) -> bool {
        let Ok(first) = knobs::first_values(&self.preset) else {
            return false;
        };
        let settled: Vec<Config> = configs
            .iter()
            .map(|config| config.clone().settled(&self.preset, &first))
            .collect();
        settled.iter().all(|config| self.configs.contains(config))
            && self.configs.iter().all(|config| settled.contains(config))
    }

    /// The label of config `index` within this plan.
    pub fn label(&self, index: usize) -> String {
        self.configs[index].label(&self.common_config())
    }

    /// Every config's label, in config order.
    pub fn labels(&self) -> Vec<String> {
        let common = self.common_config();
        self.configs.iter().map(|c| c.label(&common)).collect()
    }
}

/// `err`, named in extra config `extra` where only an extra config gives the value, not
/// in the sweep's list.
fn within_extra(err: FieldError, extra: Option<usize>) -> FieldError {
    match extra {
        Some(i) => err.within(&format!("extra_configs[{i}]")),
        None => err,
    }
}

/// Plans made from the default preset with `--set`s, for the tests of the plan's checks.
/// The config that holds, for each knob, the value most of `configs` (a plan's, or a
/// saved run's) share: labels leave those values out. `configs` is not empty.
pub fn common_config(configs: &[Config]) -> Config {
    let mut common =
        knobs::most_common(configs).expect("the most common values are values of the configs");
    // Our loader is the common runtime wherever the plan has several, even when it
    // measures fewer configs or none: every other runtime is then named.
    if configs.iter().any(|c| c.runtime != common.runtime) {
        common.runtime = Runtime::Loaderbench;
    }
    common.worker_kind = worker_kinds::common_kind(configs, common.runtime);
    // One rank is the plain case: where the plan has several ranks values, every config
    // with more than one rank says how many, even where most configs have more (ranks
    // [2, 4] would otherwise leave ranks=2 unnamed).
    if configs.iter().any(|c| c.ranks != common.ranks) {
        common.ranks = 1;
    }
    common
}

#[cfg(test)]
pub(crate) mod test_plans {
    use super::Plan;
    use crate::preset::Preset;

    /// The default preset with each `(path, value)` set in turn, planned.
    pub fn plan(sets: &[(&str, &str)]) -> crate::error::Result<Plan> {
        let mut preset = Preset::default();
        for (path, value) in sets {
            preset.set(path, value).unwrap();
        }
        Plan::from_preset(&preset, None)
    }

    /// Why the plan of [`plan`]'s preset is refused.
    pub fn refusal(sets: &[(&str, &str)]) -> String {
        plan(sets).unwrap_err().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::FieldPath;
    use crate::preset::{ConfigPoint, TransformAt};
    use crate::transform::PipelineSpec;

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
    fn knobs_only_workers_use_do_not_multiply_the_config_without_workers() {
        let labels = |sets: &[(&str, &str)]| test_plans::plan(sets).unwrap().labels();
        let workers_only = [
            ("num_workers", "0,2"),
            ("persistent_workers", "false,true"),
            ("in_order", "true,false"),
            ("prefetch_factor", "4,2"),
        ];
        let mut sets = workers_only.to_vec();
        sets.extend([
            ("worker_kind", "thread,spawn"),
            ("dataset_transfer", "reopen,copy"),
            ("batch_transfer", "shared_memory,pipe"),
        ]);
        let ours = labels(&sets);
        // Each of the three doubles the configs with workers only, for each kind; the
        // transfers double only the worker processes' (threads share the dataset and the
        // batches): 8 thread configs, 32 spawn ones.
        assert_eq!(ours.len(), 1 + (1 << 3) + (1 << 5), "{ours:?}");
        assert_eq!(
            ours[0], "nw=0",
            "no kind without workers, though spawn is the common one"
        );
        assert_eq!(ours.iter().filter(|l| l.starts_with("nw=0")).count(), 1);
        let mut sets = workers_only.to_vec();
        sets.extend([("runtime", "pytorch"), ("worker_kind", "auto,spawn")]);
        let pytorch = labels(&sets);
        assert_eq!(pytorch.len(), 1 + (1 << 4), "{pytorch:?}");
        assert_eq!(pytorch.iter().filter(|l| l.starts_with("nw=0")).count(), 1);
        // What still differs without workers stays: pinning is the consumer's.
        let pinned = labels(&[
            ("num_workers", "0"),
            ("persistent_workers", "true"),
            ("pin_memory", "false,true"),
        ]);
        assert_eq!(pinned, ["nw=0", "nw=0 pin"]);
    }

    #[test]
    fn a_run_saved_with_copies_of_the_config_without_workers_settles_to_the_plan() {
        let plan =
            test_plans::plan(&[("num_workers", "0,2"), ("persistent_workers", "false,true")])
                .unwrap();
        assert_eq!(plan.labels(), ["nw=0", "nw=2", "nw=2 persistent"]);
        let mut saved = plan.configs.clone();
        saved.insert(
            2,
            Config {
                persistent_workers: true,
                ..saved[0].clone()
            },
        );
        assert!(plan.settles(&saved));
        assert!(plan.settles(&plan.configs));
        assert!(
            !plan.settles(&saved[..2]),
            "nw=2 persistent is not among them"
        );
        saved.push(Config {
            num_workers: 4,
            ..saved[1].clone()
        });
        assert!(!plan.settles(&saved), "nw=4 is not the plan's");
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
        assert_eq!(err.field().map(FieldPath::as_str), Some("batch_size"));
    }

    #[test]
    fn bad_device_is_named() {
        let mut preset = preset();
        preset.device = vec!["tpu".to_owned()];
        let err = Plan::from_preset(&preset, None).unwrap_err();
        assert_eq!(err.field().map(FieldPath::as_str), Some("device"));
        assert_eq!(
            err.to_string(),
            "field `device`: `tpu` is not a device; use cpu, cuda or cuda:N"
        );
    }

    #[test]
    fn worker_kinds_and_transfers_sweep_and_label() {
        let mut preset = preset();
        preset.num_workers = vec![2];
        preset.extra_configs.clear();
        preset.set("worker_kind", "thread,spawn").unwrap();
        preset.set("batch_transfer", "shared_memory,pipe").unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        // Each label names the knobs where it differs from the most common value. Thread
        // workers pass no batches between processes: one config, not one per transfer.
        assert_eq!(plan.labels(), ["nw=2 thread", "nw=2", "nw=2 batches=pipe"]);
        // Our engine's default kind (thread) is the common one on a tie.
        preset.set("batch_transfer", "shared_memory").unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        assert_eq!(plan.labels(), ["nw=2", "nw=2 spawn"]);
    }

    #[test]
    fn runtimes_and_start_methods_expand_only_where_they_matter() {
        let mut preset = preset();
        preset.set("num_workers", "0,2").unwrap();
        preset.set("runtime", "loaderbench,pytorch").unwrap();
        preset.set("start_method", "fork,spawn").unwrap();
        preset.extra_configs.clear();
        let plan = Plan::from_preset(&preset, None).unwrap();
        let labels = plan.labels();
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
    fn every_step_but_python_runs_on_both_runtimes() {
        let mut preset = preset();
        preset.set("runtime", "loaderbench,pytorch").unwrap();
        for step in ["fixed(1.0)", "mlp(hidden: 8)", r#"model(path: "m.pt")"#] {
            preset.set("step", step).unwrap();
            assert!(Plan::from_preset(&preset, None).is_ok(), "{step}");
        }
        preset
            .set("step", r#"python(path: "s.py", factory: "make_step")"#)
            .unwrap();
        let err = Plan::from_preset(&preset, None).unwrap_err();
        assert!(err.is_bad_input());
        assert!(err.to_string().contains("field `runtime`"), "{err}");
        assert!(err.to_string().contains("use runtime: [pytorch]"), "{err}");
        preset.set("runtime", "pytorch").unwrap();
        assert!(Plan::from_preset(&preset, None).is_ok());
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
        let labels = plan.labels();
        assert!(labels.iter().any(|l| l.contains("ranks=")), "{labels:?}");
        preset.set("ranks", "0").unwrap();
        let err = Plan::from_preset(&preset, None).unwrap_err().to_string();
        assert!(err.contains("field `ranks`"), "{err}");
        preset.set("ranks", "2").unwrap();
        preset.set("runtime", "pytorch").unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        assert_eq!(
            plan.configs[0].ranks, 2,
            "the pytorch runtime takes ranks too"
        );
    }

    #[test]
    fn cache_sweeps_slowly_and_cold_configs_say_so_in_their_label() {
        let mut preset = preset();
        preset.extra_configs.clear();
        preset.set("num_workers", "0,2").unwrap();
        preset.set("cache", "warm,cold").unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        let labels = plan.labels();
        assert_eq!(labels, ["nw=0", "nw=2", "nw=0 cold", "nw=2 cold"]);
        preset.set("cache", "cold").unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        assert_eq!(plan.label(0), "nw=0 cold", "a cold run is never unnamed");
    }

    #[test]
    fn ddp_light_labels_name_every_rank_count_and_runtime() {
        let (preset, _) = crate::builtin::load("ddp-light").unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        assert_eq!(plan.configs.len(), 18);
        let labels = plan.labels();
        for (i, label) in labels.iter().enumerate() {
            assert_eq!(
                labels.iter().filter(|l| *l == label).count(),
                1,
                "{label} is ambiguous: {labels:?}"
            );
            let config = &plan.configs[i];
            assert_eq!(label.contains("ranks="), config.ranks > 1, "{label}");
            assert_eq!(
                label.contains("pytorch"),
                config.runtime == Runtime::Pytorch
            );
        }
        assert!(
            labels.contains(&"nw=2 pytorch ranks=4".to_owned()),
            "{labels:?}"
        );
    }

    #[test]
    fn a_python_dataset_runs_on_pytorch_only_and_brings_its_own_pipeline() {
        let mut preset = preset();
        preset.extra_configs.clear();
        preset.set("dataset.kind", "python").unwrap();
        preset.set("dataset.path", "my_data.py").unwrap();
        preset.set("dataset.factory", "make_dataset").unwrap();
        preset.set("dataset.args.root", "/data/mnist").unwrap();
        assert_eq!(preset.dataset.args["root"], "/data/mnist");
        let err = Plan::from_preset(&preset, Some(Path::new("p.ron"))).unwrap_err();
        assert_eq!(err.field().map(FieldPath::as_str), Some("runtime"));
        assert!(err.to_string().contains("use runtime: [pytorch]"), "{err}");
        preset.set("runtime", "pytorch").unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        assert_eq!(plan.configs.len(), 4);
        assert!(
            plan.configs
                .iter()
                .all(|c| c.pipeline.name() == "make_dataset")
        );
        preset.set("pipeline", "heavy").unwrap();
        let err = Plan::from_preset(&preset, None).unwrap_err();
        assert_eq!(err.field().map(FieldPath::as_str), Some("pipeline"));
        preset.set("pipeline", "light").unwrap();
        preset.dataset.factory = None;
        let err = Plan::from_preset(&preset, None).unwrap_err();
        assert_eq!(err.field().map(FieldPath::as_str), Some("dataset.factory"));
    }

    #[test]
    fn transform_at_sweeps_our_engine_only() {
        let mut preset = preset();
        preset.extra_configs.clear();
        preset.set("num_workers", "0").unwrap();
        preset.set("transform_at", "batch,sample").unwrap();
        preset.set("runtime", "loaderbench,pytorch").unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        let labels = plan.labels();
        // PyTorch always transforms per sample: its configs collapse into one.
        assert_eq!(labels, ["nw=0", "nw=0 per sample", "nw=0 pytorch"]);
        assert_eq!(plan.configs[2].transform_at, TransformAt::Batch);
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
