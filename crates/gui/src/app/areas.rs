//! The areas drawn: where the plots, the results view, the analysis and each chart were
//! drawn in the last frame, and the part of the results view on screen, which PNG
//! exports crop to and tests read.

use egui::{Rect, Ui};

use loaderbench_present::views::{ChartId, PngArea};

/// What the results view drew this frame, in points.
pub(super) struct Drawn {
    /// Each chart, on screen or not.
    pub(super) charts: Vec<(ChartId, Rect)>,
    /// The plots above the table.
    pub(super) plots: Rect,
    /// The analysis section, when a run has one.
    pub(super) analysis: Option<Rect>,
}

/// Where each area was drawn in the last frame.
#[derive(Debug, Default)]
pub(super) struct DrawnAreas {
    plots: Option<Rect>,
    results: Option<Rect>,
    analysis: Option<Rect>,
    /// Where each chart was drawn, in points (off screen too).
    charts: Vec<(ChartId, Rect)>,
    /// The part of the results view on screen.
    visible: Option<Rect>,
}

impl DrawnAreas {
    /// Records what the results view drew, at the end of the view, inside its scroll
    /// area: only what is on screen can be captured.
    pub(super) fn record(&mut self, drawn: Drawn, ui: &Ui) {
        let visible = ui.clip_rect();
        let plots = drawn.plots;
        let results =
            Rect::from_min_max(plots.min, egui::pos2(plots.right(), ui.min_rect().bottom()));
        self.plots = Some(plots.intersect(visible));
        self.results = Some(results.intersect(visible));
        self.analysis = drawn.analysis.map(|rect| rect.intersect(visible));
        self.charts = drawn.charts;
        self.visible = Some(visible);
    }

    /// Where `area` was drawn, as its PNG export crops it (the part on screen).
    pub(super) fn area_rect(&self, area: PngArea) -> Option<Rect> {
        match area {
            PngArea::Plots => self.plots,
            PngArea::Results => self.results,
            PngArea::Analysis => self.analysis,
            PngArea::Chart(id) => self
                .chart_rect(id)
                .zip(self.visible)
                .map(|(chart, visible)| chart.intersect(visible)),
        }
    }

    /// Where chart `id` was drawn, on screen or not.
    pub(super) fn chart_rect(&self, id: ChartId) -> Option<Rect> {
        self.charts
            .iter()
            .find(|(drawn, _)| *drawn == id)
            .map(|(_, rect)| *rect)
    }
}
