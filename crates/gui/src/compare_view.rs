//! The compare view: when a run holds both runtimes, a table of every PyTorch config
//! against ours with the same knobs — first batch and each epoch, ours, PyTorch's and
//! the ratio PyTorch / ours — the same rows `loaderbench compare` prints.

use egui::{RichText, Ui};

use loaderbench_measure::results::RunResult;
use loaderbench_present::compare::{self, figure_names, times};
use loaderbench_present::tables::seconds;

/// The header and the text of each row's cells.
pub fn rows(result: &RunResult) -> Vec<Vec<String>> {
    let mut header = vec!["config".to_owned()];
    for name in figure_names(result.epochs) {
        header.extend([format!("{name} ours"), "PyTorch".to_owned(), "×".to_owned()]);
    }
    let mut table = vec![header];
    for row in compare::rows(result) {
        let mut cells = vec![format!("{} ({})", row.label, row.pipeline)];
        for (i, (ours, pytorch)) in row.figures.iter().enumerate() {
            cells.extend([seconds(*ours), seconds(*pytorch), times(row.ratio(i))]);
        }
        table.push(cells);
    }
    table
}

/// Draws the table when the run has configs measured on both runtimes.
pub fn draw(ui: &mut Ui, result: &RunResult) {
    if !compare::has_both_runtimes(result) {
        return;
    }
    let table = rows(result);
    if table.len() < 2 {
        return;
    }
    ui.label(
        RichText::new("PyTorch's DataLoader against loaderbench — seconds, × = PyTorch / ours")
            .strong(),
    );
    egui::Grid::new("compare")
        .striped(true)
        .num_columns(table[0].len())
        .spacing([14.0, 4.0])
        .show(ui, |ui| {
            for cell in &table[0] {
                ui.label(RichText::new(cell).strong());
            }
            ui.end_row();
            for cells in &table[1..] {
                for cell in cells {
                    ui.label(RichText::new(cell).monospace());
                }
                ui.end_row();
            }
        });
    ui.add_space(6.0);
}
