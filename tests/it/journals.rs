//! Journals that survive anything: two runs started at the same moment keep a journal
//! each, a journal the user names is never emptied (refused unless `--append`), and a
//! journal whose last line was cut mid-write (a run killed, a full disk) still reports,
//! backs a baseline and recovers what came before the cut, with a note naming the line;
//! a journal another loaderbench is writing is neither measured further nor cut.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::common;
use common::runs::{tiny_preset_file, tiny_run, tiny_run_ok};
use common::{
    CLI_LIMIT, assert_error_line, assert_printed, assert_said, journaled_configs, loaderbench,
    loaderbench_command, loaderbench_with, path_str, stderr, stdout, wait_with_deadline,
};
use loaderbench_measure::{BEING_WRITTEN, DATA_DIR_ENV, NEVER_ENDED};

/// A finished run's journal in `dir` with its last `bytes` bytes cut, as a run killed
/// mid-write leaves it: the end line and part of the second config's line gone.
fn cut_journal(dir: &Path, bytes: usize) -> PathBuf {
    let journal = dir.join("run.jsonl");
    tiny_run_ok(dir, &["--journal", path_str(&journal)]);
    let whole = std::fs::read(&journal).unwrap();
    std::fs::write(&journal, &whole[..whole.len() - bytes]).unwrap();
    journal
}

const CUT_NOTE: &str = "line 3 is cut: the run stopped mid-write; 1 config kept";

#[test]
fn two_runs_started_together_keep_a_journal_each() {
    let dir = tempfile::tempdir().unwrap();
    let preset = tiny_preset_file(dir.path(), 256, 1);
    let data = dir.path().join("data");
    let start = || {
        loaderbench_command(&["run", path_str(&preset), "--quiet"])
            .env(DATA_DIR_ENV, &data)
            .spawn()
            .expect("the program starts")
    };
    let (first, second) = (start(), start());
    for output in [
        wait_with_deadline(first, CLI_LIMIT),
        wait_with_deadline(second, CLI_LIMIT),
    ] {
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let journals: Vec<PathBuf> = std::fs::read_dir(data.join("runs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(journals.len(), 2, "{journals:?}");
    for journal in &journals {
        assert_eq!(journaled_configs(journal), 2, "{}", journal.display());
        let report = loaderbench(&["report", path_str(journal)]);
        assert!(report.status.success(), "{}", stderr(&report));
        assert!(!stderr(&report).contains("is cut"), "{}", stderr(&report));
    }
}

#[test]
fn a_journal_that_exists_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("old.jsonl");
    std::fs::write(&journal, "an older run's records\n").unwrap();
    let output = tiny_run(dir.path(), &["--journal", path_str(&journal)]);
    assert_error_line(&output, 2, &[path_str(&journal), "exists", "--append"]);
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap(),
        "an older run's records\n"
    );
}

#[test]
fn append_adds_a_run_after_the_one_a_journal_holds() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("both.jsonl");
    tiny_run_ok(dir.path(), &["--journal", path_str(&journal)]);
    tiny_run_ok(dir.path(), &["--journal", path_str(&journal), "--append"]);
    assert_eq!(journaled_configs(&journal), 4);
    let report = loaderbench(&["report", path_str(&journal)]);
    assert!(report.status.success(), "{}", stderr(&report));
    assert!(
        stderr(&report).contains("holds 2 runs, appended one after another; the last is shown"),
        "{}",
        stderr(&report)
    );
}

#[test]
fn report_shows_what_a_cut_journal_kept_and_names_the_cut_line() {
    let dir = tempfile::tempdir().unwrap();
    let journal = cut_journal(dir.path(), 200);
    let report = loaderbench(&["report", path_str(&journal), "--json", "-"]);
    assert!(report.status.success(), "{}", stderr(&report));
    let kept: serde_json::Value = serde_json::from_slice(&report.stdout).expect("JSON");
    assert_eq!(kept["results"].as_array().map(Vec::len), Some(1));
    // Nobody writes it any more: the run that left it failed.
    assert_eq!(kept["status"]["status"], "failed");
    assert_eq!(kept["status"]["error"], NEVER_ENDED);
    let note = format!("{}: {CUT_NOTE}", path_str(&journal));
    assert!(
        kept["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w == note.as_str()),
        "{}",
        kept["warnings"]
    );
    let printed = loaderbench(&["report", path_str(&journal)]);
    assert!(printed.status.success(), "{}", stderr(&printed));
    assert_said(&printed, &format!("warning: {note}"));
    let rows: Vec<String> = stdout(&printed)
        .lines()
        .filter(|l| {
            l.starts_with("| ") && !l.starts_with("| num_workers") && !l.starts_with("| ---")
        })
        .map(str::to_owned)
        .collect();
    assert_eq!(rows.len(), 1, "the kept config alone: {rows:?}");
    assert!(rows[0].starts_with("| 0 "), "{rows:?}");
    // How it ended comes first; a run killed before its first config printed nothing.
    let ended = format!("  {NEVER_ENDED}");
    assert_printed(&printed, "failed, 1 of 2 configs");
    assert_printed(&printed, &ended);
    let header_only = dir.path().join("header.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    std::fs::write(&header_only, text.lines().next().unwrap()).unwrap();
    let printed = loaderbench(&["report", path_str(&header_only)]);
    assert!(printed.status.success(), "{}", stderr(&printed));
    assert_printed(&printed, "failed, 0 of 2 configs");
    assert_printed(&printed, &ended);
}

#[test]
fn a_journal_another_loaderbench_writes_is_not_measured_further_nor_cut() {
    let dir = tempfile::tempdir().unwrap();
    let journal = cut_journal(dir.path(), 200);
    let before = std::fs::read(&journal).unwrap();
    // The lock a run holds on its journal while it writes it.
    let writer = std::fs::File::open(&journal).unwrap();
    writer.lock().unwrap();
    let resolve = loaderbench(&["resolve", path_str(&journal), "--resolve-for", "30s"]);
    assert_error_line(&resolve, 2, &[path_str(&journal), BEING_WRITTEN]);
    let append = tiny_run(dir.path(), &["--journal", path_str(&journal), "--append"]);
    assert_error_line(&append, 2, &[path_str(&journal), BEING_WRITTEN]);
    let report = loaderbench(&["report", path_str(&journal), "--json", "-"]);
    let read: serde_json::Value = serde_json::from_slice(&report.stdout).expect("JSON");
    assert_eq!(read["status"]["status"], "running");
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        before,
        "the journal is untouched"
    );
}

/// A run measured on another machine is not measured further here: its rounds and
/// this machine's would be compared as one machine's.
#[test]
fn a_journal_from_another_machine_is_not_measured_further() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("run.jsonl");
    tiny_run_ok(dir.path(), &["--journal", path_str(&journal)]);
    common::runs::from_another_machine(&journal, &journal);
    let moved = std::fs::read_to_string(&journal).unwrap();
    let resolve = loaderbench(&["resolve", path_str(&journal), "--resolve-for", "30s"]);
    assert_error_line(
        &resolve,
        2,
        &[
            path_str(&journal),
            "was measured on Made-up Xeon 9999 · ",
            "so it cannot be measured further here",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap(),
        moved,
        "untouched"
    );
}

#[test]
fn a_baseline_saves_what_a_cut_journal_kept() {
    let dir = tempfile::tempdir().unwrap();
    let journal = cut_journal(dir.path(), 200);
    let data = dir.path().join("data");
    let vars: [(&str, &OsStr); 1] = [(DATA_DIR_ENV, data.as_os_str())];
    let args = [
        "baseline",
        "save",
        "kept",
        "--from-journal",
        path_str(&journal),
    ];
    let output = loaderbench_with(&args, &vars);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_said(&output, CUT_NOTE);
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.join("baselines/kept.json")).unwrap()).unwrap();
    assert_eq!(saved["results"].as_array().map(Vec::len), Some(1));
}
