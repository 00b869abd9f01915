//! The SPDL runtime (`runtime: spdl`) for real, through the CLI as a process, on a
//! user's Dataset that decodes with PIL and transforms with torchvision
//! (tests/data/user_dataset/mnist_user.py, over IDX files whose label is the sample's
//! index). One run measures it beside DataLoader at 0, 2 and 4 workers, shuffled, with
//! a step that records every batch's labels (tests/data/step/record_labels.py): every
//! sample comes once per epoch; in order, SPDL's batches are DataLoader's for the same
//! seed, epoch by epoch; out of order, the same samples come. The same run shows the
//! runtime in the table, the JSON and the CSV, and its memory (one process: its workers
//! are threads). An epoch cut after its window stops its pipeline and the next epoch
//! runs; a knob SPDL cannot honour, an IterableDataset and an error in `__getitem__` on
//! a pipeline thread each end the run in one line naming the knob or the user's file,
//! and a pipeline that delivers nothing within the worker timeout in one naming SPDL.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::Duration;

use loaderbench_engine::dataset::{DatasetSpec, open};
use loaderbench_measure::pytorch::write_idx;
use serde_json::Value;
use tempfile::TempDir;

use crate::common;
use crate::user_code::{MNIST_USER, assert_fails_at, run_command, test_data};
use common::process::run_leaving_nothing;
use common::runs::shared_dir;
use common::{assert_error_line, loaderbench_command, path_str, run_with_deadline, stderr, stdout};

/// Samples in the test's dataset, each labelled with its index.
const SAMPLES: usize = 256;
/// Samples per batch in the runs that record every batch.
const BATCH: usize = 64;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// A folder with the IDX files of [`SAMPLES`] synthetic images, each labelled with its
/// index, and a folder for the recording step's files.
struct Data {
    dir: TempDir,
}

impl Data {
    fn new(dir: TempDir) -> Data {
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let synthetic = open(&DatasetSpec::default(), Some(SAMPLES)).unwrap();
        let (_, labels) = write_idx(synthetic.as_ref(), &data).unwrap();
        let mut idx = vec![0, 0, 8, 1];
        idx.extend((SAMPLES as u32).to_be_bytes());
        idx.extend((0..SAMPLES).map(|i| i as u8));
        std::fs::write(labels, idx).unwrap();
        std::fs::create_dir(dir.path().join("batches")).unwrap();
        Data { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A preset over the dataset with the recording step; `fields` are more of its
    /// fields, as RON.
    fn preset(&self, name: &str, fields: &str) -> PathBuf {
        let preset = format!(
            r#"(
    version: 1,
    name: "{name}",
    dataset: (
        kind: python,
        path: "{module}",
        factory: "make_dataset",
        args: {{"root": "{data}"}},
        collate: Some("make_collate"),
    ),
    step: python(path: "{step}", factory: "make_step", args: {{"folder": "{batches}"}}),
    batch_size: [{BATCH}],
    seed: 7,
    warmup: false,
{fields}
)"#,
            module = test_data(MNIST_USER).display(),
            data = self.path("data").display(),
            step = repo("tests/data/step/record_labels.py").display(),
            batches = self.path("batches").display(),
        );
        let path = self.path(&format!("{name}.ron"));
        std::fs::write(&path, preset).unwrap();
        path
    }

    /// `loaderbench run` of `preset` with `sets`, exporting JSON and CSV; fails the test
    /// if a process of the run outlives it.
    fn run(&self, preset: &Path, sets: &[&str]) -> Output {
        let (json, csv) = (self.path("run.json"), self.path("run.csv"));
        let args = ["--json", path_str(&json), "--csv", path_str(&csv)];
        let limit = Duration::from_secs(300);
        run_leaving_nothing(
            &mut run_command(preset, &args, sets),
            self.dir.path(),
            limit,
        )
    }

    fn results(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.path("run.json")).unwrap()).unwrap()
    }

    /// The batches each config's script recorded, in the order the configs ran: each
    /// batch its samples' labels (their indices).
    fn recorded(&self) -> Vec<Vec<Vec<usize>>> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.path("batches"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        files
            .iter()
            .map(|file| {
                let text = std::fs::read_to_string(file).unwrap();
                text.lines()
                    .map(|line| serde_json::from_str(line).unwrap())
                    .collect()
            })
            .collect()
    }
}

/// The configs of the shared run, in the order it measures them.
const CONFIGS: [(&str, usize, bool); 7] = [
    ("pytorch", 0, true),
    ("pytorch", 2, true),
    ("pytorch", 4, true),
    ("spdl", 0, true),
    ("spdl", 2, true),
    ("spdl", 4, true),
    ("spdl", 4, false),
];

/// DataLoader and SPDL at 0, 2 and 4 workers, in order, and SPDL at 4 out of order:
/// shuffled, two epochs, every batch recorded. Run once, by the first test that needs it.
fn runtimes_side_by_side() -> &'static (Data, Output) {
    static RUN: OnceLock<(Data, Output)> = OnceLock::new();
    let run = RUN.get_or_init(|| {
        let data = Data::new(shared_dir());
        let preset = data.preset(
            "spdl-beside-dataloader",
            "    runtime: [pytorch, spdl],
    num_workers: [0, 2, 4],
    shuffle: true,
    epochs: 2,
    measure: epochs,
    order: sequential,
    extra_configs: [(runtime: spdl, num_workers: 4, in_order: false)],",
        );
        let output = data.run(&preset, &[]);
        (data, output)
    });
    assert!(run.1.status.success(), "{}", stderr(&run.1));
    run
}

/// A run of a preset `name` of its own over a fresh dataset, with `fields` (RON) and
/// `sets`: the data (the run's exports and recorded batches), and what the run printed.
fn run_alone(name: &str, fields: &str, sets: &[&str]) -> (Data, Output) {
    let data = Data::new(TempDir::new().unwrap());
    let preset = data.preset(name, fields);
    let output = data.run(&preset, sets);
    (data, output)
}

/// `recorded`'s batches, cut into its epochs.
fn epochs(recorded: &[Vec<usize>]) -> Vec<Vec<Vec<usize>>> {
    let per_epoch = SAMPLES / BATCH;
    assert_eq!(recorded.len(), 2 * per_epoch, "{recorded:?}");
    recorded.chunks(per_epoch).map(<[_]>::to_vec).collect()
}

#[test]
fn every_runtime_delivers_every_sample_once_per_epoch() {
    let (data, _) = runtimes_side_by_side();
    let recorded = data.recorded();
    assert_eq!(recorded.len(), CONFIGS.len());
    for (config, batches) in CONFIGS.iter().zip(&recorded) {
        for epoch in epochs(batches) {
            let mut samples: Vec<usize> = epoch.concat();
            samples.sort_unstable();
            assert_eq!(samples, (0..SAMPLES).collect::<Vec<_>>(), "{config:?}");
        }
    }
}

#[test]
fn in_order_spdl_delivers_dataloader_s_batches_for_the_same_seed_every_epoch() {
    let (data, _) = runtimes_side_by_side();
    let recorded = data.recorded();
    let dataloader = epochs(&recorded[0]);
    assert_ne!(dataloader[0], dataloader[1], "the epochs are shuffled anew");
    for (config, batches) in CONFIGS.iter().zip(&recorded).filter(|(c, _)| c.2) {
        assert_eq!(epochs(batches), dataloader, "{config:?}");
    }
}

#[test]
fn the_table_the_json_and_the_csv_name_the_spdl_runtime() {
    let (data, output) = runtimes_side_by_side();
    let table = stdout(output);
    let rows: Vec<&str> = table.lines().filter(|l| l.contains("| spdl ")).collect();
    assert_eq!(rows.len(), 4, "{table}");
    let results = data.results();
    let runtimes: Vec<&str> = results["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["config"]["runtime"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = CONFIGS.iter().map(|c| c.0).collect();
    assert_eq!(runtimes, expected);
    assert!(table.contains(" · spdl 0."), "spdl's version: {table}");
    let csv = std::fs::read_to_string(data.path("run.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = header
        .iter()
        .position(|h| *h == "runtime")
        .expect("a runtime column");
    // A row per epoch: each of the four spdl configs measured two.
    let spdl_rows = csv
        .lines()
        .filter(|row| row.split(',').nth(column) == Some("spdl"))
        .count();
    assert_eq!(spdl_rows, 4 * 2, "{csv}");
}

#[test]
fn spdl_s_memory_is_its_one_process_with_its_threads_inside() {
    let (data, _) = runtimes_side_by_side();
    let results = data.results();
    for result in results["results"].as_array().unwrap() {
        let config = &result["config"];
        if config["runtime"] != "spdl" {
            continue;
        }
        let processes = result["processes"].as_array().unwrap();
        assert_eq!(processes.len(), 1, "{config}: {processes:?}");
        assert_eq!(processes[0]["kind"], "main");
        for epoch in result["epochs"].as_array().unwrap() {
            let memory = &epoch["memory"];
            assert!(memory["peak_pss_bytes"].as_u64().unwrap() > 0, "{memory}");
            assert_eq!(memory["worker_pss_bytes"], 0, "{memory}");
        }
    }
}

#[test]
fn spdl_s_threads_report_their_start_up_as_workers_do() {
    let (data, _) = runtimes_side_by_side();
    let results = data.results();
    for result in results["results"].as_array().unwrap() {
        let workers = result["config"]["num_workers"].as_u64().unwrap() as usize;
        if result["config"]["runtime"] != "spdl" || workers == 0 {
            continue;
        }
        for epoch in result["epochs"].as_array().unwrap() {
            let startups = epoch["worker_startups"].as_array().unwrap();
            assert!(
                (1..=workers).contains(&startups.len()),
                "{workers} threads: {startups:?}"
            );
        }
    }
}

#[test]
fn an_epoch_cut_after_its_window_stops_its_pipeline_and_the_next_epoch_runs() {
    let fields = "    runtime: [spdl],
    num_workers: [2],
    shuffle: true,
    epochs: 2,
    measure: windows,
    window_s: 0.1,";
    // A window that slows (a busy machine: other tests beside this one) is measured
    // whole and says why; the first epoch's cut is what must stop its pipeline, so a
    // run whose first window slowed is run again, three times at most.
    let mut slowed = Vec::new();
    let (data, epochs) = loop {
        let (data, output) = run_alone("spdl-window", fields, &["batch_size=1"]);
        assert!(output.status.success(), "{}", stderr(&output));
        let results = data.results();
        let epochs = results["results"][0]["epochs"].as_array().unwrap().clone();
        assert_eq!(epochs.len(), 2);
        if epochs[0]["projected"].is_object() {
            break (data, epochs);
        }
        assert!(
            epochs[0]["whole_because"].is_string(),
            "not cut: {}",
            epochs[0]
        );
        slowed.push(epochs[0]["whole_because"].clone());
        assert!(slowed.len() < 3, "every first window slowed: {slowed:?}");
    };
    let second = &epochs[1];
    assert!(
        second["projected"].is_object() || second["whole_because"].is_string(),
        "neither cut nor said why: {second}"
    );
    let recorded = data.recorded();
    let delivered: usize = recorded[0].iter().map(Vec::len).sum();
    assert!(
        delivered < 2 * SAMPLES,
        "{delivered} samples: the epochs were not cut"
    );
}

#[test]
fn a_knob_spdl_cannot_honour_is_refused_naming_it_and_the_runtime() {
    let sets = ["worker_kind=fork", "num_workers=2"];
    let (_, output) = run_alone("spdl-refused", "    runtime: [spdl],", &sets);
    assert_error_line(&output, 2, &["worker_kind", "fork", "spdl runtime"]);
}

#[test]
fn an_iterable_dataset_is_refused_on_spdl_naming_the_user_s_module() {
    let dir = TempDir::new().unwrap();
    let module = repo("tests/data/user_dataset/sharded_iterable.py");
    let preset = dir.path().join("iterable.ron");
    std::fs::write(
        &preset,
        format!(
            r#"(
    version: 1,
    name: "iterable",
    dataset: (kind: python, path: "{}", factory: "make_dataset", args: {{"size": 64}}),
    runtime: [spdl],
    num_workers: [2],
    epochs: 1,
)"#,
            module.display()
        ),
    )
    .unwrap();
    let journal = dir.path().join("j.jsonl");
    let output = run_with_deadline(
        &mut loaderbench_command(&["run", path_str(&preset), "--journal", path_str(&journal)]),
        Duration::from_secs(300),
    );
    assert_error_line(
        &output,
        2,
        &["sharded_iterable.py", "IterableDataset", "spdl"],
    );
}

#[test]
fn an_error_in_getitem_on_a_pipeline_thread_names_the_user_s_file_and_line() {
    // Inside the first batch: SPDL hands on the samples before it as a short batch, which,
    // delivered, made the error look mid-run (exit 1) where DataLoader's is bad input.
    let fields = "    runtime: [spdl],\n    num_workers: [2],\n    shuffle: false,";
    let sets = ["dataset.args.fail_at=getitem", "dataset.args.fail_index=5"];
    let (_, output) = run_alone("spdl-failing", fields, &sets);
    let message = "ValueError: sample 5 is broken";
    assert_fails_at(&output, MNIST_USER, "is broken", message, 2);
}

#[test]
fn a_pipeline_that_delivers_nothing_within_the_worker_timeout_ends_the_run_naming_spdl() {
    let fields = "    runtime: [spdl],\n    num_workers: [2],\n    worker_timeout_s: 1.0,";
    let (_, output) = run_alone("spdl-silent", fields, &["dataset.args.delay_s=30"]);
    assert_error_line(&output, 1, &["SPDL pipeline", "TimeoutError"]);
}
