//! The results table in the classic format (`num_workers | persistent | pin | first
//! batch | epoch 1 …`, seconds with two decimals, medians over repeats with their 95%
//! interval), one per pipeline, with the row of the config shown in the timeline
//! highlighted. Clicking a row selects its config.

use egui::{RichText, Ui};

use crate::export::markdown::with_interval;
use crate::results::{RunResult, SummaryRow};

use super::actions::Action;

/// The text of each row's cells, header first.
pub fn rows(result: &RunResult, pipeline: &str) -> Vec<Vec<String>> {
    let mut header: Vec<String> = ["num_workers", "persistent", "pin", "first batch"]
        .map(String::from)
        .to_vec();
    header.extend((1..=result.epochs).map(|e| format!("epoch {e}")));
    let mut rows = vec![header];
    rows.extend(
        result
            .summary()
            .iter()
            .filter(|row| row.config.pipeline.name() == pipeline)
            .map(cells),
    );
    rows
}

fn cells(row: &SummaryRow) -> Vec<String> {
    let c = &row.config;
    let pin = match (c.pin_memory, row.pin_memory_effective) {
        (true, false) => "yes (no-op)".to_owned(),
        (pin, _) => yes_no(pin),
    };
    let mut line = vec![
        c.num_workers.to_string(),
        yes_no(c.persistent_workers),
        pin,
        with_interval(row.first_batch_s, row.first_batch_interval_s),
    ];
    line.extend(
        row.epoch_s
            .iter()
            .zip(&row.epoch_interval_s)
            .map(|(s, interval)| with_interval(*s, *interval)),
    );
    line
}

fn yes_no(value: bool) -> String {
    if value { "yes" } else { "no" }.to_owned()
}

/// Draws one table per pipeline; returns the user's requests.
pub fn draw(ui: &mut Ui, result: &RunResult, selected: usize, actions: &mut Vec<Action>) {
    let summary = result.summary();
    for pipeline in result.pipelines() {
        let pipeline_rows: Vec<&SummaryRow> = summary
            .iter()
            .filter(|row| row.config.pipeline.name() == pipeline)
            .collect();
        if pipeline_rows.is_empty() {
            continue;
        }
        ui.label(RichText::new(format!("{pipeline} pipeline — seconds")).strong());
        let table = rows(result, &pipeline);
        egui::Grid::new(("results", pipeline.as_str()))
            .striped(true)
            .num_columns(table[0].len())
            .spacing([18.0, 4.0])
            .show(ui, |ui| {
                for cell in &table[0] {
                    ui.label(RichText::new(cell).strong());
                }
                ui.end_row();
                for (row, cells) in pipeline_rows.iter().zip(&table[1..]) {
                    for cell in cells {
                        let text = RichText::new(cell).monospace();
                        let clicked = ui
                            .selectable_label(row.config_index == selected, text)
                            .on_hover_text(&row.label)
                            .clicked();
                        if clicked {
                            actions.push(Action::SelectConfig(row.config_index));
                        }
                    }
                    ui.end_row();
                }
            });
        ui.add_space(6.0);
    }
}
