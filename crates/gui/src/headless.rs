//! The app drawn without a window, for `loaderbench report --png` on a server with no
//! display: the saved runs open in the real [`App`] at the window's default size,
//! egui_kittest renders a frame through [`OffscreenGl`] (OpenGL on a headless EGL
//! display: a GPU, or Mesa's llvmpipe where there is none), and the view is cropped as
//! the app's own export crops it (to an area, or to one chart). So the PNG is the app's
//! PNG: same chart code, same layout, same width (the window is made tall enough for the
//! whole analysis).

use std::path::PathBuf;

use egui_kittest::Harness;

use loaderbench_engine::error::{Error, Result};
use loaderbench_measure::results::{RunResult, RunStatus};
use loaderbench_present::views::PngArea;

use super::offscreen_gl::OffscreenGl;
use super::{App, Launch, WINDOW_SIZE, export_bytes};

/// What a server needs to render without a GPU, named when no EGL device gives a context.
const RENDERER_HINT: &str = "install EGL and Mesa's software renderer (Debian/Ubuntu: \
                             libegl1, libegl-mesa0 and libgl1-mesa-dri)";

/// The window's height, in points, when the PNG shows the analysis.
const ANALYSIS_WINDOW_HEIGHT: f32 = 3200.0;

/// PNG bytes of `area` of the app showing `runs` (each with the file it came from, which
/// names it; several are plotted together), at `pixels_per_point`.
pub fn render_png(
    runs: Vec<(PathBuf, RunResult)>,
    area: PngArea,
    pixels_per_point: f32,
) -> Result<Vec<u8>> {
    let renderer = OffscreenGl::new()
        .map_err(|err| Error::run(format!("no renderer for the PNG ({err}); {RENDERER_HINT}")))?;
    // A name from the user (a config's dataset, a file) may hold a character the fonts
    // lack: a box, as the window draws it, rather than the test harness's panic.
    // A saved run that failed or was killed is drawn with what it measured: its failure,
    // which the app says as it says any run's, is the run's, not the drawing's.
    let runs_failures: Vec<String> = runs
        .iter()
        .filter_map(|(_, run)| match &run.status {
            RunStatus::Failed { error } => Some(error.clone()),
            _ => None,
        })
        .collect();
    let mut harness = Harness::builder()
        .with_size(WINDOW_SIZE)
        .with_pixels_per_point(pixels_per_point)
        .renderer(renderer)
        .allow_missing_glyphs()
        .build_eframe(|cc| App::new(cc, Launch::default()));
    harness.state_mut().show_runs(runs);
    harness.run_steps(3);
    if !matches!(area, PngArea::Plots | PngArea::Results) {
        // The analysis lies below the plots and the table: a window tall enough to hold
        // all of it, so the PNG shows every chart rather than what the default shows.
        harness.set_size(egui::vec2(WINDOW_SIZE[0], ANALYSIS_WINDOW_HEIGHT));
        harness.run_steps(3);
    }
    let drawing_failed = harness.state().messages().iter().find(|m| {
        m.error
            && !runs_failures
                .iter()
                .any(|failure| m.text.ends_with(failure.as_str()))
    });
    if let Some(error) = drawing_failed {
        return Err(Error::value(error.text.clone()));
    }
    let image = harness
        .render()
        .map_err(|err| Error::run(format!("rendering the app failed: {err}")))?;
    let screenshot = egui::ColorImage::from_rgba_unmultiplied(
        [image.width() as usize, image.height() as usize],
        image.as_raw(),
    );
    let rect = harness.state().area_rect(area).ok_or_else(|| match area {
        PngArea::Chart(chart) => Error::value(format!(
            "the saved run has no \"{}\" chart (view {})",
            chart.title(),
            chart.name()
        )),
        _ => Error::value("the saved run has nothing to draw there (no measured config)"),
    })?;
    let cropped = export_bytes::crop(&screenshot, rect, pixels_per_point)
        .ok_or_else(|| Error::run("the view lies outside the rendered window"))?;
    export_bytes::png_bytes(&cropped)
}
