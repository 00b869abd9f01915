//! A saved run read back: a JSON export (by `loaderbench run --json`, the app, a saved
//! baseline, any machine) or a run journal (`.jsonl`), each giving the [`RunResult`] it
//! holds, and the results format's [`VERSION`] that exports write. The one reader every
//! command, the app and the baselines use: a file from a newer loaderbench, a truncated
//! or a corrupt one gets an error naming the file and the problem (a journal whose last
//! line alone is cut is read, with a warning naming the line), and what a file claims is
//! checked before it is believed ([`run_header`](crate::run_header)). A run saved before
//! `worker_kind: auto` reads its PyTorch configs' kinds as `auto`, which they meant.

use std::path::Path;

use serde::Deserialize;

use crate::journal::read_journal;
use crate::results::RunResult;
use loaderbench_engine::error::{Error, Result};
use loaderbench_engine::preset::{Runtime, WorkerKind};

/// The results format this build writes and reads; bumped when a change would make an
/// older loaderbench misread a file.
pub const VERSION: u32 = 2;

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
    let bytes = crate::journal::read_saved(path)?;
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
    let mut run: RunResult =
        serde_json::from_slice(&bytes).map_err(|err| problem(path, &bytes, err))?;
    run.check_claims(path)?;
    if version < WORKER_KINDS_SINCE {
        worker_kinds_before_auto(&mut run);
    }
    Ok(run)
}

/// The first results version whose PyTorch configs' `worker_kind` says what ran (the
/// version the change that brought `auto` and torchdata.nodes threads was released at).
pub const WORKER_KINDS_SINCE: u32 = 2;

/// A run saved before `worker_kind: auto` existed, as it reads now: the PyTorch
/// runtime ignored the knob (its DataLoader started process workers by `start_method`,
/// whatever the config said, `thread` by default), which `auto` now means; its saved
/// preset, run again, asks for the same. Our engine's kinds meant what they say.
fn worker_kinds_before_auto(run: &mut RunResult) {
    let configs = run.configs.iter_mut();
    for config in configs.chain(run.results.iter_mut().map(|r| &mut r.config)) {
        if config.runtime == Runtime::Pytorch {
            config.worker_kind = WorkerKind::Auto;
        }
    }
    if let Some(preset) = &mut run.setup
        && preset.runtime.contains(&Runtime::Pytorch)
    {
        for kind in &mut preset.worker_kind {
            if *kind == WorkerKind::Thread {
                *kind = WorkerKind::Auto;
            }
        }
    }
}

/// A JSON error as one line: truncated files and wrong contents told apart. A file cut
/// in the middle of a number or a word fails as a syntax error, not as an early end, so a
/// syntax error at the very end of the bytes also reads as truncated.
fn problem(path: &Path, bytes: &[u8], err: serde_json::Error) -> Error {
    let problem = if bytes.trim_ascii().is_empty() {
        "the file is empty: a results file holds one run as JSON".to_owned()
    } else if err.is_eof() || (err.is_syntax() && at_end(bytes, err.line(), err.column())) {
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
    use crate::fixtures::{config, epoch, result, run};
    use loaderbench_engine::preset::Preset;

    /// A JSON export at `version` of a run on both runtimes whose configs say `thread`.
    fn saved_at(version: u32, dir: &Path) -> std::path::PathBuf {
        let ours = config(2, false);
        let mut dataloader = config(2, false);
        dataloader.runtime = Runtime::Pytorch;
        dataloader.worker_kind = WorkerKind::Thread;
        let epochs = || vec![epoch(1, 0.1, 0.01, 4)];
        let results = vec![
            run(0, ours.clone(), epochs()),
            run(1, dataloader.clone(), epochs()),
        ];
        let mut saved = result(vec![ours, dataloader], results);
        let mut preset = Preset::default();
        preset.set("runtime", "[loaderbench, pytorch]").unwrap();
        preset.set("worker_kind", "[thread]").unwrap();
        saved.setup = Some(preset);
        let mut json = serde_json::to_value(&saved).unwrap();
        json["version"] = version.into();
        let path = dir.join(format!("v{version}.json"));
        std::fs::write(&path, json.to_string()).unwrap();
        path
    }

    #[cfg(unix)]
    #[test]
    fn a_pipe_or_a_device_given_as_a_saved_run_is_refused_unread() {
        let dir = tempfile::TempDir::new().unwrap();
        let fifo = dir.path().join("run.jsonl");
        // Made without a child process: a fork here would hold the journals other tests
        // lock until it execs.
        use rustix::fs::{CWD, FileType, Mode, mknodat};
        mknodat(CWD, &fifo, FileType::Fifo, Mode::RUSR | Mode::WUSR, 0).unwrap();
        // Read, the pipe waited for a writer without end; /dev/zero filled the memory.
        for saved in [fifo.as_path(), Path::new("/dev/zero")] {
            let msg = read(saved).unwrap_err().to_string();
            assert!(msg.contains("is not a regular file"), "{msg}");
        }
    }

    /// An empty file (a run whose export never got written) is said to be empty: it
    /// was called truncated, "EOF while parsing a value at line 1 column 0".
    #[test]
    fn an_empty_file_is_said_to_be_empty() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("run.json");
        for blank in ["", " \n"] {
            std::fs::write(&path, blank).unwrap();
            let msg = read(&path).unwrap_err().to_string();
            assert!(msg.contains("run.json: the file is empty"), "{msg}");
        }
    }

    #[test]
    fn pytorch_configs_saved_before_auto_read_as_auto() {
        let dir = tempfile::TempDir::new().unwrap();
        let run = read(&saved_at(1, dir.path())).unwrap();
        let kinds = |configs: Vec<&loaderbench_engine::plan::Config>| -> Vec<WorkerKind> {
            configs.iter().map(|c| c.worker_kind).collect()
        };
        let expected = [WorkerKind::Thread, WorkerKind::Auto];
        assert_eq!(kinds(run.configs.iter().collect()), expected);
        assert_eq!(
            kinds(run.results.iter().map(|r| &r.config).collect()),
            expected
        );
        assert_eq!(run.setup.unwrap().worker_kind, [WorkerKind::Auto]);
    }
}
