//! The results journal: JSON lines appended as a run goes (a header with the run, one
//! line per finished config, a tune's trail where there is one, and the final status),
//! each synced to the disk, so a crash, a failure or a cancel never loses a config that
//! was already measured. A journal's file is made exclusively: by default under a name
//! no other run can take ([`new_journal`]), and a file the user names must be new unless
//! the run is appended to it ([`claim_journal`]). A journal open for writing holds its
//! file's lock, so that no second loaderbench appends to a run still being written (nor
//! cuts the line it is writing). Reading one back keeps every complete line, and names
//! a last line cut mid-write rather than refusing the file; a journal with no end that
//! nobody writes is a run that stopped before it ended ([`NEVER_ENDED`]).

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::results::{ConfigResult, RunResult, RunStatus};
use crate::tune_trail::TuneTrail;
use loaderbench_engine::error::{Error, Result};
use loaderbench_engine::loader::process::SharedFd;

/// One line of a journal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "entry")]
enum Entry {
    Run {
        run: Box<RunResult>,
    },
    Config {
        result: Box<ConfigResult>,
    },
    Tune {
        trail: Box<TuneTrail>,
    },
    End {
        status: RunStatus,
        /// The dataset's description, where the header was written before it was known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dataset: Option<String>,
    },
}

/// The failure of a run whose journal has no end and that nobody is writing any more:
/// its process was killed (or the machine stopped) before it could end the journal.
pub const NEVER_ENDED: &str = "the run stopped before it ended (its journal has no end)";

/// Why a journal that another loaderbench is writing cannot be written or measured
/// further.
pub const BEING_WRITTEN: &str = "another loaderbench is writing this journal (its run is still going); use it once that run has ended";

/// An open journal file; it holds the file's lock while it is open. No worker forked
/// meanwhile keeps a copy of it (which would hold the lock for as long as the worker
/// lives).
pub struct Journal {
    path: PathBuf,
    file: SharedFd,
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

/// A new journal for a run of `preset` starting now, where runs' journals go by default
/// ([`runs_dir`]); see [`new_journal`].
pub fn default_journal(preset: &str) -> Result<PathBuf> {
    new_journal(&runs_dir(), preset)
}

/// A new journal for a run of `preset` starting now, in `dir`: named by the second it
/// starts, the preset's name and this process's id (a number after it when that is
/// taken too), and created empty at once, exclusively, so that no other run (in this
/// process or another, started in the same second) can take the same file.
pub fn new_journal(dir: &Path, preset: &str) -> Result<PathBuf> {
    static TAKEN: AtomicU32 = AtomicU32::new(0);
    let started_unix_s = crate::run_header::unix_now_s();
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
    fs::create_dir_all(dir).map_err(|err| Error::io(dir, err))?;
    let stem = format!("{started_unix_s}-{safe}-{}", std::process::id());
    loop {
        let path = match TAKEN.fetch_add(1, Ordering::Relaxed) {
            0 => dir.join(format!("{stem}.jsonl")),
            n => dir.join(format!("{stem}-{n}.jsonl")),
        };
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(_) => return Ok(path),
            Err(err) if err.kind() == ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(Error::io(&path, err)),
        }
    }
}

/// Makes the journal the user named at `path` before anything is measured: a file that
/// exists already is refused (it holds another run's records) unless `append`, and then
/// while another loaderbench writes it; a new one is created exclusively.
pub fn claim_journal(path: &Path, append: bool) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|err| {
            Error::file(
                path,
                format!("cannot be written: its folder cannot be made ({err})"),
            )
        })?;
    }
    if append {
        check_appendable(path)?;
    }
    let opened = if append {
        OpenOptions::new().append(true).create(true).open(path)
    } else {
        OpenOptions::new().write(true).create_new(true).open(path)
    };
    match opened {
        // Refused now, before anything is measured, rather than when the run opens it.
        Ok(file) => lock_for_writing(path, &file),
        Err(err) if err.kind() == ErrorKind::AlreadyExists => Err(Error::file(
            path,
            "exists already: choose a new file, or add --append to add this run to it",
        )),
        Err(err) => Err(Error::file(path, format!("cannot be written ({err})"))),
    }
}

/// Refuses to `--append` to anything at `path` but a journal (or nothing, or an empty
/// file): appending would spoil a results file or notes given by mistake, and reading a
/// device or a pipe to check it would never end.
fn check_appendable(path: &Path) -> Result<()> {
    let Ok(meta) = fs::metadata(path) else {
        return Ok(());
    };
    if !meta.is_file() {
        return Err(Error::file(
            path,
            "is not a regular file: --append adds this run to a journal",
        ));
    }
    if meta.len() == 0 {
        return Ok(());
    }
    let bytes = fs::read(path).map_err(|err| Error::io(path, err))?;
    match parse_journal(path, &bytes) {
        Ok(_) => Ok(()),
        Err(Error::BadFile { problem, .. }) => Err(Error::file(
            path,
            format!(
                "is not a loaderbench journal ({problem}): --append adds this run only to a \
                 journal, and would spoil this file"
            ),
        )),
        Err(other) => Err(other),
    }
}

impl Journal {
    /// Writes the run's header to the journal at `path` ([`new_journal`]'s or one
    /// [`claim_journal`] made), after whatever it holds; a file that is not there yet is
    /// made.
    pub fn create(path: &Path, run: &RunResult) -> Result<Journal> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|err| Error::io(dir, err))?;
        }
        let mut journal = Journal::open(path, OpenOptions::new().create(true))?;
        journal.append(&Entry::Run {
            run: Box::new(run.clone()),
        })?;
        Ok(journal)
    }

    /// Opens an existing journal to append to: a finished run measured further (its
    /// unresolved recommendation's configs), whose new configs and final status follow
    /// the old ones.
    pub fn reopen(path: &Path) -> Result<Journal> {
        Journal::open(path, &mut OpenOptions::new())
    }

    /// The journal at `path` opened with `options` to append to, locked, and without a
    /// last line cut mid-write.
    fn open(path: &Path, options: &mut OpenOptions) -> Result<Journal> {
        let file = options
            .append(true)
            .open(path)
            .map_err(|err| Error::io(path, err))?;
        let file = SharedFd::unshared(file);
        lock_for_writing(path, file.file())?;
        drop_cut_line(path, file.file())?;
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

    /// Appends the run's final status, with the dataset's description where the header
    /// was written before the dataset was opened (a tune's rounds open it in their own
    /// processes).
    pub fn end(&mut self, status: &RunStatus, dataset: Option<&str>) -> Result<()> {
        self.append(&Entry::End {
            status: status.clone(),
            dataset: dataset.filter(|d| !d.is_empty()).map(str::to_owned),
        })
    }

    fn append(&mut self, entry: &Entry) -> Result<()> {
        let mut line =
            serde_json::to_vec(entry).map_err(|err| Error::run_caused(err.to_string(), err))?;
        line.push(b'\n');
        // Synced at every line (one per finished config), so that a crash or a power cut
        // loses at most the config being measured. A line that cannot be written (a full
        // disk) fails the run, not the user's input: the journal was writable when the
        // run began.
        let mut file = self.file.file();
        file.write_all(&line)
            .and_then(|()| file.sync_data())
            .map_err(|err| {
                Error::run_caused(
                    format!("could not write the journal {}: {err}", self.path.display()),
                    err,
                )
            })
    }
}

/// Takes the lock of the journal at `path` (open as `file`) for as long as it stays open,
/// refusing a journal another loaderbench is writing. A file system without locks (some
/// network ones) leaves the journal unguarded, as it was before there were locks.
///
/// A lock held a moment longer is waited for ([`LOCK_PATIENCE`]): a child process this
/// or another loaderbench is starting holds a copy of the file until it runs its program.
fn lock_for_writing(path: &Path, file: &File) -> Result<()> {
    let deadline = Instant::now() + LOCK_PATIENCE;
    loop {
        match file.try_lock() {
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(TryLockError::WouldBlock) => return Err(Error::file(path, BEING_WRITTEN)),
            Ok(()) | Err(TryLockError::Error(_)) => return Ok(()),
        }
    }
}

/// How long a journal's lock is waited for before the journal counts as being written.
const LOCK_PATIENCE: Duration = Duration::from_millis(200);

/// Whether a loaderbench holds the lock of the journal at `path` (is writing it).
fn being_written(path: &Path) -> bool {
    File::open(path)
        .is_ok_and(|file| matches!(file.try_lock_shared(), Err(TryLockError::WouldBlock)))
}

/// Removes a last line cut mid-write from the journal at `path` (open as `file`), so
/// that what is appended next starts on a line of its own.
fn drop_cut_line(path: &Path, file: &File) -> Result<()> {
    let bytes = fs::read(path).map_err(|err| Error::io(path, err))?;
    if bytes.last().is_none_or(|&last| last == b'\n') {
        return Ok(());
    }
    let whole = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |end| end + 1);
    file.set_len(whole as u64)
        .map_err(|err| Error::io(path, err))
}

/// The bytes of the saved run at `path`, which must be a regular file: a pipe would wait
/// for a writer without end, and a device such as /dev/zero would fill the memory.
pub(crate) fn read_saved(path: &Path) -> Result<Vec<u8>> {
    let meta = fs::metadata(path).map_err(|err| Error::io(path, err))?;
    if !meta.is_file() {
        return Err(Error::file(
            path,
            "is not a regular file: a saved run is a results file (.json) or a journal (.jsonl)",
        ));
    }
    fs::read(path).map_err(|err| Error::io(path, err))
}

/// Rebuilds a run from its journal at `path`: see [`parse_journal`]. A run with no end
/// stays `Running` while a loaderbench writes its journal; one that nobody writes any
/// more failed ([`NEVER_ENDED`]).
pub fn read_journal(path: &Path) -> Result<RunResult> {
    let bytes = read_saved(path)?;
    let mut run = parse_journal(path, &bytes)?;
    if run.status == RunStatus::Running && !being_written(path) {
        run.status = RunStatus::Failed {
            error: NEVER_ENDED.to_owned(),
        };
    }
    Ok(run)
}

/// Rebuilds a run from the journal `bytes` read from `path`: every config that finished,
/// and the status (still `Running` if the run never ended, e.g. the process was killed).
/// A last line cut mid-write (the process killed, the disk full) is left out and named in
/// a warning on the run; a bad line before it is an error. Of several runs appended to
/// one journal (`--append`) the last is given, with a warning that says so.
pub fn parse_journal(path: &Path, bytes: &[u8]) -> Result<RunResult> {
    let mut run: Option<RunResult> = None;
    let mut runs = 0;
    let mut notes = Vec::new();
    let mut lines = bytes.split(|&b| b == b'\n').enumerate().peekable();
    while let Some((index, line)) = lines.next() {
        let number = index + 1;
        if line.trim_ascii().is_empty() {
            continue;
        }
        let entry: Entry = match serde_json::from_slice(line) {
            Ok(entry) => entry,
            // Not followed by a newline: the last write never ended.
            Err(_) if lines.peek().is_none() => {
                let configs = run.as_ref().map_or(0, |run| run.results.len());
                let kept = loaderbench_engine::counted(configs, "config");
                notes.push(format!(
                    "{}: line {number} is cut: the run stopped mid-write; {kept} kept",
                    path.display()
                ));
                break;
            }
            Err(err) => {
                return Err(Error::file_caused(
                    path,
                    format!("line {number}: {err}"),
                    err,
                ));
            }
        };
        match (entry, run.as_mut()) {
            (Entry::Run { run: header }, _) => {
                run = Some(*header);
                runs += 1;
            }
            (Entry::Config { result }, Some(run)) => run.results.push(*result),
            (Entry::Tune { trail }, Some(run)) => run.tune = Some(*trail),
            (Entry::End { status, dataset }, Some(run)) => {
                run.status = status;
                if let Some(dataset) = dataset {
                    run.dataset = dataset;
                }
            }
            (_, None) => {
                return Err(Error::file(
                    path,
                    format!("line {number}: entry out of order"),
                ));
            }
        }
    }
    let Some(mut run) = run else {
        return Err(Error::file(
            path,
            match notes.is_empty() {
                true => "empty journal",
                false => "its only line is cut: the run stopped before anything was measured",
            },
        ));
    };
    if runs > 1 {
        notes.push(format!(
            "{}: holds {runs} runs, appended one after another; the last is shown",
            path.display()
        ));
    }
    run.warnings.extend(notes);
    run.check_claims(path)?;
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{config, epoch, result, run};

    /// A run of one config as its header has it, nothing measured yet, and that config
    /// measured once.
    fn one_config() -> (RunResult, ConfigResult) {
        let measured = run(0, config(0, false), vec![epoch(1, 1.0, 0.1, 4)]);
        let mut header = result(vec![config(0, false)], vec![measured.clone()]);
        header.results.clear();
        (header, measured)
    }

    /// A tune writes its header before any round has opened the dataset: the end says
    /// what it was, and the journal reads back with it (`report` headed its tables with
    /// "light — " and nothing more).
    #[test]
    fn a_dataset_described_at_the_end_fills_the_header_s() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tune.jsonl");
        let (mut header, measured) = one_config();
        header.dataset = String::new();
        let mut journal = Journal::create(&path, &header).unwrap();
        journal.config(&measured).unwrap();
        journal
            .end(&RunStatus::Finished, Some("synthetic (8 samples)"))
            .unwrap();
        drop(journal);
        assert_eq!(
            read_journal(&path).unwrap().dataset,
            "synthetic (8 samples)"
        );
    }

    /// A finished two-config run's journal at `path`; returns the run.
    fn journal_of_two_configs(path: &Path) -> RunResult {
        let whole = result(
            vec![config(0, false), config(2, false)],
            vec![
                run(0, config(0, false), vec![epoch(1, 1.0, 0.1, 4)]),
                run(1, config(2, false), vec![epoch(1, 0.5, 0.2, 4)]),
            ],
        );
        let mut header = whole.clone();
        header.results.clear();
        header.status = RunStatus::Running;
        let mut journal = Journal::create(path, &header).unwrap();
        for measured in &whole.results {
            journal.config(measured).unwrap();
        }
        journal.end(&RunStatus::Finished, None).unwrap();
        whole
    }

    fn cut(path: &Path, bytes: usize) {
        let text = fs::read(path).unwrap();
        fs::write(path, &text[..text.len() - bytes]).unwrap();
    }

    #[test]
    fn a_new_journal_is_never_one_another_run_took() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> = (0..5)
            .map(|_| new_journal(dir.path(), "same second").unwrap())
            .collect();
        let unique: std::collections::BTreeSet<&PathBuf> = paths.iter().collect();
        assert_eq!(unique.len(), 5, "{paths:?}");
        assert!(paths.iter().all(|p| p.is_file()));
        let name = paths[0].file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.contains("-same_second-"), "{name}");
        assert!(name.contains(&std::process::id().to_string()), "{name}");
    }

    #[test]
    fn a_journal_the_user_names_must_be_new_unless_appended_to() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.jsonl");
        journal_of_two_configs(&path);
        let kept = fs::read(&path).unwrap();
        let error = claim_journal(&path, false).unwrap_err().to_string();
        assert!(
            error.contains("old.jsonl") && error.contains("--append"),
            "{error}"
        );
        claim_journal(&path, true).unwrap();
        assert_eq!(fs::read(&path).unwrap(), kept);
        let new = dir.path().join("more/new.jsonl");
        claim_journal(&new, false).unwrap();
        assert!(new.is_file());
    }

    #[test]
    fn a_cut_last_line_is_named_and_the_configs_before_it_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        let whole = journal_of_two_configs(&path);
        let end_line = fs::read_to_string(&path)
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .len();
        // The end line and the second config's last bytes gone.
        cut(&path, end_line + 1 + 20);
        let kept = read_journal(&path).unwrap();
        assert_eq!(kept.results, whole.results[..1]);
        let error = NEVER_ENDED.to_owned();
        assert_eq!(kept.status, RunStatus::Failed { error });
        let note = format!(
            "{}: line 3 is cut: the run stopped mid-write; 1 config kept",
            path.display()
        );
        assert_eq!(kept.warnings, [note]);
    }

    #[test]
    fn a_bad_line_before_the_last_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        journal_of_two_configs(&path);
        let text = fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[1] = "{\"entry\":\"config\",";
        fs::write(&path, lines.join("\n") + "\n").unwrap();
        let error = read_journal(&path).unwrap_err().to_string();
        assert!(
            error.contains("run.jsonl") && error.contains("line 2"),
            "{error}"
        );
    }

    #[test]
    fn a_journal_whose_only_line_is_cut_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        fs::write(&path, "{\"entry\":\"run\",\"run\":{").unwrap();
        let error = read_journal(&path).unwrap_err().to_string();
        assert!(error.contains("only line is cut"), "{error}");
    }

    #[test]
    fn appending_after_a_cut_line_drops_it_and_keeps_the_journal_readable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        let whole = journal_of_two_configs(&path);
        cut(&path, 10);
        let mut journal = Journal::reopen(&path).unwrap();
        journal.end(&RunStatus::Cancelled, None).unwrap();
        let read = read_journal(&path).unwrap();
        assert_eq!(read.results, whole.results);
        assert_eq!(read.status, RunStatus::Cancelled);
        assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    }

    #[test]
    fn a_journal_being_written_is_refused_to_a_second_writer_and_read_as_running() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        let (mut header, measured) = one_config();
        header.status = RunStatus::Running;
        let mut writing = Journal::create(&path, &header).unwrap();
        writing.config(&measured).unwrap();
        for second in [Journal::reopen(&path), Journal::create(&path, &header)] {
            let error = second.err().expect("refused").to_string();
            assert!(
                error.contains("run.jsonl") && error.contains("another loaderbench is writing"),
                "{error}"
            );
        }
        assert_eq!(read_journal(&path).unwrap().status, RunStatus::Running);
        // Its writer gone without an end line, as a killed run leaves it.
        drop(writing);
        let read = read_journal(&path).unwrap();
        let error = NEVER_ENDED.to_owned();
        assert_eq!(read.status, RunStatus::Failed { error });
        assert_eq!(read.results.len(), 1);
        Journal::reopen(&path).unwrap();
    }

    #[test]
    fn append_refuses_what_is_not_a_journal_and_leaves_it_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let notes = dir.path().join("notes.txt");
        let text = "precious notes line 1\nline 2, no newline at its end";
        fs::write(&notes, text).unwrap();
        let error = claim_journal(&notes, true).unwrap_err().to_string();
        let start = format!(
            "{}: is not a loaderbench journal (line 1: ",
            notes.display()
        );
        assert!(error.starts_with(&start), "{error}");
        assert!(
            error.ends_with("--append adds this run only to a journal, and would spoil this file"),
            "{error}"
        );
        assert_eq!(fs::read_to_string(&notes).unwrap(), text);
        // A device is refused without reading it (/dev/full reads without end).
        let error = claim_journal(Path::new("/dev/full"), true).unwrap_err();
        assert_eq!(
            error.to_string(),
            "/dev/full: is not a regular file: --append adds this run to a journal"
        );
        // A journal, an empty file and no file at all are taken.
        let journal = dir.path().join("run.jsonl");
        journal_of_two_configs(&journal);
        let empty = dir.path().join("empty.jsonl");
        fs::write(&empty, "").unwrap();
        for path in [&journal, &empty, &dir.path().join("new.jsonl")] {
            claim_journal(path, true).unwrap();
        }
    }

    #[test]
    fn of_runs_appended_one_after_another_the_last_is_given_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        journal_of_two_configs(&path);
        let second = journal_of_two_configs(&path);
        let read = read_journal(&path).unwrap();
        assert_eq!(read.results, second.results);
        assert!(
            read.warnings[0]
                .ends_with("holds 2 runs, appended one after another; the last is shown")
        );
    }
}
