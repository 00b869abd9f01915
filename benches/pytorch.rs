//! The PyTorch runtime, two ways. First, its timing adds nothing: one config
//! is measured alternately by the PyTorch runtime and by `python/plain_dataloader_timing.py`
//! (a plain DataLoader loop) on the same dataset, and the medians must agree within 10%.
//! Second, the performance goals: ours against PyTorch's on the built-in dataset and on
//! MNIST-format IDX files (the synthetic dataset written out), light (0 workers, and the
//! best config of each) and heavy (0 and 2 workers), with the ratio PyTorch / ours.
//! The agreement is also measured on a user's own Dataset (the test module
//! tests/data/user_dataset/mnist_user.py), which the plain loop imports itself.
//! Run with `cargo bench --bench pytorch` (`-- user`: the user's dataset only); under
//! `cargo test` a tiny smoke version of the user's-dataset agreement runs (it goes
//! through every step the other agreement does, and more).

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{DatasetKind, DatasetSpec, open};
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Preset;
use loaderbench_measure::pytorch::{self, DatasetRequest, PytorchScript, Request};
use loaderbench_measure::results::RunResult;
use loaderbench_measure::stats;
use loaderbench_present::compare;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    // `cargo bench --bench pytorch -- user` measures the user's dataset only.
    let only_user = std::env::args().any(|a| a == "user");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let everything = full && !only_user;
    if everything {
        agreement(dir.path());
    }
    user_dataset_agreement(full, dir.path());
    if everything {
        goals(dir.path());
    }
}

/// PytorchScript runtime against the plain loop, interleaved, on one config: the time of
/// epochs 2 and 3.
fn agreement(dir: &Path) {
    let (samples, rounds, workers) = (60_000, 5, "2");
    let mut preset = preset(samples, "light", workers);
    preset.set("runtime", "pytorch").expect("a runtime");
    preset.set("epochs", "3").expect("epochs");
    let plan = Plan::from_preset(&preset, None).expect("a plan");
    let dataset = open(&plan.preset.dataset, plan.preset.samples).expect("the dataset");
    let script = PytorchScript::prepare(&plan, Some(&dataset)).expect("the script");
    let (images, labels) = pytorch::write_idx(dataset.as_ref(), dir).expect("IDX files");
    let request = DatasetRequest::Idx { images, labels };
    let what = format!("light, {samples} samples, nw={workers}");
    print_agreement(&what, &plan, &script, request, rounds);
}

/// The same on a user's own dataset: the test module (a map-style Dataset over IDX
/// files, PIL images through torchvision's ToTensor and Normalize, its own collate_fn),
/// which the plain loop imports itself.
fn user_dataset_agreement(full: bool, dir: &Path) {
    let (samples, rounds, workers) = if full {
        (60_000, 5, "2")
    } else {
        (512, 1, "0")
    };
    let root = dir.join("user-mnist");
    std::fs::create_dir_all(&root).expect("a folder");
    let synthetic = open(&DatasetSpec::default(), Some(samples)).expect("the dataset");
    pytorch::write_idx(synthetic.as_ref(), &root).expect("IDX files");
    let module =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/user_dataset/mnist_user.py");
    let mut preset = preset(samples, "light", workers);
    preset.set("runtime", "pytorch").expect("a runtime");
    preset.set("epochs", "3").expect("epochs");
    preset.dataset = DatasetSpec {
        kind: DatasetKind::Python,
        path: Some(module.clone()),
        factory: Some("make_dataset".to_owned()),
        args: [("root".to_owned(), serde_json::json!(root))].into(),
        collate: Some("make_collate".to_owned()),
        ..DatasetSpec::default()
    };
    let plan = Plan::from_preset(&preset, None).expect("a plan");
    let script = PytorchScript::prepare(&plan, None).expect("the script");
    let request = DatasetRequest::Python {
        path: module,
        factory: "make_dataset".to_owned(),
        args: plan.preset.dataset.args.clone(),
        collate: plan.preset.dataset.collate.clone(),
    };
    let what = format!("user dataset mnist_user.py, {samples} samples, nw={workers}");
    print_agreement(&what, &plan, &script, request, rounds);
}

/// Measures config 0 of `plan` alternately with the PyTorch runtime and the plain
/// loop, `rounds` times each, and prints their medians and ratio.
fn print_agreement(
    what: &str,
    plan: &Plan,
    script: &PytorchScript,
    dataset: DatasetRequest,
    rounds: usize,
) {
    let request = Request::new(plan, &plan.configs[0], dataset);
    let request = serde_json::to_string(&request).expect("JSON");
    let (mut ours, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let measured = script
            .measure(plan, 0, 0, &CancelToken::new(), &mut |_| {}, &mut || Ok(()))
            .expect("the PyTorch runtime runs");
        ours.push(
            measured
                .epochs
                .iter()
                .skip(1)
                .map(|e| e.seconds)
                .sum::<f64>(),
        );
        plain.push(plain_loop(script.python(), &request));
    }
    let (ours, plain) = (median(&ours), median(&plain));
    let ratio = ours / plain;
    println!(
        "PyTorch runtime vs plain DataLoader loop ({what}, epochs 2-3, medians of \
         {rounds}): {ours:.3} s vs {plain:.3} s, ratio {ratio:.3} ({} within 10%)",
        if (ratio - 1.0).abs() <= 0.10 {
            "agree"
        } else {
            "do NOT agree"
        }
    );
}

/// The plain loop's time for `request`'s epochs after the first. The first is left
/// out of the comparison on both sides: it pays libtorch's one-time start-up (its thread
/// pool), which the PyTorch runtime's script already paid before timing.
fn plain_loop(python: &Path, request: &str) -> f64 {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/plain_dataloader_timing.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python starts");
    let mut stdin = child.stdin.take().expect("a stdin");
    writeln!(stdin, "{request}").expect("the request");
    drop(stdin);
    let output = child.wait_with_output().expect("the plain loop ends");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("its report");
    report["epochs"]
        .as_array()
        .expect("epochs")
        .iter()
        .skip(1)
        .filter_map(serde_json::Value::as_f64)
        .sum()
}

/// The performance goals, on the built-in dataset and on IDX files.
fn goals(dir: &Path) {
    let idx_dir = dir.join("mnist");
    std::fs::create_dir_all(&idx_dir).expect("a folder");
    let synthetic = open(&DatasetSpec::default(), None).expect("the synthetic dataset");
    pytorch::write_idx(synthetic.as_ref(), &idx_dir).expect("IDX files");
    for (name, idx) in [("built-in", None), ("IDX (60,000 images)", Some(&idx_dir))] {
        let mut light = preset(60_000, "light", "0,2");
        light
            .set("persistent_workers", "false,true")
            .expect("persistent");
        let mut heavy = preset(12_800, "heavy", "0,2");
        for preset in [&mut light, &mut heavy] {
            preset
                .set("runtime", "loaderbench,pytorch")
                .expect("runtimes");
            if let Some(idx) = idx {
                preset.dataset = DatasetSpec {
                    kind: DatasetKind::Idx,
                    path: Some(idx.clone()),
                    ..DatasetSpec::default()
                };
            }
        }
        for (pipeline, preset) in [("light", light), ("heavy", heavy)] {
            let result = common::run(preset, "pytorch");
            println!("\n{pipeline} on {name}: {}", result.dataset);
            print!("{}", compare::table(&result));
            if pipeline == "light" {
                print_best(&result);
            }
        }
    }
}

/// The best (shortest median epoch) config of each runtime and their ratio.
fn print_best(result: &RunResult) {
    let best = |runtime| {
        result
            .summary()
            .into_iter()
            .filter(|row| row.config.runtime == runtime)
            .map(|row| {
                let epochs: Vec<f64> = row.epoch_s.iter().flatten().copied().collect();
                (median(&epochs), row.label)
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("a measured config")
    };
    let ours = best(loaderbench_engine::preset::Runtime::Loaderbench);
    let pytorch = best(loaderbench_engine::preset::Runtime::Pytorch);
    println!(
        "best epoch: ours {:.3} s ({}), PyTorch {:.3} s ({}): PyTorch / ours = {:.1}×",
        ours.0,
        ours.1,
        pytorch.0,
        pytorch.1,
        pytorch.0 / ours.0
    );
}

fn preset(samples: usize, pipeline: &str, workers: &str) -> Preset {
    let mut preset = Preset {
        name: "pytorch-bench".to_owned(),
        samples: Some(samples),
        epochs: 3,
        batch_size: vec![256],
        ..Preset::default()
    };
    preset.set("pipeline", pipeline).expect("a pipeline");
    preset.set("num_workers", workers).expect("workers");
    preset
}

fn median(values: &[f64]) -> f64 {
    stats::median(values).unwrap_or(f64::NAN)
}
