//! A user's own PyTorch Dataset through the CLI, as a process: the test module
//! (tests/data/user_dataset/mnist_user.py, a map-style Dataset over IDX files with PIL
//! and torchvision transforms) measured with every DataLoader knob it is given, the test
//! CNN (tests/data/step/small_cnn.py) training on its batches as a `python` step; the
//! other shapes users write (samples as dicts, with PyTorch's default collate and with
//! their own; an IterableDataset that shards itself across workers) giving every sample
//! once per epoch; and each way user code can fail (a missing file or factory, an import
//! error, an exception in the factory, in `__len__`, in `__getitem__` in the main
//! process, in a worker or in a torchdata.nodes thread, a collate_fn that spawned
//! workers cannot be sent) ending in one line naming the user's file and line, with exit
//! code 2 before the run's first batch and 1 after, no Python process left behind and
//! the configs measured before kept. A worker killed by SIGKILL ends the run at once,
//! naming its pid. A dataset that writes bytes that are not UTF-8 to stderr runs as any
//! other.

use std::path::PathBuf;
use std::process::Output;
use std::sync::OnceLock;
use std::time::Duration;

use loaderbench_engine::dataset::{DatasetSpec, open};
use loaderbench_measure::pytorch::write_idx;
use tempfile::TempDir;

use crate::common;
use crate::user_code::{
    MNIST_USER, SMALL_CNN, assert_fails_at, line_of, run_command, step_times, test_data,
};
use common::process::run_leaving_nothing;
use common::runs::shared_dir;
use common::{assert_error_line, assert_fails, error_line, path_str, stderr, stdout};

/// The test module `name` of tests/data/user_dataset.
fn module(name: &str) -> PathBuf {
    test_data(&format!("user_dataset/{name}"))
}

/// A folder with a preset that loads a test module's `make_dataset`, and the `--set`s
/// every run of it takes.
struct Setup {
    dir: TempDir,
    sets: Vec<String>,
}

impl Setup {
    /// The IDX test module over 256 synthetic samples.
    fn new() -> Setup {
        Setup::in_dir(TempDir::new().unwrap())
    }

    fn in_dir(dir: TempDir) -> Setup {
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let synthetic = open(&DatasetSpec::default(), Some(256)).unwrap();
        write_idx(synthetic.as_ref(), &data).unwrap();
        let root = format!("dataset.args.root={}", path_str(&data));
        let mut setup = Setup::for_module_in(
            dir,
            "mnist_user.py",
            r#"{"root": "/not/yet/set"}"#,
            Some("make_collate"),
        );
        setup.sets.push(root);
        setup
    }

    /// `module`'s `make_dataset(**args)` (`args` as a RON map), with `collate()` as the
    /// collate_fn when given; no shuffle, batches of 64 in the main process, one epoch.
    fn for_module(module_name: &str, args: &str, collate: Option<&str>) -> Setup {
        Setup::for_module_in(TempDir::new().unwrap(), module_name, args, collate)
    }

    /// [`Setup::for_module`] in the folder `dir`.
    fn for_module_in(dir: TempDir, module_name: &str, args: &str, collate: Option<&str>) -> Setup {
        let collate = collate.map_or_else(|| "None".to_owned(), |c| format!("Some(\"{c}\")"));
        let preset = format!(
            r#"(
    version: 1,
    name: "user-dataset",
    dataset: (
        kind: python,
        path: "{module}",
        factory: "make_dataset",
        args: {args},
        collate: {collate},
    ),
    runtime: [pytorch],
    shuffle: false,
    batch_size: [64],
    num_workers: [0],
    epochs: 1,
)"#,
            module = module(module_name).display()
        );
        std::fs::write(dir.path().join("user.ron"), preset).unwrap();
        Setup {
            dir,
            sets: Vec::new(),
        }
    }

    /// `loaderbench run` on the preset, with the setup's `--set`s and `sets`.
    fn run(&self, sets: &[&str]) -> Output {
        self.run_within(sets, Duration::from_secs(300))
    }

    /// [`Setup::run`], failing the test if the run takes longer than `limit`.
    fn run_within(&self, sets: &[&str], limit: Duration) -> Output {
        let json = self.json();
        let sets: Vec<&str> = self
            .sets
            .iter()
            .map(String::as_str)
            .chain(sets.iter().copied())
            .collect();
        let preset = self.dir.path().join("user.ron");
        let mut run = run_command(&preset, &["-q", "--json", path_str(&json)], &sets);
        run_leaving_nothing(&mut run, self.dir.path(), limit)
    }

    /// `loaderbench validate` on the preset, with the setup's `--set`s and `sets`.
    fn validate(&self, sets: &[&str]) -> Output {
        let preset = self.dir.path().join("user.ron");
        let mut args = vec!["validate", path_str(&preset)];
        for set in self
            .sets
            .iter()
            .map(String::as_str)
            .chain(sets.iter().copied())
        {
            args.extend(["--set", set]);
        }
        let mut validate = common::loaderbench_command(&args);
        run_leaving_nothing(&mut validate, self.dir.path(), Duration::from_secs(120))
    }

    fn json(&self) -> PathBuf {
        self.dir.path().join("run.json")
    }

    fn results(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.json()).unwrap()).unwrap()
    }
}

/// The test module run with every knob (num_workers 0 and 2, persistent or not,
/// shuffled), training the test CNN as a `python` step on every batch, once, by the
/// first test that needs it.
fn every_knob() -> &'static (Setup, Output) {
    static EVERY_KNOB: OnceLock<(Setup, Output)> = OnceLock::new();
    let run = EVERY_KNOB.get_or_init(|| {
        let setup = Setup::in_dir(shared_dir());
        let step = format!(
            r#"step=python(path: "{}", factory: "make_step", args: {{"lr": "0.05"}})"#,
            test_data(SMALL_CNN).display()
        );
        let output = setup.run(&[
            "num_workers=0,2",
            "persistent_workers=false,true",
            "shuffle=true",
            &step,
        ]);
        (setup, output)
    });
    assert!(run.1.status.success(), "{}", stderr(&run.1));
    run
}

#[test]
fn the_test_module_runs_every_config_on_every_sample() {
    let run = every_knob().0.results();
    let results = run["results"].as_array().unwrap();
    // Without workers, persistence does not apply: nw=0 is measured once.
    assert_eq!(results.len(), 3, "{run:#}");
    for result in results {
        assert_eq!(result["epochs"][0]["samples"], 256);
        assert_eq!(result["epochs"][0]["batches"], 4);
    }
    assert_eq!(results[2]["config"]["num_workers"], 2);
    assert_eq!(results[2]["config"]["persistent_workers"], true);
}

#[test]
fn the_test_module_s_run_prints_its_dataset_and_python() {
    let out = stdout(&every_knob().1);
    assert!(out.contains("make_dataset — "), "{out}");
    assert!(out.contains("PyTorch runtime: Python 3."), "{out}");
}

#[test]
fn every_config_records_its_python_torch_and_torchvision() {
    let run = every_knob().0.results();
    for result in run["results"].as_array().unwrap() {
        let python = &result["python"];
        for key in ["python", "torch", "torchvision"] {
            assert!(
                python[key].as_str().is_some_and(|v| !v.is_empty()),
                "{python}"
            );
        }
    }
}

#[test]
fn the_python_step_trains_on_every_config_of_the_test_module() {
    let (setup, output) = every_knob();
    let out = stdout(output);
    assert!(
        out.contains("small_cnn.py: make_step(lr=\"0.05\")"),
        "{out}"
    );
    let times = step_times(&setup.results());
    assert_eq!(times.len(), 3);
    for (_, times) in times {
        assert_eq!(times.len(), 4);
        assert!(times.iter().all(|&t| t > 0.0), "{times:?}");
    }
}

#[test]
fn a_missing_module_is_bad_input() {
    let setup = Setup::new();
    let output = setup.run(&["dataset.path=no_such_module.py"]);
    assert_fails(&output, "no_such_module.py: no such file", 2);
}

#[test]
fn a_missing_factory_is_bad_input() {
    let setup = Setup::new();
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
    let line = line_of("user_dataset/broken_import.py", "import no_such_package");
    let (message, code) = error_line(&output);
    let error = format!(
        "broken_import.py:{line}: ModuleNotFoundError: No module named \
         'no_such_package_for_loaderbench' (the Python that ran it, "
    );
    assert!(
        message.contains(&error),
        "`{message}` should hold `{error}`"
    );
    let hint = ", lacks it: install it there, or name a Python that has it in the preset's \
                `python` field or in LOADERBENCH_PYTHON)";
    assert!(
        message.ends_with(hint),
        "`{message}` should end with `{hint}`"
    );
    assert_eq!(code, 2, "exit code for `{message}`");
}

#[test]
fn an_exception_in_the_factory_names_the_users_line() {
    let setup = Setup::new();
    let output = setup.run(&["dataset.args.fail_at=factory"]);
    let data = setup.dir.path().join("data");
    let message = format!("ValueError: cannot read {}", path_str(&data));
    assert_fails_at(
        &output,
        MNIST_USER,
        "raise ValueError(f\"cannot read",
        &message,
        2,
    );
}

#[test]
fn an_exception_in_len_names_the_users_line() {
    let setup = Setup::new();
    let output = setup.run(&["dataset.args.fail_at=len"]);
    let message = "RuntimeError: cannot count the samples";
    assert_fails_at(&output, MNIST_USER, "cannot count the samples", message, 2);
}

#[test]
fn a_length_that_is_no_integer_is_bad_input_naming_the_module() {
    let setup = Setup::new();
    let output = setup.run(&["dataset.args.fail_at=len_type"]);
    assert_fails(
        &output,
        "mnist_user.py: len() of what `make_dataset` (dataset.factory) gives fails: 'str' \
         object cannot be interpreted as an integer",
        2,
    );
}

#[test]
fn validate_loads_the_users_dataset_as_a_run_does() {
    let setup = Setup::new();
    let output = setup.validate(&[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = stdout(&output);
    assert!(printed.contains("\n  dataset: 256 samples, "), "{printed}");
    let output = setup.validate(&["dataset.factory=make_nothing"]);
    assert_fails(
        &output,
        "mnist_user.py: `make_nothing` (dataset.factory) is not defined in the module",
        2,
    );
    let output = setup.validate(&["dataset.args.fail_at=factory"]);
    let data = setup.dir.path().join("data");
    let message = format!("ValueError: cannot read {}", path_str(&data));
    let raise = "raise ValueError(f\"cannot read";
    assert_fails_at(&output, MNIST_USER, raise, &message, 2);
    // Every config, not only the one the script builds, gets a batch of the 256.
    let output = setup.validate(&["drop_last=true", "batch_size=64,512"]);
    assert_error_line(
        &output,
        2,
        &["field `batch_size`: 512 with drop_last leaves no batch of the 256 samples"],
    );
}

#[test]
fn validate_refuses_arguments_the_factories_do_not_take() {
    let setup = Setup::new();
    let output = setup.validate(&["dataset.args.roto=/data"]);
    let called = "mnist_user.py: `make_dataset` (dataset.factory) cannot be called with \
                  dataset.args {\"root\": ";
    let refused = "\"roto\": \"/data\"}: got an unexpected keyword argument 'roto'";
    assert_error_line(&output, 2, &[called, refused]);
    let step = format!(
        r#"step=python(path: "{}", factory: "make_step", args: {{"rate": "0.05"}})"#,
        test_data(SMALL_CNN).display()
    );
    let output = setup.validate(&[&step]);
    assert_fails(
        &output,
        "small_cnn.py: `make_step` (step.factory) cannot be called with step.args \
         {\"rate\": \"0.05\"}: got an unexpected keyword argument 'rate'",
        2,
    );
}

/// Asserts that `__getitem__` failing (with `sets` too) ends the run with the user's line,
/// naming `sample`, and exit code `code`.
fn assert_getitem_fails(sets: &[&str], sample: usize, code: i32) {
    let setup = Setup::new();
    let mut all = vec!["dataset.args.fail_at=getitem"];
    all.extend_from_slice(sets);
    let output = setup.run(&all);
    let message = format!("ValueError: sample {sample} is broken");
    assert_fails_at(&output, MNIST_USER, "is broken", &message, code);
}

#[test]
fn getitem_failing_before_the_first_batch_in_the_main_process_is_bad_input() {
    assert_getitem_fails(&["num_workers=0"], 0, 2);
}

#[test]
fn getitem_failing_before_the_first_batch_in_a_worker_is_bad_input() {
    assert_getitem_fails(&["num_workers=2"], 0, 2);
}

#[test]
fn getitem_failing_after_the_first_batch_in_the_main_process_is_a_failed_run() {
    assert_getitem_fails(&["dataset.args.fail_index=200", "num_workers=0"], 200, 1);
}

#[test]
fn getitem_failing_after_the_first_batch_in_a_worker_is_a_failed_run() {
    assert_getitem_fails(&["dataset.args.fail_index=200", "num_workers=2"], 200, 1);
}

#[test]
fn getitem_failing_after_the_first_batch_in_a_torchdata_thread_is_a_failed_run() {
    let sets = [
        "dataset.args.fail_index=200",
        "num_workers=2",
        "worker_kind=thread",
    ];
    assert_getitem_fails(&sets, 200, 1);
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
    let message = "ValueError: sample 0 is broken";
    assert_fails_at(&output, MNIST_USER, "is broken", message, 1);
    let run = setup.results();
    assert_eq!(run["status"]["status"], "failed", "{run:#}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{run:#}");
    assert_eq!(results[0]["config"]["num_workers"], 0);
}

/// The number of samples of every measured epoch of every config of the run's export.
fn samples_per_epoch(setup: &Setup) -> Vec<Vec<u64>> {
    let run = setup.results();
    assert_eq!(run["status"]["status"], "finished", "{run:#}");
    let results = run["results"].as_array().unwrap();
    results
        .iter()
        .map(|result| {
            let epochs = result["epochs"].as_array().unwrap();
            epochs
                .iter()
                .map(|e| e["samples"].as_u64().unwrap())
                .collect()
        })
        .collect()
}

/// Runs `module`'s `make_dataset(size: 250)` for two epochs at num_workers 0 and 2 (with
/// `collate()` when given) and asserts that every epoch gave each sample once.
fn assert_every_sample_once_per_epoch(module_name: &str, collate: Option<&str>) {
    let setup = Setup::for_module(module_name, r#"{"size": 250}"#, collate);
    let output = setup.run(&["num_workers=0,2", "epochs=2"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let per_config = samples_per_epoch(&setup);
    assert_eq!(per_config, vec![vec![250, 250]; 2], "{:#}", setup.results());
}

#[test]
fn samples_as_dicts_run_with_pytorch_s_default_collate() {
    assert_every_sample_once_per_epoch("dict_samples.py", None);
}

#[test]
fn samples_as_dicts_run_with_the_users_collate() {
    assert_every_sample_once_per_epoch("dict_samples.py", Some("make_collate"));
}

#[test]
fn a_dataset_writing_bytes_that_are_not_utf8_to_stderr_runs() {
    assert_every_sample_once_per_epoch("noisy_stderr.py", None);
}

/// The user's prints go to stderr, so the reports on stdout stay whole: a printed dict
/// broke the run ("unreadable report line"), and buffered text glued to a report lost
/// its batch. With spawned workers too, where the script runs again in each worker.
#[test]
fn a_dataset_that_prints_to_stdout_is_counted_whole() {
    assert_every_sample_once_per_epoch("printing.py", None);
    let setup = Setup::for_module("printing.py", r#"{"size": 250}"#, None);
    let output = setup.run(&["num_workers=2", "start_method=spawn"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(samples_per_epoch(&setup), vec![vec![250]]);
}

#[test]
fn an_iterable_dataset_sharded_by_worker_gives_each_sample_once_per_epoch() {
    assert_every_sample_once_per_epoch("sharded_iterable.py", None);
}

/// An IterableDataset's length says nothing of what its workers yield (here each
/// yields every sample: twice `len(DataLoader)`'s batches with 2 workers), so its
/// epochs are measured whole even where windows are asked for; it was cut and projected
/// over half the epoch it ran.
#[test]
fn an_iterable_dataset_with_a_length_is_measured_whole() {
    let setup = Setup::for_module(
        "iterable_with_len.py",
        r#"{"size": 640, "delay_s": 0.001}"#,
        None,
    );
    let output = setup.run(&["num_workers=2", "measure=windows", "window_s=0.1"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let run = setup.results();
    let epoch = &run["results"][0]["epochs"][0];
    assert!(epoch["projected"].is_null(), "{epoch:#}");
    assert_eq!(epoch["batches"], 20, "{epoch:#}");
    assert_eq!(epoch["samples"], 1280, "{epoch:#}");
}

/// The workers of an IterableDataset end as their iterators run out, mid-epoch
/// (DataLoader ends each at once): each is swept before it is ended. The epoch's sweep
/// after the last batch came too late for them, so in epochs shorter than the periodic
/// sweep's interval the run said nothing of the workers' memory.
#[test]
fn the_workers_of_an_iterable_dataset_are_counted_before_they_end() {
    let setup = Setup::for_module(
        "iterable_with_len.py",
        r#"{"size": 64, "delay_s": 0}"#,
        None,
    );
    let output = setup.run(&["num_workers=2", "epochs=3"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let run = setup.results();
    let processes = run["results"][0]["processes"].as_array().unwrap();
    let workers: Vec<&serde_json::Value> =
        processes.iter().filter(|p| p["kind"] == "worker").collect();
    assert_eq!(workers.len(), 6, "two a epoch: {processes:#?}");
    // Each epoch's two workers were swept, with their memory, and are in the epoch's
    // parts: those of the sweep that read the most processes (the sum may peak at a
    // sweep before the workers were forked, forking splitting the main process's PSS).
    for epoch in 1..=3 {
        let memory = &run["results"][0]["epochs"][epoch - 1]["memory"];
        assert!(memory["worker_pss_bytes"].as_u64() > Some(0), "{memory:#}");
        let swept = workers.iter().filter(|worker| {
            worker["epochs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|seen| seen["epoch"] == epoch && seen["peak_pss_bytes"].as_u64() > Some(0))
        });
        assert_eq!(swept.count(), 2, "epoch {epoch}: {processes:#?}");
    }
}

/// An epoch cut after its window takes the batches in flight in DataLoader's workers
/// before it ends (out of its time): the next epoch of persistent workers starts clean.
/// Left in flight, they were charged to the next epoch's first batch (1.91 s against
/// 0.66 s, the epoch 14% long).
#[test]
fn a_persistent_epoch_after_a_cut_one_is_not_charged_with_its_work() {
    let setup = Setup::for_module("sleepy.py", r#"{"size": 1920, "delay_s": 0.002}"#, None);
    let sets = [
        "num_workers=2",
        "persistent_workers=true",
        "epochs=2",
        "measure=windows",
        "window_s=0.5",
    ];
    let output = setup.run(&sets);
    assert!(output.status.success(), "{}", stderr(&output));
    let run = setup.results();
    let epochs = &run["results"][0]["epochs"];
    let first_batch = |epoch: usize| epochs[epoch]["first_batch_s"].as_f64().unwrap();
    assert!(epochs[0]["projected"].is_object(), "{epochs:#}");
    // Each first batch is a batch of 64 samples at 2 ms, about 0.13 s; the work left
    // in flight was four batches more.
    assert!(first_batch(1) < 1.5 * first_batch(0), "{epochs:#}");
}

/// Every sample is counted however the batch is made: a detection collate's tuple of
/// images (its first tensor's first dimension was the channels: 3 a batch) and dicts
/// whose first field is a list of strings (0 a batch, a throughput of 0).
#[test]
fn batches_of_any_shape_count_their_samples() {
    let boxes = Setup::for_module("detection.py", r#"{"size": 250}"#, Some("make_collate"));
    let output = boxes.run(&["num_workers=0,2"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(samples_per_epoch(&boxes), vec![vec![250]; 2]);
    let named = Setup::for_module("detection.py", r#"{"size": 250}"#, None);
    let output = named.run(&["dataset.factory=make_iterable", "num_workers=0,2"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(samples_per_epoch(&named), vec![vec![250]; 2]);
}

/// An error raised in a worker outside the user's code (the default collate cannot
/// stack uneven samples) is one short line, the original error's, as in the main
/// process: it was PyTorch's whole re-raised traceback folded into one line.
#[test]
fn an_error_a_worker_raises_is_the_original_line() {
    let setup = Setup::for_module("uneven.py", r#"{"size": 256}"#, None);
    for workers in ["num_workers=0", "num_workers=2", "worker_kind=thread"] {
        let sets = if workers.starts_with("worker_kind") {
            vec!["num_workers=2", workers]
        } else {
            vec![workers]
        };
        let output = setup.run(&sets);
        let (line, _) = error_line(&output);
        assert!(
            line.contains("RuntimeError: stack expects each tensor to be equal size"),
            "{workers}: {line}"
        );
        assert!(
            !line.contains("Traceback") && line.len() < 300,
            "{workers}: {line}"
        );
    }
}

/// A batch larger than the user's dataset with drop_last leaves epochs of no batch: the
/// run is refused as our engine refuses it for its own datasets (it measured empty
/// epochs, a first batch of an epoch that had none).
#[test]
fn a_batch_larger_than_the_dataset_with_drop_last_is_refused() {
    let setup = Setup::for_module("dict_samples.py", r#"{"size": 256}"#, None);
    let output = setup.run(&["batch_size=300", "drop_last=true"]);
    let (line, code) = error_line(&output);
    assert!(
        line.contains("batch_size 300 with drop_last leaves no batch of the 256 samples"),
        "{line}"
    );
    assert_eq!(code, 2, "{line}");
}

#[test]
fn a_closure_collate_under_spawn_names_the_users_function() {
    let setup = Setup::for_module(
        "closure_collate.py",
        r#"{"size": 256}"#,
        Some("make_collate"),
    );
    let output = setup.run(&["num_workers=2", "start_method=spawn"]);
    let (message, code) = error_line(&output);
    let line = line_of("user_dataset/closure_collate.py", "def collate(");
    let place = format!("{}:{line}: ", module("closure_collate.py").display());
    assert!(
        message.starts_with(&place),
        "`{message}` should start with `{place}`"
    );
    assert!(
        message.contains("make_collate.<locals>.collate"),
        "{message}"
    );
    let advice = "(start_method spawn pickles the collate_fn for each worker: make it a \
                  function at the top level of the module)";
    assert!(
        message.ends_with(advice),
        "`{message}` should end with `{advice}`"
    );
    let errors = stderr(&output).matches("error: ").count();
    assert_eq!(errors, 1, "{}", stderr(&output));
    assert_eq!(
        code, 2,
        "before the run's first batch: exit code for `{message}`"
    );
}

#[test]
fn a_worker_killed_by_sigkill_fails_the_run_at_once_and_keeps_the_configs_before() {
    let setup = Setup::for_module(
        "killed_worker.py",
        r#"{"size": 256, "kill_index": 100}"#,
        None,
    );
    // Far beyond the limit below: the run must not end by PyTorch's worker timeout.
    let sets = ["num_workers=0,2", "worker_timeout_s=300"];
    let limit = Duration::from_secs(60);
    let started = std::time::Instant::now();
    let output = setup.run_within(&sets, limit);
    let elapsed = started.elapsed();
    println!("the run with a killed worker ended after {elapsed:.1?}");
    let (message, code) = error_line(&output);
    assert!(
        message.starts_with("PyTorch DataLoader: RuntimeError: DataLoader worker (pid"),
        "{message}"
    );
    // The module leaves DataLoader's SIGCHLD handler, which names the signal, no thread to
    // run in: only its check of its workers' state sees the death, "(pid(s) …) exited
    // unexpectedly", and the runtime says how the worker ended.
    assert!(message.contains("exited unexpectedly"), "{message}");
    assert!(message.contains("is killed by signal: Killed"), "{message}");
    assert_eq!(
        code, 1,
        "after the run's first batch: exit code for `{message}`"
    );
    let run = setup.results();
    assert_eq!(run["status"]["status"], "failed", "{run:#}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{run:#}");
    assert_eq!(results[0]["config"]["num_workers"], 0);
    assert_eq!(results[0]["epochs"][0]["samples"], 256);
}

#[test]
fn our_engine_refuses_a_python_dataset_and_names_the_runtime_to_use() {
    let setup = Setup::new();
    let output = setup.run(&["runtime=loaderbench"]);
    assert_error_line(&output, 2, &["field `runtime`", "runtime: [pytorch]"]);
}

#[test]
fn the_preset_names_the_python_to_use() {
    let setup = Setup::new();
    let output = setup.run(&["python=/no/such/python3"]);
    let line = assert_error_line(&output, 2, &[]);
    assert!(line.starts_with("/no/such/python3: not found"), "{line}");
}

/// Runs the test module's preset (num_workers 0 and 2) in the window, on a display of its
/// own, with `fail_at` as `dataset.args.fail_at` when given; `None` when skipped for want
/// of Xvfb.
#[cfg(feature = "gui")]
fn in_the_window(setup: &Setup, fail_at: Option<&str>) -> Option<Output> {
    let mut preset =
        loaderbench_engine::preset::Preset::load(&setup.dir.path().join("user.ron")).unwrap();
    preset
        .set(
            "dataset.args.root",
            path_str(&setup.dir.path().join("data")),
        )
        .unwrap();
    preset.set("num_workers", "0,2").unwrap();
    if let Some(fail_at) = fail_at {
        preset.set("dataset.args.fail_at", fail_at).unwrap();
    }
    let path = setup.dir.path().join("window.ron");
    preset.save(&path).unwrap();
    let limit = Duration::from_secs(240);
    common::gui::run_in_window(&path, &setup.json(), setup.dir.path(), limit)
}

#[test]
#[cfg(feature = "gui")]
fn the_window_runs_the_test_module_and_exits_with_0() {
    let setup = Setup::new();
    let Some(output) = in_the_window(&setup, None) else {
        return;
    };
    assert!(output.status.success(), "{}", stderr(&output));
    let run = setup.results();
    assert_eq!(run["status"]["status"], "finished", "{run:#}");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{run:#}");
    assert!(results.iter().all(|r| r["python"]["torch"].is_string()));
}

#[test]
#[cfg(feature = "gui")]
fn the_window_exits_with_2_and_names_the_users_line_when_the_factory_fails() {
    let setup = Setup::new();
    let Some(output) = in_the_window(&setup, Some("factory")) else {
        return;
    };
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let run = setup.results();
    let error = run["status"]["error"].as_str().unwrap();
    let line = line_of(MNIST_USER, "raise ValueError(f\"cannot read");
    assert!(
        error.contains(&format!("mnist_user.py:{line}: ValueError: cannot read")),
        "{error}"
    );
}
