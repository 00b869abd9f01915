//! The explorer window: the preset being edited (saved between sessions), the run in
//! progress, and the frame loop. Each frame drains the run's events and background
//! replies within a time budget, draws the panels (which return [`Action`]s), then
//! applies the actions; nothing changes state halfway through drawing. This module holds
//! the app's state, what tests read of it, and where each action goes; its parts each
//! own one job: the run's lifecycle ([`run_lifecycle`]), measuring an unresolved run
//! further ([`resolve_run`]), the tune's ([`tune_run`]),
//! preset files and the title ([`preset_files`]), saved runs opened ([`open_runs`]),
//! exports and baselines ([`export_menu`]), and the frame's panels ([`layout`],
//! [`results_panel`]).

mod event_child;
mod export_menu;
mod layout;
mod open_runs;
mod preset_files;
mod resolve_run;
mod results_panel;
mod run_lifecycle;
mod tune_run;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use egui::Rect;

use loaderbench_analysis::Analysis;
use loaderbench_engine::builtin;
use loaderbench_engine::error::Error;
use loaderbench_engine::plan::Plan;
use loaderbench_engine::preset::Preset;
use loaderbench_measure::results::RunResult;

use super::actions::Action;
use super::background::Background;
use super::charts::{self, Chart};
use super::frames::{self, FrameCount};
use super::live::{Phase, RunData};
use super::setup::Form;
use super::{analysis_charts, analysis_view, cost_charts};
use loaderbench_present::views::{ChartId, PngArea};

use self::export_menu::PendingPng;
use self::preset_files::{PathFields, Saved};
use self::run_lifecycle::LiveRun;
use self::tune_run::TuneRun;

/// The preset the app opens with when nothing else is asked for or remembered.
pub const DEFAULT_PRESET: &str = "seed-light";

/// The tune budget field's first value, in seconds.
const DEFAULT_TUNE_BUDGET_S: u32 = 60;

/// How a run's warnings start in the message bar, which folds them into one line.
const WARNING: &str = "warning: ";

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

/// What a scripted run does when it ends.
#[derive(Debug, Clone, Default)]
struct Script {
    json: Option<PathBuf>,
    exit: Option<Arc<Mutex<Option<u8>>>>,
}

/// A message in the window: an error to act on, or a note of something done.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub error: bool,
    pub text: String,
}

/// The desktop app.
pub struct App {
    saved: Saved,
    form: Form,
    paths: PathFields,
    /// The edited preset as a plan, or why it is not one.
    plan: Result<Plan, Error>,
    run: Option<LiveRun>,
    /// The tune running, or the last one (shown beside its results).
    tune: Option<TuneRun>,
    /// The tune budget field, in seconds.
    tune_budget_s: u32,
    /// The saved runs shown together (empty for a run measured here).
    shown: Vec<(PathBuf, RunResult)>,
    /// The most recent journals, read when the File menu first needs them.
    recent: Option<Vec<(PathBuf, RunResult)>>,
    /// The config whose batches the timeline shows; `None` follows the run.
    selected: Option<usize>,
    messages: Vec<Message>,
    background: Background,
    pending_png: Option<PendingPng>,
    plots_rect: Option<Rect>,
    results_rect: Option<Rect>,
    analysis_rect: Option<Rect>,
    /// Where each chart was drawn in the last frame, in points (off screen too).
    chart_rects: Vec<(ChartId, Rect)>,
    /// The part of the results view on screen in the last frame.
    visible_rect: Option<Rect>,
    /// Where the time goes shows each epoch of each config.
    stages_per_epoch: bool,
    /// The baseline name field.
    baseline_name: String,
    /// The saved baselines, read when a run ends or one is saved (not every frame).
    baseline_names: Vec<String>,
    cuda_devices: usize,
    journal_dir: Option<PathBuf>,
    measurer: Option<PathBuf>,
    script: Script,
    /// Set when a scripted run has ended and the window should close.
    close_requested: bool,
    title: String,
    /// Where the frame benchmark reads how many frames the window drew.
    frame_count: FrameCount,
    /// Drawn in a native window, which clears to the panels' colour before each frame
    /// (`clear_color`), so the panels leave their fill out. The headless PNG renderer
    /// clears to transparent, so there they keep it.
    window_clears_to_panel_fill: bool,
}

impl App {
    /// Builds the app: the launch preset, else the remembered state, else seed-light.
    pub fn new(cc: &eframe::CreationContext<'_>, launch: Launch) -> App {
        let remembered: Option<Saved> = cc
            .storage
            .and_then(|storage| eframe::get_value(storage, eframe::APP_KEY));
        let mut messages = Vec::new();
        let mut saved = remembered.unwrap_or_default();
        let requested = launch.preset.clone().or_else(|| {
            (saved.clean.is_none() && saved.preset == Preset::default())
                .then(|| DEFAULT_PRESET.to_owned())
        });
        if let Some(name) = requested {
            match builtin::load(&name) {
                Ok((preset, origin)) => {
                    // A built-in preset's origin names no file on disk to save over.
                    saved.preset_path = Path::new(&name).exists().then_some(origin);
                    saved.clean = Some(preset.clone());
                    saved.preset = preset;
                }
                Err(err) => messages.push(Message {
                    error: true,
                    text: err.to_string(),
                }),
            }
        }
        let mut app = App {
            form: Form::from_preset(&saved.preset),
            paths: PathFields {
                preset: saved
                    .preset_path
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                export: saved.export_path.display().to_string(),
            },
            plan: Plan::from_preset(&saved.preset, saved.preset_path.as_deref()),
            saved,
            run: None,
            tune: None,
            tune_budget_s: DEFAULT_TUNE_BUDGET_S,
            shown: Vec::new(),
            recent: None,
            selected: None,
            messages,
            background: Background::new(cc.egui_ctx.clone()),
            pending_png: None,
            plots_rect: None,
            results_rect: None,
            analysis_rect: None,
            chart_rects: Vec::new(),
            visible_rect: None,
            stages_per_epoch: false,
            baseline_name: String::new(),
            baseline_names: Vec::new(),
            cuda_devices: loaderbench_engine::device::cuda_device_count(),
            journal_dir: launch.journal_dir,
            measurer: launch.measurer,
            script: Script {
                json: launch.json,
                exit: launch.exit,
            },
            close_requested: false,
            title: String::new(),
            frame_count: FrameCount::from_env(),
            window_clears_to_panel_fill: cc.gl.is_some(),
        };
        if let Some(gl) = &cc.gl {
            frames::fit_to_renderer(&cc.egui_ctx, gl);
        }
        // A preset named on the command line stays in the setup panel: the runs are
        // added (with none shown yet, as the first would open), which keeps the preset.
        let keep_preset = launch.preset.is_some();
        for (index, path) in launch.results.iter().enumerate() {
            app.open_results(path, index > 0 || keep_preset);
        }
        if launch.run_now {
            app.apply(&cc.egui_ctx, Action::StartRun);
        }
        app
    }

    /// The preset being edited.
    pub fn preset(&self) -> &Preset {
        &self.saved.preset
    }

    /// The file the preset came from or was saved to.
    pub fn preset_path(&self) -> Option<&Path> {
        self.saved.preset_path.as_deref()
    }

    /// True while a run or a tune is going.
    pub fn is_running(&self) -> bool {
        self.run_is_measuring() || self.tune.as_ref().is_some_and(TuneRun::is_running)
    }

    /// The tune's progress, while it runs and after.
    pub fn tune_progress(&self) -> Option<&crate::tune_view::TuneProgress> {
        self.tune.as_ref().map(|tune| &tune.progress)
    }

    /// How the last run ended (or `Running`); `None` before the first run.
    pub fn phase(&self) -> Option<&Phase> {
        self.run.as_ref().map(|run| &run.data.phase)
    }

    /// The latest run's result so far.
    pub fn result(&self) -> Option<&RunResult> {
        self.run.as_ref().and_then(|run| run.data.result.as_ref())
    }

    /// The charts as they are drawn now: first batch, epoch times, the rank spread when
    /// a config has several ranks, timeline.
    pub fn charts(&self) -> Vec<Chart> {
        self.run.as_ref().map_or_else(Vec::new, |run| {
            let data = &run.data;
            let mut charts = vec![charts::first_batch(data), charts::epoch_times(data)];
            charts.extend(charts::rank_spread(data));
            charts.push(charts::timeline(data, self.timeline_config(data)));
            charts
        })
    }

    /// The analysis of the last run, once it has ended.
    pub fn analysis(&self) -> Option<&Analysis> {
        self.run.as_ref().and_then(|run| run.analysis.as_ref())
    }

    /// The analysis charts as they are drawn now: ledger, scaling, where the time goes,
    /// memory and throughput, then the stall with a training step and the baseline
    /// comparison when there is one.
    pub fn analysis_charts(&self) -> Vec<Chart> {
        let Some(run) = &self.run else {
            return Vec::new();
        };
        let (Some(analysis), Some(result)) = (&run.analysis, &run.data.result) else {
            return Vec::new();
        };
        let mut charts = vec![
            analysis_charts::ledger(analysis),
            analysis_charts::scaling(analysis),
            analysis_view::stages_chart(result, self.stages_per_epoch),
            cost_charts::memory(result, analysis),
            cost_charts::throughput(result, analysis),
        ];
        charts.extend(analysis_charts::stall(analysis));
        if let Some((name, changes)) = &run.comparison {
            charts.push(analysis_charts::baseline(name, changes));
        }
        charts
    }

    /// Where the analysis section was drawn in the last frame, in points.
    pub fn analysis_rect(&self) -> Option<Rect> {
        self.analysis_rect
    }

    /// The messages shown in the window.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The window title: the preset's name, `*` when it has unsaved changes.
    pub fn title(&self) -> String {
        let dirty = self.saved.clean.as_ref() != Some(&self.saved.preset);
        format!(
            "loaderbench — {}{}",
            self.saved.preset.name,
            if dirty { " *" } else { "" }
        )
    }

    /// Sets where exports go, as the export file dialog does.
    pub fn set_export_path(&mut self, path: PathBuf) {
        self.paths.export = path.display().to_string();
        self.saved.export_path = path;
    }

    /// Where `area` was drawn in the last frame, in points, as its PNG export crops it
    /// (the part on screen).
    pub fn area_rect(&self, area: PngArea) -> Option<Rect> {
        match area {
            PngArea::Plots => self.plots_rect,
            PngArea::Results => self.results_rect,
            PngArea::Analysis => self.analysis_rect,
            PngArea::Chart(id) => self
                .chart_rect(id)
                .zip(self.visible_rect)
                .map(|(chart, visible)| chart.intersect(visible)),
        }
    }

    /// Where chart `id` was drawn in the last frame, in points, on screen or not.
    pub fn chart_rect(&self, id: ChartId) -> Option<Rect> {
        self.chart_rects
            .iter()
            .find(|(drawn, _)| *drawn == id)
            .map(|(_, rect)| *rect)
    }

    /// Where the two plots were drawn in the last frame, in points.
    pub fn plots_rect(&self) -> Option<Rect> {
        self.plots_rect
    }

    fn timeline_config(&self, data: &RunData) -> usize {
        self.selected
            .unwrap_or(data.progress.config)
            .min(data.labels.len().saturating_sub(1))
    }

    fn revalidate(&mut self) {
        self.plan = Plan::from_preset(&self.saved.preset, self.saved.preset_path.as_deref());
    }

    fn dismiss(&mut self, index: usize) {
        if index < self.messages.len() {
            self.messages.remove(index);
        }
    }

    fn note(&mut self, text: impl Into<String>) {
        self.push_message(false, text.into());
    }

    fn error(&mut self, text: impl Into<String>) {
        self.push_message(true, text.into());
    }

    fn push_message(&mut self, error: bool, text: String) {
        self.messages.retain(|m| m.text != text);
        self.messages.push(Message { error, text });
        if self.messages.len() > 6 {
            self.messages.remove(0);
        }
    }

    /// Applies one action, after the frame that asked for it was drawn.
    fn apply(&mut self, ctx: &egui::Context, action: Action) {
        match action {
            Action::Edit(preset) => {
                self.saved.preset = *preset;
                self.revalidate();
            }
            Action::NewPreset => self.new_preset(),
            Action::LoadBuiltin(name) => self.load_builtin(name),
            Action::OpenPreset(path) => self.open_preset(path),
            Action::OpenResults(path) => self.open_results(&path, false),
            Action::AddResults(path) => self.open_results(&path, true),
            Action::LoadRunPreset => self.load_run_preset(),
            Action::SavePreset(path) => self.save_preset(path),
            Action::Browse(pick) => self.browse(pick),
            Action::StartRun => {
                self.tune = None;
                self.start_run(ctx);
            }
            Action::StartTune => self.start_tune(ctx),
            Action::TuneBudget(seconds) => self.tune_budget_s = seconds,
            Action::CancelRun => {
                self.cancel_run();
                self.cancel_resolve();
                self.cancel_tune();
            }
            Action::SelectConfig(index) => self.selected = Some(index),
            Action::CopyMarkdown => self.copy_markdown(ctx),
            Action::ExportPng(area) => self.export_png(area),
            Action::StagesPerEpoch(per_epoch) => self.stages_per_epoch = per_epoch,
            Action::ExportData(format) => self.export_data(format),
            Action::DismissMessage(index) => self.dismiss(index),
            Action::SaveBaseline(name) => self.save_baseline(&name),
            Action::CompareBaseline(name) => self.compare_baseline(&name),
            Action::CompareOpenRun(index) => self.compare_open_run(index),
        }
    }
}
