//! The central panel, composed of the parts' drawing: the runs' bar, then the tune, the
//! live plots, the timeline and the results table, the baseline form with the analysis,
//! and the export row; what it drew is recorded in the areas drawn, for PNG exports.

use egui::Ui;

use crate::actions::Action;
use crate::commands::Command;
use loaderbench_present::export::Format;
use loaderbench_present::views::PngArea;

use super::App;
use super::areas::Drawn;

impl App {
    /// The run bar above the results.
    pub(super) fn run_bar(&self, ui: &mut Ui, actions: &mut Vec<Action>) {
        let (plan, ready) = (self.editor.plan(), self.editor.ready());
        self.runs.run_bar(ui, plan, ready, actions);
    }

    /// The results view, inside its scroll area.
    pub(super) fn results_view(&mut self, ui: &mut Ui, actions: &mut Vec<Action>) {
        if !self.runs.tune_ui(ui) {
            return;
        }
        let Some((mut charts, plots)) = self.runs.plots_ui(ui, actions) else {
            self.runs.placeholder_ui(ui);
            return;
        };
        let mut analysis = None;
        if self.runs.has_analysis() {
            ui.add_space(8.0);
            let open_runs = self.runs.open_run_names();
            self.baselines.ui(ui, &open_runs, actions);
            if let Some(drawn) = self.runs.analysis_ui(ui, actions) {
                analysis = Some(drawn.rect);
                charts.extend(drawn.charts);
            }
        }
        self.export_row(ui, actions);
        let drawn = Drawn {
            charts,
            plots,
            analysis,
        };
        self.areas.record(drawn, ui);
        self.png_export.advance(ui, &self.areas, &self.background);
    }

    fn export_row(&mut self, ui: &mut Ui, actions: &mut Vec<Action>) {
        ui.add_space(6.0);
        ui.horizontal_wrapped(|ui| {
            self.editor.export_field_ui(ui, actions);
            let export = Command::ExportPlots.shortcut_text(ui.ctx());
            if ui.button("PNG: plots").on_hover_text(export).clicked() {
                actions.push(Command::ExportPlots.action());
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
