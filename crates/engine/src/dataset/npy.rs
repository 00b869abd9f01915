//! The .npy reader: a memory-mapped array of images as people save them from numpy and
//! other frameworks — shape (N, H, W), (N, C, H, W) or (N, H, W, C) with C in 1, 3 or
//! 4; bool, (u)int8 to (u)int64 or float16 to float64; either byte order; C or Fortran
//! order — plus an optional labels array of shape (N,) in any integer type. uint8 and
//! bool are read as u8 pixels, everything else as f32; `describe` names what the file
//! held when that differs from what is read. Other shapes and types are refused with a
//! way to convert. Without labels every sample is labelled 0. The header is parsed and
//! the data length checked at open (see [`header`]), so `read` only indexes.

mod header;

use std::path::{Path, PathBuf};

use self::header::python_shape;
pub use self::header::{Dtype, Kind, NpyHeader, parse as parse_npy_header};
use super::files::{self, FileBytes};
use super::{Dataset, PixelKind, SampleShape};
use crate::error::{Error, Result};

/// A mapped .npy array with its checked header.
struct Array {
    path: PathBuf,
    bytes: FileBytes,
    header: NpyHeader,
}

impl Array {
    fn open(path: &Path) -> Result<Self> {
        let bytes = files::map(path)?;
        let header = header::parse(&bytes).map_err(|problem| Error::file(path, problem))?;
        Ok(Array {
            path: path.to_path_buf(),
            bytes,
            header,
        })
    }

    fn data(&self) -> &[u8] {
        &self.bytes[self.header.data_offset..]
    }
}

/// Where sample `n`'s element (c, h, w) lies in the data, in elements: the dot product
/// of (n, c, h, w) with `strides`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    strides: [usize; 4],
    /// The data is N×C×H×W (or N×H×W) in C order, bytes as read (uint8, bool or
    /// little-endian float32): samples are plain slices.
    plain: bool,
    /// What the file holds, when it differs from what `describe` shows.
    note: Option<&'static str>,
}

/// Samples from one .npy array, labels from another (or none).
pub struct Npy {
    samples: Array,
    shape: SampleShape,
    layout: Layout,
    labels: Option<Array>,
    len: usize,
}

impl Npy {
    /// Opens the samples array at `path` and, if given, the labels array.
    pub fn open(path: &Path, labels: Option<&Path>) -> Result<Self> {
        let samples = Array::open(path)?;
        let (len, shape, layout) =
            interpret(&samples.header).map_err(|problem| Error::file(path, problem))?;
        let labels = labels
            .map(|labels_path| open_labels(labels_path, len, path))
            .transpose()?;
        Ok(Npy {
            samples,
            shape,
            layout,
            labels,
            len,
        })
    }

    fn label(&self, index: usize) -> i64 {
        let Some(labels) = &self.labels else {
            return 0;
        };
        let dtype = labels.header.dtype;
        // In bounds: `open_labels` checked there is one label per sample.
        let bytes = &labels.data()[index * dtype.size..(index + 1) * dtype.size];
        // `open_labels` admits integer types only; a uint64 beyond i64 reads as -1.
        dtype.integer(bytes).unwrap_or(-1)
    }

    /// Reads sample `index` element by element through the layout's strides.
    fn gather(&self, index: usize, pixels: &mut [u8]) {
        let SampleShape {
            channels,
            height,
            width,
            pixel,
        } = self.shape;
        let dtype = self.samples.header.dtype;
        let data = self.samples.data();
        let [sn, sc, sh, sw] = self.layout.strides;
        let mut out = pixels.chunks_exact_mut(pixel.bytes());
        for c in 0..channels {
            for h in 0..height {
                for w in 0..width {
                    // In bounds: the header parser checked the data holds every element.
                    let at = (index * sn + c * sc + h * sh + w * sw) * dtype.size;
                    let element = &data[at..at + dtype.size];
                    // `pixels` holds exactly one sample, as many pixels as the loops.
                    let Some(out) = out.next() else { return };
                    match pixel {
                        PixelKind::U8 => out[0] = element[0],
                        PixelKind::F32 => out.copy_from_slice(&dtype.float(element).to_ne_bytes()),
                    }
                }
            }
        }
    }
}

/// The sample count, sample shape and layout of an array's header, if it can be a batch
/// of images; otherwise the problem and how to fix it, in one line.
fn interpret(header: &NpyHeader) -> Result<(usize, SampleShape, Layout), String> {
    let dtype = header.dtype;
    let pixel = match (dtype.kind, dtype.size) {
        (Kind::Bool | Kind::Unsigned, 1) => PixelKind::U8,
        _ => PixelKind::F32,
    };
    let shape = &header.shape;
    let not_images = |why: &str| {
        format!(
            "shape {} {why}: save images as (N, H, W), (N, C, H, W) or (N, H, W, C) with C \
             in 1, 3 or 4, e.g. a.reshape(N, H, W)",
            python_shape(shape)
        )
    };
    // The file's axis holding n, c, h and w (none for c in a 3-dimensional array).
    let (axes, channels_last) = match shape[..] {
        [_, _, _] => ([Some(0), None, Some(1), Some(2)], false),
        [_, 1 | 3 | 4, _, _] => ([Some(0), Some(1), Some(2), Some(3)], false),
        [_, _, _, 1 | 3 | 4] => ([Some(0), Some(3), Some(1), Some(2)], true),
        [_, _, _, _] => {
            return Err(not_images(
                "has neither axis 1 nor axis 3 of 1, 3 or 4 channels",
            ));
        }
        _ => return Err(not_images(&format!("has {} dimensions", shape.len()))),
    };
    let dim = |axis: Option<usize>| axis.map_or(1, |axis| shape[axis]);
    let (len, channels, height, width) = (dim(axes[0]), dim(axes[1]), dim(axes[2]), dim(axes[3]));
    if height == 0 || width == 0 {
        return Err(not_images("holds images without pixels"));
    }
    // Element strides of each file axis: C order varies the last axis fastest.
    let mut file_strides = vec![0; shape.len()];
    let mut stride = 1;
    let order: Vec<usize> = if header.fortran_order {
        (0..shape.len()).collect()
    } else {
        (0..shape.len()).rev().collect()
    };
    for axis in order {
        file_strides[axis] = stride;
        stride *= shape[axis];
    }
    let strides = axes.map(|axis| axis.map_or(0, |axis| file_strides[axis]));
    let plain = (dtype == Dtype::U8 || dtype == Dtype::F32 || dtype.kind == Kind::Bool)
        && !header.fortran_order
        && !channels_last;
    let note = match (header.fortran_order, channels_last) {
        (false, false) => None,
        (false, true) => Some("N×H×W×C"),
        (true, false) => Some("Fortran order"),
        (true, true) => Some("N×H×W×C, Fortran order"),
    };
    let sample_shape = SampleShape {
        channels,
        height,
        width,
        pixel,
    };
    Ok((
        len,
        sample_shape,
        Layout {
            strides,
            plain,
            note,
        },
    ))
}

/// Opens the labels array at `path`, which must hold `len` labels for the samples in
/// `samples_path`.
fn open_labels(path: &Path, len: usize, samples_path: &Path) -> Result<Array> {
    let labels = Array::open(path)?;
    let header = &labels.header;
    if !matches!(header.dtype.kind, Kind::Signed | Kind::Unsigned) {
        let problem = format!(
            "labels must be integers, not {}: convert with \
             np.ascontiguousarray(y).astype(np.int64)",
            header.dtype.name()
        );
        return Err(Error::file(path, problem));
    }
    let count = match header.shape[..] {
        [count] => count,
        _ => {
            let problem = format!(
                "labels must have shape (N,), not {}: flatten with y.reshape(-1)",
                python_shape(&header.shape)
            );
            return Err(Error::file(path, problem));
        }
    };
    if count != len {
        let problem = format!(
            "{count} labels for {len} samples in {}",
            samples_path.display()
        );
        return Err(Error::file(path, problem));
    }
    Ok(labels)
}

/// `bytes` as a fixed-size array; callers slice exactly `N` bytes.
fn le_array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut array = [0; N];
    array.copy_from_slice(bytes);
    array
}

impl Dataset for Npy {
    fn len(&self) -> usize {
        self.len
    }

    fn shape(&self) -> SampleShape {
        self.shape
    }

    fn read(&self, index: usize, pixels: &mut [u8]) -> Result<i64> {
        files::check_index(index, self.len)?;
        if !self.layout.plain {
            self.gather(index, pixels);
            return Ok(self.label(index));
        }
        let size = self.shape.sample_bytes();
        // In bounds: the header parser checked that N samples' bytes follow the header.
        let sample = &self.samples.data()[index * size..(index + 1) * size];
        match self.shape.pixel {
            PixelKind::U8 => pixels.copy_from_slice(sample),
            // The file is little-endian; the buffer is native-endian.
            PixelKind::F32 => {
                for (out, value) in pixels.chunks_exact_mut(4).zip(sample.chunks_exact(4)) {
                    out.copy_from_slice(&f32::from_le_bytes(le_array(value)).to_ne_bytes());
                }
            }
        }
        Ok(self.label(index))
    }

    fn read_is_fetch(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        let dtype = self.samples.header.dtype;
        let held = (dtype != Dtype::U8 && dtype != Dtype::F32).then(|| dtype.name());
        let note = match (held, self.layout.note) {
            (None, None) => String::new(),
            (Some(dtype), None) => format!(", from {dtype}"),
            (None, Some(layout)) => format!(", from {layout}"),
            (Some(dtype), Some(layout)) => format!(", from {dtype} {layout}"),
        };
        files::describe_with("npy", &self.samples.path, self.len, self.shape, &note)
    }

    fn files(&self) -> Vec<PathBuf> {
        let labels = self.labels.iter().map(|labels| labels.path.clone());
        std::iter::once(self.samples.path.clone())
            .chain(labels)
            .collect()
    }

    fn release_mapped_pages(&self) -> Result<()> {
        for array in std::iter::once(&self.samples).chain(&self.labels) {
            array.bytes.release_mapped_pages(&array.path)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::error::assert_mentions;
    use std::fs;

    use tempfile::TempDir;

    use super::header::tests::npy_bytes;
    use super::*;

    fn write(dir: &TempDir, name: &str, bytes: Vec<u8>) -> PathBuf {
        let path = dir.path().join(name);
        fs::write(&path, bytes).unwrap();
        path
    }

    fn open_error(path: &Path, labels: Option<&Path>) -> String {
        match Npy::open(path, labels) {
            Ok(_) => panic!("{} opened but should not", path.display()),
            Err(err) => err.to_string(),
        }
    }

    /// The error opening `bytes` written as `name`, without labels.
    fn refused(name: &str, bytes: Vec<u8>) -> String {
        let dir = TempDir::new().unwrap();
        open_error(&write(&dir, name, bytes), None)
    }

    #[test]
    fn reads_u8_four_dimensional_samples_labelled_zero() {
        let dir = TempDir::new().unwrap();
        let data: Vec<u8> = (0..2 * 3 * 2 * 2).collect();
        let path = write(&dir, "x.npy", npy_bytes("|u1", &[2, 3, 2, 2], &data));
        let npy = Npy::open(&path, None).unwrap();
        assert_eq!(npy.len(), 2);
        assert_eq!(npy.shape().sample_bytes(), 12);
        let mut pixels = [0u8; 12];
        assert_eq!(npy.read(1, &mut pixels).unwrap(), 0);
        assert_eq!(pixels[0], 12);
        assert_eq!(pixels[11], 23);
        assert_eq!(
            npy.describe(),
            format!("npy {} (2 × 3×2×2 u8)", path.display())
        );
    }

    #[test]
    fn reads_f32_three_dimensional_samples_with_labels() {
        let dir = TempDir::new().unwrap();
        let values: Vec<f32> = (0..3 * 2 * 2).map(|i| i as f32 * 0.5).collect();
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let path = write(&dir, "x.npy", npy_bytes("<f4", &[3, 2, 2], &data));
        for (descr, labels) in [
            (
                "<i8",
                [5i64, -1, 9].iter().flat_map(|l| l.to_le_bytes()).collect(),
            ),
            (
                "<i4",
                [5i32, -1, 9].iter().flat_map(|l| l.to_le_bytes()).collect(),
            ),
            ("|u1", vec![5u8, 255, 9]),
        ] {
            let labels_path = write(&dir, "y.npy", npy_bytes(descr, &[3], &labels));
            let npy = Npy::open(&path, Some(&labels_path)).unwrap();
            assert_eq!(npy.shape().channels, 1);
            assert_eq!(npy.shape().pixel, PixelKind::F32);
            let mut pixels = [0u8; 16];
            assert_eq!(npy.read(2, &mut pixels).unwrap(), 9);
            let first = f32::from_ne_bytes(le_array(&pixels[..4]));
            assert_eq!(first, 4.0);
            let second_label = npy.read(1, &mut pixels).unwrap();
            assert_eq!(second_label, if descr == "|u1" { 255 } else { -1 });
        }
    }

    #[test]
    fn bad_magic_is_named() {
        let msg = refused("x.npy", b"not numpy".to_vec());
        assert_mentions(&msg, &["x.npy", "magic"]);
    }

    #[test]
    fn malformed_header_is_named() {
        let mut bytes = npy_bytes("|u1", &[1, 2, 2], &[0; 4]);
        bytes[20] = b'!';
        let msg = refused("x.npy", bytes);
        assert_mentions(&msg, &["x.npy", "malformed header"]);
    }

    #[test]
    fn short_data_is_named() {
        let msg = refused("x.npy", npy_bytes("|u1", &[2, 2, 2], &[0; 7]));
        assert_mentions(&msg, &["x.npy", "promises 8 bytes"]);
    }

    #[test]
    fn other_ranks_and_dtypes_are_refused() {
        let msg = refused("x.npy", npy_bytes("|u1", &[4, 4], &[0; 16]));
        assert_mentions(&msg, &["x.npy", "(N, C, H, W)"]);
        let msg = refused("y.npy", npy_bytes("<c8", &[1, 1, 1], &[0; 8]));
        assert_mentions(&msg, &["y.npy", "'<c8'"]);
    }

    #[test]
    fn label_count_mismatch_is_named() {
        let dir = TempDir::new().unwrap();
        let path = write(&dir, "x.npy", npy_bytes("|u1", &[3, 1, 1], &[0; 3]));
        let labels = write(&dir, "y.npy", npy_bytes("|u1", &[2], &[0; 2]));
        let msg = open_error(&path, Some(&labels));
        assert!(msg.starts_with(&labels.display().to_string()), "{msg}");
        assert!(msg.contains("2 labels for 3 samples"), "{msg}");
    }

    #[test]
    fn labels_of_the_wrong_type_or_shape_are_named() {
        let dir = TempDir::new().unwrap();
        let path = write(&dir, "x.npy", npy_bytes("|u1", &[2, 1, 1], &[0; 2]));
        let labels = write(&dir, "y.npy", npy_bytes("<f4", &[2], &[0; 8]));
        let msg = open_error(&path, Some(&labels));
        assert_mentions(&msg, &["y.npy", "not float32"]);
        let labels = write(&dir, "z.npy", npy_bytes("|u1", &[2, 1], &[0; 2]));
        let msg = open_error(&path, Some(&labels));
        assert_mentions(&msg, &["z.npy", "shape (N,)"]);
    }
}
