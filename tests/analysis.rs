//! The analysis through the CLI as a process, on real libtorch: `run --recommend` prints
//! the ledger, the scaling line and the recommendation and exports them in the JSON;
//! repeats show their intervals; baselines are saved (from a run, a JSON export or a
//! journal), listed and compared, all under a temporary `LOADERBENCH_DATA_DIR`; the
//! training step reports whether the loader keeps up; bad names and steps exit with 2.

use std::path::Path;
use std::process::Output;

use tempfile::TempDir;

mod common;
use common::{loaderbench_with, path_str, stderr, stdout};
use loaderbench::baseline::DATA_DIR_ENV;

/// Runs `loaderbench ARGS` with its data under `data`.
fn in_data_dir(data: &Path, args: &[&str]) -> Output {
    loaderbench_with(args, &[(DATA_DIR_ENV, data.as_os_str())])
}

/// A small sweep: no workers, two restarted workers, two persistent workers.
fn small_sweep<'a>(journal: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "seed-light",
        "-q",
        "--set",
        "samples=1024",
        "--set",
        "batch_size=128",
        "--set",
        "num_workers=0,2",
        "--set",
        "pin_memory=false",
        "--set",
        "extra_configs=[{\"num_workers\":2,\"persistent_workers\":true}]",
        "--journal",
        journal,
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn recommend_prints_and_exports_the_analysis() {
    let dir = TempDir::new().unwrap();
    let json = dir.path().join("r.json");
    let journal = dir.path().join("j.jsonl");
    let args = small_sweep(
        path_str(&journal),
        &[
            "--set",
            "repeats=2",
            "--set",
            "planned_epochs=20",
            "--recommend",
            "--json",
            path_str(&json),
        ],
    );
    let output = in_data_dir(dir.path(), &args);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let row = text
        .lines()
        .find(|l| l.starts_with("| 2 ") && l.contains("True"))
        .unwrap_or_else(|| panic!("no persistent row in: {text}"));
    assert!(row.contains(" ["), "repeats show an interval: {row}");
    assert!(
        text.contains("Start-up ledger (milliseconds, medians)"),
        "{text}"
    );
    assert!(text.contains("| nw=2 persistent |"), "{text}");
    assert!(
        text.contains("Persistent workers save ")
            && text.contains("for nw=2 (measured against nw=2 persistent"),
        "{text}"
    );
    assert!(text.contains("num_workers: 0 workers "), "{text}");
    let paragraph = text
        .split("\nRecommendation: ")
        .nth(1)
        .and_then(|rest| rest.split_once('\n'))
        .map(|(_, paragraph)| paragraph)
        .unwrap_or_else(|| panic!("no recommendation in: {text}"));
    // On a busy machine (other tests, other builds) the meter may mark configs
    // disturbed, and then no config is named.
    let named = !paragraph.starts_with("No config is named: ");
    if named {
        assert!(paragraph.starts_with("Use nw="), "{paragraph}");
        assert!(
            paragraph.contains("Over 20 epochs it projects to"),
            "{paragraph}"
        );
        assert!(paragraph.contains("MiB of memory"), "{paragraph}");
    } else {
        assert!(
            paragraph.contains("re-run with `repeats: 5`"),
            "{paragraph}"
        );
    }

    let exported: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let analysis = &exported["analysis"];
    assert_eq!(analysis["planned_epochs"], 20);
    assert_eq!(analysis["ledger"].as_array().unwrap().len(), 3);
    assert_eq!(
        analysis["estimates"][0]["epoch_s"]["n"], 2,
        "2 repeats × epoch 2"
    );
    let recommendations = analysis["recommendations"].as_array().unwrap();
    assert_eq!(recommendations.len(), 1, "one runtime, one question");
    let recommendation = &recommendations[0];
    assert!(
        paragraph.starts_with(recommendation["text"].as_str().unwrap()),
        "the JSON holds the printed paragraph"
    );
    assert!(
        recommendation["group"]
            .as_str()
            .unwrap()
            .ends_with(" · loaderbench")
    );
    if named {
        let snippet = recommendation["snippet"].as_str().unwrap();
        assert!(
            paragraph.contains(&snippet.replace('\n', "\n    ")),
            "the snippet is printed, indented: {paragraph}"
        );
        assert!(recommendation["config"].is_u64());
    } else {
        assert!(recommendation["snippet"].is_null() && recommendation["config"].is_null());
    }
    assert_eq!(exported["results"].as_array().unwrap().len(), 6);
}

#[test]
fn baselines_are_saved_listed_and_compared() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("data");
    let journal = dir.path().join("j.jsonl");
    let json = dir.path().join("r.json");
    let args = small_sweep(
        path_str(&journal),
        &["--save-baseline", "before", "--json", path_str(&json)],
    );
    let saved = in_data_dir(&data, &args);
    assert!(saved.status.success(), "{}", stderr(&saved));
    assert!(stdout(&saved).contains("saved baseline `before`"));
    assert!(data.join("baselines/before.json").is_file());

    let args = small_sweep(path_str(&journal), &["--baseline", "before"]);
    let compared = in_data_dir(&data, &args);
    assert!(compared.status.success(), "{}", stderr(&compared));
    let text = stdout(&compared);
    let section = text
        .split("Against baseline `before` (typical epoch time, medians)\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no comparison in: {text}"));
    let lines: Vec<&str> = section.lines().collect();
    assert_eq!(lines.len(), 3, "{section}");
    for (line, label) in lines.iter().zip(["nw=0:", "nw=2:", "nw=2 persistent:"]) {
        assert!(line.starts_with(label), "{line}");
        assert!(line.ends_with("the noise"), "{line}");
    }

    let from_journal = in_data_dir(
        &data,
        &[
            "baseline",
            "save",
            "kept",
            "--from-journal",
            path_str(&journal),
        ],
    );
    assert!(from_journal.status.success(), "{}", stderr(&from_journal));
    let from_export = in_data_dir(&data, &["baseline", "save", "exported", path_str(&json)]);
    assert!(from_export.status.success(), "{}", stderr(&from_export));
    let listed = in_data_dir(&data, &["baseline", "list"]);
    assert_eq!(stdout(&listed), "before\nexported\nkept\n");
    let same = in_data_dir(&data, &["baseline", "compare", "exported", path_str(&json)]);
    assert!(same.status.success(), "{}", stderr(&same));
    assert!(
        stdout(&same).contains("nw=2 persistent: ")
            && stdout(&same).contains("(+0.0%), within the noise"),
        "{}",
        stdout(&same)
    );
}

#[test]
fn bad_baselines_and_steps_exit_2_before_running() {
    let dir = TempDir::new().unwrap();
    let journal = dir.path().join("j.jsonl");
    let cases: [(&[&str], &[&str]); 4] = [
        (
            &["--baseline", "missing"],
            &["missing.json", "no baseline named `missing`"],
        ),
        (
            &["--save-baseline", "../escape"],
            &["baseline name `../escape`"],
        ),
        (
            &["--set", "step={\"fixed\":-1}"],
            &["field `step`", "zero or more"],
        ),
        (&["--set", "planned_epochs=0"], &["field `planned_epochs`"]),
    ];
    for (extra, fragments) in cases {
        let output = in_data_dir(dir.path(), &small_sweep(path_str(&journal), extra));
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {err}");
        for fragment in fragments {
            assert!(
                err.contains(fragment),
                "{extra:?}: `{fragment}` missing from {err}"
            );
        }
        assert!(!journal.exists(), "{extra:?} ran before failing");
    }
    let not_a_result = dir.path().join("x.json");
    std::fs::write(&not_a_result, "{}").unwrap();
    let output = in_data_dir(
        dir.path(),
        &["baseline", "save", "x", path_str(&not_a_result)],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("x.json: not a result"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_model_step_reports_whether_training_is_input_bound() {
    let dir = TempDir::new().unwrap();
    let journal = dir.path().join("j.jsonl");
    let json = dir.path().join("r.json");
    let args = small_sweep(
        path_str(&journal),
        &[
            "--set",
            "step={\"mlp\":{\"hidden\":32}}",
            "--json",
            path_str(&json),
        ],
    );
    let output = in_data_dir(dir.path(), &args);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("Training step: mlp 32"), "{text}");
    let verdicts: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(": input-bound: "))
        .collect();
    assert_eq!(verdicts.len(), 3, "{text}");
    let exported: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(exported["step"]["mlp"]["hidden"], 32);
    let share = exported["analysis"]["input_bound"][0]["stall_share"]
        .as_f64()
        .unwrap();
    assert!((0.0..=1.0).contains(&share), "{share}");
}
