//! The frame: drains what arrived, lays out the panels (menu bar with the theme switch,
//! messages, the setup panel on the left, the run and its results in the middle),
//! collects the actions they return and applies them once everything is drawn. The
//! window's own state ([`Window`]: its title, the frame count, how its panels are
//! filled) lives here too.

use std::path::PathBuf;

use egui::{RichText, Ui};

use crate::actions::{Action, Pick};
use crate::background::Reply;
use crate::commands::Command;
use crate::frames::FrameCount;
use loaderbench_engine::builtin;
use loaderbench_present::export::Format;
use loaderbench_present::views::PngArea;

use super::App;

/// The window's own state.
pub(super) struct Window {
    /// The title last sent to the window.
    title: String,
    /// Where the frame benchmark reads how many frames the window drew.
    frame_count: FrameCount,
    /// Drawn in a native window, which clears to the panels' colour before each frame
    /// (`clear_color`), so the panels leave their fill out. The headless PNG renderer
    /// clears to transparent, so there they keep it.
    clears_to_panel_fill: bool,
}

impl Window {
    pub(super) fn new(clears_to_panel_fill: bool) -> Window {
        Window {
            title: String::new(),
            frame_count: FrameCount::from_env(),
            clears_to_panel_fill,
        }
    }

    /// A panel's frame, without its fill where the window already clears to the panels'
    /// colour: each fill shades every pixel of the panel once more, a quarter of a
    /// frame's CPU under a software rasterizer (see crate::frames).
    fn panel_frame(&self, frame: egui::Frame) -> egui::Frame {
        if self.clears_to_panel_fill {
            frame.fill(egui::Color32::TRANSPARENT)
        } else {
            frame
        }
    }

    /// At the end of a frame: the title when it changed, the close a scripted run asks
    /// for, and the frame counted.
    fn frame_drawn(&mut self, ctx: &egui::Context, title: String, close: bool) {
        if title != self.title {
            ctx.send_viewport_cmd(egui::ViewportCommand::Title(title.clone()));
            self.title = title;
        }
        if close {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
        self.frame_count.drawn(ctx);
    }
}

impl App {
    /// Folds in the run's, the resolve's and the tune's events and the background's
    /// replies; true when run events are left over for the next frame.
    fn drain(&mut self, ctx: &egui::Context) -> bool {
        let (left_over, ended) = self.runs.drain_events(&mut self.messages);
        self.run_ended(ended);
        let scripted = self.script.exits();
        self.runs.resolve_if_open(ctx, scripted, &mut self.messages);
        self.runs.drain_resolve(&mut self.messages);
        let ended = self.runs.drain_tune(&mut self.messages);
        self.run_ended(ended);
        while let Some(reply) = self.background.try_next() {
            match reply {
                Reply::Picked(_, None) => {}
                Reply::Picked(pick, Some(path)) => self.picked(ctx, pick, path),
                Reply::NoDialog(why) => self.messages.error(why),
                Reply::Screenshot(image) => self.png_export.screenshot_arrived(
                    ctx,
                    &image,
                    &self.areas,
                    &self.background,
                    &mut self.messages,
                ),
                Reply::Wrote(Ok(path)) => self.messages.note(format!("Wrote {}", path.display())),
                Reply::Wrote(Err(error)) => {
                    self.messages.error(format!("Export failed: {error}"));
                }
            }
        }
        left_over
    }

    /// The commands' shortcuts, and files dropped onto the window.
    fn input_actions(&self, ctx: &egui::Context, actions: &mut Vec<Action>) {
        let running = self.runs.is_running();
        ctx.input_mut(|input| {
            for command in Command::ALL {
                if command.listens(running) && input.consume_shortcut(&command.shortcut()) {
                    actions.push(command.action());
                }
            }
        });
        dropped_files(ctx, actions);
    }

    fn top_bar(&mut self, ui: &mut Ui, actions: &mut Vec<Action>) {
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("Preset", |ui| preset_menu(ui, actions));
            ui.menu_button("File", |ui| self.file_menu(ui, actions));
            ui.menu_button("Export", |ui| self.export_menu(ui, actions));
            ui.separator();
            self.editor.path_field_ui(ui, actions);
            ui.with_layout(
                egui::Layout::right_to_left(egui::Align::Center),
                theme_switch,
            );
        });
    }

    fn file_menu(&mut self, ui: &mut Ui, actions: &mut Vec<Action>) {
        if ui.button("Open results…").clicked() {
            actions.push(Action::Browse(Pick::OpenResults));
        }
        let has_result = self.result().is_some();
        if ui
            .add_enabled(has_result, egui::Button::new("Add results to the plots…"))
            .clicked()
        {
            actions.push(Action::Browse(Pick::AddResults));
        }
        let has_setup = self.result().is_some_and(|r| r.setup.is_some());
        if ui
            .add_enabled(has_setup, egui::Button::new("Load this run's preset"))
            .clicked()
        {
            actions.push(Action::LoadRunPreset);
        }
        ui.menu_button("Recent runs", |ui| self.runs.recent_menu(ui, actions));
    }

    fn export_menu(&self, ui: &mut Ui, actions: &mut Vec<Action>) {
        ui.add_enabled_ui(self.result().is_some(), |ui| {
            for area in [PngArea::Plots, PngArea::Results, PngArea::Analysis] {
                let button = if area == PngArea::Plots {
                    Command::ExportPlots.button(ui.ctx())
                } else {
                    egui::Button::new(format!("{} as PNG", area.title()))
                };
                if ui.add(button).clicked() {
                    actions.push(Action::ExportPng(area));
                }
            }
            ui.menu_button("Chart as PNG", |ui| self.chart_menu(ui, actions));
            ui.separator();
            for format in Format::ALL {
                let name = format.label();
                if ui.button(format!("Results as {name}")).clicked() {
                    actions.push(Action::ExportData(format));
                }
            }
        });
        ui.separator();
        if ui.button("Choose export file…").clicked() {
            actions.push(Action::Browse(Pick::ExportPath));
        }
    }

    /// Each chart of the list `--view` takes, enabled when the window shows it.
    fn chart_menu(&self, ui: &mut Ui, actions: &mut Vec<Action>) {
        for area in PngArea::all() {
            let PngArea::Chart(id) = area else {
                continue;
            };
            let shown = self.chart_rect(id).is_some();
            if ui
                .add_enabled(shown, egui::Button::new(area.title()))
                .clicked()
            {
                actions.push(Action::ExportPng(area));
            }
        }
    }

    /// The left panel: the preset editor's setup panel.
    fn setup_panel(&mut self, ui: &mut Ui, actions: &mut Vec<Action>) {
        ui.add_space(6.0);
        ui.heading("Set up a run");
        // Always shown, like the results' scroll bar: one that appears when a message
        // takes height would widen this panel and shift the plots.
        let running = self.runs.is_running();
        egui::ScrollArea::vertical()
            .scroll_bar_visibility(egui::scroll_area::ScrollBarVisibility::AlwaysVisible)
            .show(ui, |ui| self.editor.setup_ui(ui, running, actions));
    }

    /// The central panel: the run bar over the results view.
    fn central_panel(&mut self, ui: &mut Ui, actions: &mut Vec<Action>) {
        self.run_bar(ui, actions);
        ui.separator();
        // A scroll bar that comes and goes would change the plots' width under a pending
        // PNG export (and make the layout jump when a message appears).
        egui::ScrollArea::vertical()
            .auto_shrink([false, false])
            .scroll_bar_visibility(egui::scroll_area::ScrollBarVisibility::AlwaysVisible)
            .show(ui, |ui| self.results_view(ui, actions));
    }

    /// Lays out the panels and returns what they asked for.
    fn panels(&mut self, ui: &mut Ui) -> Vec<Action> {
        let mut actions = Vec::new();
        let ctx = ui.ctx().clone();
        let style = ctx.global_style();
        let side = self.window.panel_frame(egui::Frame::side_top_panel(&style));
        self.input_actions(&ctx, &mut actions);
        egui::Panel::top("menu")
            .frame(side)
            .show(ui, |ui| self.top_bar(ui, &mut actions));
        if !self.messages.is_empty() {
            egui::Panel::bottom("messages").frame(side).show(ui, |ui| {
                ui.add_space(4.0);
                self.messages.ui(ui, &mut actions);
                ui.add_space(2.0);
            });
        }
        egui::Panel::left("setup")
            .frame(side)
            .resizable(true)
            .default_size(330.0)
            .min_size(280.0)
            .show(ui, |ui| self.setup_panel(ui, &mut actions));
        egui::CentralPanel::default()
            .frame(self.window.panel_frame(egui::Frame::central_panel(&style)))
            .show(ui, |ui| self.central_panel(ui, &mut actions));
        actions
    }
}

/// The Preset menu: new, the built-in presets, open, save and save as.
fn preset_menu(ui: &mut Ui, actions: &mut Vec<Action>) {
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
    if ui.add(Command::SavePreset.button(ui.ctx())).clicked() {
        actions.push(Command::SavePreset.action());
    }
    if ui.button("Save as…").clicked() {
        actions.push(Action::Browse(Pick::SavePresetAs));
    }
}

/// Files dropped onto the window: saved runs open (several are plotted together),
/// presets load.
fn dropped_files(ctx: &egui::Context, actions: &mut Vec<Action>) {
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
        match Action::open(path) {
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

/// The theme: dark, light, or the system's (egui's own switch draws icons that our
/// fonts lack). Drawn right to left, so the choices come first.
fn theme_switch(ui: &mut Ui) {
    use egui::ThemePreference;
    let mut preference = ui.options(|options| options.theme_preference);
    let choices = [
        (ThemePreference::System, "system"),
        (ThemePreference::Light, "light"),
        (ThemePreference::Dark, "dark"),
    ];
    for (choice, name) in choices {
        ui.selectable_value(&mut preference, choice, name);
    }
    ui.label(RichText::new("theme").weak());
    ui.ctx().set_theme(preference);
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut Ui, _frame: &mut eframe::Frame) {
        self.runs.wait_to_draw();
        let ctx = ui.ctx().clone();
        let left_over = self.drain(&ctx);
        let actions = self.panels(ui);
        self.apply_all(&ctx, actions);
        let close = self.script.close_requested();
        self.window.frame_drawn(&ctx, self.title(), close);
        // The run's events wake the window; while it measures, the next frame waits at
        // the top of `ui` until the pacer lets it draw (see gui::pacing), and this
        // request keeps the progress line moving at that pace.
        if let Some(after) = self.runs.next_frame_in(left_over) {
            ctx.request_repaint_after(after);
        }
    }

    /// The window's background: the panels' colour (see [`Window::panel_frame`]).
    fn clear_color(&self, visuals: &egui::Visuals) -> [f32; 4] {
        visuals.panel_fill.to_normalized_gamma_f32()
    }

    /// Remembers the preset being edited for the next session; a scripted run (`--exit`)
    /// is not the user's session and leaves what was remembered as it was.
    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        if !self.script.exits() {
            eframe::set_value(storage, eframe::APP_KEY, self.editor.saved());
        }
    }

    fn persist_egui_memory(&self) -> bool {
        !self.script.exits()
    }
}
