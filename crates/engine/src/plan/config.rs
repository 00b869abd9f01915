//! [`Config`]: one point of a plan's sweep, every knob of the knob table
//! ([`crate::plan::knob_table`]) with one value, under its field name; its label, its checks
//! and what it costs in processes.

use serde::{Deserialize, Serialize};

use super::checks::check_config;
use super::knob_table::{Column, KNOBS_IN_CONFIG_ORDER, Knob};
use super::knobs;
use super::worker_kinds;
use crate::device::DeviceSpec;
use crate::error::FieldError;
use crate::preset::{
    BatchTransfer, Cache, DatasetTransfer, IntraOpThreads, Preset, Runtime, StartMethod,
    TransformAt, WorkerKind,
};
use crate::transform::PipelineSpec;

/// One point of the sweep: every loader knob with a single value. Fields that came
/// after the first results were saved have serde defaults, so older results still load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The transform pipeline.
    pub pipeline: PipelineSpec,
    /// Where our engine runs the pipeline: on whole batches, or per sample. The PyTorch
    /// runtime always works per sample, so its configs keep the default.
    #[serde(default)]
    pub transform_at: TransformAt,
    /// Samples per batch.
    pub batch_size: usize,
    /// Worker threads or processes; 0 loads in the consumer itself.
    pub num_workers: usize,
    /// How a worker runs: the runtime's own default, a thread, or a spawned or forked
    /// process. Results saved before `auto` existed read as `auto` where they meant it
    /// (`results_file` in the measure crate).
    pub worker_kind: WorkerKind,
    /// Workers live from one epoch to the next instead of restarting.
    pub persistent_workers: bool,
    /// Batches each worker works on ahead.
    pub prefetch_factor: usize,
    /// Batches are copied to page-locked memory (a no-op without CUDA).
    pub pin_memory: bool,
    /// Batches come in sampler order, rather than as workers finish them.
    pub in_order: bool,
    /// Where batches go.
    pub device: DeviceSpec,
    /// How worker processes get the dataset (ignored by thread workers).
    #[serde(default)]
    pub dataset_transfer: DatasetTransfer,
    /// How worker processes hand batches back (ignored by thread workers).
    #[serde(default)]
    pub batch_transfer: BatchTransfer,
    /// Which data loader measures. Results from before the runtime knob existed were
    /// measured by loaderbench.
    #[serde(default)]
    pub runtime: Runtime,
    /// How PyTorch starts its worker processes. Only the PyTorch runtime with workers
    /// uses it; elsewhere it is the platform's default, so configs that differ only
    /// there collapse into one.
    #[serde(default)]
    pub start_method: StartMethod,
    /// libtorch intra-op threads of the consumer.
    #[serde(default)]
    pub intra_op_threads: IntraOpThreads,
    /// Training processes per machine.
    #[serde(default = "one_rank")]
    pub ranks: usize,
    /// Whether each epoch finds the dataset's files in the page cache. Results from
    /// before the knob existed were measured warm.
    #[serde(default)]
    pub cache: Cache,
    /// Non-zero for a copy of another config measured under its own name (an A/A check).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub copy: usize,
    /// The saved run this config comes from, when several are shown together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

fn one_rank() -> usize {
    1
}

fn is_zero(value: &usize) -> bool {
    *value == 0
}

impl Default for Config {
    /// The config of the default preset.
    fn default() -> Config {
        let preset = Preset::default();
        let first =
            knobs::first_values(&preset).expect("the default preset's first values make a config");
        first.clone().settled(&preset, &first)
    }
}

impl Config {
    /// A short label for plots, such as `nw=4 persistent pin`: each knob's part (see
    /// [`Knob::tag`]), the classic knobs' first. Knobs that are the same in every config
    /// of the plan (`common`) are left out.
    pub fn label(&self, common: &Config) -> String {
        let classic = |knob: &&Knob| matches!(knob.column, Column::Classic);
        let knobs = KNOBS_IN_CONFIG_ORDER.iter();
        let mut parts: Vec<String> = knobs
            .clone()
            .filter(classic)
            .chain(knobs.filter(|knob| !classic(knob)))
            .filter_map(|knob| (knob.tag)(self, common))
            .collect();
        if self.copy > 0 {
            parts.push(format!("copy {}", self.copy));
        }
        parts.join(" ")
    }

    /// Checks each value against what it may hold, as the plan does (the loader checks
    /// the config it is given the same way).
    pub fn check(&self) -> std::result::Result<(), FieldError> {
        check_config(self)
    }

    /// True when the config has workers that could persist between epochs: the plan
    /// accepts its `persistent_workers: true` twin (PyTorch's torchdata.nodes threads and
    /// SPDL's pipeline threads are started every epoch).
    pub fn can_persist(&self) -> bool {
        self.num_workers > 0
            && check_config(&Config {
                persistent_workers: true,
                ..self.clone()
            })
            .is_ok()
    }

    /// Processes that load data: every rank and every worker process of each rank
    /// (thread workers count too, as they compete for the same cores).
    pub fn total_processes(&self) -> usize {
        self.ranks * (1 + self.num_workers)
    }

    /// True when the start method matters: PyTorch's DataLoader with worker processes
    /// (any worker kind there but torchdata.nodes threads).
    pub fn uses_start_method(&self) -> bool {
        self.runtime == Runtime::Pytorch
            && self.num_workers > 0
            && self.worker_kind != WorkerKind::Thread
    }

    /// How the workers start, as a name: `none` without workers, else the start method
    /// where it matters (PyTorch's `fork`, `spawn` or `forkserver`), else the worker kind
    /// (`thread`, or our engine's `fork` or `spawn`). Configs that differ in it pay very
    /// different start-ups: a spawned worker imports torch, a forked one does not.
    pub fn worker_start(&self) -> &'static str {
        if self.num_workers == 0 {
            "none"
        } else if self.uses_start_method() {
            self.start_method.name()
        } else {
            self.worker_kind.name()
        }
    }

    /// True when the knob named `field` makes a difference to this config: false for
    /// the knobs that only workers use in a config without them, for the transfers of
    /// workers that are not our engine's processes, for the start method where it does
    /// not matter and for where transforms run on a Python runtime (the knobs that
    /// [`settled`](Config::settled) sets aside).
    pub fn uses_knob(&self, field: &str) -> bool {
        let workers = self.num_workers > 0;
        match field {
            "persistent_workers" | "prefetch_factor" | "in_order" | "worker_kind" => workers,
            "dataset_transfer" | "batch_transfer" => {
                workers
                    && self.runtime == Runtime::Loaderbench
                    && self.worker_kind != WorkerKind::Thread
            }
            "start_method" => self.uses_start_method(),
            "transform_at" => !self.runtime.runs_python(),
            _ => true,
        }
    }

    /// True when the workers are processes forked from the loading process.
    pub fn forks_workers(&self) -> bool {
        self.num_workers > 0
            && match self.runtime {
                Runtime::Pytorch => {
                    self.uses_start_method() && self.start_method == StartMethod::Fork
                }
                Runtime::Loaderbench => self.worker_kind == WorkerKind::Fork,
                Runtime::Spdl => false,
            }
    }

    /// The same config with the start method, the worker kind and where transforms run
    /// reset where they do not matter (see [`worker_kinds::settled`]); where `preset`
    /// gives no start method, a PyTorch config's `fork` or `spawn` kind picks it. Without
    /// workers, the knobs only workers use take their value in `first` (the preset's
    /// first values), so a sweep of them measures the config without workers once, not
    /// once per value; so do the transfers with our engine's thread workers.
    pub(super) fn settled(mut self, preset: &Preset, first: &Config) -> Config {
        if self.num_workers == 0 {
            self.persistent_workers = first.persistent_workers;
            self.prefetch_factor = first.prefetch_factor;
            self.in_order = first.in_order;
            self.worker_kind = first.worker_kind;
        }
        self.worker_kind = worker_kinds::settled(&self);
        // The transfers are worker processes' alone: our engine's threads share the
        // dataset and hand batches over in memory, so thread configs that differ only
        // there are one config (measured four times over before), as are configs
        // without workers.
        let threads =
            self.runtime == Runtime::Loaderbench && self.worker_kind == WorkerKind::Thread;
        if self.num_workers == 0 || threads {
            self.dataset_transfer = first.dataset_transfer;
            self.batch_transfer = first.batch_transfer;
        }
        let start_method_given = preset.start_method != [StartMethod::platform_default()];
        if !start_method_given && let Some(method) = worker_kinds::start_method_of_kind(&self) {
            self.start_method = method;
        }
        if !self.uses_start_method() {
            self.start_method = StartMethod::platform_default();
        }
        if self.runtime.runs_python() {
            self.transform_at = TransformAt::default();
        }
        self
    }
}
