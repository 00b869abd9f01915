//! What a run reports: the [`Runner`](crate::spawn) sweeps a plan's configs on a background
//! thread and reports everything as [`Event`]s over an unbounded channel, so a slow or
//! hidden consumer never slows a measurement. Every run ends with exactly one of
//! `Finished`, `Failed` or `Cancelled`, each carrying all results measured so far.

use serde::{Deserialize, Serialize};

use crate::results::{BatchRecord, ConfigResult, EpochResult, RunResult};
use loaderbench_engine::error::FieldPath;
use loaderbench_engine::loader::WorkerStartup;

/// Batch events are sent at most this often (and for every epoch's first batch): enough
/// for a moving progress line, and the same small cost in the CLI and the app.
pub const BATCH_EVENT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(250);

/// What the runner reports, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum Event {
    /// The dataset is being opened: `checked` of its `total` files checked so far. Sent a
    /// few times a second while an image folder's files are checked, before `Started`.
    DatasetOpening { checked: usize, total: usize },
    /// The run began; `result` holds the plan's configs and the machine, no results yet.
    Started {
        result: Box<RunResult>,
        batches_per_epoch: usize,
    },
    /// A config (one repeat of it) began.
    ConfigStarted { config: usize, repeat: usize },
    /// A worker became ready.
    WorkerReady {
        config: usize,
        startup: WorkerStartup,
    },
    /// A batch reached the device. `epoch` is 0 for the warm-up epoch.
    Batch {
        config: usize,
        repeat: usize,
        epoch: usize,
        batch: BatchRecord,
    },
    /// An epoch finished.
    EpochFinished {
        config: usize,
        repeat: usize,
        result: Box<EpochResult>,
    },
    /// A config (one repeat of it) finished and was written to the journal.
    ConfigFinished { result: Box<ConfigResult> },
    /// Something the user should know; the run goes on.
    Warning {
        config: Option<usize>,
        message: String,
    },
    /// The run finished.
    Finished { result: Box<RunResult> },
    /// The run stopped with an error; `bad_input` when the user's input is to blame,
    /// and `field` when one field of the preset is.
    Failed {
        error: String,
        bad_input: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field: Option<FieldPath>,
        result: Box<RunResult>,
    },
    /// The run was cancelled.
    Cancelled { result: Box<RunResult> },
}

impl Event {
    /// The final result, if this event ends the run.
    pub fn final_result(&self) -> Option<&RunResult> {
        match self {
            Event::Finished { result }
            | Event::Failed { result, .. }
            | Event::Cancelled { result } => Some(result),
            _ => None,
        }
    }
}
