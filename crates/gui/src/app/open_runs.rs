//! Saved runs opened in the window: a results JSON or a journal, from the command line,
//! the File menu (also from its Recent runs), the typed path field or dropped onto the
//! window; several are plotted together. The run is replayed into the same live data a
//! run the app measured builds, so its plots, table, analysis and baseline comparison
//! are exactly what a live run shows; a file that cannot be read leaves one error naming
//! the file and the problem.

use std::path::{Path, PathBuf};

use crate::actions::Action;
use crate::live::RunData;
use loaderbench_measure::Event;
use loaderbench_measure::results::{RunResult, RunStatus};
use loaderbench_measure::results_file;
use loaderbench_present::documents;
use loaderbench_present::overlay;

use super::App;
use super::run_lifecycle::LiveRun;

/// How many recent runs the File menu lists.
const RECENT_RUNS: usize = 10;

/// Rebuilds the live data of a finished run from its result, by replaying the events a
/// run sends: each epoch of each config, its warnings, then how the run ended.
pub(super) fn replay(result: RunResult) -> RunData {
    let warmup = result.results.iter().any(|r| r.warmup.is_some());
    let mut data = RunData::new(result.labels.clone(), result.epochs, result.repeats, warmup);
    let mut header = result.clone();
    header.results.clear();
    header.status = RunStatus::Running;
    let batches_per_epoch = result
        .results
        .iter()
        .flat_map(|r| r.epochs.first())
        .map(|epoch| epoch.batches)
        .next()
        .unwrap_or(0);
    data.apply(Event::Started {
        result: Box::new(header),
        batches_per_epoch,
    });
    for config in &result.results {
        for epoch in config.warmup.iter().chain(&config.epochs) {
            data.apply(Event::EpochFinished {
                config: config.config_index,
                repeat: config.repeat,
                result: Box::new(epoch.clone()),
            });
        }
        data.apply(Event::ConfigFinished {
            result: Box::new(config.clone()),
        });
    }
    for message in &result.warnings {
        data.apply(Event::Warning {
            config: None,
            message: message.clone(),
        });
    }
    data.apply(match result.status.clone() {
        RunStatus::Finished => Event::Finished {
            result: Box::new(result),
        },
        RunStatus::Cancelled => Event::Cancelled {
            result: Box::new(result),
        },
        RunStatus::Failed { error } => Event::Failed {
            error,
            bad_input: false,
            result: Box::new(result),
        },
        RunStatus::Running => Event::Failed {
            error: "the run stopped before it ended (its journal has no end)".to_owned(),
            bad_input: false,
            result: Box::new(result),
        },
    });
    data
}

impl App {
    /// Opens the saved run at `path` in place of the shown run, its preset put into the
    /// setup panel, or beside the shown runs when `add` (not while a run is going).
    pub(super) fn open_results(&mut self, path: &Path, add: bool) {
        if self.is_running() {
            self.error("Stop the run before opening saved results.");
            return;
        }
        match results_file::read(path) {
            Ok(result) => {
                if !add {
                    self.shown.clear();
                    self.show_setup_of(&result);
                } else if self.shown.is_empty()
                    && let Some(here) = self.result()
                {
                    // The run measured here joins the plot under a name of its own.
                    self.shown
                        .push((PathBuf::from("this run.json"), here.clone()));
                }
                self.shown.push((path.to_path_buf(), result));
                self.show_documents();
                self.note(format!("Opened {}", path.display()));
            }
            Err(err) => self.error(format!("Could not open the results: {err}")),
        }
    }

    /// Shows `runs` (already read, each with the file it came from) in place of the shown
    /// run, overlaid when there are several.
    pub fn show_runs(&mut self, runs: Vec<(PathBuf, RunResult)>) {
        if let Some((_, first)) = runs.first() {
            self.show_setup_of(first);
        }
        self.shown = runs;
        self.show_documents();
    }

    /// Puts the preset `result` was measured with into the setup panel, so that the panel
    /// and the header's configs × repeats describe the run shown, not the preset edited
    /// before; a file from before the preset was saved leaves the panel as it is.
    fn show_setup_of(&mut self, result: &RunResult) {
        if let Some(preset) = &result.setup {
            self.replace_preset(preset.clone(), None);
        }
    }

    /// Shows the opened runs, overlaid when there are several.
    fn show_documents(&mut self) {
        let runs = self
            .open_run_names()
            .into_iter()
            .zip(self.shown.iter().map(|(_, run)| run.clone()))
            .collect();
        let Some(result) = overlay::overlay(runs) else {
            return;
        };
        self.selected = None;
        self.messages.retain(|m| !m.error);
        self.run = Some(LiveRun::replayed(result));
        // Analysis, warnings and how the run ended, as when a live run ends.
        self.drain_events();
    }

    /// The names the open runs are shown under, in order.
    pub(super) fn open_run_names(&self) -> Vec<String> {
        let paths: Vec<&Path> = self.shown.iter().map(|(path, _)| path.as_path()).collect();
        overlay::run_names(&paths)
    }

    /// Puts the shown run's preset into the setup panel.
    pub(super) fn load_run_preset(&mut self) {
        match self.result().and_then(|run| run.setup.clone()) {
            Some(preset) => {
                self.note(format!("Loaded the preset of {}", preset.name));
                self.replace_preset(preset, None);
            }
            None => self.error("This run's file holds no preset (it predates saving one)."),
        }
    }

    /// Where run journals go, for Recent runs and the results dialogs.
    pub(super) fn runs_dir(&self) -> PathBuf {
        self.journal_dir
            .clone()
            .unwrap_or_else(loaderbench_measure::runs_dir)
    }

    /// The most recent runs, read once and kept until a run starts.
    pub(super) fn recent_runs(&mut self) -> &[(PathBuf, RunResult)] {
        let dir = self.runs_dir();
        self.recent
            .get_or_insert_with(|| documents::recent(&dir, RECENT_RUNS))
    }

    /// The File menu's Recent runs: each opens on a click, or joins the plot with `+`.
    pub(super) fn recent_menu(&mut self, ui: &mut egui::Ui, actions: &mut Vec<Action>) {
        let dir = self.runs_dir();
        let recent = self.recent_runs();
        if recent.is_empty() {
            ui.label(format!("No runs yet in {}", dir.display()));
        }
        for (path, run) in recent {
            ui.horizontal(|ui| {
                let line = documents::describe(run);
                if ui
                    .button(line)
                    .on_hover_text(path.display().to_string())
                    .clicked()
                {
                    actions.push(Action::OpenResults(path.clone()));
                }
                if ui
                    .small_button("+")
                    .on_hover_text("Plot it with the shown runs")
                    .clicked()
                {
                    actions.push(Action::AddResults(path.clone()));
                }
            });
        }
    }

    /// Files dropped onto the window: saved runs open (several are plotted together),
    /// presets load.
    pub(super) fn dropped_files(&self, ctx: &egui::Context, actions: &mut Vec<Action>) {
        let dropped: Vec<PathBuf> = ctx.input(|input| {
            input
                .raw
                .dropped_files
                .iter()
                .map(|file| file.path().to_path_buf())
                .collect()
        });
        let mut results = 0;
        for path in dropped {
            match open_action(path) {
                Action::OpenResults(path) if results > 0 => {
                    actions.push(Action::AddResults(path));
                }
                action => {
                    results += usize::from(matches!(action, Action::OpenResults(_)));
                    actions.push(action);
                }
            }
        }
    }
}

/// What opening `path` means: a saved run by its extension, else a preset.
pub(super) fn open_action(path: PathBuf) -> Action {
    if documents::is_results_file(&path) {
        Action::OpenResults(path)
    } else {
        Action::OpenPreset(path)
    }
}
