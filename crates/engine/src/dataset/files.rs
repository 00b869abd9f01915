//! What the file-backed readers share: a file's bytes, either memory-mapped (so every
//! worker thread reads the same page-cache pages and no copy is made per worker) or held
//! in memory after decompression, plus the size limit, the index check and the
//! `describe()` line that `idx` and `npy` have in common.

use std::fs::File;
use std::ops::Deref;
use std::path::Path;

use memmap2::Mmap;

use super::{PixelKind, SampleShape};
use crate::error::{Error, Result};

/// The most bytes a header may promise (1 TiB). Anything larger is a corrupt header, and
/// refusing it before allocating keeps a bad file from exhausting memory.
pub const MAX_DATA_BYTES: u64 = 1 << 40;

/// The bytes of a dataset file.
pub enum FileBytes {
    /// A plain file, mapped read-only.
    Mapped(Mmap),
    /// A compressed file, decompressed once when the dataset was opened.
    InMemory(Vec<u8>),
}

impl Deref for FileBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(map) => map,
            FileBytes::InMemory(bytes) => bytes,
        }
    }
}

impl FileBytes {
    /// Unmaps the pages of a mapped file from this process (see
    /// [`Dataset::release_mapped_pages`](super::Dataset::release_mapped_pages)); bytes
    /// held in memory stay.
    pub fn release_mapped_pages(&self, path: &Path) -> Result<()> {
        let FileBytes::Mapped(map) = self else {
            return Ok(());
        };
        #[cfg(unix)]
        {
            // SAFETY: the map is read-only and shared with the file, so dropping its
            // pages loses nothing: the next read faults them in again from the file.
            unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) }.map_err(|err| {
                Error::run(format!(
                    "{}: cannot release its mapped pages: {err}",
                    path.display()
                ))
            })?;
        }
        #[cfg(not(unix))]
        let _ = (map, path);
        Ok(())
    }
}

/// Memory-maps the file at `path` read-only.
pub fn map(path: &Path) -> Result<FileBytes> {
    let file = File::open(path)
        .map_err(|err| Error::file_caused(path, format!("cannot open: {err}"), err))?;
    // SAFETY: the map is read-only and private to this process. Another process could
    // still truncate or rewrite the file while we run; datasets are inputs that nothing
    // writes during a benchmark, and that risk is the price of sharing pages between
    // workers, which is what memory-mapping is for here.
    let map = unsafe { Mmap::map(&file) }
        .map_err(|err| Error::file_caused(path, format!("cannot memory-map: {err}"), err))?;
    Ok(FileBytes::Mapped(map))
}

/// Fails unless `index` is a sample of a dataset of `len` samples. Callers pass indices
/// from a sampler, so an index out of range is a bug in the run, not bad input.
pub fn check_index(index: usize, len: usize) -> Result<()> {
    if index < len {
        Ok(())
    } else {
        Err(Error::run(format!(
            "sample {index} is out of range: the dataset has {len} samples"
        )))
    }
}

/// The `describe()` line of a dataset read from a file, e.g.
/// `idx data/train-images-idx3-ubyte (60000 × 1×28×28 u8)`.
pub fn describe(kind: &str, path: &Path, len: usize, shape: SampleShape) -> String {
    describe_with(kind, path, len, shape, "")
}

/// [`describe`] with `note` (how the file stores what is read) inside the brackets.
pub fn describe_with(
    kind: &str,
    path: &Path,
    len: usize,
    shape: SampleShape,
    note: &str,
) -> String {
    format!(
        "{kind} {} ({len} × {}×{}×{} {}{note})",
        path.display(),
        shape.channels,
        shape.height,
        shape.width,
        pixel_name(shape),
    )
}

fn pixel_name(shape: SampleShape) -> &'static str {
    match shape.pixel {
        PixelKind::U8 => "u8",
        PixelKind::F32 => "f32",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::assert_mentions;

    #[test]
    fn describe_names_kind_path_count_and_shape() {
        let shape = SampleShape {
            channels: 3,
            height: 32,
            width: 24,
            pixel: PixelKind::F32,
        };
        let line = describe("npy", Path::new("x/data.npy"), 7, shape);
        assert_eq!(line, "npy x/data.npy (7 × 3×32×24 f32)");
    }

    #[test]
    fn index_past_the_end_is_an_error() {
        assert!(check_index(2, 3).is_ok());
        let msg = check_index(3, 3).unwrap_err().to_string();
        assert_mentions(&msg, &["sample 3", "3 samples"]);
    }

    #[test]
    fn missing_file_names_the_path() {
        let msg = map(Path::new("no/such/file.bin"))
            .err()
            .expect("a missing file must not map")
            .to_string();
        assert!(msg.starts_with("no/such/file.bin: cannot open"), "{msg}");
    }
}
