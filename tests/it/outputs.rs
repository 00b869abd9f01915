//! Where a run's outputs go, checked before anything is measured: an export (`--json`,
//! `--csv`, `--md`, `--png`) or a journal that cannot be written stops the CLI at once
//! with one line naming the file and the problem, exit code 2 and nothing measured. An
//! export that fails at the end (a full disk: `/dev/full`) names the file, keeps the
//! journal and the other exports, and gives the `report` command that writes it from
//! the journal; a journal the disk cannot take mid-run fails the run, and what was
//! measured is still shown.

use std::time::{Duration, Instant};

use crate::common;
use common::runs::{Exports, tiny_preset_file, tiny_run, tiny_run_ok};
use common::{assert_error_line, journaled_configs, json_file, path_str, run_args};

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
fn a_full_disk_at_the_end_keeps_the_journal_and_the_other_exports_and_names_the_report_command() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let exports = Exports::in_dir(dir.path(), "out");
    let output = tiny_run(
        dir.path(),
        &[
            "--journal",
            path_str(&journal),
            "--json",
            "/dev/full",
            "--csv",
            path_str(&exports.csv),
            "--md",
            path_str(&exports.md),
        ],
    );
    let command = format!("loaderbench report {} --json /dev/full", path_str(&journal));
    assert_error_line(&output, 1, &["/dev/full", &command]);
    assert_eq!(
        journaled_configs(&journal),
        2,
        "the journal keeps both configs"
    );
    // The JSON's full disk does not cost the exports beside it.
    let csv = std::fs::read_to_string(&exports.csv).expect("the CSV export");
    assert_eq!(csv.lines().count(), 3, "a header and both configs: {csv}");
    let md = std::fs::read_to_string(&exports.md).expect("the Markdown export");
    assert!(md.contains("| num_workers"), "{md}");
}

/// `loaderbench ARGS` with every file it writes held to `bytes` (RLIMIT_FSIZE): a write
/// past it fails as on a full disk (EFBIG, its SIGXFSZ ignored).
fn loaderbench_with_file_size_limit(args: &[&str], bytes: u64) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut command = common::loaderbench_command(args);
    // SAFETY: between fork and exec only signal() and setrlimit(), both
    // async-signal-safe, on values copied in.
    unsafe {
        command.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            match libc::setrlimit(libc::RLIMIT_FSIZE, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    common::run_with_deadline(&mut command, common::CLI_LIMIT)
}

#[test]
fn a_journal_the_disk_cannot_take_fails_the_run_and_keeps_every_config_measured() {
    let dir = tempfile::tempdir().unwrap();
    let preset = tiny_preset_file(dir.path(), 256, 1);
    // The journal's lines as this run writes them: the header, then a config a line.
    let sized = dir.path().join("sized.jsonl");
    tiny_run_ok(dir.path(), &["--journal", path_str(&sized)]);
    let text = std::fs::read_to_string(&sized).unwrap();
    let lines: Vec<u64> = text.lines().map(|l| l.len() as u64 + 1).collect();
    // Room for the header and the first config, and half the second: the disk fills up
    // while the second config is journaled.
    let limit = lines[0] + lines[1] + lines[2] / 2;
    let journal = dir.path().join("journal.jsonl");
    let args = run_args(
        path_str(&preset),
        &[],
        &["--journal", path_str(&journal), "--json", "-"],
    );
    let output = loaderbench_with_file_size_limit(&args, limit);
    // A failed run (1), not bad input: the journal was fine when the run began.
    assert_error_line(
        &output,
        1,
        &[
            "could not write the journal",
            path_str(&journal),
            "File too large",
        ],
    );
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["status"]["status"], "failed", "{result}");
    assert_eq!(
        result["results"].as_array().unwrap().len(),
        2,
        "both configs measured, the second one unjournaled"
    );
    // The first config's line whole, the second's cut where the disk filled up.
    let journaled = std::fs::read_to_string(&journal).unwrap();
    let whole: Vec<&str> = journaled.split_inclusive('\n').collect();
    assert_eq!(whole.len(), 3, "{journaled}");
    assert!(whole[1].starts_with(r#"{"entry":"config""#) && !whole[2].ends_with('\n'));
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

#[test]
fn two_outputs_to_one_place_are_refused_and_a_png_on_standard_output_is_all_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let saved = common::runs::SavedRun::in_dir(dir.path());
    let journal = dir.path().join("journal.jsonl");
    let json = dir.path().join("out.json");
    tiny_run_ok(
        dir.path(),
        &["--journal", path_str(&journal), "--json", path_str(&json)],
    );
    // Mixed on standard output, JSON then CSV read as neither.
    let output = common::loaderbench(&["report", path_str(&json), "--json", "-", "--csv", "-"]);
    assert_error_line(
        &output,
        2,
        &["--json and --csv both write to standard output"],
    );
    // The Markdown would replace the JSON, the export the journal it was measured into.
    let same = format!("{}/./out.json", dir.path().display());
    let output = common::loaderbench(&[
        "report",
        path_str(&json),
        "--json",
        path_str(&json),
        "--md",
        &same,
    ]);
    assert_error_line(&output, 2, &["--json and --md both write to", "out.json"]);
    let output = tiny_run(
        dir.path(),
        &[
            "--journal",
            path_str(&saved.journal),
            "--csv",
            path_str(&saved.journal),
        ],
    );
    assert_error_line(&output, 2, &["--csv and --journal both write to"]);
    assert!(
        !saved.journal.exists(),
        "refused before anything was measured"
    );
    // The tables went to standard output before the PNG's bytes.
    let output = common::loaderbench(&["report", path_str(&json), "--png", "-"]);
    assert!(output.status.success(), "{}", common::stderr(&output));
    image::load_from_memory_with_format(&output.stdout, image::ImageFormat::Png)
        .expect("standard output holds the PNG alone");
}
