//! Presets: what a benchmark file says, as plain serde data. A preset is versioned RON
//! with unknown fields rejected by name; it names a dataset, the pipelines, and lists for
//! every loader knob (a sweep: their Cartesian product, plus `extra_configs`). `--set`
//! edits any field by its path before the preset is checked and resolved into a
//! [`Plan`](crate::plan::Plan). Paths in a preset file are relative to the file
//! ([`paths`]): loading resolves them, saving writes them relative to the file saved.

use std::fs;
use std::path::{Path, PathBuf};

use bytesize::ByteSize;
use ron::extensions::Extensions;
use serde::{Deserialize, Serialize};

use crate::dataset::DatasetSpec;
use crate::error::{Error, FieldError, Result};
use crate::step::StepSpec;
use crate::transform::{Normalize, PipelineSpec};

mod knobs;
mod overrides;
mod paths;
mod unused;
mod values;

pub use crate::error::FieldPath;
pub use crate::named_values::KnobValue;
pub use crate::transform::TransformAt;
pub use knobs::{ConfigPoint, KnobLists, knob_defaults};
pub use unused::{OWN_FILES, OWN_TRANSFORMS, UnusedFields};
pub use values::{
    BatchTransfer, Cache, DatasetTransfer, IntraOpThreads, RunOrder, Runtime, StartMethod,
    WorkerKind,
};

/// The preset format version this build reads and writes.
pub const PRESET_VERSION: u32 = 1;

/// The epochs a training run is assumed to take unless the preset says otherwise.
pub const DEFAULT_PLANNED_EPOCHS: usize = 50;

/// The tie margin unless the preset says otherwise: configs measured to differ by less
/// than 5% are equally fast.
pub const DEFAULT_TIE_MARGIN: f64 = 0.05;

/// How long an unresolved recommendation is measured further unless the preset says
/// otherwise: a minute, about what a user waits for an answer before doing something else.
pub const DEFAULT_RESOLVE_FOR_S: f64 = 60.0;

/// The steady part of an epoch's window unless the preset says otherwise: long enough
/// for tens of batches of a training step, short against an epoch of minutes.
pub const DEFAULT_WINDOW_S: f64 = 3.0;

/// How each epoch is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// An epoch longer than its window is cut after it and projected whole.
    #[default]
    Windows,
    /// Every epoch is measured whole.
    Epochs,
}

/// A benchmark: the dataset, the pipelines and the loader settings to sweep. Each knob
/// of the knob table ([`crate::plan::knob_table`]) is a list here, under its field name; a
/// preset file that leaves one out gets its default list ([`knob_defaults`]).
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
    /// Configs beyond the grid: each sets some knobs; the rest take each list's first value.
    #[serde(default)]
    pub extra_configs: Vec<ConfigPoint>,
    /// The training step run on each batch: `none`, `fixed(MS)`, `mlp(hidden: N)`,
    /// `model(path: "m.pt", lr: 0.01)` or `python(path, factory, args)`.
    #[serde(default)]
    pub step: StepSpec,
    /// The epochs a training run would take, for the break-even and the recommendation.
    #[serde(default = "defaults::planned_epochs")]
    pub planned_epochs: usize,
    /// Configs measured to differ by less than this share are equally fast (0.05: 5%):
    /// a smaller gain is not worth a knob.
    #[serde(default = "defaults::tie_margin")]
    pub tie_margin: f64,
    /// How each epoch is measured: `windows` (an epoch longer than its first batch, a
    /// warm-up and `window_s` of steady batches is cut there and projected whole) or
    /// `epochs` (every epoch whole).
    #[serde(default)]
    pub measure: Measure,
    /// The steady part of a window, in seconds.
    #[serde(default = "defaults::window_s")]
    pub window_s: f64,
    /// How long `run --recommend` and the app's analysis may go on measuring the configs
    /// an unresolved recommendation hinges on, in seconds (0: not at all).
    #[serde(default = "defaults::resolve_for_s")]
    pub resolve_for_s: f64,
    /// The memory a config may take at the end of an epoch of the whole dataset (`"16
    /// GiB"`): one projected past it is never recommended. Default: the memory the
    /// machine has available when the run starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<ByteSize>,
    /// The Python that runs the PyTorch runtime (a user's own environment, so their
    /// dataset's packages import); default `$LOADERBENCH_PYTHON`, else setup's.
    #[serde(default)]
    pub python: Option<PathBuf>,
    /// The transform pipelines.
    #[serde(default = "knob_defaults::pipeline")]
    pub pipeline: Vec<PipelineSpec>,
    /// Where our engine runs the pipeline: on whole batches, or per sample.
    #[serde(default = "knob_defaults::transform_at")]
    pub transform_at: Vec<TransformAt>,
    /// Samples per batch.
    #[serde(default = "knob_defaults::batch_size")]
    pub batch_size: Vec<usize>,
    /// Worker threads or processes; 0 loads in the consumer itself.
    #[serde(default = "knob_defaults::num_workers")]
    pub num_workers: Vec<usize>,
    /// How a worker runs: a thread, or a spawned or forked process.
    #[serde(default = "knob_defaults::worker_kind")]
    pub worker_kind: Vec<WorkerKind>,
    /// Workers live from one epoch to the next instead of restarting.
    #[serde(default = "knob_defaults::persistent_workers")]
    pub persistent_workers: Vec<bool>,
    /// Batches each worker works on ahead.
    #[serde(default = "knob_defaults::prefetch_factor")]
    pub prefetch_factor: Vec<usize>,
    /// Batches are copied to page-locked memory (a no-op without CUDA).
    #[serde(default = "knob_defaults::pin_memory")]
    pub pin_memory: Vec<bool>,
    /// Batches come in sampler order, rather than as workers finish them.
    #[serde(default = "knob_defaults::in_order")]
    pub in_order: Vec<bool>,
    /// Where batches go: `cpu`, `cuda` or `cuda:N`.
    #[serde(default = "knob_defaults::device")]
    pub device: Vec<String>,
    /// How worker processes get the dataset (ignored by thread workers).
    #[serde(default = "knob_defaults::dataset_transfer")]
    pub dataset_transfer: Vec<DatasetTransfer>,
    /// How worker processes hand batches back (ignored by thread workers).
    #[serde(default = "knob_defaults::batch_transfer")]
    pub batch_transfer: Vec<BatchTransfer>,
    /// Which data loader measures: loaderbench's engine or PyTorch's DataLoader.
    #[serde(default = "knob_defaults::runtime")]
    pub runtime: Vec<Runtime>,
    /// How PyTorch starts its worker processes (only the PyTorch runtime).
    #[serde(default = "knob_defaults::start_method")]
    pub start_method: Vec<StartMethod>,
    /// libtorch intra-op threads of the consumer: `auto` (libtorch's default) or a count.
    #[serde(default = "knob_defaults::intra_op_threads")]
    pub intra_op_threads: Vec<IntraOpThreads>,
    /// Training processes per machine, each loading its shard of every epoch
    /// (DistributedSampler semantics) with its own workers.
    #[serde(default = "knob_defaults::ranks")]
    pub ranks: Vec<usize>,
    /// Whether each epoch finds the dataset's files in the page cache (`warm`), or they
    /// are evicted before every epoch so that it reads from storage (`cold`).
    #[serde(default = "knob_defaults::cache")]
    pub cache: Vec<Cache>,
}

impl Preset {
    /// This preset with the secrets of the URLs it names hidden
    /// ([`crate::secrets::redact`]), as results, journals and baselines keep it.
    pub fn redacted(&self) -> Preset {
        let mut preset = self.clone();
        if let Some(path) = preset.dataset.path.as_mut()
            && let Some(text) = path.to_str()
            && let std::borrow::Cow::Owned(hidden) = crate::secrets::redact(text)
        {
            *path = PathBuf::from(hidden);
        }
        preset
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
            repeats: defaults::one(),
            warmup: false,
            order: RunOrder::default(),
            shuffle: defaults::yes(),
            seed: 0,
            drop_last: false,
            normalize: Normalize::default(),
            worker_timeout_s: defaults::worker_timeout_s(),
            extra_configs: Vec::new(),
            step: StepSpec::None,
            planned_epochs: defaults::planned_epochs(),
            tie_margin: defaults::tie_margin(),
            measure: Measure::default(),
            window_s: defaults::window_s(),
            resolve_for_s: defaults::resolve_for_s(),
            memory_limit: None,
            python: None,
            pipeline: knob_defaults::pipeline(),
            transform_at: knob_defaults::transform_at(),
            batch_size: knob_defaults::batch_size(),
            num_workers: knob_defaults::num_workers(),
            worker_kind: knob_defaults::worker_kind(),
            persistent_workers: knob_defaults::persistent_workers(),
            prefetch_factor: knob_defaults::prefetch_factor(),
            pin_memory: knob_defaults::pin_memory(),
            in_order: knob_defaults::in_order(),
            device: knob_defaults::device(),
            dataset_transfer: knob_defaults::dataset_transfer(),
            batch_transfer: knob_defaults::batch_transfer(),
            runtime: knob_defaults::runtime(),
            start_method: knob_defaults::start_method(),
            intra_op_threads: knob_defaults::intra_op_threads(),
            ranks: knob_defaults::ranks(),
            cache: knob_defaults::cache(),
        }
    }
}

mod defaults {
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
    pub fn planned_epochs() -> usize {
        super::DEFAULT_PLANNED_EPOCHS
    }
    pub fn tie_margin() -> f64 {
        super::DEFAULT_TIE_MARGIN
    }
    pub fn window_s() -> f64 {
        super::DEFAULT_WINDOW_S
    }
    pub fn resolve_for_s() -> f64 {
        super::DEFAULT_RESOLVE_FOR_S
    }
}

fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(Extensions::IMPLICIT_SOME)
}

impl Preset {
    /// Parses RON text; `origin` names the file in errors.
    pub fn from_ron(text: &str, origin: &Path) -> Result<Preset> {
        let preset: Preset = ron_options().from_str(text).map_err(|err| {
            let hint = match &err.code {
                ron::Error::MissingStructField {
                    field: "version",
                    outer,
                } if outer.as_deref() == Some("Preset") => {
                    format!(" (a preset's first field is `version: {PRESET_VERSION},`)")
                }
                _ => String::new(),
            };
            Error::file_caused(origin, format!("{err}{hint}"), err)
        })?;
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

    /// Reads and parses a preset file, its relative paths resolved against the file's
    /// folder ([`paths`]).
    pub fn load(path: &Path) -> Result<Preset> {
        let text = fs::read_to_string(path).map_err(|err| Error::io(path, err))?;
        let mut preset = Preset::from_ron(&text, path)?;
        preset.resolve_paths(&folder_of(path)?);
        Ok(preset)
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

    /// Writes the preset whole or not at all ([`crate::atomic_file`]), its paths
    /// relative to the file's folder where they lie under it, else absolute ([`paths`]).
    pub fn save(&self, path: &Path) -> Result<()> {
        let saved = self
            .relative_to(&folder_of(path)?)
            .map_err(|err| Error::io(path, err))?;
        crate::atomic_file::write(path, saved.to_ron().as_bytes())
    }
}

/// The absolute folder of the preset file at `path`.
fn folder_of(path: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(path).map_err(|err| Error::io(path, err))?;
    Ok(absolute
        .parent()
        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf))
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
        // Inside a custom pipeline too (steps: `step::tests`).
        let text = "(version: 1, name: \"x\", pipeline: [custom(name: \"c\", ops: [], op: [])])";
        let err = Preset::from_ron(text, origin()).unwrap_err().to_string();
        assert!(
            err.contains("Unexpected field named `op` in `custom`"),
            "{err}"
        );
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
    fn image_size_reads_from_either_bracket_and_names_what_it_wants() {
        for written in ["(64, 48)", "[64, 48]"] {
            let preset = Preset::from_ron(
                &format!("(version: 1, name: \"x\", dataset: (image_size: {written}))"),
                origin(),
            )
            .unwrap();
            assert_eq!(preset.dataset.image_size, [64, 48], "{written}");
            assert_eq!(
                Preset::from_ron(&preset.to_ron(), origin()).unwrap(),
                preset
            );
        }
        let mut preset = Preset::default();
        preset
            .set(
                "dataset",
                "(kind: image_folder, path: \"d\", image_size: [32, 24])",
            )
            .unwrap();
        assert_eq!(preset.dataset.image_size, [32, 24]);
        for wrong in ["[64]", "(64, 48, 3)", "64"] {
            let err = Preset::from_ron(
                &format!("(version: 1, name: \"x\", dataset: (image_size: {wrong}))"),
                origin(),
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains("[height, width] in pixels"), "{wrong}: {err}");
        }
    }

    #[test]
    fn a_preset_without_its_version_is_told_what_to_write() {
        let err = Preset::from_ron("(name: \"x\")", origin()).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("missing field named `version` in `Preset` (a preset's first field is `version: 1,`)"),
            "{err}"
        );
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
    fn a_loaded_preset_holds_paths_beside_its_file_and_saves_them_back_so() {
        let dir = tempfile::tempdir().unwrap();
        let bench = dir.path().join("bench");
        fs::create_dir(&bench).unwrap();
        let file = bench.join("p.ron");
        fs::write(
            &file,
            "(version: 1, name: \"x\", dataset: (kind: npy, path: \"data/x.npy\"), \
             step: model(path: \"/models/m.pt\"))",
        )
        .unwrap();
        let loaded = Preset::load(&file).unwrap();
        assert_eq!(loaded.dataset.path, Some(bench.join("data/x.npy")));
        assert_eq!(loaded.step.path(), Some(Path::new("/models/m.pt")));
        loaded.save(&file).unwrap();
        let text = fs::read_to_string(&file).unwrap();
        assert!(text.contains("path: \"data/x.npy\""), "{text}");
        assert_eq!(Preset::load(&file).unwrap(), loaded);
        let above = dir.path().join("above.ron");
        loaded.save(&above).unwrap();
        let text = fs::read_to_string(&above).unwrap();
        assert!(text.contains("path: \"bench/data/x.npy\""), "{text}");
        let other = dir.path().join("other");
        fs::create_dir(&other).unwrap();
        let elsewhere = other.join("elsewhere.ron");
        loaded.save(&elsewhere).unwrap();
        let text = fs::read_to_string(&elsewhere).unwrap();
        let absolute = format!("path: {:?}", bench.join("data/x.npy").display().to_string());
        assert!(text.contains(&absolute), "{text}");
        assert_eq!(Preset::load(&elsewhere).unwrap(), loaded);
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
        let mut swept = preset.clone();
        preset.set("num_workers", "2").unwrap();
        assert_eq!(preset.num_workers, vec![2]);
        assert_eq!(preset.extra_configs[0].num_workers, None);
        assert_eq!(preset.extra_configs[0].pin_memory, Some(true));
        // A list of several values replaces the sweep's list and drops the extra config
        // at another count (it took the list's first value, 0, and became "nw=0
        // persistent"); one at a count of the list stays as it is.
        let mut kept = swept.clone();
        swept.set("num_workers", "0,2").unwrap();
        assert_eq!(swept.num_workers, vec![0, 2]);
        assert!(swept.extra_configs.is_empty(), "{:?}", swept.extra_configs);
        kept.set("num_workers", "0,4").unwrap();
        assert_eq!(kept.extra_configs[0].num_workers, Some(4));
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
        assert_eq!(preset.step, StepSpec::Mlp { hidden: 64 });
        preset.set("step", "fixed(2.5)").unwrap();
        assert_eq!(preset.step, StepSpec::Fixed(2.5));
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
        let err = preset
            .set("dataset.nope.deeper", "1")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no such field"), "{err}");
        for infinite in ["inf", "1e999", "NaN", "0,inf"] {
            let err = preset.set("window_s", infinite).unwrap_err().to_string();
            assert_eq!(
                err,
                format!("--set window_s={infinite}: not a finite number")
            );
        }
        // Inside a value too: "invalid type: null, expected f64" named no number.
        for inside in ["fixed(inf)", "fixed( -inf )", "fixed(NaN)"] {
            let err = preset.set("step", inside).unwrap_err().to_string();
            assert_eq!(err, format!("--set step={inside}: not a finite number"));
        }
        preset
            .set("dataset.path", "\"/data/inf\"")
            .expect("a word inside a string is no number");
        let err = preset
            .set(
                "pipeline",
                "[custom(name: \"x\", ops: [crop(size: [8], padding: 0)])]",
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("[height, width] in pixels"), "{err}");
        preset
            .set(
                "pipeline",
                "[custom(name: \"x\", ops: [crop(size: [8, 6], padding: 0)])]",
            )
            .unwrap();
    }

    #[test]
    fn set_reaches_a_field_inside_one_left_out_whole() {
        let mut preset = Preset::default();
        preset.set("dataset.limits.http_stall_s", "5").unwrap();
        assert_eq!(preset.dataset.limits.http_stall_s, 5);
        assert_eq!(
            preset.dataset.limits.shards,
            crate::dataset::DatasetLimits::DEFAULT.shards
        );
        preset.set("dataset.limits.shards", "7").unwrap();
        assert_eq!(preset.dataset.limits.http_stall_s, 5);
        // Back to its default: still a field, though a saved preset leaves it out.
        let mut preset = Preset::default();
        preset.set("dataset.limits.http_stall_s", "30").unwrap();
        assert!(preset.dataset.limits.is_default());
    }
}
