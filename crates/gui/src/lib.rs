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
mod commands;
mod compare_view;
mod cost_charts;
mod export_bytes;
mod file_dialog;
mod frames;
mod headless;
mod live;
mod offscreen_gl;
mod pacing;
mod palette;
mod plot_scale;
mod plot_series;
mod plots;
mod setup;
mod table_view;
mod tune_view;

pub use app::{App, DEFAULT_PRESET, Launch, Message};
pub use charts::{Axis, Chart, Mark, Series};
pub use export_bytes::{crop, png_bytes};
pub use frames::FRAME_COUNT_VAR;
pub use headless::render_png;
pub use loaderbench_present::views::{ChartId, PngArea};
pub use offscreen_gl::OffscreenGl;
pub use pacing::{FRAME_INTERVAL, Pacer};
pub use plots::{ChartView, view as chart_view};

/// The window's size when it opens, in points; `report --png` renders at this size.
pub const WINDOW_SIZE: [f32; 2] = [1280.0, 720.0];
pub use live::Phase;
pub use tune_view::TuneProgress;

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
        // render headless with the same painter (`offscreen_gl`). No dithering: on llvmpipe
        // its per-pixel noise cost 12% of a frame, for flat colours that need none.
        renderer: eframe::Renderer::Glow,
        dithering: false,
        // A scripted run leaves the remembered window where the user's session put it.
        persist_window: exit.is_none(),
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

/// A context that has drawn one frame, so its fonts are loaded (they say which glyphs,
/// such as macOS's key symbols, can show); the frame's texture upload is dropped.
#[cfg(test)]
pub(crate) fn context_with_fonts() -> egui::Context {
    let ctx = egui::Context::default();
    ctx.run_ui(egui::RawInput::default(), |_| {})
        .textures_delta
        .clear();
    ctx
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use egui::FontId;

    /// The characters inside the string literals of Rust source `text`, comments left out.
    fn string_literal_chars(text: &str) -> Vec<char> {
        let mut chars = text.chars().peekable();
        let mut found = Vec::new();
        while let Some(c) = chars.next() {
            match c {
                '/' if chars.peek() == Some(&'/') => {
                    chars.by_ref().find(|&c| c == '\n');
                }
                // The character literal '"', which opens no string.
                '\'' if chars.peek() == Some(&'"') => {
                    chars.next();
                }
                '"' => {
                    let mut escaped = false;
                    for c in chars.by_ref() {
                        match c {
                            _ if escaped => {
                                escaped = false;
                                found.push(c);
                            }
                            '\\' => escaped = true,
                            '"' => break,
                            _ => found.push(c),
                        }
                    }
                }
                _ => {}
            }
        }
        found
    }

    /// Each character beyond ASCII in the string literals of the Rust files under `dir`
    /// (but the command line's), with a file that writes it.
    fn written_chars(dir: &Path, found: &mut BTreeMap<char, PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() && name != "cli" {
                written_chars(&path, found);
            } else if path.extension().is_some_and(|ext| ext == "rs") && name != "main.rs" {
                let text = std::fs::read_to_string(&path).unwrap();
                for c in string_literal_chars(&text) {
                    if !c.is_ascii() {
                        found.entry(c).or_insert_with(|| path.clone());
                    }
                }
            }
        }
    }

    #[test]
    fn the_scanner_reads_strings_only() {
        let source = "// “a comment”\nlet c = '\"'; let s = \"a·b \\\" ×\"; /// ‘doc’";
        assert_eq!(
            string_literal_chars(source),
            "a·b \" ×".chars().collect::<Vec<_>>()
        );
    }

    /// A glyph egui's default fonts lack is drawn as a box (and egui_kittest panics on
    /// it), so every text the app can show, its own and the library's messages, labels
    /// and analysis, must be written with the glyphs those fonts have.
    #[test]
    fn every_character_the_app_can_show_is_in_egui_s_default_fonts() {
        let ctx = super::context_with_fonts();
        let mut written = BTreeMap::new();
        // Every crate under `crates/`: the app shows the engine's and analysis' texts too.
        written_chars(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
            &mut written,
        );
        assert!(
            written.contains_key(&'×'),
            "the scan found the app's strings"
        );
        let missing: Vec<String> = written
            .iter()
            .filter(|&(&c, _)| {
                ctx.fonts_mut(|fonts| {
                    !fonts.has_glyph(&FontId::proportional(14.0), c)
                        || !fonts.has_glyph(&FontId::monospace(14.0), c)
                })
            })
            .map(|(c, path)| format!("{c:?} (U+{:04X}) in {}", u32::from(*c), path.display()))
            .collect();
        assert!(missing.is_empty(), "no glyph for {missing:?}");
    }
}
