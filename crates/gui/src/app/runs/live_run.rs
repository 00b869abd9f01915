//! A run the window shows, and the lifecycle of one measured here: started from the plan
//! in a child process that measures exactly as `loaderbench run` does (see
//! [`pacing`](crate::pacing) for how the window keeps out of the measured epochs), its
//! events folded into the live data each frame within a time budget, cancelled, and what
//! happens when it ends (analysis, warnings, how it ended, and its journal handed to the
//! resolve where the recommendation is open, and kept for measuring it further).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::live::{Phase, RunData};
use crate::pacing::{self, Pacer};
use loaderbench_analysis::baseline::Change;
use loaderbench_analysis::{Analysis, warnings};
use loaderbench_engine::plan::Plan;
use loaderbench_measure::measuring_child::ChildRun;
use loaderbench_measure::results::RunResult;

use super::super::messages::Messages;
use super::resolve_run::{MeasuredFurther, ResolveRun};
use super::{RunEnded, Runs};

/// How long a frame may spend folding in run events; the rest wait for the next frame.
const EVENT_BUDGET: Duration = Duration::from_millis(4);

/// A run the window shows: live, or finished.
pub(super) struct LiveRun {
    pub(super) handle: Option<ChildRun>,
    /// Keeps frames out of the epochs the child measures.
    pub(super) pacer: Pacer,
    pub(super) data: RunData,
    pub(super) started: Instant,
    /// Set when the run ends, to freeze the elapsed time.
    pub(super) took: Option<Duration>,
    /// The analysis of the final result, once the run has ended.
    pub(super) analysis: Option<Analysis>,
    /// The baseline it is compared with, and each config's change.
    pub(super) comparison: Option<(String, Vec<Change>)>,
    /// Read from a file rather than measured here: it has no duration to show.
    pub(super) saved: bool,
    /// Its journal, which measuring it further appends to: a run measured here once it
    /// has finished, or the one journal opened.
    pub(super) journal: Option<PathBuf>,
    /// A run measured here that just finished, for its resolve to take up.
    pub(super) resolve_pending: bool,
    /// Its unresolved recommendation measured further, running or ended.
    pub(super) resolving: Option<ResolveRun>,
    /// What that resolve measured, once it has ended.
    pub(super) measured_further: Option<MeasuredFurther>,
}

impl LiveRun {
    fn new(data: RunData, handle: Option<ChildRun>, pacer: Pacer) -> LiveRun {
        LiveRun {
            saved: handle.is_none(),
            handle,
            pacer,
            data,
            started: Instant::now(),
            took: None,
            analysis: None,
            comparison: None,
            journal: None,
            resolve_pending: false,
            resolving: None,
            measured_further: None,
        }
    }

    /// A finished run rebuilt from its result (a saved run, or a tune's results), to be
    /// shown as a run measured here is.
    pub(super) fn replayed(result: RunResult) -> LiveRun {
        LiveRun::new(RunData::replayed(result), None, Pacer::default())
    }

    pub(super) fn elapsed(&self) -> Duration {
        self.took.unwrap_or_else(|| self.started.elapsed())
    }

    /// Folds in events for at most `EVENT_BUDGET`; true when some are left over.
    fn drain(&mut self) -> bool {
        let Some(handle) = &self.handle else {
            return false;
        };
        let deadline = Instant::now() + EVENT_BUDGET;
        while let Ok(event) = handle.events().try_recv() {
            self.data.apply_at(event, self.started.elapsed());
            if Instant::now() >= deadline {
                return !handle.events().is_empty();
            }
        }
        false
    }

    /// Once the run has ended (the first time it is seen so): freezes its time, takes
    /// its journal for the resolve, attaches the warnings and analyses the result.
    fn end(&mut self) -> Option<RunEnded> {
        if self.data.is_running() || self.took.is_some() {
            return None;
        }
        self.took = Some(self.started.elapsed());
        if self.data.phase == Phase::Finished
            && let Some(handle) = &self.handle
        {
            self.journal = Some(handle.journal_path().to_path_buf());
            self.resolve_pending = true;
        }
        self.handle = None;
        if let Some(result) = self.data.result.as_mut() {
            let found = warnings::attach(result);
            self.data.warnings.extend(found);
        }
        self.analysis = self
            .data
            .result
            .as_ref()
            .filter(|result| !result.results.is_empty())
            .map(Analysis::of);
        Some(RunEnded {
            phase: self.data.phase.clone(),
            bad_input: self.data.bad_input,
            field: self.data.failed_field.clone(),
        })
    }
}

impl Runs {
    /// Folds in the shown run's events within the frame's budget, and reports its end
    /// (warnings, how it ended) the first time it is seen. The flag is true when events
    /// are left over for the next frame.
    pub(in super::super) fn drain_events(
        &mut self,
        messages: &mut Messages,
    ) -> (bool, Option<RunEnded>) {
        let left_over = self.live.as_mut().is_some_and(LiveRun::drain);
        (left_over, self.end_of_run(messages))
    }

    /// The shown run's end, reported once: its warnings and how it ended.
    pub(super) fn end_of_run(&mut self, messages: &mut Messages) -> Option<RunEnded> {
        let run = self.live.as_mut()?;
        let ended = run.end()?;
        for warning in std::mem::take(&mut run.data.warnings) {
            messages.warning(&warning);
        }
        match &ended.phase {
            Phase::Failed(error) => messages.error(format!("The run failed: {error}")),
            Phase::Cancelled => messages.note("The run was cancelled; measured configs are kept."),
            Phase::Finished | Phase::Running => {}
        }
        Some(ended)
    }

    /// Starts measuring `plan` in a child process; a run that cannot start leaves its
    /// error.
    pub(in super::super) fn start_run(
        &mut self,
        ctx: &egui::Context,
        plan: &Plan,
        messages: &mut Messages,
    ) {
        let data = RunData::new(
            plan.labels(),
            plan.preset.epochs,
            plan.preset.repeats,
            plan.preset.warmup,
        );
        let journal = match &self.measurer.journal_dir {
            Some(dir) => match loaderbench_measure::new_journal(dir, &plan.preset.name) {
                Ok(path) => Some(path),
                Err(err) => return messages.error(format!("The run could not start: {err}")),
            },
            None => None,
        };
        let pacer = Pacer::for_plan(plan);
        let handle = match self.spawn_child(ctx, plan, journal, &pacer) {
            Ok(handle) => handle,
            Err(err) => return messages.error(format!("The run could not start: {err}")),
        };
        self.selected = None;
        messages.clear_errors();
        self.shown.clear();
        self.recent = None;
        self.live = Some(LiveRun::new(data, Some(handle), pacer));
    }

    /// The measuring child, which waits at each gate until the window has drawn and wakes
    /// the window for the events it draws at once.
    fn spawn_child(
        &self,
        ctx: &egui::Context,
        plan: &Plan,
        journal: Option<PathBuf>,
        pacer: &Pacer,
    ) -> loaderbench_engine::error::Result<ChildRun> {
        let (settle_ctx, wake_ctx) = (ctx.clone(), ctx.clone());
        let (settling, reporting) = (pacer.clone(), pacer.clone());
        let settle = move |queued: &crossbeam_channel::Receiver<loaderbench_measure::Event>| {
            settling.settle(&settle_ctx, queued);
        };
        let wake = move |event: &loaderbench_measure::Event| {
            reporting.reported(event);
            if pacing::redraws_at_once(event) {
                wake_ctx.request_repaint();
            }
        };
        let program = self.measurer.program.as_deref();
        ChildRun::start(plan, journal, program, None, settle, wake)
    }

    /// Stops the run measured here.
    pub(super) fn cancel_run(&self) {
        if let Some(handle) = self.live.as_ref().and_then(|r| r.handle.as_ref()) {
            handle.cancel();
        }
    }
}
