//! One image file turned into one sample: read into a reused buffer, decoded (JPEG with
//! zune-jpeg straight to RGB or grey, and the JPEGs it refuses, arithmetic-coded or
//! lossless, with libjpeg-turbo, the decoder PIL's wheels bundle ([`jpeg_fallback`]); PNG
//! and the rest through the `image` crate, 16-bit samples cut to 8 bits as PIL cuts them),
//! resized with fast_image_resize's SIMD convolution
//! (bilinear with the filter widened when shrinking, as Pillow's `resize` does, so it
//! matches torchvision's `Resize`) and written channels-first in one pass.
//! [`decode_sample`] does the same for an image's bytes already in memory (a tar shard's
//! member). The buffers, the resizer and the fallback's decompressor live in a per-thread
//! [`Scratch`], so a worker reading sample after sample allocates nothing per JPEG on the
//! fast path; one larger than [`SCRATCH_KEPT_BYTES`] is let go after its sample, so a
//! thread's memory is not sized by the largest image it met. Nothing is sized from a file
//! before the dataset's limits allow it: the file's length (`file_bytes`) before it is
//! read, the header's pixels (`image_pixels`) before it is decoded, by whichever decoder.
//! The fallback runs only where zune-jpeg refused the file, so the common JPEG's decode is
//! zune-jpeg's alone; a file neither decodes is refused in libjpeg-turbo's words, or in
//! the header check's where the header is the problem (a 12-bit JPEG, which PIL refuses
//! too).
//!
//! Reduced-scale decoding (JPEG DCT scaling, as PIL's `draft`) was measured with
//! jpeg-decoder's `Decoder::scale` and left out: its entropy decoding is so much slower
//! than zune-jpeg's that its scaled decode lost to zune-jpeg's full decode plus the
//! resize at every size up to 1000×750, and won by only a tenth at 2000×1500
//! (docs/performance.md).

use std::cell::RefCell;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use fast_image_resize::images::{TypedImage, TypedImageRef};
use fast_image_resize::pixels::{U8, U8x3};
use fast_image_resize::{FilterType, PixelTrait, ResizeAlg, ResizeOptions, Resizer};
use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

use super::{DatasetLimits, SampleShape, image_header};
use crate::error::{Error, Result};
use jpeg_fallback::JpegFallback;

mod jpeg_fallback;

/// The most bytes a thread's scratch buffer keeps between samples (a 21-megapixel RGB
/// photo decoded); a larger one is freed after the sample that needed it.
pub(crate) const SCRATCH_KEPT_BYTES: usize = 64 << 20;

/// What one thread reuses from sample to sample.
#[derive(Default)]
struct Scratch {
    file: Vec<u8>,
    decoded: Vec<u8>,
    resized: Vec<u8>,
    resizer: Resizer,
    jpeg_fallback: JpegFallback,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The size of a decoded image (its pixels are in [`Scratch::decoded`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decoded {
    width: u32,
    height: u32,
}

/// Reads the image at `path` into `pixels` as `shape` (channels-first u8, 1 or 3
/// channels), resizing when its size differs; returns the time reading the file took
/// (the fetch, apart from decoding).
pub fn read_sample(
    path: &Path,
    shape: SampleShape,
    limits: &DatasetLimits,
    pixels: &mut [u8],
) -> Result<Duration> {
    let started = Instant::now();
    // Taken out of the scratch so that decoding can borrow the rest of it.
    let mut bytes = SCRATCH.with_borrow_mut(|scratch| std::mem::take(&mut scratch.file));
    let read = read_file(path, limits, &mut bytes);
    let fetch = started.elapsed();
    let decoded = read.and_then(|()| {
        decode_sample(&bytes, shape, limits, pixels).map_err(|problem| Error::file(path, problem))
    });
    if bytes.capacity() > SCRATCH_KEPT_BYTES {
        bytes = Vec::new();
    }
    SCRATCH.with_borrow_mut(|scratch| scratch.file = bytes);
    decoded.map(|()| fetch)
}

/// Decodes the image file `bytes` into `pixels` as [`read_sample`] does; the error is the
/// problem, for the caller to say which file or member it is.
pub fn decode_sample(
    bytes: &[u8],
    shape: SampleShape,
    limits: &DatasetLimits,
    pixels: &mut [u8],
) -> std::result::Result<(), String> {
    SCRATCH.with_borrow_mut(|scratch| {
        let written = scratch
            .decode(bytes, shape.channels, limits)
            .and_then(|size| {
                write_sample(scratch, size, shape, pixels)
                    .map_err(|message| format!("cannot resize: {message}"))
            });
        scratch.let_go_of_large_buffers();
        written
    })
}

impl Scratch {
    /// Decodes `bytes` into [`Scratch::decoded`] as `channels` interleaved bytes per
    /// pixel; the problem (a header over `limits.image_pixels`, or what the decoder said)
    /// otherwise.
    fn decode(
        &mut self,
        bytes: &[u8],
        channels: usize,
        limits: &DatasetLimits,
    ) -> std::result::Result<Decoded, String> {
        if !bytes.starts_with(&[0xFF, 0xD8]) {
            return decode_other(bytes, channels, limits, &mut self.decoded);
        }
        match decode_jpeg(bytes, channels, limits, &mut self.decoded)? {
            FastJpeg::Decoded(size) => Ok(size),
            FastJpeg::LeftToImage => decode_other(bytes, channels, limits, &mut self.decoded),
            FastJpeg::Refused => {
                let fallback = &mut self.jpeg_fallback;
                match fallback.decode(bytes, channels, limits, &mut self.decoded) {
                    Ok((width, height)) => Ok(Decoded { width, height }),
                    // A header that is the problem (a 12-bit JPEG) in the words of the
                    // check at open.
                    Err(problem) => Err(image_header::check_reader(&mut &bytes[..], limits)
                        .err()
                        .map_or(problem, image_header::BadHeader::into_problem)),
                }
            }
        }
    }

    /// Frees the buffers (and the resizer's) that a large image grew past
    /// [`SCRATCH_KEPT_BYTES`].
    fn let_go_of_large_buffers(&mut self) {
        let kept = self.decoded.capacity().max(self.resized.capacity());
        if kept > SCRATCH_KEPT_BYTES {
            self.decoded = Vec::new();
            self.resized = Vec::new();
            self.resizer = Resizer::default();
        }
    }
}

/// Reads the file at `path` into `bytes`, refusing one over `limits.file_bytes` before
/// reading it (and one that grew past it while read).
fn read_file(path: &Path, limits: &DatasetLimits, bytes: &mut Vec<u8>) -> Result<()> {
    bytes.clear();
    let cannot_read =
        |err: std::io::Error| Error::file_caused(path, format!("cannot read: {err}"), err);
    let file = File::open(path).map_err(cannot_read)?;
    let check = |length: u64| {
        let what = "the file's size in bytes";
        DatasetLimits::check(path, what, length, "file_bytes", limits.file_bytes)
    };
    check(file.metadata().map_err(cannot_read)?.len())?;
    file.take(limits.file_bytes.saturating_add(1))
        .read_to_end(bytes)
        .map_err(cannot_read)?;
    check(bytes.len() as u64)
}

fn cannot_decode(message: impl std::fmt::Display) -> String {
    format!("cannot decode: {message}")
}

/// What zune-jpeg made of a JPEG.
enum FastJpeg {
    Decoded(Decoded),
    /// A colour space it cannot turn into grey (CMYK, YCCK): the `image` crate's.
    LeftToImage,
    /// A JPEG it does not decode (arithmetic-coded, lossless, damaged), for the fallback.
    Refused,
}

/// zune-jpeg's decode into `out`; the problem when the header is over
/// `limits.image_pixels`.
fn decode_jpeg(
    bytes: &[u8],
    channels: usize,
    limits: &DatasetLimits,
    out: &mut Vec<u8>,
) -> std::result::Result<FastJpeg, String> {
    let mut decoder = JpegDecoder::new(ZCursor::new(bytes));
    if decoder.decode_headers().is_err() {
        return Ok(FastJpeg::Refused);
    }
    let colour = if channels == 1 {
        let input = decoder.input_colorspace();
        if !matches!(input, Some(ColorSpace::YCbCr | ColorSpace::Luma)) {
            return Ok(FastJpeg::LeftToImage);
        }
        ColorSpace::Luma
    } else {
        ColorSpace::RGB
    };
    // Strict: a truncated or damaged file is refused, as in PIL, not read as grey pixels.
    let options = DecoderOptions::default()
        .set_strict_mode(true)
        .jpeg_set_out_colorspace(colour);
    decoder.set_options(options);
    let (Ok(()), Some((width, height)), Some(needed)) = (
        decoder.decode_headers(),
        decoder.dimensions(),
        decoder.output_buffer_size(),
    ) else {
        return Ok(FastJpeg::Refused);
    };
    // zune-jpeg's sides are 16-bit.
    let (width, height) = (width as u32, height as u32);
    image_header::check_pixels(width, height, limits)?;
    out.resize(needed, 0);
    if decoder.decode_into(out).is_err() {
        return Ok(FastJpeg::Refused);
    }
    Ok(FastJpeg::Decoded(Decoded { width, height }))
}

/// Any other format the `image` crate reads (PNG, and JPEGs zune-jpeg leaves to it).
fn decode_other(
    bytes: &[u8],
    channels: usize,
    limits: &DatasetLimits,
    out: &mut Vec<u8>,
) -> std::result::Result<Decoded, String> {
    let decoder = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(cannot_decode)?
        .into_decoder()
        .map_err(cannot_decode)?;
    let (width, height) = image::ImageDecoder::dimensions(&decoder);
    image_header::check_pixels(width, height, limits)?;
    let image = as_pil_reads(image::DynamicImage::from_decoder(decoder).map_err(cannot_decode)?);
    let (width, height) = (image.width(), image.height());
    *out = if channels == 1 && image.color().has_color() {
        // Not `into_luma8`: the image crate weighs colour by Rec. 709, and JPEGs (their
        // Y channel) and PIL use Rec. 601, so a mixed folder would turn grey two ways.
        let rgb = image.into_rgb8().into_raw();
        rgb.chunks_exact(3).map(rec601_luma).collect()
    } else if channels == 1 {
        image.into_luma8().into_raw()
    } else {
        image.into_rgb8().into_raw()
    };
    Ok(Decoded { width, height })
}

/// An image of 16-bit samples (a PNG's or a TIFF's) as PIL gives it to torchvision:
/// grey (PIL's mode `I;16`) with each value clipped at 255, which is what its
/// `convert("RGB")` and `convert("L")` do; colour, and grey with alpha, with each value's
/// high byte, as PIL reads them. The `image` crate's own conversion rounds to the nearest
/// 8-bit value instead, a different sample from the PyTorch runtime's.
fn as_pil_reads(image: image::DynamicImage) -> image::DynamicImage {
    use image::{DynamicImage, ImageBuffer};
    let (width, height) = (image.width(), image.height());
    let high_bytes = |samples: &[u16]| samples.iter().map(|v| v.to_be_bytes()[0]).collect();
    // Each buffer holds as many samples as the image it came from.
    let converted = match &image {
        DynamicImage::ImageLuma16(grey) => {
            let clipped = grey.iter().map(|&v| u8::try_from(v).unwrap_or(u8::MAX));
            ImageBuffer::from_raw(width, height, clipped.collect()).map(DynamicImage::ImageLuma8)
        }
        DynamicImage::ImageLumaA16(pixels) => {
            ImageBuffer::from_raw(width, height, high_bytes(pixels)).map(DynamicImage::ImageLumaA8)
        }
        DynamicImage::ImageRgb16(pixels) => {
            ImageBuffer::from_raw(width, height, high_bytes(pixels)).map(DynamicImage::ImageRgb8)
        }
        DynamicImage::ImageRgba16(pixels) => {
            ImageBuffer::from_raw(width, height, high_bytes(pixels)).map(DynamicImage::ImageRgba8)
        }
        _ => None,
    };
    converted.unwrap_or(image)
}

/// ITU-R 601 luma of one RGB pixel, to the bit as PIL's `convert("L")` computes it
/// (R·299/1000 + G·587/1000 + B·114/1000 in 16-bit fixed point, rounded).
fn rec601_luma(rgb: &[u8]) -> u8 {
    let [r, g, b] = [rgb[0], rgb[1], rgb[2]].map(u32::from);
    // At most 255·65536 + 0x8000, so the shifted sum fits in a u8.
    ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16) as u8
}

/// Resizes the decoded image to `shape` (unless it has that size) and writes it
/// channels-first into `pixels`.
fn write_sample(
    scratch: &mut Scratch,
    size: Decoded,
    shape: SampleShape,
    pixels: &mut [u8],
) -> std::result::Result<(), String> {
    // `ImageFolder::open` checked that both sides fit in u32.
    let (width, height) = (shape.width as u32, shape.height as u32);
    let unchanged = size.width == width && size.height == height;
    if shape.channels == 1 {
        if unchanged {
            pixels.copy_from_slice(&scratch.decoded);
            return Ok(());
        }
        // Grey is already channels-first: resize straight into the sample.
        return resize(
            scratch,
            size,
            shape.channels,
            (width, height),
            Target::Sample(pixels),
        );
    }
    if !unchanged {
        scratch.resized.resize(pixels.len(), 0);
        resize(
            scratch,
            size,
            shape.channels,
            (width, height),
            Target::Scratch,
        )?;
    }
    let hwc = if unchanged {
        &scratch.decoded
    } else {
        &scratch.resized
    };
    to_channels_first(hwc, pixels);
    Ok(())
}

/// Where [`resize`] writes.
enum Target<'a> {
    Sample(&'a mut [u8]),
    Scratch,
}

fn resize(
    scratch: &mut Scratch,
    size: Decoded,
    channels: usize,
    destination_size: (u32, u32),
    target: Target,
) -> std::result::Result<(), String> {
    let destination = match target {
        Target::Sample(pixels) => pixels,
        Target::Scratch => &mut scratch.resized,
    };
    let source = (size.width, size.height, scratch.decoded.as_slice());
    let resizer = &mut scratch.resizer;
    // Typed, for the two pixel types a sample has: the resizer's untyped entry point
    // instantiates its SIMD kernels for all 13 pixel types, which was 37% of this
    // crate's LLVM IR and over a third of its build time.
    if channels == 1 {
        resize_as::<U8>(resizer, source, destination_size, destination)
    } else {
        resize_as::<U8x3>(resizer, source, destination_size, destination)
    }
}

/// Resizes `(width, height, pixels)` of pixel type `P` into `destination`, bilinear.
fn resize_as<P: PixelTrait>(
    resizer: &mut Resizer,
    (width, height, pixels): (u32, u32, &[u8]),
    (to_width, to_height): (u32, u32),
    destination: &mut [u8],
) -> std::result::Result<(), String> {
    let source =
        TypedImageRef::<P>::from_buffer(width, height, pixels).map_err(|err| err.to_string())?;
    let mut destination = TypedImage::<P>::from_buffer(to_width, to_height, destination)
        .map_err(|err| err.to_string())?;
    let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Bilinear));
    resizer
        .resize_typed(&source, &mut destination, &options)
        .map_err(|err| err.to_string())
}

/// Interleaved RGB (`hwc`) to three planes in `chw`, which is as long.
fn to_channels_first(hwc: &[u8], chw: &mut [u8]) {
    let plane = chw.len() / 3;
    let (red, rest) = chw.split_at_mut(plane);
    let (green, blue) = rest.split_at_mut(plane);
    for (((pixel, r), g), b) in hwc
        .chunks_exact(3)
        .zip(red)
        .zip(green.iter_mut())
        .zip(blue.iter_mut())
    {
        *r = pixel[0];
        *g = pixel[1];
        *b = pixel[2];
    }
}

#[cfg(test)]
mod tests {
    use image::{DynamicImage, Rgb, RgbImage};
    use tempfile::TempDir;

    use super::*;
    use crate::dataset::PixelKind;

    fn shape(channels: usize, height: usize, width: usize) -> SampleShape {
        SampleShape {
            channels,
            height,
            width,
            pixel: PixelKind::U8,
        }
    }

    /// A picture with edges and gradients, so resizing has something to get wrong.
    fn picture(width: u32, height: u32) -> RgbImage {
        RgbImage::from_fn(width, height, |x, y| {
            let stripe = if (x / 7 + y / 5) % 2 == 0 { 200 } else { 40 };
            Rgb([stripe, (x * 255 / width) as u8, (y * 255 / height) as u8])
        })
    }

    /// `image` encoded as a JPEG file's bytes.
    fn jpeg_bytes(image: RgbImage) -> Vec<u8> {
        let mut bytes = Vec::new();
        DynamicImage::ImageRgb8(image)
            .write_to(
                &mut std::io::Cursor::new(&mut bytes),
                image::ImageFormat::Jpeg,
            )
            .unwrap();
        bytes
    }

    fn write_jpeg(dir: &Path, name: &str, image: &RgbImage) -> std::path::PathBuf {
        let path = dir.join(name);
        image
            .save_with_format(&path, image::ImageFormat::Jpeg)
            .unwrap();
        path
    }

    fn read(path: &Path, shape: SampleShape) -> Vec<u8> {
        let mut pixels = vec![0; shape.sample_bytes()];
        read_sample(path, shape, &DatasetLimits::DEFAULT, &mut pixels).unwrap();
        pixels
    }

    #[test]
    fn samples_are_the_same_whichever_thread_reads_them_in_whatever_order() {
        let dir = TempDir::new().unwrap();
        let mut paths: Vec<_> = [(64, 48), (32, 24), (200, 90), (31, 77), (32, 24)]
            .iter()
            .enumerate()
            .map(|(i, &(w, h))| write_jpeg(dir.path(), &format!("{i}.jpg"), &picture(w, h)))
            .collect();
        let png = dir.path().join("5.png");
        picture(50, 40).save(&png).unwrap();
        paths.push(png);
        // Two for the fallback decoder, whose decompressor each thread keeps.
        let rgb = picture(45, 30).into_raw();
        for (name, arithmetic) in [("6.jpg", true), ("7.jpg", false)] {
            let jpeg = turbo_jpeg(&rgb, 45, turbojpeg::PixelFormat::RGB, |c| {
                c.set_arithmetic(arithmetic).unwrap();
                c.set_lossless(!arithmetic).unwrap();
            });
            std::fs::write(dir.path().join(name), jpeg).unwrap();
            paths.push(dir.path().join(name));
        }
        let shape = shape(3, 24, 32);
        let forwards: Vec<Vec<u8>> = paths.iter().map(|p| read(p, shape)).collect();
        let backwards = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    paths
                        .iter()
                        .rev()
                        .map(|p| read(p, shape))
                        .collect::<Vec<_>>()
                })
                .join()
                .unwrap()
        });
        for (i, (a, b)) in forwards.iter().zip(backwards.iter().rev()).enumerate() {
            assert!(a == b, "sample {i} differs between threads");
        }
    }

    #[test]
    fn resized_sample_is_close_to_a_plain_decode_and_triangle_resize() {
        let dir = TempDir::new().unwrap();
        let path = write_jpeg(dir.path(), "big.jpg", &picture(240, 180));
        let ours = read(&path, shape(3, 48, 64));
        let plain = image::open(&path).unwrap().to_rgb8();
        let plain = image::imageops::resize(&plain, 64, 48, image::imageops::FilterType::Triangle);
        let plane = 48 * 64;
        let total: u64 = plain
            .pixels()
            .enumerate()
            .flat_map(|(i, p)| (0..3).map(move |c| (i, c, p.0[c])))
            .map(|(i, c, value)| u64::from(ours[c * plane + i].abs_diff(value)))
            .sum();
        let mean = total as f64 / (3 * plane) as f64;
        assert!(mean < 2.0, "mean absolute difference {mean}");
    }

    #[test]
    fn colour_jpeg_read_as_grey_takes_its_luma_as_pil_does() {
        let dir = TempDir::new().unwrap();
        let path = write_jpeg(
            dir.path(),
            "red.jpg",
            &RgbImage::from_pixel(16, 16, Rgb([200, 10, 30])),
        );
        // ITU-R 601 luma (PIL's convert("L")): 0.299·200 + 0.587·10 + 0.114·30 = 69.
        let grey = read(&path, shape(1, 8, 8));
        assert!(grey.iter().all(|&v| v.abs_diff(69) <= 3), "{grey:?}");
    }

    #[test]
    fn colour_png_read_as_grey_takes_the_same_luma_as_a_jpeg_and_pil() {
        let dir = TempDir::new().unwrap();
        for (i, colour) in [[200, 10, 30], [10, 200, 30], [30, 10, 200], [255, 255, 255]]
            .into_iter()
            .enumerate()
        {
            let image = RgbImage::from_pixel(16, 16, Rgb(colour));
            let png = dir.path().join(format!("{i}.png"));
            image.save(&png).unwrap();
            let jpeg = write_jpeg(dir.path(), &format!("{i}.jpg"), &image);
            let [r, g, b] = colour.map(u32::from);
            let pil = ((r * 299 + g * 587 + b * 114) as f64 / 1000.0).round() as u8;
            let from_png = read(&png, shape(1, 16, 16));
            let from_jpeg = read(&jpeg, shape(1, 16, 16));
            assert!(
                from_png.iter().all(|&v| v == pil),
                "{colour:?}: {from_png:?}"
            );
            assert!(
                from_jpeg.iter().all(|&v| v.abs_diff(pil) <= 3),
                "{colour:?}: {from_jpeg:?}"
            );
        }
    }

    /// PIL's pixels for each 16-bit PNG (Pillow 13.0, `convert("RGB")` and
    /// `convert("L")`, channels-first here): grey clipped at 255, the rest by high byte.
    #[test]
    fn a_16_bit_png_reads_as_pil_reads_it() {
        use image::ImageBuffer;
        let dir = TempDir::new().unwrap();
        let save = |name: &str, image: Option<DynamicImage>| {
            let path = dir.path().join(name);
            image.expect("whole pixels").save(&path).unwrap();
            path
        };
        let values = [0u16, 255, 256, 0x80FF, 0x8100, 65535].to_vec();
        let rgba_values = [&values[..], &[1000, 2000]].concat();
        fn buffer<P: image::Pixel<Subpixel = u16>>(
            width: u32,
            values: &[u16],
        ) -> Option<ImageBuffer<P, Vec<u16>>> {
            ImageBuffer::from_raw(width, 1, Vec::from(values))
        }
        let grey = save(
            "grey.png",
            buffer(6, &values).map(DynamicImage::ImageLuma16),
        );
        let grey_alpha = save("ga.png", buffer(3, &values).map(DynamicImage::ImageLumaA16));
        let rgb = save("rgb.png", buffer(2, &values).map(DynamicImage::ImageRgb16));
        let rgba = save(
            "rgba.png",
            buffer(2, &rgba_values).map(DynamicImage::ImageRgba16),
        );
        let cases: [(&Path, usize, usize, &[u8]); 8] = [
            (&grey, 6, 1, &[0, 255, 255, 255, 255, 255]),
            (&grey, 6, 3, &[0, 255, 255, 255, 255, 255].repeat(3)),
            (&grey_alpha, 3, 1, &[0, 1, 129]),
            (&grey_alpha, 3, 3, &[0, 1, 129].repeat(3)),
            (&rgb, 2, 3, &[0, 128, 0, 129, 1, 255]),
            (&rgb, 2, 1, &[0, 143]),
            (&rgba, 2, 3, &[0, 129, 0, 255, 1, 3]),
            (&rgba, 2, 1, &[0, 189]),
        ];
        for (path, width, channels, pil) in cases {
            let ours = read(path, shape(channels, 1, width));
            assert_eq!(ours, pil, "{} in {channels} channels", path.display());
        }
    }

    #[test]
    fn a_file_that_is_no_image_is_named() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("fake.jpg");
        let mut bytes = jpeg_bytes(picture(40, 40));
        bytes.truncate(bytes.len() / 3);
        std::fs::write(&path, bytes).unwrap();
        let mut pixels = vec![0; 3 * 8 * 8];
        let msg = read_sample(&path, shape(3, 8, 8), &DatasetLimits::DEFAULT, &mut pixels)
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with(&path.display().to_string()), "{msg}");
        assert!(msg.contains("cannot decode"), "{msg}");
    }

    #[test]
    fn a_header_over_image_pixels_is_refused_before_the_decoder_sizes_a_buffer() {
        let mut bomb = jpeg_bytes(picture(8, 8));
        let sof = bomb.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        bomb[sof + 5..sof + 9].copy_from_slice(&[0x40, 0, 0x40, 0]);
        let mut png = Vec::new();
        DynamicImage::ImageRgb8(picture(30, 20))
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        let limits = DatasetLimits {
            image_pixels: 500,
            ..DatasetLimits::DEFAULT
        };
        let mut pixels = vec![0; 3 * 8 * 8];
        for (bytes, size) in [(&bomb, "16384×16384"), (&png, "30×20")] {
            let problem = decode_sample(bytes, shape(3, 8, 8), &limits, &mut pixels).unwrap_err();
            assert!(
                problem.contains(&format!("the image's pixels ({size})"))
                    && problem.contains("dataset.limits.image_pixels"),
                "{problem}"
            );
        }
        let kept = SCRATCH.with_borrow(|scratch| scratch.decoded.capacity());
        assert!(kept < 1 << 20, "the scratch holds {kept} bytes");
    }

    /// `image` encoded by libjpeg-turbo, `configure`d (arithmetic coding, lossless).
    fn turbo_jpeg(
        image: &[u8],
        width: usize,
        format: turbojpeg::PixelFormat,
        configure: impl FnOnce(&mut turbojpeg::Compressor),
    ) -> Vec<u8> {
        let mut compressor = turbojpeg::Compressor::new().unwrap();
        compressor.set_quality(90).unwrap();
        configure(&mut compressor);
        let depth = format.size();
        let image = turbojpeg::Image {
            pixels: image,
            width,
            pitch: width * depth,
            height: image.len() / (width * depth),
            format,
        };
        compressor.compress_to_vec(image).unwrap()
    }

    /// libjpeg-turbo's own decode of `jpeg` to RGB, channels-first, or as PIL's luma of
    /// it for 1 channel.
    fn turbo_decoded(jpeg: &[u8], channels: usize) -> Vec<u8> {
        let rgb = turbojpeg::decompress(jpeg, turbojpeg::PixelFormat::RGB).unwrap();
        if channels == 1 {
            return rgb.pixels.chunks_exact(3).map(rec601_luma).collect();
        }
        let mut planes = vec![0; rgb.pixels.len()];
        to_channels_first(&rgb.pixels, &mut planes);
        planes
    }

    fn zune_refuses(jpeg: &[u8]) -> bool {
        JpegDecoder::new(ZCursor::new(jpeg)).decode().is_err()
    }

    fn decoded(jpeg: &[u8], shape: SampleShape) -> std::result::Result<Vec<u8>, String> {
        let mut pixels = vec![0; shape.sample_bytes()];
        decode_sample(jpeg, shape, &DatasetLimits::DEFAULT, &mut pixels).map(|()| pixels)
    }

    #[test]
    fn an_arithmetic_coded_jpeg_decodes_to_the_pixels_of_its_huffman_coded_twin() {
        use turbojpeg::PixelFormat;
        let rgb = picture(40, 24).into_raw();
        let huffman = turbo_jpeg(&rgb, 40, PixelFormat::RGB, |_| {});
        let arithmetic = turbo_jpeg(&rgb, 40, PixelFormat::RGB, |c| {
            c.set_arithmetic(true).unwrap();
        });
        assert!(zune_refuses(&arithmetic) && !zune_refuses(&huffman));
        // Arithmetic coding only packs the same coefficients differently.
        for channels in [3, 1] {
            assert_eq!(
                decoded(&arithmetic, shape(channels, 24, 40)).unwrap(),
                turbo_decoded(&huffman, channels),
                "{channels} channels"
            );
        }
    }

    #[test]
    fn a_lossless_jpeg_decodes_to_exactly_its_pixels_in_grey_or_colour() {
        use turbojpeg::PixelFormat;
        let rgb = picture(40, 24).into_raw();
        let lossless = turbo_jpeg(&rgb, 40, PixelFormat::RGB, |c| {
            c.set_lossless(true).unwrap();
        });
        assert!(zune_refuses(&lossless));
        let mut planes = vec![0; rgb.len()];
        to_channels_first(&rgb, &mut planes);
        assert_eq!(decoded(&lossless, shape(3, 24, 40)).unwrap(), planes);
        let luma: Vec<u8> = rgb.chunks_exact(3).map(rec601_luma).collect();
        assert_eq!(decoded(&lossless, shape(1, 24, 40)).unwrap(), luma);
        let grey: Vec<u8> = (0..40 * 24).map(|i| (i * 7 % 251) as u8).collect();
        let lossless_grey = turbo_jpeg(&grey, 40, PixelFormat::GRAY, |c| {
            c.set_lossless(true).unwrap();
        });
        assert_eq!(
            decoded(&lossless_grey, shape(3, 24, 40)).unwrap(),
            [grey.as_slice(), &grey, &grey].concat()
        );
    }

    #[test]
    fn a_truncated_arithmetic_jpeg_is_refused_as_pil_refuses_it() {
        let rgb = picture(64, 48).into_raw();
        let arithmetic = turbo_jpeg(&rgb, 64, turbojpeg::PixelFormat::RGB, |c| {
            c.set_arithmetic(true).unwrap();
        });
        let problem = decoded(&arithmetic[..arithmetic.len() / 2], shape(3, 48, 64)).unwrap_err();
        assert_eq!(problem, "cannot decode: Premature end of JPEG file");
    }

    #[test]
    fn a_12_bit_jpeg_is_refused_in_the_words_of_the_header_check() {
        let mut twelve_bit = turbo_jpeg(
            &picture(8, 8).into_raw(),
            8,
            turbojpeg::PixelFormat::RGB,
            |_| {},
        );
        let sof = twelve_bit
            .windows(2)
            .position(|w| w == [0xFF, 0xC0])
            .unwrap();
        // SOF1 (extended sequential), the frame a 12-bit JPEG has.
        twelve_bit[sof + 1] = 0xC1;
        twelve_bit[sof + 4] = 12;
        let problem = decoded(&twelve_bit, shape(3, 8, 8)).unwrap_err();
        assert!(
            problem.starts_with("a 12-bit JPEG: not supported"),
            "{problem}"
        );
    }

    #[test]
    fn an_arithmetic_header_over_image_pixels_is_refused_before_the_fallback_decodes() {
        let mut bomb = turbo_jpeg(
            &picture(8, 8).into_raw(),
            8,
            turbojpeg::PixelFormat::RGB,
            |c| {
                c.set_arithmetic(true).unwrap();
            },
        );
        let sof = bomb.windows(2).position(|w| w == [0xFF, 0xC9]).unwrap();
        bomb[sof + 5..sof + 9].copy_from_slice(&[0x40, 0, 0x40, 0]);
        let limits = DatasetLimits {
            image_pixels: 500,
            ..DatasetLimits::DEFAULT
        };
        let mut pixels = vec![0; 3 * 8 * 8];
        let problem = SCRATCH.with_borrow_mut(|scratch| {
            scratch.decoded = Vec::new();
            scratch
                .jpeg_fallback
                .decode(&bomb, 3, &limits, &mut scratch.decoded)
        });
        assert!(
            problem.is_err_and(|p| p.contains("the image's pixels (16384×16384)")),
            "the fallback decoded it"
        );
        let kept = SCRATCH.with_borrow(|scratch| scratch.decoded.capacity());
        assert_eq!(kept, 0, "the fallback sized a buffer");
        let problem = decode_sample(&bomb, shape(3, 8, 8), &limits, &mut pixels).unwrap_err();
        assert!(problem.contains("dataset.limits.image_pixels"), "{problem}");
    }
}
