//! JPEGs of every coding PIL reads, made by libjpeg-turbo's encoder (the turbojpeg crate):
//! baseline, progressive, arithmetic-coded and lossless; and a 12-bit one, which both
//! PIL and our engine refuse by its frame header alone, made by rewriting an 8-bit
//! JPEG's frame header (no encoder here writes 12-bit samples).

use std::path::Path;

use image::{Rgb, RgbImage};
use turbojpeg::{Compressor, Image, PixelFormat};

/// How a JPEG's image is coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    Baseline,
    Progressive,
    Arithmetic,
    Lossless,
}

impl Coding {
    pub const ALL: [Coding; 4] = [
        Coding::Arithmetic,
        Coding::Baseline,
        Coding::Lossless,
        Coding::Progressive,
    ];

    /// The coding's name in lower case, sorted as [`Coding::ALL`] is.
    pub fn name(self) -> &'static str {
        match self {
            Coding::Baseline => "baseline",
            Coding::Progressive => "progressive",
            Coding::Arithmetic => "arithmetic",
            Coding::Lossless => "lossless",
        }
    }
}

/// Picture `n` of `width` × `height`: gradients and stripes of its own colours.
pub fn picture(n: u32, width: u32, height: u32) -> RgbImage {
    RgbImage::from_fn(width, height, |x, y| {
        let stripe = if (x / 5 + y / 3 + n).is_multiple_of(2) {
            210
        } else {
            30
        };
        Rgb([
            stripe,
            (x * 255 / width + n * 40) as u8,
            (y * 255 / height) as u8,
        ])
    })
}

/// `picture` as a JPEG coded as `coding` (quality 90 where lossy).
pub fn encode(picture: &RgbImage, coding: Coding) -> Vec<u8> {
    let mut compressor = Compressor::new().unwrap();
    compressor.set_quality(90).unwrap();
    match coding {
        Coding::Baseline => {}
        Coding::Progressive => compressor.set_progressive(true).unwrap(),
        Coding::Arithmetic => compressor.set_arithmetic(true).unwrap(),
        Coding::Lossless => compressor.set_lossless(true).unwrap(),
    }
    let width = picture.width() as usize;
    let image = Image {
        pixels: picture.as_raw().as_slice(),
        width,
        pitch: width * 3,
        height: picture.height() as usize,
        format: PixelFormat::RGB,
    };
    compressor.compress_to_vec(image).unwrap()
}

/// A 12-bit JPEG: `picture`'s baseline JPEG with its frame header made an extended
/// one (SOF1) of 12-bit samples.
pub fn twelve_bit(picture: &RgbImage) -> Vec<u8> {
    let mut bytes = encode(picture, Coding::Baseline);
    let sof = bytes.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
    bytes[sof + 1] = 0xC1;
    bytes[sof + 4] = 12;
    bytes
}

/// Writes an image folder under `root`: one class folder per coding (named after it),
/// each with `per_class` JPEGs of `width` × `height` coded that way.
pub fn folder_of_every_coding(root: &Path, per_class: u32, width: u32, height: u32) {
    for coding in Coding::ALL {
        let class = root.join(coding.name());
        std::fs::create_dir_all(&class).unwrap();
        for n in 0..per_class {
            let bytes = encode(&picture(n, width, height), coding);
            std::fs::write(class.join(format!("{n}.jpg")), bytes).unwrap();
        }
    }
}
