//! The training step through the CLI, as a process: the test CNN
//! (tests/data/step/small_cnn.py) exported with torch.jit.script and trained as a `model`
//! step on our engine and on the PyTorch runtime, from the CLI and from the app's window;
//! the built-in steps on the PyTorch runtime at the cost they have on ours; the same CNN
//! as a `python` step (over a user's Dataset it trains in user_dataset's shared run); and
//! each way a step can be wrong (a missing or malformed file, a model that does not fit
//! the data, a missing factory, an import error, an exception in the factory or in the
//! step, at the first batch and later), ending in one line naming the user's file, with
//! exit code 2 before the run's first batch and 1 after, no process left behind and the
//! configs measured before kept.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::Duration;

use loaderbench_engine::dataset::{DatasetSpec, open};
use loaderbench_measure::pytorch::{python_path, write_idx};
use tempfile::TempDir;

use crate::common;
use crate::user_code::{SMALL_CNN, assert_fails_at, run_command, step_times, test_data};
use common::process::run_leaving_nothing;
use common::runs::shared_dir;
use common::{
    assert_error_line, assert_fails, error_line, path_str, run_with_deadline, stderr, stdout,
};

/// The folder holding the test CNN's TorchScript exports, `small_cnn.pt` (one channel,
/// as the synthetic data) and `small_cnn_rgb.pt` (three), made once per test binary by
/// the Python the PyTorch runtime runs.
fn exports() -> &'static Path {
    static EXPORTS: OnceLock<TempDir> = OnceLock::new();
    EXPORTS
        .get_or_init(|| {
            let dir = shared_dir();
            let output = run_with_deadline(
                common::process::python_in(dir.path())
                    .arg(test_data(SMALL_CNN))
                    .arg(dir.path()),
                Duration::from_secs(240),
            );
            assert!(output.status.success(), "export: {}", stderr(&output));
            dir
        })
        .path()
}

/// A folder with a preset: 256 synthetic samples in batches of 64, no workers, one
/// epoch, on `runtime`.
struct Setup {
    dir: TempDir,
}

impl Setup {
    fn new(runtime: &str) -> Setup {
        let dir = TempDir::new().unwrap();
        let preset = format!(
            "(version: 1, name: \"step\", dataset: (kind: synthetic, seed: 0), \
             samples: Some(256), epochs: 1, shuffle: false, batch_size: [64], \
             num_workers: [0], runtime: [{runtime}])"
        );
        std::fs::write(dir.path().join("step.ron"), preset).unwrap();
        Setup { dir }
    }

    /// `loaderbench run` on the preset with `step` and each of `sets` as `--set`s, in
    /// `cwd`; checks that no process of the run is left.
    fn run_in(&self, cwd: &Path, step: &str, sets: &[&str]) -> Output {
        let step = format!("step={step}");
        let sets: Vec<&str> = std::iter::once(step.as_str())
            .chain(sets.iter().copied())
            .collect();
        let json = self.json();
        let mut run = run_command(
            &self.dir.path().join("step.ron"),
            &["-q", "--json", path_str(&json)],
            &sets,
        );
        let limit = Duration::from_secs(300);
        run_leaving_nothing(&mut run, cwd, limit)
    }

    fn run(&self, step: &str, sets: &[&str]) -> Output {
        self.run_in(self.dir.path(), step, sets)
    }

    fn json(&self) -> PathBuf {
        self.dir.path().join("run.json")
    }

    fn results(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.json()).unwrap()).unwrap()
    }
}

#[test]
fn the_torchscript_model_trains_on_both_runtimes_from_a_relative_path() {
    let setup = Setup::new("loaderbench, pytorch");
    let output = setup.run_in(exports(), r#"model(path: "small_cnn.pt", lr: 0.05)"#, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("Training step: model small_cnn.pt (lr 0.05)"),
        "{}",
        stdout(&output)
    );
    let run = setup.results();
    let times = step_times(&run);
    let runtimes: Vec<&str> = times.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(runtimes, ["loaderbench", "pytorch"], "{run:#}");
    for (runtime, times) in &times {
        assert_eq!(times.len(), 4, "{runtime}");
        assert!(times.iter().all(|&t| t > 0.0), "{runtime}: {times:?}");
    }
    for result in run["results"].as_array().unwrap() {
        let epoch = &result["epochs"][0];
        assert!(
            epoch["stages"]["step_s"].as_f64().unwrap() > 0.0,
            "{epoch:#}"
        );
    }
}

#[test]
fn fixed_steps_cost_the_same_on_both_runtimes() {
    let setup = Setup::new("loaderbench, pytorch");
    let output = setup.run("fixed(4.0)", &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    for (runtime, times) in step_times(&setup.results()) {
        assert_eq!(times.len(), 4, "{runtime}");
        assert!(times.iter().all(|&t| t >= 0.004), "{runtime}: {times:?}");
    }
}

#[test]
fn the_mlp_step_runs_on_the_pytorch_runtime() {
    let setup = Setup::new("pytorch");
    let output = setup.run("mlp(hidden: 32)", &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let times = step_times(&setup.results());
    assert_eq!(times.len(), 1);
    assert!(times[0].1.iter().all(|&t| t > 0.0), "{times:?}");
}

#[test]
fn a_missing_model_is_bad_input_naming_the_file() {
    let setup = Setup::new("pytorch");
    let output = setup.run(r#"model(path: "no_such_model.pt")"#, &[]);
    assert_fails(&output, "no_such_model.pt: no such file", 2);
}

#[test]
fn a_file_that_is_no_torchscript_model_is_bad_input() {
    let setup = Setup::new("loaderbench");
    let junk = setup.dir.path().join("junk.pt");
    std::fs::write(&junk, "not a model").unwrap();
    let output = setup.run(&format!(r#"model(path: "{}")"#, junk.display()), &[]);
    let (line, code) = error_line(&output);
    assert!(
        line.starts_with(&format!("{}: not a TorchScript model (", junk.display())),
        "{line}"
    );
    assert!(
        line.ends_with("save one with torch.jit.script(model).save(path)"),
        "{line}"
    );
    assert_eq!(code, 2);
}

/// A model for three channels on one-channel data fails at the first batch: bad input.
fn assert_model_does_not_fit(runtime: &str) {
    let setup = Setup::new(runtime);
    let model = exports().join("small_cnn_rgb.pt");
    let output = setup.run(&format!(r#"model(path: "{}")"#, model.display()), &[]);
    let (line, code) = error_line(&output);
    let expected = format!("{}: the model failed: ", model.display());
    assert!(line.starts_with(&expected), "{line}");
    assert!(line.contains("channels"), "{line}");
    assert!(!line.contains('\n'));
    assert_eq!(code, 2, "{line}");
}

#[test]
fn a_model_that_does_not_fit_the_data_is_bad_input_on_our_engine() {
    assert_model_does_not_fit("loaderbench");
}

#[test]
fn a_model_that_does_not_fit_the_data_is_bad_input_on_the_pytorch_runtime() {
    assert_model_does_not_fit("pytorch");
}

/// The test CNN as a python step, with `args` (RON map entries) added to its lr.
fn python_step(factory: &str, args: &str) -> String {
    format!(
        r#"python(path: "{}", factory: "{factory}", args: {{"lr": "0.05"{args}}})"#,
        test_data(SMALL_CNN).display()
    )
}

#[test]
fn our_engine_refuses_a_python_step_and_names_the_runtime_to_use() {
    let setup = Setup::new("loaderbench");
    let output = setup.run(&python_step("make_step", ""), &[]);
    assert_error_line(&output, 2, &["field `runtime`", "use runtime: [pytorch]"]);
}

#[test]
fn a_missing_step_module_is_bad_input() {
    let setup = Setup::new("pytorch");
    let output = setup.run(
        r#"python(path: "no_such_step.py", factory: "make_step")"#,
        &[],
    );
    assert_fails(&output, "no_such_step.py: no such file", 2);
}

#[test]
fn a_missing_step_factory_is_bad_input() {
    let setup = Setup::new("pytorch");
    let output = setup.run(&python_step("make_nothing", ""), &[]);
    assert_fails(
        &output,
        "small_cnn.py: `make_nothing` (step.factory) is not defined in the module",
        2,
    );
}

#[test]
fn an_import_error_in_the_step_names_the_users_line() {
    let setup = Setup::new("pytorch");
    let step = format!(
        r#"python(path: "{}", factory: "make_step")"#,
        test_data("step/broken_step.py").display()
    );
    let output = setup.run(&step, &[]);
    let message = format!(
        "ModuleNotFoundError: No module named 'no_such_package_for_loaderbench_steps' (the \
         Python that ran it, {}, lacks it: install it there, or name a Python that has it in \
         the preset's `python` field or in LOADERBENCH_PYTHON)",
        python_path().display()
    );
    assert_fails_at(
        &output,
        "step/broken_step.py",
        "import no_such_package",
        &message,
        2,
    );
}

/// Runs the test CNN as a `python` step on the PyTorch runtime, with `args` (RON map
/// entries) added to its lr and with `sets`, and checks that the run failed with `code`,
/// naming small_cnn.py's line that holds `text`, and `message`.
fn assert_python_step_fails(
    args: &str,
    sets: &[&str],
    text: &str,
    message: &str,
    code: i32,
) -> Setup {
    let setup = Setup::new("pytorch");
    let output = setup.run(&python_step("make_step", args), sets);
    assert_fails_at(&output, SMALL_CNN, text, message, code);
    setup
}

#[test]
fn an_exception_in_the_step_factory_names_the_users_line() {
    let message = "ValueError: cannot build the step with lr 0.05";
    let args = r#", "fail_at": "factory""#;
    assert_python_step_fails(args, &[], "cannot build the step", message, 2);
}

#[test]
fn the_step_failing_at_the_first_batch_is_bad_input() {
    let message = "RuntimeError: the step failed at batch 0";
    let args = r#", "fail_at": "step""#;
    assert_python_step_fails(args, &[], "the step failed at batch", message, 2);
}

#[test]
fn the_step_failing_later_is_a_failed_run_that_keeps_the_configs_measured_before() {
    let args = r#", "fail_at": "step", "fail_batch": "1", "fail_batch_size": "32""#;
    let setup = assert_python_step_fails(
        args,
        &["batch_size=64,32"],
        "the step failed at batch",
        "RuntimeError: the step failed at batch 1",
        1,
    );
    let run = setup.results();
    assert_eq!(run["status"]["status"], "failed", "{run:#}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{run:#}");
    assert_eq!(results[0]["config"]["batch_size"], 64);
}

/// The test CNN as a model step in the app's window, on a display of its own: the
/// window runs the preset (our engine and the PyTorch runtime) and exits with 0.
#[test]
#[cfg(feature = "gui")]
fn the_window_trains_the_torchscript_model() {
    let setup = Setup::new("loaderbench, pytorch");
    let mut preset =
        loaderbench_engine::preset::Preset::load(&setup.dir.path().join("step.ron")).unwrap();
    let model = exports().join("small_cnn.pt");
    preset
        .set("step", &format!(r#"model(path: "{}")"#, model.display()))
        .unwrap();
    let path = setup.dir.path().join("window.ron");
    preset.save(&path).unwrap();
    let limit = Duration::from_secs(240);
    let Some(output) = common::gui::run_in_window(&path, &setup.json(), setup.dir.path(), limit)
    else {
        return;
    };
    assert!(output.status.success(), "{}", stderr(&output));
    let run = setup.results();
    assert_eq!(run["status"]["status"], "finished", "{run:#}");
    for (runtime, times) in step_times(&run) {
        assert!(times.iter().all(|&t| t > 0.0), "{runtime}: {times:?}");
    }
}

/// A user's dataset module and step module named relative to the preset, which lies
/// in another folder than the one the run starts in: both are found beside the preset.
#[test]
fn a_user_dataset_and_step_beside_the_preset_run_from_another_folder() {
    let root = TempDir::new().unwrap();
    let (bench, elsewhere) = (root.path().join("bench"), root.path().join("elsewhere"));
    for folder in [bench.join("code"), bench.join("data"), elsewhere.clone()] {
        std::fs::create_dir_all(folder).unwrap();
    }
    for module in ["user_dataset/mnist_user.py", "step/small_cnn.py"] {
        let name = Path::new(module).file_name().unwrap();
        std::fs::copy(test_data(module), bench.join("code").join(name)).unwrap();
    }
    let synthetic = open(&DatasetSpec::default(), Some(256)).unwrap();
    write_idx(synthetic.as_ref(), &bench.join("data")).unwrap();
    // A factory's arguments are the user's own values, passed as written.
    let data = bench.join("data");
    let preset = format!(
        r#"(version: 1, name: "beside",
            dataset: (kind: python, path: "code/mnist_user.py", factory: "make_dataset",
                      args: {{"root": "{}"}}, collate: Some("make_collate")),
            step: python(path: "code/small_cnn.py", factory: "make_step", args: {{"lr": "0.05"}}),
            runtime: [pytorch], shuffle: false, batch_size: [64], num_workers: [0], epochs: 1)"#,
        data.display()
    );
    let preset_path = bench.join("beside.ron");
    std::fs::write(&preset_path, preset).unwrap();
    let mut run = run_command(&preset_path, &["-q"], &[]);
    let limit = Duration::from_secs(300);
    let output = run_leaving_nothing(&mut run, &elsewhere, limit);
    assert!(output.status.success(), "{}", stderr(&output));
    let shown = format!("{}: make_step", bench.join("code/small_cnn.py").display());
    assert!(stdout(&output).contains(&shown), "{}", stdout(&output));
}
