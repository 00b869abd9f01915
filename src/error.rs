//! The library's error type. Every error says what went wrong and, where a file is to
//! blame, names it. Errors are split by who must act: [`Error::is_bad_input`] is true when
//! the user's input (a preset, a dataset file, a command-line value) is wrong, which the
//! CLI reports with exit code 2; everything else is a failed run (exit code 1).

use std::path::{Path, PathBuf};

/// An error from loading, validating or running a benchmark.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// A file the user pointed us at is missing, unreadable or malformed.
    #[error("{}: {problem}", path.display())]
    BadFile { path: PathBuf, problem: String },
    /// A value the user gave (a preset field, a `--set`) is not acceptable.
    #[error("{0}")]
    BadValue(String),
    /// The run itself failed: a worker died or hung, a tensor operation failed.
    #[error("{0}")]
    Run(String),
    /// The user cancelled the run.
    #[error("cancelled")]
    Cancelled,
}

impl Error {
    /// A problem with the file at `path`.
    pub fn file(path: impl AsRef<Path>, problem: impl Into<String>) -> Self {
        Error::BadFile {
            path: path.as_ref().to_path_buf(),
            problem: problem.into(),
        }
    }

    /// A problem with a value the user gave.
    pub fn value(problem: impl Into<String>) -> Self {
        Error::BadValue(problem.into())
    }

    /// A failure while running.
    pub fn run(problem: impl Into<String>) -> Self {
        Error::Run(problem.into())
    }

    /// True when the user's input is at fault (exit code 2), false for a failed run.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, Error::BadFile { .. } | Error::BadValue(_))
    }
}

impl From<tch::TchError> for Error {
    fn from(err: tch::TchError) -> Self {
        Error::Run(format!("libtorch: {err}"))
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
