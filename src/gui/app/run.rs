//! The run's lifecycle: starting one from the plan on the engine's background thread,
//! folding its events into the live data each frame within a time budget, cancelling
//! it, and what happens when it ends (analysis, warnings, how it ended).

use std::time::{Duration, Instant};

use crate::analysis::Analysis;
use crate::baseline::{self, Change};
use crate::bench::{self, RunHandle, RunOptions};

use crate::gui::live::{Phase, RunData};

use super::{App, WARNING};

/// How long a frame may spend folding in run events; the rest wait for the next frame.
const EVENT_BUDGET: Duration = Duration::from_millis(4);
/// How often the window redraws while a run streams events (about 15 frames a second).
pub(super) const LIVE_FRAME_INTERVAL: Duration = Duration::from_millis(66);

/// A run the window shows: live, or finished.
pub(super) struct LiveRun {
    pub(super) handle: Option<RunHandle>,
    pub(super) data: RunData,
    pub(super) started: Instant,
    /// Set when the run ends, to freeze the elapsed time.
    pub(super) took: Option<Duration>,
    /// The analysis of the final result, once the run has ended.
    pub(super) analysis: Option<Analysis>,
    /// The baseline it is compared with, and each config's change.
    pub(super) comparison: Option<(String, Vec<Change>)>,
}

impl LiveRun {
    pub(super) fn elapsed(&self) -> Duration {
        self.took.unwrap_or_else(|| self.started.elapsed())
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
            run.handle = None;
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
            match ended {
                Phase::Failed(error) => self.error(format!("The run failed: {error}")),
                Phase::Cancelled => self.note("The run was cancelled; measured configs are kept."),
                Phase::Finished | Phase::Running => {}
            }
        }
        left_over
    }

    pub(super) fn start_run(&mut self, ctx: &egui::Context) {
        if self.is_running() {
            return;
        }
        if self.form.has_errors() {
            self.error("Fix the fields marked in the side panel first.");
            return;
        }
        let plan = match &self.plan {
            Ok(plan) => plan.clone(),
            Err(error) => {
                self.error(format!("The preset cannot run: {error}"));
                return;
            }
        };
        let data = RunData::new(
            (0..plan.configs.len()).map(|i| plan.label(i)).collect(),
            plan.epochs,
            plan.repeats,
            plan.warmup,
        );
        let options = RunOptions {
            journal: self.journal_dir.as_ref().map(|dir| {
                let stamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis());
                dir.join(format!("{}-{stamp}.jsonl", plan.name))
            }),
            ..RunOptions::default()
        };
        let wake_ctx = ctx.clone();
        // Batch events arrive thousands of times a second; redrawing for each would take
        // the CPU the measurement needs, so a run asks for frames at a live-plot rate.
        let handle = bench::spawn(plan, options, move || {
            wake_ctx.request_repaint_after(LIVE_FRAME_INTERVAL)
        });
        self.selected = None;
        self.messages.retain(|m| !m.error);
        self.run = Some(LiveRun {
            handle: Some(handle),
            data,
            started: Instant::now(),
            took: None,
            analysis: None,
            comparison: None,
        });
    }

    pub(super) fn cancel_run(&self) {
        if let Some(handle) = self.run.as_ref().and_then(|r| r.handle.as_ref()) {
            handle.cancel();
        }
    }
}
