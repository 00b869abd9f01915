//! A dataset packed into one buffer — every sample's pixels, then every label as a
//! little-endian `i64` — and served from it. The `copy` dataset transfer packs into a
//! private buffer per worker, as a pickled dataset arrives in a PyTorch worker; a
//! spawned worker reopening a dataset without files serves the shared, read-only image
//! [`super::shared`] packs once per loader. The parent packs through the [`Dataset`]
//! trait, so any reader can be packed.

use super::worker_messages::CopyLayout;
use crate::dataset::{Dataset, SampleShape};
use crate::error::{Error, Result};

/// A dataset served from packed bytes: a private `Vec<u8>` or a shared mapping.
pub struct PackedDataset<B> {
    layout: CopyLayout,
    bytes: B,
}

/// A dataset held as one private copy.
pub type CopiedDataset = PackedDataset<Vec<u8>>;

/// The layout `dataset` packs to.
pub fn layout_of(dataset: &dyn Dataset) -> CopyLayout {
    CopyLayout {
        len: dataset.len(),
        shape: dataset.shape(),
    }
}

/// How many bytes a dataset of `layout` packs to.
pub fn packed_bytes(layout: CopyLayout) -> Result<usize> {
    layout
        .len
        .checked_mul(layout.shape.sample_bytes() + 8)
        .ok_or_else(|| Error::run("the dataset is too large to copy"))
}

/// Packs `dataset` into `bytes`, which holds exactly [`packed_bytes`] of its layout.
pub fn pack_into(dataset: &dyn Dataset, bytes: &mut [u8]) -> Result<()> {
    let layout = layout_of(dataset);
    let sample = layout.shape.sample_bytes();
    let pixel_bytes = layout.len * sample;
    let (pixels, labels) = bytes.split_at_mut(pixel_bytes.min(bytes.len()));
    if labels.len() != layout.len * 8 {
        return Err(Error::run("the buffer does not fit the packed dataset"));
    }
    let samples = pixels.chunks_exact_mut(sample.max(1));
    for (index, (pixels, label)) in samples.zip(labels.chunks_exact_mut(8)).enumerate() {
        label.copy_from_slice(&dataset.read(index, pixels)?.to_le_bytes());
    }
    Ok(())
}

/// Packs `dataset` into a new private buffer: its layout and bytes.
pub fn dataset_bytes(dataset: &dyn Dataset) -> Result<(CopyLayout, Vec<u8>)> {
    let layout = layout_of(dataset);
    let total = packed_bytes(layout)?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(total)
        .map_err(|_| Error::run(format!("copying the dataset needs {total} bytes of memory")))?;
    bytes.resize(total, 0);
    pack_into(dataset, &mut bytes)?;
    Ok((layout, bytes))
}

impl<B: AsRef<[u8]>> PackedDataset<B> {
    /// Serves bytes made by [`pack_into`] for `layout`.
    pub fn new(layout: CopyLayout, bytes: B) -> Result<PackedDataset<B>> {
        let expected = packed_bytes(layout)?;
        let got = bytes.as_ref().len();
        if got != expected {
            return Err(Error::run(format!(
                "the dataset copy has {got} bytes, expected {expected}"
            )));
        }
        Ok(PackedDataset { layout, bytes })
    }
}

impl CopiedDataset {
    /// A private copy of `dataset` (a forked worker's `copy`).
    pub fn from_dataset(dataset: &dyn Dataset) -> Result<CopiedDataset> {
        let (layout, bytes) = dataset_bytes(dataset)?;
        PackedDataset::new(layout, bytes)
    }
}

impl<B: AsRef<[u8]> + Send + Sync> Dataset for PackedDataset<B> {
    fn len(&self) -> usize {
        self.layout.len
    }

    fn shape(&self) -> SampleShape {
        self.layout.shape
    }

    fn read(&self, index: usize, pixels: &mut [u8]) -> Result<i64> {
        if index >= self.len() {
            return Err(Error::run(format!(
                "sample {index} is out of range ({} samples)",
                self.len()
            )));
        }
        let sample = self.layout.shape.sample_bytes();
        let bytes = self.bytes.as_ref();
        pixels.copy_from_slice(&bytes[index * sample..(index + 1) * sample]);
        let at = self.len() * sample + index * 8;
        let mut label = [0; 8];
        label.copy_from_slice(&bytes[at..at + 8]);
        Ok(i64::from_le_bytes(label))
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

    #[test]
    fn packed_bytes_of_the_wrong_length_are_refused() {
        let original =
            crate::dataset::open(&crate::dataset::DatasetSpec::default(), Some(3)).unwrap();
        let (layout, mut bytes) = dataset_bytes(&*original).unwrap();
        bytes.pop();
        let error = PackedDataset::new(layout, bytes).err().unwrap();
        assert!(error.to_string().contains("expected"), "{error}");
    }
}
