//! Saved runs as documents on the command line, with the real program: `report` prints a
//! results file or a journal as `run` printed it (with where the time goes on request)
//! and exports it (to files or standard output), overlays runs from two machines with a
//! warning and a run column, `merge` writes them as one file the app and `report` read
//! back, and a bad file is one error line naming it, with exit code 2. One run, measured
//! by the first test that needs it, serves them all.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use tempfile::TempDir;

use crate::common;
use common::runs::{SharedRun, from_another_machine};
use common::{assert_error_line, loaderbench, path_str, run_args, stderr, stdout};

/// A real run of two configs, saved as JSON `laptop.json` (`--json -` puts the results on
/// standard output) and as its journal `laptop.jsonl`; measured once, by the first test
/// that needs it, and copied as if from another machine as `server.json`.
fn measured() -> &'static SharedRun {
    static MEASURED: OnceLock<SharedRun> = OnceLock::new();
    SharedRun::once(&MEASURED, |dir| {
        let journal = dir.join("laptop.jsonl");
        let sets = ["samples=1024", "num_workers=[0, 2]", "extra_configs=[]"];
        let saving = ["--journal", path_str(&journal), "--json", "-"];
        let output = loaderbench(&run_args("seed-light", &sets, &saving));
        let json = dir.join("laptop.json");
        std::fs::write(&json, &output.stdout).unwrap();
        if output.status.success() {
            from_another_machine(&json, &dir.join("server.json"));
        }
        output
    })
}

/// `report` of the run and its copy from another machine, with `--recommend`.
fn overlay() -> &'static Output {
    static OVERLAY: OnceLock<Output> = OnceLock::new();
    let measured = measured();
    OVERLAY.get_or_init(|| {
        loaderbench(&[
            "report",
            path_str(&measured.path("laptop.json")),
            path_str(&measured.path("server.json")),
            "--recommend",
        ])
    })
}

/// The run and its copy from another machine, merged by `merge` into one file.
fn merged() -> &'static Path {
    static MERGED: OnceLock<PathBuf> = OnceLock::new();
    let measured = measured();
    MERGED.get_or_init(|| {
        let merged = measured.path("merged.json");
        let output = loaderbench(&[
            "merge",
            path_str(&measured.path("laptop.json")),
            path_str(&measured.path("server.json")),
            "-o",
            path_str(&merged),
        ]);
        assert!(output.status.success(), "{}", stderr(&output));
        merged
    })
}

#[test]
fn json_to_standard_output_is_the_results_alone() {
    let measured = measured();
    let parsed: serde_json::Value =
        serde_json::from_slice(&measured.output.stdout).expect("standard output is the JSON alone");
    assert_eq!(parsed["results"].as_array().map(Vec::len), Some(2));
}

#[test]
fn the_results_hold_the_preset_as_run() {
    let setup = loaderbench_measure::results_file::read(&measured().path("laptop.json"))
        .unwrap()
        .setup;
    let setup = setup.expect("the results hold the preset as run");
    assert_eq!(
        (setup.name.as_str(), setup.samples),
        ("seed-light", Some(1024))
    );
}

/// `report` of the run's results file, with `extra` arguments.
fn report_of_the_run(extra: &[&str]) -> Output {
    let json = measured().path("laptop.json");
    loaderbench(&[&["report", path_str(&json)], extra].concat())
}

/// Asserts `report SAVED` prints the table `run` printed: a row per config.
fn assert_reports_as_run_printed(saved: &Path) {
    let output = loaderbench(&["report", path_str(saved)]);
    let out = stdout(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(out.contains("| num_workers |"), "{out}");
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("| 0 ") || l.starts_with("| 2 "))
            .count(),
        2,
        "{out}"
    );
}

#[test]
fn report_prints_a_results_file_as_run_printed_it() {
    assert_reports_as_run_printed(&measured().path("laptop.json"));
}

#[test]
fn report_prints_a_journal_as_run_printed_it() {
    assert_reports_as_run_printed(&measured().path("laptop.jsonl"));
}

#[test]
fn report_stages_prints_where_the_time_goes_per_config() {
    let output = report_of_the_run(&["--stages"]);
    let out = stdout(&output);
    let stages = out
        .split("Where the time goes (milliseconds per batch):")
        .nth(1)
        .unwrap_or_else(|| panic!("no stages table: {out}"));
    assert!(
        stages.contains("| config | fetch ms | decode ms |") && stages.contains("transform ms"),
        "{out}"
    );
    assert_eq!(
        stages.lines().filter(|l| l.starts_with("| nw=")).count(),
        2,
        "a row per config: {out}"
    );
}

#[test]
fn report_md_to_standard_output_is_the_markdown_alone() {
    let output = report_of_the_run(&["--md", "-"]);
    assert!(
        stdout(&output).starts_with("# ") || stdout(&output).starts_with('|'),
        "only the Markdown export: {}",
        stdout(&output)
    );
}

#[test]
fn report_of_two_machines_warns_that_they_differ() {
    let output = overlay();
    let err = stderr(output);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains("warning: machines differ: laptop on")
            && err.contains("server on Made-up Xeon 9999 · 64 logical cores"),
        "{err}"
    );
}

#[test]
fn report_of_two_machines_has_a_run_column_and_each_run_s_rows() {
    let out = stdout(overlay());
    assert!(out.contains("| run "), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("| laptop |")).count(),
        2,
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("| server |")).count(),
        2,
        "{out}"
    );
}

#[test]
fn report_of_two_machines_recommends_per_run() {
    let out = stdout(overlay());
    assert!(
        out.contains("laptop: synthetic") && out.contains("server: synthetic"),
        "one recommendation per run: {out}"
    );
}

#[test]
fn merge_writes_two_machines_runs_as_one_file_with_the_warning() {
    let run = loaderbench_measure::results_file::read(merged()).unwrap();
    assert_eq!(run.labels.len(), 4);
    assert_eq!(run.configs[2].run.as_deref(), Some("server"));
    assert!(
        run.warnings[0].starts_with("machines differ"),
        "{:?}",
        run.warnings
    );
}

#[test]
fn report_reads_a_merged_file_back() {
    let output = loaderbench(&["report", path_str(merged())]);
    assert_eq!(
        stdout(&output)
            .lines()
            .filter(|l| l.starts_with("| server |"))
            .count(),
        2
    );
}

/// Asserts `report` of a file `name` holding `contents` (none: no file) fails with exit
/// code 2 and one error line naming the file and the `problem`.
fn assert_one_line_naming_it(name: &str, contents: &str, problem: &str) {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join(name);
    if !contents.is_empty() {
        std::fs::write(&path, contents).unwrap();
    }
    let output = loaderbench(&["report", path_str(&path)]);
    assert_error_line(&output, 2, &[name, problem]);
    let err = stderr(&output);
    assert_eq!(err.lines().count(), 1, "nothing but the error line: {err}");
}

#[test]
fn a_truncated_results_file_is_one_line_naming_it_and_exit_2() {
    assert_one_line_naming_it(
        "cut.json",
        "{\"version\": 1, \"preset\": \"x\"",
        "truncated",
    );
}

#[test]
fn a_results_file_from_a_newer_loaderbench_is_one_line_naming_it_and_exit_2() {
    assert_one_line_naming_it("future.json", "{\"version\": 99}", "newer loaderbench");
}

#[test]
fn a_missing_results_file_is_one_line_naming_it_and_exit_2() {
    assert_one_line_naming_it("missing.json", "", "No such file");
}
