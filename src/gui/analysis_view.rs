//! The analysis section under the results table, once a run has ended: the
//! recommendations (each with its snippet and a Copy button), the run's warnings, the
//! break-even of persistent workers, the ledger and scaling charts side by side, where
//! the time goes beside the memory (each worker's RSS and PSS under it), the throughput,
//! the stall chart with a training step, and the comparison with a baseline. It only reads
//! (Copy only hands text to the clipboard); it returns the rect it drew in, which the
//! PNG export captures.

use egui::{Rect, RichText, Ui};

use crate::analysis::report::scaling_line;
use crate::analysis::{Analysis, Recommendation};
use crate::baseline::Change;
use crate::results::RunResult;

use super::{analysis_charts, cost_charts, plots};

/// A baseline to show beside the run: its name and the change of each config.
pub struct Comparison<'a> {
    pub name: &'a str,
    pub changes: &'a [Change],
}

/// Draws the section for `result` and its `analysis`; returns where.
pub fn draw(
    ui: &mut Ui,
    result: &RunResult,
    analysis: &Analysis,
    comparison: Option<Comparison<'_>>,
) -> Rect {
    ui.scope(|ui| {
        ui.label(RichText::new("Analysis").strong().size(15.0));
        for recommendation in &analysis.recommendations {
            draw_recommendation(ui, recommendation);
        }
        let warnings = &result.warnings;
        if !warnings.is_empty() {
            ui.add_space(4.0);
            ui.label(RichText::new("Warnings").strong());
            for warning in warnings {
                ui.add(
                    egui::Label::new(RichText::new(warning).color(ui.visuals().warn_fg_color))
                        .wrap(),
                );
            }
        }
        if !analysis.break_even.is_empty() {
            ui.add_space(4.0);
            for saving in &analysis.break_even {
                ui.add(egui::Label::new(&saving.sentence).wrap());
            }
        }
        ui.add_space(6.0);
        ui.columns(2, |columns| {
            plots::draw(&mut columns[0], &analysis_charts::ledger(analysis), 220.0);
            plots::draw(&mut columns[1], &analysis_charts::scaling(analysis), 220.0);
            for curve in &analysis.scaling {
                columns[1].label(RichText::new(scaling_line(curve)).small());
            }
        });
        ui.add_space(6.0);
        ui.columns(2, |columns| {
            plots::draw(&mut columns[0], &cost_charts::stages(result), 220.0);
            plots::draw(&mut columns[1], &cost_charts::memory(result), 220.0);
            for line in cost_charts::worker_memory_lines(result) {
                columns[1].label(RichText::new(line).small());
            }
        });
        ui.add_space(6.0);
        plots::draw(ui, &cost_charts::throughput(result, analysis), 200.0);
        if let Some(chart) = analysis_charts::stall(analysis) {
            ui.add_space(6.0);
            plots::draw(ui, &chart, 160.0);
            for verdict in &analysis.input_bound {
                ui.label(RichText::new(format!("{}: {}", verdict.label, verdict.verdict)).small());
            }
        }
        if let Some(comparison) = comparison {
            ui.add_space(6.0);
            plots::draw(
                ui,
                &analysis_charts::baseline(comparison.name, comparison.changes),
                160.0,
            );
            for change in comparison.changes {
                ui.label(RichText::new(change.line()).small());
            }
        }
    })
    .response
    .rect
}

/// One question's recommendation: its group, the paragraph, and the snippet with a Copy
/// button that puts it on the clipboard.
fn draw_recommendation(ui: &mut Ui, recommendation: &Recommendation) {
    ui.label(RichText::new(format!("Recommendation: {}", recommendation.group)).strong());
    ui.add(egui::Label::new(&recommendation.text).wrap());
    if let Some(snippet) = &recommendation.snippet {
        ui.horizontal(|ui| {
            ui.add(egui::Label::new(RichText::new(snippet).monospace()).wrap());
            if ui
                .button("Copy")
                .on_hover_text("Copy the code to the clipboard")
                .clicked()
            {
                ui.ctx().copy_text(snippet.clone());
            }
        });
    }
    ui.add_space(4.0);
}
