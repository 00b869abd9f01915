//! The run's lifecycle: starting one from the plan in a child process that measures
//! exactly as `loaderbench run` does (see [`pacing`](crate::pacing) for how the
//! window keeps out of the measured epochs), folding its events into the live data each
//! frame within a time budget, cancelling it, and what happens when it ends (analysis,
//! warnings, how it ended, its journal handed to the resolve where the recommendation is
//! open, and for a scripted run the JSON file and the exit).

use std::time::{Duration, Instant};

use crate::live::{Phase, RunData};
use crate::pacing::{self, Pacer};
use loaderbench_analysis::baseline::{self, Change};
use loaderbench_analysis::{Analysis, warnings};
use loaderbench_measure::measuring_child::ChildRun;
use loaderbench_present::export::{self, Exporter};

use super::resolve_run::ResolveRun;
use super::{App, WARNING};

/// How long a frame may spend folding in run events; the rest wait for the next frame.
const EVENT_BUDGET: Duration = Duration::from_millis(4);
/// How soon the window draws again when a frame left events over.
pub(super) const LIVE_FRAME_INTERVAL: Duration = Duration::from_millis(66);

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
    /// The journal of a run measured here that just ended, for its resolve to take.
    pub(super) to_resolve: Option<std::path::PathBuf>,
    /// Its unresolved recommendation measured further, running or ended.
    pub(super) resolving: Option<ResolveRun>,
}

impl LiveRun {
    /// A finished run rebuilt from its result (a saved run, or a tune's results), to be
    /// shown as a run measured here is.
    pub(super) fn replayed(result: loaderbench_measure::results::RunResult) -> LiveRun {
        LiveRun {
            handle: None,
            pacer: Pacer::default(),
            data: super::open_runs::replay(result),
            started: Instant::now(),
            took: None,
            analysis: None,
            comparison: None,
            saved: true,
            to_resolve: None,
            resolving: None,
        }
    }

    pub(super) fn elapsed(&self) -> Duration {
        self.took.unwrap_or_else(|| self.started.elapsed())
    }

    /// When the window should draw again for the progress line alone.
    pub(super) fn next_frame_in(&self) -> Option<Duration> {
        self.pacer.next_frame_in()
    }
}

impl App {
    /// Folds in run events for at most `EVENT_BUDGET`; true when some are left over.
    pub(super) fn drain_events(&mut self) -> bool {
        let Some(run) = &mut self.run else {
            return false;
        };
        let deadline = Instant::now() + EVENT_BUDGET;
        let mut left_over = false;
        if let Some(handle) = &run.handle {
            while let Ok(event) = handle.events().try_recv() {
                run.data.apply(event);
                if Instant::now() >= deadline {
                    left_over = !handle.events().is_empty();
                    break;
                }
            }
        }
        if !run.data.is_running() && run.took.is_none() {
            run.took = Some(run.started.elapsed());
            if run.data.phase == Phase::Finished {
                run.to_resolve = run.handle.as_ref().map(|h| h.journal_path().to_path_buf());
            }
            run.handle = None;
            if let Some(result) = run.data.result.as_mut() {
                let found = warnings::attach(result);
                run.data.warnings.extend(found);
            }
            run.analysis = run
                .data
                .result
                .as_ref()
                .filter(|result| !result.results.is_empty())
                .map(Analysis::of);
            self.baseline_names = baseline::names();
            let ended = run.data.phase.clone();
            let warnings = std::mem::take(&mut run.data.warnings);
            for warning in warnings {
                self.note(format!("{WARNING}{warning}"));
            }
            match &ended {
                Phase::Failed(error) => self.error(format!("The run failed: {error}")),
                Phase::Cancelled => self.note("The run was cancelled; measured configs are kept."),
                Phase::Finished | Phase::Running => {}
            }
            self.end_script(&ended);
        }
        left_over
    }

    /// For a scripted run (`gui --run --json FILE --exit`): writes the JSON file and
    /// closes the window with the exit code `loaderbench run` would give.
    fn end_script(&mut self, ended: &Phase) {
        let mut code = match ended {
            Phase::Finished => 0,
            Phase::Cancelled => 130,
            Phase::Running => 1,
            Phase::Failed(_) => {
                let bad_input = self.run.as_ref().is_some_and(|run| run.data.bad_input);
                if bad_input { 2 } else { 1 }
            }
        };
        if let (Some(path), Some(result)) = (
            self.script.json.clone(),
            self.run.as_ref().and_then(|run| run.data.result.as_ref()),
        ) {
            let written = export::Json
                .export(result)
                .and_then(|bytes| loaderbench_engine::atomic_file::write(&path, &bytes));
            if let Err(err) = written {
                self.error(format!("The results could not be written: {err}"));
                code = code.max(1);
            }
        }
        if let Some(exit) = &self.script.exit {
            if let Ok(mut slot) = exit.lock() {
                *slot = Some(code);
            }
            self.close_requested = true;
        }
    }

    /// The plan to measure now; `None` (with a message saying why) while something runs,
    /// a field is marked, or the preset is no plan.
    pub(super) fn plan_to_measure(&mut self) -> Option<loaderbench_engine::plan::Plan> {
        if self.is_running() {
            return None;
        }
        if self.form.has_errors() {
            self.error("Fix the fields marked in the side panel first.");
            return None;
        }
        match &self.plan {
            Ok(plan) => Some(plan.clone()),
            Err(error) => {
                let text = format!("The preset cannot run: {error}");
                self.error(text);
                None
            }
        }
    }

    pub(super) fn start_run(&mut self, ctx: &egui::Context) {
        let Some(plan) = self.plan_to_measure() else {
            return;
        };
        let data = RunData::new(
            (0..plan.configs.len()).map(|i| plan.label(i)).collect(),
            plan.epochs,
            plan.repeats,
            plan.warmup,
        );
        let journal = match &self.journal_dir {
            Some(dir) => match loaderbench_measure::new_journal(dir, &plan.name) {
                Ok(path) => Some(path),
                Err(err) => {
                    self.error(format!("The run could not start: {err}"));
                    return;
                }
            },
            None => None,
        };
        let (settle_ctx, wake_ctx) = (ctx.clone(), ctx.clone());
        let pacer = Pacer::for_plan(&plan);
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
        let handle = match ChildRun::start(&plan, journal, self.measurer.as_deref(), settle, wake) {
            Ok(handle) => handle,
            Err(err) => {
                self.error(format!("The run could not start: {err}"));
                return;
            }
        };
        self.selected = None;
        self.messages.retain(|m| !m.error);
        self.shown.clear();
        self.recent = None;
        self.run = Some(LiveRun {
            pacer,
            handle: Some(handle),
            data,
            started: Instant::now(),
            took: None,
            analysis: None,
            comparison: None,
            saved: false,
            to_resolve: None,
            resolving: None,
        });
    }

    /// Whether the shown run is measuring, or measuring further.
    pub(super) fn run_is_measuring(&self) -> bool {
        self.run.as_ref().is_some_and(|run| {
            run.data.is_running() || run.resolving.as_ref().is_some_and(ResolveRun::is_running)
        })
    }

    pub(super) fn cancel_run(&self) {
        if let Some(handle) = self.run.as_ref().and_then(|r| r.handle.as_ref()) {
            handle.cancel();
        }
    }
}
