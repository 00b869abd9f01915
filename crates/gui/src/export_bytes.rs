//! Exports from the app: PNG images of what the plots show, cropped from a screenshot of
//! the window at its pixel density, and the results through the engine's exporters
//! (JSON, CSV, Markdown). Pure functions; the app writes the bytes in the background.

use std::path::{Path, PathBuf};

use egui::{ColorImage, Rect};
use image::RgbaImage;

use loaderbench_engine::error::{Error, Result};
use loaderbench_measure::results::RunResult;
use loaderbench_present::export::Format;

/// The part of `screenshot` under `rect` (in points), at `pixels_per_point`; `None` when
/// the rect lies outside the image.
pub fn crop(screenshot: &ColorImage, rect: Rect, pixels_per_point: f32) -> Option<RgbaImage> {
    let [width, height] = screenshot.size;
    let to_pixels = |points: f32, limit: usize| {
        ((points * pixels_per_point).round().max(0.0) as usize).min(limit)
    };
    let (left, right) = (to_pixels(rect.min.x, width), to_pixels(rect.max.x, width));
    let (top, bottom) = (to_pixels(rect.min.y, height), to_pixels(rect.max.y, height));
    if right <= left || bottom <= top {
        return None;
    }
    let mut image = RgbaImage::new((right - left) as u32, (bottom - top) as u32);
    for (x, y, pixel) in image.enumerate_pixels_mut() {
        let color = screenshot.pixels[(top + y as usize) * width + left + x as usize];
        *pixel = image::Rgba(color.to_srgba_unmultiplied());
    }
    Some(image)
}

/// PNG file bytes.
pub fn png_bytes(image: &RgbaImage) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    image
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .map_err(|err| Error::run_caused(format!("encoding the PNG: {err}"), err))?;
    Ok(bytes)
}

/// The result in `format`.
pub fn data_bytes(format: Format, result: &RunResult) -> Result<Vec<u8>> {
    format.exporter().export(result)
}

/// `base` with the extension of `format` (or `suffix.png` for images).
pub fn path_for(base: &Path, format: Option<Format>, suffix: &str) -> PathBuf {
    let extension = format.map_or("png", |f| f.exporter().extension());
    let stem = base.file_stem().map_or_else(
        || "loaderbench".to_owned(),
        |s| s.to_string_lossy().into_owned(),
    );
    base.with_file_name(format!("{stem}{suffix}.{extension}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui::{Color32, pos2};

    #[test]
    fn crops_at_the_pixel_density() {
        let mut screenshot = ColorImage::filled([40, 20], Color32::BLACK);
        screenshot.pixels[5 * 40 + 10] = Color32::RED;
        let rect = Rect::from_min_max(pos2(5.0, 2.5), pos2(15.0, 7.5));
        let image = crop(&screenshot, rect, 2.0).unwrap();
        assert_eq!(image.dimensions(), (20, 10));
        assert_eq!(image.get_pixel(0, 0).0, [255, 0, 0, 255]);
        assert_eq!(image.get_pixel(1, 0).0, [0, 0, 0, 255]);
    }

    #[test]
    fn a_rect_outside_the_image_crops_nothing() {
        let screenshot = ColorImage::filled([4, 4], Color32::BLACK);
        let rect = Rect::from_min_max(pos2(10.0, 10.0), pos2(20.0, 20.0));
        assert!(crop(&screenshot, rect, 1.0).is_none());
    }

    #[test]
    fn export_paths_take_the_format_extension() {
        let base = Path::new("/tmp/run.md");
        assert_eq!(
            path_for(base, Some(Format::Csv), ""),
            Path::new("/tmp/run.csv")
        );
        assert_eq!(
            path_for(base, None, "-plots"),
            Path::new("/tmp/run-plots.png")
        );
    }
}
