//! The reference runtime: configs with `runtime: pytorch` are measured by the real
//! `torch.utils.data.DataLoader`. [`Reference::prepare`] writes the script shipped in
//! the binary (`python/reference_loader.py`) and, for the synthetic dataset, the very
//! bytes our loader reads (as an IDX pair) to a private temporary folder;
//! [`Reference::measure`] runs one config (one repeat) as a Python child process and
//! turns the JSON lines it streams into the same batches, worker start-ups and epochs
//! that our loader produces, ending in a [`ConfigResult`]. Cancelling or failing kills
//! the process group, so PyTorch's worker processes go with it.

mod idx_file;
mod protocol;
mod python;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::analysis::disturbance;
use crate::bench::meter::{self, Interference};
use crate::cancel::CancelToken;
use crate::dataset::{self, Dataset, DatasetKind};
use crate::error::{Error, Result, UserCodeError};
use crate::loader::{StageTimes, WorkerStartup};
use crate::plan::Plan;
use crate::results::{BatchRecord, ConfigResult, EpochResult, PythonEnvironment};

pub use idx_file::write_idx;
pub use protocol::{DatasetRequest, Message, Request, UserFrame, Versions};
pub use python::{PYTHON_VAR, python_path};

use python::{Line, PythonProcess};

/// The script, shipped inside the binary so that it works from any directory.
const SCRIPT: &str = include_str!("../../python/reference_loader.py");

/// How often a waiting measurement checks for cancellation.
const POLL: Duration = Duration::from_millis(50);

/// Importing torch and building the dataset come before the first report; they get
/// this much on top of the worker timeout.
const STARTUP_ALLOWANCE: Duration = Duration::from_secs(60);

/// Beyond the worker timeout, which PyTorch itself enforces and reports better.
const SILENCE_ALLOWANCE: Duration = Duration::from_secs(10);

/// What a measurement reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum ReferenceEvent {
    WorkerReady(WorkerStartup),
    /// A batch reached the device; `epoch` is 0 for the warm-up epoch.
    Batch {
        epoch: usize,
        batch: BatchRecord,
    },
    Epoch(EpochResult),
    /// Something the user should know; the measurement goes on.
    Note(String),
}

/// The script and the dataset's files, ready for any number of configs of one plan.
pub struct Reference {
    folder: TempFolder,
    python: PathBuf,
    dataset: DatasetRequest,
    /// Batches delivered in every config measured so far: before the run's first, a
    /// failing user dataset is bad input; after it, a failed run.
    batches: Cell<usize>,
}

impl Reference {
    /// Writes the script and, for the synthetic dataset, `dataset`'s samples as IDX
    /// (`dataset` is our engine's view of the plan's dataset; a python one has none).
    pub fn prepare(plan: &Plan, dataset: Option<&Arc<dyn Dataset>>) -> Result<Reference> {
        let folder = TempFolder::create()?;
        std::fs::write(folder.script(), SCRIPT)
            .map_err(|err| Error::file(folder.script(), err.to_string()))?;
        let spec = &plan.dataset;
        let path = || {
            spec.path
                .clone()
                .ok_or_else(|| Error::value("dataset.path: this dataset needs a path"))
        };
        let dataset = match spec.kind {
            DatasetKind::Synthetic => {
                let dataset = dataset.ok_or_else(|| {
                    Error::run("the synthetic dataset was not generated before the run")
                })?;
                let (images, labels) = write_idx(dataset.as_ref(), &folder.path)?;
                DatasetRequest::Idx { images, labels }
            }
            DatasetKind::Idx => {
                let (images, labels) = dataset::idx_files(&path()?, spec.labels.as_deref())?;
                DatasetRequest::Idx { images, labels }
            }
            DatasetKind::Npy => DatasetRequest::Npy {
                path: path()?,
                labels: spec.labels.clone(),
            },
            DatasetKind::ImageFolder => DatasetRequest::ImageFolder {
                root: path()?,
                channels: spec.channels,
                image_size: spec.image_size,
            },
            DatasetKind::Python => user_dataset(spec)?,
        };
        Ok(Reference {
            folder,
            python: plan.python.clone().unwrap_or_else(python_path),
            dataset,
            batches: Cell::new(0),
        })
    }

    /// The Python that runs the script.
    pub fn python(&self) -> &Path {
        &self.python
    }

    /// Measures config `index` of `plan` once with PyTorch's DataLoader.
    pub fn measure(
        &self,
        plan: &Plan,
        index: usize,
        repeat: usize,
        cancel: &CancelToken,
        report: &mut dyn FnMut(ReferenceEvent),
    ) -> Result<ConfigResult> {
        let config = &plan.configs[index];
        let request = Request::new(plan, config, self.dataset.clone());
        let request = serde_json::to_string(&request)
            .map_err(|err| Error::run(format!("cannot encode the request: {err}")))?;
        let process = PythonProcess::start(&self.python, &self.folder.script(), &request)?;
        let worker_timeout = Duration::from_secs_f64(plan.worker_timeout_s);
        let mut session = Session {
            process,
            python: &self.python,
            silence_limit: worker_timeout + STARTUP_ALLOWANCE,
            ready: None,
            t0: 0.0,
            timeline: Vec::new(),
            startups: Vec::new(),
            warmup: None,
            epochs: Vec::new(),
            reading: None,
            interference: Vec::new(),
            batches: self.batches.get(),
        };
        let followed = session.follow(cancel, worker_timeout, report);
        self.batches.set(session.batches);
        let peak_rss_bytes = followed?;
        let ready = session.ready.unwrap_or(Ready {
            intra_op_threads: 0,
            pin_memory_effective: false,
            rss_bytes: None,
            versions: None,
        });
        let verdict = disturbance::judge(&session.interference);
        Ok(ConfigResult {
            config_index: index,
            repeat,
            label: plan.label(index),
            config: config.clone(),
            other_load_cores: verdict.other_load_cores,
            disturbed: verdict.disturbed,
            warmup: session.warmup,
            epochs: session.epochs,
            pin_memory_effective: ready.pin_memory_effective,
            intra_op_threads: ready.intra_op_threads,
            rss_before_bytes: ready.rss_bytes,
            peak_rss_bytes,
            // PyTorch's worker processes are not measured one by one.
            workers: Vec::new(),
            python: ready.versions.map(|v| PythonEnvironment {
                executable: self.python.clone(),
                python: v.python,
                torch: v.torch,
                torchvision: v.torchvision,
            }),
        })
    }
}

/// What the script said once it was ready.
struct Ready {
    intra_op_threads: i32,
    pin_memory_effective: bool,
    rss_bytes: Option<u64>,
    versions: Option<Versions>,
}

/// The request for a user's python dataset, once its module is known to exist.
fn user_dataset(spec: &dataset::DatasetSpec) -> Result<DatasetRequest> {
    dataset::python::check(spec)?;
    let (Some(path), Some(factory)) = (&spec.path, &spec.factory) else {
        return Err(Error::value(
            "dataset: a python dataset needs a path and a factory",
        ));
    };
    if !path.is_file() {
        return Err(Error::file(path, "no such file"));
    }
    Ok(DatasetRequest::Python {
        path: path.clone(),
        factory: factory.clone(),
        args: spec.args.clone(),
        collate: spec.collate.clone(),
    })
}

/// One running script and what it has reported so far.
struct Session<'a> {
    process: PythonProcess,
    python: &'a Path,
    silence_limit: Duration,
    ready: Option<Ready>,
    /// The current epoch's start on the script's clock.
    t0: f64,
    timeline: Vec<BatchRecord>,
    startups: Vec<WorkerStartup>,
    warmup: Option<EpochResult>,
    epochs: Vec<EpochResult>,
    /// The meter's reading when the current epoch's start was reported.
    reading: Option<meter::Reading>,
    /// What the meter saw in each measured epoch, with its length.
    interference: Vec<(f64, Interference)>,
    /// Batches that reached the device in this run so far.
    batches: usize,
}

impl Session<'_> {
    /// Reads reports until `done`; returns the script's peak RSS.
    fn follow(
        &mut self,
        cancel: &CancelToken,
        worker_timeout: Duration,
        report: &mut dyn FnMut(ReferenceEvent),
    ) -> Result<Option<u64>> {
        let mut heard = Instant::now();
        loop {
            if cancel.is_cancelled() {
                self.process.kill();
                return Err(Error::Cancelled);
            }
            let line = match self.process.next_line(POLL) {
                Some(Line::Text(line)) => line,
                Some(Line::Closed) => return Err(self.ended_early()),
                None if heard.elapsed() > self.silence_limit => {
                    self.process.kill();
                    return Err(Error::run(format!(
                        "the PyTorch DataLoader reported nothing for {:.0} s; stopped it",
                        self.silence_limit.as_secs_f64()
                    )));
                }
                None => continue,
            };
            heard = Instant::now();
            let Some(message) = Message::parse(&line) else {
                continue;
            };
            let message = message.map_err(Error::run)?;
            if let Some(done) = self.take(message, report)? {
                return Ok(done);
            }
            if self.ready.is_some() {
                self.silence_limit = worker_timeout + SILENCE_ALLOWANCE;
            }
        }
    }

    /// Takes one report; `Some(peak RSS)` once the script is done.
    fn take(
        &mut self,
        message: Message,
        report: &mut dyn FnMut(ReferenceEvent),
    ) -> Result<Option<Option<u64>>> {
        match message {
            Message::Ready {
                intra_op_threads,
                pin_memory_effective,
                rss_bytes,
                versions,
            } => {
                self.ready = Some(Ready {
                    intra_op_threads,
                    pin_memory_effective,
                    rss_bytes,
                    versions: Some(versions),
                });
            }
            Message::Note { message } => report(ReferenceEvent::Note(message)),
            Message::EpochStart { t0, .. } => {
                self.t0 = t0;
                self.reading = Some(meter::Reading::now());
            }
            Message::WorkerReady { worker, at } => {
                let startup = WorkerStartup {
                    worker,
                    seconds: (at - self.t0).max(0.0),
                };
                self.startups.push(startup);
                report(ReferenceEvent::WorkerReady(startup));
            }
            Message::Batch {
                epoch,
                index,
                at_s,
                samples,
                wait_s,
                to_device_s,
            } => {
                let batch = BatchRecord {
                    index,
                    at_s,
                    samples,
                    stages: StageTimes {
                        wait_s,
                        to_device_s,
                        ..StageTimes::default()
                    },
                };
                self.timeline.push(batch);
                self.batches += 1;
                report(ReferenceEvent::Batch { epoch, batch });
            }
            Message::Epoch { epoch, seconds } => {
                let timeline = std::mem::take(&mut self.timeline);
                let startups = std::mem::take(&mut self.startups);
                let mut result = EpochResult::from_batches(epoch, seconds, timeline, startups);
                let seen = self.reading.take().and_then(|r| r.interference_since());
                result.record(seen);
                if let (Some(seen), true) = (seen, epoch > 0) {
                    self.interference.push((seconds, seen));
                }
                report(ReferenceEvent::Epoch(result.clone()));
                if epoch == 0 {
                    self.warmup = Some(result);
                } else {
                    self.epochs.push(result);
                }
            }
            Message::Done { peak_rss_bytes } => return Ok(Some(peak_rss_bytes)),
            Message::Error {
                message,
                bad_input,
                environment,
                user,
            } => {
                return Err(if let Some(UserFrame { file, line }) = user {
                    Error::from(UserCodeError {
                        file,
                        line,
                        problem: message,
                        bad_input: bad_input || self.batches == 0,
                    })
                } else if environment {
                    Error::file(self.python, message)
                } else if bad_input {
                    Error::value(format!("pytorch runtime: {message}"))
                } else {
                    Error::run(format!("PyTorch DataLoader: {message}"))
                });
            }
        }
        Ok(None)
    }

    /// The error for a script that stopped without saying why: its last stderr line.
    fn ended_early(&mut self) -> Error {
        self.process.kill();
        self.process.settle_stderr(Duration::from_secs(1));
        let detail = self
            .process
            .last_stderr_line()
            .map_or_else(|| "no error output".to_owned(), |l| l.trim().to_owned());
        Error::run(format!(
            "the PyTorch reference runtime ({}) exited before finishing: {detail}",
            self.python.display()
        ))
    }
}

/// A private temporary folder, removed when dropped.
struct TempFolder {
    path: PathBuf,
}

impl TempFolder {
    fn create() -> Result<TempFolder> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "loaderbench-reference-{}-{nanos}",
            std::process::id()
        ));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder
            .create(&path)
            .map_err(|err| Error::file(&path, format!("cannot create: {err}")))?;
        Ok(TempFolder { path })
    }

    fn script(&self) -> PathBuf {
        self.path.join("reference_loader.py")
    }
}

impl Drop for TempFolder {
    fn drop(&mut self) {
        // A folder left in the temporary directory is harmless.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
