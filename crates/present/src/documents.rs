//! Saved runs as documents: whether a path names one, and the most recent journals
//! listed with a line about each, for the app's Recent runs. Reading one is
//! [`loaderbench_measure::results_file::read`].

use std::path::Path;

use loaderbench_measure::read_journal;
use loaderbench_measure::results::{RunResult, RunStatus};

/// Whether `path` names a saved run (a JSON export or a journal) rather than a preset.
pub fn is_results_file(path: &Path) -> bool {
    path.extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json") || ext.eq_ignore_ascii_case("jsonl"))
}

/// The `limit` most recent run journals in `dir`, newest first, each with what it holds;
/// journals that cannot be read are left out (opening one names its problem).
pub fn recent(dir: &Path, limit: usize) -> Vec<(std::path::PathBuf, RunResult)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut journals: Vec<(std::time::SystemTime, std::path::PathBuf)> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .filter_map(|path| Some((path.metadata().ok()?.modified().ok()?, path)))
        .collect();
    journals.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    journals
        .into_iter()
        .filter_map(|(_, path)| read_journal(&path).ok().map(|run| (path, run)))
        .take(limit)
        .collect()
}

/// One line about a saved run: its preset, when it started (UTC), how it ended, how
/// many configs it measured, and the machine.
pub fn describe(run: &RunResult) -> String {
    let started = time::OffsetDateTime::from_unix_timestamp(run.started_unix_s as i64)
        .ok()
        .and_then(|t| {
            t.format(time::macros::format_description!(
                "[year]-[month]-[day] [hour]:[minute] UTC"
            ))
            .ok()
        })
        .unwrap_or_else(|| "unknown date".to_owned());
    let status = match &run.status {
        RunStatus::Finished => "finished",
        RunStatus::Cancelled => "cancelled",
        RunStatus::Failed { .. } => "failed",
        RunStatus::Running => "running",
    };
    let measured: std::collections::BTreeSet<usize> =
        run.results.iter().map(|r| r.config_index).collect();
    format!(
        "{} · {started} · {status}, {} of {} configs · {}, {} cores",
        run.preset,
        measured.len(),
        run.configs.len(),
        run.machine.cpu_model,
        run.machine.logical_cores
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::{Exporter, Json};
    use loaderbench_measure::fixtures::{config, epoch, result, run};
    use loaderbench_measure::results_file::read;

    fn sample() -> RunResult {
        result(
            vec![config(0, false), config(2, true)],
            vec![
                run(0, config(0, false), vec![epoch(1, 1.0, 0.1, 4)]),
                run(1, config(2, true), vec![epoch(1, 0.5, 0.2, 4)]),
            ],
        )
    }

    #[test]
    fn a_json_export_reads_back_as_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let run = sample();
        std::fs::write(&path, Json.export(&run).unwrap()).unwrap();
        assert_eq!(read(&path).unwrap(), run);
    }

    #[test]
    fn recent_journals_come_newest_first_with_a_line_each() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, preset: &str, status: RunStatus| {
            let mut run = sample();
            run.preset = preset.to_owned();
            run.started_unix_s = 1_796_090_000;
            let path = dir.path().join(name);
            let measured = run.results.remove(0);
            run.results.clear();
            let mut journal = loaderbench_measure::Journal::create(&path, &run).unwrap();
            journal.config(&measured).unwrap();
            journal.end(&status, None).unwrap();
        };
        write("1-old.jsonl", "old", RunStatus::Finished);
        std::thread::sleep(std::time::Duration::from_millis(20));
        write("2-new.jsonl", "new", RunStatus::Cancelled);
        std::fs::write(dir.path().join("3-broken.jsonl"), "{").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let recent = recent(dir.path(), 10);
        let presets: Vec<&str> = recent.iter().map(|(_, r)| r.preset.as_str()).collect();
        assert_eq!(presets, ["new", "old"]);
        assert_eq!(
            describe(&recent[0].1),
            "new · 2026-12-01 01:53 UTC · cancelled, 1 of 2 configs · test cpu, 8 cores"
        );
        assert_eq!(super::recent(dir.path(), 1).len(), 1);
    }

    #[test]
    fn bad_files_name_the_file_and_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = Json.export(&sample()).unwrap();
        let cases: [(&str, Vec<u8>, &str); 5] = [
            ("cut.json", bytes[..bytes.len() / 2].to_vec(), "truncated"),
            (
                "mid-number.json",
                b"{\"version\": 1, \"epochs\": 1.".to_vec(),
                "truncated",
            ),
            (
                "mid-word.json",
                b"{\"version\": 1, \"shuffle\": tr".to_vec(),
                "truncated",
            ),
            (
                "other.json",
                b"{\"hello\": 1}".to_vec(),
                "not a loaderbench results file",
            ),
            (
                "future.json",
                String::from_utf8(bytes.clone())
                    .unwrap()
                    .replacen("\"version\": 2", "\"version\": 99", 1)
                    .into_bytes(),
                "newer loaderbench (results version 99",
            ),
        ];
        for (name, contents, expected) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, contents).unwrap();
            let message = read(&path).unwrap_err().to_string();
            assert!(
                message.contains(name) && message.contains(expected),
                "{message}"
            );
            assert!(!message.contains('\n'), "{message}");
        }
    }
}
