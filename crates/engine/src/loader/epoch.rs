//! One epoch of the loader, `iter(loader)`'s state machine: it hands out batch tasks
//! round-robin (`prefetch_factor × num_workers` ahead, one more per batch taken), takes
//! results as they come, yields them in order or as they arrive, reports worker
//! start-ups, notices hung or dead workers, and copies each batch to the device.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use tch::Tensor;

use super::collate::{BuiltBatch, build_batch};
use super::pool::{Task, WorkerMessage};
use super::sampler;
use super::{Batch, CANCEL_POLL, Loader, StageTimes, WorkerStartup};
use crate::device;
use crate::error::{Error, Result};

/// One pass over the dataset.
pub struct Epoch<'a> {
    loader: &'a mut Loader,
    epoch: u64,
    /// Each batch's indices until its task is sent.
    batches: Vec<Option<Vec<usize>>>,
    next_to_send: usize,
    next_to_yield: usize,
    yielded: usize,
    next_worker: usize,
    /// The worker each batch must go to (a sharded dataset's streams), instead of the
    /// next one round-robin.
    assigned: Option<Vec<usize>>,
    /// The worker each sent batch went to.
    owner: Vec<usize>,
    /// Batches that arrived ahead of their turn (in-order delivery).
    arrived: BTreeMap<usize, Box<BuiltBatch>>,
    awaiting_ready: Vec<usize>,
    startups: VecDeque<WorkerStartup>,
    /// Cut short with nothing left in flight (see [`Epoch::drain_in_flight`]).
    drained: bool,
}

impl<'a> Epoch<'a> {
    /// Starts epoch number `epoch` of `loader` over `batches` (each batch's sample
    /// indices), each sent to its worker in `assigned` if given, else round-robin;
    /// `started_workers` are the workers started for it, whose start-ups it reports.
    /// Sends the first `prefetch_factor × num_workers` tasks.
    pub(super) fn start(
        loader: &'a mut Loader,
        epoch: u64,
        batches: Vec<Vec<usize>>,
        assigned: Option<Vec<usize>>,
        started_workers: Vec<usize>,
    ) -> Result<Epoch<'a>> {
        let mut epoch = Epoch {
            loader,
            epoch,
            batches: batches.into_iter().map(Some).collect(),
            next_to_send: 0,
            next_to_yield: 0,
            yielded: 0,
            next_worker: 0,
            assigned,
            owner: Vec::new(),
            arrived: BTreeMap::new(),
            awaiting_ready: started_workers,
            startups: VecDeque::new(),
            drained: false,
        };
        epoch.owner = vec![0; epoch.batches.len()];
        epoch.prefetch()?;
        Ok(epoch)
    }

    /// Whether every batch of the epoch has been handed out: the next call to `next`
    /// ends it (and stops workers that do not persist).
    pub fn all_delivered(&self) -> bool {
        self.yielded == self.batches.len()
    }

    /// Worker start-ups reported since the last call.
    pub fn take_worker_startups(&mut self) -> Vec<WorkerStartup> {
        self.startups.drain(..).collect()
    }

    /// The process id of each worker process (empty for thread workers).
    pub fn worker_pids(&self) -> Vec<u32> {
        self.loader
            .pool
            .as_ref()
            .map_or_else(Vec::new, |p| p.pids())
    }

    fn prefetch(&mut self) -> Result<()> {
        let settings = &self.loader.settings;
        let outstanding = settings.prefetch_factor * settings.num_workers;
        for _ in 0..outstanding {
            self.send_next_task()?;
        }
        Ok(())
    }

    fn send_next_task(&mut self) -> Result<()> {
        let Some(pool) = &self.loader.pool else {
            return Ok(());
        };
        let Some(indices) = self
            .batches
            .get_mut(self.next_to_send)
            .and_then(Option::take)
        else {
            return Ok(());
        };
        let batch = self.next_to_send;
        let worker = match &self.assigned {
            Some(assigned) => assigned[batch],
            None => {
                let worker = self.next_worker;
                self.next_worker = (worker + 1) % pool.len();
                worker
            }
        };
        self.owner[batch] = worker;
        self.next_to_send += 1;
        let seed = sampler::batch_seed(self.loader.settings.seed, self.epoch, batch);
        pool.send(
            worker,
            Task {
                epoch: self.epoch,
                batch,
                indices,
                seed,
            },
        )
    }

    fn next_batch(&mut self) -> Result<Batch> {
        let wait_started = Instant::now();
        let (index, built, transfer) = if self.loader.pool.is_some() {
            self.receive()?
        } else {
            self.build_inline()?
        };
        let wait = wait_started.elapsed();
        self.yielded += 1;
        self.send_next_task()?;
        let (images, labels, pin, to_device) = self.move_to_device(&built)?;
        let stages = StageTimes {
            read_s: built.read.as_secs_f64(),
            fetch_s: built.fetch.as_secs_f64(),
            decompress_s: built.decompress.as_secs_f64(),
            collate_s: built.collate.as_secs_f64(),
            transform_s: built.transform.as_secs_f64(),
            transfer_s: transfer.as_secs_f64(),
            pin_s: pin.as_secs_f64(),
            to_device_s: to_device.as_secs_f64(),
            wait_s: wait.as_secs_f64(),
            // The consumer's step comes after the batch; the runner fills it in.
            step_s: 0.0,
        };
        Ok(Batch {
            index,
            images,
            labels,
            stages,
        })
    }

    fn build_inline(&mut self) -> Result<(usize, Box<BuiltBatch>, Duration)> {
        self.loader.cancel.check()?;
        let index = self.next_to_yield;
        self.next_to_yield += 1;
        let indices = self.batches[index]
            .take()
            .ok_or_else(|| Error::run(format!("batch {index} was already built")))?;
        let seed = sampler::batch_seed(self.loader.settings.seed, self.epoch, index);
        let built = build_batch(&*self.loader.dataset, &self.loader.pipeline, &indices, seed)?;
        Ok((index, Box::new(built), Duration::ZERO))
    }

    /// Waits for the next batch from the workers, in order or as they come.
    fn receive(&mut self) -> Result<(usize, Box<BuiltBatch>, Duration)> {
        let in_order = self.loader.settings.in_order;
        let mut last_heard = Instant::now();
        loop {
            if let Some((index, built)) = self.take_arrived(in_order) {
                let transfer = built.transfer;
                return Ok((index, built, transfer));
            }
            self.loader.cancel.check()?;
            let pool = self
                .loader
                .pool
                .as_ref()
                .ok_or_else(|| Error::run("no workers"))?;
            let message = match pool.results().recv_timeout(CANCEL_POLL) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => {
                    if last_heard.elapsed() > self.loader.settings.worker_timeout {
                        let error = self.hung_worker_error();
                        if let Some(pool) = self.loader.pool.as_mut() {
                            pool.abandon_on_drop();
                        }
                        return Err(error);
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::run("every loader worker has stopped"));
                }
            };
            last_heard = Instant::now();
            let received = Instant::now();
            match message {
                WorkerMessage::Ready { worker, startup } => {
                    self.awaiting_ready.retain(|w| *w != worker);
                    self.startups.push_back(WorkerStartup {
                        worker,
                        seconds: startup.as_secs_f64(),
                    });
                }
                WorkerMessage::Batch {
                    epoch,
                    batch,
                    built,
                    ..
                } if epoch == self.epoch => {
                    if !in_order || batch == self.next_to_yield {
                        self.advance_yield_cursor(batch);
                        let transfer = built.transfer + received.elapsed();
                        return Ok((batch, built, transfer));
                    }
                    self.arrived.insert(batch, built);
                }
                WorkerMessage::Batch { .. } => {}
                WorkerMessage::Failed {
                    worker,
                    epoch,
                    batch,
                    error,
                } if epoch == self.epoch => {
                    return Err(match error {
                        Error::Run { problem, source } => Error::Run {
                            problem: format!("loader-worker-{worker}, batch {batch}: {problem}"),
                            source,
                        },
                        other => other,
                    });
                }
                WorkerMessage::Failed { .. } => {}
                WorkerMessage::Died { error } => return Err(error),
            }
        }
    }

    fn take_arrived(&mut self, in_order: bool) -> Option<(usize, Box<BuiltBatch>)> {
        let index = if in_order {
            self.next_to_yield
        } else {
            *self.arrived.keys().next()?
        };
        let built = self.arrived.remove(&index)?;
        self.advance_yield_cursor(index);
        Some((index, built))
    }

    fn advance_yield_cursor(&mut self, yielded: usize) {
        if yielded == self.next_to_yield {
            self.next_to_yield += 1;
        }
    }

    fn hung_worker_error(&self) -> Error {
        let timeout = self.loader.settings.worker_timeout.as_secs_f64();
        let worker = match self.awaiting_ready.first() {
            Some(worker) => *worker,
            None => self.owner.get(self.next_to_yield).copied().unwrap_or(0),
        };
        Error::run(format!(
            "loader-worker-{worker} sent nothing for {timeout:.1} s (worker_timeout_s); it looks hung"
        ))
    }

    fn move_to_device(&self, built: &BuiltBatch) -> Result<(Tensor, Tensor, Duration, Duration)> {
        let target = self.loader.device;
        let started = Instant::now();
        let (images, labels) = if self.loader.pin_memory_effective() {
            (
                device::pin(&built.images, target)?,
                device::pin(&built.labels, target)?,
            )
        } else {
            (built.images.shallow_clone(), built.labels.shallow_clone())
        };
        let pin = started.elapsed();
        let started = Instant::now();
        let images = device::to_device(&images, target)?;
        let labels = device::to_device(&labels, target)?;
        device::synchronize(target);
        Ok((images, labels, pin, started.elapsed()))
    }

    /// Ends an epoch cut short (after a measuring window) as a whole epoch ends: sends
    /// no more tasks and takes the batches already handed to the workers, so that no
    /// work of this epoch is left for the next one, and the workers stay (persistent
    /// ones into the next epoch; the others stop as the epoch is dropped, as at a whole
    /// epoch's end). Dropped without it, a cut epoch stops its workers, and a persistent
    /// config's next epoch paid their start-up again.
    pub fn drain_in_flight(&mut self) -> Result<()> {
        for unsent in self.batches.iter_mut().skip(self.next_to_send) {
            *unsent = None;
        }
        if self.loader.pool.is_some() {
            while self.yielded < self.next_to_send {
                self.receive()?;
                self.yielded += 1;
            }
        }
        self.drained = true;
        Ok(())
    }

    fn finish(&mut self) {
        if !self.loader.settings.persistent_workers {
            self.loader.pool = None;
        }
    }
}

impl Iterator for Epoch<'_> {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Result<Batch>> {
        if self.yielded == self.batches.len() {
            // As in PyTorch, an exhausted epoch stops its non-persistent workers before
            // it reports the end, so that shutdown counts in the epoch's time.
            self.finish();
            return None;
        }
        let batch = self.next_batch();
        if batch.is_err() {
            // A failed pool is not reused: a later epoch starts fresh workers.
            self.loader.pool = None;
        }
        Some(batch)
    }
}

impl Drop for Epoch<'_> {
    fn drop(&mut self) {
        if self.drained {
            self.finish();
        } else if self.yielded < self.batches.len() {
            // An abandoned epoch leaves tasks in flight; fresh workers are simpler than
            // draining them.
            self.loader.pool = None;
            if self.loader.settings.num_workers == 0 {
                // This thread read the samples: a shard stream it left partway (and the
                // samples it passed over) would serve the next epoch from memory.
                self.loader.dataset.release_thread_reader();
            }
        }
    }
}
