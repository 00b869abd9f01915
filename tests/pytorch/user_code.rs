//! What the tests of user code share (a user's Dataset, collate_fn and training step, as
//! the test modules under tests/data write them): where such a module lies, the check
//! that a run ended in one error line naming the module's file and the line that failed,
//! and each batch's step time in a run's export.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::assert_fails;

/// The test CNN (under tests/data), as a training step module.
pub const SMALL_CNN: &str = "step/small_cnn.py";

/// The file at `path` under tests/data.
pub fn test_data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
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
