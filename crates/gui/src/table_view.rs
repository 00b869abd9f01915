//! Draws the results table — the engine's [`ResultsTable`], one per pipeline, the same
//! cells the Markdown export prints — with the row of the config shown in the timeline
//! highlighted, scrolling sideways when wider than the view; footnotes explain a
//! disturbed time's `*` and a projected epoch's `≈`. Clicking a row selects its
//! config.

use egui::{RichText, Ui};

use loaderbench_measure::results::RunResult;
use loaderbench_present::tables::results_table::{
    PROJECTED_FOOTNOTE, ResultsTable, disturbed_footnote,
};

use super::actions::Action;

/// Draws one table per pipeline; returns the user's requests.
pub fn draw(ui: &mut Ui, result: &RunResult, selected: usize, actions: &mut Vec<Action>) {
    for pipeline in result.pipelines() {
        let table = ResultsTable::of(result, &pipeline);
        if table.rows.is_empty() {
            continue;
        }
        ui.label(RichText::new(format!("{pipeline} pipeline — seconds")).strong());
        // A table wider than the view scrolls on its own rather than widening the
        // view, so the plots and the analysis keep to the window's width.
        egui::ScrollArea::horizontal()
            .id_salt(("results scroll", pipeline.as_str()))
            .show(ui, |ui| grid(ui, &table, &pipeline, selected, actions));
        if table.rows.iter().any(|row| row.disturbed) {
            ui.label(RichText::new(disturbed_footnote()).weak());
        }
        if table.rows.iter().any(|row| row.projected) {
            ui.label(RichText::new(PROJECTED_FOOTNOTE).weak());
        }
        ui.add_space(4.0);
    }
}

/// The table's grid, a row per config.
fn grid(
    ui: &mut Ui,
    table: &ResultsTable,
    pipeline: &str,
    selected: usize,
    actions: &mut Vec<Action>,
) {
    egui::Grid::new(("results", pipeline))
        .striped(true)
        .num_columns(table.header.len())
        .spacing([18.0, 2.0])
        .show(ui, |ui| {
            for cell in &table.header {
                ui.label(RichText::new(cell).strong());
            }
            ui.end_row();
            for row in &table.rows {
                for cell in &row.cells {
                    let text = RichText::new(cell).monospace();
                    let hover = if row.disturbed {
                        format!("{}\n{}", row.label, disturbed_footnote())
                    } else {
                        row.label.clone()
                    };
                    let clicked = ui
                        .selectable_label(row.config_index == selected, text)
                        .on_hover_text(hover)
                        .clicked();
                    if clicked {
                        actions.push(Action::SelectConfig(row.config_index));
                    }
                }
                ui.end_row();
            }
        });
}
