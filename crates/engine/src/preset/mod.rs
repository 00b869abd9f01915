//! Presets: what a benchmark file says, as plain serde data. A preset is versioned RON
//! with unknown fields rejected by name; it names a dataset, the pipelines, and lists for
//! every loader knob (a sweep: their Cartesian product, plus `extra_configs`). `--set`
//! edits any field by its path before the preset is checked and resolved into a
//! [`Plan`](crate::plan::Plan).

use std::fs;
use std::path::{Path, PathBuf};

use ron::extensions::Extensions;
use serde::{Deserialize, Serialize};

use crate::dataset::DatasetSpec;
use crate::error::{Error, FieldError, Result};
use crate::step::StepCost;
use crate::transform::{Normalize, PipelineSpec};

mod values;

pub use crate::transform::TransformAt;
pub use values::{
    BatchTransfer, DatasetTransfer, IntraOpThreads, RunOrder, Runtime, StartMethod, WorkerKind,
};

/// The preset format version this build reads and writes.
pub const PRESET_VERSION: u32 = 1;

/// The epochs a training run is assumed to take unless the preset says otherwise.
pub const DEFAULT_PLANNED_EPOCHS: usize = 50;

/// A benchmark: the dataset, the pipelines and the loader settings to sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    /// Format version; must be [`PRESET_VERSION`].
    pub version: u32,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub dataset: DatasetSpec,
    /// Use only the first `samples` samples (the synthetic dataset generates that many).
    #[serde(default)]
    pub samples: Option<usize>,
    /// Measured epochs per config and repeat.
    #[serde(default = "defaults::epochs")]
    pub epochs: usize,
    /// How many times each config is measured.
    #[serde(default = "defaults::one")]
    pub repeats: usize,
    /// Run one unmeasured epoch before the measured ones.
    #[serde(default)]
    pub warmup: bool,
    /// In which order configs and repeats are measured.
    #[serde(default)]
    pub order: RunOrder,
    #[serde(default = "defaults::yes")]
    pub shuffle: bool,
    /// Seeds the shuffle and every random augmentation.
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub drop_last: bool,
    /// Mean and standard deviation that `normalize` uses.
    #[serde(default)]
    pub normalize: Normalize,
    /// A worker that sends nothing for this long is considered hung.
    #[serde(default = "defaults::worker_timeout_s")]
    pub worker_timeout_s: f64,
    /// Sweep knobs: every combination of these lists is one config.
    #[serde(default = "defaults::pipeline")]
    pub pipeline: Vec<PipelineSpec>,
    /// Where our engine runs the pipeline: on whole batches, or per sample.
    #[serde(default = "defaults::transform_at")]
    pub transform_at: Vec<TransformAt>,
    #[serde(default = "defaults::batch_size")]
    pub batch_size: Vec<usize>,
    #[serde(default = "defaults::num_workers")]
    pub num_workers: Vec<usize>,
    #[serde(default = "defaults::worker_kind")]
    pub worker_kind: Vec<WorkerKind>,
    #[serde(default = "defaults::no")]
    pub persistent_workers: Vec<bool>,
    #[serde(default = "defaults::prefetch_factor")]
    pub prefetch_factor: Vec<usize>,
    #[serde(default = "defaults::no")]
    pub pin_memory: Vec<bool>,
    #[serde(default = "defaults::yes_list")]
    pub in_order: Vec<bool>,
    #[serde(default = "defaults::device")]
    pub device: Vec<String>,
    /// Configs beyond the grid: each sets some knobs; the rest take each list's first value.
    #[serde(default)]
    pub extra_configs: Vec<ConfigPoint>,
    /// How worker processes get the dataset (ignored by thread workers).
    #[serde(default = "defaults::dataset_transfer")]
    pub dataset_transfer: Vec<DatasetTransfer>,
    /// How worker processes hand batches back (ignored by thread workers).
    #[serde(default = "defaults::batch_transfer")]
    pub batch_transfer: Vec<BatchTransfer>,
    /// The training step run on each batch: `none`, `fixed(MS)` or `mlp(hidden: N)`.
    #[serde(default)]
    pub step: StepCost,
    /// The epochs a training run would take, for the break-even and the recommendation.
    #[serde(default = "defaults::planned_epochs")]
    pub planned_epochs: usize,
    #[serde(default = "defaults::runtime")]
    pub runtime: Vec<Runtime>,
    #[serde(default = "defaults::start_method")]
    pub start_method: Vec<StartMethod>,
    /// libtorch intra-op threads of the consumer: `auto` (libtorch's default) or a count.
    #[serde(default = "defaults::intra_op_threads")]
    pub intra_op_threads: Vec<IntraOpThreads>,
    /// Training processes per machine, each loading its shard of every epoch
    /// (DistributedSampler semantics) with its own workers.
    #[serde(default = "defaults::ranks")]
    pub ranks: Vec<usize>,
    /// The Python that runs the pytorch runtime (a user's own environment, so their
    /// dataset's packages import); default `$LOADERBENCH_PYTHON`, else setup's.
    #[serde(default)]
    pub python: Option<PathBuf>,
}

/// One extra config: the knobs it sets.
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
    /// Measures the same config again under its own name (`copy: 1`), for an A/A check
    /// of the machine's noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<usize>,
}

mod defaults {
    use super::{
        BatchTransfer, DatasetTransfer, IntraOpThreads, Runtime, StartMethod, TransformAt,
        WorkerKind,
    };
    use crate::transform::PipelineSpec;

    pub fn epochs() -> usize {
        2
    }
    pub fn one() -> usize {
        1
    }
    pub fn yes() -> bool {
        true
    }
    pub fn worker_timeout_s() -> f64 {
        60.0
    }
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
        vec![WorkerKind::Thread]
    }
    pub fn no() -> Vec<bool> {
        vec![false]
    }
    pub fn yes_list() -> Vec<bool> {
        vec![true]
    }
    pub fn prefetch_factor() -> Vec<usize> {
        vec![2]
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
    pub fn planned_epochs() -> usize {
        super::DEFAULT_PLANNED_EPOCHS
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
}

impl Default for Preset {
    fn default() -> Self {
        Preset {
            version: PRESET_VERSION,
            name: "untitled".to_owned(),
            description: String::new(),
            dataset: DatasetSpec::default(),
            samples: None,
            epochs: defaults::epochs(),
            repeats: 1,
            warmup: false,
            order: RunOrder::default(),
            shuffle: true,
            seed: 0,
            drop_last: false,
            normalize: Normalize::default(),
            worker_timeout_s: defaults::worker_timeout_s(),
            pipeline: defaults::pipeline(),
            transform_at: defaults::transform_at(),
            batch_size: defaults::batch_size(),
            num_workers: defaults::num_workers(),
            worker_kind: defaults::worker_kind(),
            persistent_workers: defaults::no(),
            prefetch_factor: defaults::prefetch_factor(),
            pin_memory: defaults::no(),
            in_order: defaults::yes_list(),
            device: defaults::device(),
            extra_configs: Vec::new(),
            dataset_transfer: defaults::dataset_transfer(),
            batch_transfer: defaults::batch_transfer(),
            step: StepCost::None,
            planned_epochs: defaults::planned_epochs(),
            runtime: defaults::runtime(),
            start_method: defaults::start_method(),
            intra_op_threads: defaults::intra_op_threads(),
            ranks: defaults::ranks(),
            python: None,
        }
    }
}

fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(Extensions::IMPLICIT_SOME)
}

impl Preset {
    /// Parses RON text; `origin` names the file in errors.
    pub fn from_ron(text: &str, origin: &Path) -> Result<Preset> {
        let preset: Preset = ron_options()
            .from_str(text)
            .map_err(|err| Error::file_caused(origin, format!("{err}"), err))?;
        if preset.version != PRESET_VERSION {
            return Err(Error::from(FieldError::new(
                Some(origin),
                "version",
                format!(
                    "this build reads version {PRESET_VERSION}, the file says {}",
                    preset.version
                ),
            )));
        }
        Ok(preset)
    }

    /// Reads and parses a preset file.
    pub fn load(path: &Path) -> Result<Preset> {
        let text = fs::read_to_string(path).map_err(|err| Error::io(path, err))?;
        Preset::from_ron(&text, path)
    }

    /// The preset as pretty RON text.
    pub fn to_ron(&self) -> String {
        let pretty = ron::ser::PrettyConfig::default()
            .struct_names(false)
            .extensions(Extensions::IMPLICIT_SOME);
        // Serializing plain data with derived impls has no failure path besides I/O,
        // and this writes to a String.
        ron_options()
            .to_string_pretty(self, pretty)
            .expect("serializing a preset to a string cannot fail")
    }

    /// Writes the preset atomically: to a temporary file beside `path`, then renamed.
    pub fn save(&self, path: &Path) -> Result<()> {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
        let file_name = path
            .file_name()
            .ok_or_else(|| Error::file(path, "not a file path"))?;
        let mut temp = PathBuf::from(dir.unwrap_or(Path::new(".")));
        temp.push(format!(".{}.tmp", file_name.to_string_lossy()));
        fs::write(&temp, self.to_ron()).map_err(|err| Error::io(&temp, err))?;
        fs::rename(&temp, path).map_err(|err| Error::io(path, err))
    }

    /// Sets the field at `key` (a dotted path such as `dataset.path` or `num_workers`)
    /// from `value`: any RON the field takes in a preset file, or a bare word, number or
    /// comma-separated list. A single value given for a sweep list replaces the list, and
    /// also fixes that knob in every extra config.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let mut tree = serde_json::to_value(&*self).map_err(|err| Error::value(err.to_string()))?;
        let slot = field_mut(&mut tree, key)
            .ok_or_else(|| Error::value(format!("--set {key}: no such field in a preset")))?;
        let as_ron = ron_value(key, value);
        *slot = match &as_ron {
            Ok(parsed) => parsed.clone(),
            Err(_) => parse_value(value, slot),
        };
        // A sweep knob set here is fixed in every extra config too; any other key is
        // no field of an extra config, so removing it there changes nothing.
        if let Some(points) = tree["extra_configs"].as_array_mut() {
            for point in points {
                if let Some(fields) = point.as_object_mut() {
                    fields.remove(key);
                }
            }
        }
        *self = serde_json::from_value(tree).map_err(|err| {
            // Text written as RON is best explained by RON's error, a bare word by
            // what the field expected instead.
            let problem = match as_ron {
                Err(ron) if value.contains(['(', '[', '{', '"']) => ron,
                _ => err.to_string(),
            };
            Error::value(format!("--set {key}={value}: {problem}"))
        })?;
        Ok(())
    }
}

/// What the RON `text` gives the field at `key`, in the preset's JSON tree: `text` is
/// written into an otherwise empty preset (`a.b` as `(a: (b: text))`), which is parsed
/// and read back, so the field's own type reads it, as from a preset file. Fails where
/// the text is no RON for the field, and on paths through lists and maps.
fn ron_value(key: &str, text: &str) -> std::result::Result<serde_json::Value, String> {
    let mut parts = key.split('.').rev();
    let leaf = parts.next().unwrap_or(key);
    let mut field = format!("{leaf}: {}", text.trim());
    for parent in parts {
        field = format!("{parent}: ({field})");
    }
    let top = key.split('.').next().unwrap_or(key);
    let required = [
        ("version", PRESET_VERSION.to_string()),
        ("name", "\"\"".to_owned()),
    ]
    .into_iter()
    .filter(|(name, _)| *name != top)
    .map(|(name, value)| format!("{name}: {value}, "));
    let document = format!("({}{field})", required.collect::<String>());
    let preset: Preset = ron_options()
        .from_str(&document)
        .map_err(|err| err.code.to_string())?;
    let tree = serde_json::to_value(&preset).map_err(|err| err.to_string())?;
    tree.pointer(&format!("/{}", key.replace('.', "/")))
        .cloned()
        .ok_or_else(|| format!("{key} is no field"))
}

/// The JSON node at a dotted path; list items are addressed by their index.
/// A missing leaf of an existing object (an optional field left out) is created.
fn field_mut<'a>(tree: &'a mut serde_json::Value, key: &str) -> Option<&'a mut serde_json::Value> {
    let (parents, leaf) = match key.rsplit_once('.') {
        Some((parents, leaf)) => (Some(parents), leaf),
        None => (None, key),
    };
    let mut node = tree;
    for part in parents.into_iter().flat_map(|p| p.split('.')) {
        node = match node {
            serde_json::Value::Object(map) => map.get_mut(part)?,
            serde_json::Value::Array(items) => items.get_mut(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    match node {
        serde_json::Value::Object(map) => Some(
            map.entry(leaf.to_owned())
                .or_insert(serde_json::Value::Null),
        ),
        serde_json::Value::Array(items) => items.get_mut(leaf.parse::<usize>().ok()?),
        _ => None,
    }
}

/// Reads a command-line value for the slot it will replace: JSON where it parses
/// (numbers, booleans, lists, objects), a comma-separated list or a single value wrapped
/// into a list where the slot is a list, and a plain string otherwise.
fn parse_value(text: &str, slot: &serde_json::Value) -> serde_json::Value {
    let scalar = |t: &str| {
        serde_json::from_str(t.trim())
            .unwrap_or_else(|_| serde_json::Value::String(t.trim().to_owned()))
    };
    let parsed = scalar(text);
    if slot.is_array() && !parsed.is_array() {
        return serde_json::Value::Array(text.split(',').map(scalar).collect());
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> &'static Path {
        Path::new("test.ron")
    }

    #[test]
    fn minimal_preset_takes_defaults() {
        let preset = Preset::from_ron("(version: 1, name: \"x\")", origin()).unwrap();
        assert_eq!(preset.num_workers, vec![0]);
        assert_eq!(preset.pipeline, vec![PipelineSpec::Light]);
        assert_eq!(preset.epochs, 2);
    }

    #[test]
    fn unknown_field_is_named_with_the_file() {
        let err = Preset::from_ron("(version: 1, name: \"x\", num_wrokers: [1])", origin())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("test.ron:"), "{err}");
        assert!(err.contains("num_wrokers"), "{err}");
    }

    #[test]
    fn intra_op_threads_read_auto_or_a_count_from_ron_and_set() {
        let mut preset = Preset::from_ron(
            "(version: 1, name: \"x\", intra_op_threads: [auto, 1, 2])",
            origin(),
        )
        .unwrap();
        use IntraOpThreads::{Auto, Count};
        assert_eq!(preset.intra_op_threads, [Auto, Count(1), Count(2)]);
        assert_eq!(
            Preset::from_ron(&preset.to_ron(), origin()).unwrap(),
            preset
        );
        preset.set("intra_op_threads", "auto,4").unwrap();
        assert_eq!(preset.intra_op_threads, [Auto, Count(4)]);
        let err = Preset::from_ron("(version: 1, name: \"x\", intra_op_threads: [0])", origin())
            .unwrap_err();
        assert!(err.to_string().contains("at least 1"), "{err}");
        assert!(preset.set("intra_op_threads", "many").is_err());
    }

    #[test]
    fn wrong_version_is_rejected() {
        let err = Preset::from_ron("(version: 7, name: \"x\")", origin()).unwrap_err();
        assert!(err.to_string().contains("version"), "{err}");
        assert!(err.is_bad_input());
    }

    #[test]
    fn ron_round_trip_keeps_everything() {
        let preset = Preset {
            samples: Some(512),
            extra_configs: vec![ConfigPoint {
                num_workers: Some(4),
                persistent_workers: Some(true),
                ..ConfigPoint::default()
            }],
            ..Preset::default()
        };
        let text = preset.to_ron();
        assert_eq!(Preset::from_ron(&text, origin()).unwrap(), preset);
    }

    #[test]
    fn set_scalar_replaces_sweep_list_and_fixes_extra_configs() {
        let mut preset = Preset {
            num_workers: vec![0, 2, 4],
            extra_configs: vec![ConfigPoint {
                num_workers: Some(4),
                pin_memory: Some(true),
                ..ConfigPoint::default()
            }],
            ..Preset::default()
        };
        preset.set("num_workers", "2").unwrap();
        assert_eq!(preset.num_workers, vec![2]);
        assert_eq!(preset.extra_configs[0].num_workers, None);
        assert_eq!(preset.extra_configs[0].pin_memory, Some(true));
    }

    #[test]
    fn set_accepts_lists_nested_paths_and_options() {
        let mut preset = Preset::default();
        preset.set("num_workers", "0,2,8").unwrap();
        assert_eq!(preset.num_workers, vec![0, 2, 8]);
        preset.set("dataset.kind", "idx").unwrap();
        preset.set("dataset.path", "/data/mnist").unwrap();
        assert_eq!(preset.dataset.path, Some(PathBuf::from("/data/mnist")));
        preset.set("samples", "2560").unwrap();
        assert_eq!(preset.samples, Some(2560));
        preset.set("persistent_workers", "false").unwrap();
        assert_eq!(preset.persistent_workers, vec![false]);
        preset.set("worker_kind", "spawn,fork").unwrap();
        assert_eq!(
            preset.worker_kind,
            vec![WorkerKind::Spawn, WorkerKind::Fork]
        );
        preset.set("dataset_transfer", "copy").unwrap();
        assert_eq!(preset.dataset_transfer, vec![DatasetTransfer::Copy]);
        preset.set("batch_transfer", "pipe").unwrap();
        assert_eq!(preset.batch_transfer, vec![BatchTransfer::Pipe]);
        preset.set("runtime", "pytorch").unwrap();
        assert_eq!(preset.runtime, vec![Runtime::Pytorch]);
        preset.set("start_method", "fork,spawn").unwrap();
        assert_eq!(
            preset.start_method,
            vec![StartMethod::Fork, StartMethod::Spawn]
        );
    }

    #[test]
    fn set_reads_ron_as_a_preset_file_writes_it() {
        let mut preset = Preset::default();
        preset.set("step", "mlp(hidden: 64)").unwrap();
        assert_eq!(preset.step, StepCost::Mlp { hidden: 64 });
        preset.set("step", "fixed(2.5)").unwrap();
        assert_eq!(preset.step, StepCost::Fixed(2.5));
        preset
            .set("normalize", "(mean: [0.5], std: [0.25])")
            .unwrap();
        assert_eq!(preset.normalize.mean, [0.5]);
        assert_eq!(preset.normalize.std, [0.25]);
        preset.set("worker_kind", "[spawn, fork]").unwrap();
        assert_eq!(preset.worker_kind, [WorkerKind::Spawn, WorkerKind::Fork]);
        preset.set("device", "cpu").unwrap();
        assert_eq!(preset.device, ["cpu"]);
        preset.set("name", "\"quoted\"").unwrap();
        assert_eq!(preset.name, "quoted");
        let err = preset.set("step", "mlp(hidden: lots)").unwrap_err();
        assert!(err.to_string().starts_with("--set step="), "{err}");
    }

    #[test]
    fn set_rejects_unknown_fields_and_bad_values() {
        let mut preset = Preset::default();
        let err = preset.set("nope", "1").unwrap_err().to_string();
        assert!(err.contains("nope"), "{err}");
        let err = preset.set("batch_size", "lots").unwrap_err().to_string();
        assert!(err.contains("batch_size"), "{err}");
        let err = preset.set("dataset.nope", "1").unwrap_err().to_string();
        assert!(err.contains("nope"), "{err}");
    }
}
