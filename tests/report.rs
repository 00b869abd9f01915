//! Saved runs as documents on the command line, with the real program: `report` prints a
//! results file or a journal as `run` printed it (with where the time goes on request)
//! and exports it (to files or standard output), overlays runs from two machines with a warning and a run column, `merge`
//! writes them as one file the app and `report` read back, and a bad file is one error
//! line naming it, with exit code 2.

use std::path::PathBuf;

use tempfile::TempDir;

mod common;
use common::runs::from_another_machine;
use common::{loaderbench, path_str, stderr, stdout};

/// A real run of two configs, saved as JSON and as its journal; `--json -` puts the
/// results on standard output and nothing else.
fn measured(dir: &TempDir) -> (PathBuf, PathBuf) {
    let journal = dir.path().join("laptop.jsonl");
    let output = loaderbench(&[
        "run",
        "seed-light",
        "--quiet",
        "--set",
        "samples=1024",
        "--set",
        "num_workers=[0, 2]",
        "--set",
        "extra_configs=[]",
        "--journal",
        path_str(&journal),
        "--json",
        "-",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json = dir.path().join("laptop.json");
    let parsed: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("standard output is the JSON alone");
    assert_eq!(parsed["results"].as_array().map(Vec::len), Some(2));
    std::fs::write(&json, &output.stdout).unwrap();
    let setup = loaderbench::documents::read(&json).unwrap().setup;
    let setup = setup.expect("the results hold the preset as run");
    assert_eq!(
        (setup.name.as_str(), setup.samples),
        ("seed-light", Some(1024))
    );
    (json, journal)
}

#[test]
fn saved_runs_report_overlay_and_merge() {
    let dir = TempDir::new().unwrap();
    let (json, journal) = measured(&dir);

    for saved in [&json, &journal] {
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
    let output = loaderbench(&["report", path_str(&json), "--stages"]);
    let out = stdout(&output);
    let stages = out
        .split("Where the time goes (milliseconds per batch):")
        .nth(1)
        .unwrap_or_else(|| panic!("no stages table: {out}"));
    assert!(
        stages.contains("| config | read ms |") && stages.contains("transform ms"),
        "{out}"
    );
    assert_eq!(
        stages.lines().filter(|l| l.starts_with("| nw=")).count(),
        2,
        "a row per config: {out}"
    );
    let output = loaderbench(&["report", path_str(&json), "--md", "-"]);
    assert!(
        stdout(&output).starts_with("# ") || stdout(&output).starts_with('|'),
        "only the Markdown export: {}",
        stdout(&output)
    );

    let server = from_another_machine(&json, &dir.path().join("server.json"));
    let output = loaderbench(&["report", path_str(&json), path_str(&server), "--recommend"]);
    let (out, err) = (stdout(&output), stderr(&output));
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains("warning: machines differ: laptop on")
            && err.contains("server on Made-up Xeon 9999 · 64 logical cores"),
        "{err}"
    );
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
    assert!(
        out.contains("laptop: synthetic") && out.contains("server: synthetic"),
        "one recommendation per run: {out}"
    );

    let merged = dir.path().join("merged.json");
    let output = loaderbench(&[
        "merge",
        path_str(&json),
        path_str(&server),
        "-o",
        path_str(&merged),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let run = loaderbench::documents::read(&merged).unwrap();
    assert_eq!(run.labels.len(), 4);
    assert_eq!(run.configs[2].run.as_deref(), Some("server"));
    assert!(
        run.warnings[0].starts_with("machines differ"),
        "{:?}",
        run.warnings
    );
    let output = loaderbench(&["report", path_str(&merged)]);
    assert_eq!(
        stdout(&output)
            .lines()
            .filter(|l| l.starts_with("| server |"))
            .count(),
        2
    );
}

#[test]
fn a_bad_results_file_is_one_line_naming_it_and_exit_2() {
    let dir = TempDir::new().unwrap();
    let cases = [
        (
            "cut.json",
            "{\"version\": 1, \"preset\": \"x\"",
            "truncated",
        ),
        ("future.json", "{\"version\": 99}", "newer loaderbench"),
        ("missing.json", "", "No such file"),
    ];
    for (name, contents, problem) in cases {
        let path = dir.path().join(name);
        if !contents.is_empty() {
            std::fs::write(&path, contents).unwrap();
        }
        let output = loaderbench(&["report", path_str(&path)]);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{name}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(
            lines[0].starts_with("error: ")
                && lines[0].contains(name)
                && lines[0].contains(problem),
            "{err}"
        );
    }
}
