//! The image-folder reader, laid out as torchvision's `ImageFolder`: one sub-folder per
//! class, classes sorted by name and numbered by position, image files of any size and
//! colour type inside, of the formats torchvision reads there ([`IMAGE_EXTENSIONS`]: PNG,
//! JPEG, BMP, PPM/PGM, TIFF, WebP) (searched recursively, following links; hidden files
//! and folders skipped, and a folder already visited, by device and inode, skipped with a
//! warning, so a link back up the tree is walked once). Every file's header is checked at
//! open, on several threads with progress reported
//! ([`image_header`](super::image_header)), so a corrupt file is reported before a run
//! starts, and one over the dataset's limits is refused; `read` decodes, converts to 1 or
//! 3 channels, resizes to the requested size and writes channels-first bytes
//! ([`image_decode`](super::image_decode)). A folder left at the default shape (1 × 28 ×
//! 28) whose first image is of another is warned of with that image's own
//! ([`ImageShape`], which `loaderbench shards` also reads its suggestion from), since
//! photos would otherwise be measured grey and shrunk in silence.

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{Dataset, DatasetLimits, OpenProgress, PixelKind, SampleShape, TimedRead};
use super::{files, image_decode, image_header};
use crate::cancel::CancelToken;
use crate::error::{Error, Result};

/// The image files of a class folder tree, each with its class index.
pub struct ImageFolder {
    root: PathBuf,
    samples: Vec<(PathBuf, i64)>,
    classes: usize,
    shape: SampleShape,
    limits: DatasetLimits,
    warnings: Vec<String>,
}

impl ImageFolder {
    /// Lists and checks the images under `root` within `limits`, to be read as
    /// `channels` × `size`, telling `progress` how many files are checked so far, until
    /// `cancel`.
    pub fn open(
        root: &Path,
        channels: usize,
        size: [usize; 2],
        limits: &DatasetLimits,
        progress: &mut dyn FnMut(OpenProgress),
        cancel: &CancelToken,
    ) -> Result<Self> {
        let shape = sample_shape(channels, size)?;
        let listed = list(root, limits, progress, cancel)?;
        let mut warnings = listed.warnings;
        if let Some((first, _)) = listed.samples.first() {
            let header = || ImageShape::of(std::io::BufReader::new(fs::File::open(first).ok()?));
            warnings.extend(default_shape_warning(
                &first.display().to_string(),
                channels,
                size,
                header,
            ));
        }
        Ok(ImageFolder {
            root: root.to_path_buf(),
            samples: listed.samples,
            classes: listed.classes,
            shape,
            limits: *limits,
            warnings,
        })
    }

    /// The folder as a spawned worker reopens it: from the listing the loader's own
    /// [`reopen_index`](Dataset::reopen_index) gave, without walking the folder and
    /// checking every header again (seconds for a large folder, in each worker's start,
    /// where a spawned DataLoader worker gets its dataset's list of files), and without
    /// a walk that could find other files than the run measures.
    pub fn from_index(
        root: &Path,
        channels: usize,
        size: [usize; 2],
        limits: &DatasetLimits,
        index: serde_json::Value,
    ) -> Result<Self> {
        let listed: ListedFolder = serde_json::from_value(index).map_err(|err| {
            Error::run(format!("the image folder's list sent to a worker: {err}"))
        })?;
        Ok(ImageFolder {
            root: root.to_path_buf(),
            samples: listed.samples,
            classes: listed.classes,
            shape: sample_shape(channels, size)?,
            limits: *limits,
            warnings: Vec::new(),
        })
    }
}

/// What a spawned worker is sent to reopen an image folder (see
/// [`ImageFolder::from_index`]).
#[derive(serde::Serialize, serde::Deserialize)]
struct ListedFolder {
    samples: Vec<(PathBuf, i64)>,
    classes: usize,
}

/// What an image folder holds: each image with its class index, in reading order, and
/// what the walk skipped that the user should hear of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageFolderFiles {
    pub samples: Vec<(PathBuf, i64)>,
    pub classes: usize,
    pub warnings: Vec<String>,
}

/// Lists the images under `root` as [`ImageFolder`] reads them, checking every header
/// within `limits` and telling `progress` how many files are checked so far; `cancel`
/// stops the check.
pub fn list(
    root: &Path,
    limits: &DatasetLimits,
    progress: &mut dyn FnMut(OpenProgress),
    cancel: &CancelToken,
) -> Result<ImageFolderFiles> {
    let classes = visible_entries(root)?
        .into_iter()
        .filter(|path| path.is_dir())
        .collect::<Vec<_>>();
    if classes.is_empty() {
        return Err(Error::file(root, "no class folders in this folder"));
    }
    let mut walk = Walk::default();
    walk.visit(root)?;
    let mut samples = Vec::new();
    for (class, folder) in classes.iter().enumerate() {
        let images = walk.images_under(folder)?;
        if images.is_empty() {
            return Err(Error::file(
                folder,
                format!(
                    "no images in this class folder (files ending in .{})",
                    IMAGE_EXTENSIONS.join(", .")
                ),
            ));
        }
        samples.extend(images.into_iter().map(|path| (path, class as i64)));
    }
    let paths: Vec<PathBuf> = samples.iter().map(|(path, _)| path.clone()).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut report = |checked| {
        progress(OpenProgress {
            checked,
            total: paths.len(),
        });
    };
    let clipped = image_header::check_all(&paths, threads, limits, &mut report, cancel)?;
    let mut warnings = walk.warnings;
    if let Some(&first) = clipped.first() {
        let first = paths[first].display().to_string();
        warnings.push(image_header::clipped_grey_warning(
            clipped.len(),
            paths.len(),
            &first,
        ));
    }
    Ok(ImageFolderFiles {
        samples,
        classes: classes.len(),
        warnings,
    })
}

impl Dataset for ImageFolder {
    fn len(&self) -> usize {
        self.samples.len()
    }

    fn shape(&self) -> SampleShape {
        self.shape
    }

    fn read(&self, index: usize, pixels: &mut [u8]) -> Result<i64> {
        Ok(self.read_timed(index, pixels)?.label)
    }

    fn read_timed(&self, index: usize, pixels: &mut [u8]) -> Result<TimedRead> {
        files::check_index(index, self.len())?;
        let (path, label) = &self.samples[index];
        let fetch = image_decode::read_sample(path, self.shape, &self.limits, pixels)?;
        Ok(TimedRead {
            label: *label,
            fetch,
            decompress: std::time::Duration::ZERO,
        })
    }

    fn describe(&self) -> String {
        let files = files::describe("image_folder", &self.root, self.len(), self.shape);
        format!("{files}, {}", crate::counted(self.classes, "class"))
    }

    fn files(&self) -> Vec<PathBuf> {
        self.samples.iter().map(|(path, _)| path.clone()).collect()
    }

    fn labelled_files(&self) -> Option<Vec<(PathBuf, i64)>> {
        Some(self.samples.clone())
    }

    /// The listing, where every path is UTF-8 (JSON holds no other); `None` otherwise,
    /// and the worker walks the folder itself.
    fn reopen_index(&self) -> Option<serde_json::Value> {
        let listed = ListedFolder {
            samples: self.samples.clone(),
            classes: self.classes,
        };
        serde_json::to_value(listed).ok()
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
}

/// The shape samples are converted to, if the preset's values make sense.
pub(super) fn sample_shape(channels: usize, [height, width]: [usize; 2]) -> Result<SampleShape> {
    if channels != 1 && channels != 3 {
        return Err(Error::value(format!(
            "dataset.channels: must be 1 (grey) or 3 (RGB), not {channels}"
        )));
    }
    let fits_u32 = |side: usize| side >= 1 && u32::try_from(side).is_ok();
    if !fits_u32(height) || !fits_u32(width) {
        return Err(Error::value(format!(
            "dataset.image_size: height and width must be at least 1, not [{height}, {width}]"
        )));
    }
    Ok(SampleShape {
        channels,
        height,
        width,
        pixel: PixelKind::U8,
    })
}

/// The entries of `folder` whose names do not start with a dot, sorted by name.
fn visible_entries(folder: &Path) -> Result<Vec<PathBuf>> {
    let entries = fs::read_dir(folder)
        .map_err(|err| Error::file_caused(folder, format!("cannot list: {err}"), err))?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|err| Error::file_caused(folder, format!("cannot list: {err}"), err))?;
        if !entry.file_name().to_string_lossy().starts_with('.') {
            paths.push(entry.path());
        }
    }
    paths.sort();
    Ok(paths)
}

/// The folders a listing has entered, by device and inode, and the ones it skipped.
#[derive(Default)]
struct Walk {
    visited: HashSet<(u64, u64)>,
    warnings: Vec<String>,
}

impl Walk {
    /// Marks `folder` visited; false (and a warning) when it was already.
    fn visit(&mut self, folder: &Path) -> Result<bool> {
        let meta = fs::metadata(folder)
            .map_err(|err| Error::file_caused(folder, format!("cannot list: {err}"), err))?;
        if self.visited.insert((meta.dev(), meta.ino())) {
            return Ok(true);
        }
        self.warnings.push(format!(
            "{}: skipped, a folder already listed (a link back into the tree)",
            folder.display()
        ));
        Ok(false)
    }

    /// The image files in `folder` and its sub-folders not visited yet, in sorted order.
    fn images_under(&mut self, folder: &Path) -> Result<Vec<PathBuf>> {
        let mut images = Vec::new();
        if !self.visit(folder)? {
            return Ok(images);
        }
        for path in visible_entries(folder)? {
            if path.is_dir() {
                images.extend(self.images_under(&path)?);
            } else if has_image_extension(&path) {
                images.push(path);
            }
        }
        Ok(images)
    }
}

/// The extensions of the files an image folder reads, in any case: torchvision's
/// `IMG_EXTENSIONS`, so that a folder holds the same samples for our engine as for
/// torchvision's `ImageFolder`.
pub const IMAGE_EXTENSIONS: [&str; 9] = [
    "jpg", "jpeg", "png", "ppm", "bmp", "pgm", "tif", "tiff", "webp",
];

fn has_image_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| IMAGE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()))
}

/// An image's size and whether it holds colour, as its header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImageShape {
    pub width: u32,
    pub height: u32,
    /// False for grey images (with or without alpha), true for colour and palettes.
    pub colour: bool,
}

impl ImageShape {
    /// The shape of the image `file` holds (its bytes, or the file itself: only the
    /// header is read), through the `image` crate's decoder for its format; `None` where
    /// that cannot read it (a dataset's check names the file when it is opened).
    pub fn of(file: impl std::io::BufRead + std::io::Seek) -> Option<ImageShape> {
        let reader = image::ImageReader::new(file).with_guessed_format().ok()?;
        let decoder = reader.into_decoder().ok()?;
        let (width, height) = image::ImageDecoder::dimensions(&decoder);
        let grey = matches!(
            image::ImageDecoder::color_type(&decoder),
            image::ColorType::L8
                | image::ColorType::La8
                | image::ColorType::L16
                | image::ColorType::La16
        );
        Some(ImageShape {
            width,
            height,
            colour: !grey,
        })
    }
}

/// The warning for a dataset read as `channels` × `size` where either is left at its
/// default ([`DatasetSpec`](super::DatasetSpec): 1 channel, 28 × 28, FashionMNIST's) and
/// its first image, `name`, is not read as it is because of that default, as its `header`
/// says: colour images read grey, or images resized to 28 × 28. A folder of photos left
/// at the defaults would be measured grey and shrunk, a different job from the one it
/// feeds. `None` where the preset gave a shape of its own (the header is then not read),
/// or the defaults it left fit the image, or its header cannot be read here.
pub fn default_shape_warning(
    name: &str,
    channels: usize,
    size: [usize; 2],
    header: impl FnOnce() -> Option<ImageShape>,
) -> Option<String> {
    let defaults = super::DatasetSpec::default();
    let channels_left = channels == defaults.channels;
    let size_left = size == defaults.image_size;
    if !channels_left && !size_left {
        return None;
    }
    let image = header()?;
    let [height, width] = size;
    let greyed = channels_left && image.colour;
    let resized = size_left && (image.height as usize, image.width as usize) != (height, width);
    let left = match (greyed, resized) {
        (false, false) => return None,
        (true, true) => "the defaults of dataset.channels and dataset.image_size",
        (true, false) => "the default of dataset.channels",
        (false, true) => "the default of dataset.image_size",
    };
    let (kind, own_channels) = if image.colour {
        ("colour", 3)
    } else {
        ("grey", 1)
    };
    Some(format!(
        "{name}: {}×{} {kind} images (the first's header) are read as {channels}×{height}×{width}, \
         {left}; give the channels and size your job's transforms make (channels: \
         {own_channels}, image_size: [{}, {}] keeps this one as it is)",
        image.width, image.height, image.height, image.width,
    ))
}

#[cfg(test)]
mod tests {
    use crate::error::assert_mentions;
    use image::{GrayImage, Luma, Rgb, RgbImage};
    use tempfile::TempDir;

    use super::*;

    /// The folder at `root` opened as `channels` × `size` within the default limits.
    fn open(root: &Path, channels: usize, size: [usize; 2]) -> Result<ImageFolder> {
        ImageFolder::open(
            root,
            channels,
            size,
            &DatasetLimits::DEFAULT,
            &mut |_| {},
            &CancelToken::new(),
        )
    }

    /// `cats/` holds a 4×3 red PNG, `dogs/` a 6×5 grey JPEG (upper-case extension), a
    /// hidden file and a text file; `.hidden/` is not a class.
    fn write_folder() -> TempDir {
        let dir = TempDir::new().unwrap();
        let cats = dir.path().join("cats");
        let dogs = dir.path().join("dogs");
        for folder in [&cats, &dogs, &dir.path().join(".hidden")] {
            fs::create_dir(folder).unwrap();
        }
        RgbImage::from_pixel(4, 3, Rgb([200, 10, 30]))
            .save(cats.join("a.png"))
            .unwrap();
        GrayImage::from_pixel(6, 5, Luma([120]))
            .save_with_format(dogs.join("b.JPG"), image::ImageFormat::Jpeg)
            .unwrap();
        fs::write(dogs.join(".c.png"), "hidden, not an image").unwrap();
        fs::write(dogs.join("notes.txt"), "not an image").unwrap();
        dir
    }

    fn open_error(root: &Path, channels: usize, size: [usize; 2]) -> String {
        match open(root, channels, size) {
            Ok(_) => panic!("{} opened but should not", root.display()),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn reads_classes_in_name_order_as_rgb_chw() {
        let dir = write_folder();
        let folder = open(dir.path(), 3, [2, 2]).unwrap();
        assert_eq!(folder.len(), 2);
        assert!(folder.describe().ends_with("(2 × 3×2×2 u8), 2 classes"));
        let mut pixels = [0u8; 12];
        assert_eq!(folder.read(0, &mut pixels).unwrap(), 0);
        assert_eq!(pixels[..4], [200; 4], "red plane first");
        assert_eq!(pixels[4..8], [10; 4]);
        assert_eq!(pixels[8..], [30; 4]);
        assert_eq!(folder.read(1, &mut pixels).unwrap(), 1);
        assert!(pixels.iter().all(|&v| v.abs_diff(120) <= 2), "{pixels:?}");
    }

    #[test]
    fn a_timed_read_reports_reading_the_file_as_its_fetch() {
        let dir = write_folder();
        let folder = open(dir.path(), 3, [2, 2]).unwrap();
        let mut timed = [0u8; 12];
        let read = folder.read_timed(1, &mut timed).unwrap();
        assert_eq!(read.label, 1);
        assert!(read.fetch > std::time::Duration::ZERO);
        let mut plain = [0u8; 12];
        folder.read(1, &mut plain).unwrap();
        assert_eq!(timed, plain);
    }

    #[test]
    fn converts_colour_to_grey_at_full_size() {
        let dir = write_folder();
        let folder = open(dir.path(), 1, [3, 4]).unwrap();
        let mut pixels = [0u8; 12];
        folder.read(0, &mut pixels).unwrap();
        // Rec. 601 luma of (200, 10, 30), as PIL's convert("L") computes it.
        assert!(pixels.iter().all(|&v| v == 69), "{pixels:?}");
    }

    #[test]
    fn corrupt_image_is_named_at_open() {
        let dir = write_folder();
        let bad = dir.path().join("dogs").join("broken.png");
        fs::write(&bad, "not a png").unwrap();
        let msg = open_error(dir.path(), 3, [2, 2]);
        assert!(msg.starts_with(&bad.display().to_string()), "{msg}");
        assert!(msg.contains("not a readable image"), "{msg}");
    }

    #[test]
    fn decode_failure_in_read_is_named() {
        let dir = write_folder();
        let folder = open(dir.path(), 1, [2, 2]).unwrap();
        let png = dir.path().join("cats").join("a.png");
        let mut bytes = fs::read(&png).unwrap();
        // Past the signature and the 25-byte IHDR chunk, into the pixel data.
        bytes.truncate(40);
        fs::write(&png, bytes).unwrap();
        let msg = folder.read(0, &mut [0; 4]).unwrap_err().to_string();
        assert!(msg.starts_with(&png.display().to_string()), "{msg}");
        assert!(msg.contains("cannot decode"), "{msg}");
    }

    #[test]
    fn class_folder_without_images_is_named() {
        let dir = write_folder();
        let empty = dir.path().join("emus");
        fs::create_dir(&empty).unwrap();
        let msg = open_error(dir.path(), 3, [2, 2]);
        assert!(msg.starts_with(&empty.display().to_string()), "{msg}");
        assert!(msg.contains("no images in this class folder (files ending in .jpg, .jpeg, .png, .ppm, .bmp, .pgm, .tif, .tiff, .webp)"), "{msg}");
    }

    /// Every format torchvision's `ImageFolder` reads, each file the same picture in a
    /// lossless coding, is listed and read to the PNG's pixels; a GIF (which torchvision
    /// does not read there) is left out, as it is there.
    #[test]
    fn every_format_torchvision_reads_is_listed_and_read_to_the_same_pixels() {
        use image::ImageFormat;
        let dir = TempDir::new().unwrap();
        let class = dir.path().join("all");
        fs::create_dir(&class).unwrap();
        let picture = RgbImage::from_fn(7, 5, |x, y| Rgb([x as u8 * 30, y as u8 * 40, 90]));
        let grey = image::DynamicImage::ImageRgb8(picture.clone()).into_luma8();
        for (name, format) in [
            ("a.png", ImageFormat::Png),
            ("b.bmp", ImageFormat::Bmp),
            ("d.TIF", ImageFormat::Tiff),
            ("e.tiff", ImageFormat::Tiff),
            ("f.webp", ImageFormat::WebP),
            ("g.gif", ImageFormat::Gif),
        ] {
            let path = class.join(name);
            if format == ImageFormat::Gif {
                fs::write(&path, b"GIF89a, not read").unwrap();
            } else {
                picture.save_with_format(&path, format).unwrap();
            }
        }
        // Binary P6 and P5, as files have them (the image crate writes PAM by default,
        // which PIL does not read).
        use image::codecs::pnm::{PnmEncoder, PnmSubtype, SampleEncoding};
        let netpbm = |image: image::DynamicImage, subtype, name: &str| {
            let mut bytes = Vec::new();
            let encoder = PnmEncoder::new(&mut bytes).with_subtype(subtype);
            image.write_with_encoder(encoder).unwrap();
            fs::write(class.join(name), bytes).unwrap();
        };
        let pixmap = PnmSubtype::Pixmap(SampleEncoding::Binary);
        netpbm(picture.clone().into(), pixmap, "c.ppm");
        let graymap = PnmSubtype::Graymap(SampleEncoding::Binary);
        netpbm(grey.clone().into(), graymap, "h.pgm");
        let folder = open(dir.path(), 3, [5, 7]).unwrap();
        let names: Vec<String> = folder
            .labelled_files()
            .unwrap()
            .iter()
            .map(|(path, _)| path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        let expected = [
            "a.png", "b.bmp", "c.ppm", "d.TIF", "e.tiff", "f.webp", "h.pgm",
        ];
        assert_eq!(names, expected);
        let read = |index| {
            let mut pixels = vec![0u8; 3 * 5 * 7];
            folder.read(index, &mut pixels).unwrap();
            pixels
        };
        let png = read(0);
        for (index, name) in expected.iter().enumerate().take(6) {
            assert_eq!(read(index), png, "{name}");
        }
        let grey_plane: Vec<u8> = grey.into_raw();
        assert_eq!(read(6), grey_plane.repeat(3), "h.pgm, grey as RGB");
    }

    #[test]
    fn a_file_of_another_format_that_is_broken_is_named_at_open() {
        let dir = write_folder();
        let broken = dir.path().join("cats/broken.webp");
        fs::write(&broken, b"RIFF\x10\x00\x00\x00WEBPVP8 junk").unwrap();
        let msg = open_error(dir.path(), 3, [2, 2]);
        assert_mentions(
            &msg,
            &[&broken.display().to_string(), "not a readable image"],
        );
    }

    /// A spawned worker reopens the folder from the loader's listing: the files the run
    /// measures, cut to its samples, even where the folder has changed since.
    #[test]
    fn a_spawned_worker_reopens_the_listing_not_the_folder() {
        let dir = write_folder();
        let spec = crate::dataset::DatasetSpec {
            kind: crate::dataset::DatasetKind::ImageFolder,
            path: Some(dir.path().to_path_buf()),
            channels: 3,
            image_size: [2, 2],
            ..crate::dataset::DatasetSpec::default()
        };
        let opened = crate::dataset::open(&spec, Some(1)).unwrap();
        let index = opened.reopen_index().expect("the listing, through the cut");
        RgbImage::from_pixel(2, 2, Rgb([1, 2, 3]))
            .save(dir.path().join("cats/0-new.png"))
            .unwrap();
        let whole = crate::dataset::reopen(&spec, None, Some(index.clone())).unwrap();
        assert_eq!(whole.labelled_files(), write_folder_listing(dir.path()));
        let cut = crate::dataset::reopen(&spec, Some(1), Some(index)).unwrap();
        assert_eq!(cut.len(), 1);
        let mut pixels = [0u8; 12];
        assert_eq!(cut.read(0, &mut pixels).unwrap(), 0);
        assert_eq!(
            pixels[..4],
            [200; 4],
            "cats/a.png, not the file added since"
        );
    }

    /// [`write_folder`]'s images, as listed.
    fn write_folder_listing(root: &Path) -> Option<Vec<(PathBuf, i64)>> {
        Some(vec![
            (root.join("cats/a.png"), 0),
            (root.join("dogs/b.JPG"), 1),
        ])
    }

    #[test]
    fn root_without_class_folders_is_named() {
        let dir = TempDir::new().unwrap();
        fs::write(dir.path().join("a.png"), "loose file").unwrap();
        let msg = open_error(dir.path(), 3, [2, 2]);
        assert!(msg.contains("no class folders"), "{msg}");
        let missing = dir.path().join("missing");
        let msg = open_error(&missing, 3, [2, 2]);
        assert_mentions(&msg, &["missing", "cannot list"]);
    }

    #[test]
    fn channels_and_size_are_checked() {
        let dir = write_folder();
        let msg = open_error(dir.path(), 4, [2, 2]);
        assert_mentions(&msg, &["dataset.channels", "not 4"]);
        let msg = open_error(dir.path(), 1, [0, 2]);
        assert!(msg.contains("dataset.image_size"), "{msg}");
    }

    /// 16-bit grey images, which PIL clips, are counted and the first named, once; 16-bit
    /// colour, which PIL scales, is not (a PNG and a TIFF of each).
    #[test]
    fn sixteen_bit_grey_images_are_warned_of_and_sixteen_bit_colour_is_not() {
        use image::{DynamicImage, ImageBuffer};
        let dir = TempDir::new().unwrap();
        let class = dir.path().join("depth");
        fs::create_dir(&class).unwrap();
        let values: Vec<u16> = (0..12).map(|i| i * 5000).collect();
        let grey = ImageBuffer::from_raw(4, 3, values.clone()).map(DynamicImage::ImageLuma16);
        let rgb = ImageBuffer::from_raw(2, 2, values).map(DynamicImage::ImageRgb16);
        let (grey, rgb) = (grey.unwrap(), rgb.unwrap());
        for name in ["a.png", "b.tif"] {
            rgb.save(class.join(name)).unwrap();
        }
        let folder = open(dir.path(), 3, [2, 2]).unwrap();
        assert_eq!(folder.warnings(), Vec::<String>::new());
        for name in ["c.png", "d.tiff"] {
            grey.save(class.join(name)).unwrap();
        }
        let folder = open(dir.path(), 3, [2, 2]).unwrap();
        let warnings = folder.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let first = class.join("c.png");
        assert!(
            warnings[0].starts_with(&format!(
                "2 of 4 images are 16-bit grey (the first: {}): PIL opens them as mode I;16",
                first.display()
            )),
            "{warnings:?}"
        );
    }

    /// A folder left at the default shape (1 × 28 × 28) whose images are not of it is
    /// warned of, naming the first image's own shape; a shape the preset gave, or images
    /// of the default shape, are not.
    #[test]
    fn images_read_at_the_default_shape_but_not_of_it_are_warned_of() {
        let dir = write_folder();
        let folder = open(dir.path(), 1, [28, 28]).unwrap();
        let first = dir.path().join("cats").join("a.png");
        assert_eq!(
            folder.warnings(),
            [format!(
                "{}: 4×3 colour images (the first's header) are read as 1×28×28, the defaults \
                 of dataset.channels and dataset.image_size; give the channels and size your \
                 job's transforms make (channels: 3, image_size: [3, 4] keeps this one as it is)",
                first.display()
            )]
        );
        assert_eq!(
            open(dir.path(), 3, [3, 4]).unwrap().warnings(),
            Vec::<String>::new()
        );
        // A size given but the channels left: colour photos would still be read grey.
        assert_eq!(
            open(dir.path(), 1, [64, 64]).unwrap().warnings(),
            [format!(
                "{}: 4×3 colour images (the first's header) are read as 1×64×64, the default \
                 of dataset.channels; give the channels and size your job's transforms make \
                 (channels: 3, image_size: [3, 4] keeps this one as it is)",
                first.display()
            )]
        );
        // The channels given but the size left: resized to 28 × 28.
        let warnings = open(dir.path(), 3, [28, 28]).unwrap().warnings();
        assert!(
            warnings.len() == 1
                && warnings[0].contains("are read as 3×28×28, the default of dataset.image_size;"),
            "{warnings:?}"
        );
        let mnist = TempDir::new().unwrap();
        fs::create_dir(mnist.path().join("0")).unwrap();
        GrayImage::from_pixel(28, 28, Luma([9]))
            .save(mnist.path().join("0").join("a.png"))
            .unwrap();
        let folder = open(mnist.path(), 1, [28, 28]).unwrap();
        assert_eq!(folder.warnings(), Vec::<String>::new());
    }

    #[test]
    fn a_folder_linked_back_into_the_tree_is_listed_once_with_a_warning() {
        let dir = write_folder();
        let link = dir.path().join("dogs").join("up");
        std::os::unix::fs::symlink("..", &link).unwrap();
        let folder = open(dir.path(), 3, [2, 2]).unwrap();
        assert_eq!(folder.len(), 2);
        assert_eq!(
            folder.warnings(),
            [format!(
                "{}: skipped, a folder already listed (a link back into the tree)",
                link.display()
            )]
        );
    }
}
