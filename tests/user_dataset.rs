//! A user's own PyTorch Dataset through the CLI, as a process: the test module
//! (tests/data/user_dataset/mnist_user.py, a map-style Dataset over IDX files with PIL
//! and torchvision transforms) measured with every DataLoader knob it is given; and each
//! way user code can fail (a missing file or factory, an import error, an exception in
//! the factory, in `__len__`, in `__getitem__` in the main process or in a worker) ending
//! in one line naming the user's file and line, with exit code 2 before the run's first
//! batch and 1 after, no Python process left behind and the configs measured before kept.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use loaderbench::dataset::{DatasetSpec, open};
use loaderbench::reference::write_idx;
use tempfile::TempDir;

mod common;
use common::{loaderbench_command, path_str, run_with_deadline, stderr, stdout};

fn module(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/user_dataset")
        .join(name)
}

/// The 1-based line of `module` that contains `text`.
fn line_of(name: &str, text: &str) -> usize {
    let source = std::fs::read_to_string(module(name)).unwrap();
    1 + source
        .lines()
        .position(|line| line.contains(text))
        .unwrap_or_else(|| panic!("{name} has no line with {text}"))
}

/// A folder with 256 synthetic samples as IDX files and a preset that loads them
/// through the test module.
struct Setup {
    dir: TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = TempDir::new().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let synthetic = open(&DatasetSpec::default(), Some(256)).unwrap();
        write_idx(synthetic.as_ref(), &data).unwrap();
        let preset = format!(
            r#"(
    version: 1,
    name: "user-mnist",
    dataset: (
        kind: python,
        path: "{module}",
        factory: "make_dataset",
        args: {{"root": "/not/yet/set"}},
        collate: Some("make_collate"),
    ),
    runtime: [pytorch],
    shuffle: false,
    batch_size: [64],
    num_workers: [0],
    epochs: 1,
)"#,
            module = module("mnist_user.py").display()
        );
        std::fs::write(dir.path().join("user.ron"), preset).unwrap();
        Setup { dir }
    }

    /// `loaderbench run` on the preset, with the data folder set by `--set` and `sets`.
    fn run(&self, sets: &[&str]) -> Output {
        let preset = self.dir.path().join("user.ron");
        let journal = self.dir.path().join("journal.jsonl");
        let root = format!(
            "dataset.args.root={}",
            path_str(&self.dir.path().join("data"))
        );
        let mut args = vec![
            "run",
            path_str(&preset),
            "-q",
            "--journal",
            path_str(&journal),
            "--set",
            &root,
        ];
        for set in sets {
            args.extend(["--set", set]);
        }
        let json = self.json();
        args.extend(["--json", path_str(&json)]);
        let mark = path_str(self.dir.path());
        let output = run_with_deadline(
            loaderbench_command(&args).env(MARK_VAR, mark),
            Duration::from_secs(300),
        );
        assert_no_process_left(mark);
        output
    }

    fn json(&self) -> PathBuf {
        self.dir.path().join("run.json")
    }

    fn results(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.json()).unwrap()).unwrap()
    }
}

/// No process that the run started (Python, its workers, however they were started)
/// is still there: each inherits the environment variable that marks this setup's runs.
fn assert_no_process_left(mark: &str) {
    let needle = format!("{MARK_VAR}={mark}");
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let left = environ
            .split(|&b| b == 0)
            .any(|var| var == needle.as_bytes());
        assert!(
            !left,
            "process {:?} of the run is still there",
            entry.path()
        );
    }
}

/// Marks the processes of one setup's runs.
const MARK_VAR: &str = "LOADERBENCH_TEST_USER_DATASET";

/// The one-line error the CLI printed, and its exit code.
fn failure(output: &Output) -> (String, i32) {
    let err = stderr(output);
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or_else(|| panic!("no error line: {err}"))
        .to_owned();
    (line, output.status.code().unwrap_or(-1))
}

fn assert_fails(output: &Output, message: &str, code: i32) {
    let (line, status) = failure(output);
    assert!(
        line.ends_with(message),
        "`{line}` should end with `{message}`"
    );
    assert_eq!(status, code, "exit code for `{line}`");
}

#[test]
fn the_test_module_runs_with_every_knob_and_records_its_python() {
    let setup = Setup::new();
    let output = setup.run(&[
        "num_workers=0,2",
        "persistent_workers=false,true",
        "shuffle=true",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(out.contains("make_dataset — "), "{out}");
    assert!(out.contains("PyTorch runtime: Python 3."), "{out}");
    let run = setup.results();
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 4, "{run:#}");
    for result in results {
        assert_eq!(result["epochs"][0]["samples"], 256);
        assert_eq!(result["epochs"][0]["batches"], 4);
        let python = &result["python"];
        for key in ["python", "torch", "torchvision"] {
            assert!(
                python[key].as_str().is_some_and(|v| !v.is_empty()),
                "{python}"
            );
        }
    }
    assert_eq!(results[3]["config"]["num_workers"], 2);
    assert_eq!(results[3]["config"]["persistent_workers"], true);
}

#[test]
fn a_missing_module_or_factory_is_bad_input() {
    let setup = Setup::new();
    let output = setup.run(&["dataset.path=no_such_module.py"]);
    assert_fails(&output, "no_such_module.py: no such file", 2);
    let output = setup.run(&["dataset.factory=make_nothing"]);
    assert_fails(
        &output,
        "mnist_user.py: `make_nothing` (dataset.factory) is not defined in the module",
        2,
    );
}

#[test]
fn an_import_error_names_the_users_line() {
    let setup = Setup::new();
    let broken = module("broken_import.py");
    let output = setup.run(&[&format!("dataset.path={}", broken.display())]);
    let line = line_of("broken_import.py", "import no_such_package");
    assert_fails(
        &output,
        &format!(
            "broken_import.py:{line}: ModuleNotFoundError: No module named \
             'no_such_package_for_loaderbench'"
        ),
        2,
    );
}

#[test]
fn exceptions_in_the_factory_and_len_name_the_users_line() {
    let setup = Setup::new();
    let output = setup.run(&["dataset.args.fail_at=factory"]);
    let line = line_of("mnist_user.py", "raise ValueError(f\"cannot read");
    assert_fails(
        &output,
        &format!(
            "mnist_user.py:{line}: ValueError: cannot read {}",
            path_str(&setup.dir.path().join("data"))
        ),
        2,
    );
    let output = setup.run(&["dataset.args.fail_at=len"]);
    let line = line_of("mnist_user.py", "cannot count the samples");
    assert_fails(
        &output,
        &format!("mnist_user.py:{line}: RuntimeError: cannot count the samples"),
        2,
    );
}

#[test]
fn getitem_failing_before_the_first_batch_is_bad_input_in_the_main_process_and_in_a_worker() {
    let setup = Setup::new();
    let line = line_of("mnist_user.py", "is broken");
    for workers in ["num_workers=0", "num_workers=2"] {
        let output = setup.run(&["dataset.args.fail_at=getitem", workers]);
        assert_fails(
            &output,
            &format!("mnist_user.py:{line}: ValueError: sample 0 is broken"),
            2,
        );
    }
}

#[test]
fn getitem_failing_after_the_first_batch_is_a_failed_run() {
    let setup = Setup::new();
    let line = line_of("mnist_user.py", "is broken");
    for workers in ["num_workers=0", "num_workers=2"] {
        let output = setup.run(&[
            "dataset.args.fail_at=getitem",
            "dataset.args.fail_index=200",
            workers,
        ]);
        assert_fails(
            &output,
            &format!("mnist_user.py:{line}: ValueError: sample 200 is broken"),
            1,
        );
    }
}

#[test]
fn a_worker_failing_keeps_the_configs_measured_before() {
    let setup = Setup::new();
    let output = setup.run(&[
        "dataset.args.fail_at=getitem",
        "dataset.args.only_in_workers=true",
        "num_workers=0,2",
        "start_method=spawn",
    ]);
    let line = line_of("mnist_user.py", "is broken");
    assert_fails(
        &output,
        &format!("mnist_user.py:{line}: ValueError: sample 0 is broken"),
        1,
    );
    let run = setup.results();
    assert_eq!(run["status"]["status"], "failed", "{run:#}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{run:#}");
    assert_eq!(results[0]["config"]["num_workers"], 0);
}

#[test]
fn our_engine_refuses_a_python_dataset_and_names_the_runtime_to_use() {
    let setup = Setup::new();
    let output = setup.run(&["runtime=loaderbench"]);
    let (line, code) = failure(&output);
    assert!(line.contains("field `runtime`"), "{line}");
    assert!(line.contains("runtime: [pytorch]"), "{line}");
    assert_eq!(code, 2);
}

#[test]
fn the_preset_names_the_python_to_use() {
    let setup = Setup::new();
    let output = setup.run(&["python=/no/such/python3"]);
    let (line, code) = failure(&output);
    assert!(line.starts_with("/no/such/python3: not found"), "{line}");
    assert_eq!(code, 2);
}

#[test]
#[cfg(feature = "gui")]
fn the_window_runs_the_test_module_and_exits_with_the_run_s_code() {
    let Some(mut xvfb) = common::gui::xvfb_or_skip() else {
        return;
    };
    let setup = Setup::new();
    let mut preset = loaderbench::preset::Preset::load(&setup.dir.path().join("user.ron")).unwrap();
    preset
        .set(
            "dataset.args.root",
            path_str(&setup.dir.path().join("data")),
        )
        .unwrap();
    preset.set("num_workers", "0,2").unwrap();
    let good = setup.dir.path().join("good.ron");
    preset.save(&good).unwrap();
    preset.set("dataset.args.fail_at", "factory").unwrap();
    let failing = setup.dir.path().join("failing.ron");
    preset.save(&failing).unwrap();
    let json = setup.json();
    let window = |preset: &Path| {
        run_with_deadline(
            loaderbench_command(&[
                "gui",
                path_str(preset),
                "--run",
                "--exit",
                "--json",
                path_str(&json),
                "--journal-dir",
                path_str(setup.dir.path()),
            ])
            .env("DISPLAY", &xvfb.display),
            Duration::from_secs(240),
        )
    };
    let output = window(&good);
    assert!(output.status.success(), "{}", stderr(&output));
    let run = setup.results();
    assert_eq!(run["status"]["status"], "finished", "{run:#}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{run:#}");
    assert!(results.iter().all(|r| r["python"]["torch"].is_string()));
    let output = window(&failing);
    xvfb.stop();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let run = setup.results();
    let error = run["status"]["error"].as_str().unwrap();
    let line = line_of("mnist_user.py", "raise ValueError(f\"cannot read");
    assert!(
        error.contains(&format!("mnist_user.py:{line}: ValueError: cannot read")),
        "{error}"
    );
}
