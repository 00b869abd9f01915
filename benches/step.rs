//! The training step, two ways. First, one model on both runtimes: the test CNN
//! (tests/data/step/small_cnn.py, exported with torch.jit.script) trained as a `model`
//! step at nw=0 by our engine (through tch) and by the PyTorch runtime (torch.jit.load),
//! on the same data and the same libtorch: their step times per batch should agree
//! within 15%, and the ratio is printed for three conditions, glibc's default malloc at
//! two dataset sizes and fixed malloc thresholds, since the default's state can put the
//! step's activations on fresh pages every batch in one process and not the other.
//! Second, against a hand-written loop: a user's Dataset
//! (tests/data/user_dataset/mnist_user.py) with the same CNN as the user's `python` step,
//! measured by the PyTorch runtime alternately with `python/plain_dataloader_timing.py`,
//! a plain training loop that imports both itself; their epoch times should agree
//! within 10%.
//! Run with `cargo bench --bench step`; under `cargo test` a tiny smoke version of each
//! runs (every step of the full one, on a few batches).

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{DatasetKind, DatasetSpec, open};
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::{Preset, Runtime};
use loaderbench_measure::pytorch::{self, DatasetRequest, PytorchScript, Request};
use loaderbench_measure::results::RunResult;
use loaderbench_measure::results_file;
use loaderbench_measure::stats;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let dir = tempfile::tempdir().expect("a temporary directory");
    model_on_both_runtimes(full, dir.path());
    user_step_against_a_plain_loop(full, dir.path());
}

fn test_data(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
}

/// The test CNN's TorchScript export on one channel, in `dir`.
fn export_model(dir: &Path) -> std::path::PathBuf {
    let status = Command::new(pytorch::python_path())
        .arg(test_data("step/small_cnn.py"))
        .arg(dir)
        .status()
        .expect("python starts");
    assert!(status.success(), "the export failed");
    dir.join("small_cnn.pt")
}

/// glibc malloc's thresholds held fixed: blocks up to 32 MiB come from the heap and the
/// heap keeps up to 128 MiB free at its top. By default glibc moves both with the
/// process's history of frees, so two processes running the same step can differ in
/// whether its activations are fresh pages from the kernel on every batch.
const FIXED_MALLOC: &str =
    "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=134217728";

/// One condition the same model is compared under: the samples per epoch, and the
/// `GLIBC_TUNABLES` both processes (ours and its Python child) run with, if any.
struct Condition {
    samples: usize,
    tunables: Option<&'static str>,
}

/// The TorchScript step per batch on each runtime at nw=0, round by round: each round a
/// fresh `loaderbench run` process measures both runtimes (ours in that process, the
/// PyTorch runtime in its Python child). On these VMs a process keeps the speed of the
/// memory it was given for its whole life, so one process per side says more about the
/// processes than the runtimes: the per-round ratio's median and interval over fresh
/// processes is the figure. The conditions take turns round by round: glibc's default
/// malloc at two dataset sizes, and fixed malloc thresholds (see `FIXED_MALLOC`), since
/// with the defaults the PyTorch runtime's step can page-fault its activations in on
/// every batch, depending on the frees that came before (docs/performance.md).
fn model_on_both_runtimes(full: bool, dir: &Path) {
    let rounds = if full { 7 } else { 1 };
    let conditions = if full {
        vec![
            Condition {
                samples: 8192,
                tunables: None,
            },
            Condition {
                samples: 16384,
                tunables: None,
            },
            Condition {
                samples: 8192,
                tunables: Some(FIXED_MALLOC),
            },
        ]
    } else {
        vec![Condition {
            samples: 256,
            tunables: Some(FIXED_MALLOC),
        }]
    };
    let model = export_model(dir);
    let mut measured: Vec<Vec<(f64, f64)>> = vec![Vec::new(); conditions.len()];
    for round in 0..rounds {
        for (condition, pairs) in conditions.iter().zip(&mut measured) {
            pairs.push(step_on_both(condition, &model, dir, round));
        }
    }
    for (condition, pairs) in conditions.iter().zip(&measured) {
        report_step_ratio(condition, pairs);
    }
}

/// One round under `condition`: (ours, PyTorch) step milliseconds per batch.
fn step_on_both(condition: &Condition, model: &Path, dir: &Path, round: usize) -> (f64, f64) {
    let json = dir.join(format!("step-{}-{round}.json", condition.samples));
    let step = format!(r#"step=model(path: "{}")"#, model.display());
    let samples = format!("samples={}", condition.samples);
    let mut command = Command::new(env!("CARGO_BIN_EXE_loaderbench"));
    command
        .args(["run", "seed-light", "-q", "--set", &samples])
        .args(["--set", "batch_size=128", "--set", "num_workers=0"])
        .args(["--set", "extra_configs=[]", "--set", "pin_memory=false"])
        .args(["--set", "runtime=loaderbench,pytorch", "--set", &step])
        .arg("--json")
        .arg(&json);
    match condition.tunables {
        Some(tunables) => command.env("GLIBC_TUNABLES", tunables),
        None => command.env_remove("GLIBC_TUNABLES"),
    };
    let output = command.output().expect("loaderbench runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = results_file::read(&json).expect("the round's results");
    (
        step_ms(&result, Runtime::Loaderbench),
        step_ms(&result, Runtime::Pytorch),
    )
}

/// Prints one condition's medians and its per-round PyTorch/ours ratio with interval.
fn report_step_ratio(condition: &Condition, pairs: &[(f64, f64)]) {
    let ours: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let pytorch: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let ratios: Vec<f64> = pairs.iter().map(|(a, b)| b / a).collect();
    let ratio = stats::Estimate::of(&ratios).expect("a ratio per round");
    let malloc = if condition.tunables.is_some() {
        "fixed malloc thresholds"
    } else {
        "glibc's default malloc"
    };
    println!(
        "TorchScript CNN step per batch at nw=0 ({} samples, batch 128, {malloc}, {} \
         rounds, each a fresh process per side): ours {:.2} ms, PyTorch {:.2} ms (medians); \
         PyTorch / ours per round {} → median {:.3}, 95% interval [{:.3}, {:.3}] ({} within \
         15%)",
        condition.samples,
        pairs.len(),
        stats::median(&ours).unwrap_or(f64::NAN),
        stats::median(&pytorch).unwrap_or(f64::NAN),
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(", "),
        ratio.median,
        ratio.low,
        ratio.high,
        if (ratio.median - 1.0).abs() <= 0.15 {
            "agree"
        } else {
            "do NOT agree"
        }
    );
}

/// The step's milliseconds per batch on `runtime`, the median over its typical epochs.
fn step_ms(result: &RunResult, runtime: Runtime) -> f64 {
    let per_batch: Vec<f64> = result
        .results
        .iter()
        .filter(|r| r.config.runtime == runtime)
        .flat_map(|r| r.typical_epochs())
        .map(|e| e.stages.step_s / e.batches as f64 * 1e3)
        .collect();
    stats::median(&per_batch).unwrap_or(f64::NAN)
}

/// The user's Dataset and step on the PyTorch runtime against the plain loop, in turns.
fn user_step_against_a_plain_loop(full: bool, dir: &Path) {
    let (samples, rounds) = if full { (8192, 5) } else { (256, 1) };
    let root = dir.join("user-mnist");
    std::fs::create_dir_all(&root).expect("a folder");
    let synthetic = open(&DatasetSpec::default(), Some(samples)).expect("the dataset");
    pytorch::write_idx(synthetic.as_ref(), &root).expect("IDX files");
    let module = test_data("user_dataset/mnist_user.py");
    let mut preset = Preset {
        name: "user-step-bench".to_owned(),
        epochs: 3,
        batch_size: vec![128],
        dataset: DatasetSpec {
            kind: DatasetKind::Python,
            path: Some(module.clone()),
            factory: Some("make_dataset".to_owned()),
            args: [("root".to_owned(), serde_json::json!(root))].into(),
            collate: Some("make_collate".to_owned()),
            ..DatasetSpec::default()
        },
        ..Preset::default()
    };
    preset.set("runtime", "pytorch").expect("a runtime");
    preset.set("num_workers", "0").expect("workers");
    let step = test_data("step/small_cnn.py");
    preset
        .set(
            "step",
            &format!(
                r#"python(path: "{}", factory: "make_step")"#,
                step.display()
            ),
        )
        .expect("a python step");
    let plan = Plan::from_preset(&preset, None).expect("a plan");
    let script = PytorchScript::prepare(&plan, None).expect("the script");
    let dataset = DatasetRequest::Python {
        path: module,
        factory: "make_dataset".to_owned(),
        args: plan.preset.dataset.args.clone(),
        collate: plan.preset.dataset.collate.clone(),
    };
    let request =
        serde_json::to_string(&Request::new(&plan, &plan.configs[0], dataset)).expect("JSON");
    let (mut measured, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let result = script
            .measure(
                &plan,
                0,
                0,
                &CancelToken::new(),
                &mut |_| {},
                &mut || Ok(()),
            )
            .expect("the PyTorch runtime runs");
        measured.push(result.epochs.iter().skip(1).map(|e| e.seconds).sum::<f64>());
        plain.push(plain_loop(script.python(), &request));
    }
    let (measured, plain) = (
        stats::median(&measured).unwrap_or(f64::NAN),
        stats::median(&plain).unwrap_or(f64::NAN),
    );
    let ratio = measured / plain;
    println!(
        "user Dataset + user step (mnist_user.py, small_cnn.py make_step; {samples} samples, \
         nw=0, epochs 2-3, medians of {rounds}): PyTorch runtime {measured:.3} s vs plain \
         training loop {plain:.3} s, ratio {ratio:.3} ({} within 10%)",
        if (ratio - 1.0).abs() <= 0.10 {
            "agree"
        } else {
            "do NOT agree"
        }
    );
}

/// The plain loop's time for `request`'s epochs after the first (which pays libtorch's
/// one-time start-up, paid by the PyTorch runtime's script before it times anything).
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
