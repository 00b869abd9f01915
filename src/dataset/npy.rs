//! The .npy reader: a memory-mapped uint8 or float32 array of shape (N, C, H, W) or
//! (N, H, W) (one channel), little-endian and C order, plus an optional labels array of
//! shape (N,) in int64, int32 or uint8. Without labels every sample is labelled 0. The
//! header is parsed and the data length checked at open (see [`header`]), so `read`
//! only slices.

mod header;

use std::path::{Path, PathBuf};

use self::header::{Dtype, NpyHeader, python_shape};
use super::files::{self, FileBytes};
use super::{Dataset, PixelKind, SampleShape};
use crate::error::{Error, Result};

/// A mapped .npy array with its checked header.
struct Array {
    bytes: FileBytes,
    header: NpyHeader,
}

impl Array {
    fn open(path: &Path) -> Result<Self> {
        let bytes = files::map(path)?;
        let header = header::parse(&bytes).map_err(|problem| Error::file(path, problem))?;
        Ok(Array { bytes, header })
    }

    fn data(&self) -> &[u8] {
        &self.bytes[self.header.data_offset..]
    }
}

/// Samples from one .npy array, labels from another (or none).
pub struct Npy {
    path: PathBuf,
    samples: Array,
    shape: SampleShape,
    labels: Option<Array>,
    len: usize,
}

impl Npy {
    /// Opens the samples array at `path` and, if given, the labels array.
    pub fn open(path: &Path, labels: Option<&Path>) -> Result<Self> {
        let samples = Array::open(path)?;
        let (len, shape) =
            sample_shape(&samples.header).map_err(|problem| Error::file(path, problem))?;
        let labels = labels
            .map(|labels_path| open_labels(labels_path, len, path))
            .transpose()?;
        Ok(Npy {
            path: path.to_path_buf(),
            samples,
            shape,
            labels,
            len,
        })
    }

    fn label(&self, index: usize) -> i64 {
        let Some(labels) = &self.labels else {
            return 0;
        };
        let size = labels.header.dtype.size();
        // In bounds: `open_labels` checked there is one label per sample.
        let bytes = &labels.data()[index * size..(index + 1) * size];
        match labels.header.dtype {
            Dtype::I64 => i64::from_le_bytes(le_array(bytes)),
            Dtype::I32 => i64::from(i32::from_le_bytes(le_array(bytes))),
            // `open_labels` admits only the three label dtypes.
            _ => i64::from(bytes[0]),
        }
    }
}

/// The sample count and shape an array's header gives, if it holds images we can read.
fn sample_shape(header: &NpyHeader) -> Result<(usize, SampleShape), String> {
    let pixel = match header.dtype {
        Dtype::U8 => PixelKind::U8,
        Dtype::F32 => PixelKind::F32,
        other => {
            return Err(format!(
                "samples must be uint8 or float32, not {}",
                other.name()
            ));
        }
    };
    let (len, channels, height, width) = match header.shape[..] {
        [len, height, width] => (len, 1, height, width),
        [len, channels, height, width] => (len, channels, height, width),
        _ => {
            return Err(format!(
                "shape {} has {} dimensions: expected (N, C, H, W) or (N, H, W)",
                python_shape(&header.shape),
                header.shape.len()
            ));
        }
    };
    if channels == 0 || height == 0 || width == 0 {
        return Err(format!(
            "shape {}: samples have no pixels",
            python_shape(&header.shape)
        ));
    }
    let shape = SampleShape {
        channels,
        height,
        width,
        pixel,
    };
    Ok((len, shape))
}

/// Opens the labels array at `path`, which must hold `len` labels for the samples in
/// `samples_path`.
fn open_labels(path: &Path, len: usize, samples_path: &Path) -> Result<Array> {
    let labels = Array::open(path)?;
    let header = &labels.header;
    if !matches!(header.dtype, Dtype::I64 | Dtype::I32 | Dtype::U8) {
        let problem = format!(
            "labels must be int64, int32 or uint8, not {}",
            header.dtype.name()
        );
        return Err(Error::file(path, problem));
    }
    let count = match header.shape[..] {
        [count] => count,
        _ => {
            let problem = format!(
                "labels must have shape (N,), not {}",
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

    fn describe(&self) -> String {
        files::describe("npy", &self.path, self.len, self.shape)
    }
}

#[cfg(test)]
mod tests {
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
        let dir = TempDir::new().unwrap();
        let path = write(&dir, "x.npy", b"not numpy".to_vec());
        let msg = open_error(&path, None);
        assert!(msg.contains("x.npy") && msg.contains("magic"), "{msg}");
    }

    #[test]
    fn malformed_header_is_named() {
        let dir = TempDir::new().unwrap();
        let mut bytes = npy_bytes("|u1", &[1, 2, 2], &[0; 4]);
        bytes[20] = b'!';
        let path = write(&dir, "x.npy", bytes);
        let msg = open_error(&path, None);
        assert!(
            msg.contains("x.npy") && msg.contains("malformed header"),
            "{msg}"
        );
    }

    #[test]
    fn short_data_is_named() {
        let dir = TempDir::new().unwrap();
        let path = write(&dir, "x.npy", npy_bytes("|u1", &[2, 2, 2], &[0; 7]));
        let msg = open_error(&path, None);
        assert!(
            msg.contains("x.npy") && msg.contains("promises 8 bytes"),
            "{msg}"
        );
    }

    #[test]
    fn other_ranks_and_dtypes_are_refused() {
        let dir = TempDir::new().unwrap();
        let path = write(&dir, "x.npy", npy_bytes("|u1", &[4, 4], &[0; 16]));
        let msg = open_error(&path, None);
        assert!(
            msg.contains("x.npy") && msg.contains("(N, C, H, W)"),
            "{msg}"
        );
        let path = write(&dir, "y.npy", npy_bytes("<i8", &[1, 1, 1], &[0; 8]));
        let msg = open_error(&path, None);
        assert!(msg.contains("y.npy") && msg.contains("not int64"), "{msg}");
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
        assert!(
            msg.contains("y.npy") && msg.contains("not float32"),
            "{msg}"
        );
        let labels = write(&dir, "z.npy", npy_bytes("|u1", &[2, 1], &[0; 2]));
        let msg = open_error(&path, Some(&labels));
        assert!(msg.contains("z.npy") && msg.contains("shape (N,)"), "{msg}");
    }
}
