//! The `copy` dataset transfer: every sample and label of a dataset in one private
//! buffer, as a pickled dataset arrives in a PyTorch worker. The parent serializes its
//! dataset through the [`Dataset`] trait, so any reader can be copied.

use super::protocol::CopyLayout;
use crate::dataset::{Dataset, SampleShape};
use crate::error::{Error, Result};

/// A dataset held as one private copy.
pub struct CopiedDataset {
    shape: SampleShape,
    pixels: Vec<u8>,
    labels: Vec<i64>,
}

/// Serializes `dataset`: its layout, and its pixels followed by its labels.
pub fn dataset_bytes(dataset: &dyn Dataset) -> Result<(CopyLayout, Vec<u8>)> {
    let layout = CopyLayout {
        len: dataset.len(),
        shape: dataset.shape(),
    };
    let sample = layout.shape.sample_bytes();
    let total = layout
        .len
        .checked_mul(sample + 8)
        .ok_or_else(|| Error::run("the dataset is too large to copy"))?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(total)
        .map_err(|_| Error::run(format!("copying the dataset needs {total} bytes of memory")))?;
    bytes.resize(layout.len * sample, 0);
    let mut labels = Vec::with_capacity(layout.len * 8);
    for (index, pixels) in bytes.chunks_exact_mut(sample.max(1)).enumerate() {
        labels.extend_from_slice(&dataset.read(index, pixels)?.to_le_bytes());
    }
    bytes.extend_from_slice(&labels);
    Ok((layout, bytes))
}

impl CopiedDataset {
    /// Takes over bytes made by [`dataset_bytes`].
    pub fn from_bytes(layout: CopyLayout, mut bytes: Vec<u8>) -> Result<CopiedDataset> {
        let pixel_bytes = layout.len * layout.shape.sample_bytes();
        if bytes.len() != pixel_bytes + layout.len * 8 {
            return Err(Error::run(format!(
                "the dataset copy has {} bytes, expected {}",
                bytes.len(),
                pixel_bytes + layout.len * 8
            )));
        }
        let labels = bytes[pixel_bytes..]
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect();
        bytes.truncate(pixel_bytes);
        Ok(CopiedDataset {
            shape: layout.shape,
            pixels: bytes,
            labels,
        })
    }

    /// A private copy of `dataset` (a forked worker's `copy`).
    pub fn from_dataset(dataset: &dyn Dataset) -> Result<CopiedDataset> {
        let (layout, bytes) = dataset_bytes(dataset)?;
        CopiedDataset::from_bytes(layout, bytes)
    }
}

impl Dataset for CopiedDataset {
    fn len(&self) -> usize {
        self.labels.len()
    }

    fn shape(&self) -> SampleShape {
        self.shape
    }

    fn read(&self, index: usize, pixels: &mut [u8]) -> Result<i64> {
        let sample = self.shape.sample_bytes();
        let label = self.labels.get(index).ok_or_else(|| {
            Error::run(format!(
                "sample {index} is out of range ({} samples)",
                self.len()
            ))
        })?;
        pixels.copy_from_slice(&self.pixels[index * sample..(index + 1) * sample]);
        Ok(*label)
    }

    fn describe(&self) -> String {
        format!("a copy of {} samples", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_reads_like_the_original() {
        let original =
            crate::dataset::open(&crate::dataset::DatasetSpec::default(), Some(30)).unwrap();
        let copy = CopiedDataset::from_dataset(&*original).unwrap();
        assert_eq!(copy.len(), 30);
        let sample = original.shape().sample_bytes();
        let (mut a, mut b) = (vec![0; sample], vec![0; sample]);
        for index in [0, 17, 29] {
            assert_eq!(
                original.read(index, &mut a).unwrap(),
                copy.read(index, &mut b).unwrap()
            );
            assert_eq!(a, b);
        }
        assert!(copy.read(30, &mut b).is_err());
    }
}
