//! The library's error type. Every error says what went wrong and, where a file is to
//! blame, names it; a preset value that fails validation is a [`FieldError`] that names
//! the file and the field ([`FieldPath`], the one key a form marks its fields by), so a
//! form can mark the field without reading the message.
//! Errors are split by who must act: [`Error::is_bad_input`] is true when the user's
//! input (a preset, a dataset file, a command-line value) is wrong, which the CLI reports
//! with exit code 2; everything else is a failed run (exit code 1). An error caused by
//! another (an I/O error, a libtorch error) keeps it as its `source`; the message already
//! includes its text, so users see one line. An error raised in the user's own Python
//! dataset is a [`UserCodeError`]: their file, line and exception. Every message hides
//! the secrets of the URLs it names ([`crate::secrets::redact`]).

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::secrets::redact;

/// The error that caused another, shared so that errors stay cheap to clone.
pub type Source = Arc<dyn std::error::Error + Send + Sync>;

/// An error from loading, validating or running a benchmark.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// A file the user pointed us at is missing, unreadable or malformed.
    #[error("{}: {}", redact(&path.display().to_string()), redact(problem))]
    BadFile {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
        /// The error behind the problem, when there is one.
        #[source]
        source: Option<Source>,
    },
    /// A preset field holds a value that is not acceptable.
    #[error(transparent)]
    BadField(#[from] FieldError),
    /// A value the user gave (a `--set`, a command-line value) is not acceptable.
    #[error("{}", redact(.0))]
    BadValue(String),
    /// The run itself failed: a worker died or hung, a tensor operation failed.
    #[error("{}", redact(problem))]
    Run {
        /// What failed.
        problem: String,
        /// The error behind the failure, when there is one.
        #[source]
        source: Option<Source>,
    },
    /// The user's own dataset code failed or lacks what the preset names.
    #[error(transparent)]
    UserCode(#[from] UserCodeError),
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
            source: None,
        }
    }

    /// The file at `path` could not be read or written; the message is `source`'s.
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::file_caused(path, source.to_string(), source)
    }

    /// A problem with the file at `path` that `source` caused.
    pub fn file_caused(
        path: impl AsRef<Path>,
        problem: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::BadFile {
            path: path.as_ref().to_path_buf(),
            problem: problem.into(),
            source: Some(Arc::new(source)),
        }
    }

    /// A problem with a value the user gave.
    pub fn value(problem: impl Into<String>) -> Self {
        Error::BadValue(problem.into())
    }

    /// A failure while running.
    pub fn run(problem: impl Into<String>) -> Self {
        Error::Run {
            problem: problem.into(),
            source: None,
        }
    }

    /// A failure while running that `source` caused.
    pub fn run_caused(
        problem: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Run {
            problem: problem.into(),
            source: Some(Arc::new(source)),
        }
    }

    /// True when the user's input is at fault (exit code 2), false for a failed run.
    pub fn is_bad_input(&self) -> bool {
        match self {
            Error::BadFile { .. } | Error::BadField(_) | Error::BadValue(_) => true,
            Error::UserCode(error) => error.bad_input,
            Error::Run { .. } | Error::Cancelled => false,
        }
    }

    /// The preset field at fault, when the error is about one.
    pub fn field(&self) -> Option<&FieldPath> {
        match self {
            Error::BadField(error) => Some(&error.field),
            _ => None,
        }
    }
}

impl From<tch::TchError> for Error {
    fn from(err: tch::TchError) -> Self {
        Error::run_caused(format!("libtorch: {err}"), err)
    }
}

/// A preset field whose value fails validation: the file (when there is one), the
/// field (`batch_size`, `extra_configs[2]`) and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct FieldError {
    /// The preset file, when the preset came from one.
    pub path: Option<PathBuf>,
    /// The field, as the preset names it.
    pub field: FieldPath,
    /// What is wrong with the value.
    pub problem: String,
}

impl FieldError {
    /// A problem with `field` of the preset read from `path`.
    pub fn new(
        path: Option<&Path>,
        field: impl Into<FieldPath>,
        problem: impl Into<String>,
    ) -> Self {
        FieldError {
            path: path.map(Path::to_path_buf),
            field: field.into(),
            problem: problem.into(),
        }
    }

    /// The same problem, of the field inside `parent` (`extra_configs[1]` and
    /// `persistent_workers` make `extra_configs[1].persistent_workers`).
    pub fn within(mut self, parent: &str) -> Self {
        self.field = FieldPath::from(format!("{parent}.{}", self.field));
        self
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{}: ", path.display())?;
        }
        write!(f, "field `{}`: {}", self.field, redact(&self.problem))
    }
}

/// A preset field as the preset (and `--set`) names it: `batch_size`, `dataset.path`,
/// `extra_configs[2]`. It is how a [`FieldError`] names its field and how a form keys the
/// marks beside its fields, so the two meet on one type; the fields a form marks by name
/// are the constants here, which the checks that find their problems use too.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FieldPath(Cow<'static, str>);

impl FieldPath {
    pub const NAME: FieldPath = FieldPath::of("name");
    /// The dataset as a whole (its kind and what the kind needs).
    pub const DATASET: FieldPath = FieldPath::of("dataset");
    pub const DATASET_PATH: FieldPath = FieldPath::of("dataset.path");
    pub const DATASET_LABELS: FieldPath = FieldPath::of("dataset.labels");
    pub const DATASET_FACTORY: FieldPath = FieldPath::of("dataset.factory");
    pub const DATASET_ARGS: FieldPath = FieldPath::of("dataset.args");
    pub const DATASET_COLLATE: FieldPath = FieldPath::of("dataset.collate");
    pub const DATASET_IMAGE_SIZE: FieldPath = FieldPath::of("dataset.image_size");
    pub const PIPELINE: FieldPath = FieldPath::of("pipeline");
    pub const SAMPLES: FieldPath = FieldPath::of("samples");
    pub const EPOCHS: FieldPath = FieldPath::of("epochs");
    pub const REPEATS: FieldPath = FieldPath::of("repeats");
    pub const PLANNED_EPOCHS: FieldPath = FieldPath::of("planned_epochs");
    pub const SEED: FieldPath = FieldPath::of("seed");
    pub const NORMALIZE_MEAN: FieldPath = FieldPath::of("normalize.mean");
    pub const NORMALIZE_STD: FieldPath = FieldPath::of("normalize.std");
    pub const WORKER_TIMEOUT_S: FieldPath = FieldPath::of("worker_timeout_s");
    pub const STEP: FieldPath = FieldPath::of("step");
    pub const STEP_LR: FieldPath = FieldPath::of("step.lr");
    pub const STEP_ARGS: FieldPath = FieldPath::of("step.args");

    /// The field named `path` (a knob's field from the knob table, a constant above).
    pub const fn of(path: &'static str) -> FieldPath {
        FieldPath(Cow::Borrowed(path))
    }

    /// The path as the preset writes it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is `parent` or a field inside it (`step.lr` is within `step`).
    pub fn is_within(&self, parent: &FieldPath) -> bool {
        self.as_str()
            .strip_prefix(parent.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for FieldPath {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl From<&str> for FieldPath {
    fn from(path: &str) -> Self {
        FieldPath(Cow::Owned(path.to_owned()))
    }
}

impl From<String> for FieldPath {
    fn from(path: String) -> Self {
        FieldPath(Cow::Owned(path))
    }
}

/// An error in the user's own Python dataset: the file and line of their code it came
/// from (the traceback's last frame in their module's folder), and the exception in one
/// line: `my_data.py:41: ValueError: ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct UserCodeError {
    /// The file as the preset names it (or beside it, for a module it imports).
    pub file: PathBuf,
    /// `None` when no line is to blame (a function the module lacks).
    pub line: Option<u32>,
    /// The exception, `Type: message`, or what the module lacks.
    pub problem: String,
    /// True before the dataset gave its first batch (the user's input is at fault,
    /// exit code 2), false for a failure during the run (exit code 1).
    pub bad_input: bool,
}

impl fmt::Display for UserCodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}", self.problem)
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Asserts that an error's message names every one of `parts`, showing the message
/// where it does not: the check the readers' tests make of what a user is told.
#[cfg(test)]
pub(crate) fn assert_mentions(message: &str, parts: &[&str]) {
    let missing: Vec<&str> = parts
        .iter()
        .copied()
        .filter(|part| !message.contains(part))
        .collect();
    assert!(
        missing.is_empty(),
        "{message:?} does not mention {missing:?}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn field_errors_read_as_before_and_name_their_field() {
        let err = Error::from(FieldError::new(
            Some(Path::new("p.ron")),
            "batch_size",
            "must be at least 1",
        ));
        assert_eq!(
            err.to_string(),
            "p.ron: field `batch_size`: must be at least 1"
        );
        assert_eq!(err.field(), Some(&FieldPath::of("batch_size")));
        assert!(err.is_bad_input());
        let err = Error::from(FieldError::new(None, "epochs", "must be at least 1"));
        assert_eq!(err.to_string(), "field `epochs`: must be at least 1");
    }

    #[test]
    fn a_field_is_within_itself_and_its_parents_only() {
        let lr = FieldPath::STEP_LR;
        assert!(lr.is_within(&FieldPath::STEP));
        assert!(lr.is_within(&lr));
        assert!(!FieldPath::STEP.is_within(&lr));
        assert!(!FieldPath::of("steps").is_within(&FieldPath::STEP));
        assert!(FieldPath::of("extra_configs[2]").is_within(&FieldPath::of("extra_configs")));
        // A path built from text is the same key as the constant.
        assert_eq!(FieldPath::from("dataset.path"), FieldPath::DATASET_PATH);
    }

    #[test]
    fn user_code_errors_read_file_line_problem_and_are_bad_input_before_the_first_batch() {
        let mut error = UserCodeError {
            file: PathBuf::from("my_data.py"),
            line: Some(41),
            problem: "ValueError: bad sample".to_owned(),
            bad_input: true,
        };
        assert_eq!(
            Error::from(error.clone()).to_string(),
            "my_data.py:41: ValueError: bad sample"
        );
        assert!(Error::from(error.clone()).is_bad_input());
        error.bad_input = false;
        error.line = None;
        assert_eq!(
            Error::from(error.clone()).to_string(),
            "my_data.py: ValueError: bad sample"
        );
        assert!(!Error::from(error).is_bad_input());
    }

    #[test]
    fn io_errors_keep_their_source() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let err = Error::io("data.npy", io);
        assert_eq!(err.to_string(), "data.npy: no such file");
        assert_eq!(
            err.source().map(ToString::to_string).as_deref(),
            Some("no such file")
        );
        assert!(err.is_bad_input());
        assert!(!Error::run("hung").is_bad_input());
    }
}
