//! One round of further measuring, for a tune or for resolving a run's recommendation:
//! the chosen configs measured once each, one after another, by the runner as `run`
//! measures them (its warm-up, gate and interference meter included), as a plan of their
//! own, in a fresh process (`loaderbench __measure`, as the app measures). A process's
//! own state (where glibc's allocator left its heaps, which cores its threads landed on)
//! changes a config's time by up to a quarter and differently per config; rounds in one
//! process would share it, so their scatter would understate the noise between processes
//! and the verdicts would claim more than a rerun repeats. Each round in its own process
//! makes that noise part of the scatter the verdicts are judged by. Each result is
//! renumbered into the whole search space and stamped with the round as its repeat, so
//! that the recommendation compares configs round by round. The rounds' processes share
//! one preloaded Python ([`SharedPreloadedPython`]): each forks its scripts from it
//! rather than importing torch again, the scripts as fresh as ever. The round stops
//! early, keeping every config it finished, when the budget's deadline passes, the user
//! asks to stop, or the caller ends it between two configs; a measuring process that does not stop within [`CANCEL_GRACE`] of being
//! asked is ended.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::TryRecvError;

use loaderbench_engine::Error;
use loaderbench_engine::plan::Plan;
use loaderbench_measure::Event;
use loaderbench_measure::measuring_child::ChildRun;
use loaderbench_measure::pytorch::IMPORT_LIMIT;
use loaderbench_measure::pytorch::SharedPreloadedPython;
use loaderbench_measure::results::{ConfigResult, RunResult};

/// What the scratch folder of a tune's or a resolve's rounds is named by (a
/// [`loaderbench_measure::scratch`] folder: one a killed process left is swept by the
/// next).
pub(crate) const SCRATCH_PREFIX: &str = "loaderbench-rounds-";

/// How often a round looks at the clock and at the stop request between events.
const POLL: Duration = Duration::from_millis(50);

/// How long the measuring process gets to stop once asked (at the deadline, or the
/// user's stop) before the round ends without it: stopping the PyTorch runtime's
/// workers takes a second or two.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// How a round went (its configs went to the caller as each finished).
pub(crate) struct Round {
    /// Seconds each finished config took, from its start to its end, for the budget.
    pub seconds: Vec<(usize, f64)>,
    pub end: RoundEnd,
    /// The runner's warnings.
    pub warnings: Vec<String>,
    /// The dataset, as the runner described it.
    pub dataset: Option<String>,
}

#[derive(Debug)]
pub(crate) enum RoundEnd {
    /// Every config finished.
    Done,
    /// The deadline passed.
    Deadline,
    /// The caller ended it between two configs (see [`Rounds::measure`]).
    Cut,
    /// The user asked to stop.
    Stopped,
    /// The run failed (a worker died, the user's code raised).
    Failed(Error),
}

impl Round {
    /// Adds to `result` the runner's warnings it does not hold yet; returns those.
    pub(crate) fn new_warnings(&mut self, result: &mut RunResult) -> Vec<String> {
        let mut added = Vec::new();
        for message in std::mem::take(&mut self.warnings) {
            if !result.warnings.contains(&message) {
                result.warnings.push(message.clone());
                added.push(message);
            }
        }
        added
    }
}

/// Asked as each config of a round finishes, given the seconds each finished config took
/// and the next config's index in the plan: true ends the round before that one (the
/// measuring process is stopped as it starts it).
pub(crate) type EndBefore<'a> = &'a dyn Fn(&[(usize, f64)], usize) -> bool;

/// What ends a round before each of its configs is measured.
#[derive(Clone, Copy)]
pub(crate) struct RoundStops<'a> {
    /// The budget's end: the config under way is stopped.
    pub deadline: Instant,
    /// The user's stop.
    pub stop_requested: &'a dyn Fn() -> bool,
    /// Whether the round ends before its next config.
    pub end_before: EndBefore<'a>,
}

/// Waited on before each epoch a round measures, while the measuring process waits at
/// its gate: the app's window draws there (through
/// [`ParentGate`](loaderbench_measure::parent_gate::ParentGate)), so that drawing
/// never competes with a measured epoch.
pub type RoundGate = Arc<dyn Fn() + Send + Sync>;

/// What the caller of a tune or a resolve gives its rounds.
#[derive(Clone, Default)]
pub struct RoundsOptions {
    /// A preloaded Python to fork the rounds' scripts from; else one is started where
    /// the plan runs Python.
    pub preloaded: Option<Arc<SharedPreloadedPython>>,
    /// Waited on before each measured epoch; `None` starts epochs at once.
    pub gate: Option<RoundGate>,
}

/// What a tune's or a resolve's rounds share: the scratch folder their journals go to,
/// the preloaded Python their processes fork scripts from, and the gate before each
/// epoch.
pub(crate) struct Rounds {
    scratch: tempfile::TempDir,
    /// The caller's preloaded Python, else one started by the first round that runs
    /// Python: started with the first round, its import of torch (seconds of CPU) would
    /// run beside that round's first configs and disturb them.
    preloaded: OnceLock<Option<Arc<SharedPreloadedPython>>>,
    gate: Option<RoundGate>,
}

impl Rounds {
    /// The scratch folder, and the caller's preloaded Python where it has one.
    pub(crate) fn open(options: RoundsOptions) -> Result<Rounds, Error> {
        let preloaded = OnceLock::new();
        if let Some(shared) = options.preloaded {
            let _ = preloaded.set(Some(shared));
        }
        Ok(Rounds {
            scratch: loaderbench_measure::scratch::folder(SCRATCH_PREFIX)?,
            preloaded,
            gate: options.gate,
        })
    }

    /// The preloaded Python `plan`'s scripts fork from, started now where `plan` runs
    /// Python and none is yet, and waited for until it serves (at most until `deadline`):
    /// the round's configs measured before its first script would otherwise run beside
    /// the import.
    fn preloaded(&self, plan: &Plan, deadline: Instant) -> Option<&SharedPreloadedPython> {
        let runs_python = plan.configs.iter().any(|c| c.runtime.runs_python());
        if !runs_python && self.preloaded.get().is_none() {
            return None;
        }
        self.preloaded
            .get_or_init(|| {
                // One that does not serve is still offered: the scripts then start
                // their own and say why.
                let left = deadline.saturating_duration_since(Instant::now());
                loaderbench_measure::pytorch::share_preloaded(plan, IMPORT_LIMIT.min(left))
            })
            .as_deref()
    }

    /// Measures `configs` (indices into `plan`'s) once each as round `round`, the
    /// runner's journal going to a file of the round's in the scratch folder; each
    /// config goes to `finished` as soon as it is measured (numbered in the search
    /// space), so that the caller journals it then: a process killed mid-round keeps
    /// the configs the round finished; `stops` may end the round sooner.
    pub(crate) fn measure(
        &self,
        plan: &Plan,
        configs: &[usize],
        round: usize,
        stops: &RoundStops,
        finished: &mut dyn FnMut(ConfigResult),
    ) -> Round {
        let RoundStops {
            deadline,
            stop_requested,
            end_before,
        } = *stops;
        let journal = Some(self.scratch.path().join(format!("round-{round}.jsonl")));
        let mut sub = plan.clone();
        sub.configs = configs.iter().map(|&i| plan.configs[i].clone()).collect();
        sub.preset.repeats = 1;
        let mut round_state = Round {
            seconds: Vec::new(),
            end: RoundEnd::Done,
            warnings: Vec::new(),
            dataset: None,
        };
        let preloaded = self.preloaded(&sub, deadline);
        let gate = self.gate.clone();
        let settle = move |_: &_| {
            if let Some(gate) = &gate {
                gate();
            }
        };
        let handle = match ChildRun::start(&sub, journal, None, preloaded, settle, |_| {}) {
            Ok(handle) => handle,
            Err(error) => {
                round_state.end = RoundEnd::Failed(error);
                return round_state;
            }
        };
        let mut config_started = Instant::now();
        let mut asked: Option<Instant> = None;
        loop {
            if asked.is_none() && (stop_requested() || Instant::now() >= deadline) {
                round_state.end = if stop_requested() {
                    RoundEnd::Stopped
                } else {
                    RoundEnd::Deadline
                };
                handle.cancel();
                asked = Some(Instant::now());
            }
            let event = match handle.events().try_recv() {
                Ok(event) => event,
                Err(TryRecvError::Empty) => {
                    // A child that does not stop when asked (hung in the user's code, stopped
                    // by a debugger) must not hold the budget or the user's stop: dropping
                    // the handle ends it, keeping every config it finished.
                    if asked.is_some_and(|at| at.elapsed() >= CANCEL_GRACE) {
                        round_state.warnings.push(format!(
                            "the measuring process did not stop within {} s of being asked; \
                             it was ended",
                            CANCEL_GRACE.as_secs()
                        ));
                        break;
                    }
                    std::thread::sleep(POLL);
                    continue;
                }
                Err(TryRecvError::Disconnected) => break,
            };
            match event {
                Event::ConfigFinished { result } => {
                    let mut result = *result;
                    let index = configs[result.config_index];
                    result.config_index = index;
                    result.repeat = round;
                    result.label = plan.label(index);
                    round_state
                        .seconds
                        .push((index, config_started.elapsed().as_secs_f64()));
                    finished(result);
                    config_started = Instant::now();
                    let next = configs.get(round_state.seconds.len()).copied();
                    if asked.is_none()
                        && next.is_some_and(|next| end_before(&round_state.seconds, next))
                    {
                        round_state.end = RoundEnd::Cut;
                        handle.cancel();
                        asked = Some(Instant::now());
                    }
                }
                Event::Warning { message, .. } => round_state.warnings.push(message),
                Event::Failed {
                    error,
                    bad_input,
                    result,
                    ..
                } => {
                    round_state.dataset = Some(result.dataset);
                    round_state.end = RoundEnd::Failed(if bad_input {
                        Error::value(error)
                    } else {
                        Error::run(error)
                    });
                }
                Event::Finished { result } | Event::Cancelled { result } => {
                    round_state.dataset = Some(result.dataset);
                }
                _ => {}
            }
        }
        // The child has ended (its events are all in), or did not stop when asked: dropping
        // the handle reaps it, or kills it.
        drop(handle);
        round_state
    }
}
