//! The explorer window: the preset being edited (saved between sessions), the run in
//! progress, and the frame loop. Each frame drains the run's events and background
//! replies within a time budget, draws the panels (which return [`Action`]s), then
//! applies the actions; nothing changes state halfway through drawing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use egui::{Key, KeyboardShortcut, Modifiers, Rect, RichText, Ui};
use serde::{Deserialize, Serialize};

use crate::analysis::Analysis;
use crate::baseline::{self, Change};
use crate::bench::{self, RunHandle, RunOptions};
use crate::builtin;
use crate::plan::Plan;
use crate::preset::Preset;
use crate::results::RunResult;

use super::actions::{Action, DataFormat, Pick, PngArea};
use super::analysis_charts;
use super::analysis_view;
use super::background::{Background, Reply};
use super::charts::{self, Chart};
use super::export;
use super::live::{Phase, RunData};
use super::setup::{self, Form};
use super::{compare_view, plots, table};

/// How long a frame may spend folding in run events; the rest wait for the next frame.
const EVENT_BUDGET: Duration = Duration::from_millis(4);
/// How often the window redraws while a run streams events (about 15 frames a second).
const LIVE_FRAME_INTERVAL: Duration = Duration::from_millis(66);

/// The preset the app opens with when nothing else is asked for or remembered.
pub const DEFAULT_PRESET: &str = "seed-light";

/// How the app was started.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// A preset file or built-in name; replaces the remembered preset.
    pub preset: Option<String>,
    /// Start the run as soon as the window opens.
    pub run_now: bool,
    /// Where run journals go (`None`: the user data directory).
    pub journal_dir: Option<PathBuf>,
}

/// What is remembered between sessions.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
struct Saved {
    preset: Preset,
    /// The file the preset came from or was last saved to.
    preset_path: Option<PathBuf>,
    /// The preset as last loaded or saved: edits since then mark the title with `*`.
    clean: Option<Preset>,
    /// Where exports go (the extension is set per format).
    export_path: PathBuf,
}

impl Default for Saved {
    fn default() -> Self {
        Saved {
            preset: Preset::default(),
            preset_path: None,
            clean: None,
            export_path: PathBuf::from("loaderbench-results.md"),
        }
    }
}

/// A message in the window: an error to act on, or a note of something done.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub error: bool,
    pub text: String,
}

/// A run the window shows: live, or finished.
struct LiveRun {
    handle: Option<RunHandle>,
    data: RunData,
    started: Instant,
    /// Set when the run ends, to freeze the elapsed time.
    took: Option<Duration>,
    /// The analysis of the final result, once the run has ended.
    analysis: Option<Analysis>,
    /// The baseline it is compared with, and each config's change.
    comparison: Option<(String, Vec<Change>)>,
}

impl LiveRun {
    fn elapsed(&self) -> Duration {
        self.took.unwrap_or_else(|| self.started.elapsed())
    }
}

/// A PNG export waiting for its screenshot.
struct PendingPng {
    area: PngArea,
    path: PathBuf,
}

/// The text fields for file paths (widget state, seeded from [`Saved`]).
struct PathFields {
    preset: String,
    export: String,
}

/// The desktop app.
pub struct App {
    saved: Saved,
    form: Form,
    paths: PathFields,
    /// The edited preset as a plan, or why it is not one.
    plan: Result<Plan, String>,
    run: Option<LiveRun>,
    /// The config whose batches the timeline shows; `None` follows the run.
    selected: Option<usize>,
    messages: Vec<Message>,
    background: Background,
    pending_png: Option<PendingPng>,
    plots_rect: Option<Rect>,
    results_rect: Option<Rect>,
    analysis_rect: Option<Rect>,
    /// The baseline name field.
    baseline_name: String,
    /// The saved baselines, read when a run ends or one is saved (not every frame).
    baseline_names: Vec<String>,
    cuda_devices: usize,
    journal_dir: Option<PathBuf>,
    title: String,
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
            plan: Err(String::new()),
            saved,
            run: None,
            selected: None,
            messages,
            background: Background::new(cc.egui_ctx.clone()),
            pending_png: None,
            plots_rect: None,
            results_rect: None,
            analysis_rect: None,
            baseline_name: String::new(),
            baseline_names: Vec::new(),
            cuda_devices: crate::device::cuda_device_count(),
            journal_dir: launch.journal_dir,
            title: String::new(),
        };
        app.revalidate();
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

    /// True while a run is going.
    pub fn is_running(&self) -> bool {
        self.run.as_ref().is_some_and(|run| run.data.is_running())
    }

    /// How the last run ended (or `Running`); `None` before the first run.
    pub fn phase(&self) -> Option<&Phase> {
        self.run.as_ref().map(|run| &run.data.phase)
    }

    /// The latest run's result so far.
    pub fn result(&self) -> Option<&RunResult> {
        self.run.as_ref().and_then(|run| run.data.result.as_ref())
    }

    /// The charts as they are drawn now: first batch, epoch times, timeline.
    pub fn charts(&self) -> Vec<Chart> {
        self.run.as_ref().map_or_else(Vec::new, |run| {
            vec![
                charts::first_batch(&run.data),
                charts::epoch_times(&run.data),
                charts::timeline(&run.data, self.timeline_config(&run.data)),
            ]
        })
    }

    /// The analysis of the last run, once it has ended.
    pub fn analysis(&self) -> Option<&Analysis> {
        self.run.as_ref().and_then(|run| run.analysis.as_ref())
    }

    /// The analysis charts as they are drawn now: ledger and scaling, then the stall
    /// with a training step and the baseline comparison when there is one.
    pub fn analysis_charts(&self) -> Vec<Chart> {
        let Some(run) = &self.run else {
            return Vec::new();
        };
        let Some(analysis) = &run.analysis else {
            return Vec::new();
        };
        let mut charts = vec![
            analysis_charts::ledger(analysis),
            analysis_charts::scaling(analysis),
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
        self.plan = Plan::from_preset(&self.saved.preset, self.saved.preset_path.as_deref())
            .map_err(|err| err.to_string());
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

    // ---- the top of a frame: what arrived in the background ----

    /// Folds in run events for at most `EVENT_BUDGET`; true when some are left over.
    fn drain_events(&mut self) -> bool {
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
                self.note(format!("warning: {warning}"));
            }
            match ended {
                Phase::Failed(error) => self.error(format!("The run failed: {error}")),
                Phase::Cancelled => self.note("The run was cancelled; measured configs are kept."),
                Phase::Finished | Phase::Running => {}
            }
        }
        left_over
    }

    fn drain_replies(&mut self, ctx: &egui::Context) {
        while let Some(reply) = self.background.try_next() {
            match reply {
                Reply::Picked(_, None) => {}
                Reply::Picked(pick, Some(path)) => self.picked(ctx, pick, path),
                Reply::Screenshot(image) => self.screenshot_arrived(ctx, &image),
                Reply::Wrote(Ok(path)) => self.note(format!("Wrote {}", path.display())),
                Reply::Wrote(Err(error)) => self.error(format!("Export failed: {error}")),
            }
        }
    }

    fn picked(&mut self, ctx: &egui::Context, pick: Pick, path: PathBuf) {
        match pick {
            Pick::OpenPreset => self.apply(ctx, Action::OpenPreset(path)),
            Pick::SavePresetAs => self.apply(ctx, Action::SavePreset(path)),
            Pick::Dataset => {
                self.form.set_dataset_path(&path);
                let mut preset = self.saved.preset.clone();
                preset.dataset.path = Some(path);
                self.apply(ctx, Action::Edit(Box::new(preset)));
            }
            Pick::ExportPath => self.set_export_path(path),
        }
    }

    fn screenshot_arrived(&mut self, ctx: &egui::Context, image: &egui::ColorImage) {
        let Some(pending) = self.pending_png.take() else {
            return;
        };
        let rect = match pending.area {
            PngArea::Plots => self.plots_rect,
            PngArea::Results => self.results_rect,
            PngArea::Analysis => self.analysis_rect,
        };
        let Some(cropped) = rect.and_then(|r| export::crop(image, r, ctx.pixels_per_point()))
        else {
            self.error("Nothing to export yet: run a benchmark first.");
            return;
        };
        self.background
            .write(pending.path, move || export::png_bytes(&cropped));
    }

    // ---- drawing: returns actions ----

    fn shortcuts(&self, ctx: &egui::Context, actions: &mut Vec<Action>) {
        let shortcut = |key| KeyboardShortcut::new(Modifiers::COMMAND, key);
        ctx.input_mut(|input| {
            if input.consume_shortcut(&shortcut(Key::R)) {
                actions.push(Action::StartRun);
            }
            if input.consume_shortcut(&shortcut(Key::E)) {
                actions.push(Action::ExportPng(PngArea::Plots));
            }
            if input.consume_shortcut(&shortcut(Key::S)) {
                actions.push(self.save_action());
            }
            if input.key_pressed(Key::Escape) && self.is_running() {
                actions.push(Action::CancelRun);
            }
        });
    }

    fn save_action(&self) -> Action {
        match &self.saved.preset_path {
            Some(path) => Action::SavePreset(path.clone()),
            None => Action::Browse(Pick::SavePresetAs),
        }
    }

    fn top_bar(&mut self, ui: &mut Ui, actions: &mut Vec<Action>) {
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("Preset", |ui| {
                if ui.button("New").clicked() {
                    actions.push(Action::NewPreset);
                }
                ui.menu_button("Built-in", |ui| {
                    for name in builtin::names() {
                        if ui.button(name).clicked() {
                            actions.push(Action::LoadBuiltin(name));
                        }
                    }
                });
                ui.separator();
                if ui.button("Open…").clicked() {
                    actions.push(Action::Browse(Pick::OpenPreset));
                }
                if ui
                    .add(egui::Button::new("Save").shortcut_text("Ctrl+S"))
                    .clicked()
                {
                    actions.push(self.save_action());
                }
                if ui.button("Save as…").clicked() {
                    actions.push(Action::Browse(Pick::SavePresetAs));
                }
            });
            ui.menu_button("Export", |ui| {
                let has_result = self.result().is_some();
                ui.add_enabled_ui(has_result, |ui| {
                    if ui
                        .add(egui::Button::new("Plots as PNG").shortcut_text("Ctrl+E"))
                        .clicked()
                    {
                        actions.push(Action::ExportPng(PngArea::Plots));
                    }
                    if ui.button("Results view as PNG").clicked() {
                        actions.push(Action::ExportPng(PngArea::Results));
                    }
                    if ui.button("Analysis as PNG").clicked() {
                        actions.push(Action::ExportPng(PngArea::Analysis));
                    }
                    ui.separator();
                    for (name, format) in data_formats() {
                        if ui.button(format!("Results as {name}")).clicked() {
                            actions.push(Action::ExportData(format));
                        }
                    }
                });
                ui.separator();
                if ui.button("Choose export file…").clicked() {
                    actions.push(Action::Browse(Pick::ExportPath));
                }
            });
            ui.separator();
            let label = ui.label("preset file");
            let field = ui
                .add(
                    egui::TextEdit::singleline(&mut self.paths.preset)
                        .hint_text("path/to/preset.ron")
                        .desired_width(280.0),
                )
                .labelled_by(label.id);
            let entered = field.lost_focus() && ui.input(|i| i.key_pressed(Key::Enter));
            let typed = PathBuf::from(self.paths.preset.trim());
            let has_path = !self.paths.preset.trim().is_empty();
            if ui
                .add_enabled(has_path, egui::Button::new("Open"))
                .clicked()
                || entered && has_path
            {
                actions.push(Action::OpenPreset(typed.clone()));
            }
            if ui
                .add_enabled(has_path, egui::Button::new("Save"))
                .clicked()
            {
                actions.push(Action::SavePreset(typed));
            }
            if ui.button("Browse…").clicked() {
                actions.push(Action::Browse(Pick::OpenPreset));
            }
        });
    }

    fn message_bar(&self, ui: &mut Ui, actions: &mut Vec<Action>) {
        for (index, message) in self.messages.iter().enumerate().rev() {
            ui.horizontal(|ui| {
                if ui.small_button("×").on_hover_text("Dismiss").clicked() {
                    actions.push(Action::DismissMessage(index));
                }
                let text = RichText::new(&message.text);
                let text = if message.error {
                    text.color(ui.visuals().error_fg_color)
                } else {
                    text
                };
                ui.add(egui::Label::new(text).wrap());
            });
        }
    }

    fn run_bar(&self, ui: &mut Ui, actions: &mut Vec<Action>) {
        ui.horizontal(|ui| {
            if self.is_running() {
                if ui
                    .add(egui::Button::new("Cancel").shortcut_text("Esc"))
                    .clicked()
                {
                    actions.push(Action::CancelRun);
                }
            } else {
                let ready = self.plan.is_ok() && !self.form.has_errors();
                let run = ui
                    .add_enabled(ready, egui::Button::new("Run").shortcut_text("Ctrl+R"))
                    .on_disabled_hover_text("Fix the fields marked in the side panel first");
                if run.clicked() {
                    actions.push(Action::StartRun);
                }
            }
            if let Ok(plan) = &self.plan {
                ui.label(
                    RichText::new(format!(
                        "{} config(s) × {} repeat(s) × {} epoch(s)",
                        plan.configs.len(),
                        plan.repeats,
                        plan.epochs
                    ))
                    .weak(),
                );
            }
        });
        if let Some(run) = &self.run {
            let status = match &run.data.phase {
                Phase::Running => run.data.progress_line(run.elapsed()),
                Phase::Finished => format!("Finished in {:.1} s", run.elapsed().as_secs_f64()),
                Phase::Cancelled => "Cancelled".to_owned(),
                Phase::Failed(_) => "Failed (see the message below)".to_owned(),
            };
            ui.label(RichText::new(status).monospace());
            if run.data.is_running() && run.data.progress.batches_total > 0 {
                let p = &run.data.progress;
                ui.add(
                    egui::ProgressBar::new(p.batches_done as f32 / p.batches_total as f32)
                        .desired_height(6.0),
                );
            }
        }
    }

    fn results_view(&mut self, ui: &mut Ui, actions: &mut Vec<Action>) {
        let Some(run) = &self.run else {
            ui.add_space(40.0);
            ui.vertical_centered(|ui| {
                ui.label(RichText::new("Set up a run on the left, then press Run (Ctrl+R).").size(16.0));
                ui.label(
                    RichText::new("First-batch latency, epoch times and each batch's wait appear here as they are measured.")
                        .weak(),
                );
            });
            return;
        };
        let data = &run.data;
        let plots = ui.columns(2, |columns| {
            plots::draw(&mut columns[0], &charts::first_batch(data), 190.0);
            plots::draw(&mut columns[1], &charts::epoch_times(data), 190.0);
            columns[0].min_rect().union(columns[1].min_rect())
        });
        ui.add_space(8.0);
        let selected = self.timeline_config(data);
        ui.horizontal(|ui| {
            let label = ui.label("timeline config");
            egui::ComboBox::from_id_salt("timeline_config")
                .selected_text(data.labels.get(selected).map_or("", String::as_str))
                .show_ui(ui, |ui| {
                    for (index, label) in data.labels.iter().enumerate() {
                        if ui.selectable_label(index == selected, label).clicked() {
                            actions.push(Action::SelectConfig(index));
                        }
                    }
                })
                .response
                .labelled_by(label.id);
        });
        plots::draw(ui, &charts::timeline(data, selected), 110.0);
        ui.add_space(8.0);
        if let Some(result) = &data.result {
            ui.horizontal(|ui| {
                ui.label(RichText::new("Results").strong().size(15.0));
                if ui.button("Copy as Markdown").clicked() {
                    actions.push(Action::CopyMarkdown);
                }
            });
            table::draw(ui, result, selected, actions);
            compare_view::draw(ui, result);
            ui.label(
                RichText::new(format!("{} · {}", result.dataset, result.machine.summary()))
                    .weak()
                    .small(),
            );
        }
        self.analysis_rect = None;
        if let (Some(analysis), Some(result)) = (&run.analysis, &data.result) {
            ui.add_space(8.0);
            baseline_row(ui, &mut self.baseline_name, &self.baseline_names, actions);
            let comparison = run
                .comparison
                .as_ref()
                .map(|(name, changes)| analysis_view::Comparison { name, changes });
            let rect = analysis_view::draw(ui, analysis, &result.warnings, comparison);
            self.analysis_rect = Some(rect.intersect(ui.clip_rect()));
        }
        self.export_row(ui, actions);
        // Only what is on screen can be captured.
        let visible = ui.clip_rect();
        let results =
            Rect::from_min_max(plots.min, egui::pos2(plots.right(), ui.min_rect().bottom()));
        self.plots_rect = Some(plots.intersect(visible));
        self.results_rect = Some(results.intersect(visible));
    }

    fn export_row(&mut self, ui: &mut Ui, actions: &mut Vec<Action>) {
        ui.add_space(6.0);
        ui.horizontal_wrapped(|ui| {
            let label = ui.label("export to");
            let field = ui
                .add(egui::TextEdit::singleline(&mut self.paths.export).desired_width(240.0))
                .labelled_by(label.id);
            if field.changed() {
                self.saved.export_path = PathBuf::from(self.paths.export.trim());
            }
            if ui.button("Browse…").clicked() {
                actions.push(Action::Browse(Pick::ExportPath));
            }
            if ui.button("PNG: plots").on_hover_text("Ctrl+E").clicked() {
                actions.push(Action::ExportPng(PngArea::Plots));
            }
            if ui.button("PNG: results view").clicked() {
                actions.push(Action::ExportPng(PngArea::Results));
            }
            if ui.button("PNG: analysis").clicked() {
                actions.push(Action::ExportPng(PngArea::Analysis));
            }
            for (name, format) in data_formats() {
                if ui.button(name).clicked() {
                    actions.push(Action::ExportData(format));
                }
            }
        });
    }

    // ---- after drawing: apply what was asked ----

    fn apply(&mut self, ctx: &egui::Context, action: Action) {
        match action {
            Action::Edit(preset) => {
                self.saved.preset = *preset;
                self.revalidate();
            }
            Action::NewPreset => {
                self.replace_preset(Preset::default(), None);
                self.saved.clean = None;
            }
            Action::LoadBuiltin(name) => match builtin::load(name) {
                Ok((preset, _)) => self.replace_preset(preset, None),
                Err(err) => self.error(err.to_string()),
            },
            Action::OpenPreset(path) => match Preset::load(&path) {
                Ok(preset) => {
                    self.note(format!("Opened {}", path.display()));
                    self.replace_preset(preset, Some(path));
                }
                Err(err) => self.error(format!("Could not open the preset: {err}")),
            },
            Action::SavePreset(path) => match self.saved.preset.save(&path) {
                Ok(()) => {
                    self.note(format!("Saved {}", path.display()));
                    self.paths.preset = path.display().to_string();
                    self.saved.preset_path = Some(path);
                    self.saved.clean = Some(self.saved.preset.clone());
                }
                Err(err) => self.error(format!("Could not save the preset: {err}")),
            },
            Action::Browse(pick) => {
                let start = match pick {
                    Pick::OpenPreset | Pick::SavePresetAs => self.saved.preset_path.clone(),
                    Pick::Dataset => self.saved.preset.dataset.path.clone(),
                    Pick::ExportPath => Some(self.saved.export_path.clone()),
                };
                self.background.pick(pick, start);
            }
            Action::StartRun => self.start_run(ctx),
            Action::CancelRun => {
                if let Some(handle) = self.run.as_ref().and_then(|r| r.handle.as_ref()) {
                    handle.cancel();
                }
            }
            Action::SelectConfig(index) => self.selected = Some(index),
            Action::CopyMarkdown => {
                if let Some(result) = self.result() {
                    let text = result
                        .pipelines()
                        .iter()
                        .map(|p| crate::export::markdown::table(result, p))
                        .collect::<Vec<_>>()
                        .join("\n");
                    ctx.copy_text(text);
                    self.note("Copied the results table as Markdown.");
                }
            }
            Action::ExportPng(area) => {
                if self.result().is_none() {
                    self.error("Nothing to export yet: run a benchmark first.");
                } else {
                    let suffix = match area {
                        PngArea::Plots => "-plots",
                        PngArea::Results => "-results",
                        PngArea::Analysis => "-analysis",
                    };
                    let path = export::path_for(&self.saved.export_path, None, suffix);
                    self.pending_png = Some(PendingPng { area, path });
                    self.background.screenshot();
                }
            }
            Action::ExportData(format) => match self.result().cloned() {
                Some(result) => {
                    let path = export::path_for(&self.saved.export_path, Some(format), "");
                    self.background
                        .write(path, move || export::data_bytes(format, &result));
                }
                None => self.error("Nothing to export yet: run a benchmark first."),
            },
            Action::DismissMessage(index) => {
                if index < self.messages.len() {
                    self.messages.remove(index);
                }
            }
            Action::SaveBaseline(name) => self.save_baseline(&name),
            Action::CompareBaseline(name) => self.compare_baseline(&name),
        }
    }

    fn save_baseline(&mut self, name: &str) {
        let Some(result) = self.result().cloned() else {
            self.error("Nothing to save yet: run a benchmark first.");
            return;
        };
        match baseline::save(name, &result) {
            Ok(path) => {
                self.baseline_names = baseline::names();
                self.note(format!("Saved baseline `{name}`: {}", path.display()));
            }
            Err(err) => self.error(format!("Could not save the baseline: {err}")),
        }
    }

    fn compare_baseline(&mut self, name: &str) {
        let loaded = baseline::load(name);
        let Some(run) = &mut self.run else {
            return;
        };
        let Some(result) = &run.data.result else {
            return;
        };
        match loaded {
            Ok(before) => {
                let changes = baseline::compare(&before, result);
                let matched = changes.len();
                run.comparison = Some((name.to_owned(), changes));
                self.note(format!(
                    "Compared with baseline `{name}`: {matched} config(s) matched."
                ));
            }
            Err(err) => self.error(format!("Could not compare: {err}")),
        }
    }

    fn replace_preset(&mut self, preset: Preset, path: Option<PathBuf>) {
        self.form = Form::from_preset(&preset);
        self.paths.preset = path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        self.saved.clean = Some(preset.clone());
        self.saved.preset = preset;
        self.saved.preset_path = path;
        self.revalidate();
    }

    fn start_run(&mut self, ctx: &egui::Context) {
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
}

/// The baseline name field with its Save and Compare buttons.
fn baseline_row(ui: &mut Ui, name: &mut String, saved: &[String], actions: &mut Vec<Action>) {
    ui.horizontal_wrapped(|ui| {
        let label = ui.label("baseline");
        ui.add(
            egui::TextEdit::singleline(name)
                .hint_text("name")
                .desired_width(140.0),
        )
        .labelled_by(label.id);
        let name = name.trim().to_owned();
        let has_name = !name.is_empty();
        if ui
            .add_enabled(has_name, egui::Button::new("Save as baseline"))
            .clicked()
        {
            actions.push(Action::SaveBaseline(name.clone()));
        }
        if ui
            .add_enabled(has_name, egui::Button::new("Compare with baseline"))
            .clicked()
        {
            actions.push(Action::CompareBaseline(name));
        }
        if !saved.is_empty() {
            ui.label(
                RichText::new(format!("saved: {}", saved.join(", ")))
                    .weak()
                    .small(),
            );
        }
    });
}

fn data_formats() -> [(&'static str, DataFormat); 3] {
    [
        ("JSON", DataFormat::Json),
        ("CSV", DataFormat::Csv),
        ("Markdown", DataFormat::Markdown),
    ]
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut Ui, _frame: &mut eframe::Frame) {
        let ctx = ui.ctx().clone();
        let left_over = self.drain_events();
        self.drain_replies(&ctx);

        let mut actions = Vec::new();
        self.shortcuts(&ctx, &mut actions);
        egui::Panel::top("menu").show(ui, |ui| self.top_bar(ui, &mut actions));
        if !self.messages.is_empty() {
            egui::Panel::bottom("messages").show(ui, |ui| {
                ui.add_space(4.0);
                self.message_bar(ui, &mut actions);
                ui.add_space(2.0);
            });
        }
        egui::Panel::left("setup")
            .resizable(true)
            .default_size(330.0)
            .min_size(280.0)
            .show(ui, |ui| {
                ui.add_space(6.0);
                ui.heading("Set up a run");
                egui::ScrollArea::vertical().show(ui, |ui| {
                    let cx = setup::Context {
                        cuda_devices: self.cuda_devices,
                        plan_error: self.plan.as_ref().err().map(String::as_str),
                        running: self.is_running(),
                    };
                    ui.add_enabled_ui(!cx.running, |ui| {
                        setup::draw(ui, &self.saved.preset, &mut self.form, &cx, &mut actions);
                    });
                });
            });
        egui::CentralPanel::default().show(ui, |ui| {
            self.run_bar(ui, &mut actions);
            ui.separator();
            egui::ScrollArea::vertical()
                .auto_shrink([false, false])
                .show(ui, |ui| self.results_view(ui, &mut actions));
        });

        for action in actions {
            self.apply(&ctx, action);
        }
        let title = self.title();
        if title != self.title {
            ctx.send_viewport_cmd(egui::ViewportCommand::Title(title.clone()));
            self.title = title;
        }
        if left_over {
            ctx.request_repaint_after(LIVE_FRAME_INTERVAL);
        } else if self.is_running() {
            ctx.request_repaint_after(Duration::from_millis(250));
        }
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, eframe::APP_KEY, &self.saved);
    }
}
