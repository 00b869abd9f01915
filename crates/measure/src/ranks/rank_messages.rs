//! What a rank process and its coordinator say to each other, one JSON line at a time:
//! the coordinator sends the [`RankJob`] first, then `go` before each epoch (the barrier
//! opens) and closes the rank's stdin when the config is done; the rank answers on its
//! stdout with [`FromRank`] messages. A rank that asks for a sweep waits for the `go`
//! that says it is done.

use serde::{Deserialize, Serialize};

use crate::rank_merge::RanksSummary;
use crate::results::{BatchRecord, EpochResult};
use loaderbench_engine::loader::{Shard, WorkerStartup};
use loaderbench_engine::plan::Plan;

/// Sent before an epoch: every rank that has it starts the epoch.
pub const GO: &str = "go";

/// What one rank process measures: config `config` of `plan`, on `shard`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankJob {
    pub plan: Plan,
    pub config: usize,
    pub shard: Shard,
}

/// A rank's messages, in order: `Ready`, then per epoch any `WorkerReady` and `Batch`,
/// a `Sweep` after the last batch, followed by `Epoch`, and `Done` once stdin closes;
/// `Failed` ends it at any point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "message")]
pub enum FromRank {
    /// The dataset is open and the loader built; waiting for the first `go`.
    Ready,
    WorkerReady {
        startup: WorkerStartup,
    },
    Batch {
        batch: BatchRecord,
    },
    /// The epoch's last batch is in and the workers that end with the epoch are still
    /// there: the coordinator sweeps the memory of every process, then sends `go`.
    Sweep,
    Epoch {
        result: Box<EpochResult>,
        started_unix_s: f64,
        finished_unix_s: f64,
    },
    Done {
        summary: RanksSummary,
    },
    Failed {
        error: String,
    },
}
