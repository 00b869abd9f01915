//! Saved runs read back as documents: a JSON export (by `loaderbench run --json`, the
//! app, or any machine) or a run journal (`.jsonl`), each giving the [`RunResult`] it
//! holds. A file from a newer loaderbench, a truncated or a corrupt one gets an error
//! naming the file and the problem.

use std::path::Path;

use serde::Deserialize;

use crate::bench::read_journal;
use crate::error::{Error, Result};
use crate::export::RESULTS_VERSION as VERSION;
use crate::results::RunResult;

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
    let Version { version } = serde_json::from_slice(&bytes).map_err(|err| problem(path, err))?;
    if version > VERSION {
        return Err(Error::file(
            path,
            format!(
                "written by a newer loaderbench (results version {version}; this one reads up to {VERSION})"
            ),
        ));
    }
    serde_json::from_slice(&bytes).map_err(|err| problem(path, err))
}

/// A JSON error as one line: truncated files and wrong contents told apart.
fn problem(path: &Path, err: serde_json::Error) -> Error {
    let problem = if err.is_eof() {
        format!("the file is truncated ({err})")
    } else {
        format!("not a loaderbench results file ({err})")
    };
    Error::file_caused(path, problem, err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::{config, epoch, result, run};
    use crate::export::{Exporter, Json};

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
    fn bad_files_name_the_file_and_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = Json.export(&sample()).unwrap();
        let cases: [(&str, Vec<u8>, &str); 3] = [
            ("cut.json", bytes[..bytes.len() / 2].to_vec(), "truncated"),
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
