//! A preset's knobs: the list each one has when a preset leaves it out
//! ([`knob_defaults`]), one extra config's values ([`ConfigPoint`]), and the walk over a
//! preset's lists that the app's setup panel draws its fields from ([`KnobLists`]), with
//! the [`KnobValue`]s of the plain types knobs hold.

use super::{
    BatchTransfer, Cache, DatasetTransfer, IntraOpThreads, Preset, Runtime, StartMethod,
    TransformAt, WorkerKind,
};
use crate::named_values::KnobValue;
use crate::transform::PipelineSpec;
use serde::{Deserialize, Serialize};

/// The list each knob has in a preset that leaves it out.
pub mod knob_defaults {
    use super::*;

    pub fn pipeline() -> Vec<PipelineSpec> {
        vec![PipelineSpec::Light]
    }
    pub fn transform_at() -> Vec<TransformAt> {
        vec![TransformAt::Batch]
    }
    pub fn batch_size() -> Vec<usize> {
        vec![64]
    }
    pub fn num_workers() -> Vec<usize> {
        vec![0]
    }
    pub fn worker_kind() -> Vec<WorkerKind> {
        vec![WorkerKind::Auto]
    }
    pub fn persistent_workers() -> Vec<bool> {
        vec![false]
    }
    pub fn prefetch_factor() -> Vec<usize> {
        vec![2]
    }
    pub fn pin_memory() -> Vec<bool> {
        vec![false]
    }
    pub fn in_order() -> Vec<bool> {
        vec![true]
    }
    pub fn device() -> Vec<String> {
        vec!["cpu".to_owned()]
    }
    pub fn dataset_transfer() -> Vec<DatasetTransfer> {
        vec![DatasetTransfer::Reopen]
    }
    pub fn batch_transfer() -> Vec<BatchTransfer> {
        vec![BatchTransfer::SharedMemory]
    }
    pub fn runtime() -> Vec<Runtime> {
        vec![Runtime::Loaderbench]
    }
    pub fn start_method() -> Vec<StartMethod> {
        vec![StartMethod::platform_default()]
    }
    pub fn intra_op_threads() -> Vec<IntraOpThreads> {
        vec![IntraOpThreads::Auto]
    }
    pub fn ranks() -> Vec<usize> {
        vec![1]
    }
    pub fn cache() -> Vec<Cache> {
        vec![Cache::Warm]
    }
}

/// One extra config: the knobs it sets, each under its field name in the knob table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigPoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<PipelineSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transform_at: Option<TransformAt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_workers: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_kind: Option<WorkerKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_workers: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch_factor: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin_memory: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_order: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_transfer: Option<DatasetTransfer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_transfer: Option<BatchTransfer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_method: Option<StartMethod>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intra_op_threads: Option<IntraOpThreads>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<Cache>,
    /// Measures the same config again under its own name (`copy: 1`), for an A/A check
    /// of the machine's noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<usize>,
}

impl ConfigPoint {
    /// The config the first value of each of `preset`'s lists makes, every knob set.
    pub fn first_of(preset: &Preset) -> ConfigPoint {
        ConfigPoint {
            pipeline: preset.pipeline.first().cloned(),
            transform_at: preset.transform_at.first().cloned(),
            batch_size: preset.batch_size.first().cloned(),
            num_workers: preset.num_workers.first().cloned(),
            worker_kind: preset.worker_kind.first().cloned(),
            persistent_workers: preset.persistent_workers.first().cloned(),
            prefetch_factor: preset.prefetch_factor.first().cloned(),
            pin_memory: preset.pin_memory.first().cloned(),
            in_order: preset.in_order.first().cloned(),
            device: preset.device.first().cloned(),
            dataset_transfer: preset.dataset_transfer.first().cloned(),
            batch_transfer: preset.batch_transfer.first().cloned(),
            runtime: preset.runtime.first().cloned(),
            start_method: preset.start_method.first().cloned(),
            intra_op_threads: preset.intra_op_threads.first().cloned(),
            ranks: preset.ranks.first().cloned(),
            cache: preset.cache.first().cloned(),
            copy: None,
        }
    }
}

impl Preset {
    /// Hands each knob's list to `visit`, in the knob table's config order.
    pub fn each_knob(&mut self, visit: &mut impl KnobLists) {
        visit.list("pipeline", &mut self.pipeline);
        visit.list("transform_at", &mut self.transform_at);
        visit.list("batch_size", &mut self.batch_size);
        visit.list("num_workers", &mut self.num_workers);
        visit.list("worker_kind", &mut self.worker_kind);
        visit.list("persistent_workers", &mut self.persistent_workers);
        visit.list("prefetch_factor", &mut self.prefetch_factor);
        visit.list("pin_memory", &mut self.pin_memory);
        visit.list("in_order", &mut self.in_order);
        visit.list("device", &mut self.device);
        visit.list("dataset_transfer", &mut self.dataset_transfer);
        visit.list("batch_transfer", &mut self.batch_transfer);
        visit.list("runtime", &mut self.runtime);
        visit.list("start_method", &mut self.start_method);
        visit.list("intra_op_threads", &mut self.intra_op_threads);
        visit.list("ranks", &mut self.ranks);
        visit.list("cache", &mut self.cache);
    }
}

/// What walks over a preset's knob lists ([`Preset::each_knob`]): the app's setup panel
/// draws a field for each.
pub trait KnobLists {
    /// The list of the knob named `field`.
    fn list<T: KnobValue>(&mut self, field: &'static str, values: &mut Vec<T>);
}

impl KnobValue for usize {
    fn text(&self) -> String {
        self.to_string()
    }

    fn parse(text: &str) -> std::result::Result<Self, String> {
        text.parse()
            .map_err(|_| format!("`{text}` is not a whole number"))
    }
}

impl KnobValue for bool {
    fn choices() -> Option<Vec<(String, Self)>> {
        Some(vec![("no".to_owned(), false), ("yes".to_owned(), true)])
    }

    fn text(&self) -> String {
        self.to_string()
    }

    fn parse(text: &str) -> std::result::Result<Self, String> {
        text.parse()
            .map_err(|_| format!("`{text}` is not true or false"))
    }
}

/// Devices are named: `cpu`, `cuda`, `cuda:N`.
impl KnobValue for String {
    fn text(&self) -> String {
        self.clone()
    }

    fn parse(text: &str) -> std::result::Result<Self, String> {
        Ok(text.to_owned())
    }
}

/// Pipelines are written as presets write them (RON).
impl KnobValue for PipelineSpec {
    fn text(&self) -> String {
        ron::to_string(self).unwrap_or_else(|_| self.name().to_owned())
    }

    fn parse(text: &str) -> std::result::Result<Self, String> {
        ron::from_str(text).map_err(|err| format!("`{text}` is not a pipeline: {err}"))
    }
}
