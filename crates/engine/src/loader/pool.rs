//! The worker pool as the loader sees it: one small trait that thread pools and process
//! pools implement, so an [`Epoch`](super::Epoch) drives every kind of worker the same
//! way (send a task to worker i, receive messages on one channel, drop to shut down),
//! and the messages that travel over it.

use std::time::Duration;

use crossbeam_channel::Receiver;
use serde::{Deserialize, Serialize};

use super::collate::BuiltBatch;
use crate::error::{Error, Result};

/// Work for one batch.
pub struct Task {
    pub epoch: u64,
    pub batch: usize,
    pub indices: Vec<usize>,
    pub seed: u64,
}

/// What a worker sends back.
pub enum WorkerMessage {
    Ready {
        worker: usize,
        startup: Duration,
    },
    Batch {
        epoch: u64,
        batch: usize,
        built: Box<BuiltBatch>,
    },
    Failed {
        worker: usize,
        epoch: u64,
        batch: usize,
        error: Error,
    },
    /// The worker is gone (its process ended or could not start): the epoch cannot finish.
    Died {
        error: Error,
    },
}

/// Memory of one worker process, read at the end of an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorkerMemory {
    pub worker: usize,
    pub pid: u32,
    /// Resident set size: every page the process has in memory, shared ones included.
    pub rss_bytes: u64,
    /// Proportional set size: shared pages divided among the processes sharing them, so
    /// summing it over processes does not count them twice. The extra memory a worker
    /// costs.
    pub pss_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
}

/// A running set of workers. Dropping it stops every worker.
pub trait WorkerPool: Send {
    fn len(&self) -> usize;

    /// Queues a task on worker `worker`.
    fn send(&self, worker: usize, task: Task) -> Result<()>;

    /// The channel every worker reports on.
    fn results(&self) -> &Receiver<WorkerMessage>;

    /// Don't wait for workers when the pool is dropped: one is known to be hung.
    fn abandon_on_drop(&mut self);

    /// Each worker process's memory; empty for thread workers, which have none of their own.
    fn memory(&self) -> Vec<WorkerMemory>;

    /// Each worker process's id; empty for thread workers.
    fn pids(&self) -> Vec<u32>;
}
