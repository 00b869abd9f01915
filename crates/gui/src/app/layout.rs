//! The frame: drains what arrived, lays out the panels (menu bar with the theme switch,
//! messages, the setup panel on the left, the run and its results in the middle),
//! collects the actions they return and applies them once everything is drawn.

use std::path::PathBuf;

use egui::{Key, RichText, Ui};

use crate::actions::{Action, Pick};
use crate::background::Reply;
use crate::commands::Command;
use crate::setup;
use loaderbench_engine::builtin;
use loaderbench_present::export::Format;
use loaderbench_present::views::PngArea;

use super::open_runs;
use super::run_lifecycle::LIVE_FRAME_INTERVAL;
use super::{App, Message, WARNING};

impl App {
    /// A panel's frame, without its fill where the window already clears to the panels'
    /// colour: each fill shades every pixel of the panel once more, a quarter of a
    /// frame's CPU under a software rasterizer (see crate::frames).
    fn panel_frame(&self, frame: egui::Frame) -> egui::Frame {
        if self.window_clears_to_panel_fill {
            frame.fill(egui::Color32::TRANSPARENT)
        } else {
            frame
        }
    }

    pub(super) fn drain_replies(&mut self, ctx: &egui::Context) {
        while let Some(reply) = self.background.try_next() {
            match reply {
                Reply::Picked(_, None) => {}
                Reply::Picked(pick, Some(path)) => self.picked(ctx, pick, path),
                Reply::NoDialog(why) => self.error(why),
                Reply::Screenshot(image) => self.screenshot_arrived(ctx, &image),
                Reply::Wrote(Ok(path)) => self.note(format!("Wrote {}", path.display())),
                Reply::Wrote(Err(error)) => self.error(format!("Export failed: {error}")),
            }
        }
    }

    fn shortcuts(&self, ctx: &egui::Context, actions: &mut Vec<Action>) {
        ctx.input_mut(|input| {
            for command in Command::ALL {
                if input.consume_shortcut(&command.shortcut()) {
                    actions.push(match command {
                        Command::Run => Action::StartRun,
                        Command::ExportPlots => Action::ExportPng(PngArea::Plots),
                        Command::SavePreset => self.save_action(),
                    });
                }
            }
            if input.key_pressed(Key::Escape) && self.is_running() {
                actions.push(Action::CancelRun);
            }
        });
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
                    .add(
                        egui::Button::new("Save")
                            .shortcut_text(Command::SavePreset.shortcut_text(ui.ctx())),
                    )
                    .clicked()
                {
                    actions.push(self.save_action());
                }
                if ui.button("Save as…").clicked() {
                    actions.push(Action::Browse(Pick::SavePresetAs));
                }
            });
            ui.menu_button("File", |ui| {
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
                ui.menu_button("Recent runs", |ui| self.recent_menu(ui, actions));
            });
            ui.menu_button("Export", |ui| {
                let has_result = self.result().is_some();
                ui.add_enabled_ui(has_result, |ui| {
                    for area in PngArea::all() {
                        if let PngArea::Chart(_) = area {
                            continue;
                        }
                        let mut button = egui::Button::new(format!("{} as PNG", area.title()));
                        if area == PngArea::Plots {
                            button =
                                button.shortcut_text(Command::ExportPlots.shortcut_text(ui.ctx()));
                        }
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
            });
            ui.separator();
            let label = ui.label("preset file");
            let field = ui
                .add(
                    egui::TextEdit::singleline(&mut self.paths.preset)
                        .hint_text("preset.ron or results.json")
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
                actions.push(open_runs::open_action(typed.clone()));
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
            ui.with_layout(
                egui::Layout::right_to_left(egui::Align::Center),
                theme_switch,
            );
        });
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

    /// Notes and errors one per line, newest first; the run's warnings folded into one
    /// line that expands, so they leave room for the results.
    fn message_bar(&self, ui: &mut Ui, actions: &mut Vec<Action>) {
        let (warnings, others): (Vec<_>, Vec<_>) = self
            .messages
            .iter()
            .enumerate()
            .rev()
            .partition(|(_, m)| m.text.starts_with(WARNING));
        for (index, message) in others {
            message_line(ui, index, message, actions);
        }
        if warnings.is_empty() {
            return;
        }
        ui.horizontal(|ui| {
            if ui.small_button("×").on_hover_text("Dismiss all").clicked() {
                // Newest first, so each removal leaves the earlier indices in place.
                actions.extend(warnings.iter().map(|(i, _)| Action::DismissMessage(*i)));
            }
            let title = match warnings.len() {
                1 => "1 warning from the run".to_owned(),
                n => format!("{n} warnings from the run"),
            };
            let title = RichText::new(title).color(ui.visuals().warn_fg_color);
            egui::CollapsingHeader::new(title)
                .id_salt("run_warnings")
                .show(ui, |ui| {
                    for (index, message) in &warnings {
                        message_line(ui, *index, message, actions);
                    }
                });
        });
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

/// One message with its dismiss button.
fn message_line(ui: &mut Ui, index: usize, message: &Message, actions: &mut Vec<Action>) {
    ui.horizontal(|ui| {
        if ui.small_button("×").on_hover_text("Dismiss").clicked() {
            actions.push(Action::DismissMessage(index));
        }
        let text = RichText::new(message.text.trim_start_matches(WARNING));
        let text = if message.error {
            text.color(ui.visuals().error_fg_color)
        } else {
            text
        };
        ui.add(egui::Label::new(text).wrap());
    });
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut Ui, _frame: &mut eframe::Frame) {
        if let Some(run) = &self.run {
            run.pacer.wait_to_draw();
        }
        let ctx = ui.ctx().clone();
        let left_over = self.drain_events();
        if let Some(journal) = self.run.as_mut().and_then(|run| run.to_resolve.take()) {
            self.resolve_if_open(journal, &ctx);
        }
        self.drain_resolve();
        self.drain_tune();
        self.drain_replies(&ctx);

        let mut actions = Vec::new();
        let style = ctx.global_style();
        self.shortcuts(&ctx, &mut actions);
        self.dropped_files(&ctx, &mut actions);
        egui::Panel::top("menu")
            .frame(self.panel_frame(egui::Frame::side_top_panel(&style)))
            .show(ui, |ui| self.top_bar(ui, &mut actions));
        if !self.messages.is_empty() {
            egui::Panel::bottom("messages")
                .frame(self.panel_frame(egui::Frame::side_top_panel(&style)))
                .show(ui, |ui| {
                    ui.add_space(4.0);
                    self.message_bar(ui, &mut actions);
                    ui.add_space(2.0);
                });
        }
        egui::Panel::left("setup")
            .frame(self.panel_frame(egui::Frame::side_top_panel(&style)))
            .resizable(true)
            .default_size(330.0)
            .min_size(280.0)
            .show(ui, |ui| {
                ui.add_space(6.0);
                ui.heading("Set up a run");
                // Always shown, like the results' scroll bar: one that appears when a
                // message takes height would widen this panel and shift the plots.
                egui::ScrollArea::vertical()
                    .scroll_bar_visibility(egui::scroll_area::ScrollBarVisibility::AlwaysVisible)
                    .show(ui, |ui| {
                        let cx = setup::Context {
                            cuda_devices: self.cuda_devices,
                            plan_error: self.plan.as_ref().err(),
                            running: self.is_running(),
                        };
                        ui.add_enabled_ui(!cx.running, |ui| {
                            setup::draw(ui, &self.saved.preset, &mut self.form, &cx, &mut actions);
                        });
                    });
            });
        egui::CentralPanel::default()
            .frame(self.panel_frame(egui::Frame::central_panel(&style)))
            .show(ui, |ui| {
                self.run_bar(ui, &mut actions);
                ui.separator();
                // A scroll bar that comes and goes would change the plots' width under a
                // pending PNG export (and make the layout jump when a message appears).
                egui::ScrollArea::vertical()
                    .auto_shrink([false, false])
                    .scroll_bar_visibility(egui::scroll_area::ScrollBarVisibility::AlwaysVisible)
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
        if self.close_requested {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
        self.frame_count.drawn(&ctx);
        // The run's events wake the window; while it measures, the next frame waits at
        // the top of `ui` until the pacer lets it draw (see gui::pacing), and this
        // request keeps the progress line moving at that pace.
        if left_over {
            ctx.request_repaint_after(LIVE_FRAME_INTERVAL);
        } else if let Some(after) = self
            .run
            .as_ref()
            .filter(|run| run.data.is_running())
            .and_then(|run| run.next_frame_in())
        {
            ctx.request_repaint_after(after);
        }
    }

    /// The window's background: the panels' colour (see [`App::panel_frame`]).
    fn clear_color(&self, visuals: &egui::Visuals) -> [f32; 4] {
        visuals.panel_fill.to_normalized_gamma_f32()
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, eframe::APP_KEY, &self.saved);
    }
}
