//! The app's tune: `loaderbench tune` on the preset being edited, run as a child
//! process like the app's runs (so the window never shares the measured process), with
//! its progress as JSON lines (`--events`) folded into the [`TuneProgress`] each frame.
//! The window draws only when an event arrives (a frame on a software renderer costs
//! both cores, which the tune's interference meter would see), so the budget bar moves
//! with each measurement.
//! Cancel is Ctrl-C to the child (the tune stops and keeps what it measured, as in a
//! terminal). When it ends, its results open like a run measured here, with the trail's
//! best set marked beside them; a tune that fails leaves its error in the message bar.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::tune_view::TuneProgress;
use loaderbench_analysis::tune::TuneEvent;
use loaderbench_measure::results_file;

use super::super::messages::Messages;
use super::event_child::EventChild;
use super::live_run::LiveRun;
use super::{RunEnded, Runs};
use crate::pacing::Pacer;

/// A tune the window shows: running in its child, or ended.
pub(super) struct TuneRun {
    child: EventChild<TuneEvent>,
    json: PathBuf,
    /// Holds the preset file and the results until the tune is shown.
    _scratch: tempfile::TempDir,
    pub(super) progress: TuneProgress,
}

impl TuneRun {
    pub(super) fn is_running(&self) -> bool {
        self.child.is_running()
    }

    pub(super) fn pacer(&self) -> &Pacer {
        &self.child.pacer
    }
}

impl Runs {
    /// Starts tuning `plan`'s preset within the budget field's seconds.
    pub(in super::super) fn start_tune(
        &mut self,
        ctx: &egui::Context,
        plan: &loaderbench_engine::plan::Plan,
        messages: &mut Messages,
    ) {
        let budget = Duration::from_secs(u64::from(self.tune_budget_s.max(1)));
        match self.spawn_tune(&plan.preset, budget, ctx) {
            Ok(mut tune) => {
                tune.progress =
                    TuneProgress::new(plan.labels(), budget, plan.preset.planned_epochs);
                messages.clear_errors();
                self.tune = Some(tune);
            }
            Err(err) => messages.error(format!("The tune could not start: {err}")),
        }
    }

    fn spawn_tune(
        &self,
        preset: &loaderbench_engine::preset::Preset,
        budget: Duration,
        ctx: &egui::Context,
    ) -> std::io::Result<TuneRun> {
        let scratch = tempfile::tempdir()?;
        let preset_path = scratch.path().join("tune.ron");
        // No path of the preset lies under a folder made just now, so the file holds
        // every path absolute (`Preset::save`), as the tune's own process must read them.
        preset
            .save(&preset_path)
            .map_err(|err| std::io::Error::other(err.to_string()))?;
        let json = scratch.path().join("tune.json");
        let program = match &self.measurer.program {
            Some(program) => program.clone(),
            None => std::env::current_exe()?,
        };
        let mut command = Command::new(program);
        command
            .arg("tune")
            .arg(&preset_path)
            .arg("--budget")
            .arg(format!("{}s", budget.as_secs()))
            .arg("--json")
            .arg(&json)
            .args(["--events", "--quiet"]);
        if let Some(dir) = &self.measurer.journal_dir {
            // Made here, so the tune appends to it.
            let journal = loaderbench_measure::new_journal(dir, &format!("{}-tune", preset.name))
                .map_err(|err| std::io::Error::other(err.to_string()))?;
            command.arg("--journal").arg(journal).arg("--append");
        }
        Ok(TuneRun {
            child: EventChild::spawn(command, "tune", ctx)?,
            json,
            _scratch: scratch,
            progress: TuneProgress::new(Vec::new(), budget, preset.planned_epochs),
        })
    }

    /// Folds in the tune's events; when its process has ended, shows its results (the
    /// run's end reported as a live run's is).
    pub(in super::super) fn drain_tune(&mut self, messages: &mut Messages) -> Option<RunEnded> {
        let tune = self.tune.as_mut()?;
        let progress = &mut tune.progress;
        let ended = tune.child.drain(|event| progress.apply(&event))?;
        let read = results_file::read(&tune.json);
        tune.progress
            .finish(read.as_ref().ok().and_then(|r| r.tune.as_ref()));
        let mut run_ended = None;
        match read {
            Ok(result) => {
                self.live = Some(LiveRun::replayed(result));
                run_ended = self.end_of_run(messages);
            }
            Err(err) if ended.failure.is_none() => {
                messages.error(format!("The tune's results could not be read: {err}"));
            }
            Err(_) => {}
        }
        if let Some(failure) = ended.failure {
            messages.error(format!("The tune failed: {failure}"));
        } else if ended.stopped() {
            messages.note("The tune was stopped; what it measured is kept.");
        }
        run_ended
    }

    /// Stops the tune as Ctrl-C would: it ends its round early and keeps the rest.
    pub(super) fn cancel_tune(&mut self) {
        if let Some(tune) = self.tune.as_mut() {
            tune.child.interrupt();
        }
    }
}
