//! The desktop app (feature `gui`): an eframe window to set up a run from a preset,
//! watch it live as side-by-side plots and a results table, read the analysis of a
//! finished run (recommendation, start-up ledger, scaling, baselines), and export what it
//! shows.
//! It consumes the engine's event stream like the CLI does; the engine knows nothing of
//! egui.

mod actions;
mod analysis_charts;
mod analysis_view;
mod app;
mod background;
mod charts;
mod compare_view;
mod cost_charts;
mod export;
mod headless;
mod live;
mod pacing;
mod plot_scale;
mod plots;
mod setup;
mod table;

pub use crate::views::{ChartId, PngArea};
pub use actions::DataFormat;
pub use app::{App, DEFAULT_PRESET, Launch, Message};
pub use charts::{Axis, Chart, Mark, Series};
pub use export::{crop, png_bytes};
pub use headless::render_png;
pub use pacing::{FRAME_INTERVAL, Pacer};
pub use plots::{ChartView, view as chart_view};

/// The window's size when it opens, in points; `report --png` renders at this size.
pub const WINDOW_SIZE: [f32; 2] = [1280.0, 720.0];
pub use live::Phase;

/// Opens the window and runs until it is closed; returns the exit code a scripted run
/// (`launch.exit`) left (1 if the window closed before the run ended), else 0.
pub fn run(launch: Launch) -> Result<u8, eframe::Error> {
    let exit = launch.exit.clone();
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("loaderbench")
            .with_inner_size(WINDOW_SIZE)
            .with_min_inner_size([900.0, 560.0]),
        // OpenGL through glow rather than wgpu: with no GPU (Mesa's llvmpipe) a frame
        // costs a third of the CPU time (benches/window_frames.rs). The PNG exports
        // still render headless through wgpu (egui_kittest).
        renderer: eframe::Renderer::Glow,
        ..eframe::NativeOptions::default()
    };
    eframe::run_native(
        "loaderbench",
        options,
        Box::new(|cc| Ok(Box::new(App::new(cc, launch)))),
    )?;
    Ok(match exit {
        Some(slot) => slot.lock().map_or(None, |code| *code).unwrap_or(1),
        None => 0,
    })
}
