//! The MNIST-family IDX reader: an images file (`*-images-idx3-ubyte`, magic 0x00000803,
//! count × rows × cols unsigned bytes) and its labels file (`*-labels-idx1-ubyte`, magic
//! 0x00000801), each plain or gzipped. Plain files are memory-mapped; .gz files are
//! decompressed into memory once at open, exactly as far as their header declares: the
//! declared size is checked against the dataset's `idx_bytes` limit before anything is
//! allocated, and data past it is refused rather than inflated. The header check is the pure function
//! [`parse_idx`], shared by [`Idx::open`] and the fuzz target, so that every lie a header
//! can tell is caught before a byte is allocated or a sample is read.

use std::fs::{self, File};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;

use super::files::{self, FileBytes, MAX_DATA_BYTES};
use super::{Dataset, DatasetLimits, PixelKind, SampleShape};
use crate::error::{Error, Result};

/// Which of the two IDX files a byte slice should be: it fixes the magic number (type
/// byte 0x08, unsigned byte, and the rank) and so the header's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdxRole {
    /// count × rows × cols pixels, magic 0x00000803.
    Images,
    /// count labels, magic 0x00000801.
    Labels,
}

impl IdxRole {
    fn rank(self) -> usize {
        match self {
            IdxRole::Images => 3,
            IdxRole::Labels => 1,
        }
    }

    fn magic(self) -> u32 {
        0x0800 | self.rank() as u32
    }

    fn header_len(self) -> usize {
        4 + 4 * self.rank()
    }

    fn name(self) -> &'static str {
        match self {
            IdxRole::Images => "IDX images (uint8, 3 dimensions)",
            IdxRole::Labels => "IDX labels (uint8, 1 dimension)",
        }
    }
}

/// What a checked IDX header says: the dimensions and where the data lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdxLayout {
    /// `[count, rows, cols]` for images, `[count]` for labels.
    pub dims: Vec<usize>,
    /// Offset of the first data byte (the header's length).
    pub data_offset: usize,
    /// Data bytes the header promises: the product of `dims`.
    pub data_len: usize,
}

/// Why bytes are not a valid IDX file of the expected role.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdxError {
    #[error("too short for an IDX header: expected {expected} bytes, found {found}")]
    ShortHeader { expected: usize, found: usize },
    #[error("wrong magic number 0x{found:08x}: expected 0x{expected:08x} for {what}")]
    WrongMagic {
        found: u32,
        expected: u32,
        what: &'static str,
    },
    #[error("absurd sizes in the header: {dims:?} is more than {MAX_DATA_BYTES} bytes")]
    TooLarge { dims: Vec<u32> },
    #[error("images of {rows}×{cols} pixels have no pixels")]
    EmptyImages { rows: usize, cols: usize },
    #[error("truncated: the header promises {expected} bytes of data, found {found}")]
    Truncated { expected: usize, found: usize },
}

/// Checks a whole IDX file held in `bytes`: the header (magic number, sizes) and that
/// all the data it promises follows. Bytes after the data are ignored. Never panics and
/// never allocates in proportion to what the header claims.
pub fn parse_idx(bytes: &[u8], role: IdxRole) -> Result<IdxLayout, IdxError> {
    let layout = parse_idx_header(bytes, role)?;
    let found = bytes.len() - layout.data_offset;
    if found < layout.data_len {
        return Err(IdxError::Truncated {
            expected: layout.data_len,
            found,
        });
    }
    Ok(layout)
}

/// Checks the header at the start of `bytes`, which need not hold the data yet (the .gz
/// reader checks the header before decompressing the rest).
fn parse_idx_header(bytes: &[u8], role: IdxRole) -> Result<IdxLayout, IdxError> {
    // The magic number first, so that a file of the wrong kind is called that even when
    // it is too short for the expected header.
    let magic = be_words(bytes, 4, role)?[0];
    if magic != role.magic() {
        return Err(IdxError::WrongMagic {
            found: magic,
            expected: role.magic(),
            what: role.name(),
        });
    }
    let words = be_words(bytes, role.header_len(), role)?;
    let dims = &words[1..];
    let data_len = checked_product(dims).ok_or_else(|| IdxError::TooLarge {
        dims: dims.to_vec(),
    })?;
    let dims: Vec<usize> = dims.iter().map(|&dim| dim as usize).collect();
    if role == IdxRole::Images && (dims[1] == 0 || dims[2] == 0) {
        return Err(IdxError::EmptyImages {
            rows: dims[1],
            cols: dims[2],
        });
    }
    Ok(IdxLayout {
        dims,
        data_offset: role.header_len(),
        data_len,
    })
}

/// The first `len` bytes of `bytes` as big-endian 32-bit words.
fn be_words(bytes: &[u8], len: usize, role: IdxRole) -> Result<Vec<u32>, IdxError> {
    let header = bytes.get(..len).ok_or(IdxError::ShortHeader {
        expected: role.header_len(),
        found: bytes.len(),
    })?;
    Ok(header
        .chunks_exact(4)
        .map(|word| u32::from_be_bytes([word[0], word[1], word[2], word[3]]))
        .collect())
}

/// The product of `dims` as a byte count, or `None` past [`MAX_DATA_BYTES`] or `usize`.
fn checked_product(dims: &[u32]) -> Option<usize> {
    let bytes = dims
        .iter()
        .try_fold(1u64, |acc, &dim| acc.checked_mul(u64::from(dim)))?;
    if bytes > MAX_DATA_BYTES {
        return None;
    }
    usize::try_from(bytes).ok()
}

/// An images file and its labels, checked to agree.
pub struct Idx {
    path: PathBuf,
    labels_path: PathBuf,
    images: FileBytes,
    images_offset: usize,
    labels: FileBytes,
    labels_offset: usize,
    len: usize,
    rows: usize,
    cols: usize,
}

/// The images and labels files that [`Idx::open`] reads for `path` and `labels`.
pub fn idx_files(path: &Path, labels: Option<&Path>) -> Result<(PathBuf, PathBuf)> {
    let images_path = images_file(path)?;
    let labels_path = match labels {
        Some(labels) => labels.to_path_buf(),
        None => labels_beside(&images_path)?,
    };
    Ok((images_path, labels_path))
}

impl Idx {
    /// Opens a directory holding an IDX pair, or an images file. The labels are `labels`
    /// if given, else the file beside the images named with `labels-idx1` for `images-idx3`.
    /// A .gz file may decompress to at most `limits.idx_bytes`.
    pub fn open(path: &Path, labels: Option<&Path>, limits: &DatasetLimits) -> Result<Self> {
        let (images_path, labels_path) = idx_files(path, labels)?;
        let (images, image_layout) = load(&images_path, IdxRole::Images, limits)?;
        let (labels, label_layout) = load(&labels_path, IdxRole::Labels, limits)?;
        let len = image_layout.dims[0];
        if label_layout.dims[0] != len {
            return Err(Error::file(
                &labels_path,
                format!(
                    "{} labels for {len} images in {}",
                    label_layout.dims[0],
                    images_path.display()
                ),
            ));
        }
        Ok(Idx {
            path: images_path,
            labels_path,
            images,
            images_offset: image_layout.data_offset,
            labels,
            labels_offset: label_layout.data_offset,
            len,
            rows: image_layout.dims[1],
            cols: image_layout.dims[2],
        })
    }
}

impl Dataset for Idx {
    fn len(&self) -> usize {
        self.len
    }

    fn shape(&self) -> SampleShape {
        SampleShape {
            channels: 1,
            height: self.rows,
            width: self.cols,
            pixel: PixelKind::U8,
        }
    }

    fn read(&self, index: usize, pixels: &mut [u8]) -> Result<i64> {
        files::check_index(index, self.len)?;
        let size = self.rows * self.cols;
        // In bounds: `open` checked that count × rows × cols bytes follow the header.
        let start = self.images_offset + index * size;
        pixels.copy_from_slice(&self.images[start..start + size]);
        Ok(i64::from(self.labels[self.labels_offset + index]))
    }

    fn read_is_fetch(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        files::describe("idx", &self.path, self.len, self.shape())
    }

    fn files(&self) -> Vec<PathBuf> {
        vec![self.path.clone(), self.labels_path.clone()]
    }

    fn release_mapped_pages(&self) -> Result<()> {
        self.images.release_mapped_pages(&self.path)?;
        self.labels.release_mapped_pages(&self.labels_path)
    }
}

/// The images file `path` names: itself, or the one found in the directory it names.
fn images_file(path: &Path) -> Result<PathBuf> {
    let meta = fs::metadata(path)
        .map_err(|err| Error::file_caused(path, format!("cannot read: {err}"), err))?;
    if meta.is_dir() {
        find_images_in(path)
    } else {
        Ok(path.to_path_buf())
    }
}

/// The images file in `dir`; of several, a `train-*` one, then a plain (mappable) one.
fn find_images_in(dir: &Path) -> Result<PathBuf> {
    let entries = fs::read_dir(dir)
        .map_err(|err| Error::file_caused(dir, format!("cannot list: {err}"), err))?;
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| is_images_name(name))
        .collect();
    names.sort_by_key(|name| {
        (
            !name.starts_with("train"),
            name.ends_with(".gz"),
            name.clone(),
        )
    });
    let name = names.into_iter().next().ok_or_else(|| {
        Error::file(
            dir,
            "no IDX images file (*-images-idx3-ubyte or *-images-idx3-ubyte.gz) in this directory",
        )
    })?;
    Ok(dir.join(name))
}

/// True for MNIST-style images file names, with `-` or `.` before `idx3` as both spellings
/// are in circulation, plain or gzipped.
fn is_images_name(name: &str) -> bool {
    let name = name.strip_suffix(".gz").unwrap_or(name);
    name.ends_with("images-idx3-ubyte") || name.ends_with("images.idx3-ubyte")
}

/// The labels file beside `images`: same name with `labels-idx1` for `images-idx3`,
/// plain or gzipped, whichever exists.
fn labels_beside(images: &Path) -> Result<PathBuf> {
    let name = images
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    let labels_name = name
        .replace("images-idx3", "labels-idx1")
        .replace("images.idx3", "labels.idx1");
    if labels_name == name {
        return Err(Error::file(
            images,
            "cannot tell which labels file goes with this file (no `images-idx3` in its name); give dataset.labels",
        ));
    }
    let plain = labels_name.strip_suffix(".gz").unwrap_or(&labels_name);
    let candidates = [
        labels_name.clone(),
        plain.to_string(),
        format!("{plain}.gz"),
    ];
    candidates
        .iter()
        .map(|candidate| images.with_file_name(candidate))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            Error::file(
                images.with_file_name(&labels_name),
                format!(
                    "labels file not found beside {}; give dataset.labels",
                    images.display()
                ),
            )
        })
}

/// The bytes of an IDX file, mapped or decompressed, with its checked layout.
fn load(path: &Path, role: IdxRole, limits: &DatasetLimits) -> Result<(FileBytes, IdxLayout)> {
    let bytes = if path.extension().is_some_and(|ext| ext == "gz") {
        decompress(path, role, limits)?
    } else {
        files::map(path)?
    };
    let layout =
        parse_idx(&bytes, role).map_err(|err| Error::file_caused(path, err.to_string(), err))?;
    Ok((bytes, layout))
}

/// Decompresses a .gz IDX file, checking its header before the data so that a header
/// promising absurd sizes, or more than `limits.idx_bytes`, is refused before anything
/// is allocated for it; data past what the header declares is refused, not inflated.
fn decompress(path: &Path, role: IdxRole, limits: &DatasetLimits) -> Result<FileBytes> {
    let file = File::open(path)
        .map_err(|err| Error::file_caused(path, format!("cannot open: {err}"), err))?;
    let file_len = file.metadata().map_or(u64::MAX, |meta| meta.len());
    let mut gz = GzDecoder::new(BufReader::new(file));
    let corrupt =
        |err: std::io::Error| Error::file_caused(path, format!("cannot decompress: {err}"), err);
    let mut bytes = Vec::new();
    (&mut gz)
        .take(role.header_len() as u64)
        .read_to_end(&mut bytes)
        .map_err(corrupt)?;
    let layout = parse_idx_header(&bytes, role)
        .map_err(|err| Error::file_caused(path, err.to_string(), err))?;
    let declared = layout.data_len as u64;
    let what = "the data its header declares (bytes)";
    DatasetLimits::check(path, what, declared, "idx_bytes", limits.idx_bytes)?;
    // Room for the data up front, but never more than the file could inflate to: a
    // header of a few bytes declaring gigabytes must not take them before the data shows
    // it is there (deflate inflates at most 1032 times).
    let inflates_to = file_len.saturating_mul(1032);
    let room = (layout.data_len as u64 + 1).min(inflates_to);
    bytes.reserve_exact(usize::try_from(room).unwrap_or(usize::MAX));
    // One byte past the data, so that the decoder reaches the end of the stream and
    // checks its CRC when the file holds exactly what the header promises, and so that
    // a stream holding more is caught.
    (&mut gz)
        .take(declared + 1)
        .read_to_end(&mut bytes)
        .map_err(corrupt)?;
    if bytes.len() > layout.data_offset + layout.data_len {
        return Err(Error::file(
            path,
            format!(
                "decompresses to more data than its header declares ({declared} bytes): \
                 not an IDX file as written"
            ),
        ));
    }
    Ok(FileBytes::InMemory(bytes))
}

#[cfg(test)]
mod tests {
    use crate::error::assert_mentions;
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::GzEncoder;
    use tempfile::TempDir;

    use super::*;

    /// An IDX file: magic, big-endian dimensions, then `data`.
    fn idx_bytes(magic: u32, dims: &[u32], data: &[u8]) -> Vec<u8> {
        let mut bytes = magic.to_be_bytes().to_vec();
        for dim in dims {
            bytes.extend(dim.to_be_bytes());
        }
        bytes.extend(data);
        bytes
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(bytes).expect("writing to a Vec cannot fail");
        gz.finish().expect("writing to a Vec cannot fail")
    }

    /// Three 2×3 images whose pixels are `10 * image + pixel`, labelled 7, 8, 9.
    fn write_pair(dir: &Path, prefix: &str, gz: bool) -> PathBuf {
        let pixels: Vec<u8> = (0..3)
            .flat_map(|i| (0..6).map(move |p| 10 * i + p))
            .collect();
        let images = idx_bytes(0x803, &[3, 2, 3], &pixels);
        let labels = idx_bytes(0x801, &[3], &[7, 8, 9]);
        let suffix = if gz { ".gz" } else { "" };
        let (images, labels) = if gz {
            (gzip(&images), gzip(&labels))
        } else {
            (images, labels)
        };
        let images_path = dir.join(format!("{prefix}-images-idx3-ubyte{suffix}"));
        fs::write(&images_path, images).unwrap();
        fs::write(
            dir.join(format!("{prefix}-labels-idx1-ubyte{suffix}")),
            labels,
        )
        .unwrap();
        images_path
    }

    fn assert_reads_pair(idx: &Idx) {
        assert_eq!(idx.len(), 3);
        assert_eq!((idx.shape().height, idx.shape().width), (2, 3));
        let mut pixels = [0u8; 6];
        assert_eq!(idx.read(1, &mut pixels).unwrap(), 8);
        assert_eq!(pixels, [10, 11, 12, 13, 14, 15]);
        assert_eq!(idx.read(2, &mut pixels).unwrap(), 9);
        assert_eq!(pixels[5], 25);
        assert!(idx.read(3, &mut pixels).is_err());
    }

    fn open_error(path: &Path, labels: Option<&Path>) -> String {
        match Idx::open(path, labels, &DatasetLimits::DEFAULT) {
            Ok(_) => panic!("{} opened but should not", path.display()),
            Err(err) => err.to_string(),
        }
    }

    /// The error opening a written pair (gzipped or not) whose images file `edit` rewrote
    /// from its bytes.
    fn refused_images(gz: bool, edit: impl FnOnce(Vec<u8>) -> Vec<u8>) -> String {
        let dir = TempDir::new().unwrap();
        let images = write_pair(dir.path(), "train", gz);
        fs::write(&images, edit(fs::read(&images).unwrap())).unwrap();
        open_error(&images, None)
    }

    #[test]
    fn reads_a_plain_pair_from_its_directory() {
        let dir = TempDir::new().unwrap();
        let images = write_pair(dir.path(), "train", false);
        let idx = Idx::open(dir.path(), None, &DatasetLimits::DEFAULT).unwrap();
        assert_reads_pair(&idx);
        assert_eq!(
            idx.describe(),
            format!("idx {} (3 × 1×2×3 u8)", images.display())
        );
    }

    #[test]
    fn reads_a_gzipped_pair_from_the_images_file() {
        let dir = TempDir::new().unwrap();
        let images = write_pair(dir.path(), "t10k", true);
        assert_reads_pair(&Idx::open(&images, None, &DatasetLimits::DEFAULT).unwrap());
    }

    #[test]
    fn prefers_train_files_in_a_directory() {
        let dir = TempDir::new().unwrap();
        write_pair(dir.path(), "t10k", false);
        let train = write_pair(dir.path(), "train", true);
        let idx = Idx::open(dir.path(), None, &DatasetLimits::DEFAULT).unwrap();
        assert!(idx.describe().contains(&train.display().to_string()));
    }

    #[test]
    fn takes_an_explicit_labels_file() {
        let dir = TempDir::new().unwrap();
        let images = write_pair(dir.path(), "train", false);
        let labels = dir.path().join("other-labels");
        fs::write(&labels, idx_bytes(0x801, &[3], &[1, 2, 3])).unwrap();
        let idx = Idx::open(&images, Some(&labels), &DatasetLimits::DEFAULT).unwrap();
        assert_eq!(idx.read(0, &mut [0; 6]).unwrap(), 1);
    }

    #[test]
    fn missing_path_is_named() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("nothing-here");
        let msg = open_error(&path, None);
        assert_mentions(&msg, &["nothing-here", "cannot read"]);
    }

    #[test]
    fn directory_without_images_is_named() {
        let dir = TempDir::new().unwrap();
        fs::write(dir.path().join("readme.txt"), "hello").unwrap();
        let msg = open_error(dir.path(), None);
        assert!(msg.starts_with(&dir.path().display().to_string()), "{msg}");
        assert!(msg.contains("no IDX images file"), "{msg}");
    }

    #[test]
    fn wrong_magic_says_found_and_expected() {
        // A labels file where the images should be.
        let msg = refused_images(false, |_| idx_bytes(0x801, &[3], &[0; 3]));
        assert!(msg.contains("train-images-idx3-ubyte"), "{msg}");
        assert_mentions(&msg, &["magic", "0x00000801"]);
        assert!(msg.contains("expected 0x00000803"), "{msg}");
    }

    #[test]
    fn truncated_data_says_expected_and_found() {
        let msg = refused_images(false, |_| idx_bytes(0x803, &[3, 2, 3], &[0; 17]));
        assert!(msg.contains("train-images-idx3-ubyte"), "{msg}");
        assert_mentions(&msg, &["promises 18 bytes", "found 17"]);
    }

    #[test]
    fn absurd_sizes_are_refused_before_allocating() {
        let header = idx_bytes(0x803, &[u32::MAX, u32::MAX, u32::MAX], &[]);
        let msg = refused_images(true, |_| gzip(&header));
        assert_mentions(&msg, &["train-images-idx3-ubyte.gz", "absurd sizes"]);
    }

    #[test]
    fn corrupt_gzip_is_named() {
        let msg = refused_images(true, |_| b"this is not gzip at all".to_vec());
        assert_mentions(&msg, &["train-images-idx3-ubyte.gz", "cannot decompress"]);
    }

    #[test]
    fn gzip_with_a_bad_checksum_is_refused() {
        let msg = refused_images(true, |mut bytes| {
            let crc_at = bytes.len() - 8;
            bytes[crc_at] ^= 0xff;
            bytes
        });
        assert!(msg.contains("cannot decompress"), "{msg}");
    }

    #[test]
    fn label_count_must_match_image_count() {
        let dir = TempDir::new().unwrap();
        let images = write_pair(dir.path(), "train", false);
        let labels = dir.path().join("train-labels-idx1-ubyte");
        fs::write(&labels, idx_bytes(0x801, &[2], &[0; 2])).unwrap();
        let msg = open_error(&images, None);
        assert_mentions(&msg, &["train-labels-idx1-ubyte", "2 labels for 3 images"]);
    }

    #[test]
    fn missing_labels_file_is_named() {
        let dir = TempDir::new().unwrap();
        let images = write_pair(dir.path(), "train", false);
        fs::remove_file(dir.path().join("train-labels-idx1-ubyte")).unwrap();
        let msg = open_error(&images, None);
        assert_mentions(&msg, &["train-labels-idx1-ubyte", "labels file not found"]);
    }

    #[test]
    fn parse_idx_rejects_short_headers_and_empty_images() {
        assert_eq!(
            parse_idx(&[0, 0, 8, 3, 0], IdxRole::Images),
            Err(IdxError::ShortHeader {
                expected: 16,
                found: 5
            })
        );
        let empty = idx_bytes(0x803, &[5, 0, 28], &[]);
        assert!(matches!(
            parse_idx(&empty, IdxRole::Images),
            Err(IdxError::EmptyImages { rows: 0, cols: 28 })
        ));
    }

    #[test]
    fn parse_idx_accepts_trailing_bytes() {
        let bytes = idx_bytes(0x801, &[2], &[1, 2, 3]);
        let layout = parse_idx(&bytes, IdxRole::Labels).unwrap();
        assert_eq!(
            (layout.dims, layout.data_offset, layout.data_len),
            (vec![2], 8, 2)
        );
    }

    #[test]
    fn a_tiny_gz_file_declaring_hundreds_of_gigabytes_takes_no_memory_for_them() {
        // 200 × 32768 × 32768 bytes declared (214 GB, more than this machine can
        // allocate), and none there: reserved up front, the allocation aborted the run.
        let dir = TempDir::new().unwrap();
        let images = write_pair(dir.path(), "train", true);
        fs::write(&images, gzip(&idx_bytes(0x803, &[200, 32768, 32768], &[]))).unwrap();
        let labels = dir.path().join("train-labels-idx1-ubyte.gz");
        fs::write(&labels, gzip(&idx_bytes(0x801, &[200], &[0; 200]))).unwrap();
        let limits = DatasetLimits {
            idx_bytes: 1 << 40,
            ..DatasetLimits::DEFAULT
        };
        let msg = Idx::open(&images, None, &limits).err().unwrap().to_string();
        assert!(
            msg.contains("truncated: the header promises 214748364800 bytes of data, found 0"),
            "{msg}"
        );
    }

    #[test]
    fn a_gz_file_is_inflated_only_as_far_as_its_header_declares_within_idx_bytes() {
        let dir = TempDir::new().unwrap();
        let images = write_pair(dir.path(), "train", true);
        let mut surplus = idx_bytes(0x803, &[3, 2, 3], &[1; 18]);
        surplus.extend([0; 5000]);
        fs::write(&images, gzip(&surplus)).unwrap();
        let msg = open_error(&images, None);
        assert!(
            msg.contains("train-images-idx3-ubyte.gz: decompresses to more data than its header declares (18 bytes)"),
            "{msg}"
        );
        write_pair(dir.path(), "train", true);
        let limits = DatasetLimits {
            idx_bytes: 17,
            ..DatasetLimits::DEFAULT
        };
        let msg = Idx::open(&images, None, &limits).err().unwrap().to_string();
        assert_mentions(
            &msg,
            &[
                "the data its header declares (bytes) is 18, over the limit of 17",
                "dataset.limits.idx_bytes",
            ],
        );
    }
}
