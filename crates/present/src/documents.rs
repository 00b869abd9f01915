//! Saved runs read back as documents: a JSON export (by `loaderbench run --json`, the
//! app, or any machine) or a run journal (`.jsonl`), each giving the [`RunResult`] it
//! holds. A file from a newer loaderbench, a truncated or a corrupt one gets an error
//! naming the file and the problem (a journal whose last line alone is cut is read, with
//! a warning naming the line). The most recent journals are listed with a line
//! about each, for the app's Recent runs.

use std::path::Path;

use serde::Deserialize;

use crate::export::RESULTS_VERSION as VERSION;
use loaderbench_engine::error::{Error, Result};
use loaderbench_measure::read_journal;
use loaderbench_measure::results::{RunResult, RunStatus};

/// Only the format version of a JSON export (files from before it was written have none).
#[derive(Deserialize)]
struct Version {
    #[serde(default = "first_version")]
    version: u32,
}

fn first_version() -> u32 {
    1
}

/// Whether `path` names a saved run (a JSON export or a journal) rather than a preset.
pub fn is_results_file(path: &Path) -> bool {
    path.extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json") || ext.eq_ignore_ascii_case("jsonl"))
}

/// Reads the run saved at `path`: a journal when it ends in `.jsonl`, else a JSON export.
pub fn read(path: &Path) -> Result<RunResult> {
    if path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("jsonl"))
    {
        return read_journal(path);
    }
    let bytes = std::fs::read(path).map_err(|err| Error::io(path, err))?;
    let Version { version } =
        serde_json::from_slice(&bytes).map_err(|err| problem(path, &bytes, err))?;
    if version > VERSION {
        return Err(Error::file(
            path,
            format!(
                "written by a newer loaderbench (results version {version}; this one reads up to {VERSION})"
            ),
        ));
    }
    let run: RunResult =
        serde_json::from_slice(&bytes).map_err(|err| problem(path, &bytes, err))?;
    run.check_claims(path)?;
    Ok(run)
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
        RunStatus::Running => "stopped",
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

/// A JSON error as one line: truncated files and wrong contents told apart. A file cut
/// in the middle of a number or a word fails as a syntax error, not as an early end, so a
/// syntax error at the very end of the bytes also reads as truncated.
fn problem(path: &Path, bytes: &[u8], err: serde_json::Error) -> Error {
    let problem = if err.is_eof() || (err.is_syntax() && at_end(bytes, err.line(), err.column())) {
        format!("the file is truncated ({err})")
    } else {
        format!("not a loaderbench results file ({err})")
    };
    Error::file_caused(path, problem, err)
}

/// Whether 1-based `line` and `column` point at the last byte of `bytes` (trailing
/// whitespace aside) or past it.
fn at_end(bytes: &[u8], line: usize, column: usize) -> bool {
    let content = bytes.trim_ascii_end();
    let line_start = content
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'\n')
        .nth(line.saturating_sub(2))
        .map_or(0, |(at, _)| at + 1);
    let offset = if line <= 1 { 0 } else { line_start } + column;
    line >= 1 && offset >= content.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::{Exporter, Json};
    use loaderbench_measure::fixtures::{config, epoch, result, run};

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
            journal.end(&status).unwrap();
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
                    .replacen("\"version\": 1", "\"version\": 99", 1)
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
