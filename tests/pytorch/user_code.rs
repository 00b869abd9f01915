//! What the tests of user code share (a user's Dataset, collate_fn and training step, as
//! the test modules under tests/data write them): where such a module lies, the command
//! that runs a preset of a test's own, the check that a run ended in one error line
//! naming the module's file and the line that failed, and each batch's step time in a
//! run's export.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{assert_fails, loaderbench_command, path_str};

/// The test CNN (under tests/data), as a training step module.
pub const SMALL_CNN: &str = "step/small_cnn.py";

/// The MNIST-like test Dataset (under tests/data): IDX files read with PIL and
/// torchvision transforms.
pub const MNIST_USER: &str = "user_dataset/mnist_user.py";

/// The file at `path` under tests/data.
pub fn test_data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
}

/// `loaderbench run PRESET` with `args`, each of `sets` as a `--set`, and the journal
/// `journal.jsonl` beside the preset (removed first: the CLI refuses one that exists).
pub fn run_command(preset: &Path, args: &[&str], sets: &[&str]) -> Command {
    let journal = preset.with_file_name("journal.jsonl");
    let _ = std::fs::remove_file(&journal);
    let mut all = vec!["run", path_str(preset), "--journal", path_str(&journal)];
    all.extend_from_slice(args);
    for set in sets {
        all.extend(["--set", set]);
    }
    loaderbench_command(&all)
}

/// The 1-based line of the test module at `path` (under tests/data) that contains `text`.
pub fn line_of(path: &str, text: &str) -> usize {
    let source = std::fs::read_to_string(test_data(path)).unwrap();
    1 + source
        .lines()
        .position(|line| line.contains(text))
        .unwrap_or_else(|| panic!("{path} has no line with {text}"))
}

/// Checks that a run exited with `code` and that its one error line ends with the test
/// module at `path`'s file name, its line that contains `text`, and `message`:
/// `small_cnn.py:42: ValueError: …`.
pub fn assert_fails_at(output: &Output, path: &str, text: &str, message: &str, code: i32) {
    let name = Path::new(path).file_name().unwrap().to_str().unwrap();
    let line = line_of(path, text);
    assert_fails(output, &format!("{name}:{line}: {message}"), code);
}

/// Every batch's step time in each result of a run's export, by runtime.
pub fn step_times(run: &serde_json::Value) -> Vec<(String, Vec<f64>)> {
    let results = run["results"].as_array().unwrap();
    results
        .iter()
        .map(|result| {
            let batches = result["epochs"][0]["timeline"].as_array().unwrap();
            let times = batches
                .iter()
                .map(|b| b["stages"]["step_s"].as_f64().unwrap())
                .collect();
            (
                result["config"]["runtime"].as_str().unwrap().to_owned(),
                times,
            )
        })
        .collect()
}
