//! PNG exports of a part of the window: the export waits for its chart to scroll into
//! view, asks for the next screenshot, and crops it to the area drawn; the file is
//! written in the background.

use std::path::PathBuf;

use crate::background::Background;
use crate::export_bytes;
use loaderbench_present::views::PngArea;

use super::areas::DrawnAreas;
use super::messages::Messages;

/// Frames a chart export waits for its chart to scroll into view before it takes what
/// shows.
const SCROLL_FRAMES: u8 = 4;

/// A PNG export waiting for its screenshot.
struct PendingPng {
    area: PngArea,
    path: PathBuf,
    /// Frames spent scrolling a chart into view.
    scrolled_frames: u8,
    screenshot_asked: bool,
}

/// The PNG export under way, if any.
#[derive(Default)]
pub(super) struct PngExport {
    pending: Option<PendingPng>,
}

impl PngExport {
    /// Exports `area` to `path` from the screenshot of a coming frame.
    pub(super) fn request(&mut self, area: PngArea, path: PathBuf) {
        self.pending = Some(PendingPng {
            area,
            path,
            scrolled_frames: 0,
            screenshot_asked: false,
        });
    }

    /// Called at the end of the results view, inside its scroll area: scrolls a chart
    /// being exported into view, then asks for the screenshot of the frame that shows it.
    pub(super) fn advance(
        &mut self,
        ui: &mut egui::Ui,
        areas: &DrawnAreas,
        background: &Background,
    ) {
        let visible = ui.clip_rect();
        let Some(pending) = self.pending.as_mut().filter(|p| !p.screenshot_asked) else {
            return;
        };
        let hidden_chart = match pending.area {
            PngArea::Chart(id) => areas
                .chart_rect(id)
                .filter(|rect| !visible.contains_rect(*rect)),
            _ => None,
        };
        match hidden_chart {
            Some(rect) if pending.scrolled_frames < SCROLL_FRAMES => {
                ui.scroll_to_rect(rect, Some(egui::Align::Center));
                pending.scrolled_frames += 1;
                ui.ctx().request_repaint();
            }
            _ => {
                pending.screenshot_asked = true;
                background.screenshot();
            }
        }
    }

    /// Crops the screenshot to the area asked for and writes it in the background.
    pub(super) fn screenshot_arrived(
        &mut self,
        ctx: &egui::Context,
        image: &egui::ColorImage,
        areas: &DrawnAreas,
        background: &Background,
        messages: &mut Messages,
    ) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let Some(cropped) = areas
            .area_rect(pending.area)
            .and_then(|r| export_bytes::crop(image, r, ctx.pixels_per_point()))
        else {
            messages.error("Nothing to export yet: run a benchmark first.");
            return;
        };
        background.write(pending.path, move || export_bytes::png_bytes(&cropped));
    }
}
