//! The results journal: JSON lines appended as a run goes (a header with the run, one
//! line per finished config, a tune's trail where there is one, and the final status),
//! flushed each time, so a crash, a failure or a cancel never loses a config that was
//! already measured.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::results::{ConfigResult, RunResult, RunStatus};
use crate::tune_trail::TuneTrail;
use loaderbench_engine::error::{Error, Result};

/// One line of a journal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "entry")]
enum Entry {
    Run { run: Box<RunResult> },
    Config { result: Box<ConfigResult> },
    Tune { trail: Box<TuneTrail> },
    End { status: RunStatus },
}

/// An open journal file.
pub struct Journal {
    path: PathBuf,
    file: File,
}

/// Overrides the user data directory (tests, portable installs).
pub const DATA_DIR_ENV: &str = "LOADERBENCH_DATA_DIR";

/// Where loaderbench keeps its data: `$LOADERBENCH_DATA_DIR`, else the user data
/// directory's `loaderbench` (the temporary directory where there is none).
pub fn data_dir() -> PathBuf {
    match std::env::var_os(DATA_DIR_ENV).filter(|dir| !dir.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => dirs::data_local_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("loaderbench"),
    }
}

/// Where runs' journals go by default: `runs` in loaderbench's data directory
/// ([`data_dir`], which `$LOADERBENCH_DATA_DIR` overrides).
pub fn runs_dir() -> PathBuf {
    data_dir().join("runs")
}

/// Where the journal of a run of `preset` starting now goes by default: in [`runs_dir`],
/// named by the second it starts and the preset's name.
pub fn default_journal_path(preset: &str) -> PathBuf {
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let safe: String = preset
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    runs_dir().join(format!("{started_unix_s}-{safe}.jsonl"))
}

impl Journal {
    /// Creates the journal and writes the run's header.
    pub fn create(path: &Path, run: &RunResult) -> Result<Journal> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|err| Error::io(dir, err))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(path)
            .map_err(|err| Error::io(path, err))?;
        let mut journal = Journal {
            path: path.to_path_buf(),
            file,
        };
        journal.append(&Entry::Run {
            run: Box::new(run.clone()),
        })?;
        Ok(journal)
    }

    /// Opens an existing journal to append to: a finished run measured further (its
    /// unresolved recommendation's configs), whose new configs and final status follow
    /// the old ones.
    pub fn reopen(path: &Path) -> Result<Journal> {
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|err| Error::io(path, err))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a finished config.
    pub fn config(&mut self, result: &ConfigResult) -> Result<()> {
        self.append(&Entry::Config {
            result: Box::new(result.clone()),
        })
    }

    /// Appends a tune's trail.
    pub fn tune(&mut self, trail: &TuneTrail) -> Result<()> {
        self.append(&Entry::Tune {
            trail: Box::new(trail.clone()),
        })
    }

    /// Appends the run's final status.
    pub fn end(&mut self, status: &RunStatus) -> Result<()> {
        self.append(&Entry::End {
            status: status.clone(),
        })
    }

    fn append(&mut self, entry: &Entry) -> Result<()> {
        let mut line =
            serde_json::to_vec(entry).map_err(|err| Error::run_caused(err.to_string(), err))?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|()| self.file.flush())
            .map_err(|err| Error::io(&self.path, err))
    }
}

/// Rebuilds a run from its journal: every config that finished, and the status (still
/// `Running` if the run never ended, e.g. the process was killed).
pub fn read_journal(path: &Path) -> Result<RunResult> {
    let file = File::open(path).map_err(|err| Error::io(path, err))?;
    let mut run: Option<RunResult> = None;
    for (number, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|err| Error::io(path, err))?;
        if line.trim().is_empty() {
            continue;
        }
        let entry: Entry = serde_json::from_str(&line)
            .map_err(|err| Error::file_caused(path, format!("line {}: {err}", number + 1), err))?;
        match (entry, run.as_mut()) {
            (Entry::Run { run: header }, None) => run = Some(*header),
            (Entry::Config { result }, Some(run)) => run.results.push(*result),
            (Entry::Tune { trail }, Some(run)) => run.tune = Some(*trail),
            (Entry::End { status }, Some(run)) => run.status = status,
            _ => {
                return Err(Error::file(
                    path,
                    format!("line {}: entry out of order", number + 1),
                ));
            }
        }
    }
    run.ok_or_else(|| Error::file(path, "empty journal"))
}
