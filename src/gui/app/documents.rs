//! Saved runs opened in the window: a results JSON or a journal, from the command line,
//! the File menu, the typed path field or dropped onto the window. The run is replayed
//! into the same live data a run the app measured builds, so its plots, table, analysis
//! and baseline comparison are exactly what a live run shows; a file that cannot be
//! read leaves one error naming the file and the problem.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::bench::Event;
use crate::documents;
use crate::gui::actions::Action;
use crate::gui::live::RunData;
use crate::results::{RunResult, RunStatus};

use super::App;
use super::run::LiveRun;

/// Rebuilds the live data of a finished run from its result, by replaying the events a
/// run sends: each epoch of each config, then how the run ended.
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
    /// Opens the saved run at `path` in place of the shown run (not while one is going).
    pub(super) fn open_results(&mut self, path: &Path) {
        if self.is_running() {
            self.error("Stop the run before opening saved results.");
            return;
        }
        match documents::read(path) {
            Ok(result) => {
                self.selected = None;
                self.messages.retain(|m| !m.error);
                self.note(format!("Opened {}", path.display()));
                self.run = Some(LiveRun {
                    handle: None,
                    epoch_since: Arc::new(Mutex::new(None)),
                    data: replay(result),
                    started: Instant::now(),
                    took: None,
                    analysis: None,
                    comparison: None,
                });
                // Analysis, warnings and how the run ended, as when a live run ends.
                self.drain_events();
            }
            Err(err) => self.error(format!("Could not open the results: {err}")),
        }
    }

    /// Files dropped onto the window: saved runs open, presets load.
    pub(super) fn dropped_files(&self, ctx: &egui::Context, actions: &mut Vec<Action>) {
        let dropped: Vec<PathBuf> = ctx.input(|input| {
            input
                .raw
                .dropped_files
                .iter()
                .map(|file| file.path().to_path_buf())
                .collect()
        });
        for path in dropped {
            actions.push(open_action(path));
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
