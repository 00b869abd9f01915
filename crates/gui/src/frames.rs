//! What the window's frames cost, and how many it draws. With no GPU, a CPU rasterizer
//! (Mesa's llvmpipe on a cloud box or a remote desktop) shades every pixel of every
//! frame: 20 ms of CPU a frame on two cores (benches/window_frames.rs), 15 ms once the
//! panels leave their fill to the window's clear (`App::panel_frame`). egui's
//! animations (a tooltip fading in, a section opening) draw a frame per display refresh
//! for their length, so a hover over a chart cost four frames where three do; on such a
//! renderer the window shows its changes at once instead. The frame benchmark counts
//! frames through here too: with `LOADERBENCH_FRAME_COUNT` naming a file, the app writes
//! the number of frames drawn so far there after each one.

use std::path::PathBuf;

use eframe::glow::{self, HasContext};

/// The environment variable naming the file the frame count goes to.
pub const FRAME_COUNT_VAR: &str = "LOADERBENCH_FRAME_COUNT";

/// Turns egui's animations off when `gl` renders on the CPU.
pub fn fit_to_renderer(ctx: &egui::Context, gl: &glow::Context) {
    // SAFETY: glGetString(GL_RENDERER) only reads a string of the current context, which
    // eframe made current before creating the app.
    let renderer = unsafe { gl.get_parameter_string(glow::RENDERER) };
    if is_software_renderer(&renderer) {
        ctx.all_styles_mut(|style| style.animation_time = 0.0);
    }
}

/// Whether an OpenGL `GL_RENDERER` string names a rasterizer that runs on the CPU.
fn is_software_renderer(renderer: &str) -> bool {
    let renderer = renderer.to_ascii_lowercase();
    ["llvmpipe", "softpipe", "swrast", "swiftshader", "lavapipe"]
        .iter()
        .any(|name| renderer.contains(name))
}

/// Writes the window's frame count to the file `LOADERBENCH_FRAME_COUNT` names, if any.
pub struct FrameCount {
    file: Option<PathBuf>,
}

impl FrameCount {
    pub fn from_env() -> FrameCount {
        FrameCount {
            file: std::env::var_os(FRAME_COUNT_VAR).map(PathBuf::from),
        }
    }

    /// Records that the frame `ctx` is drawing is done.
    pub fn drawn(&self, ctx: &egui::Context) {
        if let Some(file) = &self.file {
            // The count so far includes this frame. A failed write only costs the
            // benchmark its figure, which then says the count is missing.
            let _ = std::fs::write(file, (ctx.cumulative_frame_nr() + 1).to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_rasterizers_are_told_from_gpus() {
        for software in [
            "llvmpipe (LLVM 15.0.6, 256 bits)",
            "softpipe",
            "Mesa Software Rasterizer (swrast)",
            "Google SwiftShader",
            "lavapipe",
        ] {
            assert!(is_software_renderer(software), "{software}");
        }
        for gpu in [
            "NVIDIA GeForce RTX 4090/PCIe/SSE2",
            "AMD Radeon Pro W7900 (radeonsi, navi31, LLVM 15.0.6, DRM 3.54)",
            "Mesa Intel(R) UHD Graphics 630 (CFL GT2)",
            "Apple M2",
        ] {
            assert!(!is_software_renderer(gpu), "{gpu}");
        }
    }
}
