//! The JPEG decoder for the files zune-jpeg refuses: libjpeg-turbo 3, the library PIL's
//! wheels decode JPEGs with, through the turbojpeg crate, built from the source that crate
//! bundles (with cmake; its SIMD with nasm where nasm is installed). It reads the 8-bit
//! JPEGs that PIL reads and zune-jpeg does not: arithmetic-coded (SOF9–SOF11) and lossless
//! (SOF3) ones. Its output is the fast path's: `channels` interleaved bytes per pixel in
//! the caller's buffer. It converts as PIL does, which opens a JPEG in its own colours
//! and then converts: a colour JPEG decoded to RGB and read as grey takes PIL's luma, a
//! grey JPEG read as RGB is copied into the three channels (libjpeg-turbo converts
//! neither way for a lossless JPEG). The header's pixels are checked against the dataset's
//! limits before anything is decoded. The turbojpeg crate reports libjpeg-turbo's
//! warnings as errors, so a truncated file is refused (as PIL refuses it) rather than
//! read with grey at its end.

use turbojpeg::{Colorspace, Decompressor, Image, PixelFormat};

use super::{cannot_decode, rec601_luma};
use crate::dataset::{DatasetLimits, image_header};

/// A thread's libjpeg-turbo decompressor, made at its first fallback decode and kept for
/// the next.
#[derive(Default)]
pub(super) struct JpegFallback {
    decompressor: Option<Decompressor>,
}

impl JpegFallback {
    /// Decodes the JPEG `bytes` into `out` as `channels` (1 or 3) interleaved bytes per
    /// pixel; its width and height, or the problem.
    pub(super) fn decode(
        &mut self,
        bytes: &[u8],
        channels: usize,
        limits: &DatasetLimits,
        out: &mut Vec<u8>,
    ) -> Result<(u32, u32), String> {
        let decompressor = match &mut self.decompressor {
            Some(decompressor) => decompressor,
            None => self
                .decompressor
                .insert(Decompressor::new().map_err(refused)?),
        };
        let header = decompressor.read_header(bytes).map_err(refused)?;
        // A JPEG's sides are 16-bit.
        let side = |side: usize| u32::try_from(side).map_err(cannot_decode);
        let (width, height) = (side(header.width)?, side(header.height)?);
        image_header::check_pixels(width, height, limits)?;
        let (format, depth) = if header.colorspace == Colorspace::Gray {
            (PixelFormat::GRAY, 1)
        } else {
            (PixelFormat::RGB, 3)
        };
        out.resize(header.width * header.height * depth, 0);
        let image = Image {
            pixels: out.as_mut_slice(),
            width: header.width,
            pitch: header.width * depth,
            height: header.height,
            format,
        };
        decompressor.decompress(bytes, image).map_err(refused)?;
        match (depth, channels) {
            (1, 3) => grey_to_rgb(out),
            (3, 1) => rgb_to_luma(out),
            _ => {}
        }
        Ok((width, height))
    }
}

/// The problem libjpeg-turbo found, in its own words.
fn refused(err: turbojpeg::Error) -> String {
    match err {
        turbojpeg::Error::TurboJpegError(message) => cannot_decode(message),
        other => cannot_decode(other),
    }
}

/// Spreads grey bytes over three interleaved channels, in place.
fn grey_to_rgb(pixels: &mut Vec<u8>) {
    let count = pixels.len();
    pixels.resize(count * 3, 0);
    for at in (0..count).rev() {
        let value = pixels[at];
        pixels[3 * at..3 * at + 3].fill(value);
    }
}

/// Interleaved RGB to its luma, in place.
fn rgb_to_luma(pixels: &mut Vec<u8>) {
    let count = pixels.len() / 3;
    for at in 0..count {
        pixels[at] = rec601_luma(&pixels[3 * at..3 * at + 3]);
    }
    pixels.truncate(count);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grey_is_copied_into_each_channel_and_colour_turned_to_its_luma() {
        let mut pixels = vec![1, 2, 3];
        grey_to_rgb(&mut pixels);
        assert_eq!(pixels, [1, 1, 1, 2, 2, 2, 3, 3, 3]);
        let mut pixels = vec![200, 10, 30, 255, 255, 255];
        rgb_to_luma(&mut pixels);
        // 0.299·200 + 0.587·10 + 0.114·30 = 69.09.
        assert_eq!(pixels, [69, 255]);
    }
}
