//! One script process of a measurement (the only one with one rank, one per rank of a
//! distributed job otherwise) and what it has reported so far: [`Session::take`] turns
//! each report into loaderbench's batches, worker start-ups and epochs, reads the
//! interference meter around every epoch, and turns the script's errors into ours.

use std::path::Path;

use super::PytorchEvent;
use super::python_process::PythonProcess;
use super::script_messages::{Message, UserFrame, Versions};
use crate::meter::{self, Interference};
use crate::results::{BatchRecord, EpochResult};
use crate::timeline_budget::TimelineBudget;
use loaderbench_engine::error::{Error, Result, UserCodeError};
use loaderbench_engine::loader::{StageTimes, WorkerStartup};
use loaderbench_engine::preset::Runtime;

/// What the script said once it was ready.
#[derive(Debug, Clone, Default)]
pub struct Ready {
    pub intra_op_threads: i32,
    pub pin_memory_effective: bool,
    pub rss_bytes: Option<u64>,
    /// The Python, torch and torchvision it runs with.
    pub versions: Option<Versions>,
    /// Samples in the whole dataset, where it has a length.
    pub dataset_samples: Option<usize>,
    /// The bytes of Python objects the dataset holds.
    pub dataset_object_bytes: Option<u64>,
}

/// One running script and what it has reported so far.
pub struct Session {
    /// This script's rank of `world`; 0 of 1 without ranks.
    pub rank: usize,
    world: usize,
    pub process: PythonProcess,
    /// The runtime it measures: its errors name it.
    pub runtime: Runtime,
    pub ready: Option<Ready>,
    /// The current epoch's start on the script's clock.
    t0: f64,
    timeline: Vec<BatchRecord>,
    startups: Vec<WorkerStartup>,
    /// Every epoch the script finished, the warm-up (epoch 0) first when there is one.
    pub epochs: Vec<EpochResult>,
    /// Keeps `epochs`' timelines within the config's bound.
    timeline_budget: TimelineBudget,
    /// With ranks, for each of `epochs`: when the rank left the barrier and when it
    /// ended the epoch (Unix seconds).
    pub bounds: Vec<(f64, f64)>,
    /// The meter's reading when the current epoch's start was reported.
    reading: Option<meter::Reading>,
    /// What the meter saw in each measured epoch, with its length.
    pub interference: Vec<(f64, Interference)>,
    /// The script waits for `go` before its next epoch.
    pub waiting: bool,
    /// The script waits for `go` after a sweep of its processes' memory.
    pub sweep_asked: bool,
    /// Where the script stands: running, or done (with its peak RSS where it knew it).
    pub state: ScriptState,
    /// Batches delivered in the run so far, this script's included: before the run's
    /// first, a failing user dataset is bad input; after it, a failed run.
    pub batches: usize,
}

/// Whether a script has said it is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptState {
    Running,
    /// The script said it is done, with its peak RSS where it could read it.
    Done {
        peak_rss_bytes: Option<u64>,
    },
}

impl Session {
    /// What measures, as errors name it.
    pub fn loader(&self) -> &'static str {
        match self.runtime {
            Runtime::Spdl => "SPDL pipeline",
            Runtime::Pytorch | Runtime::Loaderbench => "PyTorch DataLoader",
        }
    }

    /// Whether the script is still running (has not said it is done).
    pub fn running(&self) -> bool {
        self.state == ScriptState::Running
    }

    /// The peak RSS the script reported when it was done.
    pub fn peak_rss_bytes(&self) -> Option<u64> {
        match self.state {
            ScriptState::Done { peak_rss_bytes } => peak_rss_bytes,
            ScriptState::Running => None,
        }
    }

    /// A session for `rank` of `world`, in a run that has delivered `batches` so far.
    pub fn new(
        rank: usize,
        world: usize,
        process: PythonProcess,
        runtime: Runtime,
        batches: usize,
    ) -> Session {
        Session {
            rank,
            world,
            process,
            runtime,
            ready: None,
            t0: 0.0,
            timeline: Vec::new(),
            startups: Vec::new(),
            epochs: Vec::new(),
            timeline_budget: TimelineBudget::default(),
            bounds: Vec::new(),
            reading: None,
            interference: Vec::new(),
            waiting: false,
            sweep_asked: false,
            state: ScriptState::Running,
            batches,
        }
    }

    /// Takes one report; worker start-ups and batches go to `report` as they come.
    pub fn take(
        &mut self,
        message: Message,
        python: &Path,
        report: &mut dyn FnMut(PytorchEvent),
    ) -> Result<()> {
        match message {
            Message::Ready {
                intra_op_threads,
                pin_memory_effective,
                rss_bytes,
                versions,
                dataset_samples,
                dataset_object_bytes,
            } => {
                self.ready = Some(Ready {
                    intra_op_threads,
                    pin_memory_effective,
                    rss_bytes,
                    versions: Some(versions),
                    dataset_samples,
                    dataset_object_bytes,
                });
            }
            Message::Note { message } => report(PytorchEvent::Note(message)),
            Message::EpochReady { .. } => self.waiting = true,
            Message::Sweep { .. } => self.sweep_asked = true,
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
                report(PytorchEvent::WorkerReady(startup));
            }
            Message::Batch {
                epoch,
                index,
                at_s,
                samples,
                wait_s,
                to_device_s,
                step_s,
            } => {
                let batch = BatchRecord {
                    index,
                    at_s,
                    samples,
                    stages: StageTimes {
                        wait_s,
                        to_device_s,
                        step_s,
                        ..StageTimes::default()
                    },
                };
                self.timeline.push(batch);
                self.batches += 1;
                report(PytorchEvent::Batch { epoch, batch });
            }
            Message::Epoch {
                epoch,
                seconds,
                window,
                epoch_size,
            } => {
                let timeline = std::mem::take(&mut self.timeline);
                let startups = std::mem::take(&mut self.startups);
                let mut result = EpochResult::from_window(
                    epoch,
                    seconds,
                    timeline,
                    startups,
                    window.zip(epoch_size),
                );
                let seen = self.reading.take().and_then(|r| r.interference_since());
                result.record(seen);
                if let (Some(seen), true) = (seen, epoch > 0) {
                    self.interference.push((seconds, seen));
                }
                self.timeline_budget.apply(&mut result);
                self.epochs.push(result);
            }
            Message::RankEpoch {
                started_unix_s,
                finished_unix_s,
                ..
            } => self.bounds.push((started_unix_s, finished_unix_s)),
            Message::Done { peak_rss_bytes } => self.state = ScriptState::Done { peak_rss_bytes },
            Message::Error {
                message,
                bad_input,
                environment,
                user,
                shard,
            } => {
                return Err(if let Some(shard) = shard {
                    shard_error(shard, message, bad_input || self.batches == 0)
                } else if let Some(UserFrame { file, line }) = user {
                    Error::from(UserCodeError {
                        file,
                        line,
                        problem: message,
                        bad_input: bad_input || self.batches == 0,
                    })
                } else if environment {
                    Error::file(python, message)
                } else if bad_input {
                    Error::value(format!("{} runtime: {message}", self.runtime.name()))
                } else if self.world > 1 {
                    Error::run(format!(
                        "rank {} failed: {}: {message}",
                        self.rank,
                        self.loader()
                    ))
                } else {
                    Error::run(format!("{}: {message}", self.loader()))
                });
            }
        }
        Ok(())
    }
}

/// A shard that could not be read: bad input (exit 2) when the shard or its contents
/// are at fault, or when storage failed before the run's first batch (a wrong host);
/// a failed run when storage went away in the middle of it.
fn shard_error(shard: String, problem: String, bad_input: bool) -> Error {
    if bad_input {
        Error::file(shard, problem)
    } else {
        Error::run(format!("{shard}: {problem}"))
    }
}
