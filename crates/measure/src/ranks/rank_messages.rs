//! What a rank process and its coordinator say to each other, one JSON line at a time:
//! the coordinator sends the [`RankJob`] first, then `go` before each epoch (the barrier
//! opens) and closes the rank's stdin when the config is done; the rank answers on its
//! stdout with [`FromRank`] messages.

use serde::{Deserialize, Serialize};

use crate::loader::{Shard, WorkerMemory, WorkerStartup};
use crate::plan::Plan;
use crate::results::{BatchRecord, EpochResult};

/// Sent before an epoch: every rank that has it starts the epoch.
pub const GO: &str = "go";

/// What one rank process measures: config `config` of `plan`, on `shard`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankJob {
    pub plan: Plan,
    pub config: usize,
    pub shard: Shard,
}

/// A rank's messages, in order: `Ready`, then per epoch any `WorkerReady` and `Batch`
/// followed by `Epoch`, and `Done` once stdin closes; `Failed` ends it at any point.
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

/// What a config's processes came to, for its result: one rank's or all ranks' together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RanksSummary {
    pub pin_memory_effective: bool,
    pub intra_op_threads: i32,
    pub rss_before_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    pub workers: Vec<WorkerMemory>,
}

impl RanksSummary {
    /// All ranks together: memory summed, workers listed rank after rank.
    pub fn total(ranks: Vec<RanksSummary>) -> Option<RanksSummary> {
        let sum = |values: Vec<Option<u64>>| values.into_iter().sum::<Option<u64>>();
        let first = ranks.first()?.clone();
        Some(RanksSummary {
            rss_before_bytes: sum(ranks.iter().map(|r| r.rss_before_bytes).collect()),
            peak_rss_bytes: sum(ranks.iter().map(|r| r.peak_rss_bytes).collect()),
            workers: ranks.into_iter().flat_map(|r| r.workers).collect(),
            ..first
        })
    }
}
