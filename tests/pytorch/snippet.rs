//! The recommendation's snippet builds exactly the loader that was measured. A run on the
//! PyTorch runtime is measured by the CLI as a process; for each config it measured,
//! the snippet the recommendation would hand over (made from the `--json` export, so
//! the test does not depend on which config this machine's noise favours) is run by
//! tests/data/snippet/check_snippet.py beside the loader the runtime builds from that
//! config's request (python/pytorch_loader.py, as the runtime ran it), every config of a
//! run in one Python process, and the first batches of the two must be equal in shapes
//! and values. Once for a built-in preset
//! (DataLoader with and without workers, and torchdata.nodes threads), once for a user's
//! dataset with its own collate and random augmentation, and once for that dataset on
//! the SPDL runtime, whose snippet is an SPDL pipeline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use loaderbench_analysis::recommend::snippet;
use loaderbench_engine::builtin;
use loaderbench_engine::dataset::{DatasetKind, DatasetSpec, open};
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Preset;
use loaderbench_measure::pytorch::{DatasetRequest, Request, write_idx};
use loaderbench_measure::results::RunResult;
use loaderbench_measure::results_file;

use crate::common;
use common::{loaderbench, path_str, stderr};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The `--set`s every run here takes: two configs on the PyTorch runtime, short.
const SETS: [&str; 6] = [
    "runtime=pytorch",
    "samples=512",
    "batch_size=64",
    "epochs=1",
    "extra_configs=[]",
    "pin_memory=false",
];

/// Runs `preset` with `sets` and returns what it measured, as its JSON export holds it.
fn measured(dir: &Path, preset: &str, sets: &[String]) -> RunResult {
    let json = dir.join("run.json");
    let journal = dir.join("run.jsonl");
    let mut args = vec!["run", preset, "--quiet", "--json", path_str(&json)];
    args.extend(["--journal", path_str(&journal)]);
    for set in sets {
        args.extend(["--set", set]);
    }
    let output = loaderbench(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    results_file::read(&json).expect("the JSON export reads back")
}

/// The snippet of each config `result` measured.
fn snippets(result: &RunResult) -> Vec<(usize, String)> {
    assert!(!result.results.is_empty(), "nothing was measured");
    (0..result.configs.len())
        .map(|index| (index, snippet(result, &result.configs[index], None)))
        .collect()
}

/// `preset` with `sets` applied, as the CLI plans it.
fn plan(mut preset: Preset, sets: &[String]) -> Plan {
    for set in sets {
        let (key, value) = set.split_once('=').unwrap();
        preset.set(key, value).unwrap();
    }
    Plan::from_preset(&preset, None).unwrap()
}

/// Runs the checker, in one Python process, on each config's request and snippet in
/// `checks`; fails the test unless every config's first batches are the same.
fn assert_same_batches(dir: &Path, plan: &Plan, checks: Vec<(usize, DatasetRequest, String)>) {
    let mut command = common::process::python_in(dir);
    command
        .arg(repo("tests/data/snippet/check_snippet.py"))
        .arg(repo("python/pytorch_loader.py"));
    let mut snippets = Vec::new();
    for (config, dataset, snippet) in checks {
        let request = Request::new(plan, &plan.configs[config], dataset);
        let request_path = dir.join(format!("request-{config}.json"));
        std::fs::write(&request_path, serde_json::to_vec(&request).unwrap()).unwrap();
        let snippet_path = dir.join(format!("snippet-{config}.py"));
        std::fs::write(&snippet_path, &snippet).unwrap();
        command.arg(request_path).arg(&snippet_path);
        snippets.push((snippet_path, snippet));
    }
    let output = command.output().expect("Python starts");
    let out = String::from_utf8_lossy(&output.stdout);
    let all = snippets
        .iter()
        .map(|(path, snippet)| format!("{}:\n{snippet}", path.display()))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(output.status.success(), "{out}{}\n{all}", stderr(&output));
    for (path, snippet) in &snippets {
        let same = format!("{}: same: 3 batches", path.display());
        assert!(out.lines().any(|l| l == same), "{out}\nsnippet:\n{snippet}");
    }
}

#[test]
fn a_built_in_preset_s_snippet_yields_the_measured_batches() {
    let dir = tempfile::tempdir().unwrap();
    // DataLoader without workers and with its process workers, and torchdata.nodes
    // threads (whose snippet is their graph).
    let sets: Vec<String> = SETS
        .iter()
        .map(|s| (*s).to_owned())
        .chain([
            "num_workers=0,2".to_owned(),
            "worker_kind=auto,thread".to_owned(),
        ])
        .collect();
    let result = measured(dir.path(), "seed-light", &sets);
    let (preset, _) = builtin::load("seed-light").unwrap();
    let plan = plan(preset, &sets);
    // The runtime reads the synthetic samples as IDX files, written as it writes them.
    let synthetic = open(&plan.preset.dataset, plan.preset.samples).unwrap();
    let (images, labels) = write_idx(synthetic.as_ref(), dir.path()).unwrap();
    let snippets = snippets(&result);
    assert_eq!(snippets.len(), 3, "nw=0, and nw=2 of each kind");
    assert!(
        snippets[2].1.contains("tn.ParallelMapper("),
        "{}",
        snippets[2].1
    );
    let checks = snippets.into_iter().map(|(config, snippet)| {
        let dataset = DatasetRequest::Idx {
            images: images.clone(),
            labels: labels.clone(),
        };
        (config, dataset, snippet)
    });
    assert_same_batches(dir.path(), &plan, checks.collect());
}

/// The user's dataset (tests/data/user_dataset/mnist_user.py) over 512 synthetic
/// samples, random rotation or not, measured at 0 and 2 workers with `sets` too; each
/// config's snippet must name the user's dataset and collate_fn, hold `expected` and
/// yield the measured batches.
fn assert_user_dataset_snippets(augment: bool, sets: &[&str], expected: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let synthetic = open(&DatasetSpec::default(), Some(512)).unwrap();
    write_idx(synthetic.as_ref(), &data).unwrap();
    let module = repo("tests/data/user_dataset/mnist_user.py");
    let args: BTreeMap<String, serde_json::Value> = [
        ("root".to_owned(), serde_json::Value::from(path_str(&data))),
        ("augment".to_owned(), serde_json::Value::from(augment)),
    ]
    .into();
    let preset = Preset {
        name: "user-mnist".to_owned(),
        dataset: DatasetSpec {
            kind: DatasetKind::Python,
            path: Some(module.clone()),
            factory: Some("make_dataset".to_owned()),
            args: args.clone(),
            collate: Some("make_collate".to_owned()),
            ..DatasetSpec::default()
        },
        ..Preset::default()
    };
    let preset_path = dir.path().join("user.ron");
    preset.save(&preset_path).unwrap();
    let sets: Vec<String> = SETS
        .iter()
        .chain(&["num_workers=0,2"])
        .chain(sets)
        .map(|s| (*s).to_owned())
        .collect();
    let result = measured(dir.path(), path_str(&preset_path), &sets);
    let plan = plan(preset, &sets);
    let mut checks = Vec::new();
    for (config, snippet) in snippets(&result) {
        let workers = plan.configs[config].num_workers > 0;
        for fragment in expected.iter().filter(|_| workers) {
            assert!(snippet.contains(fragment), "{snippet}");
        }
        assert!(snippet.contains("collate_fn"), "{snippet}");
        assert!(snippet.contains("dataset = make_dataset("), "{snippet}");
        let dataset = DatasetRequest::Python {
            path: module.clone(),
            factory: "make_dataset".to_owned(),
            args: args.clone(),
            collate: Some("make_collate".to_owned()),
        };
        checks.push((config, dataset, snippet));
    }
    assert_same_batches(dir.path(), &plan, checks);
}

#[test]
fn a_user_dataset_s_snippet_builds_it_with_its_collate_and_yields_the_measured_batches() {
    assert_user_dataset_snippets(true, &[], &["collate_fn=collate_fn"]);
}

/// SPDL's threads draw from one random generator in whatever order they run, so its
/// batches are compared without random transforms.
#[test]
fn an_spdl_snippet_builds_the_measured_pipeline_over_the_user_s_dataset() {
    let expected = ["PipelineBuilder()", "concurrency=2", ".pipe(collate_fn)"];
    assert_user_dataset_snippets(false, &["runtime=spdl"], &expected);
}
