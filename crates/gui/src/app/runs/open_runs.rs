//! Saved runs opened in the window: a results JSON or a journal, from the command line,
//! the File menu (also from its Recent runs), the typed path field or dropped onto the
//! window; several are plotted together. The runs are overlaid and replayed into the
//! same live data a run the app measured builds ([`RunData::replayed`]), so their plots,
//! table, analysis and baseline comparison are exactly what a live run shows.
//!
//! [`RunData::replayed`]: crate::live::RunData::replayed

use std::path::{Path, PathBuf};

use crate::actions::Action;
use loaderbench_measure::results::RunResult;
use loaderbench_present::documents;
use loaderbench_present::overlay;

use super::super::messages::Messages;
use super::live_run::LiveRun;
use super::{RunEnded, Runs};

/// How many recent runs the File menu lists.
const RECENT_RUNS: usize = 10;

impl Runs {
    /// Shows the saved run `result`, read from `path`, in place of the shown runs, or
    /// beside them when `add`.
    pub(in super::super) fn open(
        &mut self,
        path: &Path,
        result: RunResult,
        add: bool,
        messages: &mut Messages,
    ) -> Option<RunEnded> {
        if !add {
            self.shown.clear();
        } else if self.shown.is_empty()
            && let Some(here) = self.result()
        {
            // The run measured here joins the plot under a name of its own.
            self.shown
                .push((PathBuf::from("this run.json"), here.clone()));
        }
        self.shown.push((path.to_path_buf(), result));
        self.show_documents(messages)
    }

    /// Shows `runs` (already read, each with the file it came from) in place of the shown
    /// run, overlaid when there are several.
    pub(in super::super) fn show(
        &mut self,
        runs: Vec<(PathBuf, RunResult)>,
        messages: &mut Messages,
    ) -> Option<RunEnded> {
        self.shown = runs;
        self.show_documents(messages)
    }

    /// Shows the opened runs, overlaid when there are several, ended as a live run ends
    /// (analysis, warnings, how it ended).
    fn show_documents(&mut self, messages: &mut Messages) -> Option<RunEnded> {
        let runs = self
            .open_run_names()
            .into_iter()
            .zip(self.shown.iter().map(|(_, run)| run.clone()))
            .collect();
        let result = overlay::overlay(runs)?;
        self.selected = None;
        messages.clear_errors();
        let mut run = LiveRun::replayed(result);
        // One journal opened alone can be measured further, appending to it.
        if let [(path, _)] = self.shown.as_slice()
            && path.extension().is_some_and(|e| e == "jsonl")
        {
            run.journal = Some(path.clone());
        }
        self.live = Some(run);
        self.end_of_run(messages)
    }

    /// The names the open runs are shown under, in order.
    pub(in super::super) fn open_run_names(&self) -> Vec<String> {
        let paths: Vec<&Path> = self.shown.iter().map(|(path, _)| path.as_path()).collect();
        overlay::run_names(&paths)
    }

    /// Where run journals go, for Recent runs and the results dialogs.
    pub(in super::super) fn runs_dir(&self) -> PathBuf {
        self.measurer
            .journal_dir
            .clone()
            .unwrap_or_else(loaderbench_measure::runs_dir)
    }

    /// The File menu's Recent runs, read once and kept until a run starts: each opens on
    /// a click, or joins the plot with `+`.
    pub(in super::super) fn recent_menu(&mut self, ui: &mut egui::Ui, actions: &mut Vec<Action>) {
        let dir = self.runs_dir();
        let recent = self
            .recent
            .get_or_insert_with(|| documents::recent(&dir, RECENT_RUNS));
        if recent.is_empty() {
            ui.label(format!("No runs yet in {}", dir.display()));
        }
        for (path, run) in recent.iter() {
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
}
