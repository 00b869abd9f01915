//! The central panel: the run bar (Run or Cancel, progress), then the live plots, the
//! timeline, the results table, the analysis and the export row; it records where the
//! plots, results and analysis were drawn, for PNG exports.

use std::path::PathBuf;

use egui::{Rect, RichText, Ui};

use crate::actions::{Action, Pick};
use crate::analysis_view;
use crate::charts;
use crate::commands::Command;
use crate::compare_view;
use crate::live::Phase;
use crate::plots;
use crate::table_view;
use loaderbench_present::export::Format;
use loaderbench_present::views::PngArea;

use super::App;

impl App {
    pub(super) fn run_bar(&self, ui: &mut Ui, actions: &mut Vec<Action>) {
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
                    .add_enabled(
                        ready,
                        egui::Button::new("Run")
                            .shortcut_text(Command::Run.shortcut_text(ui.ctx())),
                    )
                    .on_disabled_hover_text("Fix the fields marked in the side panel first");
                if run.clicked() {
                    actions.push(Action::StartRun);
                }
                let tune = ui
                    .add_enabled(ready, egui::Button::new("Tune"))
                    .on_hover_text("Find the best settings within the budget")
                    .on_disabled_hover_text("Fix the fields marked in the side panel first");
                if tune.clicked() {
                    actions.push(Action::StartTune);
                }
                let mut budget = self.tune_budget_s;
                let label = ui.label("budget s");
                let field = ui
                    .add(egui::DragValue::new(&mut budget).range(1..=86_400))
                    .labelled_by(label.id);
                if field.changed() {
                    actions.push(Action::TuneBudget(budget));
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
            if let Some(tune) = &self.tune {
                ui.separator();
                ui.label(RichText::new(tune.progress.status()).monospace());
            } else if let Some(run) = &self.run {
                let resolving = run.resolving.as_ref().filter(|r| r.is_running());
                let status = match &run.data.phase {
                    _ if resolving.is_some() => {
                        resolving.map(|r| r.status.clone()).unwrap_or_default()
                    }
                    Phase::Running => run.data.progress_line(run.elapsed()),
                    Phase::Finished if run.saved => "Finished (a saved run)".to_owned(),
                    Phase::Finished => {
                        format!("Finished in {:.1} s", run.elapsed().as_secs_f64())
                    }
                    Phase::Cancelled => "Cancelled".to_owned(),
                    Phase::Failed(_) => "Failed (see the message below)".to_owned(),
                };
                ui.separator();
                ui.label(RichText::new(status).monospace());
            }
        });
        if let Some(run) = &self.run
            && run.data.is_running()
            && run.data.progress.batches_total > 0
        {
            let p = &run.data.progress;
            ui.add(
                egui::ProgressBar::new(p.batches_done as f32 / p.batches_total as f32)
                    .desired_height(6.0),
            );
        }
    }

    pub(super) fn results_view(&mut self, ui: &mut Ui, actions: &mut Vec<Action>) {
        if let Some(tune) = &self.tune {
            ui.heading("Tune");
            tune.progress.draw(ui);
            ui.separator();
            if tune.is_running() {
                return;
            }
        }
        let Some(run) = &self.run else {
            ui.add_space(40.0);
            ui.vertical_centered(|ui| {
                let run = Command::Run.shortcut_text(ui.ctx());
                ui.label(RichText::new(format!("Set up a run on the left, then press Run ({run}), or Tune to find the best settings within the budget.")).size(16.0));
                ui.label(
                    RichText::new("First-batch latency, epoch times and each batch's wait appear here as they are measured.")
                        .weak(),
                );
            });
            return;
        };
        let data = &run.data;
        let mut drawn = Vec::new();
        let mut plots = ui.columns(2, |columns| {
            for (column, chart) in [charts::first_batch(data), charts::epoch_times(data)]
                .iter()
                .enumerate()
            {
                drawn.push((chart.id, plots::draw(&mut columns[column], chart, 175.0)));
            }
            columns[0].min_rect().union(columns[1].min_rect())
        });
        if let Some(chart) = charts::rank_spread(data) {
            ui.add_space(4.0);
            let rect = plots::draw(ui, &chart, 110.0);
            drawn.push((chart.id, rect));
            plots = plots.union(rect);
        }
        ui.add_space(4.0);
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
        let timeline = charts::timeline(data, selected);
        drawn.push((timeline.id, plots::draw(ui, &timeline, 80.0)));
        ui.add_space(8.0);
        if let Some(result) = &data.result {
            ui.horizontal(|ui| {
                ui.label(RichText::new("Results").strong().size(15.0));
                if ui.button("Copy as Markdown").clicked() {
                    actions.push(Action::CopyMarkdown);
                }
            });
            table_view::draw(ui, result, selected, actions);
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
            let open_runs = self.open_run_names();
            let choices = BaselineChoices {
                saved: &self.baseline_names,
                open: &open_runs,
            };
            baseline_row(ui, &mut self.baseline_name, &choices, actions);
            let comparison = run
                .comparison
                .as_ref()
                .map(|(name, changes)| analysis_view::Comparison { name, changes });
            let shown = analysis_view::Shown {
                result,
                analysis,
                comparison,
                stages_per_epoch: self.stages_per_epoch,
            };
            let analysis = analysis_view::draw(ui, shown, actions);
            self.analysis_rect = Some(analysis.rect.intersect(ui.clip_rect()));
            drawn.extend(analysis.charts);
        }
        self.chart_rects = drawn;
        self.export_row(ui, actions);
        // Only what is on screen can be captured.
        let visible = ui.clip_rect();
        self.visible_rect = Some(visible);
        let results =
            Rect::from_min_max(plots.min, egui::pos2(plots.right(), ui.min_rect().bottom()));
        self.plots_rect = Some(plots.intersect(visible));
        self.results_rect = Some(results.intersect(visible));
        self.advance_png_export(ui);
    }

    pub(super) fn export_row(&mut self, ui: &mut Ui, actions: &mut Vec<Action>) {
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
            let export = Command::ExportPlots.shortcut_text(ui.ctx());
            if ui.button("PNG: plots").on_hover_text(export).clicked() {
                actions.push(Action::ExportPng(PngArea::Plots));
            }
            if ui.button("PNG: results view").clicked() {
                actions.push(Action::ExportPng(PngArea::Results));
            }
            if ui.button("PNG: analysis").clicked() {
                actions.push(Action::ExportPng(PngArea::Analysis));
            }
            for format in Format::ALL {
                let name = format.label();
                if ui.button(name).clicked() {
                    actions.push(Action::ExportData(format));
                }
            }
        });
    }
}

/// What the baseline pick list offers: saved baselines, and the open runs after the
/// first (each compared with the first).
struct BaselineChoices<'a> {
    saved: &'a [String],
    open: &'a [String],
}

/// The baseline name field with its save and compare buttons, and the baselines as a
/// pick list that compares at a click.
fn baseline_row(
    ui: &mut Ui,
    name: &mut String,
    choices: &BaselineChoices<'_>,
    actions: &mut Vec<Action>,
) {
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
        let others = choices.open.get(1..).unwrap_or_default();
        if !choices.saved.is_empty() || !others.is_empty() {
            egui::ComboBox::from_label("baselines")
                .selected_text("compare with…")
                .show_ui(ui, |ui| {
                    for baseline in choices.saved {
                        if ui.selectable_label(false, baseline).clicked() {
                            actions.push(Action::CompareBaseline(baseline.clone()));
                        }
                    }
                    for (index, run) in others.iter().enumerate() {
                        let text = format!("{run} (open run)");
                        if ui.selectable_label(false, text).clicked() {
                            actions.push(Action::CompareOpenRun(index + 1));
                        }
                    }
                });
        }
    });
}
