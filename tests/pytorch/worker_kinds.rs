//! Worker kinds on the PyTorch runtime, through the CLI as a process, on a user's own
//! Dataset that decodes JPEGs with PIL and puts them through torchvision transforms
//! (tests/data/user_dataset/jpeg_user.py), with a python step that records every batch
//! it is given (tests/data/step/record_batches.py). DataLoader's fork workers and
//! torchdata.nodes threads at 0, 2 and 4 workers give every sample once per epoch and
//! the very same batches for the same seed, epoch after epoch; threads start no worker
//! process, and their memory and start-ups are measured; an epoch cut after its window
//! ends its threads before the next one starts. A knob that threads cannot honour is
//! refused in one line naming it and the runtime, threads that deliver no batch within the
//! worker timeout end the run naming it, and a Python without torchdata is named with the
//! command that installs it.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

use crate::common;
use crate::user_code::run_command;
use common::jpeg::{self, Coding};
use common::process::run_leaving_nothing;
use common::{assert_error_line, path_str, stderr};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// A folder with `samples` small JPEGs, the preset file and what the step records.
struct Setup {
    dir: TempDir,
}

impl Setup {
    /// A preset over `samples` JPEGs of the user dataset, with the recording step and
    /// the `knobs` lines (RON fields) on top.
    fn new(samples: u32, knobs: &str) -> Setup {
        let dir = TempDir::new().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        for n in 0..samples {
            let picture = jpeg::picture(n, 24, 20);
            let path = data.join(format!("{n:04}.jpg"));
            std::fs::write(path, jpeg::encode(&picture, Coding::Baseline)).unwrap();
        }
        let preset = format!(
            r#"(
    version: 1,
    name: "worker-kinds",
    dataset: (kind: python, path: "{}", factory: "make_dataset", args: {{"root": "{}"}}),
    step: python(path: "{}", factory: "make_step", args: {{"folder": "{}"}}),
    runtime: [pytorch],
    shuffle: true,
    seed: 5,
    warmup: false,
{knobs}
)"#,
            repo("tests/data/user_dataset/jpeg_user.py").display(),
            data.display(),
            repo("tests/data/step/record_batches.py").display(),
            dir.path().display(),
        );
        std::fs::write(dir.path().join("kinds.ron"), preset).unwrap();
        Setup { dir }
    }

    /// `loaderbench run` on the preset with `sets`; no process of it outlives it.
    fn run(&self, sets: &[&str]) -> Output {
        let preset = self.dir.path().join("kinds.ron");
        let json = self.dir.path().join("run.json");
        let mut run = run_command(&preset, &["-q", "--json", path_str(&json)], sets);
        let limit = Duration::from_secs(400);
        run_leaving_nothing(&mut run, self.dir.path(), limit)
    }

    fn results(&self) -> Value {
        let json = std::fs::read_to_string(self.dir.path().join("run.json")).unwrap();
        serde_json::from_str(&json).unwrap()
    }

    /// The batches the step recorded in the script of config `index` (configs run in
    /// plan order, one script each).
    fn batches(&self, index: usize) -> Vec<Value> {
        let path = self.dir.path().join(format!("batches-{index}.jsonl"));
        let text = std::fs::read_to_string(&path).unwrap();
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

/// Each of a config's batches: its labels and the digest of each sample's values.
fn samples(batches: &[Value]) -> Vec<(Vec<u64>, Vec<String>)> {
    batches
        .iter()
        .map(|batch| {
            let labels = batch["labels"].as_array().unwrap();
            let digests = batch["digests"].as_array().unwrap();
            (
                labels.iter().map(|l| l.as_u64().unwrap()).collect(),
                digests
                    .iter()
                    .map(|d| d.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect()
}

/// The kinds of the processes loaderbench sampled for a config.
fn process_kinds(result: &Value) -> Vec<String> {
    let processes = result["processes"].as_array().unwrap();
    processes
        .iter()
        .map(|p| p["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn fork_workers_and_nodes_threads_give_every_sample_once_in_the_same_batches() {
    // 96 samples in batches of 8: 12 batches an epoch, two whole epochs.
    let setup = Setup::new(
        96,
        "    worker_kind: [fork, thread],\n    num_workers: [0, 2, 4],\n    batch_size: [8],\n    \
         epochs: 2,\n    measure: epochs,",
    );
    let output = setup.run(&[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let run = setup.results();
    let configs: Vec<(String, u64)> = run["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let kind = c["worker_kind"].as_str().unwrap().to_owned();
            (kind, c["num_workers"].as_u64().unwrap())
        })
        .collect();
    let expected = [
        ("auto", 0),
        ("fork", 2),
        ("fork", 4),
        ("thread", 2),
        ("thread", 4),
    ];
    let expected: Vec<(String, u64)> = expected.iter().map(|(k, n)| (k.to_string(), *n)).collect();
    assert_eq!(
        configs, expected,
        "without workers every kind is one config"
    );

    let dataloader = samples(&setup.batches(0));
    assert_eq!(dataloader.len(), 24, "two epochs of 12 batches");
    for epoch in dataloader.chunks(12) {
        let mut seen: Vec<u64> = epoch
            .iter()
            .flat_map(|(labels, _)| labels.clone())
            .collect();
        seen.sort_unstable();
        assert_eq!(
            seen,
            (0..96).collect::<Vec<u64>>(),
            "every sample once per epoch"
        );
    }
    assert_ne!(
        dataloader[0].0, dataloader[12].0,
        "each epoch shuffled anew"
    );
    for (index, (kind, workers)) in configs.iter().enumerate().skip(1) {
        let got = samples(&setup.batches(index));
        let differs = (0..got.len().max(24)).find(|&b| got.get(b) != dataloader.get(b));
        assert_eq!(
            differs, None,
            "{kind} at {workers}: this batch is not DataLoader's for the same seed"
        );
    }

    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), configs.len());
    for (index, (kind, workers)) in configs.iter().enumerate() {
        let result = &results[index];
        let kinds = process_kinds(result);
        assert!(
            kinds.contains(&"main".to_owned()),
            "{kind} {workers}: {kinds:?}"
        );
        // Fork workers are processes: the step saw them as children of the script. (The
        // memory watch may miss workers of an epoch this short on a busy machine.) Threads
        // start none, and the watch saw none.
        let children = setup
            .batches(index)
            .iter()
            .map(|b| b["child_processes"].as_u64().unwrap())
            .max();
        if kind == "fork" {
            assert!(children >= Some(*workers), "{kind} {workers}: {children:?}");
        } else {
            let worker_processes = kinds.iter().any(|k| k == "worker");
            assert!(!worker_processes, "{kind} {workers}: {kinds:?}");
        }
        let epoch = &result["epochs"][0];
        assert!(
            epoch["memory"].is_object(),
            "{kind} {workers}: memory measured"
        );
        let startups = epoch["worker_startups"].as_array().unwrap();
        assert_eq!(
            startups.len() as u64,
            *workers,
            "{kind} {workers}: one start-up each"
        );
        let recorded = setup.batches(index);
        let threads = recorded
            .iter()
            .map(|b| b["worker_threads"].as_u64().unwrap());
        let expected = if kind == "thread" { *workers } else { 0 };
        assert_eq!(
            threads.max(),
            Some(expected),
            "{kind} {workers}: its threads"
        );
    }
}

#[test]
fn an_epoch_cut_after_its_window_ends_its_threads() {
    // 400 samples of 5 ms each in batches of 2 at two threads: about 5 ms a batch, so
    // the 0.1 s window is done after some 30 of the epoch's 200 batches.
    let setup = Setup::new(
        400,
        "    worker_kind: [thread],\n    num_workers: [2],\n    batch_size: [2],\n    epochs: 2,\n    \
         window_s: 0.1,",
    );
    let sets = ["dataset.args.delay_s=0.005"];
    let output = setup.run(&sets);
    assert!(output.status.success(), "{}", stderr(&output));
    let run = setup.results();
    let epochs = run["results"][0]["epochs"].as_array().unwrap();
    assert_eq!(epochs.len(), 2);
    let cut = |epoch: &Value| epoch["projected"].is_object();
    assert!(epochs.iter().all(cut), "both epochs cut: {epochs:#?}");
    let batches = setup.batches(0);
    assert!(
        batches.len() < 200,
        "{} batches: the epochs were cut",
        batches.len()
    );
    // The first epoch's threads are gone when the second one's run: never more than
    // its own two.
    let most = batches
        .iter()
        .map(|b| b["worker_threads"].as_u64().unwrap())
        .max();
    assert_eq!(most, Some(2));
}

#[test]
fn persistent_threads_on_pytorch_are_refused_naming_the_knob_and_the_runtime() {
    let setup = Setup::new(1, "    worker_kind: [thread],\n    num_workers: [2],");
    let output = setup.run(&["persistent_workers=true"]);
    assert_error_line(
        &output,
        2,
        &[
            "field `persistent_workers`",
            "worker_kind: thread on the pytorch runtime",
        ],
    );
}

#[test]
fn threads_that_deliver_no_batch_within_the_worker_timeout_end_the_run_naming_the_knob() {
    let knobs = "    worker_kind: [thread],\n    num_workers: [2],\n    worker_timeout_s: 1.0,";
    let setup = Setup::new(4, knobs);
    let output = setup.run(&["dataset.args.delay_s=60"]);
    assert_error_line(
        &output,
        1,
        &[
            "torchdata.nodes threads delivered no batch for 1 s",
            "worker_timeout_s",
        ],
    );
}

#[test]
fn a_python_without_torchdata_is_named_with_the_command_that_installs_it() {
    let setup = Setup::new(8, "    worker_kind: [thread],\n    num_workers: [2],");
    // The environment's Python, with a torchdata first on its path that cannot import.
    let shadow = setup.dir.path().join("shadow/torchdata");
    std::fs::create_dir_all(&shadow).unwrap();
    std::fs::write(
        shadow.join("__init__.py"),
        "raise ModuleNotFoundError(\"No module named 'torchdata'\", name=\"torchdata\")\n",
    )
    .unwrap();
    let python = setup.dir.path().join("python-without-torchdata");
    let real = loaderbench_measure::pytorch::python_path();
    std::fs::write(
        &python,
        format!(
            "#!/bin/sh\nPYTHONPATH={} exec {} \"$@\"\n",
            setup.dir.path().join("shadow").display(),
            real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let python_set = format!("python={}", path_str(&python));
    let output = setup.run(&[&python_set]);
    assert_error_line(
        &output,
        2,
        &[
            "worker_kind: thread on the pytorch runtime runs torchdata.nodes",
            "No module named 'torchdata'",
            "-m pip install --no-deps torchdata==0.11.0",
        ],
    );
}
