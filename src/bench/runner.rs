//! The runner: one background thread that opens the dataset, then measures every config
//! of a plan `repeats` times, epoch by epoch, timing what ../shared/DESIGN.md defines
//! (first batch and epoch time from asking for the epoch's iterator to the batch being on
//! the device), running the preset's training step on each batch, streaming events,
//! appending each finished config to the journal, and warning at the end about what the
//! measurements show.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{Receiver, Sender, unbounded};

use super::Event;
use super::journal::{Journal, default_journal_path};
use super::meter::{self, Interference};
use super::ranks::{RankProgress, Ranks, RanksSummary};
use crate::analysis::{self, disturbance};
use crate::cancel::CancelToken;
use crate::dataset::{self, Dataset, DatasetKind};
use crate::error::{Error, Result};
use crate::loader::{
    Loader, LoaderSettings, Shard, WorkerStartup, batches_per_epoch, set_intra_op_threads,
};
use crate::machine::Machine;
use crate::memory;
use crate::plan::{Config, Plan};
use crate::preset::Runtime;
use crate::reference::{Reference, ReferenceEvent};
use crate::results::{BatchRecord, ConfigResult, EpochResult, RunResult, RunStatus};
use crate::step::Step;
use crate::transform::Pipeline;

/// Called on the runner thread before the clock of each epoch starts (and before each
/// config of the PyTorch runtime, whose epochs run in Python). The app passes one that
/// waits until its window has drawn what the run reported and gone quiet, so drawing
/// never competes with a measured epoch.
pub type EpochGate = Box<dyn FnMut() + Send>;

/// How a run is recorded.
#[derive(Default)]
pub struct RunOptions {
    /// The journal file; `None` uses [`default_journal_path`].
    pub journal: Option<PathBuf>,
    /// Waited on before each epoch; `None` starts epochs at once.
    pub before_epoch: Option<EpochGate>,
}

/// A run in progress: its events, and the means to cancel it.
pub struct RunHandle {
    events: Receiver<Event>,
    cancel: CancelToken,
    journal: PathBuf,
    thread: Option<JoinHandle<()>>,
}

impl RunHandle {
    /// The run's events; the last one is `Finished`, `Failed` or `Cancelled`.
    pub fn events(&self) -> &Receiver<Event> {
        &self.events
    }

    /// Asks the run to stop; it ends with `Cancelled` as soon as the loader notices
    /// (within a batch, or 50 ms while waiting for workers).
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// A token that cancels the run from another thread.
    pub fn canceller(&self) -> CancelToken {
        self.cancel.clone()
    }

    /// Where the journal is written.
    pub fn journal_path(&self) -> &std::path::Path {
        &self.journal
    }

    /// True once the runner thread has ended.
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits for the runner thread to end.
    pub fn join(mut self) {
        self.join_thread();
    }

    fn join_thread(&mut self) {
        if let Some(thread) = self.thread.take() {
            // The runner catches its own failures and reports them as events.
            let _ = thread.join();
        }
    }
}

impl Drop for RunHandle {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.join_thread();
    }
}

/// Starts running `plan` on a background thread. `wake` is called after every event
/// (the GUI passes a repaint request).
pub fn spawn(plan: Plan, options: RunOptions, wake: impl Fn() + Send + 'static) -> RunHandle {
    let (sender, events) = unbounded();
    let cancel = CancelToken::new();
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let journal = options
        .journal
        .unwrap_or_else(|| default_journal_path(&plan.name, started_unix_s));
    let run = Run {
        plan,
        cancel: cancel.clone(),
        emit: Emitter {
            sender,
            wake: Box::new(wake),
        },
        journal_path: journal.clone(),
        started_unix_s,
        before_epoch: RefCell::new(options.before_epoch),
        noted: RefCell::new(Vec::new()),
    };
    let thread = std::thread::Builder::new()
        .name("loaderbench-runner".to_owned())
        .spawn(move || run.run())
        .ok();
    RunHandle {
        events,
        cancel,
        journal,
        thread,
    }
}

struct Emitter {
    sender: Sender<Event>,
    wake: Box<dyn Fn() + Send>,
}

impl Emitter {
    fn send(&self, event: Event) {
        // Nobody listening is fine: the journal still records the run.
        let _ = self.sender.send(event);
        (self.wake)();
    }
}

struct Run {
    plan: Plan,
    cancel: CancelToken,
    emit: Emitter,
    journal_path: PathBuf,
    started_unix_s: u64,
    before_epoch: RefCell<Option<EpochGate>>,
    /// The reference runtime's notes already passed on as warnings.
    noted: RefCell<Vec<String>>,
}

impl Run {
    fn run(self) {
        let mut result = self.empty_result();
        let outcome = self.measure_all(&mut result);
        self.warn_about_results(&mut result);
        let event = match outcome {
            Ok(()) => {
                result.status = RunStatus::Finished;
                Event::Finished {
                    result: Box::new(result),
                }
            }
            Err(Error::Cancelled) => {
                result.status = RunStatus::Cancelled;
                Event::Cancelled {
                    result: Box::new(result),
                }
            }
            Err(error) => {
                result.status = RunStatus::Failed {
                    error: error.to_string(),
                };
                Event::Failed {
                    error: error.to_string(),
                    bad_input: error.is_bad_input(),
                    result: Box::new(result),
                }
            }
        };
        self.emit.send(event);
    }

    /// Warns about what the measurements show (noise, a slow first epoch,
    /// oversubscription), and keeps the warnings with the result.
    fn warn_about_results(&self, result: &mut RunResult) {
        for message in analysis::warnings::warnings(result) {
            self.warn(None, message.clone());
            result.warnings.push(message);
        }
    }

    fn empty_result(&self) -> RunResult {
        RunResult {
            preset: self.plan.name.clone(),
            dataset: String::new(),
            epochs: self.plan.epochs,
            repeats: self.plan.repeats,
            started_unix_s: self.started_unix_s,
            machine: Machine::current(),
            configs: self.plan.configs.clone(),
            labels: (0..self.plan.configs.len())
                .map(|i| self.plan.label(i))
                .collect(),
            warnings: self.plan.warnings.clone(),
            results: Vec::new(),
            status: RunStatus::Running,
            step: self.plan.step,
            planned_epochs: self.plan.planned_epochs,
            shuffle: self.plan.shuffle,
            drop_last: self.plan.drop_last,
            setup: Some(self.plan.preset.clone()),
        }
    }

    fn measure_all(&self, result: &mut RunResult) -> Result<()> {
        // A python dataset is the user's code, which only the reference runtime loads.
        let dataset = match self.plan.dataset.kind {
            DatasetKind::Python => None,
            _ => Some(dataset::open(&self.plan.dataset, self.plan.samples)?),
        };
        match &dataset {
            Some(dataset) => {
                result.dataset = dataset.describe();
                result
                    .warnings
                    .extend(dataset::samples_warning(self.plan.samples, &**dataset));
            }
            None => result.dataset = dataset::python::describe(&self.plan.dataset),
        }
        for config in &self.plan.configs {
            config.device.resolve()?;
        }
        // Unknown until Python has built a user's dataset.
        let batches = match (&dataset, self.plan.configs.first()) {
            (Some(dataset), Some(c)) => {
                batches_per_epoch(dataset.len(), c.batch_size, self.plan.drop_last)
            }
            _ => 0,
        };
        self.emit.send(Event::Started {
            result: Box::new(result.clone()),
            batches_per_epoch: batches,
        });
        for message in &result.warnings {
            self.warn(None, message.clone());
        }
        let mut journal = Journal::create(&self.journal_path, result)?;
        let outcome = self.measure_configs(dataset.as_ref(), result, &mut journal);
        let status = match &outcome {
            Ok(()) => RunStatus::Finished,
            Err(Error::Cancelled) => RunStatus::Cancelled,
            Err(error) => RunStatus::Failed {
                error: error.to_string(),
            },
        };
        journal.end(&status)?;
        outcome
    }

    fn measure_configs(
        &self,
        dataset: Option<&Arc<dyn Dataset>>,
        result: &mut RunResult,
        journal: &mut Journal,
    ) -> Result<()> {
        // The plan gives our engine's configs only datasets it can open.
        let engine = || dataset.ok_or_else(|| Error::value(dataset::python::ENGINE_REFUSAL));
        if self
            .plan
            .configs
            .iter()
            .any(|c| c.runtime == Runtime::Loaderbench)
        {
            self.warm_up_process(engine()?)?;
        }
        // Prepared when the first pytorch config comes, then shared by the rest.
        let mut reference = None;
        for (index, repeat) in self.plan.schedule() {
            self.cancel.check()?;
            self.emit.send(Event::ConfigStarted {
                config: index,
                repeat,
            });
            let config = &self.plan.configs[index];
            let measured = match config.runtime {
                Runtime::Loaderbench if config.ranks > 1 => {
                    self.measure_ranked_config(index, repeat)?
                }
                Runtime::Loaderbench => self.measure_config(engine()?, index, repeat)?,
                Runtime::Pytorch => {
                    let reference = match &mut reference {
                        Some(reference) => reference,
                        None => reference.insert(Reference::prepare(&self.plan, dataset)?),
                    };
                    self.wait_for_gate();
                    self.measure_reference(reference, index, repeat)?
                }
            };
            journal.config(&measured)?;
            result.results.push(measured.clone());
            self.emit.send(Event::ConfigFinished {
                result: Box::new(measured),
            });
        }
        Ok(())
    }

    /// An untimed pass before the first config, once per process: libtorch's first
    /// ops, its thread pool and the allocator warm up here rather than in whichever
    /// config happens to run first (measured: that config's first epoch ran 1.3-2.6×
    /// its second on seed-light). It runs the first config of our engine without
    /// workers, for one epoch or [`PROCESS_WARMUP_LIMIT`], whichever ends first.
    fn warm_up_process(&self, dataset: &Arc<dyn Dataset>) -> Result<()> {
        let Some(index) = self
            .plan
            .configs
            .iter()
            .position(|c| c.runtime == Runtime::Loaderbench && c.ranks <= 1)
        else {
            return Ok(());
        };
        let mut plan = self.plan.clone();
        plan.configs[index].num_workers = 0;
        let mut loader = build_loader(&plan, index, dataset, Shard::WHOLE, &self.cancel)?;
        set_intra_op_threads(plan.configs[index].intra_op_threads);
        let deadline = Instant::now() + PROCESS_WARMUP_LIMIT;
        for batch in loader.epoch()? {
            batch?;
            if Instant::now() >= deadline {
                break;
            }
        }
        Ok(())
    }

    fn measure_config(
        &self,
        dataset: &Arc<dyn Dataset>,
        index: usize,
        repeat: usize,
    ) -> Result<ConfigResult> {
        let config = &self.plan.configs[index];
        let mut loader = build_loader(&self.plan, index, dataset, Shard::WHOLE, &self.cancel)?;
        let mut step = Step::new(self.plan.step);
        self.warn_if_pin_memory_idle(index, config.pin_memory && !loader.pin_memory_effective());
        set_intra_op_threads(config.intra_op_threads);
        memory::reset_peak_rss();
        let rss_before_bytes = memory::rss_bytes();
        let warmup = if self.plan.warmup {
            Some(
                self.measure_epoch(&mut loader, &mut step, index, repeat, 0)?
                    .0,
            )
        } else {
            None
        };
        let measured = (1..=self.plan.epochs)
            .map(|epoch| self.measure_epoch(&mut loader, &mut step, index, repeat, epoch))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.config_result(
            index,
            repeat,
            warmup,
            measured,
            RanksSummary {
                pin_memory_effective: loader.pin_memory_effective(),
                // Read after the epochs: what the consumer's step really ran with.
                intra_op_threads: tch::get_num_threads(),
                rss_before_bytes,
                peak_rss_bytes: memory::peak_rss_bytes(),
                workers: loader.worker_memory().to_vec(),
            },
        ))
    }

    /// Measures a config with several ranks, each a process of its own, behind a
    /// barrier before every epoch; each epoch counts as long as its slowest rank.
    fn measure_ranked_config(&self, index: usize, repeat: usize) -> Result<ConfigResult> {
        let mut ranks = Ranks::start(&self.plan, index, &self.cancel)?;
        let mut measure = |epoch| {
            self.timed_epoch(index, repeat, || {
                ranks.epoch(epoch, |progress| {
                    self.emit.send(match progress {
                        RankProgress::WorkerReady(startup) => Event::WorkerReady {
                            config: index,
                            startup,
                        },
                        RankProgress::Batch(batch) => Event::Batch {
                            config: index,
                            repeat,
                            epoch,
                            batch,
                        },
                    });
                })
            })
        };
        let warmup = if self.plan.warmup {
            Some(measure(0)?.0)
        } else {
            None
        };
        let measured = (1..=self.plan.epochs)
            .map(&mut measure)
            .collect::<Result<Vec<_>>>()?;
        let summary = ranks.finish()?;
        self.warn_if_pin_memory_idle(
            index,
            self.plan.configs[index].pin_memory && !summary.pin_memory_effective,
        );
        Ok(self.config_result(index, repeat, warmup, measured, summary))
    }

    fn config_result(
        &self,
        index: usize,
        repeat: usize,
        warmup: Option<EpochResult>,
        measured: Vec<(EpochResult, Option<Interference>)>,
        summary: RanksSummary,
    ) -> ConfigResult {
        let verdict = disturbance::judge(
            &measured
                .iter()
                .filter_map(|(epoch, seen)| Some((epoch.seconds, (*seen)?)))
                .collect::<Vec<_>>(),
        );
        ConfigResult {
            config_index: index,
            repeat,
            label: self.plan.label(index),
            config: self.plan.configs[index].clone(),
            warmup,
            epochs: measured.into_iter().map(|(epoch, _)| epoch).collect(),
            pin_memory_effective: summary.pin_memory_effective,
            intra_op_threads: summary.intra_op_threads,
            other_load_cores: verdict.other_load_cores,
            disturbed: verdict.disturbed,
            rss_before_bytes: summary.rss_before_bytes,
            peak_rss_bytes: summary.peak_rss_bytes,
            workers: summary.workers,
            python: None,
        }
    }

    fn warn_if_pin_memory_idle(&self, index: usize, idle: bool) {
        if idle {
            self.warn(
                Some(index),
                format!(
                    "{}: pin_memory has no effect without CUDA; measured as a no-op",
                    self.plan.label(index)
                ),
            );
        }
    }

    /// Measures a config with PyTorch's DataLoader, relaying its progress as events.
    fn measure_reference(
        &self,
        reference: &Reference,
        index: usize,
        repeat: usize,
    ) -> Result<ConfigResult> {
        let mut relay = |progress| {
            let event = match progress {
                ReferenceEvent::WorkerReady(startup) => Event::WorkerReady {
                    config: index,
                    startup,
                },
                ReferenceEvent::Batch { epoch, batch } => Event::Batch {
                    config: index,
                    repeat,
                    epoch,
                    batch,
                },
                ReferenceEvent::Epoch(result) => Event::EpochFinished {
                    config: index,
                    repeat,
                    result: Box::new(result),
                },
                ReferenceEvent::Note(message) => {
                    // The script notes the same thing for every config; say it once.
                    if self.noted.borrow().contains(&message) {
                        return;
                    }
                    self.noted.borrow_mut().push(message.clone());
                    Event::Warning {
                        config: Some(index),
                        message,
                    }
                }
            };
            self.emit.send(event);
        };
        let result = reference.measure(&self.plan, index, repeat, &self.cancel, &mut relay)?;
        self.warn_if_pin_memory_idle(
            index,
            result.config.pin_memory && !result.pin_memory_effective,
        );
        Ok(result)
    }

    fn measure_epoch(
        &self,
        loader: &mut Loader,
        step: &mut Step,
        config: usize,
        repeat: usize,
        epoch: usize,
    ) -> Result<(EpochResult, Option<Interference>)> {
        self.timed_epoch(config, repeat, || {
            let mut last_sent: Option<Instant> = None;
            run_epoch(loader, step, epoch, |batch, startups| {
                for startup in startups {
                    self.emit.send(Event::WorkerReady { config, startup });
                }
                // Every epoch's first batch, then at most one per interval: the CLI and
                // the app's measuring child pay the same, small, price for progress.
                let due = last_sent.is_none_or(|at| at.elapsed() >= super::BATCH_EVENT_INTERVAL);
                if batch.index == 0 || due {
                    last_sent = Some(Instant::now());
                    self.emit.send(Event::Batch {
                        config,
                        repeat,
                        epoch,
                        batch,
                    });
                }
            })
        })
    }

    /// Runs one epoch of config `config` between the gate and the interference meter,
    /// records what the meter saw and reports the finished epoch.
    fn timed_epoch(
        &self,
        config: usize,
        repeat: usize,
        epoch: impl FnOnce() -> Result<EpochResult>,
    ) -> Result<(EpochResult, Option<Interference>)> {
        self.wait_for_gate();
        let reading = meter::Reading::now();
        let mut result = epoch()?;
        let seen = reading.interference_since();
        result.record(seen);
        self.emit.send(Event::EpochFinished {
            config,
            repeat,
            result: Box::new(result.clone()),
        });
        Ok((result, seen))
    }

    /// Lets the front end, then this process, settle before an epoch's clock starts:
    /// the same rest before every epoch, whichever face runs it.
    fn wait_for_gate(&self) {
        if let Some(gate) = self.before_epoch.borrow_mut().as_mut() {
            gate();
        }
        meter::wait_for_quiet(EPOCH_SETTLE_LIMIT);
    }

    fn warn(&self, config: Option<usize>, message: String) {
        self.emit.send(Event::Warning { config, message });
    }
}

/// The longest the runner waits for its own process to go quiet before an epoch.
const EPOCH_SETTLE_LIMIT: Duration = Duration::from_millis(300);

/// The longest the untimed warm-up pass of a process runs.
const PROCESS_WARMUP_LIMIT: Duration = Duration::from_millis(500);

/// The loader config `index` of `plan` measures with, loading `shard` of every epoch.
pub(super) fn build_loader(
    plan: &Plan,
    index: usize,
    dataset: &Arc<dyn Dataset>,
    shard: Shard,
    cancel: &CancelToken,
) -> Result<Loader> {
    let config = &plan.configs[index];
    let pipeline = Arc::new(
        Pipeline::new(&config.pipeline, &plan.normalize, dataset.shape().channels)?
            .at(config.transform_at),
    );
    let settings = LoaderSettings {
        batch_size: config.batch_size,
        shuffle: plan.shuffle,
        seed: plan.seed,
        drop_last: plan.drop_last,
        num_workers: config.num_workers,
        persistent_workers: config.persistent_workers,
        prefetch_factor: config.prefetch_factor,
        in_order: config.in_order,
        pin_memory: config.pin_memory,
        device: config.device.resolve()?,
        worker_timeout: Duration::from_secs_f64(plan.worker_timeout_s),
        shard,
    };
    let loader = Loader::new(dataset.clone(), pipeline, settings, cancel.clone())?;
    Ok(with_worker_processes(plan, loader, config))
}

/// Sets the loader up for worker processes when the config asks for them (the plan
/// has already refused them where the platform has none).
fn with_worker_processes(plan: &Plan, loader: Loader, config: &Config) -> Loader {
    #[cfg(unix)]
    {
        use crate::loader::process::{ProcessKind, ProcessWorkers};
        use crate::preset::WorkerKind;
        let kind = match config.worker_kind {
            WorkerKind::Thread => return loader,
            WorkerKind::Spawn => ProcessKind::Spawn,
            WorkerKind::Fork => ProcessKind::Fork,
        };
        loader.with_processes(ProcessWorkers {
            kind,
            dataset: Some(plan.dataset.clone()),
            samples: plan.samples,
            pipeline: config.pipeline.clone(),
            transform_at: config.transform_at,
            normalize: plan.normalize.clone(),
            dataset_transfer: config.dataset_transfer,
            batch_transfer: config.batch_transfer,
            executable: None,
        })
    }
    #[cfg(not(unix))]
    {
        let _ = (plan, config);
        loader
    }
}

/// Runs one epoch, timed as ../shared/DESIGN.md defines it, with the training step on
/// every batch; `on_batch` hears of each batch and the workers that became ready.
pub(super) fn run_epoch(
    loader: &mut Loader,
    step: &mut Step,
    epoch: usize,
    mut on_batch: impl FnMut(BatchRecord, Vec<WorkerStartup>),
) -> Result<EpochResult> {
    let started = Instant::now();
    let mut batches = loader.epoch()?;
    let mut timeline = Vec::new();
    let mut startups = Vec::new();
    while let Some(batch) = batches.next() {
        let batch = batch?;
        let record = BatchRecord {
            index: batch.index,
            at_s: started.elapsed().as_secs_f64(),
            samples: usize::try_from(batch.labels.size()[0]).unwrap_or(0),
            stages: batch.stages,
        };
        let ready = batches.take_worker_startups();
        startups.extend(ready.iter().copied());
        timeline.push(record);
        on_batch(record, ready);
        step.run(&batch.images, &batch.labels)?;
    }
    drop(batches);
    let seconds = started.elapsed().as_secs_f64();
    Ok(EpochResult::from_batches(
        epoch, seconds, timeline, startups,
    ))
}
