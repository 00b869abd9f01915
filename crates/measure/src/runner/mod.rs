//! The runner: one background thread that opens the dataset, then measures every config
//! of a plan `repeats` times, epoch by epoch, timing what ARCHITECTURE.md's measurement
//! rules define (first batch and epoch time from asking for the epoch's iterator to the
//! batch being on the device), running the preset's training step on each batch,
//! streaming events and appending each finished config to the journal. What the
//! measurements mean (warnings, recommendations) is for its consumer to judge.

use std::cell::RefCell;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, unbounded};

use crate::disturbance;
use crate::engine_epoch::loader_settings;
use crate::events::Event;
use crate::journal::{Journal, default_journal, runs_dir};
use crate::meter;
use crate::pytorch::SharedPreloadedPython;
use crate::rank_merge::RanksSummary;
use crate::results::{ConfigResult, EpochResult, RunResult, RunStatus};
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{self, Dataset, DatasetKind};
use loaderbench_engine::error::{Error, Result};
use loaderbench_engine::loader::{Shard, epoch_size};
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Runtime;

mod cache;
mod epochs;
mod runtimes;

use epochs::MeasuredEpoch;
use runtimes::Runtimes;

/// Called on the runner thread before the clock of each epoch starts (and before each
/// config of the PyTorch runtime, whose epochs run in Python). The app passes one that
/// waits until its window has drawn what the run reported and gone quiet, so drawing
/// never competes with a measured epoch.
pub type EpochGate = Box<dyn FnMut() + Send>;

/// How a run is recorded.
#[derive(Default)]
pub struct RunOptions {
    /// The journal file; `None` makes a new one in [`runs_dir`] ([`default_journal`]).
    pub journal: Option<PathBuf>,
    /// Waited on before each epoch; `None` starts epochs at once.
    pub before_epoch: Option<EpochGate>,
    /// A preloaded Python to fork the PyTorch runtime's scripts from, where it runs the
    /// plan's Python; else the run starts its own (as it does when this process was
    /// offered none).
    pub preloaded: Option<Arc<SharedPreloadedPython>>,
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
    let started_unix_s = crate::run_header::unix_now_s();
    // A journal that cannot be made fails the run when it starts, naming the folder.
    let (journal, journal_problem) = match options.journal {
        Some(path) => (path, None),
        None => match default_journal(&plan.preset.name) {
            Ok(path) => (path, None),
            Err(error) => (runs_dir(), Some(error)),
        },
    };
    let run = Run {
        plan,
        cancel: cancel.clone(),
        emit: Emitter {
            sender,
            wake: Box::new(wake),
        },
        journal_path: journal.clone(),
        journal_problem,
        started_unix_s,
        before_epoch: RefCell::new(options.before_epoch),
        preloaded: options.preloaded,
        warned: RefCell::new(HashSet::new()),
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
    journal_problem: Option<Error>,
    started_unix_s: u64,
    before_epoch: RefCell<Option<EpochGate>>,
    preloaded: Option<Arc<SharedPreloadedPython>>,
    /// The warnings already passed on: each is said once per run, not once per repeat.
    warned: RefCell<HashSet<String>>,
}

impl Run {
    fn run(mut self) {
        let mut result = self.empty_result();
        let outcome = match self.journal_problem.take() {
            Some(error) => Err(error),
            None => self.measure_all(&mut result),
        };
        // Made for this run, the journal holds nothing when the run failed before its
        // header (a dataset that does not open): no empty file is left behind, and the
        // same --journal can be given again.
        if std::fs::metadata(&self.journal_path).is_ok_and(|meta| meta.is_file() && meta.len() == 0)
        {
            let _ = std::fs::remove_file(&self.journal_path);
        }
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
                    field: error.field().cloned(),
                    result: Box::new(result),
                }
            }
        };
        self.emit.send(event);
    }

    fn empty_result(&self) -> RunResult {
        RunResult::starting(&self.plan, self.started_unix_s)
    }

    fn measure_all(&self, result: &mut RunResult) -> Result<()> {
        // A python dataset is the user's code, which only the PyTorch runtime loads.
        let dataset = match self.plan.preset.dataset.kind {
            DatasetKind::Python => None,
            _ => Some(dataset::open_with_progress(
                &self.plan.preset.dataset,
                self.plan.preset.samples,
                &mut |progress| {
                    self.emit.send(Event::DatasetOpening {
                        checked: progress.checked,
                        total: progress.total,
                    });
                },
                &self.cancel,
            )?),
        };
        match &dataset {
            Some(dataset) => {
                result.dataset = dataset.describe();
                result
                    .warnings
                    .extend(dataset::open_warnings(self.plan.preset.samples, &**dataset));
            }
            None => result.dataset = dataset::python_dataset::describe(&self.plan.preset.dataset),
        }
        // Before the checks below: what opening found may be why one of them fails (colour
        // images read grey at the default channels, against three normalize means).
        for message in &result.warnings {
            self.warn(None, message.clone());
        }
        for config in &self.plan.configs {
            config.device.resolve()?;
        }
        if let Some(dataset) = &dataset {
            crate::engine_epoch::check_dataset_fits(&self.plan, &**dataset)?;
        }
        self.plan.preset.step.check_files()?;
        // Unknown until Python has built a user's dataset.
        let batches = match (&dataset, self.plan.configs.first()) {
            (Some(dataset), Some(c)) => {
                epoch_size(&**dataset, &loader_settings(&self.plan, c, Shard::WHOLE)).batches
            }
            _ => 0,
        };
        self.emit.send(Event::Started {
            result: Box::new(result.clone()),
            batches_per_epoch: batches,
        });
        let mut journal = Journal::create(&self.journal_path, result)?;
        let outcome = self.measure_configs(dataset.as_ref(), result, &mut journal);
        let status = match &outcome {
            Ok(()) => RunStatus::Finished,
            Err(Error::Cancelled) => RunStatus::Cancelled,
            Err(error) => RunStatus::Failed {
                error: error.to_string(),
            },
        };
        // The measuring's own failure first: a journal that cannot take the end line
        // fails a run that had none.
        let ended = journal.end(&status, None);
        outcome.and(ended)
    }

    fn measure_configs(
        &self,
        dataset: Option<&Arc<dyn Dataset>>,
        result: &mut RunResult,
        journal: &mut Journal,
    ) -> Result<()> {
        if let Some(dataset) = dataset
            && self
                .plan
                .configs
                .iter()
                .any(|c| c.runtime == Runtime::Loaderbench)
        {
            self.warm_up_process(dataset)?;
        }
        let mut runtimes = Runtimes::new(dataset, self.preloaded.clone());
        for (index, repeat) in self.plan.schedule() {
            self.cancel.check()?;
            self.emit.send(Event::ConfigStarted {
                config: index,
                repeat,
            });
            let started = Instant::now();
            let mut measured = runtimes
                .for_config(&self.plan.configs[index])?
                .measure(self, index, repeat)?;
            measured.took_s = Some(started.elapsed().as_secs_f64());
            // In the result before the journal: a journal that cannot be written fails
            // the run, and the exports still hold every config measured.
            result.results.push(measured.clone());
            self.emit.send(Event::ConfigFinished {
                result: Box::new(measured.clone()),
            });
            journal.config(&measured)?;
        }
        Ok(())
    }

    fn config_result(
        &self,
        index: usize,
        repeat: usize,
        warmup: Option<EpochResult>,
        measured: Vec<MeasuredEpoch>,
        summary: RanksSummary,
    ) -> ConfigResult {
        let verdict = disturbance::judge(
            &measured
                .iter()
                .filter_map(|(epoch, seen)| Some((epoch.measured_s(), (*seen)?)))
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
            ..ConfigResult::default()
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

    /// Lets the front end, then this process, settle before an epoch's clock starts:
    /// the same rest before every epoch, whichever face runs it. In between, the
    /// config's files are evicted or loaded as it asks (`cache`, for config `index`). Returns the meter's
    /// reading from just after the front end's gate, so an epoch's other load is read
    /// over this process's own settling (24 ms or more) and the epoch: a 20 ms epoch
    /// alone spans two of the kernel's 10 ms clock ticks, too few to tell a busy core
    /// from rounding, while the app's drawing (in the gate) stays out of it.
    fn settle_before_epoch(
        &self,
        index: usize,
        cache: Option<&mut cache::EpochCache>,
    ) -> Result<meter::Reading> {
        if let Some(gate) = self.before_epoch.borrow_mut().as_mut() {
            gate();
        }
        if let Some(cache) = cache {
            self.prepare_page_cache(index, cache)?;
        }
        let reading = meter::Reading::now();
        meter::wait_for_quiet(EPOCH_SETTLE_LIMIT);
        Ok(reading)
    }

    /// Passes a warning on, unless the same one was already said in this run.
    fn warn(&self, config: Option<usize>, message: String) {
        if self.warned.borrow_mut().insert(message.clone()) {
            self.emit.send(Event::Warning { config, message });
        }
    }
}

/// The longest the runner waits for its own process to go quiet before an epoch.
const EPOCH_SETTLE_LIMIT: Duration = Duration::from_millis(300);
