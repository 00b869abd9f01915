//! A saved run read back: a JSON export (by `loaderbench run --json`, the app, a saved
//! baseline, any machine) or a run journal (`.jsonl`), each giving the [`RunResult`] it
//! holds, and the results format's [`VERSION`] that exports write. The one reader every
//! command, the app and the baselines use: a file from a newer loaderbench, a truncated
//! or a corrupt one gets an error naming the file and the problem (a journal whose last
//! line alone is cut is read, with a warning naming the line), and what a file claims is
//! checked before it is believed ([`run_header`](crate::run_header)).

use std::path::Path;

use serde::Deserialize;

use crate::journal::read_journal;
use crate::results::RunResult;
use loaderbench_engine::error::{Error, Result};

/// The results format this build writes and reads; bumped when a change would make an
/// older loaderbench misread a file.
pub const VERSION: u32 = 1;

/// Only the format version of a JSON export (files from before it was written have none).
#[derive(Deserialize)]
struct Version {
    #[serde(default = "first_version")]
    version: u32,
}

fn first_version() -> u32 {
    1
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
