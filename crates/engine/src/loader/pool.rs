//! The worker pool as the loader sees it: one small trait that thread pools and process
//! pools implement, so an [`Epoch`](super::Epoch) drives every kind of worker the same
//! way (send a task to worker i, receive messages on one channel, drop to shut down),
//! and the messages that travel over it.

use std::time::Duration;

use crossbeam_channel::Receiver;

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

/// A running set of workers. Dropping it stops every worker.
pub trait WorkerPool: Send {
    fn len(&self) -> usize;

    /// Queues a task on worker `worker`.
    fn send(&self, worker: usize, task: Task) -> Result<()>;

    /// The channel every worker reports on.
    fn results(&self) -> &Receiver<WorkerMessage>;

    /// Don't wait for workers when the pool is dropped: one is known to be hung.
    fn abandon_on_drop(&mut self);

    /// Each worker process's id; empty for thread workers.
    fn pids(&self) -> Vec<u32>;
}
