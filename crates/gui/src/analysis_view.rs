//! The analysis section under the results table, once a run has ended: the
//! recommendations (each with its snippet and a Copy button), the run's warnings, what
//! memory says, thread workers against process workers, the break-even of persistent workers, the ledger and scaling charts side by side, where
//! the time goes beside the memory (each worker's RSS and PSS under it), the throughput,
//! the stall chart with a training step, and the comparison with a baseline. It only reads
//! (Copy only hands text to the clipboard; the "per epoch" switch of where the time goes
//! returns an action); it returns where it drew the section and each chart, which the
//! PNG exports capture.

use egui::{Rect, RichText, Ui};

use loaderbench_analysis::baseline::Change;
use loaderbench_analysis::{Analysis, Recommendation};
use loaderbench_measure::results::RunResult;
use loaderbench_present::analysis_text::{scaling_line, step_lines};
use loaderbench_present::views::ChartId;

use super::actions::Action;
use super::charts::Chart;
use super::{analysis_charts, cost_charts, plots};

/// A baseline to show beside the run: its name and the change of each config.
pub struct Comparison<'a> {
    pub name: &'a str,
    pub changes: &'a [Change],
}

/// How the section is drawn: the run, its analysis, the baseline it is compared with,
/// and whether where the time goes shows each epoch.
pub struct Shown<'a> {
    pub result: &'a RunResult,
    pub analysis: &'a Analysis,
    pub comparison: Option<Comparison<'a>>,
    pub stages_per_epoch: bool,
}

/// Where the section and each of its charts were drawn.
pub struct Drawn {
    pub rect: Rect,
    pub charts: Vec<(ChartId, Rect)>,
}

/// Where the time goes, per config or per epoch of each config.
pub fn stages_chart(result: &RunResult, per_epoch: bool) -> Chart {
    if per_epoch {
        cost_charts::stages_per_epoch(result)
    } else {
        cost_charts::stages(result)
    }
}

/// Draws the section; returns where, and the actions of its switches in `actions`.
pub fn draw(ui: &mut Ui, shown: Shown<'_>, actions: &mut Vec<Action>) -> Drawn {
    let mut charts = Vec::new();
    let rect = ui
        .scope(|ui| {
            ui.label(RichText::new("Analysis").strong().size(15.0));
            draw_texts(ui, shown.result, shown.analysis);
            ui.add_space(6.0);
            draw_ledger_and_scaling(ui, shown.analysis, &mut charts);
            ui.add_space(6.0);
            draw_stages_and_memory(ui, &shown, &mut charts, actions);
            ui.add_space(6.0);
            draw_costs(ui, &shown, &mut charts);
        })
        .response
        .rect;
    Drawn { rect, charts }
}

/// The recommendations, the run's warnings, what the memory says and the break-even of
/// persistent workers.
fn draw_texts(ui: &mut Ui, result: &RunResult, analysis: &Analysis) {
    for recommendation in &analysis.recommendations {
        draw_recommendation(ui, recommendation);
    }
    let warnings = &result.warnings;
    if !warnings.is_empty() {
        ui.add_space(4.0);
        ui.label(RichText::new("Warnings").strong());
        for warning in warnings {
            ui.add(
                egui::Label::new(RichText::new(warning).color(ui.visuals().warn_fg_color)).wrap(),
            );
        }
    }
    for paragraph in analysis.memory.paragraphs(analysis.planned_epochs) {
        ui.add_space(4.0);
        ui.add(egui::Label::new(paragraph).wrap());
    }
    for comparison in &analysis.worker_kinds {
        ui.add_space(4.0);
        ui.label(RichText::new(format!("Worker kinds: {}", comparison.title)).strong());
        ui.add(egui::Label::new(&comparison.text).wrap());
    }
    if !analysis.break_even.is_empty() {
        ui.add_space(4.0);
        for saving in &analysis.break_even {
            ui.add(egui::Label::new(&saving.sentence).wrap());
        }
    }
}

/// The ledger and the scaling charts side by side, the scaling's lines under it.
fn draw_ledger_and_scaling(ui: &mut Ui, analysis: &Analysis, charts: &mut Vec<(ChartId, Rect)>) {
    ui.columns(2, |columns| {
        draw_chart(
            &mut columns[0],
            &analysis_charts::ledger(analysis),
            220.0,
            charts,
        );
        draw_chart(
            &mut columns[1],
            &analysis_charts::scaling(analysis),
            220.0,
            charts,
        );
        for curve in &analysis.scaling {
            columns[1].label(RichText::new(scaling_line(curve)).small());
        }
    });
}

/// Where the time goes (with its "per epoch" switch) beside the memory, each worker's
/// memory under it.
fn draw_stages_and_memory(
    ui: &mut Ui,
    shown: &Shown<'_>,
    charts: &mut Vec<(ChartId, Rect)>,
    actions: &mut Vec<Action>,
) {
    let (result, analysis) = (shown.result, shown.analysis);
    ui.columns(2, |columns| {
        let stages = stages_chart(result, shown.stages_per_epoch);
        let drawn = plots::draw_with(&mut columns[0], &stages, 220.0, |ui| {
            let mut per_epoch = shown.stages_per_epoch;
            if ui
                .checkbox(&mut per_epoch, "per epoch")
                .on_hover_text("A stacked bar for each epoch of each config")
                .changed()
            {
                actions.push(Action::StagesPerEpoch(per_epoch));
            }
        });
        charts.push((stages.id, drawn));
        draw_chart(
            &mut columns[1],
            &cost_charts::memory(result, analysis),
            220.0,
            charts,
        );
        for line in cost_charts::memory_lines(analysis) {
            columns[1].label(RichText::new(line).small());
        }
    });
}

/// The throughput, the stall with a training step, and the comparison with a baseline.
fn draw_costs(ui: &mut Ui, shown: &Shown<'_>, charts: &mut Vec<(ChartId, Rect)>) {
    let (result, analysis) = (shown.result, shown.analysis);
    draw_chart(
        ui,
        &cost_charts::throughput(result, analysis),
        200.0,
        charts,
    );
    if let Some(stall) = analysis_charts::stall(analysis) {
        ui.add_space(6.0);
        draw_chart(ui, &stall, 160.0, charts);
        for line in step_lines(analysis) {
            ui.label(RichText::new(line).small());
        }
    }
    if let Some(comparison) = &shown.comparison {
        ui.add_space(6.0);
        let baseline = analysis_charts::baseline(comparison.name, comparison.changes);
        draw_chart(ui, &baseline, 160.0, charts);
        for change in comparison.changes {
            ui.label(RichText::new(change.line()).small());
        }
    }
}

/// Draws `chart` and notes where in `charts`.
fn draw_chart(ui: &mut Ui, chart: &Chart, height: f32, charts: &mut Vec<(ChartId, Rect)>) {
    charts.push((chart.id, plots::draw(ui, chart, height)));
}

/// One question's recommendation: its group, the paragraph, and the snippet with a Copy
/// button under it that puts it on the clipboard. The snippet wraps at the section's
/// width: a button beside it would be pushed past the right edge by a long line and
/// widen the section beyond the window, which the PNG export then cuts off.
fn draw_recommendation(ui: &mut Ui, recommendation: &Recommendation) {
    ui.label(RichText::new(format!("Recommendation: {}", recommendation.group)).strong());
    ui.add(egui::Label::new(&recommendation.text).wrap());
    if let Some(snippet) = &recommendation.snippet {
        ui.add(egui::Label::new(RichText::new(snippet).monospace()).wrap());
        if ui
            .button("Copy")
            .on_hover_text("Copy the code to the clipboard")
            .clicked()
        {
            ui.ctx().copy_text(snippet.clone());
        }
    }
    ui.add_space(4.0);
}
