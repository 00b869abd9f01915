//! The check an image folder's files get when it is opened: each file must hold the
//! header of an image, in a format torchvision's `ImageFolder` reads (PNG, JPEG, BMP,
//! PPM/PGM, TIFF, WebP), that gives the image a size within the dataset's limits (its
//! pixels under `image_pixels`, the file under `file_bytes`). Only the header is read (the first
//! bytes of a PNG; a JPEG's markers up to its frame header, skipping the segments
//! before it; the other formats' headers through the `image` crate's decoders), on
//! several threads at once, with the count checked reported as it goes,
//! so a folder of a million files opens in seconds and a corrupt file is still named
//! before a run starts. A tar shard's image members get the same check. A good header
//! also says how PIL will cut its samples to 8 bits ([`PilConversion`]): image folders and
//! shards warn of 16-bit grey images, which PIL clips.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use super::DatasetLimits;
use crate::cancel::CancelToken;
use crate::error::{Error, Result};

/// Files one thread takes at a time: enough to make the shared counter cheap, few
/// enough that the threads end together.
const CHUNK: usize = 64;

/// How often the progress callback hears the count.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// How PIL cuts an image's samples to the 8 bits torchvision's loader converts to, as far
/// as its header tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PilConversion {
    /// The image's levels are kept: 8-bit samples as they are, 16-bit colour (and grey
    /// with alpha) by each value's high byte.
    #[default]
    KeepsLevels,
    /// 16-bit grey, PIL's mode `I;16`: its `convert("L")` and `convert("RGB")` clip every
    /// value above 255 to 255.
    ClipsGrey16,
}

/// The warning for a dataset of which `count` of `total` images are ones PIL clips
/// ([`PilConversion::ClipsGrey16`]), `first` naming the first of them.
pub fn clipped_grey_warning(count: usize, total: usize, first: &str) -> String {
    format!(
        "{count} of {total} images are 16-bit grey (the first: {first}): PIL opens them as \
         mode I;16 and clips every value above 255 when torchvision converts them, so both \
         runtimes here read them as PIL does, mostly white; a job that trains on them loads \
         them with a loader of its own (a Python Dataset, `kind: python`)"
    )
}

/// Checks every file in `paths` on `threads` threads, calling `progress(checked)` on the
/// calling thread as the count grows and once at the end; returns the indices, in order,
/// of the files PIL clips ([`PilConversion::ClipsGrey16`]). Fails with the error of the
/// first bad file in `paths` order among those found; once `cancel` is cancelled, the
/// threads stop after their current chunk and the check is `Cancelled`.
pub fn check_all(
    paths: &[PathBuf],
    threads: usize,
    limits: &DatasetLimits,
    progress: &mut dyn FnMut(usize),
    cancel: &CancelToken,
) -> Result<Vec<usize>> {
    let next = AtomicUsize::new(0);
    let checked = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<(usize, Error)>> = Mutex::new(None);
    let clipped: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    let work = || {
        while !failed.load(Ordering::Relaxed) && !cancel.is_cancelled() {
            let start = next.fetch_add(CHUNK, Ordering::Relaxed);
            if start >= paths.len() {
                return;
            }
            let end = (start + CHUNK).min(paths.len());
            for (index, path) in paths.iter().enumerate().take(end).skip(start) {
                match check(path, limits) {
                    Ok(PilConversion::KeepsLevels) => {}
                    Ok(PilConversion::ClipsGrey16) => {
                        // A poisoned lock only means another checker panicked.
                        clipped
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(index);
                    }
                    Err(error) => {
                        failed.store(true, Ordering::Relaxed);
                        // A poisoned lock only means another checker panicked; the slot is
                        // still a plain Option.
                        let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                        if slot.as_ref().is_none_or(|(at, _)| index < *at) {
                            *slot = Some((index, error));
                        }
                        return;
                    }
                }
            }
            checked.fetch_add(end - start, Ordering::Relaxed);
        }
    };
    let caller = std::thread::current();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.max(1))
            .map(|_| {
                scope.spawn(|| {
                    work();
                    caller.unpark();
                })
            })
            .collect();
        while !workers.iter().all(|w| w.is_finished()) {
            progress(checked.load(Ordering::Relaxed));
            std::thread::park_timeout(PROGRESS_EVERY);
        }
    });
    cancel.check()?;
    if let Some((_, error)) = first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(error);
    }
    progress(paths.len());
    let mut clipped = clipped.into_inner().unwrap_or_else(|p| p.into_inner());
    clipped.sort_unstable();
    Ok(clipped)
}

/// Fails unless the file at `path` is within `limits.file_bytes` and has the header of
/// a non-empty image within `limits.image_pixels`, in a format an image folder reads
/// (see [`check_file_header`]), and says how PIL converts it.
pub fn check(path: &Path, limits: &DatasetLimits) -> Result<PilConversion> {
    let cannot_read = |err: io::Error| Error::file_caused(path, format!("cannot read: {err}"), err);
    let file = File::open(path).map_err(cannot_read)?;
    let bytes = file.metadata().map_err(cannot_read)?.len();
    DatasetLimits::check(
        path,
        "the file's size in bytes",
        bytes,
        "file_bytes",
        limits.file_bytes,
    )?;
    check_file_header(&mut BufReader::with_capacity(4096, file), limits)
        .map_err(|bad| bad.at(path, None))
}

/// [`check_reader`] for a PNG or JPEG image file (or a shard's member, in memory); the
/// header of the other formats torchvision's `ImageFolder` reads (BMP, PPM/PGM, TIFF,
/// WebP) through the `image` crate's decoder for it, which may seek (a TIFF's first
/// directory can lie anywhere in the file).
pub fn check_file_header(
    reader: &mut (impl BufRead + Seek),
    limits: &DatasetLimits,
) -> std::result::Result<PilConversion, BadHeader> {
    // The format from the buffered first bytes, which stay unread for the check.
    let magic = reader.fill_buf().map_err(|err| BadHeader {
        problem: format!("not a readable image: {err}"),
        source: Some(err),
    })?;
    let bad = |problem: String| BadHeader {
        problem,
        source: None,
    };
    match image::guess_format(magic) {
        Ok(image::ImageFormat::Png | image::ImageFormat::Jpeg) => check_reader(reader, limits),
        // The `image` crate reads the Netpbm family's PAM too; PIL reads none but P1–P6.
        Ok(image::ImageFormat::Pnm) if magic.starts_with(b"P7") => Err(bad(
            "a PAM file (P7 header): not supported (PIL, and so torchvision, reads only the \
             P1-P6 PPM/PGM/PBM headers; save it as binary PPM, P6, or PGM, P5)"
                .to_owned(),
        )),
        Ok(format) => match image::ImageReader::with_format(reader, format).into_decoder() {
            Ok(decoder) => {
                let (width, height) = image::ImageDecoder::dimensions(&decoder);
                let conversion = match image::ImageDecoder::color_type(&decoder) {
                    image::ColorType::L16 => PilConversion::ClipsGrey16,
                    _ => PilConversion::KeepsLevels,
                };
                if width == 0 || height == 0 {
                    return Err(bad("the image has no pixels".to_owned()));
                }
                check_pixels(width, height, limits).map_err(bad)?;
                Ok(conversion)
            }
            Err(err) => Err(bad(format!("not a readable image: {err}"))),
        },
        Err(_) => Err(bad(
            "not a readable image: no PNG, JPEG, BMP, PPM/PGM, TIFF or WebP header".to_owned(),
        )),
    }
}

/// What is wrong with an image's header, before it is told which file or member it is.
#[derive(Debug)]
pub struct BadHeader {
    problem: String,
    source: Option<io::Error>,
}

impl BadHeader {
    /// The problem alone, for a caller that says itself which file or member it is.
    pub(crate) fn into_problem(self) -> String {
        self.problem
    }

    /// The error for the file at `path` (or its `member`, in an archive).
    pub fn at(self, path: &Path, member: Option<&str>) -> Error {
        let problem = match member {
            Some(member) => format!("{member}: {}", self.problem),
            None => self.problem,
        };
        match self.source {
            Some(source) => Error::file_caused(path, problem, source),
            None => Error::file(path, problem),
        }
    }
}

/// Fails unless `reader` starts with a PNG or JPEG header of a non-empty image of at
/// most `limits.image_pixels` pixels; reads only as far as the header (buffer `reader`:
/// JPEG markers are read byte by byte).
pub fn check_reader(
    reader: &mut impl Read,
    limits: &DatasetLimits,
) -> std::result::Result<PilConversion, BadHeader> {
    let bad = |problem: String| BadHeader {
        problem,
        source: None,
    };
    match image_size(reader) {
        Ok(Header::Size(width, height, conversion)) if width > 0 && height > 0 => {
            check_pixels(width, height, limits).map_err(bad)?;
            Ok(conversion)
        }
        Ok(Header::Size(..)) => Err(bad("the image has no pixels".to_owned())),
        Ok(Header::JpegPrecision(bits)) => Err(bad(format!(
            "a {bits}-bit JPEG: not supported (only 8-bit JPEGs are read, by our engine and \
             by PIL alike)"
        ))),
        Ok(Header::Unknown) => Err(bad("not a readable image: no PNG or JPEG header".to_owned())),
        Err(err) => Err(BadHeader {
            problem: format!("not a readable image: {err}"),
            source: Some(err),
        }),
    }
}

/// Fails with the problem when `width` × `height` is over `limits.image_pixels`: the
/// check every image gets before memory is sized from its header.
pub fn check_pixels(
    width: u32,
    height: u32,
    limits: &DatasetLimits,
) -> std::result::Result<(), String> {
    DatasetLimits::check_problem(
        &format!("the image's pixels ({width}×{height})"),
        u64::from(width) * u64::from(height),
        "image_pixels",
        limits.image_pixels,
    )
}

/// What an image file's header says.
#[derive(Debug, PartialEq, Eq)]
enum Header {
    /// A PNG, or a JPEG of 8-bit samples, of this width and height, and how PIL converts
    /// its samples.
    Size(u32, u32, PilConversion),
    /// A JPEG whose samples have this many bits (12, or a lossless JPEG's 2 to 16):
    /// PIL reads none but 8-bit ones, and neither does our engine.
    JpegPrecision(u8),
    /// Neither a PNG nor a JPEG with a frame header.
    Unknown,
}

/// Width and height from a PNG or JPEG header.
fn image_size(reader: &mut impl Read) -> io::Result<Header> {
    let mut magic = [0u8; 8];
    let read = read_up_to(reader, &mut magic)?;
    if magic[..read].starts_with(b"\x89PNG\r\n\x1a\n") {
        png_size(reader)
    } else if magic[..read].starts_with(&[0xFF, 0xD8]) {
        jpeg_size(reader, &magic[2..read])
    } else {
        Ok(Header::Unknown)
    }
}

/// The IHDR chunk that must follow the PNG signature: its length and type, then the
/// width, the height, the bit depth and the colour type (0 for grey).
fn png_size(reader: &mut impl Read) -> io::Result<Header> {
    let mut chunk = [0u8; 18];
    reader.read_exact(&mut chunk)?;
    if &chunk[4..8] != b"IHDR" {
        return Ok(Header::Unknown);
    }
    let word =
        |at: usize| u32::from_be_bytes([chunk[at], chunk[at + 1], chunk[at + 2], chunk[at + 3]]);
    let conversion = match (chunk[16], chunk[17]) {
        (16, 0) => PilConversion::ClipsGrey16,
        _ => PilConversion::KeepsLevels,
    };
    Ok(Header::Size(word(8), word(12), conversion))
}

/// Walks a JPEG's markers (after SOI; `already` holds the bytes read past it) to the
/// frame header (SOFn), which holds the sample precision and the size.
fn jpeg_size(reader: &mut impl Read, already: &[u8]) -> io::Result<Header> {
    let mut reader = already.chain(reader);
    loop {
        if byte(&mut reader)? != 0xFF {
            return Ok(Header::Unknown);
        }
        let mut marker = byte(&mut reader)?;
        while marker == 0xFF {
            marker = byte(&mut reader)?;
        }
        match marker {
            // Markers without a segment.
            0x01 | 0xD0..=0xD8 => continue,
            // Entropy-coded data or the end before any frame header.
            0xD9 | 0xDA => return Ok(Header::Unknown),
            // SOF0-SOF15: baseline, extended, progressive, lossless, each Huffman or
            // arithmetic coded (DHT, JPG and DAC share the range but are not frames).
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                let mut header = [0u8; 7];
                reader.read_exact(&mut header)?;
                let precision = header[2];
                if precision != 8 {
                    return Ok(Header::JpegPrecision(precision));
                }
                let height = u16::from_be_bytes([header[3], header[4]]);
                let width = u16::from_be_bytes([header[5], header[6]]);
                let (width, height) = (u32::from(width), u32::from(height));
                return Ok(Header::Size(width, height, PilConversion::KeepsLevels));
            }
            _ => {
                let mut length = [0u8; 2];
                reader.read_exact(&mut length)?;
                let Some(rest) = u16::from_be_bytes(length).checked_sub(2) else {
                    return Ok(Header::Unknown);
                };
                let skipped = io::copy(&mut (&mut reader).take(u64::from(rest)), &mut io::sink())?;
                if skipped < u64::from(rest) {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
            }
        }
    }
}

fn byte(reader: &mut impl Read) -> io::Result<u8> {
    let mut one = [0u8; 1];
    reader.read_exact(&mut one)?;
    Ok(one[0])
}

fn read_up_to(reader: &mut impl Read, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use crate::error::assert_mentions;
    use image::{Rgb, RgbImage};
    use tempfile::TempDir;

    use super::*;

    fn jpeg(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = Vec::new();
        image::codecs::jpeg::JpegEncoder::new(&mut bytes)
            .encode_image(&RgbImage::from_pixel(width, height, Rgb([9, 99, 199])))
            .unwrap();
        bytes
    }

    fn size_of(bytes: &[u8]) -> io::Result<Header> {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("image");
        std::fs::write(&path, bytes).unwrap();
        image_size(&mut BufReader::with_capacity(
            4096,
            File::open(&path).unwrap(),
        ))
    }

    #[test]
    fn jpeg_size_is_found_past_segments_larger_than_the_buffer() {
        let plain = jpeg(37, 21);
        assert_eq!(
            size_of(&plain).unwrap(),
            Header::Size(37, 21, PilConversion::KeepsLevels)
        );
        // An APP1 segment of 20,000 bytes (an EXIF block with a thumbnail) after SOI.
        let mut with_exif = plain[..2].to_vec();
        with_exif.extend([0xFF, 0xE1]);
        with_exif.extend(20_000u16.to_be_bytes());
        with_exif.extend(std::iter::repeat_n(0xAB, 19_998));
        with_exif.extend(&plain[2..]);
        assert_eq!(
            size_of(&with_exif).unwrap(),
            Header::Size(37, 21, PilConversion::KeepsLevels)
        );
    }

    #[test]
    fn png_size_comes_from_ihdr() {
        let mut bytes = std::io::Cursor::new(Vec::new());
        RgbImage::new(5, 3)
            .write_to(&mut bytes, image::ImageFormat::Png)
            .unwrap();
        assert_eq!(
            size_of(bytes.get_ref()).unwrap(),
            Header::Size(5, 3, PilConversion::KeepsLevels)
        );
    }

    #[test]
    fn a_pam_file_pil_cannot_read_is_refused_and_a_binary_ppm_is_not() {
        let limits = DatasetLimits::default();
        let check = |bytes: &[u8]| check_file_header(&mut io::Cursor::new(bytes), &limits);
        let pam = b"P7\nWIDTH 2\nHEIGHT 1\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n\x01\x02\x03\x04\x05\x06";
        let problem = check(pam).unwrap_err().into_problem();
        assert!(problem.starts_with("a PAM file (P7 header)"), "{problem}");
        let ppm = b"P6\n2 1\n255\n\x01\x02\x03\x04\x05\x06";
        assert!(check(ppm).is_ok());
    }

    #[test]
    fn truncated_and_foreign_headers_are_refused() {
        let plain = jpeg(8, 8);
        let sof = plain.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        assert!(
            size_of(&plain[..sof + 4]).is_err(),
            "cut inside the frame header"
        );
        assert_eq!(size_of(b"GIF89a....").unwrap(), Header::Unknown);
        assert_eq!(
            size_of(&[0xFF, 0xD8, 0xFF, 0xDA, 0, 2]).unwrap(),
            Header::Unknown
        );
    }

    /// 300 good files, two bad ones; `bad` are their positions.
    fn folder(bad: [usize; 2]) -> (TempDir, Vec<PathBuf>) {
        let dir = TempDir::new().unwrap();
        let good = jpeg(4, 4);
        let paths: Vec<PathBuf> = (0..300)
            .map(|i| {
                let path = dir.path().join(format!("{i:03}.jpg"));
                let bytes: &[u8] = if bad.contains(&i) {
                    b"not an image"
                } else {
                    &good
                };
                std::fs::write(&path, bytes).unwrap();
                path
            })
            .collect();
        (dir, paths)
    }

    #[test]
    fn parallel_check_reports_progress_up_to_the_total() {
        let (_dir, paths) = folder([usize::MAX; 2]);
        let mut seen = Vec::new();
        check_all(
            &paths,
            3,
            &DatasetLimits::DEFAULT,
            &mut |checked| seen.push(checked),
            &CancelToken::new(),
        )
        .unwrap();
        assert_eq!(seen.last(), Some(&300), "{seen:?}");
        assert!(seen.is_sorted(), "{seen:?}");
    }

    #[test]
    fn a_cancelled_check_stops_and_says_so() {
        let (_dir, paths) = folder([usize::MAX; 2]);
        let cancel = CancelToken::new();
        cancel.cancel();
        let mut seen = Vec::new();
        let checked = check_all(
            &paths,
            3,
            &DatasetLimits::DEFAULT,
            &mut |checked| seen.push(checked),
            &cancel,
        );
        assert!(matches!(checked, Err(Error::Cancelled)), "{checked:?}");
        assert!(seen.iter().all(|&checked| checked < 300), "{seen:?}");
    }

    #[test]
    fn parallel_check_names_a_bad_file() {
        let (_dir, paths) = folder([250, 270]);
        let named = |threads| {
            check_all(
                &paths,
                threads,
                &DatasetLimits::DEFAULT,
                &mut |_| {},
                &CancelToken::new(),
            )
            .unwrap_err()
            .to_string()
        };
        let one_thread = named(1);
        assert!(
            one_thread.starts_with(&paths[250].display().to_string()),
            "{one_thread}"
        );
        assert!(one_thread.contains("not a readable image"), "{one_thread}");
        // Several threads stop at whichever bad file one of them meets first.
        let four = named(4);
        assert!(
            [250, 270]
                .iter()
                .any(|&i| four.starts_with(&paths[i].display().to_string())),
            "{four}"
        );
    }

    #[test]
    fn a_header_claiming_more_pixels_than_the_limit_is_refused_with_the_field() {
        let mut bomb = jpeg(8, 8);
        let sof = bomb.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        bomb[sof + 5..sof + 9].copy_from_slice(&[0x40, 0, 0x40, 0]);
        let problem = match check_reader(&mut &bomb[..], &DatasetLimits::DEFAULT) {
            Err(bad) => bad.problem,
            Ok(_) => panic!("a 16384×16384 header passed"),
        };
        assert_eq!(
            problem,
            "the image's pixels (16384×16384) is 268435456, over the limit of 89478485 \
             (raise it with dataset.limits.image_pixels; see docs/limits.md)"
        );
        let raised = DatasetLimits {
            image_pixels: 1 << 28,
            ..DatasetLimits::DEFAULT
        };
        assert!(check_reader(&mut &bomb[..], &raised).is_ok());
    }

    #[test]
    fn a_jpeg_of_other_than_8_bit_samples_is_refused_by_its_precision() {
        let mut twelve_bit = jpeg(8, 8);
        let sof = twelve_bit
            .windows(2)
            .position(|w| w == [0xFF, 0xC0])
            .unwrap();
        twelve_bit[sof + 4] = 12;
        assert_eq!(size_of(&twelve_bit).unwrap(), Header::JpegPrecision(12));
        let problem = match check_reader(&mut &twelve_bit[..], &DatasetLimits::DEFAULT) {
            Err(bad) => bad.problem,
            Ok(_) => panic!("a 12-bit JPEG passed"),
        };
        assert!(
            problem.starts_with("a 12-bit JPEG: not supported"),
            "{problem}"
        );
    }

    #[test]
    fn a_file_over_file_bytes_is_refused_by_its_size() {
        let (_dir, paths) = folder([usize::MAX; 2]);
        let small = DatasetLimits {
            file_bytes: 10,
            ..DatasetLimits::DEFAULT
        };
        let msg = check(&paths[0], &small).unwrap_err().to_string();
        assert_mentions(
            &msg,
            &["the file's size in bytes is", "dataset.limits.file_bytes"],
        );
    }
}
