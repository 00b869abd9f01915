//! Thread workers: named threads (`loader-worker-N`) that share the dataset, each taking
//! batch tasks from its own queue and sending results to the loader over one channel.
//! Every worker announces when it is ready (its start-up time) and turns a panic into an
//! error message rather than dying silently. Dropping the pool closes the queues and
//! joins every thread that stops within [`SHUTDOWN_GRACE`]; a thread stuck inside a
//! read (which no one can interrupt) is left detached rather than hanging the loader.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, unbounded};

use super::collate::build_batch;
use super::pool::{Task, WorkerMessage, WorkerPool};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::transform::Pipeline;

/// How long dropping a pool waits for its workers to finish the batch in hand.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

struct Worker {
    tasks: Sender<Task>,
    /// Disconnects when the thread ends, however it ends.
    stopped: Receiver<()>,
    thread: JoinHandle<()>,
}

/// A set of running worker threads.
pub struct ThreadPool {
    workers: Vec<Worker>,
    results: Receiver<WorkerMessage>,
    shutdown_grace: Duration,
}

impl ThreadPool {
    /// Starts `count` workers.
    pub fn start(
        count: usize,
        dataset: &Arc<dyn Dataset>,
        pipeline: &Arc<Pipeline>,
    ) -> Result<Self> {
        let (results_tx, results) = unbounded();
        let workers = (0..count)
            .map(|id| spawn_worker(id, dataset.clone(), pipeline.clone(), results_tx.clone()))
            .collect::<Result<Vec<_>>>()?;
        Ok(ThreadPool {
            workers,
            results,
            shutdown_grace: SHUTDOWN_GRACE,
        })
    }
}

impl WorkerPool for ThreadPool {
    fn len(&self) -> usize {
        self.workers.len()
    }

    fn send(&self, worker: usize, task: Task) -> Result<()> {
        self.workers[worker]
            .tasks
            .send(task)
            .map_err(|_| Error::run(format!("loader-worker-{worker} has stopped")))
    }

    fn results(&self) -> &Receiver<WorkerMessage> {
        &self.results
    }

    fn abandon_on_drop(&mut self) {
        self.shutdown_grace = Duration::ZERO;
    }

    fn pids(&self) -> Vec<u32> {
        Vec::new()
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        let deadline = Instant::now() + self.shutdown_grace;
        // Closing every queue before waiting lets all workers wind down at once.
        let running: Vec<(Receiver<()>, JoinHandle<()>)> = self
            .workers
            .drain(..)
            .map(|worker| (worker.stopped, worker.thread))
            .collect();
        for (stopped, thread) in running {
            let ended = matches!(
                stopped.recv_deadline(deadline),
                Err(RecvTimeoutError::Disconnected)
            );
            if ended {
                // The thread has ended (its end of `stopped` is gone), so joining cannot
                // block. A worker only panics outside `catch_unwind` when its results
                // channel is gone, i.e. when the pool is going away; nothing to report.
                let _ = thread.join();
            }
            // Otherwise the thread is stuck in a read; it is detached, and exits when the
            // read returns and it finds its queue closed.
        }
    }
}

fn spawn_worker(
    id: usize,
    dataset: Arc<dyn Dataset>,
    pipeline: Arc<Pipeline>,
    results: Sender<WorkerMessage>,
) -> Result<Worker> {
    let (tasks, queue) = unbounded::<Task>();
    let (stopped_tx, stopped) = crossbeam_channel::bounded::<()>(0);
    let asked_at = Instant::now();
    let thread = std::thread::Builder::new()
        .name(format!("loader-worker-{id}"))
        .spawn(move || {
            let _stopped = stopped_tx;
            serve(id, asked_at, &*dataset, &pipeline, queue, results);
        })
        .map_err(|err| {
            Error::run_caused(format!("could not start loader-worker-{id}: {err}"), err)
        })?;
    Ok(Worker {
        tasks,
        stopped,
        thread,
    })
}

fn serve(
    worker: usize,
    asked_at: Instant,
    dataset: &dyn Dataset,
    pipeline: &Pipeline,
    queue: Receiver<Task>,
    results: Sender<WorkerMessage>,
) {
    // One intra-op thread per worker, as PyTorch's workers have: the count is kept per
    // thread once set, so this neither leaks into the consumer nor follows its setting.
    tch::set_num_threads(1);
    let ready = WorkerMessage::Ready {
        worker,
        startup: asked_at.elapsed(),
    };
    if results.send(ready).is_err() {
        return;
    }
    for task in queue {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            build_batch(dataset, pipeline, &task.indices, task.seed)
        }));
        let message = match outcome {
            Ok(Ok(built)) => WorkerMessage::Batch {
                epoch: task.epoch,
                batch: task.batch,
                built: Box::new(built),
            },
            Ok(Err(error)) => WorkerMessage::Failed {
                worker,
                epoch: task.epoch,
                batch: task.batch,
                error,
            },
            Err(panic) => WorkerMessage::Failed {
                worker,
                epoch: task.epoch,
                batch: task.batch,
                error: Error::run(format!(
                    "loader-worker-{worker} crashed: {}",
                    panic_message(&panic)
                )),
            },
        };
        if results.send(message).is_err() {
            return;
        }
    }
}

pub(super) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
