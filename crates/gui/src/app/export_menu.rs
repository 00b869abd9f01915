//! Exports and baselines: the results table copied as Markdown, PNGs of a part of the
//! window (taken from the next screenshot), results files written in the background, and
//! saving or comparing the shown run as a named baseline.

use std::path::PathBuf;

use crate::export_bytes;
use loaderbench_analysis::baseline;
use loaderbench_present::export::Format;
use loaderbench_present::views::PngArea;

use super::App;

/// A PNG export waiting for its screenshot.
pub(super) struct PendingPng {
    pub(super) area: PngArea,
    pub(super) path: PathBuf,
    /// Frames spent scrolling a chart into view.
    pub(super) scrolled_frames: u8,
    pub(super) screenshot_asked: bool,
}

/// Frames a chart export waits for its chart to scroll into view before it takes what
/// shows.
const SCROLL_FRAMES: u8 = 4;

impl App {
    pub(super) fn screenshot_arrived(&mut self, ctx: &egui::Context, image: &egui::ColorImage) {
        let Some(pending) = self.pending_png.take() else {
            return;
        };
        let Some(cropped) = self
            .area_rect(pending.area)
            .and_then(|r| export_bytes::crop(image, r, ctx.pixels_per_point()))
        else {
            self.error("Nothing to export yet: run a benchmark first.");
            return;
        };
        self.background
            .write(pending.path, move || export_bytes::png_bytes(&cropped));
    }

    pub(super) fn copy_markdown(&mut self, ctx: &egui::Context) {
        if let Some(result) = self.result() {
            let text = result
                .pipelines()
                .iter()
                .map(|p| loaderbench_present::export::markdown::table(result, p))
                .collect::<Vec<_>>()
                .join("\n");
            ctx.copy_text(text);
            self.note("Copied the results table as Markdown.");
        }
    }

    pub(super) fn export_png(&mut self, area: PngArea) {
        if self.result().is_none() {
            self.error("Nothing to export yet: run a benchmark first.");
            return;
        }
        if let PngArea::Chart(id) = area
            && self.chart_rect(id).is_none()
        {
            self.error(format!("This run has no \"{}\" chart.", id.title()));
            return;
        }
        let suffix = format!("-{}", area.name());
        let path = export_bytes::path_for(&self.saved.export_path, None, &suffix);
        self.pending_png = Some(PendingPng {
            area,
            path,
            scrolled_frames: 0,
            screenshot_asked: false,
        });
    }

    /// Called at the end of the results view, inside its scroll area: scrolls a chart
    /// being exported into view, then asks for the screenshot of the frame that shows it.
    pub(super) fn advance_png_export(&mut self, ui: &mut egui::Ui) {
        let visible = ui.clip_rect();
        let Some(area) = self.pending_png.as_ref().map(|p| p.area) else {
            return;
        };
        let hidden_chart = match area {
            PngArea::Chart(id) => self
                .chart_rect(id)
                .filter(|rect| !visible.contains_rect(*rect)),
            _ => None,
        };
        let Some(pending) = self.pending_png.as_mut().filter(|p| !p.screenshot_asked) else {
            return;
        };
        match hidden_chart {
            Some(rect) if pending.scrolled_frames < SCROLL_FRAMES => {
                ui.scroll_to_rect(rect, Some(egui::Align::Center));
                pending.scrolled_frames += 1;
                ui.ctx().request_repaint();
            }
            _ => {
                pending.screenshot_asked = true;
                self.background.screenshot();
            }
        }
    }

    pub(super) fn export_data(&mut self, format: Format) {
        match self.result().cloned() {
            Some(result) => {
                let path = export_bytes::path_for(&self.saved.export_path, Some(format), "");
                self.background
                    .write(path, move || export_bytes::data_bytes(format, &result));
            }
            None => self.error("Nothing to export yet: run a benchmark first."),
        }
    }

    pub(super) fn save_baseline(&mut self, name: &str) {
        let Some(result) = self.result().cloned() else {
            self.error("Nothing to save yet: run a benchmark first.");
            return;
        };
        match baseline::save(name, &result) {
            Ok(path) => {
                self.baseline_names = baseline::names();
                self.note(format!("Saved baseline `{name}`: {}", path.display()));
            }
            Err(err) => self.error(format!("Could not save the baseline: {err}")),
        }
    }

    /// Compares the first open run with open run `index`, as with a saved baseline.
    pub(super) fn compare_open_run(&mut self, index: usize) {
        let names = self.open_run_names();
        let (Some((_, after)), Some((_, before)), Some(run)) =
            (self.shown.first(), self.shown.get(index), self.run.as_mut())
        else {
            return;
        };
        let changes = baseline::compare(before, after);
        let matched = changes.len();
        run.comparison = Some((names[index].clone(), changes));
        self.note(format!(
            "Compared {} with {}: {matched} config(s) matched.",
            names[0], names[index]
        ));
    }

    pub(super) fn compare_baseline(&mut self, name: &str) {
        let loaded = baseline::load(name);
        let Some(run) = &mut self.run else {
            return;
        };
        let Some(result) = &run.data.result else {
            return;
        };
        match loaded {
            Ok(before) => {
                let changes = baseline::compare(&before, result);
                let matched = changes.len();
                run.comparison = Some((name.to_owned(), changes));
                self.note(format!(
                    "Compared with baseline `{name}`: {matched} config(s) matched."
                ));
            }
            Err(err) => self.error(format!("Could not compare: {err}")),
        }
    }
}
