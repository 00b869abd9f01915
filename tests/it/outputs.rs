//! Where a run's outputs go, checked before anything is measured: an export (`--json`,
//! `--csv`, `--md`, `--png`) or a journal that cannot be written stops the CLI at once
//! with one line naming the file and the problem, exit code 2 and nothing measured. An
//! export that fails at the end (a full disk: `/dev/full`) names the file, keeps the
//! journal, and gives the `report` command that writes it from the journal.

use std::time::{Duration, Instant};

use crate::common;
use common::runs::{tiny_run, tiny_run_ok};
use common::{assert_error_line, journaled_configs, json_file, path_str};

/// Checks that `flag FILE`, with FILE in a folder that does not exist, is refused before
/// anything is measured.
fn assert_refused_up_front(flag: &str) {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/folder/out.file");
    let journal = dir.path().join("journal.jsonl");
    let mut args = vec![flag, path_str(&missing)];
    if flag != "--journal" {
        args.extend(["--journal", path_str(&journal)]);
    }
    let started = Instant::now();
    let output = tiny_run(dir.path(), &args);
    assert_error_line(&output, 2, &[path_str(&missing)]);
    assert!(
        !journal.exists(),
        "{flag}: the run measured before refusing"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{flag}: took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_json_export_in_a_missing_folder_is_refused_before_measuring() {
    assert_refused_up_front("--json");
}

#[test]
fn a_csv_export_in_a_missing_folder_is_refused_before_measuring() {
    assert_refused_up_front("--csv");
}

#[test]
fn a_markdown_export_in_a_missing_folder_is_refused_before_measuring() {
    assert_refused_up_front("--md");
}

#[test]
fn a_png_export_in_a_missing_folder_is_refused_before_measuring() {
    assert_refused_up_front("--png");
}

#[test]
fn a_journal_under_a_file_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let journal = file.join("journal.jsonl");
    let output = tiny_run(dir.path(), &["--journal", path_str(&journal)]);
    assert_error_line(&output, 2, &[path_str(&journal)]);
}

#[test]
fn a_missing_journal_folder_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("runs/today/journal.jsonl");
    tiny_run_ok(dir.path(), &["--journal", path_str(&journal)]);
    assert!(journal.is_file());
}

#[test]
fn a_full_disk_at_the_end_keeps_the_journal_and_names_the_report_command() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let output = tiny_run(
        dir.path(),
        &["--journal", path_str(&journal), "--json", "/dev/full"],
    );
    let command = format!("loaderbench report {} --json /dev/full", path_str(&journal));
    assert_error_line(&output, 1, &["/dev/full", &command]);
    assert_eq!(
        journaled_configs(&journal),
        2,
        "the journal keeps both configs"
    );
}

#[test]
fn an_export_replaces_the_file_whole_and_as_readable_as_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    std::fs::write(
        &json,
        "an older, longer file that must not leave a tail behind ".repeat(99),
    )
    .unwrap();
    let journal = dir.path().join("journal.jsonl");
    tiny_run_ok(
        dir.path(),
        &["--json", path_str(&json), "--journal", path_str(&journal)],
    );
    let written = json_file(&json);
    assert_eq!(written["status"]["status"], "finished");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".loaderbench"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&json).unwrap().permissions().mode();
        assert_ne!(mode & 0o044, 0, "mode {mode:o}: others cannot read it");
    }
}
