//! What loaderbench and `python/pytorch_loader.py` say to each other: the
//! [`Request`] (one JSON line on the script's stdin) and the [`Message`]s it answers with
//! (one JSON object per line on its stdout).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use loaderbench_engine::loader::EpochSize;
use loaderbench_engine::plan::{Config, KNOBS, Plan};
use loaderbench_engine::step::StepSpec;
use loaderbench_engine::transform::Normalize;

use crate::engine_epoch::window_rule;
use crate::window::WindowRule;

/// The dataset as the script builds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum DatasetRequest {
    /// IDX files, read like torchvision's MNIST (the synthetic dataset is written as one).
    Idx { images: PathBuf, labels: PathBuf },
    /// A memory-mapped .npy array and its optional labels.
    Npy {
        path: PathBuf,
        labels: Option<PathBuf>,
    },
    /// torchvision's ImageFolder over the files our engine listed under `root` (the
    /// file `list`, as [`write_image_list`](super::image_list::write_image_list) writes
    /// it), converted to `channels` and resized to `image_size`.
    ImageFolder {
        root: PathBuf,
        list: PathBuf,
        channels: usize,
        image_size: [usize; 2],
    },
    /// Tar shards read by WebDataset (local paths or http(s) URLs, in pattern order),
    /// decoded as the image folder; with the run's `samples`, how many samples of each
    /// shard it reads.
    Shards {
        shards: Vec<String>,
        channels: usize,
        image_size: [usize; 2],
        shuffle_buffer: usize,
        samples_per_shard: Option<Vec<usize>>,
    },
    /// The user's own Dataset: `factory(**args)` from the module at `path` (as the
    /// preset names it; errors name it so), and `collate()` as the collate_fn.
    Python {
        path: PathBuf,
        factory: String,
        args: BTreeMap<String, serde_json::Value>,
        collate: Option<String>,
    },
}

/// One config to measure: the dataset, how samples are drawn, the epochs, and the value
/// of each knob the PyTorch runtime takes (under the knob's name; see [`Knob::script_value`]
/// and `KNOBS` in the script).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    pub dataset: DatasetRequest,
    pub samples: Option<usize>,
    /// The most pixels an image may have (the dataset's `image_pixels` limit): PIL's
    /// `MAX_IMAGE_PIXELS` is set to it, so that PIL reads what our engine reads.
    pub image_pixels: u64,
    pub normalize: Normalize,
    pub shuffle: bool,
    pub seed: u64,
    pub drop_last: bool,
    pub epochs: usize,
    pub warmup: bool,
    /// When an epoch is cut and projected (see [`window`](crate::window)); `None`
    /// measures every epoch whole. With ranks, every rank cuts at the same batch.
    pub window: Option<WindowRule>,
    pub worker_timeout_s: f64,
    pub knobs: BTreeMap<&'static str, serde_json::Value>,
    /// The training step run on every batch.
    pub step: StepSpec,
    /// Which rank of a distributed job this script is; `None` with one rank.
    pub ranks: Option<RankRequest>,
}

/// One rank of a torch.distributed job: the process group it joins.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankRequest {
    pub rank: usize,
    pub world: usize,
    /// torch.distributed's rendezvous: a file store every rank of the job names.
    pub init_method: String,
}

impl Request {
    pub fn new(plan: &Plan, config: &Config, dataset: DatasetRequest) -> Request {
        Request {
            dataset,
            samples: plan.preset.samples,
            image_pixels: plan.preset.dataset.limits.image_pixels,
            normalize: plan.preset.normalize.clone(),
            shuffle: plan.preset.shuffle,
            seed: plan.preset.seed,
            drop_last: plan.preset.drop_last,
            epochs: plan.preset.epochs,
            warmup: plan.preset.warmup,
            window: window_rule(plan, config),
            worker_timeout_s: plan.preset.worker_timeout_s,
            knobs: KNOBS
                .iter()
                .filter_map(|knob| Some((knob.field, (knob.script_value?)(config))))
                .collect(),
            step: plan.preset.step.clone(),
            ranks: None,
        }
    }

    /// The request of rank `rank` of a job of `world` ranks that meet at the file
    /// store `store`; with one rank, the request as it was.
    pub fn for_rank(self, rank: usize, world: usize, store: &Path) -> Request {
        let ranks = (world > 1).then(|| RankRequest {
            rank,
            world,
            init_method: format!("file://{}", store.display()),
        });
        Request { ranks, ..self }
    }
}

/// What loaderbench answers a script's `epoch_ready` with (start the epoch) and its
/// `sweep` (the sweep is done).
pub const GO: &str = "go";

/// One line of the script's report.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Message {
    /// Imports done, dataset and DataLoader built.
    Ready {
        intra_op_threads: i32,
        pin_memory_effective: bool,
        rss_bytes: Option<u64>,
        versions: Versions,
        /// Samples in the whole dataset, where it has a length.
        #[serde(default)]
        dataset_samples: Option<usize>,
        /// The bytes of Python objects the dataset holds (`python/pytorch_objects.py`).
        #[serde(default)]
        dataset_object_bytes: Option<u64>,
    },
    /// Something the user should know (an IterableDataset ignores shuffle).
    Note { message: String },
    /// The script waits for `go` before `epoch`, so that loaderbench can evict the
    /// dataset's files first (`cache: cold`) or load them (`cache: warm`).
    EpochReady { epoch: usize },
    /// The script waits for `go` at the end of `epoch` while its workers, which end
    /// with the epoch's iterator, are still there: their memory is swept once more.
    Sweep { epoch: usize },
    /// An epoch began at `t0` (seconds on the script's perf_counter clock).
    EpochStart { epoch: usize, t0: f64 },
    /// A worker process ran worker_init_fn at `at` (the same clock).
    WorkerReady { worker: usize, at: f64 },
    /// A batch is on the device.
    Batch {
        epoch: usize,
        index: usize,
        at_s: f64,
        samples: usize,
        wait_s: f64,
        to_device_s: f64,
        /// The training step on the batch, after it reached the device.
        #[serde(default)]
        step_s: f64,
    },
    /// An epoch ended (cut after its window, where `window` is given and the timeline
    /// holds fewer batches than `epoch_size`).
    Epoch {
        epoch: usize,
        seconds: f64,
        #[serde(default)]
        window: Option<WindowRule>,
        /// The batches and samples of a whole epoch, where the loader knows them.
        #[serde(default)]
        epoch_size: Option<EpochSize>,
    },
    /// With ranks, after `Epoch`: when the rank left the barrier and when it ended the
    /// epoch (seconds since the Unix epoch, a clock all ranks share).
    RankEpoch {
        epoch: usize,
        started_unix_s: f64,
        finished_unix_s: f64,
    },
    /// Every epoch was measured.
    Done { peak_rss_bytes: Option<u64> },
    /// The script failed: `environment` when Python lacks torch or torchvision,
    /// `bad_input` when the config asks for something PyTorch cannot do.
    Error {
        message: String,
        bad_input: bool,
        environment: bool,
        /// Where in the user's dataset code the error comes from.
        #[serde(default)]
        user: Option<UserFrame>,
        /// The tar shard (path or URL) at fault.
        #[serde(default)]
        shard: Option<String>,
    },
}

/// The versions the script ran with.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Versions {
    pub python: String,
    pub torch: String,
    pub torchvision: String,
    /// spdl-core's, for the SPDL runtime.
    #[serde(default)]
    pub spdl: Option<String>,
}

/// A place in the user's code: the file as the preset names it, and the line.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct UserFrame {
    pub file: PathBuf,
    pub line: Option<u32>,
}

impl Message {
    /// Parses one stdout line; `None` for lines that are not JSON objects (stray output
    /// of a library), which the protocol never sends.
    pub fn parse(line: &str) -> Option<Result<Message, String>> {
        let line = line.trim();
        if !line.starts_with('{') {
            return None;
        }
        Some(
            serde_json::from_str(line)
                .map_err(|err| format!("unreadable report line `{line}`: {err}")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_kind_parses() {
        let lines = [
            r#"{"kind": "ready", "intra_op_threads": 2, "pin_memory_effective": false, "rss_bytes": null, "versions": {"python": "3.11.2", "torch": "2.13.0", "torchvision": "0.28.0"}}"#,
            r#"{"kind": "note", "message": "shuffle does not apply"}"#,
            r#"{"kind": "epoch_start", "epoch": 1, "t0": 12.5}"#,
            r#"{"kind": "worker_ready", "worker": 1, "at": 12.75}"#,
            r#"{"kind": "batch", "epoch": 1, "index": 0, "at_s": 0.5, "samples": 64, "wait_s": 0.4, "to_device_s": 0.0}"#,
            r#"{"kind": "sweep", "epoch": 1}"#,
            r#"{"kind": "epoch", "epoch": 1, "seconds": 3.0}"#,
            r#"{"kind": "rank_epoch", "epoch": 1, "started_unix_s": 9.5, "finished_unix_s": 12.5}"#,
            r#"{"kind": "done", "peak_rss_bytes": 1024}"#,
            r#"{"kind": "error", "message": "boom", "bad_input": false, "environment": true}"#,
            r#"{"kind": "error", "message": "ValueError: x", "bad_input": false, "environment": false, "user": {"file": "d.py", "line": 4}}"#,
            r#"{"kind": "error", "message": "no such file", "bad_input": true, "environment": false, "user": null, "shard": "s-1.tar"}"#,
        ];
        for line in lines {
            assert!(matches!(Message::parse(line), Some(Ok(_))), "{line}");
        }
        assert_eq!(
            Message::parse(lines[3]),
            Some(Ok(Message::WorkerReady {
                worker: 1,
                at: 12.75
            }))
        );
    }

    #[test]
    fn stray_output_is_skipped_and_broken_json_named() {
        assert_eq!(Message::parse("some library printed this"), None);
        let err = Message::parse(r#"{"kind": "nonsense"}"#)
            .unwrap()
            .unwrap_err();
        assert!(err.contains("nonsense"), "{err}");
    }

    #[test]
    fn requests_carry_ops_as_the_script_reads_them() {
        let preset = loaderbench_engine::preset::Preset {
            pipeline: vec![loaderbench_engine::transform::PipelineSpec::Heavy],
            ..loaderbench_engine::preset::Preset::default()
        };
        let plan = Plan::from_preset(&preset, None).unwrap();
        let dataset = DatasetRequest::Idx {
            images: "i".into(),
            labels: "l".into(),
        };
        let json = serde_json::to_value(Request::new(&plan, &plan.configs[0], dataset)).unwrap();
        let knobs = &json["knobs"];
        assert_eq!(
            knobs["pipeline"][0],
            serde_json::json!({"rotate": {"degrees": 30.0}})
        );
        assert_eq!(knobs["pipeline"][3], serde_json::json!("normalize"));
        assert_eq!(json["dataset"]["kind"], "idx");
        assert_eq!(
            knobs["start_method"],
            loaderbench_engine::preset::StartMethod::platform_default().name()
        );
        assert_eq!(knobs["batch_size"], 64);
        assert_eq!(json["ranks"], serde_json::Value::Null);
        // The step as the preset's StepSpec writes it, which pytorch_steps.step_spec reads.
        assert_eq!(json["step"], serde_json::json!("none"));
        let step = StepSpec::Model {
            path: "m.pt".into(),
            lr: 0.5,
        };
        assert_eq!(
            serde_json::to_value(&step).unwrap(),
            serde_json::json!({"model": {"path": "m.pt", "lr": 0.5}})
        );
    }

    #[test]
    fn a_rank_joins_the_file_store_and_runs_one_thread_by_default() {
        let mut preset = loaderbench_engine::preset::Preset::default();
        preset.set("runtime", "pytorch").unwrap();
        preset.set("ranks", "2").unwrap();
        let plan = Plan::from_preset(&preset, None).unwrap();
        let dataset = DatasetRequest::Idx {
            images: "i".into(),
            labels: "l".into(),
        };
        let request = Request::new(&plan, &plan.configs[0], dataset);
        assert_eq!(request.knobs["intra_op_threads"], 1, "as torchrun sets it");
        let ranked = request.for_rank(1, 2, Path::new("/private/store-0"));
        let json = serde_json::to_value(&ranked).unwrap();
        assert_eq!(
            json["ranks"],
            serde_json::json!({"rank": 1, "world": 2, "init_method": "file:///private/store-0"})
        );
    }

    #[test]
    fn the_script_takes_every_knob_the_table_sends_it() {
        let sent: Vec<&str> = KNOBS
            .iter()
            .filter(|knob| knob.script_value.is_some())
            .map(|knob| knob.field)
            .collect();
        let mut taken = super::super::script_knobs();
        let mut expected = sent.clone();
        taken.sort_unstable();
        expected.sort_unstable();
        assert_eq!(
            taken, expected,
            "KNOBS in python/pytorch_loader.py must name exactly the knobs whose \
             `script_value` is set in the knob table (crates/engine/src/plan/knob_table)"
        );
    }
}
