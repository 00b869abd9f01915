//! egui drawn without a window through OpenGL, for `report --png` and for the tests'
//! screenshots: a headless EGL display on the first device that gives one (a GPU, or
//! Mesa's software rasterizer where there is none), an OpenGL context made current with
//! no surface, and egui_glow's painter (the one the window draws with) drawing into an
//! offscreen framebuffer that is read back as an image. It is egui_kittest's
//! `TestRenderer`, so a `Harness` renders through it. It replaced wgpu, which the window
//! does not use and which cost a fresh build about 80 s of CPU for this one job.

use std::sync::Arc;

use egui_glow::glow::{self, HasContext};
use egui_kittest::TestRenderer;
use glutin::api::egl::context::PossiblyCurrentContext;
use glutin::api::egl::device::Device;
use glutin::api::egl::display::Display;
use glutin::config::{ConfigSurfaceTypes, ConfigTemplateBuilder};
use glutin::context::{ContextApi, ContextAttributesBuilder};
use glutin::prelude::*;

/// An OpenGL context with no window, egui's painter on it, and the framebuffer it draws
/// into (made when the first frame's size is known, remade when the size changes).
pub struct OffscreenGl {
    painter: egui_glow::Painter,
    target: Option<Framebuffer>,
    context: PossiblyCurrentContext,
    /// Why a texture update could not reach the context: the next render fails with it
    /// rather than draw without the texture.
    lost_update: Option<String>,
}

/// An offscreen colour buffer of one size.
struct Framebuffer {
    framebuffer: glow::Framebuffer,
    renderbuffer: glow::Renderbuffer,
    size: [u32; 2],
}

impl OffscreenGl {
    /// A context on the first EGL device that gives one, or why none did (each device's
    /// failure, named).
    pub fn new() -> Result<Self, String> {
        let devices =
            Device::query_devices().map_err(|err| format!("EGL lists no devices ({err})"))?;
        let mut failures = Vec::new();
        for device in devices {
            match Self::on(&device) {
                Ok(renderer) => return Ok(renderer),
                Err(err) => failures.push(format!(
                    "{}: {err}",
                    device.name().or(device.vendor()).unwrap_or("an EGL device")
                )),
            }
        }
        Err(match failures.is_empty() {
            true => "EGL lists no devices".to_owned(),
            false => failures.join("; "),
        })
    }

    fn on(device: &Device) -> Result<Self, String> {
        // SAFETY: no native display is passed, so there is nothing for EGL to outlive.
        let display = unsafe { Display::with_device(device, None) }
            .map_err(|err| format!("no display ({err})"))?;
        let template = ConfigTemplateBuilder::new()
            .with_surface_type(ConfigSurfaceTypes::empty())
            .build();
        // SAFETY: the template names no native window.
        let config = unsafe { display.find_configs(template) }
            .map_err(|err| format!("no config ({err})"))?
            .next()
            .ok_or("no config")?;
        // Desktop OpenGL where the device has it, else OpenGL ES (egui_glow draws on both).
        let context = [None, Some(ContextApi::Gles(None))]
            .into_iter()
            .find_map(|api| {
                let mut attributes = ContextAttributesBuilder::new();
                if let Some(api) = api {
                    attributes = attributes.with_context_api(api);
                }
                // SAFETY: the config comes from this display, and no window is shared.
                unsafe { display.create_context(&config, &attributes.build(None)) }.ok()
            })
            .ok_or("no OpenGL context")?
            .make_current_surfaceless()
            .map_err(|err| format!("the context cannot be made current ({err})"))?;
        // SAFETY: the context is current on this thread, and the loader is its display's.
        let gl = unsafe {
            glow::Context::from_loader_function_cstr(|name| display.get_proc_address(name))
        };
        let painter = egui_glow::Painter::new(Arc::new(gl), "", None, false)
            .map_err(|err| format!("egui's painter failed ({err})"))?;
        Ok(Self {
            painter,
            target: None,
            context,
            lost_update: None,
        })
    }

    /// The painter's context current on this thread (another renderer's may have been).
    fn make_current(&self) -> Result<(), String> {
        self.context
            .make_current_surfaceless()
            .map_err(|err| format!("the OpenGL context cannot be made current ({err})"))
    }

    /// A framebuffer of `size` pixels (the last one when it has that size), bound.
    fn bind_target(&mut self, size: [u32; 2]) -> Result<(), String> {
        if self.target.as_ref().map(|target| target.size) != Some(size) {
            self.free_target();
            self.target = Some(self.new_target(size)?);
        }
        let gl = self.painter.gl();
        let framebuffer = self.target.as_ref().map(|target| target.framebuffer);
        // SAFETY: the context is current and the framebuffer is its own.
        unsafe {
            gl.bind_framebuffer(glow::FRAMEBUFFER, framebuffer);
            match gl.check_framebuffer_status(glow::FRAMEBUFFER) {
                glow::FRAMEBUFFER_COMPLETE => Ok(()),
                status => Err(format!(
                    "the offscreen framebuffer is incomplete ({status:#x})"
                )),
            }
        }
    }

    /// An RGBA8 colour buffer of `size` pixels, attached to a new framebuffer.
    fn new_target(&self, size: [u32; 2]) -> Result<Framebuffer, String> {
        let gl = self.painter.gl();
        // SAFETY: the context is current, and the objects made here are freed by
        // `free_target`.
        unsafe {
            let largest = gl.get_parameter_i32(glow::MAX_RENDERBUFFER_SIZE).max(0) as u32;
            if size[0] > largest || size[1] > largest {
                return Err(format!(
                    "{}×{} pixels is more than the renderer draws ({largest} a side)",
                    size[0], size[1]
                ));
            }
            let renderbuffer = gl.create_renderbuffer()?;
            gl.bind_renderbuffer(glow::RENDERBUFFER, Some(renderbuffer));
            gl.renderbuffer_storage(
                glow::RENDERBUFFER,
                glow::RGBA8,
                size[0] as i32,
                size[1] as i32,
            );
            let framebuffer = gl.create_framebuffer()?;
            gl.bind_framebuffer(glow::FRAMEBUFFER, Some(framebuffer));
            gl.framebuffer_renderbuffer(
                glow::FRAMEBUFFER,
                glow::COLOR_ATTACHMENT0,
                glow::RENDERBUFFER,
                Some(renderbuffer),
            );
            Ok(Framebuffer {
                framebuffer,
                renderbuffer,
                size,
            })
        }
    }

    fn free_target(&mut self) {
        if let Some(target) = self.target.take() {
            let gl = self.painter.gl();
            // SAFETY: the objects are this context's, and nothing uses them after this.
            unsafe {
                gl.bind_framebuffer(glow::FRAMEBUFFER, None);
                gl.delete_framebuffer(target.framebuffer);
                gl.delete_renderbuffer(target.renderbuffer);
            }
        }
    }
}

impl TestRenderer for OffscreenGl {
    fn handle_delta(&mut self, delta: &mut egui::TexturesDelta) {
        if let Err(err) = self.make_current() {
            self.lost_update.get_or_insert(err);
            return;
        }
        for (id, images) in delta.set.drain() {
            for image in images {
                self.painter.set_texture(id, &image);
            }
        }
        for id in delta.free.drain() {
            self.painter.free_texture(id);
        }
    }

    fn render(
        &mut self,
        ctx: &egui::Context,
        output: &egui::FullOutput,
    ) -> Result<image::RgbaImage, String> {
        if let Some(err) = &self.lost_update {
            return Err(format!("a texture update was lost: {err}"));
        }
        self.make_current()?;
        let pixels_per_point = ctx.pixels_per_point();
        let size = ctx.content_rect().size() * pixels_per_point;
        let size = [size.x.round() as u32, size.y.round() as u32];
        self.bind_target(size)?;
        let primitives = ctx.tessellate(output.shapes.clone(), pixels_per_point);
        // Transparent where nothing is drawn, as egui_kittest's own renderer clears.
        self.painter.clear(size, [0.0; 4]);
        self.painter
            .paint_primitives(size, pixels_per_point, &primitives);
        let image = self.painter.read_screen_rgba(size);
        image::RgbaImage::from_raw(size[0], size[1], image.as_raw().to_vec())
            .ok_or_else(|| "the read-back image has the wrong size".to_owned())
    }
}

impl Drop for OffscreenGl {
    fn drop(&mut self) {
        if self.make_current().is_ok() {
            self.free_target();
            self.painter.destroy();
        }
    }
}

#[cfg(test)]
mod tests {
    use egui_kittest::Harness;

    use super::OffscreenGl;

    fn heading(text: &'static str) -> Harness<'static> {
        Harness::builder()
            .with_size([160.0, 60.0])
            .renderer(OffscreenGl::new().expect("an offscreen OpenGL context (EGL)"))
            .build_ui(move |ui| {
                ui.heading(text);
            })
    }

    #[test]
    fn two_renderers_on_one_thread_each_draw_their_own_frame() {
        let mut first = heading("first");
        let mut second = heading("second");
        let one = first.render().unwrap();
        let two = second.render().unwrap();
        // The first context is current again for its next frame (a new pass, so the
        // harness renders it rather than hand back the last image).
        first.step();
        let one_again = first.render().unwrap();

        assert_eq!(one.dimensions(), (160, 60));
        // The heading's anti-aliased glyphs over the panel's fill: many shades, not a
        // cleared (transparent) image.
        let mut colours: Vec<[u8; 4]> = one.pixels().map(|pixel| pixel.0).collect();
        colours.sort_unstable();
        colours.dedup();
        assert!(colours.len() > 10, "{} colours", colours.len());
        assert!(one.pixels().any(|pixel| pixel[3] == 255), "nothing opaque");
        assert_ne!(one, two, "each harness draws its own text");
        assert_eq!(one, one_again);
    }

    #[test]
    fn a_frame_of_another_size_gets_a_framebuffer_of_that_size() {
        let mut harness = heading("resized");
        assert_eq!(harness.render().unwrap().dimensions(), (160, 60));
        harness.set_size(egui::vec2(300.0, 90.0));
        harness.run();
        assert_eq!(harness.render().unwrap().dimensions(), (300, 90));
    }
}
