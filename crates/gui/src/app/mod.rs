//! The explorer window, composed of parts that each own their state (as egui's `View`
//! and rerun's panels): the preset editor ([`editor`]: the preset, its form, paths and
//! plan, remembered between sessions), the runs ([`runs`]: the live run, the tune, the
//! saved runs shown, the recent runs, the timeline's config), the areas drawn
//! ([`areas`]) and the PNG export waiting for them ([`png_export`]), the baseline form
//! ([`baseline_form`]), the scripted exit ([`script`]), the messages ([`messages`]) and
//! the window's own state ([`layout`]). Each frame drains the run's events and background
//! replies within a time budget, draws the parts (which return [`Action`]s), then
//! applies the actions here, where each goes to the parts it concerns; nothing changes
//! state halfway through drawing. This module also holds what tests read of the app.

mod areas;
mod baseline_form;
mod editor;
mod layout;
mod messages;
mod png_export;
mod results_panel;
mod runs;
mod script;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use egui::Rect;

use loaderbench_analysis::Analysis;
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Preset;
use loaderbench_measure::results::RunResult;
use loaderbench_measure::results_file;
use loaderbench_present::views::{ChartId, PngArea};

use super::actions::{Action, Pick};
use super::background::Background;
use super::charts::Chart;
use super::export_bytes;
use super::frames;
use super::live::Phase;

pub use self::editor::DEFAULT_PRESET;
pub use self::messages::Message;

use self::areas::DrawnAreas;
use self::baseline_form::BaselineForm;
use self::editor::PresetEditor;
use self::layout::Window;
use self::messages::Messages;
use self::png_export::PngExport;
use self::runs::{Measurer, RunEnded, Runs};
use self::script::ScriptedExit;

/// How the app was started.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// A preset file or built-in name; replaces the remembered preset.
    pub preset: Option<String>,
    /// Saved runs (results JSON or journals) to open; several are plotted together.
    pub results: Vec<PathBuf>,
    /// Start the run as soon as the window opens.
    pub run_now: bool,
    /// Where run journals go (`None`: the user data directory).
    pub journal_dir: Option<PathBuf>,
    /// The program that measures runs as `__measure` in a child process (`None`: this
    /// one). Tests name the loaderbench binary.
    pub measurer: Option<PathBuf>,
    /// Write the results here as JSON when the run ends.
    pub json: Option<PathBuf>,
    /// Close the window when the run ends; the exit code (as `loaderbench run` would
    /// give it) is left here.
    pub exit: Option<Arc<Mutex<Option<u8>>>>,
}

/// The desktop app: its parts.
pub struct App {
    editor: PresetEditor,
    runs: Runs,
    areas: DrawnAreas,
    png_export: PngExport,
    baselines: BaselineForm,
    script: ScriptedExit,
    messages: Messages,
    background: Background,
    window: Window,
}

impl App {
    /// Builds the app: the launch preset, else the remembered state, else seed-light.
    pub fn new(cc: &eframe::CreationContext<'_>, launch: Launch) -> App {
        let remembered = cc
            .storage
            .and_then(|storage| eframe::get_value(storage, eframe::APP_KEY));
        let mut messages = Messages::default();
        let editor = PresetEditor::open(remembered, launch.preset.as_deref(), &mut messages);
        let measurer = Measurer {
            program: launch.measurer,
            journal_dir: launch.journal_dir,
        };
        let mut app = App {
            editor,
            runs: Runs::new(measurer),
            areas: DrawnAreas::default(),
            png_export: PngExport::default(),
            baselines: BaselineForm::default(),
            script: ScriptedExit::new(launch.json, launch.exit),
            messages,
            background: Background::new(cc.egui_ctx.clone()),
            window: Window::new(cc.gl.is_some()),
        };
        if let Some(gl) = &cc.gl {
            frames::fit_to_renderer(&cc.egui_ctx, gl);
        }
        // A preset named on the command line stays in the setup panel: the runs are
        // added (with none shown yet, as the first would open), which keeps the preset.
        let keep_preset = launch.preset.is_some();
        let opens = launch.results.iter().enumerate().map(|(index, path)| {
            let add = index > 0 || keep_preset;
            let path = path.clone();
            if add {
                Action::AddResults(path)
            } else {
                Action::OpenResults(path)
            }
        });
        app.apply_all(&cc.egui_ctx, opens.collect());
        if launch.run_now {
            app.apply(&cc.egui_ctx, Action::StartRun);
        }
        app
    }

    /// The preset being edited.
    pub fn preset(&self) -> &Preset {
        self.editor.preset()
    }

    /// The file the preset came from or was saved to.
    pub fn preset_path(&self) -> Option<&Path> {
        self.editor.preset_path()
    }

    /// True while a run or a tune is going.
    pub fn is_running(&self) -> bool {
        self.runs.is_running()
    }

    /// The tune's progress, while it runs and after.
    pub fn tune_progress(&self) -> Option<&crate::tune_view::TuneProgress> {
        self.runs.tune_progress()
    }

    /// How the last run ended (or `Running`); `None` before the first run.
    pub fn phase(&self) -> Option<&Phase> {
        self.runs.phase()
    }

    /// The latest run's result so far.
    pub fn result(&self) -> Option<&RunResult> {
        self.runs.result()
    }

    /// The charts as they are drawn now: first batch, epoch times, the rank spread when
    /// a config has several ranks, timeline.
    pub fn charts(&self) -> Vec<Chart> {
        self.runs.charts()
    }

    /// The analysis of the last run, once it has ended.
    pub fn analysis(&self) -> Option<&Analysis> {
        self.runs.analysis()
    }

    /// The analysis charts as they are drawn now: ledger, scaling, where the time goes,
    /// memory and throughput, then the stall with a training step and the baseline
    /// comparison when there is one.
    pub fn analysis_charts(&self) -> Vec<Chart> {
        self.runs.analysis_charts()
    }

    /// Where the analysis section was drawn in the last frame, in points.
    pub fn analysis_rect(&self) -> Option<Rect> {
        self.areas.area_rect(PngArea::Analysis)
    }

    /// The messages shown in the window.
    pub fn messages(&self) -> &[Message] {
        self.messages.all()
    }

    /// The window title: the preset's name, `*` when it has unsaved changes.
    pub fn title(&self) -> String {
        self.editor.title()
    }

    /// Sets where exports go, as the export file dialog does.
    pub fn set_export_path(&mut self, path: PathBuf) {
        self.editor.set_export_path(path);
    }

    /// Where `area` was drawn in the last frame, in points, as its PNG export crops it
    /// (the part on screen).
    pub fn area_rect(&self, area: PngArea) -> Option<Rect> {
        self.areas.area_rect(area)
    }

    /// Where chart `id` was drawn in the last frame, in points, on screen or not.
    pub fn chart_rect(&self, id: ChartId) -> Option<Rect> {
        self.areas.chart_rect(id)
    }

    /// Where the two plots were drawn in the last frame, in points.
    pub fn plots_rect(&self) -> Option<Rect> {
        self.areas.area_rect(PngArea::Plots)
    }

    /// Shows `runs` (already read, each with the file it came from) in place of the shown
    /// run, overlaid when there are several; the first one's preset goes into the setup
    /// panel.
    pub fn show_runs(&mut self, runs: Vec<(PathBuf, RunResult)>) {
        if let Some(preset) = runs.first().and_then(|(_, run)| run.setup.clone()) {
            self.editor.replace(preset, None);
        }
        let ended = self.runs.show(runs, &mut self.messages);
        self.run_ended(ended);
    }

    /// Applies a frame's `actions` in order. A saved run that cannot be opened is said
    /// after them all: opening the next one clears the errors shown, and took with it
    /// the one naming the file before it (`gui bad.json good.json` said nothing of
    /// `bad.json`).
    fn apply_all(&mut self, ctx: &egui::Context, actions: Vec<Action>) {
        let mut unopened = Vec::new();
        for action in actions {
            match action {
                Action::OpenResults(path) => unopened.extend(self.open_results(&path, false).err()),
                Action::AddResults(path) => unopened.extend(self.open_results(&path, true).err()),
                action => self.apply(ctx, action),
            }
        }
        for error in unopened {
            self.messages.error(error);
        }
    }

    /// Opens the saved run at `path` in place of the shown run, its preset put into the
    /// setup panel (so that the panel and the run bar describe the run shown; a file
    /// from before the preset was saved leaves the panel as it is), or beside the shown
    /// runs when `add` (not while a run is going); the error to show where it cannot.
    fn open_results(&mut self, path: &Path, add: bool) -> Result<(), String> {
        if self.is_running() {
            return Err("Stop the run before opening saved results.".to_owned());
        }
        let result =
            results_file::read(path).map_err(|err| format!("Could not open the results: {err}"))?;
        if !add && let Some(preset) = &result.setup {
            self.editor.replace(preset.clone(), None);
        }
        let ended = self.runs.open(path, result, add, &mut self.messages);
        self.run_ended(ended);
        self.messages.note(format!("Opened {}", path.display()));
        Ok(())
    }

    /// A shown run that just ended: the saved baselines read again (it may be compared
    /// with one), and a scripted run's end.
    fn run_ended(&mut self, ended: Option<RunEnded>) {
        if let Some(ended) = ended {
            if let (Phase::Failed(error), Some(field)) = (&ended.phase, &ended.field) {
                self.editor.run_failed_on(field.clone(), error.clone());
            }
            self.baselines.refresh();
            let result = self.runs.result();
            self.script.run_ended(&ended, result, &mut self.messages);
        }
    }

    /// The plan to measure now; `None` (with a message saying why) while something runs,
    /// a field is marked, or the preset is no plan.
    fn plan_to_measure(&mut self) -> Option<Plan> {
        if self.is_running() {
            return None;
        }
        self.editor.plan_to_measure(&mut self.messages)
    }

    /// Applies one action, after the frame that asked for it was drawn: a part's own
    /// goes to the part; one that spans parts is composed here.
    fn apply(&mut self, ctx: &egui::Context, action: Action) {
        match action {
            Action::Edit(_)
            | Action::NewPreset
            | Action::LoadBuiltin(_)
            | Action::OpenPreset(_)
            | Action::SavePreset(_) => self.editor.apply(action, &mut self.messages),
            Action::TuneBudget(_)
            | Action::CancelRun
            | Action::SelectConfig(_)
            | Action::StagesPerEpoch(_)
            | Action::CompareBaseline(_)
            | Action::CompareOpenRun(_) => self.runs.apply(action, &mut self.messages),
            Action::DismissMessage(index) => self.messages.dismiss(index),
            Action::SaveBaseline(name) => {
                let result = self.runs.result();
                self.baselines.save(&name, result, &mut self.messages);
            }
            Action::Save => {
                let save = self.editor.save_action();
                self.apply(ctx, save);
            }
            Action::OpenResults(_) | Action::AddResults(_) => self.apply_all(ctx, vec![action]),
            Action::LoadRunPreset => self.load_run_preset(),
            Action::Browse(pick) => self.browse(pick),
            Action::StartRun => {
                self.runs.forget_tune();
                if let Some(plan) = self.plan_to_measure() {
                    self.runs.start_run(ctx, &plan, &mut self.messages);
                }
            }
            Action::StartTune => {
                if let Some(plan) = self.plan_to_measure() {
                    self.runs.start_tune(ctx, &plan, &mut self.messages);
                }
            }
            Action::MeasureFurther => self.runs.measure_further(ctx, &mut self.messages),
            Action::CopyMarkdown => self.copy_markdown(ctx),
            Action::ExportPng(area) => self.export_png(area),
            Action::ExportData(format) => self.export_data(format),
        }
    }

    /// A path a file dialog picked, taken as the action it was picked for.
    fn picked(&mut self, ctx: &egui::Context, pick: Pick, path: PathBuf) {
        match pick {
            Pick::OpenPreset => self.apply(ctx, Action::OpenPreset(path)),
            Pick::OpenResults => self.apply(ctx, Action::OpenResults(path)),
            Pick::AddResults => self.apply(ctx, Action::AddResults(path)),
            Pick::SavePresetAs => self.apply(ctx, Action::SavePreset(path)),
            Pick::Dataset(_) | Pick::PythonModule => self.editor.set_dataset_path(path),
            Pick::StepModel | Pick::StepModule => self.editor.set_step_path(path),
            Pick::ExportPath => self.set_export_path(path),
        }
    }

    /// Opens a file dialog (on a background thread) where the pick is likely to be.
    fn browse(&mut self, pick: Pick) {
        let start = match pick {
            Pick::OpenResults | Pick::AddResults => Some(self.runs.runs_dir()),
            _ => self.editor.dialog_start(pick),
        };
        self.background.pick(pick, start);
    }

    /// Puts the shown run's preset into the setup panel.
    fn load_run_preset(&mut self) {
        match self.result().and_then(|run| run.setup.clone()) {
            Some(preset) => {
                self.messages
                    .note(format!("Loaded the preset of {}", preset.name));
                self.editor.replace(preset, None);
            }
            None => self
                .messages
                .error("This run's file holds no preset (it predates saving one)."),
        }
    }

    fn copy_markdown(&mut self, ctx: &egui::Context) {
        if let Some(result) = self.result() {
            let text = result
                .pipelines()
                .iter()
                .map(|p| loaderbench_present::export::markdown::table(result, p))
                .collect::<Vec<_>>()
                .join("\n");
            ctx.copy_text(text);
            self.messages.note("Copied the results table as Markdown.");
        }
    }

    fn export_png(&mut self, area: PngArea) {
        if self.result().is_none() {
            self.messages
                .error("Nothing to export yet: run a benchmark first.");
            return;
        }
        if let PngArea::Chart(id) = area
            && self.chart_rect(id).is_none()
        {
            let title = id.title();
            self.messages
                .error(format!("This run has no \"{title}\" chart."));
            return;
        }
        let suffix = format!("-{}", area.name());
        let path = export_bytes::path_for(self.editor.export_path(), None, &suffix);
        self.png_export.request(area, path);
    }

    fn export_data(&mut self, format: loaderbench_present::export::Format) {
        match self.result().cloned() {
            Some(result) => {
                let path = export_bytes::path_for(self.editor.export_path(), Some(format), "");
                self.background
                    .write(path, move || export_bytes::data_bytes(format, &result));
            }
            None => self
                .messages
                .error("Nothing to export yet: run a benchmark first."),
        }
    }
}
